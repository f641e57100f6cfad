"""tmux_wait through the official MCP Python SDK and raw JSON-RPC: progress
notifications while waiting (progressToken), and MCP cancellation
(notifications/cancelled) stopping a wait without a response while the
connection and the broker carry on.

Every structuredContent is validated against the published outputSchema with
jsonschema (and by the SDK itself on success)."""

from __future__ import annotations

import os
import time

import anyio

from harness import async_test, call, call_ok, list_tools, mcp_session, validator_for_schema

ENABLE = ("--enable-tool", "tmux_wait")


def tag() -> str:
    return os.urandom(4).hex()


async def pane_ref(session, pane: str) -> dict:
    """The pane's reference from list_panes: its id and the listing's generation."""
    listing = await call_ok(session, "list_panes")
    assert pane in [p["id"] for p in listing["panes"]], listing
    return {"kind": "pane", "id": pane, "generation": listing["generation"]}


def check_schema(tools: dict, name: str, structured: dict) -> None:
    schema = tools[name].output_schema
    assert schema is not None, f"{name} publishes no outputSchema"
    errors = list(validator_for_schema(schema).iter_errors(structured))
    assert not errors, f"{name}: structuredContent violates its outputSchema: " + "; ".join(
        f"at {list(e.absolute_path)}: {e.message}" for e in errors[:5])


@async_test(timeout=30)
async def test_wait_sends_progress_notifications_before_the_result(tmux_server):
    srv = tmux_server
    t = tag()
    # The 2.6 s before the text appears start when the test says go (Enter),
    # not when the pane starts: attaching may take a while on a loaded machine
    # (and longer where the table is read through the run-shell feed, 3.4-3.5).
    pane = srv.tmux("new-window", "-d", "-P", "-F", "#{pane_id}",
                    f"sh -c 'read go; sleep 2.6; echo READY-{t}; exec sleep 100'")
    async with mcp_session(srv, *ENABLE) as s:
        tools = await list_tools(s)
        assert "tmux_wait" in tools, sorted(tools)
        target = await pane_ref(s, pane)
        events: list[tuple[float, float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            events.append((time.monotonic(), progress, total, message))

        srv.tmux("send-keys", "-t", pane, "Enter")
        t0 = time.monotonic()
        raw = await s.call_tool("tmux_wait", {"target": target, "condition": {"type": "screen_contains",
                                "text": f"READY-{t}"}}, progress_callback=on_progress)
        done = time.monotonic()
        assert not raw.is_error, raw
        check_schema(tools, "tmux_wait", raw.structured_content)
        d = raw.structured_content["data"]
        assert d["condition"] == "screen_contains" and d["target"] == target, d
        assert f"READY-{t}\n" in d["capture"]["rows"], d
        assert 2.4 < done - t0 < 4.5, done - t0

        assert len(events) >= 2, f"expected >= 2 progress notifications over ~2.6 s, got {events!r}"
        assert all(when <= done for when, *_ in events), (events, done)
        progress = [p for _, p, _, _ in events]
        assert all(a < b for a, b in zip(progress, progress[1:])), f"progress does not increase: {progress!r}"
        assert all(total == 5 for _, _, total, _ in events), f"total is the wait's timeout (default 5): {events!r}"
        assert all(p <= total for _, p, total, _ in events), events
        # About once a second.
        gaps = [b - a for (a, *_), (b, *_) in zip(events, events[1:])]
        assert all(0.5 < g < 1.6 for g in gaps), f"progress gaps {gaps!r}"
        assert events[0][0] - t0 < 1.6, f"first progress after {events[0][0] - t0:.2f} s"


@async_test(timeout=30)
async def test_sdk_cancellation_of_a_wait_leaves_the_session_usable(tmux_server):
    """anyio cancellation of the SDK call sends notifications/cancelled; the session
    carries on (another call answers) and nothing is left running."""
    srv = tmux_server
    pane = srv.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "exec cat")
    async with mcp_session(srv, *ENABLE) as s:
        tools = await list_tools(s)
        target = await pane_ref(s, pane)
        with anyio.move_on_after(0.5) as scope:
            await s.call_tool("tmux_wait", {"target": target, "timeout": 30,
                                            "condition": {"type": "screen_contains", "text": f"NEVER-{tag()}"}})
        assert scope.cancelled_caught, "the wait returned on its own"
        t0 = time.monotonic()
        await s.send_ping()
        assert time.monotonic() - t0 < 1.0
        res = await call(s, "tmux_wait", {"target": target, "timeout": 0.3,
                                          "condition": {"type": "screen_contains", "text": f"NEVER-{tag()}"}})
        assert res.is_error and res.structured["error"]["code"] == "deadline", res
        assert res.structured["error"]["delivery"] == "observed", res
        check_schema(tools, "tmux_wait", res.structured)


@async_test(timeout=30)
async def test_raw_cancellation_stops_the_wait_without_a_response(tmux_server):
    srv = tmux_server
    t = tag()
    pane = srv.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "exec cat")
    raw = srv.raw_client(*ENABLE)
    raw.initialize()
    caps = raw.call_tool(2, "tmux_capabilities")
    gen = caps["result"]["structuredContent"]["data"]["server_identity"]["generation"]
    target = {"kind": "pane", "id": pane, "generation": gen}
    before = srv.status()

    raw.send({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
        "name": "tmux_wait", "_meta": {"progressToken": "cancel-me"},
        "arguments": {"target": target, "timeout": 30,
                      "condition": {"type": "screen_contains", "text": f"READY-{t}"}}}})
    # The wait is running (past its first read, waiting for events) once it reports progress.
    note = raw.next_notification("notifications/progress")
    assert note["params"]["progressToken"] == "cancel-me", note
    raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": 10, "reason": "test cancels the wait"}})
    # The broker reads a connection's lines in order: once this ping is
    # answered, it has handled the cancellation.
    assert raw.request(9, "ping", {}).get("result") == {}
    # Had the wait survived, this text would satisfy it at once (cat writes it back).
    srv.tmux("send-keys", "-t", pane, "-l", f"READY-{t}")
    srv.tmux("send-keys", "-t", pane, "Enter")
    try:
        msg = raw.next_message(timeout=1.0)
    except AssertionError as e:
        assert "no response within" in str(e), e
    else:
        raise AssertionError(f"a response arrived after cancellation: {msg!r}")

    # The same connection answers promptly.
    t0 = time.monotonic()
    pong = raw.request(11, "ping", {})
    assert pong.get("result") == {}, pong
    assert time.monotonic() - t0 < 1.0, time.monotonic() - t0
    # And serves tools: the same wait now succeeds at once (the text is on screen).
    res = raw.call_tool(12, "tmux_wait", {"target": target, "timeout": 3,
                                          "condition": {"type": "screen_contains", "text": f"READY-{t}"}})
    sc = res["result"]["structuredContent"]
    assert sc["ok"] is True, res
    assert f"READY-{t}\n" in sc["data"]["capture"]["rows"], sc

    # The broker is fine: same process, this session still open.
    after = srv.status()
    assert after["broker_pid"] == before["broker_pid"], (before, after)
    assert after["sessions_open"] >= 1, after
    assert after["sessions_served"] >= before["sessions_served"], (before, after)
    raw.close()
