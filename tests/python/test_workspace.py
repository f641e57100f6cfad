"""build_workspace through the official MCP Python SDK (issue 19 item 6): a
session with its windows, panes, programs and layouts from one document,
every reference returned and checked against tmux itself; a failure after
tmux acted closes what it created and nothing else; bad documents send
nothing. Every structuredContent is validated against the published
outputSchema with jsonschema (`harness.call`)."""

from __future__ import annotations

from harness import async_test, call, call_ok, list_tools, mcp_session, wait_until

MUTATING = ("--safety", "mutating")


def sessions(srv) -> list[str]:
    return srv.tmux("list-sessions", "-F", "#{session_name}").splitlines()


@async_test(timeout=60)
async def test_a_workspace_is_built_from_one_document_and_every_reference_returned(tmux_server):
    srv = tmux_server
    work = srv.dir / "proj"
    work.mkdir()
    doc = {
        "session": "ws",
        "cwd": str(work),
        "width": 160,
        "height": 48,
        "windows": [
            {"name": "edit", "layout": "main-vertical", "panes": [
                {"shell": "echo pane-one; exec sleep 100"},
                {"argv": ["sh", "-c", "pwd; exec sleep 100"]},
                {"argv": ["sh", "-c", "echo \"$WS_ROLE\"; exec sleep 100"], "env": {"WS_ROLE": "tests"},
                 "cwd": str(srv.dir)},
            ]},
            {"name": "logs", "panes": [{"argv": ["sleep", "100"]}]},
        ],
    }
    async with mcp_session(srv, *MUTATING) as s:
        tools = await list_tools(s)
        t = tools["build_workspace"]
        assert t.annotations.read_only_hint is False and t.annotations.destructive_hint is False
        out = await call_ok(s, "build_workspace", doc)
    sid = out["session"]["ref"]["id"] if "ref" in out["session"] else out["session"]["id"]
    assert "ws" in sessions(srv)
    assert [w["window"]["name"] for w in out["windows"]] == ["edit", "logs"], out
    assert [len(w["panes"]) for w in out["windows"]] == [3, 1], out
    # What tmux has is what was returned, in the document's order.
    for w in out["windows"]:
        wid = w["window"]["id"]
        listed = srv.tmux("list-panes", "-t", wid, "-F", "#{pane_id}").splitlines()
        assert sorted(listed) == sorted(p["id"] for p in w["panes"]), (listed, w)
        assert srv.tmux("display-message", "-p", "-t", wid, "#{session_id}") == sid
    edit = out["windows"][0]
    layout = srv.tmux("display-message", "-p", "-t", edit["window"]["id"], "#{window_layout}")
    # main-vertical: the main pane on the left, full height, the others stacked right of it.
    first = edit["panes"][0]["id"]
    assert srv.tmux("display-message", "-p", "-t", first, "#{pane_left} #{pane_top} #{pane_height}") == "0 0 48", layout
    p1, p2, p3 = (p["id"] for p in edit["panes"])
    await wait_until(lambda: "pane-one" in srv.tmux("capture-pane", "-p", "-t", p1))
    await wait_until(lambda: str(work) in srv.tmux("capture-pane", "-p", "-t", p2))
    await wait_until(lambda: "tests" in srv.tmux("capture-pane", "-p", "-t", p3))
    assert srv.tmux("display-message", "-p", "-t", p3, "#{pane_current_path}") == str(srv.dir)


@async_test(timeout=60)
async def test_a_failed_build_closes_what_it_made_and_bad_documents_send_nothing(tmux_server):
    srv = tmux_server
    before = sessions(srv)
    async with mcp_session(srv, *MUTATING) as s:
        # tmux refuses the split: no room for 32 panes in a 10x5 window.
        doc = {"session": "tiny", "width": 10, "height": 5,
               "windows": [{"panes": [{"argv": ["sleep", "100"]}] * 32}]}
        r = await call(s, "build_workspace", doc)
        assert r.is_error and "killed" in r.text and "nothing else was touched" in r.text, r
        assert sessions(srv) == before, "the half-built session was left behind"
        for bad, field in (
            ({"session": "x", "windows": []}, "windows"),
            ({"session": "x", "windows": [{"panes": []}]}, "panes"),
            ({"session": "x", "windows": [{"layout": "spiral", "panes": [{}]}]}, "layout"),
            ({"session": "x", "windows": [{"panes": [{"argv": ["a"], "shell": "b"}]}]}, "argv"),
            ({"session": "x", "windows": [{"panes": [{"cwd": "/no/such/dir"}]}]}, "cwd"),
            ({"session": "x", "windows": [{"panes": [{}], "extra": 1}]}, "extra"),
        ):
            r = await call(s, "build_workspace", bad)
            assert r.is_error and field in r.text, (bad, r)
        assert sessions(srv) == before, "a refused document created something"


def pane_ids(srv) -> set[str]:
    return set(srv.tmux("list-panes", "-a", "-F", "#{pane_id}").splitlines())


@async_test(timeout=60)
async def test_a_missing_program_is_refused_before_anything_is_sent(tmux_server):
    """Issue 38 item 5: a program that cannot start made a window that was
    reported built while tmux had already closed it."""
    srv = tmux_server
    before, panes = sessions(srv), pane_ids(srv)
    async with mcp_session(srv, *MUTATING) as s:
        for program in ("/no/such/program", "no-such-program-tmcp"):
            doc = {"session": "q", "windows": [{"name": "ok", "panes": [{"argv": ["bash"]}]},
                                               {"name": "w", "panes": [{"argv": [program]}]}]}
            r = await call(s, "build_workspace", doc)
            assert r.is_error and "windows/1/panes/0" in r.text and "argv/0" in r.text, r
            assert "Nothing was sent to tmux" in r.text, r
    assert sessions(srv) == before and pane_ids(srv) == panes


@async_test(timeout=60)
async def test_a_pane_whose_program_exits_at_once_is_reported_as_it_is(tmux_server):
    """A pane that ends at once is gone (tmux closed it) or, where
    remain-on-exit keeps it, dead with its exit status; the result names
    only what exists, and a build whose every pane ended leaves nothing."""
    srv = tmux_server
    async with mcp_session(srv, *MUTATING) as s:
        for run in range(3):
            doc = {"session": f"g{run}", "windows": [
                {"name": "ok", "panes": [{"argv": ["sleep", "100"]}]},
                {"name": "w", "panes": [{"argv": ["sh", "-c", "exit 3"]}]}]}
            out = await call_ok(s, "build_workspace", doc)
            ok, w = out["windows"]
            existing = set(srv.tmux("list-windows", "-t", f"g{run}", "-F", "#{window_id}").splitlines())
            assert ok["window"]["id"] in existing and w["id"] not in existing, (out, existing)
            assert "window" not in w and w["panes"] == [] and len(w["gonePanes"]) == 1, w
            for p in ok["panes"]:
                assert p["id"] in pane_ids(srv)
        # remain-on-exit keeps the pane: dead, with the program's status.
        srv.tmux("set-option", "-g", "remain-on-exit", "on")
        out = await call_ok(s, "build_workspace", {"session": "kept", "windows": [
            {"panes": [{"argv": ["sleep", "100"]}, {"argv": ["sh", "-c", "exit 3"]}]}]})
        dead = out["windows"][0]["panes"][1]
        assert (dead["dead"], dead["deadStatus"]) == (True, 3), dead
        srv.tmux("set-option", "-g", "remain-on-exit", "off")
        before, panes = sessions(srv), pane_ids(srv)
        r = await call(s, "build_workspace", {"session": "none", "windows": [
            {"panes": [{"argv": ["sh", "-c", "exit 1"]}]}]})
        assert r.is_error and "exited at once" in r.text, r
        assert sessions(srv) == before and pane_ids(srv) == panes


@async_test(timeout=60)
async def test_a_failed_split_leaves_no_pane_behind(tmux_server):
    srv = tmux_server
    before, panes = sessions(srv), pane_ids(srv)
    async with mcp_session(srv, *MUTATING) as s:
        doc = {"session": "split", "width": 20, "height": 6, "windows": [
            {"panes": [{"argv": ["sleep", "100"]}]},
            {"panes": [{"argv": ["sleep", "100"]}] * 12}]}
        r = await call(s, "build_workspace", doc)
        assert r.is_error and "killed" in r.text, r
    assert sessions(srv) == before and pane_ids(srv) == panes


@async_test(timeout=60)
async def test_a_main_layout_leaves_the_other_panes_room_in_a_small_window(tmux_server):
    srv = tmux_server
    async with mcp_session(srv, *MUTATING) as s:
        out = await call_ok(s, "build_workspace", {"session": "mv", "width": 80, "height": 24, "windows": [
            {"layout": "main-vertical", "panes": [{"argv": ["sleep", "100"]}] * 3},
            {"layout": "main-horizontal", "panes": [{"argv": ["sleep", "100"]}] * 3}]})
    vert, horiz = out["windows"]
    widths = [int(srv.tmux("display-message", "-p", "-t", p["id"], "#{pane_width}")) for p in vert["panes"]]
    assert widths[0] in (39, 40) and min(widths[1:]) >= 20, widths
    heights = [int(srv.tmux("display-message", "-p", "-t", p["id"], "#{pane_height}")) for p in horiz["panes"]]
    assert heights[0] in (11, 12) and min(heights[1:]) >= 6, heights
