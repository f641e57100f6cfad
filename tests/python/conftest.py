"""Fixtures: a real tmux server per test on a private socket (-f /dev/null),
killed exactly (by its socket) at teardown, with a check that its broker exits."""

from __future__ import annotations

import shutil

import pytest

from harness import TmuxServer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tmux_server():
    server = TmuxServer()
    try:
        yield server
    finally:
        problems = server.shutdown()
        logs = server.dump_logs()
        if logs:
            # Shown by pytest under "Captured stdout teardown" when the test fails.
            print(f"stderr of tmux-mcp processes for {server.sock}:\n{logs}")
        shutil.rmtree(server.dir, ignore_errors=True)
    if problems:
        pytest.fail("teardown: " + "; ".join(problems), pytrace=False)

