"""capture_since through the official MCP SDK: on by default and read-only,
new lines exactly once and in order, a loss to history-limit reported, and the
prefix + A hand-off line usable as it is pasted. Every structuredContent is
validated against the published outputSchema with jsonschema (harness.call)."""

import json
import subprocess
import time

from harness import BIN, async_test, call, call_ok, clean_env, list_tools, mcp_session

# A pane program printing `n-1` … `n-N` for each number typed (no echo).
PRINTER = "stty -echo; echo ready; while read n; do seq 1 \"$n\" | sed s/^/n-/; done"


def wait_screen(server, pane, text, timeout=5.0):
    """Until a whole screen line reads `text`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in server.tmux("capture-pane", "-p", "-t", pane).splitlines():
            return
        time.sleep(0.02)
    raise AssertionError(f"{text!r} never appeared in {pane}: {server.tmux('capture-pane', '-p', '-t', pane)!r}")


def printer(server, session="w"):
    pane = server.tmux("new-session", "-d", "-s", session, "-x", "60", "-y", "10", "-P", "-F", "#{pane_id}", PRINTER)
    wait_screen(server, pane, "ready")
    return pane


def emit(server, pane, n):
    server.tmux("send-keys", "-t", pane, str(n), "Enter")
    wait_screen(server, pane, f"n-{n}")


@async_test()
async def test_new_lines_once_in_order(tmux_server):
    pane = printer(tmux_server)
    async with mcp_session(tmux_server) as s:
        t = (await list_tools(s))["capture_since"]
        assert t.annotations.read_only_hint is True and t.annotations.destructive_hint is False, t
        seed = await call_ok(s, "capture_since", {"paneId": pane})
        assert seed["seeded"] is True and seed["lines"] == ["ready"], seed
        emit(tmux_server, pane, 3)
        d = await call_ok(s, "capture_since", {"paneId": pane, "cursor": seed["cursor"]})
        assert d["lines"] == ["n-1", "n-2", "n-3"] and "linesMissed" not in d, d
        e = await call_ok(s, "capture_since", {"paneId": pane, "cursor": d["cursor"]})
        assert e["lines"] == [], e
        emit(tmux_server, pane, 25)  # more than the 10-row screen
        f = await call_ok(s, "capture_since", {"paneId": pane, "cursor": e["cursor"]})
        assert f["lines"] == [f"n-{i}" for i in range(1, 26)], f
        bad = await call(s, "capture_since", {"paneId": pane, "cursor": "not a cursor"})
        assert bad.is_error and "cursor" in bad.text and bad.structured is None, bad


@async_test()
async def test_history_limit_trim_is_reported(tmux_server):
    tmux_server.tmux("set-option", "-g", "history-limit", "20")
    pane = printer(tmux_server)
    async with mcp_session(tmux_server) as s:
        seed = await call_ok(s, "capture_since", {"paneId": pane})
        emit(tmux_server, pane, 2)
        d = await call_ok(s, "capture_since", {"paneId": pane, "cursor": seed["cursor"]})
        assert d["lines"] == ["n-1", "n-2"] and "linesMissed" not in d, d
        emit(tmux_server, pane, 120)
        m = await call_ok(s, "capture_since", {"paneId": pane, "cursor": d["cursor"]})
        assert m["linesMissed"] is True and m["missed"]["reason"] == "history_trimmed", m
        want = [f"n-{i}" for i in range(1, 121)]
        assert 0 < len(m["lines"]) < 120 and want[-len(m["lines"]):] == m["lines"], m


@async_test()
async def test_pasted_handoff_line_works_with_default_tools(tmux_server):
    pane = printer(tmux_server)
    emit(tmux_server, pane, 2)
    out = subprocess.run([str(BIN), "cursor", "-S", tmux_server.sock, pane], env=clean_env(),
                         capture_output=True, text=True, timeout=15, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip()
    prefix = f"tmux-mcp: pane {pane} handed over — call capture_since "
    assert line.startswith(prefix), line
    args = json.loads(line[len(prefix):].split(" (or tmux_capture ", 1)[0])
    emit(tmux_server, pane, 4)
    async with mcp_session(tmux_server) as s:  # no --enable-tool: defaults only
        d = await call_ok(s, "capture_since", args)
    assert d["lines"] == ["n-1", "n-2", "n-3", "n-4"], d
    assert "linesMissed" not in d, d
