"""Issue 17 item 3: the npm launcher (plugin/npm/tmux-mcp-plugin) hands its stdio
to the platform package's binary (inherited, not piped through node), forwards
SIGINT/SIGTERM/SIGHUP, and ends with the binary's exit status or its signal.

The packages are laid out as npm installs them (node_modules/tmux-mcp-plugin
beside node_modules/tmux-mcp-plugin-linux-x64), with a shell stand-in as the
binary, so this runs in a second without building or packing anything.
"""

from __future__ import annotations

import os
import platform
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from harness import REPO, TEST_TMPDIR

NODE = shutil.which("node")
ARCH = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())

STAND_IN = """#!/bin/sh
case "$1" in
    exit) exit "$2" ;;
    kill) kill -"$2" $$ ;;
    fds) readlink /proc/$$/fd/0; readlink /proc/$$/fd/1 >&2 ;;
    wait) trap 'echo "got $2" > "$3"; exit 7' "$2"; echo ready > "$3.ready"; while :; do sleep 0.05; done ;;
esac
"""


@pytest.fixture
def launcher():
    if NODE is None:
        message = "node is not on PATH: this test runs the npm launcher with it (Debian/Ubuntu: apt-get install nodejs)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    root = Path(tempfile.mkdtemp(prefix="tmcp-npm-", dir=TEST_TMPDIR))
    modules = root / "node_modules"
    shutil.copytree(REPO / "plugin" / "npm" / "tmux-mcp-plugin", modules / "tmux-mcp-plugin")
    platform_dir = modules / f"tmux-mcp-plugin-linux-{ARCH}"
    (platform_dir / "bin").mkdir(parents=True)
    (platform_dir / "package.json").write_text(f'{{"name": "tmux-mcp-plugin-linux-{ARCH}", "version": "0.0.0"}}\n')
    for name in ("tmux-mcp", "tmux-mcp-broker"):
        exe = platform_dir / "bin" / name
        exe.write_text(STAND_IN)
        exe.chmod(0o755)
    try:
        yield root, modules / "tmux-mcp-plugin" / "bin" / "tmux-mcp.js"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(script: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([NODE, str(script), *args], capture_output=True, text=True, timeout=30, **kw)


def test_the_exit_status_is_passed_on(launcher):
    _, script = launcher
    assert run(script, "exit", "0").returncode == 0
    assert run(script, "exit", "42").returncode == 42


def test_a_signal_that_killed_the_binary_kills_the_launcher(launcher):
    _, script = launcher
    assert run(script, "kill", "TERM").returncode == -signal.SIGTERM
    assert run(script, "kill", "HUP").returncode == -signal.SIGHUP


def test_stdio_is_inherited_not_piped_through_node(launcher):
    root, script = launcher
    stdin = root / "stdin"
    stdin.write_text("")
    with open(stdin) as f:
        proc = subprocess.run([NODE, str(script), "fds"], stdin=f, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc
    assert proc.stdout.strip() == str(stdin), f"the binary's stdin is {proc.stdout.strip()!r}, not the file given to node"
    # Its stdout here is the test's pipe itself (node's fd 1), not a pipe of node's.
    assert proc.stderr.strip().startswith("pipe:"), proc.stderr


@pytest.mark.parametrize("sig", ["INT", "TERM", "HUP"])
def test_signals_are_forwarded(launcher, sig):
    root, script = launcher
    note = root / f"note-{sig}"
    proc = subprocess.Popen([NODE, str(script), "wait", sig, str(note)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 15
        while not Path(f"{note}.ready").exists():
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() is not None else "never ready"
            time.sleep(0.05)
        proc.send_signal(getattr(signal, f"SIG{sig}"))
        assert proc.wait(timeout=10) == 7, "the launcher did not end with the binary's status"
        assert note.read_text().strip() == f"got {sig}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_missing_platform_package_is_explained(launcher):
    root, script = launcher
    shutil.rmtree(root / "node_modules" / f"tmux-mcp-plugin-linux-{ARCH}")
    proc = run(script, "--version")
    assert proc.returncode == 1
    assert f"tmux-mcp-plugin-linux-{ARCH} is not installed" in proc.stderr, proc.stderr
