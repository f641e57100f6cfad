"""Codex CLI's start screen on small panes reads `waiting_for_input`, not
`working` (issue 38 item 6): at 80x24 and 60x20 Codex redraws its start
screen for about 1.5 s, and a rule that takes writes under the shortcuts hint
for an answer streaming in read that as working. The real, pinned Codex TUI
against the fake model (as in test_agents_tui.py), read through list_agents
from the moment its composer shows until 4 s later."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import anyio
import pytest

from agents import codex as codex_cli
from agents import tui
from agents.fake_model import FakeModelServer, interactive_script
from harness import async_test, call_ok, mcp_session
from test_agents_tui import WIRES, end_left_in


@pytest.mark.parametrize("size", [(80, 24), (60, 20)])
@async_test(timeout=300)
async def test_codex_start_screen_is_waiting_for_input_while_it_redraws(size):
    width, height = size
    work = Path(os.environ.get("TMUX_MCP_TEST_TMPDIR") or "/tmp")
    daemon_dir_existed = codex_cli.DAEMON_DIR.exists()
    with FakeModelServer(WIRES["codex"](), interactive_script(slow_seconds=8.0, slow_wait=2.0)) as fake:
        home = Path(tempfile.mkdtemp(prefix="agstart-codex-", dir=work))
        launch = tui.LAUNCHERS["codex"](fake, home / "home")
        srv = tui.TuiServer(dir=home / "tmux", width=width, height=height)
        srv.dir.mkdir()
        try:
            pane = srv.start(launch, via_shell=True)
            async with mcp_session(srv.sock) as s:
                seen: list[tuple[str, str]] = []
                first = None
                deadline = time.monotonic() + 90
                while time.monotonic() < deadline:
                    out = await call_ok(s, "list_agents")
                    found = [a for a in out["agents"] if a["paneId"] == pane]
                    if found and found[0]["state"] != "unknown":
                        first = first or time.monotonic()
                        seen.append((found[0]["state"], found[0].get("rule", "")))
                        if time.monotonic() - first > 4:
                            break
                    await anyio.sleep(0.05)
                assert seen, f"Codex never showed a state:\n{srv.screen()}"
                assert all(state == "waiting_for_input" for state, _ in seen), (seen, srv.screen())
        finally:
            srv.close()
            end_left_in(home)
            codex_cli.remove_daemon_sockets(home, daemon_dir_existed)
            shutil.rmtree(home, ignore_errors=True)
