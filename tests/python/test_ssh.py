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
        # when a task of it raises, and with it every other session an
        # OpenSSH ControlMaster multiplexes over it; so the bytes are copied
        # here (`relay`), not by asyncssh's redirect, whose copying task
        # raises into the connection when the client closes the channel
        # first.
        command = process.command
        if not command:
            process.stderr.write("this test server runs commands only\n")
            process.exit(1)
            return
        # As sshd does: the user's shell runs the command, in the home
        # directory, in a session of its own.
        child = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", command, cwd=os.path.expanduser("~"), start_new_session=True,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        status = None
        try:
            status = await relay(process, child)
        except Exception as e:  # the client closed the channel first
            print(f"session {command!r}: {e!r}", file=sys.stderr, flush=True)
            process.close()
        finally:
            if status is None:
                # Nothing reads the command's output any more, and this test
                # leaves no process behind: its stdin is closed (a relay
                # ends there), then what is left of its session is killed.
                try:
                    await asyncio.wait_for(asyncio.shield(child.wait()), 5)
                except asyncio.TimeoutError:
                    pass
                try:
                    os.killpg(child.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                await child.wait()
        if status is not None:
            # As sshd does, EOF, the exit status and the channel's close, in
            # one go (an OpenSSH client closes a channel once EOF went both
            # ways, so an EOF sent with the output's end would race the
            # status); the connection stays open.
            process.channel.write_eof()
            process.exit(status if status >= 0 else 128 - status)

    async def relay(process: asyncssh.SSHServerProcess, child: asyncio.subprocess.Process) -> int:
        """Copies the channel to the command's stdin and its stdout and
        stderr to the channel until the command has ended and its output is
        sent: its exit status. Raises if the channel closes first."""
        async def into() -> None:  # until the channel's EOF
            try:
                while data := await process.stdin.read(65536):
                    child.stdin.write(data)
                    await child.stdin.drain()
            except Exception:  # the channel or the command ended first
                pass
            finally:
                child.stdin.close()

        async def out(source: asyncio.StreamReader, sink: asyncssh.SSHWriter) -> None:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()

        async def command() -> int:
            await asyncio.gather(out(child.stdout, process.stdout), out(child.stderr, process.stderr))
            return await child.wait()

        feeding = asyncio.ensure_future(into())
        closed = asyncio.ensure_future(process.channel.wait_closed())
        ended = asyncio.ensure_future(command())
        try:
            await asyncio.wait({ended, closed}, return_when=asyncio.FIRST_COMPLETED)
            if not ended.done():
                raise ConnectionError("the client closed the channel before the command ended")
            return ended.result()
        finally:
            for task in (feeding, closed, ended):
                task.cancel()

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
    (`ssh` printed "closed by remote host" and exited 255), and so did a
    client that went away mid-command."""
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
        # A client that goes away mid-command (the agent's link ended) ends
        # its channel only.
        command, args = sshd.command("exec cat")
        client = subprocess.Popen([command, *mux, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        client.stdin.write(b"echoed\n")
        client.stdin.flush()
        assert client.stdout.readline() == b"echoed\n"
        client.kill()
        client.wait()
        client.stdin.close()
        client.stdout.close()
        r = ssh("echo after")
        assert (r.returncode, r.stdout) == (0, "after\n"), r
        assert master() == running, "the same master throughout"
    finally:
        ssh(control_command="exit")
    deadline = time.monotonic() + 10
    while control.exists():  # the master removes it as it exits
        assert time.monotonic() < deadline, "the master never went"
        time.sleep(0.05)
