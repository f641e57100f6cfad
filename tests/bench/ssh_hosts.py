"""`scripts/bench --ssh`: a capture on a host over SSH (issue 52 item 4)
against an SSH round trip, in one run. The issue's target compares a warm
capture with `ssh HOST true` over the same ControlMaster; the test's SSH
server (asyncssh) ends the whole connection when a short command ends (the
client sees "closed by remote host", exit 255), so a ControlMaster does not
survive its first command there and that figure cannot be taken here. What
is measured instead is `ssh HOST echo` on a new connection each time: an
upper bound of the round trip, not the target's comparison.

The host is tests/python/test_ssh.py's asyncssh server on 127.0.0.1 (its own
process; a Python SSH server, so both figures carry its cost), reached by the
system's `ssh` with a config file of this run. The agent (the official
Python SDK) is attached to its own tmux server, whose `@mcp-hosts` names the
host; the remote tmux server is a second one of this run. Measured
alternating, N each, after a warm-up:

- `capture_pane` of a 80x24 pane on `ssh:benchhost` (the agent's link to the
  host is open: one ssh, reused);
- `ssh -F CONFIG benchhost echo` (a new connection each time: key
  exchange, authentication, a remote `sh -c echo`).

Needs tmux, ssh, the .venv scripts/test makes. Uses TMUX_MCP_BIN, else
target/release/tmux-mcp (scripts/bench builds it).

    .venv/bin/python tests/bench/ssh_hosts.py
"""
import asyncio
import os
import shutil
import statistics
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


async def main():
    import test_ssh  # the asyncssh server (its module runs nothing on import)
    d = Path(tempfile.mkdtemp(prefix="tmcp-bssh-"))
    own, remote = str(d / "own.sock"), str(d / "remote.sock")
    for sock in (own, remote):
        tmux(sock, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24", "cat")
    pane = tmux(remote, "new-window", "-d", "-P", "-F", "#{pane_id}",
                "i=0; while [ $i -lt 20 ]; do echo line $i of the far pane; i=$((i+1)); done; exec cat").strip()
    sshd = None
    try:
        os.environ.setdefault("TMUX_MCP_TEST_TMPDIR", str(d))
        sshd = test_ssh.SshServer.__new__(test_ssh.SshServer)
        # SshServer's own start, outside pytest.
        sshd.dir = d / "sshd"
        sshd.dir.mkdir()
        os.chmod(sshd.dir, 0o700)
        sshd.key = sshd.dir / "client_key"
        sshd.log = sshd.dir / "server.log"
        sshd.proc = subprocess.Popen([sys.executable, test_ssh.__file__, "serve", str(sshd.dir)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=open(sshd.log, "w"), text=True)
        sshd.port = int(sshd.proc.stdout.readline())
        config = d / "ssh_config"
        config.write_text(
            "Host benchhost\n  HostName 127.0.0.1\n"
            f"  Port {sshd.port}\n  IdentityFile {sshd.key}\n  IdentitiesOnly yes\n"
            f"  StrictHostKeyChecking no\n  UserKnownHostsFile {d / 'known_hosts'}\n  LogLevel ERROR\n")
        tmux(own, "set-option", "-g", "@mcp-hosts", "benchhost")
        tmux(own, "set-option", "-g", "@mcp-ssh-command", f"ssh -F {config}")
        tmux(own, "set-option", "-g", "@mcp-remote-attach", f"{BIN} attach -S {remote}")
        ssh_true = ["ssh", "-F", str(config), "benchhost", "echo"]
        params = StdioServerParameters(command=BIN, args=["attach", "-S", own])
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                args = {"server": "ssh:benchhost", "paneId": f"ssh:benchhost:{pane}"}
                for _ in range(10):
                    res = await s.call_tool("capture_pane", args)
                    assert not res.is_error, res
                    # Exit 255 after the output: the test server's close
                    # (see above); the round trip is done by then.
                    out = subprocess.run(ssh_true, capture_output=True, text=True)
                    assert out.stdout == "\n", out
                cap, rt = [], []
                for _ in range(N):
                    t = time.perf_counter()
                    res = await s.call_tool("capture_pane", args)
                    cap.append((time.perf_counter() - t) * 1000)
                    assert not res.is_error, res
                    t = time.perf_counter()
                    out = subprocess.run(ssh_true, capture_output=True, text=True)
                    rt.append((time.perf_counter() - t) * 1000)
                    assert out.stdout == "\n", out
        print(f"capture_pane on ssh:benchhost (warm link)    p50 {p(cap, .5):7.2f} ms  p90 {p(cap, .9):7.2f} ms")
        print(f"ssh benchhost echo, a new connection each     p50 {p(rt, .5):7.2f} ms  p90 {p(rt, .9):7.2f} ms")
        print(f"ratio p50 {statistics.median(cap) / statistics.median(rt):.2f}x (the target's ControlMaster figure cannot be taken here)")
    finally:
        if sshd is not None:
            sshd.proc.terminate()
            sshd.proc.wait()
        for sock in (own, remote):
            subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


asyncio.run(main())
