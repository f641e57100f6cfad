"""The arrange tools (create_session … kill_session) through the official MCP
SDK: structuredContent valid against the published outputSchema
(harness.call, Python jsonschema), effects read back with tmux's own formats,
the real name tmux gave, the tiers (hidden, refused by name with the switch),
and refusals that change nothing."""

from harness import async_test, call, call_ok, list_tools, mcp_session, tmux_at_least

MUTATING = ("create_session", "create_window", "split_window", "select_pane", "select_window",
            "resize_pane", "rename_session", "rename_window")
DESTRUCTIVE = ("respawn_pane", "kill_pane", "kill_window", "kill_session")


def panes(server):
    return set(server.tmux("list-panes", "-a", "-F", "#{pane_id}").split())


def show(server, target, fmt):
    return server.tmux("display-message", "-p", "-t", target, fmt)


@async_test(45)
async def test_tiers_and_annotations(tmux_server):
    async with mcp_session(tmux_server, "--safety", "mutating") as s:
        tools = await list_tools(s)
        refused = await call(s, "kill_pane", {"paneId": "%0"})
    for name in MUTATING:
        a = tools[name].annotations
        assert (a.read_only_hint, a.destructive_hint) == (False, False), (name, a)
    assert not set(DESTRUCTIVE) & set(tools), sorted(tools)
    assert refused.is_error and "--safety destructive" in refused.text and "kill_pane" in refused.text, refused
    assert panes(tmux_server) == {"%0"}
    async with mcp_session(tmux_server, "--safety", "destructive") as s:
        tools = await list_tools(s)
    for name in DESTRUCTIVE:
        a = tools[name].annotations
        assert (a.read_only_hint, a.destructive_hint) == (False, True), (name, a)


@async_test(45)
async def test_create_rename_split_kill_read_back(tmux_server):
    async with mcp_session(tmux_server, "--safety", "destructive") as s:
        made = await call_ok(s, "create_session", {"name": "py.sess:1", "argv": ["sleep", "1000"]})
        sid, wid, pid = made["session"]["id"], made["window"]["id"], made["pane"]["id"]
        # The name tmux gave: up to 3.5 it turns `.` and `:` into `_`, 3.7 keeps them.
        real = show(tmux_server, sid, "#{session_name}")
        assert made["session"]["name"] == real, (made, real)
        if not tmux_at_least(3, 6):
            assert real == "py_sess_1", real
        listed = {x["id"]: x for x in (await call_ok(s, "list_sessions", {"detail": "full"}))["sessions"]}
        assert listed[sid]["ref"] == made["session"]["ref"], (listed, made)

        renamed = await call_ok(s, "rename_window", {"windowId": wid, "generation": made["generation"], "name": "py;win"})
        assert renamed["window"]["name"] == "py;win" == show(tmux_server, wid, "#{window_name}")

        split = await call_ok(s, "split_window", {"paneId": pid, "direction": "below", "size": "30%", "argv": ["sleep", "1000"]})
        new = split["pane"]["id"]
        assert show(tmux_server, new, "#{window_id}") == wid and split["window"]["paneCount"] == 2, split
        assert int(show(tmux_server, new, "#{pane_top}")) > int(show(tmux_server, pid, "#{pane_top}"))

        bad = await call(s, "rename_session", {"sessionId": sid, "name": "tab\there"})
        assert bad.is_error and "control characters" in bad.text and bad.text.endswith("Nothing was sent to tmux."), bad
        assert show(tmux_server, sid, "#{session_name}") == real

        killed = await call_ok(s, "kill_pane", {"paneId": new})
        assert killed["killed"] == {"kind": "pane", "id": new, "generation": made["generation"]}, killed
        assert new not in panes(tmux_server) and pid in panes(tmux_server)
        killed = await call_ok(s, "kill_session", {"sessionId": sid})
        assert killed["name"] == real and [p["id"] for p in killed["panesClosed"]] == [pid], killed
        assert panes(tmux_server) == {"%0"}
        last = await call(s, "kill_session", {"sessionId": "$0"})
        assert last.is_error and "end the server" in last.text, last
    assert panes(tmux_server) == {"%0"}
