"""`scripts/bench --peers`: tmux-mcp against its peers, side by side.

    python run.py --tools DIR --bin DIR [--libtmux-rs BIN] [--rounds N] [--plot]

DIR (--tools) is the cache scripts/bench installed: venv-driver (the official
Python SDK, matplotlib), venv-libtmux-mcp, venv-mcp-tmux, npm (the official
TypeScript SDK and server-everything, the echo floor). --bin holds our release
binaries. This script starts the tmux servers (private sockets, -f /dev/null),
writes the plan both drivers follow (driver.py: Python SDK, driver.mjs:
TypeScript SDK), runs them one after the other, prints p50/p90/p99 per system
and operation with ratios against the fastest peer and the echo floor, our
brokers' RSS and open fds, and with --plot a PNG of capture latency by pane
count. It asserts nothing about speed. Every tmux server it started is killed by
its socket at the end, also on Ctrl-C or an error; so are the drivers' process
groups (the MCP servers they spawned).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PANE_TEXT_LINES = 40
# (sessions × 10 windows) + the main session's pane: the shape of
# tests/src/lib.rs `big_server` (100 sessions × 10 windows of `sleep`, 80×24).
SHAPES = {"one": 0, "panes11": 1, "panes101": 10, "big": 100}


def clean_env() -> dict[str, str]:
    """Nothing that ties a child to the tmux server this bench may run in."""
    return {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}


class Tmux:
    """One tmux server on a private socket; the main session's pane %0 is 200×50,
    shows PANE_TEXT_LINES lines, then prints every line written to its fifo."""

    def __init__(self, name: str, sessions: int) -> None:
        self.name = name
        self.dir = Path(tempfile.mkdtemp(prefix=f"tmcp-peers-{name}-", dir=os.environ.get("TMUX_MCP_TEST_TMPDIR", "/tmp")))
        self.sock = str(self.dir / "sock")
        self.fifo = str(self.dir / "fifo")
        os.mkfifo(self.fifo)
        self.script = (f"i=1; while [ $i -le {PANE_TEXT_LINES} ]; do echo \"line $i of the benchmark pane: lorem ipsum dolor sit amet\"; "
                       f"i=$((i+1)); done; while true; do cat {self.fifo}; done")
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "sh", "-c", self.script)
        if sessions:
            lines = []
            for s in range(sessions):
                lines.append(f"new-session -d -s s{s} -x 80 -y 24 'sleep 100000'")
                lines += [f"new-window -d -t s{s}: 'sleep 100000'"] * 9
            (self.dir / "big.tmux").write_text("\n".join(lines) + "\n")
            self.tmux("source-file", str(self.dir / "big.tmux"))
        self.pid = int(self.tmux("display-message", "-p", "#{pid}"))
        self.pane = "%0"
        self.panes = 1 + 10 * sessions
        self.wait_for_text()
        # mcp-tmux reads its socket from a config file (`[defaults] socket_path`).
        self.mcp_tmux_config = str(self.dir / "mcp-tmux.toml")
        Path(self.mcp_tmux_config).write_text(f"[defaults]\nsocket_path = {json.dumps(self.sock)}\n")

    def wait_for_text(self) -> None:
        deadline = time.monotonic() + 15
        while f"line {PANE_TEXT_LINES} of" not in self.tmux("capture-pane", "-p", "-t", self.pane):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.sock}: pane {self.pane} never showed its text")
            time.sleep(0.01)

    def reset(self) -> None:
        """The pane as it started (its PANE_TEXT_LINES lines, no history), so each
        driver captures the same text: the delta bench appends lines to it."""
        self.tmux("respawn-pane", "-k", "-t", self.pane, "sh", "-c", self.script)
        self.wait_for_text()
        self.tmux("clear-history", "-t", self.pane)

    def tmux(self, *args: str) -> str:
        p = subprocess.run(["tmux", "-S", self.sock, *args], env=clean_env(), capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60)
        if p.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:3])} failed: {p.stderr.strip()}")
        return p.stdout

    def plan(self) -> dict[str, str]:
        return {"sock": self.sock, "pane": self.pane, "fifo": self.fifo, "mcp_tmux_config": self.mcp_tmux_config}

    def kill(self, brokers: list[int]) -> list[str]:
        """Exactly this server, by its socket; its broker leaves with it. A server
        of 1,001 panes takes seconds to go on a loaded machine: wait for it (and
        for `brokers`), and kill by pid what is still there after 60 s."""
        try:
            subprocess.run(["tmux", "-S", self.sock, "kill-server"], env=clean_env(), capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=60)
        except subprocess.TimeoutExpired:
            pass
        left = [p for p in [self.pid, *brokers] if alive(p)]
        deadline = time.monotonic() + 60
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = [p for p in left if alive(p)]
        for p in left:
            os.kill(p, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)
        return [f"{self.name}: pid {p} still alive 60 s after kill-server; killed it" for p in left]


def systems(tools: Path, bindir: Path, libtmux_rs: str | None) -> list[dict[str, Any]]:
    """Every system, and the tool calls that do each operation there, as read in
    each peer's installed source. How each finds the private server: ours
    `attach -S`; libtmux-mcp `LIBTMUX_SOCKET_PATH` (libtmux_mcp/_utils.py
    `_get_server`; its tools take only a socket *name*); mcp-tmux the config
    file named by `MCP_TMUX_CONFIG`, `[defaults] socket_path` (mcp_tmux/config.py,
    targets.py: `tmux -S` on every command); libtmux-rs `-S` (src/cli.rs)."""
    ref = {"kind": "pane", "id": "{pane}", "generation": "{generation}"}
    ours = {
        "name": "tmux-mcp (ours)", "kind": "ours",
        "command": str(bindir / "tmux-mcp"),
        "args": ["attach", "-S", "{sock}", "--scope", "server", "--enable-tool", "tmux_capture"],
        "vars": {"generation": {"tool": "tmux_capabilities", "path": ["data", "server_identity", "generation"]},
                 "broker_pid": {"tool": "tmux_capabilities", "path": ["data", "broker", "pid"]}},
        "ops": {
            "capture": [{"tool": "capture_pane", "args": {"paneId": "{pane}"}},
                        {"tool": "tmux_capture", "args": {"target": ref}}],
            # The default answer is the first page (100 records, lean since
            # issue 49); the whole server in one answer, brief and lean.
            "list": [{"tool": "list_panes", "args": {}},
                     {"tool": "list_panes", "label": "list_panes brief", "args": {"limit": 10000, "detail": "brief"}},
                     {"tool": "list_panes", "label": "list_panes all", "args": {"limit": 10000}}],
            "delta": [
                {"tool": "capture_since", "first": {"tool": "capture_since", "args": {"paneId": "{pane}"}},
                 "next": {"tool": "capture_since", "args": {"paneId": "{pane}", "cursor": "{cursor}"}}, "cursor": ["cursor"]},
                # The cursor's scope includes the history, as in tests/bench/capture.rs: a
                # scrolled line moves into history and the splice stays one inserted row.
                {"tool": "tmux_capture", "first": {"tool": "tmux_capture", "args": {"target": ref, "track": True, "history_lines": 1000, "max_lines": 1000}},
                 "next": {"tool": "tmux_capture", "args": {"target": ref, "cursor": "{cursor}"}}, "cursor": ["data", "next_cursor"]},
            ],
        },
    }
    libtmux_mcp = {
        "name": "libtmux-mcp 0.1.0a22", "kind": "peer",
        "command": str(tools / "venv-libtmux-mcp/bin/libtmux-mcp"), "args": [],
        "env": {"LIBTMUX_SOCKET_PATH": "{sock}"},
        "ops": {
            "capture": [{"tool": "capture_pane", "args": {"pane_id": "{pane}"}}],
            "list": [{"tool": "list_panes", "args": {}}],
            "delta": [{"tool": "capture_since", "first": {"tool": "capture_since", "args": {"pane_id": "{pane}"}},
                       "next": {"tool": "capture_since", "args": {"pane_id": "{pane}", "cursor": "{cursor}"}}, "cursor": ["cursor"]}],
        },
    }
    mcp_tmux = {
        "name": "mcp-tmux 0.3.1", "kind": "peer",
        "command": str(tools / "venv-mcp-tmux/bin/mcp-tmux"), "args": [],
        "env": {"MCP_TMUX_CONFIG": "{mcp_tmux_config}"},
        "ops": {
            "capture": [{"tool": "tmux_capture_pane", "args": {"target_pane": "{pane}"}}],
            "list": [{"tool": "tmux_list_panes", "args": {}}],
            # Its only way to follow output is a control-mode stream (tmux_stream_*,
            # an opt-in toolset that attaches a client), not a read since a cursor.
            "delta": None,
        },
    }
    out = [ours, libtmux_mcp, mcp_tmux]
    if libtmux_rs:
        out.append({
            "name": "libtmux-rs tmux-mcp 0.1.0-alpha.8", "kind": "peer",
            "command": libtmux_rs, "args": ["-S", "{sock}", "--safety", "readonly"],
            "ops": {
                "capture": [{"tool": "capture_pane", "args": {"pane": "{pane}"}}],
                "list": [{"tool": "list_panes", "args": {}}],
                "delta": [{"tool": "capture_since", "first": {"tool": "capture_since", "args": {"pane": "{pane}"}},
                           "next": {"tool": "capture_since", "args": {"pane": "{pane}", "cursor": "{cursor}"}}, "cursor": ["cursor"]}],
            },
        })
    echo = {"tool": "echo", "args": {"message": "x"}}
    out.append({
        "name": "echo floor (server-everything)", "kind": "echo", "serverless": True,
        "command": "node", "args": [str(tools / "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"],
        "ops": {"capture": [echo], "list": [echo],
                "delta": [{"tool": "echo", "first": echo, "next": echo, "cursor": None}]},
    })
    return out


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def pct(v: list[float], p: float) -> float:
    return sorted(v)[round((len(v) - 1) * p)]


def rss_fds(pid: int) -> tuple[float, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    kib = next(int(l.split()[1]) for l in status.splitlines() if l.startswith("VmRSS:"))
    return kib / 1024.0, len(os.listdir(f"/proc/{pid}/fd"))


OPS = [
    ("capture_one", "1. capture of one 200x50 pane, 1-pane server (bytes: the result's JSON)"),
    ("capture_big", "2. the same capture on a 1,001-pane server (100 sessions x 10 windows)"),
    ("list_big", "3. list all 1,001 panes (bytes: the result's JSON)"),
    ("concurrency", "4. N concurrent agents capturing the 1-pane server's pane: aggregate captures/s (mean of rounds), failed/refused"),
    ("delta", "5. one-line tracked delta: a line appended, read only what is new (bytes: the largest result's JSON)"),
    ("cold", "6. cold start: spawn -> initialize -> tools/list answered (ours: attach to the running broker)"),
]


def rate(r: dict[str, Any]) -> float:
    return sum(r["rate"]) / len(r["rate"]) if r["rate"] else 0.0


def table(results: list[dict[str, Any]]) -> None:
    for key, title in OPS:
        print(f"\n{title}")
        if key == "concurrency":
            concurrency_table(results)
            continue
        for res in results:
            rows = res["ops"].get(key, [])
            ok = [r for r in rows if r["ms"]]
            peers = [pct(r["ms"], 0.5) for r in ok if r["kind"] == "peer"]
            echo = [pct(r["ms"], 0.5) for r in ok if r["kind"] == "echo"]
            print(f"  through the {res['driver']} ({res['sdk']})")
            print(f"    {'system':<34} {'tool':<18} {'n':>4} {'p50 ms':>9} {'p90 ms':>9} {'p99 ms':>9} {'x fastest peer':>14} {'x echo':>7} {'bytes':>8}  notes")
            for r in rows:
                name, tool = r["system"], r["tool"] or "-"
                if not r["ms"]:
                    why = "n/a (no such operation)" if r["tool"] is None else f"failed: {r['error']}"
                    print(f"    {name:<34} {tool:<18} {why}")
                    continue
                p50 = pct(r["ms"], 0.5)
                fp = f"{p50 / min(peers):.2f}x" if peers else "-"
                ex = f"{p50 / echo[0]:.2f}x" if echo else "-"
                notes = []
                if r["failed"]:
                    notes.append(f"{r['failed']} failed ({r['error'][:80]})")
                if r.get("missing"):
                    notes.append(f"{r['missing']} reads lacked the new line")
                b = str(r["bytes"]) if r["bytes"] else "-"
                print(f"    {name:<34} {tool:<18} {len(r['ms']):>4} {p50:9.2f} {pct(r['ms'], 0.9):9.2f} {pct(r['ms'], 0.99):9.2f} {fp:>14} {ex:>7} {b:>8}  {'; '.join(notes)}")


def concurrency_table(results: list[dict[str, Any]]) -> None:
    for res in results:
        rows = res["ops"].get("concurrency", [])
        print(f"  through the {res['driver']} ({res['sdk']})")
        by_n: dict[int, list[dict]] = {}
        for r in rows:
            by_n.setdefault(r["agents"], []).append(r)
        print(f"    {'N':>3} {'system':<34} {'tool':<18} {'captures/s':>10} {'x tmux loops':>12} {'x fastest peer':>14} {'failed':>6}")
        for n, rs in sorted(by_n.items()):
            fork = [rate(r) for r in rs if r["system"] == "tmux capture-pane"]
            peers = [rate(r) for r in rs if r["kind"] == "peer" and r["rate"]]
            for r in rs:
                if not r["rate"]:
                    print(f"    {n:>3} {r['system']:<34} {r['tool']:<18} not measured: {r['error']}")
                    continue
                x = rate(r)
                fx = f"{x / fork[0]:.2f}x" if fork and fork[0] else "-"
                px = f"{x / max(peers):.2f}x" if peers else "-"
                err = f"  {r['error'][:80]}" if r["failed"] else ""
                print(f"    {n:>3} {r['system']:<34} {r['tool']:<18} {x:10.0f} {fx:>12} {px:>14} {r['failed']:>6}{err}")


def targets(results: list[dict[str, Any]], big_rss: float | None) -> None:
    """Issue 8's targets beside what this run measured (printed, not asserted)."""
    def row(res: dict, op: str, tool: str, n: int | None = None) -> dict | None:
        return next((r for r in res["ops"].get(op, []) if r["kind"] == "ours" and r["tool"] == tool
                     and (n is None or r.get("agents") == n)), None)

    def p50(r: dict | None) -> float | None:
        return pct(r["ms"], 0.5) if r and r["ms"] else None

    print("\nissue 8 targets, beside this run's figures (not asserted):")
    for res in results:
        d = res["driver"]
        echo = next((pct(r["ms"], 0.5) for r in res["ops"].get("capture_one", []) if r["kind"] == "echo" and r["ms"]), None)
        limit = 1.4 if d.startswith("TypeScript") else 1.6
        for tool in ("capture_pane", "tmux_capture"):
            one, big = p50(row(res, "capture_one", tool)), p50(row(res, "capture_big", tool))
            if one and echo:
                print(f"  {d}: {tool} p50 {one:.2f} ms = {one / echo:.2f}x the echo floor ({echo:.2f} ms)   target <= {limit}x")
            if one and big:
                print(f"  {d}: {tool} on 1,001 panes {big:.2f} ms = {big / one:.2f}x the 1-pane capture   target <= 1.3x")
        lst = p50(row(res, "list_big", "list_panes"))
        if lst:
            print(f"  {d}: list_panes first page (100 of 1,001 panes) p50 {lst:.1f} ms   target <= 40 ms")
        brief = p50(row(res, "list_big", "list_panes brief"))
        peer = next((pct(r["ms"], 0.5) for r in res["ops"].get("list_big", [])
                     if r["system"].startswith("mcp-tmux") and r["ms"]), None)
        if brief and peer:
            print(f"  {d}: list_panes brief, all 1,001 panes, p50 {brief:.1f} ms = {brief / peer:.2f}x mcp-tmux's whole listing ({peer:.1f} ms)   target <= 1x")
        fork = next((rate(r) for r in res["ops"].get("concurrency", []) if r["system"] == "tmux capture-pane" and r.get("agents") == 32), 0.0)
        for tool in ("capture_pane", "tmux_capture"):
            r = row(res, "concurrency", tool, 32)
            if r and r["rate"] and fork:
                print(f"  {d}: 32 agents, {tool}: {rate(r):.0f}/s = {rate(r) / fork:.2f}x 32 tmux capture-pane loops ({fork:.0f}/s), "
                      f"{r['failed']} failed/refused   target >= 1.2x, 0 refused")
    if big_rss is not None:
        print(f"  broker RSS on the 1,001-pane server after the run: {big_rss:.1f} MiB   target <= 40 MiB (flat: scripts/bench --listing)")
    print("  broker's own time (bare JSON-RPC line client): not measured here (scripts/bench)")


def plot(results: list[dict[str, Any]], counts: dict[str, int], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 6))
    colors: dict[str, str] = {}  # one colour per system and tool, one line style per driver
    print("\ncapture of one 200x50 pane, p50 ms by panes on the server (the plot's points)")
    for res, style in zip(results, ["-o", "--s"]):
        series: dict[str, list[tuple[int, float]]] = {}
        for server, n in sorted(counts.items(), key=lambda kv: kv[1]):
            for r in res["ops"].get(f"capture_{server}", []):
                if r["ms"] and r["kind"] != "echo":
                    series.setdefault(f"{r['system']} {r['tool']}", []).append((n, pct(r["ms"], 0.5)))
        print(f"  through the {res['driver']}")
        for label, pts in series.items():
            color = colors.setdefault(label, f"C{len(colors) % 10}")
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color, label=f"{label} ({res['driver']})")
            print(f"    {label:<54} " + "  ".join(f"{n:>5}: {v:7.2f}" for n, v in pts))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("panes on the tmux server")
    ax.set_ylabel("capture of one 200x50 pane, p50 (ms)")
    ax.set_title("capture latency by pane count")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", type=Path)
    ap.add_argument("--bin", type=Path)
    ap.add_argument("--libtmux-rs", default=None, help="the libtmux-rs tmux-mcp binary; absent: not measured")
    ap.add_argument("--libtmux-rs-note", default="")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--plot", action="store_true")
    ap.add_argument("--drivers", default="python,node")
    ap.add_argument("--render", type=Path, help="print the tables of an earlier run's raw figures (its JSON) and exit")
    a = ap.parse_args()
    raw = Path(tempfile.gettempdir()) / "tmux-mcp-peers.json"
    if a.render:
        saved = json.loads(a.render.read_text())
        table(saved["results"])
        targets(saved["results"], saved.get("big_rss"))
        if a.plot:
            png = Path(os.environ.get("TMUX_MCP_BENCH_PLOT", Path(tempfile.gettempdir()) / "tmux-mcp-peers.png"))
            plot(saved["results"], saved["counts"], png)
            print(f"\nplot: {png}")
        return 0
    if not a.tools or not a.bin:
        ap.error("--tools and --bin are needed (scripts/bench --peers passes them)")

    servers: list[Tmux] = []
    drivers: list[subprocess.Popen] = []
    results: list[dict[str, Any]] = []

    def stop(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="tmcp-peers-run-"))
    try:
        shapes = {k: v for k, v in SHAPES.items() if a.plot or not k.startswith("panes")}
        for name, sessions in shapes.items():
            servers.append(Tmux(name, sessions))
        counts = {s.name: s.panes for s in servers}
        plan = {
            "servers": {s.name: s.plan() for s in servers},
            "systems": systems(a.tools, a.bin, a.libtmux_rs),
            "rounds": a.rounds,
            "rounds_big": max(10, a.rounds // 4),
            "rounds_cold": max(5, a.rounds // 20),
            "agents": [1, 4, 16, 32],
            "concurrency_rounds": max(2, a.rounds // 50),
            "window_s": 1.5,
            "errlog": str(work / "servers.stderr"),
        }
        (work / "plan.json").write_text(json.dumps(plan, indent=1))
        kinds = {s["name"]: s["kind"] for s in plan["systems"]}
        kinds["tmux capture-pane"] = "tmux"
        for d in a.drivers.split(","):
            next(s for s in servers if s.name == "one").reset()
            out = work / f"{d}.json"
            cmd = ([str(a.tools / "venv-driver/bin/python"), str(HERE / "driver.py")] if d == "python"
                   else ["node", str(HERE / "driver.mjs"), str(a.tools / "npm")])
            t = time.monotonic()
            print(f"==> {d} driver ...", file=sys.stderr, flush=True)
            # Its own process group: on Ctrl-C or an error the group (the driver
            # and every MCP server it spawned) is killed by its id below.
            p = subprocess.Popen([*cmd, str(work / "plan.json"), str(out)], env=clean_env(), stdin=subprocess.DEVNULL, start_new_session=True)
            drivers.append(p)
            rc = p.wait()
            print(f"==> {d} driver: exit {rc}, {time.monotonic() - t:.0f} s", file=sys.stderr, flush=True)
            if rc != 0 or not out.exists():
                print(f"the {d} driver failed (exit {rc}); its servers' stderr: {plan['errlog']}.{d}", file=sys.stderr)
                continue
            res = json.loads(out.read_text())
            for rows in res["ops"].values():
                for r in rows:
                    r["kind"] = kinds.get(r["system"], "?")
            results.append(res)
        print(f"\ntmux-mcp against its peers: {os.uname().nodename}, {os.cpu_count()} CPUs, {subprocess.run(['tmux', '-V'], capture_output=True, text=True).stdout.strip()}, "
              f"--rounds {a.rounds} (big-server ops {plan['rounds_big']}, cold starts {plan['rounds_cold']}); interleaved round by round; load at start {started_load}")
        if not a.libtmux_rs:
            print(f"libtmux-rs tmux-mcp 0.1.0-alpha.8: not available ({a.libtmux_rs_note or 'run with --with-libtmux-rs'})")
        for res in results:
            for k, v in res.get("start_errors", {}).items():
                print(f"  {res['driver']}: {k} did not start: {v}")
        table(results)
        print("\nour brokers after the run (from /proc; one broker per tmux server, shared by both drivers' agents):")
        big_rss = None
        for res in results[:1]:
            for key, v in res["vars"].items():
                if "broker_pid" in v:
                    server = key.split("@")[1]
                    try:
                        mib, fds = rss_fds(int(v["broker_pid"]))
                        big_rss = mib if server == "big" else big_rss
                        print(f"  {server:<8} ({counts[server]} panes) broker pid {v['broker_pid']}: RSS {mib:.1f} MiB, {fds} open fds")
                    except (OSError, StopIteration, ValueError) as e:
                        print(f"  {key}: broker {v['broker_pid']} not readable ({e})")
        targets(results, big_rss)
        raw.write_text(json.dumps({"results": results, "big_rss": big_rss, "counts": counts}))
        print(f"\nraw figures: {raw} (run.py --render {raw} prints these tables again)")
        if a.plot:
            png = Path(os.environ.get("TMUX_MCP_BENCH_PLOT", Path(tempfile.gettempdir()) / "tmux-mcp-peers.png"))
            plot(results, counts, png)
            print(f"\nplot: {png}")
        print(f"\nload at the end: {os.getloadavg()}; wall time {time.monotonic() - started:.0f} s")
        return 0
    finally:
        for p in drivers:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        for s in servers:
            brokers = [int(v["broker_pid"]) for res in results for k, v in res["vars"].items()
                       if k.endswith(f"@{s.name}") and str(v.get("broker_pid", "")).isdigit()]
            for problem in s.kill(sorted(set(brokers))):
                print(problem, file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)


started_load = " ".join(f"{x:.2f}" for x in os.getloadavg())

if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt as e:
        # main's finally has killed the drivers' groups and the tmux servers.
        print(f"scripts/bench --peers: interrupted ({e or 'Ctrl-C'}); everything it started is stopped", file=sys.stderr)
        sys.exit(130)
