"""Fixtures: a real tmux server per test on a private socket (-f /dev/null),
killed exactly (by its socket) at teardown, with a check that its broker exits.

The session runs in a private directory (leftovers.py): made here unless
scripts/test made one (`TMUX_MCP_TEST_RUN_DIR`), with TMUX_MCP_TEST_TMPDIR
and TMPDIR in it; at the end the session fails if the tests left a process or
a file of theirs (there, in a broker runtime directory, or recorded outside)."""

from __future__ import annotations

import os
import shutil
import tempfile

if not os.environ.get("TMUX_MCP_TEST_RUN_DIR"):
    # Before harness is imported: it reads TMUX_MCP_TEST_TMPDIR once.
    _RUN = tempfile.mkdtemp(prefix="tmcp-run.", dir=os.environ.get("TMUX_MCP_TEST_TMPDIR") or "/tmp")
    os.makedirs(os.path.join(_RUN, "tmp"))
    os.environ.update(TMUX_MCP_TEST_RUN_DIR=_RUN, TMUX_MCP_TEST_TMPDIR=_RUN,
                      TMPDIR=os.path.join(_RUN, "tmp"))
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    _MADE_HERE = True
else:
    _MADE_HERE = False

import pytest  # noqa: E402

import leftovers  # noqa: E402
from harness import TmuxServer  # noqa: E402


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


def pytest_sessionfinish(session, exitstatus):
    """The suite leaves nothing behind: anything of this run still there
    fails the session (and is then ended and removed)."""
    run = os.environ["TMUX_MCP_TEST_RUN_DIR"]
    problems = leftovers.check(run)
    if problems:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        text = "the tests left behind (now ended and removed):\n  " + "\n  ".join(problems)
        if reporter is not None:
            reporter.write_line(text, red=True)
        else:
            print(text)
        leftovers.clean(run)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if _MADE_HERE:
        shutil.rmtree(run, ignore_errors=True)
