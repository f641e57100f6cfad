"""tmux_capabilities: the seed envelope and the bound server's identity."""

from harness import HEX32, async_test, call_ok, mcp_session


@async_test()
async def test_capabilities_reports_server_identity(tmux_server):
    async with mcp_session(tmux_server) as s:
        sc = await call_ok(s, "tmux_capabilities")
    assert sc.get("ok") is True, sc
    data = sc["data"]
    ident = data["server_identity"]
    assert isinstance(ident["generation"], str) and HEX32.match(ident["generation"]), ident
    assert type(ident["pid"]) is int and ident["pid"] == tmux_server.pid, (ident, tmux_server.pid)
    assert type(ident["start_time"]) is int and ident["start_time"] > 0, ident
    # Same instant as tmux's own #{start_time} (allow rounding of a /proc-derived value).
    tmux_start = int(tmux_server.tmux("display-message", "-p", "#{start_time}"))
    assert abs(ident["start_time"] - tmux_start) <= 2, (ident, tmux_start)
    assert isinstance(ident["tmux_version"], str) and ident["tmux_version"], ident
    assert ident["tmux_version"] == tmux_server.tmux("display-message", "-p", "#{version}"), ident
    assert isinstance(data["enabled_tools"], list), data
    assert "tmux_capabilities" in data["enabled_tools"], data["enabled_tools"]
    assert data["owns_daemon"] is True, data.get("owns_daemon")
