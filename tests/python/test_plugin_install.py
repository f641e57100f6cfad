"""Issue 17 item 5: the plugin script with packaged binaries.

Each test copies tmux-mcp.tmux into a directory of its own (so this checkout's
target/ is not its own build) and loads it with `run-shell`, as TPM does, into
a private tmux server started with a HOME and a PATH of the test's: no cargo,
no tmux-mcp but what the test puts there. Stand-ins for uv and cargo record
how they were called. Every server is killed by its socket.

Issue 39 item 2: the script is POSIX sh. Each test runs twice: through its
shebang (#!/bin/sh, which is dash on Debian), and under posh (Debian's strict
POSIX shell), the script and its background jobs alike (TMUX_MCP_SH).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
import tomllib
from pathlib import Path

import pytest

from harness import BIN, REPO, TEST_TMPDIR, TMUX, clean_env, require_binary, require_program

BROKER = BIN.parent / "tmux-mcp-broker"
PACKAGE = "tmux-mcp-plugin"


def workspace_version() -> str:
    return tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]


def write_exe(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def link_binaries(into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    for name in ("tmux-mcp", "tmux-mcp-broker"):
        (into / name).symlink_to(BIN.parent / name)


class Staged:
    """A copy of the plugin, a HOME, a PATH directory and a tmux server using them."""

    def __init__(self, shell: str = "sh") -> None:
        require_binary()
        self.shell = shell
        self.dir = Path(tempfile.mkdtemp(prefix="tmcp-inst-", dir=TEST_TMPDIR))
        self.plugin = self.dir / "plugin"
        self.plugin.mkdir()
        shutil.copy(REPO / "tmux-mcp.tmux", self.plugin / "tmux-mcp.tmux")
        self.home = self.dir / "home"
        self.home.mkdir()
        self.bin = self.dir / "bin"
        self.bin.mkdir()
        self.calls = self.dir / "calls"
        self.sock = str(self.dir / "sock")
        # No cargo, no tmux-mcp: the test's bin, the tmux under test, the system's tools.
        path = f"{self.bin}:{Path(TMUX).resolve().parent}:/usr/bin:/bin"
        self.env = {**clean_env(), "HOME": str(self.home), "PATH": path, "TERM": "xterm"}
        if shell != "sh":
            # The background jobs run in it too (the server's environment).
            self.env["TMUX_MCP_SH"] = require_program(shell, "the plugin's script is loaded under it")
        for var in ("CARGO_HOME", "XDG_BIN_HOME", "UV_TOOL_BIN_DIR", "PIPX_BIN_DIR", "NPM_CONFIG_PREFIX"):
            self.env.pop(var, None)
        self.client: subprocess.Popen | None = None
        # The plugin runs the `tmux` on PATH: this one records its messages.
        self.shown = self.dir / "shown"
        write_exe(self.bin / "tmux", f'#!/bin/sh\n[ "$1" = display-message ] && printf "%s\\n" "$*" >> "{self.shown}"\n'
                                     f'exec {Path(TMUX).resolve()} "$@"\n')
        subprocess.run([TMUX, "-S", self.sock, "-f", "/dev/null", "new-session", "-d", "-s", "main"],
                       env=self.env, check=True, timeout=15, stdin=subprocess.DEVNULL, capture_output=True)

    def tmux(self, *args: str) -> str:
        proc = subprocess.run([TMUX, "-S", self.sock, *args], env=self.env, timeout=15,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True)
        assert proc.returncode == 0, f"tmux {args} failed: {proc.stderr}"
        return proc.stdout.rstrip("\n")

    def load(self) -> None:
        script = str(self.plugin / "tmux-mcp.tmux")
        if self.shell == "sh":
            self.tmux("run-shell", script)  # through its shebang, as TPM runs it
        else:
            self.tmux("run-shell", f"{self.env['TMUX_MCP_SH']} {script}")

    def option(self, name: str) -> str:
        return self.tmux("show-options", "-gqv", name)

    def wait_state(self, want: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while self.option("@mcp-state") != want:
            assert time.monotonic() < deadline, (
                f"@mcp-state never became {want!r}: state {self.option('@mcp-state')!r}, "
                f"status {self.option('@mcp-status')!r}")
            time.sleep(0.05)

    def stand_in(self, name: str, body: str = "") -> Path:
        """`bin/NAME`: records its arguments in calls, then runs body."""
        return write_exe(self.bin / name, f'#!/bin/sh\nprintf "%s\\n" "{name} $*" >> "{self.calls}"\n{body}\n')

    def recorded(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def attach_client(self) -> None:
        """A terminal client on a pseudo-terminal (util-linux script)."""
        self.client = subprocess.Popen(["script", "-qfc", f"{TMUX} -S {self.sock} attach -t main", "/dev/null"],
                                       env=self.env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)

    def messages(self, text: str) -> list[str]:
        """The messages with TEXT the plugin has shown (display-message)."""
        lines = self.shown.read_text().splitlines() if self.shown.exists() else []
        return [line for line in lines if text in line]

    def broker_pid(self) -> str:
        status = subprocess.run([str(BIN), "status", "-S", self.sock, "--json"], env=self.env,
                                capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
        assert status.returncode == 0, status.stderr
        return re.search(r'"broker_pid":\s*(\d+)', status.stdout).group(1)

    def broker_exe(self) -> str:
        return os.path.realpath(f"/proc/{self.broker_pid()}/exe")

    def broker_inode(self) -> int:
        """The inode of the file the broker runs (also once it was replaced)."""
        return os.stat(f"/proc/{self.broker_pid()}/exe").st_ino

    def close(self) -> None:
        subprocess.run([TMUX, "-S", self.sock, "kill-server"], env=self.env, timeout=15,
                       stdin=subprocess.DEVNULL, capture_output=True)
        if self.client is not None:
            try:
                self.client.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.client.kill()
                self.client.wait()
        # The plugin's jobs end with the server (SIGTERM); wait for them.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and self._jobs():
            time.sleep(0.05)
        left = self._jobs()
        shutil.rmtree(self.dir, ignore_errors=True)
        assert not left, f"processes left behind: {left}"

    def _jobs(self) -> list[str]:
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(self.dir) in cmd and pid != str(os.getpid()):
                out.append(f"{pid} {cmd}")
        return out


@pytest.fixture(params=["sh", "posh"])
def staged(request):
    s = Staged(request.param)
    try:
        yield s
    finally:
        s.close()


def test_the_script_expects_the_workspace_version():
    require_binary()
    script = subprocess.run([str(REPO / "tmux-mcp.tmux"), "version"], capture_output=True,
                            text=True, timeout=10, env=clean_env(), stdin=subprocess.DEVNULL)
    assert script.stdout.strip() == workspace_version(), script
    for binary in (BIN, BROKER):
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=10)
        assert out.stdout.split() == [binary.name, workspace_version()], out


def test_no_binary_and_no_cargo_is_missing_with_the_install_command_shown_once(staged):
    staged.stand_in("uv")  # uv is there, so its command is the one named; never run by default
    staged.load()
    staged.wait_state("missing")
    assert staged.option("@mcp-status") == f"mcp: missing, run: uv tool install {PACKAGE}"
    staged.load()  # a reload while the first message still waits for a client
    assert staged.option("@mcp-state") == "missing"
    time.sleep(2.5)  # more than one round of the announcer's 2 s wait
    assert staged.messages("no tmux-mcp binaries") == [], "a message was shown with no client attached"
    staged.attach_client()
    deadline = time.monotonic() + 10
    while not staged.messages("no tmux-mcp binaries"):
        assert time.monotonic() < deadline, "the message was never shown to the attached client"
        time.sleep(0.1)
    time.sleep(4.5)  # two more rounds of the announcer's wait: no second message
    shown = staged.messages("no tmux-mcp binaries")
    assert len(shown) == 1, shown
    assert f"uv tool install {PACKAGE}" in shown[0]
    assert staged.recorded() == [], "an install ran without @mcp-install"


def test_opt_in_install_runs_that_route_in_the_background_then_is_ready(staged):
    local_bin = staged.home / ".local" / "bin"
    # As uv does: the package's commands land in ~/.local/bin (not on tmux's PATH).
    staged.stand_in("uv", f"sleep 1\nmkdir -p {local_bin}\n"
                          f"ln -sf {BIN} {local_bin}/tmux-mcp\nln -sf {BROKER} {local_bin}/tmux-mcp-broker\n")
    staged.tmux("set-option", "-g", "@mcp-install", "uv")
    staged.load()
    staged.wait_state("installing", timeout=5)
    assert staged.option("@mcp-status") == "mcp: installing (uv)"
    staged.wait_state("ready")
    assert staged.option("@mcp-status") == "mcp: ready"
    assert staged.recorded() == [f"uv tool install {PACKAGE}=={workspace_version()}"]
    assert staged.broker_exe() == str(BROKER.resolve())
    staged.load()  # found now: no second install
    time.sleep(1)
    assert staged.recorded() == [f"uv tool install {PACKAGE}=={workspace_version()}"]


def test_a_failed_install_says_where_its_log_is(staged):
    staged.stand_in("pipx", "echo no network >&2; exit 3")
    staged.tmux("set-option", "-g", "@mcp-install", "pipx")
    staged.load()
    staged.wait_state("failed")
    assert staged.option("@mcp-status") == "mcp: install failed"
    log = (staged.plugin / "target" / "tmux-mcp-install.log").read_text()
    assert f"pipx install {PACKAGE}=={workspace_version()}" in log and "no network" in log, log


def test_a_matching_binary_in_a_tool_dir_wins_over_another_version_on_path_and_nothing_builds(staged):
    staged.stand_in("cargo")  # would build if the plugin thought it had to
    old = staged.dir / "old"
    write_exe(old / "tmux-mcp", f'#!/bin/sh\n[ "$1" = --version ] && {{ echo "tmux-mcp 0.0.9"; exit 0; }}\nexec {BIN} "$@"\n')
    # A file of its own, so the broker's /proc/PID/exe tells which one runs.
    shutil.copy(BROKER, old / "tmux-mcp-broker")
    staged.env["PATH"] = f"{old}:{staged.env['PATH']}"
    link_binaries(staged.home / ".cargo" / "bin")  # where `cargo install` puts them
    # A new server whose PATH has the old version first, on a socket of its
    # own: kill-server returns before that server has gone, and a new-session
    # on its socket at once could reach the exiting server (it failed so once).
    subprocess.run([TMUX, "-S", staged.sock, "kill-server"], env=staged.env, capture_output=True, timeout=15)
    staged.sock = str(staged.dir / "sock2")
    subprocess.run([TMUX, "-S", staged.sock, "-f", "/dev/null", "new-session", "-d", "-s", "main"],
                   env=staged.env, check=True, timeout=15, stdin=subprocess.DEVNULL, capture_output=True)
    staged.load()
    staged.wait_state("ready")
    assert staged.option("@mcp-status") == "mcp: ready"
    assert staged.broker_exe() == str(BROKER.resolve())
    assert staged.recorded() == [], "cargo ran although a matching binary is installed"


def test_only_another_version_is_used_and_said(staged):
    old = staged.bin
    write_exe(old / "tmux-mcp", f'#!/bin/sh\n[ "$1" = --version ] && {{ echo "tmux-mcp 0.0.9"; exit 0; }}\nexec {BIN} "$@"\n')
    (old / "tmux-mcp-broker").symlink_to(BROKER)
    staged.stand_in("cargo")
    staged.load()
    staged.wait_state("ready")
    assert staged.option("@mcp-status") == f"mcp: ready (tmux-mcp 0.0.9, plugin {workspace_version()})"
    assert staged.recorded() == [], "cargo ran although a binary is installed"


def test_missing_sets_nothing_when_an_after_set_option_hook_is_set(staged):
    ran = staged.dir / "hook-ran"
    staged.tmux("set-hook", "-g", "after-set-option", f"run-shell 'touch {ran}'")
    staged.load()
    time.sleep(2)
    assert staged.option("@mcp-state") == ""
    assert staged.option("@mcp-status") == ""
    assert not ran.exists(), "the user's after-set-option hook ran"


# Issue 38 item 9: the plugin's own build (target/release, as a plain
# `cargo build --release` leaves it) is used when it answers this script's
# version, stamped or not; a build of another version (a TPM update to a new
# release) serves while it is rebuilt, and `building` is never shown on a
# server whose broker serves.

def place(src: Path, dst: Path) -> None:
    """A new file at dst with src's content (a file of its own: the broker's
    /proc/PID/exe and inode tell which one runs)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.new")
    shutil.copy(src, tmp)
    os.replace(tmp, dst)  # a rename, as cargo's: a running broker keeps its file


def stage_checkout(staged: Staged) -> Path:
    """The staged plugin as a checkout: its Cargo.toml names the workspace
    version (what identifies a checkout without git) and scripts/build is
    this repository's, which runs the `cargo` on PATH."""
    (staged.plugin / "Cargo.toml").write_text(f'[workspace.package]\nversion = "{workspace_version()}"\n')
    (staged.plugin / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "build", staged.plugin / "scripts" / "build")
    return staged.plugin / "target" / "release"


def states_until(staged: Staged, want: str, timeout: float = 20) -> list[str]:
    """Every (@mcp-state, @mcp-status) seen, polled until @mcp-state is want."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        state = staged.option("@mcp-state")
        if not seen or seen[-1] != state:
            seen.append(state)
        if state == want:
            return seen
        assert time.monotonic() < deadline, f"@mcp-state never became {want!r}: seen {seen}"
        time.sleep(0.02)


def test_an_unstamped_build_of_this_version_is_used_and_nothing_builds(staged):
    release = stage_checkout(staged)
    # `cargo build --release` by hand: the binaries, no stamp.
    place(BIN, release / "tmux-mcp")
    place(BROKER, release / "tmux-mcp-broker")
    assert not (release / "tmux-mcp-build-stamp").exists()
    staged.stand_in("cargo")  # would rebuild if the plugin thought it had to
    staged.load()
    seen = states_until(staged, "ready")
    assert "building" not in seen, seen
    assert staged.option("@mcp-status") == "mcp: ready"
    assert staged.broker_exe() == str(release / "tmux-mcp-broker")
    staged.load()  # a reload: still nothing to build
    time.sleep(1)
    assert staged.option("@mcp-state") == "ready"
    assert staged.recorded() == [], "cargo ran although the plugin's own build is of its version"


def rebuilds_while_serving(staged: Staged, serve_for: float = 1.5) -> None:
    release = stage_checkout(staged)
    # The build before a TPM update: it answers the old version.
    write_exe(release / "tmux-mcp", f'#!/bin/sh\n[ "$1" = --version ] && {{ echo "tmux-mcp 0.0.9"; exit 0; }}\nexec {BIN} "$@"\n')
    place(BROKER, release / "tmux-mcp-broker")
    gate = staged.dir / "gate"
    # cargo: waits for the gate, then leaves binaries of this version (new files).
    staged.stand_in("cargo", f"while [ ! -e {gate} ]; do sleep 0.05; done\n"
                             f"cp {BIN} {release}/.n1\ncp {BROKER} {release}/.n2\n"
                             f"mv -f {release}/.n1 {release}/tmux-mcp\nmv -f {release}/.n2 {release}/tmux-mcp-broker\n")
    old = os.stat(release / "tmux-mcp-broker").st_ino
    staged.load()
    seen = states_until(staged, "ready")
    assert seen[-1] == "ready" and "building" not in seen, seen
    assert staged.option("@mcp-status") == f"mcp: ready (tmux-mcp 0.0.9, plugin {workspace_version()}; rebuilding)"
    assert staged.broker_inode() == old, "the broker does not run the build it had"
    # While the rebuild runs the broker serves, and the state says so.
    deadline = time.monotonic() + serve_for
    while time.monotonic() < deadline:
        assert staged.option("@mcp-state") == "ready"
        time.sleep(0.05)
    assert staged.recorded() == ["cargo build --release --bins"]
    gate.touch()
    deadline = time.monotonic() + 20
    while staged.option("@mcp-status") != "mcp: ready":
        assert staged.option("@mcp-state") == "ready", staged.option("@mcp-status")
        assert time.monotonic() < deadline, f"never handed over: {staged.option('@mcp-status')!r}"
        time.sleep(0.05)
    # The idle old broker was replaced by one of the new file.
    deadline = time.monotonic() + 10
    while staged.broker_inode() == old:
        assert time.monotonic() < deadline, "the broker still runs the old build"
        time.sleep(0.1)
    assert staged.broker_exe() == str(release / "tmux-mcp-broker")
    assert (release / "tmux-mcp-build-stamp").read_text().strip() == f"version {workspace_version()}"
    assert staged.recorded() == ["cargo build --release --bins"], "built more than once"
    # A reload keeps the broker that runs the binary found (it was started
    # within a second of the build: not taken for an older one).
    pid = staged.broker_pid()
    staged.tmux("set-option", "-g", "@mcp-state", "")
    staged.load()
    staged.wait_state("ready")
    assert staged.broker_pid() == pid, "a reload replaced the broker of the current binary"


def test_an_own_build_of_another_version_serves_while_it_is_rebuilt(staged):
    rebuilds_while_serving(staged)


def test_without_proc_the_rebuilt_broker_is_told_from_its_start_time(staged):
    """macOS has no /proc: which file a broker runs is told from its start
    time (`ps -o lstart`) against the file's mtime (`find -newer`), with 3 s
    of margin: the build ends more than that after the broker started."""
    staged.tmux("set-environment", "-g", "TMUX_MCP_PROC", str(staged.dir / "no-proc"))
    rebuilds_while_serving(staged, serve_for=4)


def test_an_own_build_of_another_version_and_no_cargo_is_used_and_said(staged):
    release = stage_checkout(staged)
    write_exe(release / "tmux-mcp", f'#!/bin/sh\n[ "$1" = --version ] && {{ echo "tmux-mcp 0.0.9"; exit 0; }}\nexec {BIN} "$@"\n')
    place(BROKER, release / "tmux-mcp-broker")
    staged.load()
    seen = states_until(staged, "ready")
    assert "missing" not in seen and "building" not in seen, seen
    assert staged.option("@mcp-status") == f"mcp: ready (tmux-mcp 0.0.9, plugin {workspace_version()})"
