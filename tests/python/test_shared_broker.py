"""Two agents on one tmux server: one broker serves both."""

import time

import anyio

from harness import all_broker_processes, async_test, call_ok, mcp_session


@async_test(45)
async def test_two_sessions_share_one_broker(tmux_server):
    sock = tmux_server.sock
    async with mcp_session(tmux_server) as a, mcp_session(tmux_server) as b:
        results = {}

        async def ask(name, s):
            caps = await call_ok(s, "tmux_capabilities")
            panes = await call_ok(s, "list_panes")
            results[name] = (caps["data"]["server_identity"]["generation"], panes["panes"])

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "a", a)
            tg.start_soon(ask, "b", b)
        assert results["a"][0] == results["b"][0], results
        assert [p["id"] for p in results["a"][1]] == [p["id"] for p in results["b"][1]], results

        brokers = tmux_server.brokers()
        assert len(brokers) == 1, (
            f"expected exactly one tmux-mcp-broker whose argv names {sock}, found {brokers}; "
            f"all brokers: {all_broker_processes()}"
        )
        broker = brokers[0]

    # Both agents gone: the broker lives on with its tmux server, and a later
    # agent is served by the same broker with the same generation. Wait until
    # the broker itself has seen both sessions end (the moment it would quit if
    # it wrongly followed its clients), then look.
    deadline = time.monotonic() + 10
    while (st := tmux_server.status())["sessions_open"] != 0:
        assert time.monotonic() < deadline, f"the broker never saw both sessions close: {st}"
        await anyio.sleep(0.02)
    assert st["broker_pid"] == broker, (st, broker)
    assert tmux_server.brokers() == [broker], (broker, all_broker_processes())
    async with mcp_session(tmux_server) as c:
        caps = await call_ok(c, "tmux_capabilities")
    assert caps["data"]["server_identity"]["generation"] == results["a"][0]
    assert tmux_server.brokers() == [broker], (broker, all_broker_processes())
