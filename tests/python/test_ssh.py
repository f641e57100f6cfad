"""Issue 10 item 5: an agent on one machine, tmux on another, SSH between them.

The "remote" side is a tmux server of this test that loads the plugin as TPM
does (and so runs its broker); the "near" side is the official MCP Python SDK
whose server command is `ssh -p PORT -i KEY 127.0.0.1 tmux-mcp attach -S SOCK`
(the system's OpenSSH client) against an SSH server of this test on 127.0.0.1:
asyncssh (a maintained SSHv2 implementation, pinned in requirements.txt), run
by this file as its own process, with a host key and a client key made for the
test and nothing of the system's ssh configuration used. Like sshd, it runs the
requested command with `sh -c`, wires the command's stdin, stdout and stderr
to the SSH channel, and when the command ends sends its exit status and
closes that channel only, so one connection (an OpenSSH ControlMaster) serves
many commands. So the test needs no sshd, only the `ssh` client
(Debian/Ubuntu: openssh-client). Every process started here is stopped by its
pid.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SSH = shutil.which("ssh")
CLIENT_MISSING = ("the OpenSSH client `ssh` is not on PATH: this test runs it against an SSH server of its own; "
                  "install it (Debian/Ubuntu: apt-get install openssh-client)")


def serve(directory: str) -> None:
    """The SSH server process: `python test_ssh.py serve DIR`. Makes a host key
    and a client key in DIR, listens on a free port of 127.0.0.1, prints the
    port, and serves until SIGTERM. Only the client key is accepted."""
    import asyncio
    import signal

    import asyncssh

    d = Path(directory)

    async def session(process: asyncssh.SSHServerProcess) -> None:
        # One session is one channel of the connection: whatever happens
        # here ends the channel only. asyncssh ends the whole connection
        # when this coroutine raises, and with it every other session an
        # OpenSSH ControlMaster multiplexes over it.
        try:
            await run(process)
        except Exception as e:  # the channel's client went away, or sh could not start
            print(f"session {process.command!r}: {e!r}", file=sys.stderr, flush=True)
            process.close()

    async def run(process: asyncssh.SSHServerProcess) -> None:
        command = process.command
        if not command:
            process.stderr.write("this test server runs commands only\n")
            process.exit(1)
            return
        # As sshd does: the user's shell runs the command, in the home directory.
        child = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", command, cwd=os.path.expanduser("~"),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        # No EOF when one of the two pipes ends (asyncssh's default): stderr
        # may still have output, and an OpenSSH client closes the channel
        # once it has sent and received EOF, before the exit status could
        # reach it (`ssh` then exits 255).
        await process.redirect(stdin=child.stdin, stdout=child.stdout, stderr=child.stderr,
                               send_eof=False)
        status = await child.wait()
        # The command's last output may still be on its way from the pipes to
        # the channel: each stream's drain returns once its redirect has
        # forwarded everything. Then, as sshd does, EOF, the exit status and
        # the channel's close, in one go; the connection stays open.
        await process.stdout.drain()
        await process.stderr.drain()
        process.channel.write_eof()
        process.exit(status if status >= 0 else 128 - status)

    async def main() -> None:
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        client_key = asyncssh.generate_private_key("ssh-ed25519")
        client_key.write_private_key(str(d / "client_key"))
        os.chmod(d / "client_key", 0o600)
        server = await asyncssh.listen(
            "127.0.0.1", 0, server_host_keys=[host_key],
            authorized_client_keys=asyncssh.import_authorized_keys(
                client_key.export_public_key().decode()),
            process_factory=session, encoding=None,
            password_auth=False, kbdint_auth=False, allow_scp=False)
        port = server.sockets[0].getsockname()[1]
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print(port, flush=True)
        await stop.wait()
        server.close()
        await server.wait_closed()

    asyncio.run(main())


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    serve(sys.argv[2])
    sys.exit(0)

import anyio  # noqa: E402
import pytest  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from harness import BIN, REPO, TEST_TMPDIR, async_test, call_ok, clean_env, require_binary  # noqa: E402


class SshServer:
    """This file's asyncssh server on 127.0.0.1:PORT with one authorized key."""

    def __init__(self) -> None:
        if SSH is None:
            if os.environ.get("CI"):
                pytest.fail(CLIENT_MISSING)
            pytest.skip(CLIENT_MISSING)
        self.dir = Path(tempfile.mkdtemp(prefix="tmcp-ssh-", dir=TEST_TMPDIR))
        os.chmod(self.dir, 0o700)
        self.key = self.dir / "client_key"
        self.log = self.dir / "server.log"
        self.proc = subprocess.Popen([sys.executable, __file__, "serve", str(self.dir)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=open(self.log, "w"), env=clean_env(), text=True)
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise AssertionError(f"the SSH server did not start: {line!r} {self.log.read_text()}")
        self.port = int(line)

    def command(self, *remote: str) -> tuple[str, list[str]]:
        """The ssh command line an MCP client config would carry."""
        return SSH, [
            "-T", "-p", str(self.port), "-i", str(self.key),
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
    server = SshServer()
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


def test_a_control_master_outlives_its_commands(sshd):
    """The server ends a command's channel, with the command's output and exit
    status, and keeps the connection (as sshd does): an OpenSSH ControlMaster
    to it serves command after command. `scripts/bench --ssh` measures `ssh
    HOST true` over one; before, every command ended the whole connection
    (`ssh` printed "closed by remote host" and exited 255)."""
    control = sshd.dir / "control"
    mux = ["-o", "ControlMaster=auto", "-o", f"ControlPath={control}", "-o", "ControlPersist=60",
           "-o", "LogLevel=ERROR"]

    def ssh(*remote: str, control_command: str | None = None) -> subprocess.CompletedProcess:
        command, args = sshd.command(*remote)
        if control_command:
            args = ["-O", control_command, *args]
        return subprocess.run([command, *mux, *args], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=30)

    def master() -> str:
        check = ssh(control_command="check")
        assert check.returncode == 0, check
        return check.stderr

    try:
        first = ssh("echo out; echo err >&2; exit 3")
        assert (first.returncode, first.stdout, first.stderr) == (3, "out\n", "err\n"), first
        running = master()
        for status in range(12):
            r = ssh(f"printf {status}; exit {status}")
            assert (r.returncode, r.stdout) == (status, str(status)), r
        # Output well past a channel window, all of it before the status.
        r = ssh("seq 1 100000")
        assert r.returncode == 0 and r.stdout.splitlines() == [str(i) for i in range(1, 100001)], r.returncode
        killed = ssh("kill -9 $$")
        assert killed.returncode == 128 + 9, killed
        assert master() == running, "the same master throughout"
    finally:
        ssh(control_command="exit")
    deadline = time.monotonic() + 10
    while control.exists():  # the master removes it as it exits
        assert time.monotonic() < deadline, "the master never went"
        time.sleep(0.05)
