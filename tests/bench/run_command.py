"""run_command through the official Python SDK in a bash pane, enrolled
(`tmux-mcp shell-init bash`: a key chord, the shell's line editor takes the
command) and not (the typed line through the broker's pty), against
`sh -c true` started from Python, in one run. Needs tmux and bash; builds
nothing (TMUX_MCP_BIN, else target/debug/tmux-mcp).

    .venv/bin/python tests/bench/run_command.py
"""
import asyncio, os, statistics, subprocess, tempfile, time, shutil
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TMUX_MCP_BIN", os.path.join(REPO, "target", "debug", "tmux-mcp"))
N = 30

def tmux(sock, *a):
    return subprocess.run(["tmux", "-S", sock, *a], check=True, capture_output=True, text=True).stdout

async def timed(s, pane, cmd):
    t = time.perf_counter()
    r = await s.call_tool("run_command", {"paneId": pane, "command": cmd, "timeoutMs": 5000})
    dt = time.perf_counter() - t
    assert not r.is_error, r
    assert r.structured_content["state"] == "done", r.structured_content
    return dt * 1000

async def main():
    d = tempfile.mkdtemp(prefix="tmcp-m41-")
    sock = os.path.join(d, "sock")
    tmux(sock, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40")
    home = os.path.join(d, "home"); os.makedirs(home)
    line = f"exec env -i HOME={home} TERM=xterm PATH=/usr/bin:/bin 'PS1=$ ' TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\" bash --norc --noprofile -i"
    plain = tmux(sock, "new-window", "-d", "-P", "-F", "#{pane_id}", line).strip()
    enrolled = tmux(sock, "new-window", "-d", "-P", "-F", "#{pane_id}", line).strip()
    try:
        p = StdioServerParameters(command=BIN, args=["attach", "-S", sock, "--scope", "server", "--safety", "mutating"])
        async with stdio_client(p) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                await asyncio.sleep(1)
                tmux(sock, "send-keys", "-t", enrolled, "-l", f'eval "$({BIN} shell-init bash)"')
                tmux(sock, "send-keys", "-t", enrolled, "Enter")
                await asyncio.sleep(1)
                info = await s.call_tool("get_pane_info", {"paneId": enrolled})
                assert "shell" in info.structured_content["pane"], info.structured_content
                res = {}
                for name, pane in (("typed (not enrolled)", plain), ("enrolled", enrolled)):
                    await timed(s, pane, "true")
                    xs = [await timed(s, pane, "true") for _ in range(N)]
                    res[name] = xs
                shx = []
                for _ in range(N):
                    t = time.perf_counter(); subprocess.run(["sh", "-c", "true"]); shx.append((time.perf_counter() - t) * 1000)
                res["sh -c true (subprocess)"] = shx
                for k, xs in res.items():
                    print(f"{k:28} median {statistics.median(xs):7.1f} ms  p90 {sorted(xs)[int(0.9*len(xs))]:7.1f} ms  (n={len(xs)})")
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"])
        shutil.rmtree(d, ignore_errors=True)

asyncio.run(main())
