"""The 12-pane workspace of issue 49: what a model is given for each default
read tool is measured on it (tests/bench/model_bytes.py, `scripts/bench
--model-bytes`) and held within its targets (test_model_bytes.py).

Three sessions (`api`, `web`, `db`) x two windows x two bash panes, 80x24
windows, every pane in `/tmp` (a fixed directory, so the figures do not move
with the test's private directory: a longer working directory costs its extra
length once per pane record), each pane having printed five lines. The
harness's own `main` session is gone; the agent runs outside tmux (no caller
pane).
"""

from __future__ import annotations

import json
from typing import Any

import harness

SESSIONS = ("api", "web", "db")
CWD = "/tmp"
# What the table's sessions hold, in creation order: (session, window, pane).
PLACES = [(s, w, p) for s in SESSIONS for w in (0, 1) for p in (0, 1)]
# The one pane that also printed an error line (what search_panes looks for).
ERROR_AT = ("web", 1, 0)


def build(srv: harness.TmuxServer) -> list[str]:
    """Makes the workspace on `srv`; returns the 12 pane ids in PLACES order,
    once every pane shows its last line and the prompt after it."""
    for s in SESSIONS:
        srv.tmux("new-session", "-d", "-s", s, "-x", "80", "-y", "24", "-c", CWD)
        srv.tmux("split-window", "-d", "-t", f"{s}:0", "-c", CWD)
        srv.tmux("new-window", "-d", "-t", f"{s}:1", "-c", CWD)
        srv.tmux("split-window", "-d", "-t", f"{s}:1", "-c", CWD)
    srv.tmux("kill-session", "-t", "main")
    ids = []
    for s, w, p in PLACES:
        pane = srv.tmux("display-message", "-p", "-t", f"{s}:{w}.{p}", "#{pane_id}")
        ids.append(pane)
        line = f"for i in 1 2 3 4 5; do echo \"{s}:{w}.{p} step $i ok\"; done"
        if (s, w, p) == ERROR_AT:
            line += "; echo 'ERROR: disk full'"
        srv.tmux("send-keys", "-t", pane, "-l", line)
        srv.tmux("send-keys", "-t", pane, "Enter")
    for (s, w, p), pane in zip(PLACES, ids):
        last = "ERROR: disk full" if (s, w, p) == ERROR_AT else f"{s}:{w}.{p} step 5 ok"
        # The output, then the next prompt under it.
        harness_wait(srv, pane, lambda t, last=last: last in t and t.rstrip().splitlines()[-1] != last)
    return ids


def harness_wait(srv: harness.TmuxServer, pane: str, ok) -> None:
    import time
    deadline = time.monotonic() + 15
    while not ok(srv.tmux("capture-pane", "-p", "-t", pane)):
        assert time.monotonic() < deadline, f"pane {pane} never showed its output"
        time.sleep(0.02)


def model_bytes(result: harness.ToolResult) -> tuple[int, int]:
    """What a model is given of one result: (Claude Code and Codex, Gemini).
    Claude Code and Codex hand it the compact JSON of `structuredContent` when
    there is one (else the text); Gemini hands it the text."""
    text = len(result.text.encode())
    if result.structured is None:
        return text, text
    sc = json.dumps(result.structured, separators=(",", ":"), ensure_ascii=False)
    return len(sc.encode()), text


# The calls measured, in order: (label, tool, arguments given the first pane's
# id). Before wait_for_text, the person types a line it then finds.
MARK = "model-bytes-mark"


def calls(first: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("list_sessions", "list_sessions", {}),
        ("list_windows", "list_windows", {}),
        ("list_panes", "list_panes", {}),
        ("get_pane_info", "get_pane_info", {"paneId": first}),
        ("capture_pane", "capture_pane", {"paneId": first}),
        ("capture_since", "capture_since", {"paneId": first}),
        ("search_panes", "search_panes", {"pattern": "ERROR"}),
        ("snapshot_pane", "snapshot_pane", {"paneId": first}),
        ("wait_for_text", "wait_for_text", {"paneId": first, "patterns": [MARK], "timeoutMs": 5000}),
        ("get_server_info", "get_server_info", {}),
    ]


# Issue 49's targets (bytes a Claude Code or Codex model is given).
TARGETS = {"list_panes": 1200, "list_windows": 600, "list_sessions": 400, "get_pane_info": 300,
           "total": 5000}


# What the real agent CLIs give their model on this workspace (the agent tests
# test_agents_claude.py, test_agents_codex.py, test_agents_gemini.py, issue 49
# item 3): list_panes as above; capture_pane of the first pane, a published
# contract whose shape does not change, 349 B in Claude Code and 383 B in
# Codex (its own 'Wall time' line first) when these targets were set, held
# within 400 so that anything more it starts to carry fails; the declarations
# of every default tool the CLI sends its model.
AGENT_TARGETS = {"list_panes": TARGETS["list_panes"], "capture_pane": 400, "declarations": 8192}


async def measure(srv: harness.TmuxServer, session) -> list[tuple[str, int, int, harness.ToolResult]]:
    """Every call of `calls` on the workspace (built already on `srv`) through
    `session`: (label, Claude Code/Codex bytes, Gemini bytes, result)."""
    panes = (await harness.call_ok(session, "list_panes", {"detail": "brief"}))["panes"]
    first = sorted(panes, key=lambda p: int(p["id"][1:]))[0]["id"]
    out = []
    for label, tool, args in calls(first):
        if tool == "wait_for_text":
            srv.tmux("send-keys", "-t", first, "-l", f"echo {MARK}")
            srv.tmux("send-keys", "-t", first, "Enter")
        r = await harness.call(session, tool, args)
        assert not r.is_error, f"{tool}: {r!r}"
        cc, gem = model_bytes(r)
        out.append((label, cc, gem, r))
    return out
