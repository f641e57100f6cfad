"""The real Gemini CLI calls `capture_pane` unattended (`gemini -p`) under a
policy that allows read-only-hinted tools.

Gemini CLI (npm @google/gemini-cli, pinned with Node 22 in
agents/gemini/package.json and its lock, installed with `npm ci` into
${TMUX_MCP_CACHE:-~/.cache/tmux-mcp}/agents/) runs one `gemini -p` turn against
a scripted fake model on 127.0.0.1 (agents/fake_model.py, the Gemini API via
GOOGLE_GEMINI_BASE_URL), with `tmux-mcp attach -S SOCK` as its MCP server
`tmux` in a private HOME. The tmux side is agents/scene.py. The fake model
calls capture_pane on a pane that printed a marker, then ends the turn.

In `-p` mode Gemini CLI offers its model only the tools its policy engine
allows; the run adds one rule, "tools of server tmux hinted readOnlyHint
true: allow" (agents/gemini.py READ_ONLY_POLICY). So the first test passes
only while capture_pane is hinted read-only; the second shows that this is
what decides it: with capture_pane given its pre-fix hints by a relay,
Gemini CLI does not offer it at all (its other tools it does) and the broker
serves nothing. Nothing leaves loopback (asserted); every process of the run
is checked to have exited with it.
"""

from __future__ import annotations

import json

from agents import gemini as gemini_cli
from agents import scene as scenes
from agents.fake_model import FakeModelServer, GeminiGenerateContent, call_tool_then_answer, call_tools_then_answer

FINAL = "The pane shows the marker."
CALL_ID = "call_fake_capture_1"
TOOL = "mcp_tmux_capture_pane"
# The parameter Gemini CLI 0.61 adds to every tool it declares to its model.
GEMINI_OWN_PARAMETER = "wait_for_previous"


def _gemini_turn(tmux_server, relay_hints: dict | None = None):
    gemini = gemini_cli.install()
    scene = scenes.setup(tmux_server)
    command, args = scene.mcp_command(relay_hints)
    script = call_tool_then_answer("capture_pane", {"paneId": scene.pane}, FINAL)
    with FakeModelServer(GeminiGenerateContent(model=gemini_cli.MODEL), script) as fake:
        home = gemini_cli.GeminiHome(tmux_server.dir / "gemini")
        policy = home.write_config(command, args, gemini_cli.READ_ONLY_POLICY)
        run = home.run(gemini, f"What does tmux pane {scene.pane} show?", home.env(fake), policy)
    diag = f"{run.describe()}\n--- fake model server ---\n{fake.describe()}"
    assert run.returncode is not None, f"gemini -p did not finish within the timeout\n{diag}"
    assert not run.leftovers, f"processes of the gemini run still alive after it exited (killed): {run.leftovers}\n{diag}"
    attaches = scene.attach_leftovers()
    assert not attaches, f"MCP server processes still alive after gemini exited: {attaches}"
    assert run.returncode == 0, f"gemini -p failed\n{diag}"
    assert not fake.errors, diag
    assert not fake.outbound, f"Gemini CLI tried to reach beyond loopback: {fake.outbound}\n{diag}"
    return scene, run, fake.turns(), diag


def test_gemini_calls_capture_pane_unattended(tmux_server):
    scene, run, turns, diag = _gemini_turn(tmux_server)
    assert len(turns) == 2, f"expected two model requests (the call, then its result)\n{diag}"
    # (a) Gemini CLI offered its model our capture_pane, with our description and arguments.
    offered = turns[0].find("capture_pane")
    assert [t.name for t in offered] == [TOOL], [t.name for t in turns[0].tools]
    tool = offered[0]
    assert tool.description == scene.published["description"], (tool.description, scene.published["description"])
    assert "paneId" in tool.parameters["properties"] and "paneId" in tool.parameters.get("required", []), tool.parameters
    # (b) The functionResponse Gemini CLI sent back holds the pane's real text.
    results = [r for r in turns[1].tool_results if r.call_id == CALL_ID]
    assert len(results) == 1, f"no functionResponse for the call\n{diag}"
    assert scene.marker in results[0].output, (
        f"the result Gemini CLI sent its model lacks the pane's text {scene.marker!r}: {results[0].output!r}")
    # Gemini CLI's own account.
    events = run.events()
    uses = [(e["tool_name"], e["parameters"]) for e in events if e.get("type") == "tool_use"]
    assert uses == [(TOOL, {"paneId": scene.pane})], diag
    outcomes = [e for e in events if e.get("type") == "tool_result"]
    assert [e["status"] for e in outcomes] == ["success"] and scene.marker in json.dumps(outcomes[0]), diag
    (result,) = [e for e in events if e.get("type") == "result"]
    assert result["status"] == "success" and result["stats"]["tool_calls"] == 1, result
    said = "".join(e["content"] for e in events if e.get("type") == "message" and e.get("role") == "assistant")
    assert said == FINAL, diag
    served = scene.served()
    assert served == 1, f"the broker served {served} tool calls during the run, expected 1"


def test_gemini_leaves_out_capture_pane_hinted_destructive(tmux_server):
    """The control: with capture_pane hinted as before the fix, the read-only
    policy does not allow it, so Gemini CLI does not offer it to its model."""
    scene, run, turns, diag = _gemini_turn(tmux_server, relay_hints=scenes.OLD_HINTS)
    assert len(turns) == 1, f"expected one model request (no tool to call)\n{diag}"
    names = [t.name for t in turns[0].tools]
    assert turns[0].find("capture_pane") == [], f"Gemini CLI offered capture_pane although hinted destructive: {names}"
    assert "mcp_tmux_list_panes" in names, f"the tmux server's read-only tools are missing too: {names}"
    assert not [e for e in run.events() if e.get("type") == "tool_use"], diag
    served = scene.served()
    assert served == 0, f"the broker served {served} tool calls although Gemini CLI had no such tool"


def test_what_geminis_model_is_declared_stays_within_issue_49s_target(tmux_server):
    """Issue 49 item 3: the declarations of every default tool of server tmux
    that Gemini CLI sends its model (under a policy that allows them all, so
    none is left out) stay within workspace12.AGENT_TARGETS, measured on the
    request body the real CLI sent its (fake) model; and its model is given
    the text of list_panes and capture_pane on issue 49's 12-pane workspace."""
    import workspace12
    gemini = gemini_cli.install()
    ws = scenes.setup_workspace12(tmux_server)
    command, args = ws.mcp_command()
    calls = [("list_panes", {}), ("capture_pane", {"paneId": ws.panes[0]})]
    with FakeModelServer(GeminiGenerateContent(model=gemini_cli.MODEL), call_tools_then_answer(calls, FINAL)) as fake:
        home = gemini_cli.GeminiHome(tmux_server.dir / "gemini")
        policy = home.write_config(command, args, gemini_cli.ALLOW_TMUX_POLICY)
        run = home.run(gemini, "List the tmux panes, then show the first.", home.env(fake), policy)
    diag = f"{run.describe()}\n--- fake model server ---\n{fake.describe()}"
    assert run.returncode == 0, f"gemini -p failed\n{diag}"
    assert not run.leftovers and not ws.attach_leftovers(), diag
    assert not fake.errors and not fake.outbound, diag
    turns = fake.turns()
    assert len(turns) == 3, f"expected three model requests (two calls, then the answer)\n{diag}"
    ours = [d for g in turns[0].body["tools"] for d in g.get("functionDeclarations") or []
            if d["name"].startswith("mcp_tmux_")]
    assert sorted(d["name"] for d in ours) == sorted(f"mcp_tmux_{t['name']}" for t in ws.published), ours
    declared = sum(len(scenes.compact(d)) for d in ours)
    # Gemini CLI adds a parameter of its own to every tool it declares,
    # `wait_for_previous` with a 230-character description (about 260 B a tool):
    # none of ours has it. The target holds what is ours; the whole is printed.
    added = GEMINI_OWN_PARAMETER
    for d in ours:
        assert added in d["parametersJsonSchema"]["properties"], d
    ours_only = [dict(d, parametersJsonSchema=dict(d["parametersJsonSchema"], properties={
        k: v for k, v in d["parametersJsonSchema"]["properties"].items() if k != added})) for d in ours]
    assert not any(added in t["inputSchema"].get("properties", {}) for t in ws.published)
    own = sum(len(scenes.compact(d)) for d in ours_only)
    got = {r.call_id: r for r in turns[2].tool_results}
    sizes = {tool: len(got[f"call_fake_{n}"].output.encode()) for n, (tool, _) in enumerate(calls, 1)}
    print(f"Gemini CLI: declarations {declared} B ({len(ours)} tools; {own} B without its own {added}), "
          f"results as sent (functionResponse JSON) {sizes}")
    assert own <= workspace12.AGENT_TARGETS["declarations"], \
        f"Gemini CLI declares our {len(ours)} tools to its model in {own} B (without its own {added})"
    # Gemini gives its model our text (inside its functionResponse).
    assert ws.panes[0] in got["call_fake_1"].output and "api:0.0 step 5 ok" in got["call_fake_2"].output, got
    assert ws.served() == 2, f"the broker served {ws.served()} tool calls, expected 2"
