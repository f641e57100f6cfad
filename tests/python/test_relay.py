"""The attach relay survives its broker (issue 6 item 11, issue 10 item 4),
through the official MCP Python SDK: `kill -9` of the broker (its pid comes from
tmux_capabilities) while waits are in flight and a flood of calls runs."""

from __future__ import annotations

import os
import signal
import time

import anyio
from mcp import MCPError

from harness import async_test, call, call_ok, mcp_session

BROKER_LOST = -31000  # the project's own code (docs/spec.md A.0.7)


def assert_broker_lost(error, what: str) -> None:
    assert error.code == BROKER_LOST, f"{what}: {error!r}"
    assert "broker was lost" in error.message and "unknown" in error.message, f"{what}: {error!r}"
    assert error.data == {"delivery": "possibly_sent"}, f"{what}: {error!r}"


@async_test(90)
async def test_broker_kill_9_under_a_flood_keeps_the_session(tmux_server):
    async with mcp_session(tmux_server, "--enable-tool", "tmux_capture", "--enable-tool", "tmux_wait") as s:
        caps = await call_ok(s, "tmux_capabilities")
        gen = caps["data"]["server_identity"]["generation"]
        old = caps["data"]["broker"]["pid"]
        assert tmux_server.brokers() == [old], (old, tmux_server.brokers())
        target = {"kind": "pane", "id": "%0", "generation": gen}
        tracked = await call_ok(s, "tmux_capture", {"target": target, "track": True})
        cursor = tracked["data"]["next_cursor"]

        stop = anyio.Event()
        flood_log: list[tuple[float, str, object]] = []  # (sent, "ok" | "lost", detail)
        answered = 0

        async def flood(name: str) -> None:
            nonlocal answered
            while not stop.is_set():
                sent = time.monotonic()
                try:
                    r = await call(s, name)
                    assert not r.is_error, f"a flood call failed: {r!r}"
                    flood_log.append((sent, "ok", None))
                except MCPError as e:
                    assert_broker_lost(e.error, f"flood {name}")
                    flood_log.append((sent, "lost", e.error))
                answered += 1

        # Waits for text that never appears. The broker reports progress as soon
        # as a wait runs: that first notification proves the call is in flight.
        running = [anyio.Event() for _ in range(3)]
        waits: list[tuple[str, object]] = []

        async def wait(i: int) -> None:
            async def progress(_p: float, _total: float | None, _msg: str | None) -> None:
                running[i].set()

            args = {"target": target, "condition": {"type": "screen_contains", "text": f"never-shown-{i}-{os.getpid()}"}, "timeout": 60}
            try:
                waits.append(("answered", await s.call_tool("tmux_wait", args, progress_callback=progress)))
            except MCPError as e:
                waits.append(("lost", e.error))

        async with anyio.create_task_group() as tg:
            for name in ("list_panes", "tmux_capabilities", "list_panes", "tmux_capabilities"):
                tg.start_soon(flood, name)
            for i in range(3):
                tg.start_soon(wait, i)
            for ev in running:
                await ev.wait()
            while answered < 20:
                await anyio.sleep(0.01)

            killed = time.monotonic()
            os.kill(old, signal.SIGKILL)  # this test's broker, by the pid it reported
            while True:
                try:
                    after = await call_ok(s, "tmux_capabilities")
                    recovered = time.monotonic()
                    break
                except MCPError as e:  # sent while the old broker was dying
                    assert_broker_lost(e.error, "call after the kill")
            print(f"recovery after kill -9 of the broker: {(recovered - killed) * 1e3:.1f} ms (kill -> next call answered)")
            mark = answered
            while answered < mark + 20:
                await anyio.sleep(0.01)
            stop.set()

        assert len(waits) == 3, waits
        for kind, detail in waits:
            assert kind == "lost", f"an in-flight wait was answered otherwise: {detail!r}"
            assert_broker_lost(detail, "in-flight wait")
        lost = [t for t in flood_log if t[1] == "lost"]
        ok_after = [t for t in flood_log if t[1] == "ok" and t[0] > recovered]
        assert all(sent < recovered for sent, _, _ in lost), "a call sent after the recovery got the broker-lost error"
        assert ok_after, "no flood call was served after the recovery"
        print(f"flood: {len(flood_log) - len(lost)} calls answered, {len(lost)} answered with the broker-lost error")

        new = after["data"]["broker"]["pid"]
        assert new != old
        deadline = time.monotonic() + 5
        while tmux_server.brokers() != [new] and time.monotonic() < deadline:
            await anyio.sleep(0.01)
        assert tmux_server.brokers() == [new], (old, new, tmux_server.brokers())
        # Same session: references from before work, the cursor lived in the old broker.
        assert after["data"]["server_identity"]["generation"] == gen
        await call_ok(s, "tmux_capture", {"target": target})
        stale = await call(s, "tmux_capture", {"target": target, "cursor": cursor})
        assert stale.is_error and stale.structured["error"]["code"] == "stale_cursor", stale

    log = [p for p in tmux_server.logs if p.name.startswith("attach-")][-1].read_text()
    assert sum("lost the broker" in line for line in log.splitlines()) == 1, log
    assert "reconnected to the broker" in log, log


def test_relay_exits_non_zero_when_the_tmux_server_is_gone(tmux_server):
    raw = tmux_server.raw_client()
    raw.initialize()
    assert "result" in raw.call_tool(2, "tmux_capabilities")
    tmux_server.tmux("kill-server")
    rc = raw.proc.wait(timeout=20)
    err = raw.stderr_path.read_text()
    assert rc == 1, f"rc={rc}; stderr: {err!r}"
    assert f"the tmux server at {tmux_server.sock} is gone" in err, err
    assert "this MCP session ends" in err, err
