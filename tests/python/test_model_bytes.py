"""What a model is given of the listings (issue 49): Claude Code and Codex hand
their model the compact JSON of a result's structuredContent, never its text,
so on issue 49's 12-pane workspace (workspace12.py) those bytes stay within the
issue's targets, and the lean records still say what the text says."""

from __future__ import annotations

import json

import harness
import workspace12
from harness import async_test, call, call_ok, mcp_session


@async_test(timeout=60)
async def test_the_listings_a_model_reads_stay_within_issue_49s_targets(tmux_server):
    ids = workspace12.build(tmux_server)
    async with mcp_session(tmux_server) as s:
        rows = {label: (cc, gem, r) for label, cc, gem, r in await workspace12.measure(tmux_server, s)}
        over = {label: (rows[label][0], target) for label, target in workspace12.TARGETS.items()
                if label != "total" and rows[label][0] > target}
        assert not over, f"bytes a Claude Code or Codex model is given, over target: {over}"
        total = sum(cc for cc, _, _ in rows.values())
        assert total <= workspace12.TARGETS["total"], f"the {len(rows)} calls give {total} B"

        # The lean listing says what its text says: every pane, where it is,
        # its size, command and directory, and which pane is active.
        panes = rows["list_panes"][2].structured
        assert [p["id"] for p in panes["panes"]] == ids and panes["total"] == 12, panes
        for (sess, w, p), pane in zip(workspace12.PLACES, panes["panes"]):
            tmux = tmux_server.tmux("display-message", "-p", "-t", pane["id"],
                                    "#{pane_width}x#{pane_height} #{pane_active} #{pane_current_command}")
            size, active, command = tmux.split(" ", 2)
            assert pane["at"] == [f"{sess}:{w}.{p}"] and pane["size"] == size, pane
            assert pane["command"] == command and pane["cwd"] == workspace12.CWD, pane
            assert pane.get("active", False) == (active == "1"), pane
            # Nothing at its default: no state while running, no false flags.
            assert set(pane) <= {"id", "at", "size", "command", "cwd", "active"}, pane
            assert pane.get("active") is not False, pane
        # The generation once per result; no caller pane outside tmux, no
        # scope at its default (server).
        assert harness.HEX32.match(panes["generation"]) and "callerPaneId" not in panes and "scope" not in panes
        assert "ref" not in json.dumps(panes["panes"]), "no record restates its id in a reference"
        assert len(rows["list_panes"][2].text.splitlines()) == 13, "the text keeps a line per pane"

        # detail: full still gives the exact records.
        full = await call_ok(s, "list_panes", {"detail": "full", "limit": 1})
        rec = full["panes"][0]
        assert rec["ref"] == {"kind": "pane", "id": ids[0], "generation": panes["generation"]}, rec
        assert harness.HEX32.match(rec["processGeneration"]) and rec["placements"][0]["sessionName"] == "api", rec

        sessions = rows["list_sessions"][2].structured
        assert [(x["name"], x["windowCount"], x["paneCount"]) for x in sessions["sessions"]] == \
            [(n, 2, 4) for n in workspace12.SESSIONS], sessions
        assert sessions["paneCount"] == 12 and "busyCount" not in sessions, sessions

        windows = rows["list_windows"][2].structured["windows"]
        assert [w["at"] for w in windows] == [[f"{n}:{i}"] for n in workspace12.SESSIONS for i in (0, 1)], windows
        assert [w.get("activeIn") for w in windows] == [[n] if i == 0 else None
                                                        for n in workspace12.SESSIONS for i in (0, 1)], windows

        # capture_since does not restate the pane the call named; its cursor
        # is what the next call needs.
        since = rows["capture_since"][2].structured
        assert "paneId" not in since and since["seeded"] is True and len(since["cursor"]) == 22, since
        assert since["lines"][-2:] == ["api:0.0 step 5 ok", since["lines"][-1]], since

        info = rows["get_pane_info"][2].structured["pane"]
        assert info["id"] == ids[0] and info["windowId"] == windows[0]["id"] and info["pid"] > 0, info
        assert "isCallerPane" not in info, info


@async_test(timeout=30)
async def test_a_dead_pane_says_so_in_its_lean_record(tmux_server):
    """What is not at its default appears: a dead pane is dead, with its status."""
    tmux_server.tmux("set-option", "-g", "remain-on-exit", "on")
    pane = tmux_server.tmux("split-window", "-d", "-P", "-F", "#{pane_id}", "exit 3")
    await harness.wait_until(lambda: tmux_server.tmux("display-message", "-p", "-t", pane, "#{pane_dead}") == "1")
    # tmux does not always record the exit status (tests/e2e/scale.rs tries
    # five panes for one): deadStatus is what tmux says, absent when it says
    # nothing (read once the pane is dead, when tmux has settled it).
    status = tmux_server.tmux("display-message", "-p", "-t", pane, "#{pane_dead_status}")
    assert status in ("", "3"), status
    async with mcp_session(tmux_server) as s:
        listed = {p["id"]: p for p in (await call_ok(s, "list_panes"))["panes"]}
        assert listed[pane]["dead"] is True and listed[pane].get("deadStatus") == (int(status) if status else None), \
            (listed[pane], status)
        assert listed[pane]["state"] in ("dead", "exited"), listed[pane]
        r = await call(s, "list_sessions")
        assert r.structured["deadCount"] == 1 and r.structured["sessions"][0]["deadPanes"] == [pane], r
