"""`@mcp-request-timeout`: the most a wait of an agent waits, set by the
person for every agent session that opens after it (the broker's
`--request-timeout` otherwise), through the official MCP Python SDK: the
published limit follows it, a wait longer than the tests' 5 s goes through, the default is 55 s,
a shorter one is clamped and says so, and a bad value refuses the session
with a message naming the option."""

from __future__ import annotations

import time

import anyio
import pytest

from harness import async_test, call_ok, mcp_session


async def limit(s) -> float:
    caps = await call_ok(s, "tmux_capabilities")
    return caps["data"]["limits"]["request_timeout_seconds"] if "data" in caps else caps["limits"]["request_timeout_seconds"]


@async_test(timeout=60)
async def test_the_option_sets_each_new_sessions_wait_ceiling(tmux_server):
    srv = tmux_server
    pane = srv.tmux("display-message", "-p", "-t", "main:0.0", "#{pane_id}")
    async with mcp_session(srv) as s:
        assert await limit(s) == 5  # the harness's setting
    # Unset: the broker's default, under the 60 s tool-call limit of the
    # TypeScript SDK and Codex CLI (issue 38 item 7).
    srv.tmux("set-option", "-gu", "@mcp-request-timeout")
    async with mcp_session(srv) as s:
        assert await limit(s) == 55
    srv.tmux("set-option", "-g", "@mcp-request-timeout", "1")
    async with mcp_session(srv) as s:
        assert await limit(s) == 1
        w = await call_ok(s, "wait_for_text", {"paneId": pane, "patterns": ["never-shown"], "timeoutMs": 3000})
        assert w["outcome"] == "timeout" and w["timeoutMs"] == 1000 and w["timeoutClamped"] is True, w
    srv.tmux("set-option", "-g", "@mcp-request-timeout", "12")
    async with mcp_session(srv) as s:
        assert await limit(s) == 12
        async with anyio.create_task_group() as tg:
            got: dict = {}

            async def wait():
                got["w"] = await call_ok(s, "wait_for_text", {"paneId": pane, "patterns": ["late-marker"],
                                                              "timeoutMs": 10_000})

            t0 = time.monotonic()
            tg.start_soon(wait)
            await anyio.sleep(6.5)  # past the harness's 5 s ceiling
            srv.tmux("send-keys", "-t", pane, "-l", "echo late-marker")
            srv.tmux("send-keys", "-t", pane, "Enter")
        w = got["w"]
        # Not clamped, and matched: the wait's timeout is not reported.
        assert w["outcome"] == "matched" and "timeoutClamped" not in w and "timeoutMs" not in w, w
        assert time.monotonic() - t0 >= 6.5


@async_test(timeout=30)
async def test_a_bad_value_refuses_the_session_naming_the_option(tmux_server):
    srv = tmux_server
    srv.tmux("set-option", "-g", "@mcp-request-timeout", "soon")
    with pytest.raises(Exception) as e:
        async with mcp_session(srv) as s:
            await call_ok(s, "tmux_capabilities")
    log = srv.dump_logs()
    assert "@mcp-request-timeout" in log and "soon" in log, (e.value, log)
