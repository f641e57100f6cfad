"""Issue 16 item 1: the real Codex CLI calls `capture_pane` unattended.

Codex CLI (npm @openai/codex, pinned in agents/codex/package.json and its
lock, installed with `npm ci` into ${TMUX_MCP_CACHE:-~/.cache/tmux-mcp}/agents/)
runs one non-interactive turn (`codex exec`, approval policy `never`) against
a scripted fake model on 127.0.0.1 (agents/fake_model.py, the OpenAI Responses
API), with `tmux-mcp attach -S SOCK` as its MCP server `tmux`, in a private
CODEX_HOME. The tmux server is this test's own, with the plugin loaded as TPM
does (its broker serves the call; agents/scene.py). The fake model's first
answer calls capture_pane on a pane that printed a unique marker; its second,
once Codex sent the tool's output back, ends the turn.

Codex refuses to run an MCP tool that is not hinted read-only when it may not
ask ("MCP tool call requires approval, but approval policy is never"), so the
first test passes only while capture_pane publishes readOnlyHint true. The
second test shows that this is what decides it: the same run, through a relay
that gives capture_pane the hints it published before the fix (MCP's defaults,
as the seed's catalog had them), is refused and never reaches the broker.

Nothing leaves loopback: Codex's plugins and analytics are off, and every
proxy variable points at the fake server, which records and refuses any
connection beyond loopback (asserted to be none). Every process of the Codex
run is checked to have exited with it; the fixture kills the tmux server (and
so the broker) by its socket.
"""

from __future__ import annotations

import json

from agents import codex as codex_cli
from agents import scene as scenes
from agents.fake_model import FakeModelServer, OpenAIResponses, call_tool_then_answer, call_tools_then_answer

FINAL = "The pane shows the marker."
REFUSAL = "MCP tool call requires approval"
CALL_ID = "call_fake_capture_1"


def _codex_turn(tmux_server, relay_hints: dict | None = None):
    """One `codex exec` turn whose fake model calls capture_pane on the scene's
    pane. Returns (scene, run, the two model requests as Turns, diagnostics)."""
    codex = codex_cli.install()
    scene = scenes.setup(tmux_server)
    command, args = scene.mcp_command(relay_hints)
    script = call_tool_then_answer("capture_pane", {"paneId": scene.pane}, FINAL)
    with FakeModelServer(OpenAIResponses(model=codex_cli.MODEL), script) as fake:
        home = codex_cli.CodexHome(tmux_server.dir / "codex")
        home.write_config(fake, command, args)
        run = home.run(codex, f"What does tmux pane {scene.pane} show?", home.env(fake))
    diag = f"{run.describe()}\n--- fake model server ---\n{fake.describe()}"
    assert run.returncode is not None, f"codex exec did not finish within the timeout\n{diag}"
    assert not run.leftovers, f"processes of the codex run still alive after it exited (killed): {run.leftovers}\n{diag}"
    attaches = scene.attach_leftovers()
    assert not attaches, f"MCP server processes still alive after codex exited: {attaches}"
    assert run.returncode == 0, f"codex exec failed\n{diag}"
    assert not fake.errors, diag
    assert not fake.outbound, f"Codex tried to reach beyond loopback: {fake.outbound}\n{diag}"
    turns = fake.turns()
    assert len(turns) == 2, f"expected two model requests (the call, then its output)\n{diag}"
    offered = turns[0].find("capture_pane")
    assert len(offered) == 1, f"capture_pane not among the tools Codex sent: {[t.qualified for t in turns[0].tools]}"
    results = [r for r in turns[1].tool_results if r.call_id == CALL_ID]
    assert len(results) == 1, f"no function_call_output for the call\n{diag}"
    return scene, run, offered[0], results[0].output, diag


def test_codex_calls_capture_pane_unattended(tmux_server):
    scene, run, tool, output, diag = _codex_turn(tmux_server)
    # (a) Codex offered its model our capture_pane (in the namespace of MCP
    # server `tmux`), with the description and arguments we publish.
    assert tool.qualified == "mcp__tmux.capture_pane", tool.qualified
    assert tool.description == scene.published["description"], (tool.description, scene.published["description"])
    assert "paneId" in tool.parameters["properties"] and "paneId" in tool.parameters.get("required", []), tool.parameters
    assert scene.published["annotations"]["readOnlyHint"] is True, scene.published["annotations"]

    # (b) The output Codex sent back is the pane's real text, not a refusal.
    assert REFUSAL not in output, f"Codex refused the call: {output!r}"
    assert scene.marker in output, f"the output Codex sent its model lacks the pane's text {scene.marker!r}: {output!r}"

    # Codex's own account: the MCP call completed with the pane's text, and the turn ended.
    calls = codex_cli.items(run, "mcp_tool_call")
    assert [(c["server"], c["tool"], c["status"], c["arguments"]) for c in calls] == \
        [("tmux", "capture_pane", "completed", {"paneId": scene.pane})], diag
    assert scene.marker in json.dumps(calls[0]["result"]), calls[0]
    assert [m["text"] for m in codex_cli.items(run, "agent_message")] == [FINAL], diag
    served = scene.served()
    assert served == 1, f"the broker served {served} tool calls during the run, expected 1"


def test_codex_refuses_capture_pane_hinted_destructive(tmux_server):
    """The control: the hints decide. With capture_pane hinted as before the fix
    (through a relay that rewrites only its tools/list entry), Codex refuses the
    call unattended and the broker never sees it."""
    scene, run, tool, output, diag = _codex_turn(tmux_server, relay_hints=scenes.OLD_HINTS)
    assert REFUSAL in output, f"Codex did not refuse the destructive-hinted call: {output!r}"
    assert scene.marker not in output, output
    calls = codex_cli.items(run, "mcp_tool_call")
    assert [(c["tool"], c["status"]) for c in calls] == [("capture_pane", "failed")], diag
    assert REFUSAL in calls[0]["error"]["message"], calls[0]
    served = scene.served()
    assert served == 0, f"the broker served {served} tool calls although Codex refused"


def test_what_codexs_model_reads_stays_within_issue_49s_targets(tmux_server):
    """Issue 49 item 3: on issue 49's 12-pane workspace (workspace12.py), the
    bytes Codex gives its model of list_panes and capture_pane, and of our tool
    declarations (the namespace mcp__tmux it sends), stay within the targets
    (workspace12.AGENT_TARGETS), measured on the request bodies the real CLI
    sent its (fake) model."""
    import workspace12
    codex = codex_cli.install()
    ws = scenes.setup_workspace12(tmux_server)
    command, args = ws.mcp_command()
    calls = [("list_panes", {}), ("capture_pane", {"paneId": ws.panes[0]})]
    with FakeModelServer(OpenAIResponses(model=codex_cli.MODEL), call_tools_then_answer(calls, FINAL)) as fake:
        home = codex_cli.CodexHome(tmux_server.dir / "codex")
        home.write_config(fake, command, args)
        run = home.run(codex, "List the tmux panes, then show the first.", home.env(fake))
    diag = f"{run.describe()}\n--- fake model server ---\n{fake.describe()}"
    assert run.returncode == 0, f"codex exec failed\n{diag}"
    assert not run.leftovers and not ws.attach_leftovers(), diag
    assert not fake.errors and not fake.outbound, diag
    turns = fake.turns()
    assert len(turns) == 3, f"expected three model requests (two calls, then the answer)\n{diag}"

    # The declarations: the namespace holding every tool of server tmux, whole.
    (ns,) = [t for t in turns[0].body["tools"] if t.get("type") == "namespace" and t.get("name") == "mcp__tmux"]
    assert sorted(t["name"] for t in ns["tools"]) == sorted(t["name"] for t in ws.published), ns
    declared = len(scenes.compact(ns))
    assert declared <= workspace12.AGENT_TARGETS["declarations"], \
        f"Codex declares our {len(ns['tools'])} tools to its model in {declared} B"

    got = {r.call_id: r for r in turns[2].tool_results}
    for n, (tool, _) in enumerate(calls, 1):
        out = got[f"call_fake_{n}"].output
        assert REFUSAL not in out, out
        size = len(out.encode())
        assert size <= workspace12.AGENT_TARGETS[tool], f"Codex gave its model {size} B of {tool}: {out}"
    # Codex puts its own line before our structuredContent's compact JSON
    # ("Wall time: 0.0471 seconds\nOutput:\n"), counted above: the model reads it.
    panes = json.loads(got["call_fake_1"].output.partition("\nOutput:\n")[2])
    assert [p["id"] for p in panes["panes"]] == ws.panes, panes
    assert "api:0.0 step 5 ok" in got["call_fake_2"].output, got["call_fake_2"].output
    assert ws.served() == 2, f"the broker served {ws.served()} tool calls, expected 2"
    print(f"Codex: declarations {declared} B ({len(ns['tools'])} tools), list_panes "
          f"{len(got['call_fake_1'].output.encode())} B, capture_pane {len(got['call_fake_2'].output.encode())} B")
