"""The 2026-07-28 era: server/discover, raw and through the SDK."""

from harness import HEX32, async_test, call_ok, mcp_session

SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"


def test_server_discover_raw(tmux_server):
    raw = tmux_server.raw_client()
    reply = raw.request(1, "server/discover", {})
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
