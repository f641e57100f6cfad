"""Issue 16 item 1: the real Codex CLI calls `capture_pane` unattended.

Codex CLI (npm @openai/codex, pinned in agents/codex/package.json and its
lock, installed with `npm ci` into ${TMUX_MCP_CACHE:-~/.cache/tmux-mcp}/agents/)
runs one non-interactive turn (`codex exec`, approval policy `never`) against
a scripted fake model on 127.0.0.1 (agents/fake_model.py, the OpenAI Responses
API), with `tmux-mcp attach -S SOCK` as its MCP server `tmux`, in a private
CODEX_HOME. The tmux server is this test's own, with the plugin loaded as TPM
does (its broker serves the call). The fake model's first answer calls
capture_pane on a pane that printed a unique marker; its second, once Codex
sent the tool's output back, ends the turn.

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
import secrets
import sys
import time
from pathlib import Path


from agents import codex as codex_cli
from agents.fake_model import FakeModelServer, OpenAIResponses, call_tool_then_answer
from harness import BIN, REPO, clean_env, require_binary

FINAL = "The pane shows the marker."
# What the broker published for capture_pane before issue 16 (the seed's catalog
# set no hints, so MCP's defaults showed).
OLD_HINTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
REFUSAL = "MCP tool call requires approval"


def _wait(pred, what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _codex_turn(tmux_server, relay_hints: dict | None = None):
    """Load the plugin, print a marker in a new pane, run one `codex exec` turn
    whose fake model calls capture_pane on it. Returns (run, fake, turns, pane,
    marker, published capture_pane entry, tool calls the broker served)."""
    require_binary()
    codex = codex_cli.install()
    srv = tmux_server
    srv.tmux("set-option", "-g", "@mcp-bin-dir", str(BIN.parent))
    srv.tmux("run-shell", str(REPO / "tmux-mcp.tmux"))
    _wait(lambda: srv.tmux("show-options", "-gqv", "@mcp-state") == "ready", "the plugin's broker")
    marker = f"codex-sees-{secrets.token_hex(6)}"
    pane = srv.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", f"printf '%s\\n' {marker}; exec sleep 1000")
    _wait(lambda: marker in srv.tmux("capture-pane", "-p", "-t", pane), f"{marker} in {pane}")

    # What the broker itself publishes for capture_pane (through attach, as Codex sees it).
    raw = srv.raw_client()
    raw.initialize()
    listing = raw.request(2, "tools/list")
    published = next(t for t in listing["result"]["tools"] if t["name"] == "capture_pane")
    raw.close()
    calls_before = srv.status()["tool_calls"]

    command, args = str(BIN), ["attach", "-S", srv.sock]
    if relay_hints is not None:
        relay = Path(__file__).resolve().parent / "agents" / "mcp_rewrite.py"
        command, args = sys.executable, [str(relay), "--tool", "capture_pane",
                                         "--annotations", json.dumps(relay_hints), "--", command, *args]
    script = call_tool_then_answer("capture_pane", {"paneId": pane}, FINAL)
    with FakeModelServer(OpenAIResponses(model=codex_cli.MODEL), script) as fake:
        home = codex_cli.CodexHome(srv.dir / "codex")
        home.write_config(fake, command, args)
        run = home.run(codex, f"What does tmux pane {pane} show?", home.env(fake, clean_env()))
    diag = f"{run.describe()}\n--- fake model server ---\n{fake.describe()}"
    assert run.returncode is not None, f"codex exec did not finish within the timeout\n{diag}"
    assert not run.leftovers, f"processes of the codex run still alive after it exited (killed): {run.leftovers}\n{diag}"
    # Also any `attach` of this server outside Codex's session (had one detached itself).
    attaches = codex_cli.live_processes(lambda _sid, argv: "attach" in argv and srv.sock in argv)
    assert not attaches, f"MCP server processes still alive after codex exited: {attaches}"
    assert run.returncode == 0, f"codex exec failed\n{diag}"
    assert not fake.errors, diag
    assert not fake.outbound, f"Codex tried to reach beyond loopback: {fake.outbound}\n{diag}"
    turns = fake.turns()
    assert len(turns) == 2, f"expected two model requests (the call, then its output)\n{diag}"
    served = srv.status()["tool_calls"] - calls_before
    return run, diag, turns, pane, marker, published, served


def test_codex_calls_capture_pane_unattended(tmux_server):
    run, diag, turns, pane, marker, published, served = _codex_turn(tmux_server)
    # (a) Codex offered its model our capture_pane, with the description we publish.
    offered = turns[0].find("capture_pane")
    assert len(offered) == 1, f"capture_pane not among the tools Codex sent: {[t.qualified for t in turns[0].tools]}"
    tool = offered[0]
    assert tool.qualified == "mcp__tmux.capture_pane", tool.qualified
    assert tool.description == published["description"], (tool.description, published["description"])
    assert "paneId" in tool.parameters["properties"] and "paneId" in tool.parameters.get("required", []), tool.parameters
    assert published["annotations"]["readOnlyHint"] is True, published["annotations"]

    # (b) The output Codex sent back is the pane's real text, not a refusal.
    results = [r for r in turns[1].tool_results if r.call_id == "call_fake_capture_1"]
    assert len(results) == 1, f"no function_call_output for the call\n{diag}"
    output = results[0].output
    assert REFUSAL not in output, f"Codex refused the call: {output!r}"
    assert marker in output, f"the output Codex sent its model lacks the pane's text {marker!r}: {output!r}"

    # Codex's own account: the MCP call completed with the pane's text, and the turn ended.
    calls = run.items("mcp_tool_call")
    assert [(c["server"], c["tool"], c["status"], c["arguments"]) for c in calls] == \
        [("tmux", "capture_pane", "completed", {"paneId": pane})], diag
    assert marker in json.dumps(calls[0]["result"]), calls[0]
    assert [m["text"] for m in run.items("agent_message")] == [FINAL], diag
    assert served == 1, f"the broker served {served} tool calls during the run, expected 1"


def test_codex_refuses_capture_pane_hinted_destructive(tmux_server):
    """The control: the hints decide. With capture_pane hinted as before the fix
    (through a relay that rewrites only its tools/list entry), Codex refuses the
    call unattended and the broker never sees it."""
    run, diag, turns, pane, marker, published, served = _codex_turn(tmux_server, relay_hints=OLD_HINTS)
    assert len(turns[0].find("capture_pane")) == 1, [t.qualified for t in turns[0].tools]
    results = [r for r in turns[1].tool_results if r.call_id == "call_fake_capture_1"]
    assert len(results) == 1, f"no function_call_output for the call\n{diag}"
    assert REFUSAL in results[0].output, f"Codex did not refuse the destructive-hinted call: {results[0].output!r}"
    assert marker not in results[0].output, results[0].output
    calls = run.items("mcp_tool_call")
    assert [(c["tool"], c["status"]) for c in calls] == [("capture_pane", "failed")], diag
    assert REFUSAL in calls[0]["error"]["message"], calls[0]
    assert served == 0, f"the broker served {served} tool calls although Codex refused"
