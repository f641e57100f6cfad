"""tmux_capture through the official MCP Python SDK: snapshot, tracked snapshot and
delta round trip (validated by the SDK and by jsonschema against the published
outputSchema), the stale_target error envelope, and the text content (a header
line naming the pane, then the rows)."""

from __future__ import annotations

import subprocess
import time

from harness import HEX32, TMUX, async_test, call, call_ok, clean_env, list_tools, mcp_session

ENABLE = ("--enable-tool", "tmux_capture")


def tmux_rows(server, pane: str, history: int = 0) -> list[str]:
    """`tmux capture-pane -p -S 0|-N -E -` split after each LF (rows keep their LF)."""
    start = "0" if history == 0 else f"-{history}"
    out = subprocess.run([TMUX, "-u", "-S", server.sock, "capture-pane", "-p", "-t", pane,
                          "-S", start, "-E", "-"], env=clean_env(), capture_output=True,
                         timeout=15, check=True).stdout.decode()
    return out.splitlines(keepends=True)


def wait_rows(server, pane: str, pred, timeout: float = 5.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        rows = tmux_rows(server, pane)
        if pred(rows):
            return rows
        assert time.monotonic() < deadline, f"pane {pane} never showed the expected rows: {rows!r}"
        time.sleep(0.02)


def apply_splice(prev: list[str], data: dict) -> list[str]:
    sp = data["splice"]
    assert sp["start"] + sp["delete"] <= len(prev), data
    return prev[:sp["start"]] + sp["rows"] + prev[sp["start"] + sp["delete"]:]


async def pane_target(session, pane: str) -> dict:
    """The pane's reference as an agent makes it from list_panes (the pane's id
    and the listing's generation), cross-checked with tmux_capabilities and
    with the whole record's reference (detail: full)."""
    listing = await call_ok(session, "list_panes")
    assert pane in [p["id"] for p in listing["panes"]], listing
    ref = {"kind": "pane", "id": pane, "generation": listing["generation"]}
    full = await call_ok(session, "list_panes", {"detail": "full"})
    assert ref == next(p["ref"] for p in full["panes"] if p["id"] == pane), full
    caps = await call_ok(session, "tmux_capabilities")
    assert ref == {"kind": "pane", "id": pane, "generation": caps["data"]["server_identity"]["generation"]}, ref
    return ref


def assert_text(result, pane: str, rows: list[str]) -> str:
    header, sep, body = result.text.partition("\n")
    assert sep, f"no header line in the text content: {result.text!r}"
    assert pane in header, f"header does not mention {pane}: {header!r}"
    assert body == "".join(rows), f"text after the header is not the rows: {result.text!r} vs {rows!r}"
    return header


@async_test(timeout=40)
async def test_capture_snapshot_tracked_delta_round_trip(tmux_server):
    srv = tmux_server
    pane = srv.tmux("new-window", "-d", "-P", "-F", "#{pane_id}",
                    "printf 'first\\n漢字 wide\\n'; exec cat")
    wait_rows(srv, pane, lambda r: "漢字 wide\n" in r)

    async with mcp_session(srv, *ENABLE) as s:
        tools = await list_tools(s)
        assert "tmux_capture" in tools, sorted(tools)
        assert tools["tmux_capture"].output_schema is not None
        target = await pane_target(s, pane)

        # Untracked snapshot.
        snap = await call(s, "tmux_capture", {"target": target})
        assert not snap.is_error, snap
        await s.validate_tool_result("tmux_capture", snap.raw)
        assert snap.structured["ok"] is True, snap
        d = snap.structured["data"]
        want = tmux_rows(srv, pane)
        assert d["rows"] == want, (d["rows"], want)
        assert d["mode"] == "snapshot" and d["encoding"] == "utf-8", d
        assert d["row_count"] == len(want) and d["bytes"] == len("".join(want).encode()), d
        assert d["process_generation"] is None and "next_cursor" not in d, d
        assert HEX32.match(d["capture_id"]), d
        assert_text(snap, pane, d["rows"])

        # Tracked snapshot: a cursor.
        tracked = await call(s, "tmux_capture", {"target": target, "track": True, "max_bytes": 4096})
        assert not tracked.is_error, tracked
        t = tracked.structured["data"]
        assert HEX32.match(t["next_cursor"]) and HEX32.match(t["process_generation"]), t
        assert t["scope"] == {"max_lines": 200, "max_bytes": 4096, "history_lines": 0}, t
        assert t["rows"] == tmux_rows(srv, pane), t
        header = assert_text(tracked, pane, t["rows"])
        assert t["next_cursor"] in header, header
        base = t["rows"]

        # The pane changes; the delta rebuilds it exactly.
        srv.tmux("send-keys", "-t", pane, "-l", "typed line")
        srv.tmux("send-keys", "-t", pane, "Enter")
        now = wait_rows(srv, pane, lambda r: r.count("typed line\n") == 2)
        delta = await call(s, "tmux_capture", {"target": target, "cursor": t["next_cursor"]})
        assert not delta.is_error, delta
        await s.validate_tool_result("tmux_capture", delta.raw)
        dd = delta.structured["data"]
        assert dd["mode"] == "delta" and dd["base_capture_id"] == t["next_cursor"], dd
        assert dd["process_generation"] == t["process_generation"], dd
        assert dd["scope"] == t["scope"], dd
        assert dd["reset"] is False, dd
        assert apply_splice(base, dd) == now, (base, dd, now)
        assert dd["row_count"] == len(now), dd
        assert "typed line\n" in dd["splice"]["rows"], dd
        header, _, body = delta.text.partition("\n")
        assert pane in header and dd["next_cursor"] in header, delta.text
        assert body == "".join(dd["splice"]["rows"]), delta.text

        # Nothing changed: the identical-state splice.
        again = await call_ok(s, "tmux_capture", {"target": target, "cursor": dd["next_cursor"]})
        a = again["data"]
        assert a["splice"] == {"start": len(now), "delete": 0, "rows": []} and a["reset"] is False, a


@async_test(timeout=30)
async def test_capture_stale_target_envelope_validates(tmux_server):
    async with mcp_session(tmux_server, *ENABLE) as s:
        target = await pane_target(s, "%0")
        stale = dict(target, generation="0" * 32)
        res = await call(s, "tmux_capture", {"target": stale})  # validated by jsonschema
        assert res.is_error, res
        await s.validate_tool_result("tmux_capture", res.raw)  # the SDK's own validator too
        err = res.structured
        assert err["ok"] is False, err
        assert err["error"]["code"] == "stale_target", err
        assert err["error"]["delivery"] == "not_sent", err
        assert "effects" not in err["error"], err
        assert res.text.startswith(err["error"]["message"]), res

        missing = await call(s, "tmux_capture", {"target": dict(target, id="%9999")})
        assert missing.is_error and missing.structured["error"]["code"] == "stale_target", missing
        await s.validate_tool_result("tmux_capture", missing.raw)
