"""list_panes: pane references carry the server generation; values match tmux."""

from harness import PANE_ID, SESSION_ID, async_test, call_ok, mcp_session


def check_pane(server, pane, generation):
    pid_ = pane["id"]
    assert isinstance(pid_, str) and PANE_ID.match(pid_), pane
    assert pane["ref"] == {"kind": "pane", "id": pid_, "generation": generation}, pane
    fmt = "#{pane_pid} #{pane_width} #{pane_height} #{pane_dead} #{session_id} #{session_name} #{window_index}"
    tpid, w, h, dead, sid, sname, widx = server.tmux("display-message", "-p", "-t", pid_, fmt).split(" ")
    assert type(pane["pid"]) is int and pane["pid"] == int(tpid), (pane, tpid)
    assert pane["dead"] is (dead == "1"), pane
    assert pane["width"] == int(w) and pane["height"] == int(h), (pane, w, h)
    assert isinstance(pane["command"], str), pane
    assert isinstance(pane["isCallerPane"], bool), pane
    # The test runner is not inside this tmux server, so no pane is the caller's.
    assert pane["isCallerPane"] is False, pane
    placements = pane["placements"]
    assert isinstance(placements, list) and placements, pane
    for p in placements:
        assert set(p) >= {"sessionId", "sessionName", "index"}, p
        assert SESSION_ID.match(p["sessionId"]), p
    assert {"sessionId": sid, "sessionName": sname, "index": int(widx)} in [
        {k: p[k] for k in ("sessionId", "sessionName", "index")} for p in placements
    ], (pane, sid, sname, widx)


@async_test()
async def test_list_panes_matches_tmux_and_carries_generation(tmux_server):
    async with mcp_session(tmux_server) as s:
        caps = await call_ok(s, "tmux_capabilities")
        generation = caps["data"]["server_identity"]["generation"]
        sc = await call_ok(s, "list_panes")
    panes = sc["panes"]
    tmux_ids = tmux_server.tmux("list-panes", "-a", "-F", "#{pane_id}").split()
    assert sorted(p["id"] for p in panes) == sorted(tmux_ids), (panes, tmux_ids)
    for pane in panes:
        check_pane(tmux_server, pane, generation)


@async_test()
async def test_list_panes_sees_split_window_on_next_call(tmux_server):
    async with mcp_session(tmux_server) as s:
        before = {p["id"] for p in (await call_ok(s, "list_panes"))["panes"]}
        new = tmux_server.tmux("split-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}")
        assert new not in before
        sc = await call_ok(s, "list_panes")
        generation = (await call_ok(s, "tmux_capabilities"))["data"]["server_identity"]["generation"]
    after = {p["id"]: p for p in sc["panes"]}
    assert set(after) == before | {new}, (sorted(before), new, sorted(after))
    check_pane(tmux_server, after[new], generation)
