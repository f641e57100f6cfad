"""list_sessions, list_windows, get_pane_info, get_server_info through the
official MCP SDK: read-only annotations, structuredContent valid against the
published outputSchema (harness.call), values equal to tmux's own formats,
bad input refused naming the field, and no after-* hook fired."""

import time

from harness import SESSION_ID, async_test, call, call_ok, list_tools, mcp_session, tmux_at_least
from test_hook_free import arm_hook_trap, fire_sentinel

TOOLS = ("list_sessions", "list_windows", "get_pane_info", "get_server_info", "show_options", "show_environment", "show_hooks", "search_panes")
# The configuration reads are opt-in (issue 20: every listed tool is paid for in each agent's context).
SHOW = ("--enable-tool", "show_options", "--enable-tool", "show_environment", "--enable-tool", "show_hooks")


def two_sessions(server):
    """`other` with two windows, and main's window 0 linked into it at index 5."""
    server.tmux("new-session", "-d", "-s", "other", "sleep 1000")
    server.tmux("new-window", "-d", "-t", "other:", "sleep 1000")
    server.tmux("link-window", "-d", "-s", "main:0", "-t", "other:5")


def fields(server, *args):
    return [line.split(" ") for line in server.tmux(*args).splitlines()]


@async_test()
async def test_published_read_only_with_object_schemas(tmux_server):
    async with mcp_session(tmux_server) as s:
        default = await list_tools(s)
    assert [n for n in TOOLS if n not in default] == ["show_options", "show_environment", "show_hooks"], sorted(default)
    async with mcp_session(tmux_server, *SHOW) as s:
        tools = await list_tools(s)
        for name in TOOLS:
            # An unknown argument is refused, named, whatever the lean
            # published schema leaves out.
            r = await call(s, name, {"bogusArgument": 1})
            assert r.is_error and "unexpected field(s) bogusArgument" in r.text, (name, r)
    for name in TOOLS:
        t = tools[name]
        assert t.input_schema["type"] == "object" and t.input_schema.get("additionalProperties", False) is False, t
        assert t.output_schema["type"] == "object", t
        a = t.annotations
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (True, False, True, False), (name, a)


@async_test()
async def test_sessions_and_windows_match_tmux(tmux_server):
    two_sessions(tmux_server)
    async with mcp_session(tmux_server) as s:
        generation = (await call_ok(s, "tmux_capabilities"))["data"]["server_identity"]["generation"]
        lean = await call_ok(s, "list_sessions")
        sessions = (await call_ok(s, "list_sessions", {"detail": "full"}))["sessions"]
        lean_windows = (await call_ok(s, "list_windows"))["windows"]
        windows = (await call_ok(s, "list_windows", {"detail": "full"}))["windows"]
        other = (await call_ok(s, "list_windows", {"session": "other"}))["windows"]
    want = fields(tmux_server, "list-sessions", "-F", "#{session_id} #{session_name} #{session_windows} #{session_attached}")
    assert [(x["id"], x["name"], x["windowCount"], x["attached"]) for x in sessions] == \
        [(i, n, int(w), int(a)) for i, n, w, a in want], (sessions, want)
    # The lean records say the same, a count of 0 left out, and no reference.
    assert lean["generation"] == generation and "scope" not in lean, lean
    assert [(x["id"], x["name"], x["windowCount"], x.get("attached", 0)) for x in lean["sessions"]] == \
        [(i, n, int(w), int(a)) for i, n, w, a in want], (lean, want)
    assert all("ref" not in x and x.get("attached") != 0 for x in lean["sessions"]), lean
    for x in sessions:
        assert SESSION_ID.match(x["id"]) and x["ref"] == {"kind": "session", "id": x["id"], "generation": generation}, x
    links = {}
    for wid, sid, idx, active in fields(tmux_server, "list-windows", "-a", "-F", "#{window_id} #{session_id} #{window_index} #{window_active}"):
        links.setdefault(wid, []).append({"sessionId": sid, "index": int(idx), "active": active == "1"})
    assert sorted(w["id"] for w in windows) == sorted(links), (windows, links)
    for w in windows:
        assert w["ref"] == {"kind": "window", "id": w["id"], "generation": generation}, w
        assert [{k: l[k] for k in ("sessionId", "index", "active")} for l in w["links"]] == links[w["id"]], (w, links)
    # Lean: where (session:index), which sessions' current window, size, panes.
    at = {}
    for wid, sname, idx, active, size, panes in fields(tmux_server, "list-windows", "-a", "-F", "#{window_id} #{session_name} #{window_index} #{window_active} #{window_width}x#{window_height} #{window_panes}"):
        w = at.setdefault(wid, {"at": [], "activeIn": [], "size": size, "paneCount": int(panes)})
        w["at"].append(f"{sname}:{idx}")
        if active == "1":
            w["activeIn"].append(sname)
    assert {w["id"]: {"at": w["at"], "activeIn": w.get("activeIn", []), "size": w["size"], "paneCount": w["paneCount"]}
            for w in lean_windows} == at, (lean_windows, at)
    assert all(w.get("activeIn") != [] and "ref" not in w for w in lean_windows), lean_windows
    want_other = tmux_server.tmux("list-windows", "-t", "other", "-F", "#{window_id}").split()
    assert sorted(w["id"] for w in other) == sorted(want_other), (other, want_other)


@async_test()
async def test_list_sessions_summarises_busy_and_dead_panes_as_tmux_shows_them(tmux_server):
    """The summary an agent reads first: per session and over the server,
    how many panes, which run something other than a shell (busy), which
    are dead; each equal to tmux's own pane_current_command/pane_dead."""
    srv = tmux_server
    two_sessions(srv)  # other: two `sleep` windows and main's window 0 linked in
    srv.tmux("set-option", "-g", "remain-on-exit", "on")
    dead = srv.tmux("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "other:0", "true")
    # The summary is compared with tmux's read taken after it: every pane
    # settled first (a shell without profile commands in %0, each `sleep`
    # exec'd by its `sh -c`, which reads as a shell until then).
    srv.tmux("respawn-pane", "-k", "-t", "%0", "bash --norc --noprofile")
    deadline = time.monotonic() + 10
    while sorted(srv.tmux("list-panes", "-a", "-F", "#{?pane_dead,,#{pane_current_command}}").split()) \
            != ["bash", "bash", "sleep", "sleep"]:
        assert time.monotonic() < deadline, srv.tmux("list-panes", "-a", "-F", "#{pane_id} #{pane_dead} #{pane_current_command}")
        time.sleep(0.02)
    async with mcp_session(srv) as s:
        r = await call_ok(s, "list_sessions")
    shells = {"sh", "bash", "dash", "zsh"}
    rows = fields(srv, "list-panes", "-a", "-F", "#{session_id} #{pane_id} #{pane_dead} #{pane_current_command}")
    def want(ids):
        busy = sorted({p for sid, p, d, c in rows if sid in ids and d == "0" and c not in shells}, key=lambda x: int(x[1:]))
        gone = sorted({p for sid, p, d, c in rows if sid in ids and d == "1"}, key=lambda x: int(x[1:]))
        return len({p for sid, p, _, _ in rows if sid in ids}), busy, gone
    def got(x):
        # An empty list is left out of a lean record.
        assert x.get("busyPanes") != [] and x.get("deadPanes") != [], x
        return x["paneCount"], sorted(x.get("busyPanes", []), key=lambda x: int(x[1:])), sorted(x.get("deadPanes", []), key=lambda x: int(x[1:]))
    for x in r["sessions"]:
        assert got(x) == want({x["id"]}), (x, rows)
    n, busy, gone = want({sid for sid, _, _, _ in rows})
    assert (r["paneCount"], r["busyCount"], r["deadCount"]) == (n, len(busy), len(gone)), (r, rows)
    assert any(dead in x.get("deadPanes", []) for x in r["sessions"]) and r["busyCount"] >= 2, r  # the two sleeps
    # A pane in a window linked into two sessions counts in both, once in all.
    assert r["paneCount"] == len({p for _, p, _, _ in rows}) < sum(x["paneCount"] for x in r["sessions"]), r


@async_test()
async def test_list_windows_pages_by_window_id(tmux_server):
    two_sessions(tmux_server)
    async with mcp_session(tmux_server) as s:
        whole = await call_ok(s, "list_windows")
        assert "nextCursor" not in whole and whole["total"] == len(whole["windows"]) == 3, whole
        seen, cursor = [], None
        while True:
            r = await call_ok(s, "list_windows", {"limit": 1, **({"cursor": cursor} if cursor else {})})
            assert r["total"] == 3 and len(r["windows"]) == 1, r
            seen += r["windows"]
            cursor = r.get("nextCursor")
            if cursor is None:
                break
            assert cursor == r["windows"][-1]["id"], r
        assert seen == whole["windows"], (seen, whole)
        r = await call(s, "list_windows", {"cursor": "%0"})
        assert r.is_error and "cursor" in r.text, r


@async_test(90)
async def test_list_windows_pages_read_apart_hold_the_whole_listing(tmux_server):
    """A page is read from a table that expands only the sessions holding its
    windows and places every other pane: each page, at any size and with a
    session filter, holds the records of the whole listing in the same order
    with the same total; a window linked into two sessions keeps both links."""
    server = tmux_server
    # Names fixed at creation: automatic-rename would rename a window between
    # two reads (it is named `tmux` until its program has exec'd).
    server.tmux("set-option", "-g", "automatic-rename", "off")
    for name in ("alpha", "beta", "gamma"):
        server.tmux("new-session", "-d", "-s", name, "sh")
        server.tmux("split-window", "-d", "-t", name, "sh")
        server.tmux("new-window", "-d", "-t", name, "sh")
        server.tmux("new-window", "-d", "-t", name, "sh")
    server.tmux("link-window", "-d", "-s", "alpha:1", "-t", "gamma:7")
    server.tmux("select-window", "-t", "gamma:7")
    async with mcp_session(server) as s:
        for filt in ({}, {"session": "gamma"}, {"detail": "full"}):
            whole = await call_ok(s, "list_windows", {**filt, "limit": 10000})
            n = whole["total"]
            assert len(whole["windows"]) == n == (4 if "session" in filt else 10), whole
            for limit in (1, 2, 3):
                got, cursor = [], None
                while True:
                    page = await call_ok(s, "list_windows", {**filt, "limit": limit, **({"cursor": cursor} if cursor else {})})
                    assert page["total"] == n, page
                    got += page["windows"]
                    cursor = page.get("nextCursor")
                    if cursor is None:
                        break
                assert got == whole["windows"], (filt, limit, got, whole)
        linked = [w for w in whole["windows"] if len(w["links"]) == 2]
        assert len(linked) == 1 and {(l["sessionName"], l["index"], l["active"]) for l in linked[0]["links"]} == {("alpha", 1, False), ("gamma", 7, True)}, linked


@async_test(60)
async def test_a_window_moved_before_its_page_is_read_is_listed_where_it_is(tmux_server):
    """The last table names the sessions a page needs; a window moved out of
    them since is still listed whole, linked where tmux has it now."""
    server = tmux_server
    server.tmux("set-option", "-g", "automatic-rename", "off")
    server.tmux("new-window", "-d", "-t", "main", "sh")
    server.tmux("new-window", "-d", "-t", "main", "sh")
    server.tmux("new-session", "-d", "-s", "other", "sh")
    async with mcp_session(server) as s:
        first = await call_ok(s, "list_windows", {"limit": 2, "detail": "full"})
        moved = first["windows"][1]["id"]
        assert [l["sessionName"] for l in first["windows"][1]["links"]] == ["main"], first
        server.tmux("move-window", "-s", moved, "-t", "other:5")
        lean = await call_ok(s, "list_windows", {"limit": 2})
        assert lean["windows"][1]["at"] == ["other:5"], lean
        again = await call_ok(s, "list_windows", {"limit": 2, "detail": "full"})
        assert [w["id"] for w in again["windows"]] == [w["id"] for w in first["windows"]], (first, again)
        w = again["windows"][1]
        assert [(l["sessionName"], l["index"]) for l in w["links"]] == [("other", 5)], w
        name, width, height, panes, layout = server.tmux(
            "display-message", "-p", "-t", moved, "#{window_name} #{window_width} #{window_height} #{window_panes} #{window_layout}").split(" ")
        assert (w["name"], w["width"], w["height"], w["paneCount"], w["layout"]) == (name, int(width), int(height), int(panes), layout), w


@async_test()
async def test_pane_and_server_info(tmux_server):
    two_sessions(tmux_server)
    # The full records of two reads are compared whole: a login shell's
    # window is renamed from `tmux` once the shell has started.
    tmux_server.quiet_panes()
    async with mcp_session(tmux_server) as s:
        panes = {p["id"]: p for p in (await call_ok(s, "list_panes"))["panes"]}
        full_panes = {p["id"]: p for p in (await call_ok(s, "list_panes", {"detail": "full"}))["panes"]}
        lean = await call_ok(s, "get_pane_info", {"paneId": "%0"})
        info = await call_ok(s, "get_pane_info", {"paneId": "%0", "detail": "full"})
        server = await call_ok(s, "get_server_info")
    # Lean: the list_panes record, with its window, pid and title.
    pane = lean["pane"]
    assert {k: v for k, v in pane.items() if k in panes["%0"]} == panes["%0"], (pane, panes["%0"])
    wid, pid, title = tmux_server.tmux("display-message", "-p", "-t", "%0", "#{window_id}|#{pane_pid}|#{pane_title}").split("|")
    assert (pane["windowId"], pane["pid"], pane["title"]) == (wid, int(pid), title), pane
    assert isinstance(pane["windowName"], str) and pane["windowName"], pane
    assert set(lean) == {"generation", "pane"} and "isCallerPane" not in pane, lean
    assert info["pane"] == full_panes["%0"], (info, full_panes["%0"])
    assert sorted(x["name"] for x in info["sessions"]) == ["main", "other"], info
    assert info["window"]["activePaneId"] == "%0", info
    version = tmux_server.tmux("-V").strip().removeprefix("tmux ")
    pid, start = tmux_server.tmux("display-message", "-p", "#{pid} #{start_time}").split()
    assert (server["tmuxVersion"], server["serverPid"], server["serverStartTime"]) == (version, int(pid), int(start)), server
    # No client is attached in this test (the broker's own connections are
    # command clients, which are left out).
    if tmux_at_least(3, 5):
        # No client attached: the list is left out.
        assert server["clients"] == {"available": True}, server
    else:
        assert server["clients"]["available"] is False and "attached" not in server["clients"], server
        assert "after-list-clients" in server["clients"]["unavailableReason"], server
    # At their defaults (server scope, outside tmux): left out.
    assert not {"scope", "callerPaneId", "callerSessionIds"} & set(server), server


@async_test()
async def test_bad_input_names_the_field(tmux_server):
    async with mcp_session(tmux_server) as s:
        for name, args, want in [
            ("list_windows", {"session": ""}, "argument /session: must be at least 1"),
            ("get_pane_info", {"paneId": "0"}, "argument /paneId: must match the pattern"),
            ("get_pane_info", {}, "missing required field paneId"),
            ("get_server_info", {"x": 1}, "unexpected field(s) x"),
            ("list_windows", {"session": "nope"}, "Argument session: no session with id or name \"nope\""),
        ]:
            r = await call(s, name, args)
            assert r.is_error and r.structured is None and want in r.text, (name, args, r)


@async_test(45)
async def test_reads_fire_no_after_hooks(tmux_server):
    two_sessions(tmux_server)
    trap = tmux_server.dir / "hooks.log"
    trap.write_text("")
    armed = arm_hook_trap(tmux_server, trap)
    assert {"after-list-sessions", "after-list-windows", "after-list-clients", "after-show-options"} <= set(armed), armed
    fire_sentinel(tmux_server, trap)
    trap.write_text("")
    async with mcp_session(tmux_server, *SHOW) as s:
        for name, args in [("list_sessions", {}), ("list_windows", {"session": "other"}), ("get_pane_info", {"paneId": "%0"}), ("get_server_info", {}),
                           ("show_options", {"names": ["status"], "pane": "%0"}), ("show_environment", {"names": ["PATH"]}), ("show_hooks", {}), ("search_panes", {"pattern": "x", "scrollbackLines": 5})]:
            await call_ok(s, name, args)
        fired = fire_sentinel(tmux_server, trap)
    assert fired == "after-display-message\n", f"after-* hooks ran:\n{fired}"


@async_test()
async def test_show_options_environment_and_hooks(tmux_server):
    two_sessions(tmux_server)
    tmux_server.tmux("set-option", "-g", "@mcp-py", "x,#{y}")
    tmux_server.tmux("set-option", "-t", "other", "status", "off")
    tmux_server.tmux("set-environment", "-g", "MCPPY_G", "g")
    tmux_server.tmux("set-environment", "-t", "other", "MCPPY_G", "o")
    tmux_server.tmux("set-hook", "-t", "other", "client-attached", "display-message z")
    async with mcp_session(tmux_server, *SHOW) as s:
        g = await call_ok(s, "show_options", {"names": ["@mcp-py", "status", "history-limit"]})
        o = await call_ok(s, "show_options", {"names": ["status"], "session": "other"})
        env = await call_ok(s, "show_environment", {"names": ["MCPPY_G", "host"], "session": "other"})
        hooks = await call_ok(s, "show_hooks", {"session": "other"})
        bad = await call(s, "show_options", {"names": ["pane_id"]})
    limit = tmux_server.tmux("show-options", "-gv", "history-limit").strip()
    assert [o_["value"] for o_ in g["options"]] == ["x,#{y}", "on", limit], g
    assert o["options"][0]["value"] == "off" and o["context"]["kind"] == "session", o
    assert env["variables"][0] == {"name": "MCPPY_G", "readable": True, "value": "o"}, env
    assert env["variables"][1]["readable"] is False and env["variables"][1]["value"] is None, env
    assert hooks["hooks"] == [{"name": "client-attached", "index": 0, "command": "display-message z"}], hooks
    assert bad.is_error and "argument /names/0: must match the pattern" in bad.text, bad


@async_test()
async def test_search_panes_finds_lines_and_pages(tmux_server):
    script = tmux_server.dir / "print.sh"
    script.write_text("printf 'needle one\\nNEEDLE two\\nneedle three\\n'\nexec sleep 1000\n")
    pane = tmux_server.tmux("new-session", "-d", "-s", "s1", "-P", "-F", "#{pane_id}", f"sh {script}").strip()
    for _ in range(250):
        if "needle three" in tmux_server.tmux("capture-pane", "-p", "-t", pane):
            break
        time.sleep(0.02)
    async with mcp_session(tmux_server) as s:
        f = await call_ok(s, "search_panes", {"pattern": "needle", "matchCase": False, "session": "s1"})
        p1 = await call_ok(s, "search_panes", {"pattern": "needle", "limit": 1})
        p2 = await call_ok(s, "search_panes", {"pattern": "needle", "limit": 1, "offset": p1["nextOffset"]})
        bad = await call(s, "search_panes", {"pattern": "[", "regex": True})
    assert [(m["paneId"], m["lineNumber"], m["text"]) for m in f["matches"]] == \
        [(pane, 1, "needle one"), (pane, 2, "NEEDLE two"), (pane, 3, "needle three")], f
    assert [m["text"] for m in p1["matches"] + p2["matches"]] == ["needle one", "needle three"], (p1, p2)
    # The last page has no nextOffset; the first has no offset (0, left out).
    assert "nextOffset" not in p2 and "offset" not in p1 and p2["offset"] == 1 and p1["totalMatches"] == 2, (p1, p2)
    assert [m["at"] for m in f["matches"]] == [["s1:0.0"]] * 3 and "ref" not in f["matches"][0], f
    assert bad.is_error and bad.text.startswith("Argument pattern: not a valid regular expression"), bad
