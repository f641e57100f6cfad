"""Issue 10 item 5: an agent on one machine, tmux on another, SSH between them.

The "remote" side is a tmux server of this test that loads the plugin as TPM
does (and so runs its broker); the "near" side is the official MCP Python SDK
whose server command is `ssh -p PORT -i KEY 127.0.0.1 tmux-mcp attach -S SOCK`
against an sshd of this test on 127.0.0.1 (a free port, host and client keys
made for the test, nothing of the system's ssh configuration used). Every
process started here is stopped by its pid.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from harness import BIN, REPO, TEST_TMPDIR, async_test, call_ok, clean_env, require_binary

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                   check=True, timeout=30, stdin=subprocess.DEVNULL, capture_output=True)


class Sshd:
    """`sshd -D` on 127.0.0.1:PORT with its own host key and one authorized key."""

    def __init__(self) -> None:
        assert os.access(SSHD, os.X_OK), f"{SSHD} is missing: install openssh-server (.ci/run does)"
        self.dir = Path(tempfile.mkdtemp(prefix="tmcp-ssh-", dir=TEST_TMPDIR))
        os.chmod(self.dir, 0o700)
        self.host_key = self.dir / "host_key"
        self.key = self.dir / "client_key"
        _keygen(self.host_key)
        _keygen(self.key)
        (self.dir / "authorized_keys").write_text((self.dir / "client_key.pub").read_text())
        os.chmod(self.dir / "authorized_keys", 0o600)
        self.port = _free_port()
        config = self.dir / "sshd_config"
        config.write_text("\n".join([
            f"ListenAddress 127.0.0.1:{self.port}",
            f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}",
            f"PidFile {self.dir / 'sshd.pid'}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password",
            "UsePAM no",
            # The test's temp dirs live under /tmp (mode 1777), which
            # StrictModes would refuse for the authorized_keys path.
            "StrictModes no",
            "LogLevel ERROR",
            # Debian's bash sources ~/.bashrc for a command run by sshd when
            # SHLVL says it is the first shell. This machine's rc can block
            # (a pyenv rehash lock), and what a user's rc does is not what
            # this test is about: start the remote shell as a nested one.
            "SetEnv SHLVL=1",
            "",
        ]))
        if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
            # sshd's privilege-separation directory, which the package's
            # service creates when it starts; this machine runs no service.
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.log = self.dir / "sshd.log"
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "w"),
                                     env=clean_env())
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"sshd did not listen on {self.port}: {self.log.read_text()}")
                time.sleep(0.05)

    def command(self, *remote: str) -> tuple[str, list[str]]:
        """The ssh command line an MCP client config would carry."""
        return "ssh", [
            "-p", str(self.port), "-i", str(self.key),
            "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=no", "-o", f"UserKnownHostsFile={self.dir / 'known_hosts'}",
            "-F", "/dev/null",
            "127.0.0.1", *remote,
        ]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def sshd():
    server = Sshd()
    try:
        yield server
    finally:
        server.stop()


def _wait_state(tmux_server, want: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while tmux_server.tmux("show-options", "-gqv", "@mcp-state") != want:
        assert time.monotonic() < deadline, (
            f"@mcp-state never became {want!r}: "
            f"{tmux_server.tmux('show-options', '-gqv', '@mcp-state')!r}")
        time.sleep(0.05)


@async_test(timeout=60)
async def test_list_and_capture_over_ssh(tmux_server, sshd):
    require_binary()
    # The remote side: the plugin loaded as TPM does, with this build's binaries.
    tmux_server.tmux("set-option", "-g", "@mcp-bin-dir", str(BIN.parent))
    tmux_server.tmux("run-shell", str(REPO / "tmux-mcp.tmux"))
    _wait_state(tmux_server, "ready")
    broker = tmux_server.status()["broker_pid"]
    marker = "over-ssh-4711"
    pane = tmux_server.tmux("new-window", "-d", "-P", "-F", "#{pane_id}",
                            f"printf '%s\\n' {marker}; exec sleep 1000")

    command, args = sshd.command(str(BIN), "attach", "-S", tmux_server.sock)
    params = StdioServerParameters(command=command, args=args, env=clean_env())
    log = tmux_server.new_log("ssh-attach")
    with open(log, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=20) as session:
                await session.initialize()
                caps = await call_ok(session, "tmux_capabilities")
                assert caps["data"]["server_identity"]["pid"] == tmux_server.pid, caps
                # Reached over ssh, outside any pane: the whole server.
                assert caps["data"]["broker"]["scope"] == "server", caps
                assert caps["data"]["broker"]["pid"] == broker, "not the plugin's broker"
                listed = await call_ok(session, "list_panes")
                assert pane in [p["id"] for p in listed["panes"]], listed
                deadline = time.monotonic() + 10
                while True:
                    cap = await call_ok(session, "capture_pane", {"paneId": pane})
                    assert cap["paneId"] == pane, cap
                    if marker in cap["text"].splitlines():
                        break
                    assert time.monotonic() < deadline, f"{marker} never captured: {cap}"
                    await anyio.sleep(0.05)
    assert tmux_server.status()["sessions_served"] >= 1
