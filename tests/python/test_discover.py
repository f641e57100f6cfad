"""The 2026-07-28 era: server/discover, raw and through the SDK."""

from harness import HEX32, async_test, call_ok, mcp_session

SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "tmux-mcp-raw-test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def test_server_discover_raw(tmux_server):
    raw = tmux_server.raw_client()
    # server/discover belongs to the 2026-07-28 era: its request carries the
    # era's `_meta` (rmcp's rule, ARCHITECTURE.md "MCP layer"); without it the
    # answer is -32602 naming what is missing, and the session goes on.
    reply = raw.request(1, "server/discover", {})
    assert reply.get("error", {}).get("code") == -32602, reply
    assert "protocolVersion" in reply["error"]["message"], reply
    reply = raw.request(2, "server/discover", {"_meta": META})
    assert "result" in reply, f"server/discover failed: {reply!r}"
    result = reply["result"]
    assert isinstance(result.get("supportedVersions"), list), result
    assert "2026-07-28" in result["supportedVersions"], result
    assert isinstance(result.get("capabilities"), dict) and "tools" in result["capabilities"], result
    # serverInfo: top level (as asked) or the 2026-07-28 `_meta` stamp the SDK reads.
    info = result.get("serverInfo") or (result.get("_meta") or {}).get(SERVER_INFO_META_KEY)
    assert isinstance(info, dict) and info.get("name") and info.get("version"), (
        f"no serverInfo (top level or _meta[{SERVER_INFO_META_KEY!r}]): {result!r}")
    raw.close()


@async_test()
async def test_sdk_discover_then_tools_work_in_modern_era(tmux_server):
    async with mcp_session(tmux_server, modern=True) as s:
        assert s.protocol_version == "2026-07-28", s.protocol_version
        caps = await call_ok(s, "tmux_capabilities")
        assert HEX32.match(caps["data"]["server_identity"]["generation"]), caps
        panes = await call_ok(s, "list_panes")
        assert panes["panes"], panes


def test_server_discover_result_matches_2026_07_28_wire_schema(tmux_server):
    """The raw discover result and a modern-era tools/list parse with the SDK's
    own 2026-07-28 wire models (what a strict modern client enforces)."""
    import pydantic
    import mcp_types._v2026_07_28 as wire

    meta = META
    raw = tmux_server.raw_client()
    problems = []
    for id_, method, model in ((1, "server/discover", wire.DiscoverResult),
                               (2, "tools/list", wire.ListToolsResult)):
        reply = raw.request(id_, method, {"_meta": meta})
        assert "result" in reply, f"{method} failed: {reply!r}"
        try:
            model.model_validate(reply["result"])
        except pydantic.ValidationError as e:
            missing = [".".join(map(str, err["loc"])) + f" ({err['type']})" for err in e.errors()]
            problems.append(f"{method}: {missing}")
    # ping was removed in this era: -32601 (test_mcp_2026.py).
    assert raw.request(3, "ping", {"_meta": meta}).get("error", {}).get("code") == -32601
    raw.close()
    assert not problems, "2026-07-28 wire-schema violations: " + "; ".join(problems)
