"""Listing latency through the official MCP Python SDK, for `tests/bench/listing.rs`.

    python listing.py SOCKET TMUX_MCP_BINARY ROUNDS

Attaches one ClientSession (`tmux-mcp attach -S SOCKET --scope server`) and times
`session.call_tool` (the SDK's own parsing and outputSchema check included,
nothing of ours on top) for `list_panes` (first page, whole, whole brief) and `tmux_snapshot` (entity pane,
limit 200). Prints one JSON object: per tool the sorted milliseconds and the
size of the structured result. Asserts nothing about speed.
"""

import json
import os
import sys
import time

import anyio

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


async def main(sock: str, binary: str, rounds: int) -> None:
    os.environ["TMUX_MCP_BIN"] = binary
    import harness  # reads TMUX_MCP_BIN on import

    # Labels, tools and arguments as tests/bench/listing.rs's TOOLS.
    calls = {
        "list_panes first page": ("list_panes", {}),
        "list_windows first page": ("list_windows", {}),
        "list_panes whole": ("list_panes", {"limit": 10000}),
        "list_panes whole brief": ("list_panes", {"limit": 10000, "detail": "brief"}),
        "tmux_snapshot": ("tmux_snapshot", {"entity": "pane", "limit": 200}),
    }
    out = {}
    async with harness.mcp_session(sock, "--scope", "server") as s:
        await s.list_tools()  # the SDK checks structured results against these schemas
        for label, (name, args) in calls.items():
            first = await s.call_tool(name, args)  # warm: the pidfd identities are acquired once
            assert not first.is_error, first
            times = []
            for _ in range(rounds):
                t = time.perf_counter()
                r = await s.call_tool(name, args)
                times.append((time.perf_counter() - t) * 1000.0)
                assert not r.is_error, r
            out[label] = {"ms": sorted(times), "structured_bytes": len(json.dumps(r.structured_content, separators=(",", ":")))}
    print(json.dumps(out))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
