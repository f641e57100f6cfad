"""The real Claude Code calls `capture_pane` non-interactively (`claude -p`).

Claude Code (npm @anthropic-ai/claude-code, pinned in agents/claude/package.json
and its lock, installed with `npm ci` into
${TMUX_MCP_CACHE:-~/.cache/tmux-mcp}/agents/) runs one `claude -p` turn against
a scripted fake model on 127.0.0.1 (agents/fake_model.py, the Anthropic
Messages API via ANTHROPIC_BASE_URL), with `tmux-mcp attach -S SOCK` as its
MCP server `tmux` (--mcp-config, --strict-mcp-config), in a private config
directory. The tmux side is agents/scene.py: this test's tmux server with the
plugin loaded, and a pane that printed a unique marker. The fake model calls
capture_pane on it, then ends the turn once the result came back.

Claude Code in `-p` mode runs no MCP tool without an allow rule, whatever the
hints, so the run allows exactly `mcp__tmux__capture_pane` (--allowedTools),
as a person running it unattended would. Nothing leaves loopback (asserted);
every process of the run is checked to have exited with it.
"""

from __future__ import annotations

import json

from agents import claude as claude_cli
from agents import scene as scenes
from agents.fake_model import AnthropicMessages, FakeModelServer, call_tool_then_answer, call_tools_then_answer

FINAL = "The pane shows the marker."
CALL_ID = "call_fake_capture_1"
TOOL = "mcp__tmux__capture_pane"


def test_claude_code_calls_capture_pane_unattended(tmux_server):
    claude = claude_cli.install()
    scene = scenes.setup(tmux_server)
    command, args = scene.mcp_command()
    script = call_tool_then_answer("capture_pane", {"paneId": scene.pane}, FINAL)
    with FakeModelServer(AnthropicMessages(model=claude_cli.MODEL), script) as fake:
        home = claude_cli.ClaudeHome(tmux_server.dir / "claude")
        run = home.run(claude, f"What does tmux pane {scene.pane} show?", home.env(fake),
                       command, args, allowed_tools=[TOOL])
    diag = f"{run.describe()}\n--- fake model server ---\n{fake.describe()}"
    assert run.returncode is not None, f"claude -p did not finish within the timeout\n{diag}"
    assert not run.leftovers, f"processes of the claude run still alive after it exited (killed): {run.leftovers}\n{diag}"
    attaches = scene.attach_leftovers()
    assert not attaches, f"MCP server processes still alive after claude exited: {attaches}"
    assert run.returncode == 0, f"claude -p failed\n{diag}"
    assert not fake.errors, diag
    assert not fake.outbound, f"Claude Code tried to reach beyond loopback: {fake.outbound}\n{diag}"

    # Model requests that offered our tool (Claude Code may make others).
    turns = [t for t in fake.turns() if t.find("capture_pane")]
    assert len(turns) == 2, f"expected two model requests offering capture_pane (the call, then its result)\n{diag}"
    # (a) Claude Code offered its model our capture_pane, with our description and arguments.
    (tool,) = turns[0].find("capture_pane")
    assert tool.name == TOOL, tool.name
    assert tool.description == scene.published["description"], (tool.description, scene.published["description"])
    assert "paneId" in tool.parameters["properties"] and "paneId" in tool.parameters.get("required", []), tool.parameters

    # (b) The tool_result Claude Code sent back is the pane's real text.
    results = [r for r in turns[1].tool_results if r.call_id == CALL_ID]
    assert len(results) == 1, f"no tool_result for the call\n{diag}"
    assert not results[0].is_error, f"Claude Code sent an error result: {results[0].output!r}"
    assert scene.marker in results[0].output, (
        f"the result Claude Code sent its model lacks the pane's text {scene.marker!r}: {results[0].output!r}")

    # Claude Code's own account: no permission denied, the turn ended with our text.
    (result,) = [e for e in run.events() if e.get("type") == "result"]
    assert result.get("subtype") == "success" and result.get("permission_denials") == [], result
    assert result.get("result") == FINAL, result
    served = scene.served()
    assert served == 1, f"the broker served {served} tool calls during the run, expected 1"


def test_what_claude_codes_model_reads_stays_within_issue_49s_targets(tmux_server):
    """Issue 49 item 3: on issue 49's 12-pane workspace (workspace12.py), the
    bytes Claude Code gives its model of list_panes and capture_pane, and of
    our tool declarations, stay within the targets (workspace12.AGENT_TARGETS):
    a regression in what the model reads fails here, measured on the request
    bodies the real CLI sent its (fake) model."""
    import workspace12
    claude = claude_cli.install()
    ws = scenes.setup_workspace12(tmux_server)
    command, args = ws.mcp_command()
    calls = [("list_panes", {}), ("capture_pane", {"paneId": ws.panes[0]})]
    with FakeModelServer(AnthropicMessages(model=claude_cli.MODEL), call_tools_then_answer(calls, FINAL)) as fake:
        home = claude_cli.ClaudeHome(tmux_server.dir / "claude")
        run = home.run(claude, "List the tmux panes, then show the first.", home.env(fake), command, args,
                       allowed_tools=[f"mcp__tmux__{t}" for t, _ in calls])
    diag = f"{run.describe()}\n--- fake model server ---\n{fake.describe()}"
    assert run.returncode == 0, f"claude -p failed\n{diag}"
    assert not run.leftovers and not ws.attach_leftovers(), diag
    assert not fake.errors and not fake.outbound, diag
    turns = [t for t in fake.turns() if t.find("list_panes")]
    assert len(turns) == 3, f"expected three model requests offering our tools\n{diag}"

    # The declarations: every tool of server tmux as Claude Code sent it.
    ours = [t for t in turns[0].body["tools"] if t["name"].startswith("mcp__tmux__")]
    assert sorted(t["name"] for t in ours) == sorted(f"mcp__tmux__{t['name']}" for t in ws.published), ours
    declared = sum(len(scenes.compact(t)) for t in ours)
    assert declared <= workspace12.AGENT_TARGETS["declarations"], \
        f"Claude Code declares our {len(ours)} tools to its model in {declared} B"

    # The results: what the model read is our structuredContent's compact JSON.
    got = {r.call_id: r for r in turns[2].tool_results}
    for n, (tool, _) in enumerate(calls, 1):
        r = got[f"call_fake_{n}"]
        assert not r.is_error, r.output
        size = len(r.output.encode())
        assert size <= workspace12.AGENT_TARGETS[tool], f"Claude Code gave its model {size} B of {tool}: {r.output}"
    panes = json.loads(got["call_fake_1"].output)
    assert [p["id"] for p in panes["panes"]] == ws.panes, panes
    capture = json.loads(got["call_fake_2"].output)
    assert "api:0.0 step 5 ok" in json.dumps(capture), capture
    assert ws.served() == 2, f"the broker served {ws.served()} tool calls, expected 2"
    print(f"Claude Code: declarations {declared} B ({len(ours)} tools), list_panes "
          f"{len(got['call_fake_1'].output.encode())} B, capture_pane {len(got['call_fake_2'].output.encode())} B")
