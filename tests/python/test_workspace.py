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
