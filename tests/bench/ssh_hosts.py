"""`scripts/bench --ssh`: a capture on a host over SSH (issue 52 item 4)
against an SSH round trip, in one run. The issue's target: a capture on a
warm SSH host <= 2x an SSH round trip (`ssh HOST true` over the same
ControlMaster).

The host is tests/python/test_ssh.py's asyncssh server on 127.0.0.1 (its own
process; a Python SSH server, so every figure carries its cost), reached by
the system's `ssh` with a config file of this run whose `benchhost` goes
over a ControlMaster (`ControlMaster auto`, a `ControlPath` of this run).
The master is opened first (`ssh -fN`); the agent's ssh (`@mcp-ssh-command
"ssh -F CONFIG"`) and every `ssh benchhost true` are its clients (the
server's established connections are counted to check it). The agents (the
official Python SDK) are attached to their own tmux server, whose
`@mcp-hosts` names the host; the remote tmux server is a second one of this
run. Measured alternating, round by round, N rounds after a warm-up:

- `capture_pane` of an 80x24 pane on `ssh:benchhost` through an agent whose
  link to the host is open (one ssh, reused) and goes over the master;
- `ssh -F CONFIG benchhost true`: a new ssh client process each time, over
  the same master (the target's round trip); the ratio is of these two;
- the same capture through a second agent whose link is a connection of
  its own (`ControlPath=none`): what the master's relaying costs;
- every other round, `ssh -F CONFIG -o ControlPath=none benchhost true`: a
  new connection each time (key exchange, authentication), what an agent
  pays once per link without a master.

The master is ended with `ssh -O exit`; no process or file is left.

Needs tmux, ssh, the .venv scripts/test makes. Uses TMUX_MCP_BIN, else
target/release/tmux-mcp (scripts/bench builds it).

    .venv/bin/python tests/bench/ssh_hosts.py
"""
import asyncio
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "python"))
BIN = os.environ.get("TMUX_MCP_BIN", str(REPO / "target" / "release" / "tmux-mcp"))
N = 100

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402


def tmux(sock, *a):
    return subprocess.run(["tmux", "-S", sock, *a], check=True, capture_output=True, text=True).stdout


def p(v, q):
    v = sorted(v)
    return v[round((len(v) - 1) * q)]


def row(label, v):
    print(f"{label:<62} p50 {p(v, .5):7.2f} ms  p90 {p(v, .9):7.2f} ms")


def connections(port):
    """Established TCP connections of this machine to 127.0.0.1:port."""
    n = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        if f[2] == f"0100007F:{port:04X}" and f[3] == "01":
            n += 1
    return n


def start_sshd(d):
    """test_ssh.SshServer's own start, outside pytest."""
    import test_ssh  # the asyncssh server (its module runs nothing on import)
    sshd = test_ssh.SshServer.__new__(test_ssh.SshServer)
    sshd.dir = d / "sshd"
    sshd.dir.mkdir()
    os.chmod(sshd.dir, 0o700)
    sshd.key = sshd.dir / "client_key"
    sshd.log = sshd.dir / "server.log"
    sshd.proc = subprocess.Popen([sys.executable, test_ssh.__file__, "serve", str(sshd.dir)],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=open(sshd.log, "w"), text=True)
    sshd.port = int(sshd.proc.stdout.readline())
    return sshd


@contextlib.asynccontextmanager
async def agent(own, pane):
    """A new agent on `own` (the official Python SDK over `tmux-mcp
    attach`); yields its timed `capture_pane` of the far pane. Its link to
    the host opens on the first call, with the `@mcp-ssh-command` of then."""
    params = StdioServerParameters(command=BIN, args=["attach", "-S", own])
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            args = {"server": "ssh:benchhost", "paneId": f"ssh:benchhost:{pane}"}

            async def capture():
                t = time.perf_counter()
                res = await s.call_tool("capture_pane", args)
                ms = (time.perf_counter() - t) * 1000
                assert not res.is_error and "line 19 of the far pane" in res.content[0].text, res
                return ms
            await capture()
            yield capture


def ssh_true(argv):
    """Times one `ssh ... true`, a new ssh client process."""
    t = time.perf_counter()
    out = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    ms = (time.perf_counter() - t) * 1000
    assert out.returncode == 0 and out.stdout == "", out
    return ms


def settle(port, want):
    """Waits until `want` connections to the server are established (a
    closed one's end may take a moment)."""
    deadline = time.monotonic() + 5
    while connections(port) != want:
        assert time.monotonic() < deadline, f"{connections(port)} connections to the host, not {want}"
        time.sleep(0.01)


async def main():
    d = Path(tempfile.mkdtemp(prefix="tmcp-bssh-"))
    own, remote = str(d / "own.sock"), str(d / "remote.sock")
    for sock in (own, remote):
        tmux(sock, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24", "cat")
    pane = tmux(remote, "new-window", "-d", "-P", "-F", "#{pane_id}",
                "i=0; while [ $i -lt 20 ]; do echo line $i of the far pane; i=$((i+1)); done; exec cat").strip()
    sshd = master = None
    config = d / "ssh_config"
    control = d / "control"
    try:
        os.environ.setdefault("TMUX_MCP_TEST_TMPDIR", str(d))
        sshd = start_sshd(d)
        config.write_text(
            "Host benchhost\n  HostName 127.0.0.1\n"
            f"  Port {sshd.port}\n  IdentityFile {sshd.key}\n  IdentitiesOnly yes\n"
            f"  StrictHostKeyChecking no\n  UserKnownHostsFile {d / 'known_hosts'}\n  LogLevel ERROR\n"
            f"  ControlMaster auto\n  ControlPath {control}\n  ControlPersist yes\n")
        ssh = ["ssh", "-F", str(config)]
        # The master, in the background until `-O exit` (its stdio is /dev/null).
        subprocess.run([*ssh, "-fN", "benchhost"], check=True, timeout=30, stdin=subprocess.DEVNULL)
        check = subprocess.run([*ssh, "-O", "check", "benchhost"], capture_output=True, text=True, timeout=30)
        master = int(re.search(r"pid=(\d+)", check.stderr).group(1))
        assert connections(sshd.port) == 1, "the master's one connection"

        tmux(own, "set-option", "-g", "@mcp-hosts", "benchhost")
        tmux(own, "set-option", "-g", "@mcp-remote-attach", f"{BIN} attach -S {remote}")
        via_master = [*ssh, "benchhost", "true"]
        fresh = [*ssh, "-o", "ControlPath=none", "benchhost", "true"]
        tmux(own, "set-option", "-g", "@mcp-ssh-command", f"ssh -F {config}")
        async with agent(own, pane) as over_master:
            settle(sshd.port, 1)  # its link is a client of the master
            tmux(own, "set-option", "-g", "@mcp-ssh-command", f"ssh -F {config} -o ControlPath=none")
            async with agent(own, pane) as own_link:
                settle(sshd.port, 2)  # its link is a connection of its own
                for _ in range(10):
                    await over_master()
                    await own_link()
                    ssh_true(via_master)
                cap, rt, direct, new = [], [], [], []
                for i in range(N):
                    cap.append(await over_master())
                    rt.append(ssh_true(via_master))
                    direct.append(await own_link())
                    if i % 2 == 0:
                        new.append(ssh_true(fresh))
                settle(sshd.port, 2)  # no `ssh true` over the master opened one
        settle(sshd.port, 1)  # the master outlived its clients

        print(f"issue 52: a capture on a warm SSH host <= 2x `ssh HOST true` over the same "
              f"ControlMaster ({N} each, alternating; the host is a Python SSH server on 127.0.0.1)")
        row("capture_pane on ssh:benchhost, warm link over the master", cap)
        row("ssh benchhost true over the master (a new ssh each)", rt)
        print(f"ratio p50 {p(cap, .5) / p(rt, .5):.2f}x (target <= 2x)")
        row("capture_pane on ssh:benchhost, warm link of its own", direct)
        row(f"ssh benchhost true, a new connection each ({len(new)})", new)
    finally:
        if master is not None:
            subprocess.run(["ssh", "-F", str(config), "-O", "exit", "benchhost"],
                           capture_output=True, timeout=30)
            deadline = time.monotonic() + 10
            while Path(f"/proc/{master}").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            if Path(f"/proc/{master}").exists():
                os.kill(master, 15)
        if sshd is not None:
            sshd.proc.terminate()
            sshd.proc.wait()
        for sock in (own, remote):
            subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


asyncio.run(main())
