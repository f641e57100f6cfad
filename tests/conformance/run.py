"""Runs the server scenarios of the official MCP conformance suite against tmux-mcp.

Started by scripts/conformance (which installs the pinned Node tools and builds the
binaries); not a pytest module. One private tmux server (tests/python/harness.py's
TmuxServer: `-S <tmpdir>/sock -f /dev/null`), one bridge (supergateway, stdio to
Streamable HTTP, stateful: one `tmux-mcp attach -S <sock> --scope server` per HTTP
session) on 127.0.0.1, then one `conformance server --scenario NAME` per scenario of
tests/conformance/scenarios that is not `skip`. Prints scenario -> result with the
reason for each failure, stops the bridge and kills exactly that tmux server.

Exit status: 0 when every `required` scenario passed and nothing was left behind;
1 when one failed (or the bridge, or cleanup, did); 2 when tests/conformance/scenarios
and the suite's own list of server scenarios disagree.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

from harness import (  # noqa: E402  (the path above must come first)
    BIN, TEST_TMPDIR, TmuxServer, _descends_from, _kill, _pid_alive, clean_env,
    require_binary,
)

SCENARIOS_FILE = HERE / "scenarios"
LOOPBACK_PRELOAD = HERE / "loopback.cjs"
CLASSES = ("required", "pending", "fixture", "skip")
SCENARIO_TIMEOUT = 120  # s; a scenario takes about 2 s; the SDK client gives up on a request after 60 s, which then shows as its own error
BRIDGE_START_TIMEOUT = 30  # s, polled
BRIDGE_STOP_TIMEOUT = 10  # s: supergateway gives each child 5 s after SIGTERM


@dataclass
class Scenario:
    name: str
    cls: str
    why: str
    result: str = ""  # PASS FAIL XFAIL XPASS N/A SKIP
    detail: str = ""
    seconds: float = 0.0


@dataclass
class Tools:
    node: Path
    conformance: Path
    supergateway: Path

    @classmethod
    def at(cls, root: Path) -> "Tools":
        mods = root / "node_modules"
        tools = cls(node=mods / ".bin" / "node",
                    conformance=mods / "@modelcontextprotocol" / "conformance" / "dist" / "index.js",
                    supergateway=mods / "supergateway" / "dist" / "index.js")
        for path in (tools.node, tools.conformance, tools.supergateway):
            if not path.exists():
                sys.exit(f"conformance: {path} is missing (scripts/conformance installs it)")
        return tools

    @staticmethod
    def version(entry: Path) -> str:
        """The version in the package.json of the package whose dist/index.js is `entry`."""
        return json.loads((entry.parent.parent / "package.json").read_text())["version"]

    def env(self) -> dict[str, str]:
        # Node 22 first on PATH: anything the suite or the bridge spawns as `node`
        # must be this one, not the machine's own (older) node.
        env = clean_env()
        env["PATH"] = f"{self.node.parent}{os.pathsep}{env.get('PATH', '')}"
        env["NO_COLOR"] = "1"
        return env


def load_scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for n, line in enumerate(SCENARIOS_FILE.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3 or parts[1] not in CLASSES:
            sys.exit(f"conformance: {SCENARIOS_FILE}:{n}: want 'NAME CLASS WHY' with CLASS "
                     f"one of {', '.join(CLASSES)}, got: {line}")
        out.append(Scenario(*parts))
    return out


def suite_scenarios(tools: Tools) -> list[str]:
    """The pinned suite's server scenarios, from `conformance list --server`."""
    proc = subprocess.run([str(tools.node), str(tools.conformance), "list", "--server"],
                          env=tools.env(), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    if proc.returncode != 0:
        sys.exit(f"conformance: `conformance list --server` failed ({proc.returncode}):\n"
                 f"{proc.stderr}")
    names = [line.split()[1] for line in proc.stdout.splitlines()
             if line.startswith("  - ") and len(line.split()) >= 2]
    if not names:
        sys.exit(f"conformance: no scenario in `conformance list --server`:\n{proc.stdout}")
    return names


def check_classification(ours: list[Scenario], theirs: list[str]) -> None:
    names = [s.name for s in ours]
    dup = sorted({n for n in names if names.count(n) > 1})
    missing = [n for n in theirs if n not in names]
    unknown = [n for n in names if n not in theirs]
    problems = []
    if dup:
        problems.append(f"listed twice: {', '.join(dup)}")
    if missing:
        problems.append(f"in the suite but not classified: {', '.join(missing)}")
    if unknown:
        problems.append(f"classified but not in the suite: {', '.join(unknown)}")
    if problems:
        print(f"conformance: {SCENARIOS_FILE} does not match the pinned suite:\n  "
              + "\n  ".join(problems), file=sys.stderr)
        sys.exit(2)


# --------------------------------------------------------------------------
# The bridge
# --------------------------------------------------------------------------


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listeners(port: int) -> list[str]:
    """Local addresses (hex, as in /proc/net/tcp{,6}) of LISTEN sockets on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            addr, _, hexport = cols[1].partition(":")
            if cols[3] == "0A" and int(hexport, 16) == port:
                found.append(addr)
    return found


LOOPBACK_HEX = {"0100007F", "00000000000000000000000001000000"}  # 127.0.0.1, ::1


@dataclass
class Bridge:
    proc: subprocess.Popen
    port: int
    log: Path
    children: set[int] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def descendants(self) -> set[int]:
        return {int(p) for p in os.listdir("/proc")
                if p.isdigit() and _descends_from(int(p), self.proc.pid)}

    def stop(self) -> list[str]:
        """SIGTERM the bridge (it stops its children), then make sure that it and
        every process it started are gone. Returns problems."""
        problems: list[str] = []
        self.children |= self.descendants()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=BRIDGE_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                problems.append(f"bridge pid {self.proc.pid} ignored SIGTERM for "
                                f"{BRIDGE_STOP_TIMEOUT} s; killed it")
                self.proc.kill()
                self.proc.wait()
        deadline = time.monotonic() + BRIDGE_STOP_TIMEOUT
        while time.monotonic() < deadline and any(_pid_alive(p) for p in self.children):
            time.sleep(0.05)
        left = sorted(p for p in self.children if _pid_alive(p))
        if left:
            problems.append(f"processes started by the bridge still alive after it "
                            f"stopped: {left}; killed them")
            for pid in left:
                _kill(pid)
        return problems


def start_bridge(tools: Tools, server: TmuxServer) -> Bridge:
    # The child command runs through a shell (supergateway spawns it with
    # shell: true), hence the quoting. Scope `server`: run from outside any pane,
    # the agent sees the whole private server.
    child = shlex.join([str(BIN), "attach", "-S", server.sock, "--scope", "server"])
    log = server.new_log("bridge")
    last_error = ""
    for _attempt in range(3):  # a free port can be taken between probe and bind
        port = free_loopback_port()
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [str(tools.node), "--require", str(LOOPBACK_PRELOAD), str(tools.supergateway),
                 "--stdio", child, "--outputTransport", "streamableHttp", "--stateful",
                 "--port", str(port), "--streamableHttpPath", "/mcp", "--logLevel", "info"],
                env=tools.env(), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        bridge = Bridge(proc, port, log)
        deadline = time.monotonic() + BRIDGE_START_TIMEOUT
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            if proc.poll() is None:
                bridge.stop()
                raise RuntimeError(f"bridge did not listen on 127.0.0.1:{port} within "
                                   f"{BRIDGE_START_TIMEOUT} s:\n{bridge.log_tail()}")
            last_error = bridge.log_tail()
            continue
        addrs = listeners(port)
        if not addrs or any(a not in LOOPBACK_HEX for a in addrs):
            bridge.stop()
            raise RuntimeError(f"bridge listens on port {port} at {addrs} (hex, /proc/net/tcp), "
                               f"not on loopback only")
        return bridge
    raise RuntimeError(f"bridge exited before listening (3 tries):\n{last_error}")


# --------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------


def run_scenario(tools: Tools, bridge: Bridge, sc: Scenario, outroot: Path) -> tuple[bool, str]:
    """Runs one scenario; returns (suite verdict passed, explanation)."""
    out = outroot / sc.name
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            [str(tools.node), str(tools.conformance), "server", "--url", bridge.url,
             "--scenario", sc.name, "-o", str(out)],
            env=tools.env(), cwd=out, stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=SCENARIO_TIMEOUT)
    except subprocess.TimeoutExpired:
        sc.seconds = time.monotonic() - t0
        return False, f"conformance did not finish within {SCENARIO_TIMEOUT} s"
    sc.seconds = time.monotonic() - t0
    (out / "conformance.log").write_text(proc.stdout + proc.stderr)
    found = sorted(out.glob(f"server-{sc.name}-*/checks.json"))
    if not found:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return False, f"no checks.json (conformance exited {proc.returncode}): {' | '.join(tail)}"
    try:
        checks = json.loads(found[-1].read_text())
    except ValueError as e:
        return False, f"{found[-1]} is not JSON: {e}"
    failed = [c for c in checks if c.get("status") == "FAILURE"]
    warned = [c for c in checks if c.get("status") == "WARNING"]
    if failed:
        return False, "; ".join(f"{c.get('id')}: {c.get('errorMessage') or c.get('description')}"
                                for c in failed)
    if not checks:
        return False, "the scenario produced no checks"
    if proc.returncode != 0:
        return False, f"all {len(checks)} checks passed but conformance exited {proc.returncode}"
    notes = [f"{len(checks)} check{'s' if len(checks) != 1 else ''} passed"]
    if warned:
        notes.append("warnings: " + "; ".join(f"{c.get('id')}: {c.get('errorMessage') or c.get('description')}"
                                              for c in warned))
    # A check that accepted an error result (the suite's fixture tool does not
    # exist here) says so, so nobody mistakes it for a working tool call.
    for c in checks:
        result = (c.get("details") or {}).get("result")
        if isinstance(result, dict) and result.get("isError") is True:
            text = next((p.get("text") for p in result.get("content") or []
                         if isinstance(p, dict) and p.get("type") == "text"), "")
            notes.append(f"the result it accepted is an error: {text!r}")
    return True, "; ".join(notes)


def classify(sc: Scenario, passed: bool, explanation: str) -> None:
    if sc.cls == "required":
        sc.result, sc.detail = ("PASS", explanation) if passed else ("FAIL", explanation)
    elif sc.cls == "pending":
        if passed:
            sc.result = "XPASS"
            sc.detail = (f"on the not-implemented-yet list but passed ({explanation}): "
                         f"make it `required` in tests/conformance/scenarios")
        else:
            sc.result = "XFAIL"
            sc.detail = f"expected to fail: not implemented yet: {sc.why}. Suite: {explanation}"
    else:  # fixture
        sc.result = "N/A"
        sc.detail = (f"not counted: {sc.why}. Suite verdict: "
                     f"{'pass' if passed else 'fail'} ({explanation})")


def print_table(scenarios: list[Scenario]) -> None:
    width = max(len(s.name) for s in scenarios)
    print()
    print(f"{'scenario':<{width}}  {'result':<6}  {'time':>6}  detail")
    print(f"{'-' * width}  ------  ------  ------")
    for s in scenarios:
        secs = f"{s.seconds:5.1f}s" if s.result != "SKIP" else ""
        print(f"{s.name:<{width}}  {s.result:<6}  {secs:>6}  {s.detail}")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", required=True, type=Path,
                    help="directory holding node_modules with node, the suite and the bridge")
    ap.add_argument("--keep", action="store_true",
                    help="keep the results directory (checks.json of every scenario, logs)")
    ap.add_argument("only", nargs="*", metavar="SCENARIO",
                    help="run only these scenarios (default: every one not classed `skip`)")
    args = ap.parse_args()

    require_binary()
    tools = Tools.at(args.tools)
    scenarios = load_scenarios()
    check_classification(scenarios, suite_scenarios(tools))
    by_name = {s.name: s for s in scenarios}
    unknown = [n for n in args.only if n not in by_name]
    if unknown:
        print(f"conformance: unknown scenario(s): {', '.join(unknown)}", file=sys.stderr)
        return 2

    node = subprocess.run([str(tools.node), "--version"], capture_output=True, text=True,
                          env=tools.env(), stdin=subprocess.DEVNULL).stdout.strip()
    print(f"conformance: node {node}, @modelcontextprotocol/conformance "
          f"{tools.version(tools.conformance)}, supergateway {tools.version(tools.supergateway)}; "
          f"testing {BIN}", flush=True)

    outroot = Path(tempfile.mkdtemp(prefix="tmcp-conformance-", dir=TEST_TMPDIR))
    problems: list[str] = []
    server = TmuxServer()
    bridge = None
    t_start = time.monotonic()
    try:
        bridge = start_bridge(tools, server)
        print(f"conformance: bridge pid {bridge.proc.pid} on {bridge.url} (loopback only); "
              f"tmux server {server.sock}", flush=True)
        for sc in scenarios:
            if sc.cls == "skip" or (args.only and sc.name not in args.only):
                sc.result, sc.detail = "SKIP", (f"not run: {sc.why}" if sc.cls == "skip"
                                                else "not selected")
                continue
            passed, explanation = run_scenario(tools, bridge, sc, outroot)
            classify(sc, passed, explanation)
            print(f"conformance: {sc.name}: {sc.result} ({sc.seconds:.1f} s)", flush=True)
            if bridge.proc.poll() is not None:
                problems.append(f"the bridge exited ({bridge.proc.returncode}) during {sc.name}")
                break
    except RuntimeError as e:
        problems.append(str(e))
    finally:
        if bridge is not None:
            problems += bridge.stop()
        problems += server.shutdown()
    elapsed = time.monotonic() - t_start

    for sc in scenarios:
        if not sc.result:  # the run stopped early
            sc.result, sc.detail = ("FAIL", "not run: the run stopped early") \
                if sc.cls == "required" else ("SKIP", "not run: the run stopped early")
    print_table(scenarios)
    failed = [s for s in scenarios if s.result == "FAIL"]
    count = {r: sum(1 for s in scenarios if s.result == r)
             for r in ("PASS", "FAIL", "XFAIL", "XPASS", "N/A", "SKIP")}
    if (failed or problems) and bridge is not None and bridge.log_tail():
        print(f"--- last lines of the bridge log ({bridge.log}) ---\n{bridge.log_tail()}\n")
    for p in problems:
        print(f"conformance: PROBLEM: {p}")
    if count["XPASS"]:
        names = ", ".join(s.name for s in scenarios if s.result == "XPASS")
        print(f"conformance: {count['XPASS']} scenario(s) on the not-implemented-yet list passed "
              f"({names}): move them to `required` in tests/conformance/scenarios")
    print(f"conformance: {count['XFAIL']} expected to fail (not implemented yet), "
          f"{count['N/A']} run but not counted (suite fixtures), {count['SKIP']} not run; "
          f"{elapsed:.1f} s")
    if args.keep or failed or problems:
        print(f"conformance: results (checks.json per scenario) kept in {outroot}, "
              f"logs in {server.dir}")
    else:
        shutil.rmtree(outroot, ignore_errors=True)
        shutil.rmtree(server.dir, ignore_errors=True)
    rc = 1 if failed or problems else 0
    print(f"conformance: {count['PASS'] + count['XPASS']} passed, {count['FAIL']} failed, "
          f"{count['XFAIL'] + count['N/A'] + count['SKIP']} skipped")
    return rc


if __name__ == "__main__":
    sys.exit(main())
