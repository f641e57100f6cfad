"""list_panes: lean records by default, whole ones (references carrying the
server generation) with detail: full; values match tmux."""

from harness import HEX32, PANE_ID, SESSION_ID, async_test, call_ok, mcp_session


def check_lean(server, pane, settled=True):
    """A default (lean) record against tmux: where, how big, active, and (for
    a pane whose program has exec'd, `settled`) what runs and where."""
    pid_ = pane["id"]
    assert isinstance(pid_, str) and PANE_ID.match(pid_), pane
    fmt = "#{pane_width}x#{pane_height} #{pane_active} #{pane_dead} #{pane_current_path} #{pane_current_command}"
    size, active, dead, cwd, command = server.tmux("display-message", "-p", "-t", pid_, fmt).split(" ", 4)
    assert pane["size"] == size, (pane, size)
    assert isinstance(pane["cwd"], str) and isinstance(pane["command"], str), pane
    if settled:
        assert pane["cwd"] == cwd and pane["command"] == command, (pane, cwd, command)
    # Left out at their defaults: present only when true.
    assert pane.get("active", False) is (active == "1") and pane.get("dead", False) is (dead == "1"), pane
    places = server.tmux("list-panes", "-a", "-F", "#{pane_id} #{session_name}:#{window_index}.#{pane_index}").splitlines()
    assert pane["at"] == [p.split(" ", 1)[1] for p in places if p.split(" ", 1)[0] == pid_], (pane, places)
    assert "state" not in pane or pane["state"] != "running", pane
    assert not {"ref", "isCallerPane", "placements", "processGeneration"} & set(pane), pane


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
    # Every pane's program exec'd first: its command and directory stay put
    # between the listing and tmux's read.
    tmux_server.tmux("split-window", "-d", "-t", "main")
    tmux_server.quiet_panes("cat")
    async with mcp_session(tmux_server) as s:
        caps = await call_ok(s, "tmux_capabilities")
        generation = caps["data"]["server_identity"]["generation"]
        sc = await call_ok(s, "list_panes")
        full = await call_ok(s, "list_panes", {"detail": "full"})
    tmux_ids = tmux_server.tmux("list-panes", "-a", "-F", "#{pane_id}").split()
    # The generation once per result; no caller pane (the test runner is
    # outside this server), so none is named.
    assert sc["generation"] == full["generation"] == generation and "callerPaneId" not in sc, sc
    for listing, check in ((sc, check_lean), (full, lambda srv, p: check_pane(srv, p, generation))):
        panes = listing["panes"]
        assert sorted(p["id"] for p in panes) == sorted(tmux_ids), (panes, tmux_ids)
        for pane in panes:
            check(tmux_server, pane)
    for pane in full["panes"]:
        assert HEX32.match(pane["processGeneration"]) and pane["processState"] == "running", pane


@async_test()
async def test_list_panes_sees_split_window_on_next_call(tmux_server):
    async with mcp_session(tmux_server) as s:
        before = {p["id"] for p in (await call_ok(s, "list_panes"))["panes"]}
        new = tmux_server.tmux("split-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}")
        assert new not in before
        sc = await call_ok(s, "list_panes")
    after = {p["id"]: p for p in sc["panes"]}
    assert set(after) == before | {new}, (sorted(before), new, sorted(after))
    check_lean(tmux_server, after[new], settled=False)


@async_test(60)
async def test_list_panes_pages_by_id_and_gives_brief_records(tmux_server):
    """Pages of `limit` panes in pane-id order: every pane exactly once across
    the pages, also when panes come and go between them; `total` counts them
    all and the last page has no nextCursor. `detail: brief` records say where
    a pane is as tmux's target syntax and are a fraction of a full record; the
    default records a little more than brief ones."""
    server = tmux_server
    for _ in range(5):
        server.tmux("new-window", "-d", "-t", "main", "cat")
        server.tmux("split-window", "-d", "-t", "main", "cat")
    server.tmux("new-session", "-d", "-s", "work", "cat")
    # The brief records are compared with tmux's own read, taken later: every
    # pane's program has exec'd first (a pane reads `tmux` until then).
    server.quiet_panes("cat")
    ids = sorted(server.tmux("list-panes", "-a", "-F", "#{pane_id}").split(), key=lambda p: int(p[1:]))
    assert len(ids) == 12, ids
    async with mcp_session(server) as s:
        whole = await call_ok(s, "list_panes")
        assert [p["id"] for p in whole["panes"]] == ids and whole["total"] == 12, whole
        assert "nextCursor" not in whole, whole

        seen, cursor, pages = [], None, 0
        gone = made = None
        while True:
            args = {"limit": 5, **({"cursor": cursor} if cursor else {})}
            page = await call_ok(s, "list_panes", args)
            pages += 1
            assert len(page["panes"]) <= 5, page
            seen += [p["id"] for p in page["panes"]]
            if pages == 1:
                # Between pages: the last pane of this page goes, a new one comes.
                gone = page["panes"][-1]["id"]
                server.tmux("kill-pane", "-t", gone)
                made = server.tmux("split-window", "-d", "-t", "work", "-P", "-F", "#{pane_id}", "cat")
                assert page["total"] == 12, page
            cursor = page.get("nextCursor")
            if cursor is None:
                break
            assert cursor == page["panes"][-1]["id"], page
        assert seen == ids + [made], (seen, ids, made)
        assert pages == 3, pages

        server.quiet_panes("cat")
        brief = await call_ok(s, "list_panes", {"detail": "brief", "session": "work"})
        work = server.tmux("list-panes", "-s", "-t", "work", "-F", "#{pane_id} work:#{window_index}.#{pane_index} #{pane_current_command} #{pane_current_path}").splitlines()
        assert [f"{p['id']} {p['at'][0]} {p['command']} {p['cwd']}" for p in brief["panes"]] == work, (brief, work)
        for p in brief["panes"]:
            # Running, so no state; no size (a brief read has none).
            assert set(p) == {"id", "at", "command", "cwd"}, p
        full = await call_ok(s, "list_panes", {"session": "work", "detail": "full"})
        normal = await call_ok(s, "list_panes", {"session": "work"})
        import json as _json
        ratio = len(_json.dumps(brief["panes"])) / len(_json.dumps(full["panes"]))
        lean = len(_json.dumps(normal["panes"])) / len(_json.dumps(full["panes"]))
        print(f"brief records are {ratio:.2f} of full ones, default ones {lean:.2f}")
        assert ratio < lean < 0.5, (ratio, lean)

        for bad, field in [({"limit": 0}, "limit"), ({"cursor": "5"}, "cursor"), ({"detail": "short"}, "detail")]:
            r = await s.call_tool("list_panes", bad)
            assert r.is_error and field in r.content[0].text, (bad, r)


def _stable(pane):
    """A record without what moves on its own between two reads."""
    return {k: v for k, v in pane.items() if k not in ("historySize", "title")}


@async_test(90)
async def test_pages_read_apart_hold_the_same_records_as_the_whole_listing(tmux_server):
    """A page is read from a table that expands only the sessions it needs and
    places every other pane: each page, full or brief, at any size, holds the
    records a whole listing holds, in the same order, with the same total."""
    server = tmux_server
    # Records that do not change between reads: no automatic window names, and
    # each pane's program exec'd (a window reads `tmux` until then).
    server.tmux("set-option", "-g", "automatic-rename", "off")
    for name in ("alpha", "beta", "gamma"):
        server.tmux("new-session", "-d", "-s", name, "cat")
        for _ in range(2):
            server.tmux("split-window", "-d", "-t", name, "cat")
        server.tmux("new-window", "-d", "-t", name, "cat")
    # A window linked into a second session: its pane is placed in both.
    server.tmux("link-window", "-d", "-s", "alpha:1", "-t", "gamma:7")
    server.quiet_panes("cat")
    async with mcp_session(server) as s:
        for detail in ({}, {"detail": "full"}, {"detail": "brief"}):
            whole = await call_ok(s, "list_panes", {**detail, "limit": 10000})
            expected = [_stable(p) for p in whole["panes"]]
            assert len(expected) == whole["total"] == 13, whole
            for limit in (1, 2, 5):
                got, cursor = [], None
                while True:
                    args = {**detail, "limit": limit, **({"cursor": cursor} if cursor else {})}
                    page = await call_ok(s, "list_panes", args)
                    assert page["total"] == 13, page
                    got += [_stable(p) for p in page["panes"]]
                    cursor = page.get("nextCursor")
                    if cursor is None:
                        break
                assert got == expected, (detail, limit, got, expected)
            linked = [p for p in whole["panes"] if len(p.get("at", p.get("placements", []))) == 2]
            assert len(linked) == 1, whole


@async_test(60)
async def test_a_pane_moved_to_another_session_before_its_page_is_read_is_listed_where_it_is(tmux_server):
    """The last table names the sessions a page needs; a pane moved out of
    them since is still listed in full, in the session it is in now."""
    server = tmux_server
    server.tmux("new-window", "-d", "-t", "main")
    server.tmux("new-window", "-d", "-t", "main")
    server.tmux("new-session", "-d", "-s", "other")
    async with mcp_session(server) as s:
        first = await call_ok(s, "list_panes", {"limit": 2, "detail": "full"})
        generation = (await call_ok(s, "tmux_capabilities"))["data"]["server_identity"]["generation"]
        moved = first["panes"][1]["id"]
        assert [p["sessionName"] for p in first["panes"][1]["placements"]] == ["main"], first
        server.tmux("move-window", "-s", moved, "-t", "other:5")
        again = await call_ok(s, "list_panes", {"limit": 2, "detail": "full"})
        assert [p["id"] for p in again["panes"]] == [p["id"] for p in first["panes"]], (first, again)
        pane = again["panes"][1]
        assert [(p["sessionName"], p["index"]) for p in pane["placements"]] == [("other", 5)], pane
        check_pane(server, pane, generation)
        brief = await call_ok(s, "list_panes", {"limit": 2, "detail": "brief"})
        assert brief["panes"][1]["at"] == ["other:5.0"] and brief["panes"][1]["command"], brief
        lean = await call_ok(s, "list_panes", {"limit": 2})
        check_lean(server, lean["panes"][1], settled=False)
        assert lean["panes"][1]["at"] == ["other:5.0"], lean


@async_test(60)
async def test_a_respawned_pane_keeps_one_process_generation_across_pages(tmux_server):
    """A page read apart opens no process identity of its own (one it opened
    would go with its read): a pane respawned since the last table gets one
    processGeneration, the same on every later page, and a new one only when
    its process changes again."""
    server = tmux_server
    for _ in range(3):
        server.tmux("new-window", "-d", "-t", "main")
    server.tmux("new-session", "-d", "-s", "other")
    async with mcp_session(server) as s:
        first = await call_ok(s, "list_panes", {"limit": 2, "detail": "full"})
        assert "nextCursor" in first, first
        pane = first["panes"][1]
        server.tmux("respawn-pane", "-k", "-t", pane["id"])
        gens = []
        for _ in range(3):
            page = await call_ok(s, "list_panes", {"limit": 2, "detail": "full"})
            now = page["panes"][1]
            assert now["id"] == pane["id"] and now["processState"] == "running", now
            gens.append(now["processGeneration"])
        assert gens[0] != pane["processGeneration"], (pane, gens)
        assert gens == [gens[0]] * 3, gens
        whole = await call_ok(s, "list_panes", {"limit": 10000, "detail": "full"})
        assert [p["processGeneration"] for p in whole["panes"] if p["id"] == pane["id"]] == [gens[0]], whole
