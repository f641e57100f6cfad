"""`scripts/bench --tasks`: scripted agent tasks, end to end, ours against the peers.

    python tasks.py --tools DIR --bin DIR [--libtmux-rs BIN] [--quick] [--only a,b,c,d]

Four tasks an agent does in tmux, each run through the official MCP Python SDK
(stdio client) with a fixed policy in place of a model: the calls a model
following each server's tool descriptions would make, with that server's
natural tools (read in tools/list and the peers' installed source). Every
system gets a fresh tmux server per task (private socket, -f /dev/null, one
80x24 bash pane at a `$ ` prompt), the same fixtures and the same answer check.

  (a) tests   run a test suite (10 tests, ~2 s, one FAILED, exit 1) in the pane;
              answer: the failing test's name.
  (b) build   a build is already running in the pane (started as the person
              would, not by the agent): a progress line a second for 30 s, then
              3 error lines (one write) and exit 2; answer: the 3 error lines.
  (c) find    20 panes (4 sessions x 5 windows) show log text; one (not the
              first) shows `ERROR`; answer: its pane id.
  (d) follow  a log in the pane grows by a line every 0.5 s for 30 s (60 lines)
              and ends with `-- log closed --`; the agent follows it, reading at
              most once a second (POLL_S, the same pace for every server; a read
              that can wait for output waits, one that cannot is simply
              repeated), and must return all 60 lines, in order, each once.

Per task and system: tool calls (tools/call requests), bytes returned to the
agent, wall time (from the policy's first call to its answer; the MCP session
is opened before), and whether the answer is right. Bytes are what each agent
CLI family gives its model (issue 49): `Gemini B` the UTF-8 of the result's
text content; `Claude/Codex B` the structuredContent as compact JSON when the
result has one, else its text (Claude Code and Codex drop the text when there
is structured content; the peers' text is their structured JSON already).
Ratios are ours over the best peer that answered right (fewest calls, fewest
bytes in each family, each on its own). Prints figures; asserts nothing. --quick (or TASKS_QUICK=1): 5 s instead
of 30 s for (b) and (d). --ours-request-timeout S adds a row of ours whose broker
runs with --request-timeout S: every wait of ours (wait_for_text, capture_since's
waitMs, run_command) is clamped to that, 5 s by default, so a longer wait costs
one call per 5 s where libtmux-mcp allows 30 s and mcp-tmux any.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from driver import Agent  # noqa: E402  (the same stdio session set-up as --peers)
from run import clean_env, systems  # noqa: E402  (how each system is started)

POLL_S = 1.0           # the pace of (d), and of any polling policy
COLS, ROWS = 80, 24
ERROR_PANE = 13        # (c): the index (creation order) of the pane showing ERROR
FAILING_TEST = "test_checksum_mismatch"
BUILD_ERRORS = [
    "error[E0308]: mismatched types --> src/wire.rs:41:17",
    "error[E0425]: cannot find value `len` in this scope --> src/frame.rs:88:9",
    "error: could not compile `proto` (lib) due to 2 previous errors",
]
LOG_END = "-- log closed --"


# ---- the fixtures ------------------------------------------------------------

def fixtures(work: Path, seconds: int) -> dict[str, Any]:
    """The scripts the tasks run, written once into `work`."""
    tests = ["test_parse_header", "test_parse_body", "test_roundtrip", "test_empty_frame", "test_large_frame",
             FAILING_TEST, "test_unicode_payload", "test_timeout", "test_retry", "test_close"]
    lines = ['echo "collected 10 items"']
    for t in tests:
        status = "FAILED" if t == FAILING_TEST else "PASSED"
        lines.append(f'sleep 0.2; echo "tests/test_wire.py::{t} {status}"')
    lines += [f'echo "____ {FAILING_TEST} ____"',
              'echo "E   AssertionError: assert 0x1f == 0x2e"',
              'echo "==== 1 failed, 9 passed in 2.04s ===="', "exit 1"]
    (work / "tests.sh").write_text("\n".join(lines) + "\n")
    errors = "\\n".join(e.replace("`", "\\`") for e in BUILD_ERRORS)
    (work / "build.sh").write_text(
        f'n={seconds}; i=1\n'
        'while [ $i -le $n ]; do echo "[$((i * 100 / n))%] Compiling crate_$i v0.1.$i (build step $i of $n)"; sleep 1; i=$((i + 1)); done\n'
        f'printf "{errors}\\n"\n'
        'exit 2\n')
    lines_n = seconds * 2
    (work / "log.sh").write_text(
        f'i=1; while [ $i -le {lines_n} ]; do echo "12:00:$i INFO req=$i GET /api/items/$i 200 in $((i % 7 + 3)) ms"; sleep 0.5; i=$((i + 1)); done\n'
        f'echo "{LOG_END}"\n')
    panes = []
    for p in range(20):
        f = work / f"pane{p}.txt"
        body = [f"worker-{p} 12:00:0{k} INFO job {p * 10 + k} done in {k + 3} ms" for k in range(8)]
        if p == ERROR_PANE:
            body[5] = f"worker-{p} 12:00:05 ERROR job {p * 10 + 5}: connection to db:5432 refused"
        if p == 4:
            body[3] = f"worker-{p} 12:00:03 WARN job {p * 10 + 3} retried"
        f.write_text("\n".join(body) + "\n")
        panes.append(f)
    return {"tests": work / "tests.sh", "build": work / "build.sh", "log": work / "log.sh",
            "log_lines": lines_n, "panes": panes}


class Server:
    """One tmux server on a private socket: session `main`, one 80x24 bash pane at `$ `."""

    SHELL = "env PS1='$ ' HISTFILE=/dev/null bash --norc --noprofile"

    def __init__(self, tag: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"tmcp-tasks-{tag}-", dir=os.environ.get("TMUX_MCP_TEST_TMPDIR", "/tmp")))
        self.sock = str(self.dir / "sock")
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", str(COLS), "-y", str(ROWS), self.SHELL)
        self.pid = int(self.tmux("display-message", "-p", "#{pid}"))
        self.pane = self.tmux("display-message", "-p", "-t", "main:0.0", "#{pane_id}").strip()
        self.mcp_tmux_config = str(self.dir / "mcp-tmux.toml")
        Path(self.mcp_tmux_config).write_text(f"[defaults]\nsocket_path = {json.dumps(self.sock)}\n")
        self.wait_for(self.pane, lambda t: t.rstrip().endswith("$"))

    def tmux(self, *args: str) -> str:
        p = subprocess.run(["tmux", "-S", self.sock, *args], env=clean_env(), capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=30)
        if p.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:3])} failed: {p.stderr.strip()}")
        return p.stdout

    def wait_for(self, pane: str, ok: Callable[[str], bool]) -> None:
        deadline = time.monotonic() + 15
        while not ok(self.tmux("capture-pane", "-p", "-t", pane)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.sock}: pane {pane} never showed what the fixture needs")
            time.sleep(0.02)

    def type(self, line: str) -> None:
        """What the person types (not an agent's call)."""
        self.tmux("send-keys", "-t", self.pane, "-l", line)
        self.tmux("send-keys", "-t", self.pane, "Enter")

    def twenty(self, files: list[Path]) -> list[str]:
        """(c): the 20 panes, 4 sessions x 5 windows, each showing its file; returns their ids in order."""
        ids = []
        for p, f in enumerate(files):
            cmd = f"cat {f}; exec sleep 100000"
            s = f"svc{p // 5}"
            if p % 5 == 0:
                self.tmux("new-session", "-d", "-s", s, "-x", str(COLS), "-y", str(ROWS), cmd)
            else:
                self.tmux("new-window", "-d", "-t", f"{s}:", cmd)
            ids.append(self.tmux("display-message", "-p", "-t", f"{s}:{p % 5}.0", "#{pane_id}").strip())
        self.tmux("kill-session", "-t", "main")  # after the others: the server stays up
        for pane, f in zip(ids, files):
            last = f.read_text().splitlines()[-1]
            self.wait_for(pane, lambda t, last=last: last in t)
        return ids

    def plan(self) -> dict[str, str]:
        return {"sock": self.sock, "pane": self.pane, "mcp_tmux_config": self.mcp_tmux_config}

    def kill(self) -> None:
        """Exactly this server, by its socket (our broker leaves with it)."""
        try:
            subprocess.run(["tmux", "-S", self.sock, "kill-server"], env=clean_env(), capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=30)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 10
        while Path(f"/proc/{self.pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        shutil.rmtree(self.dir, ignore_errors=True)


# ---- what the agent is given ----------------------------------------------------

class Meter:
    """Every tools/call of one task run: count, text bytes, structured bytes."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.calls = 0
        self.text = 0
        self.structured = 0
        # What Claude Code and Codex give their model: the structured content's
        # compact JSON when there is one, else the text.
        self.model = 0
        self.tools: dict[str, int] = {}

    async def call(self, tool: str, args: dict[str, Any]) -> tuple[str, Any]:
        """The text the model is given, and the structured content (for flow only)."""
        assert self.agent.session is not None
        r = await self.agent.session.call_tool(tool, args)
        self.calls += 1
        self.tools[tool] = self.tools.get(tool, 0) + 1
        text = "".join(getattr(c, "text", "") or "" for c in r.content)
        self.text += len(text.encode())
        if r.structured_content is not None:
            sc = len(json.dumps(r.structured_content, separators=(",", ":"), ensure_ascii=False).encode())
            self.structured += sc
            self.model += sc
        else:
            self.model += len(text.encode())
        if r.is_error:
            raise RuntimeError(f"{tool} failed: {text[:300]}")
        return text, r.structured_content


def strings(text: str) -> str:
    """The text as a model reads it: a JSON answer's string values, one per line."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return "\n".join(out)


def failing_tests(text: str) -> list[str]:
    return sorted(set(re.findall(r"::(test_\w+) FAILED", strings(text))))


def error_lines(text: str) -> list[str]:
    """Lines that start with `error` (after a search result's prefix), once each, in order."""
    seen: list[str] = []
    for line in strings(text).splitlines():
        m = re.search(r"(error(\[E\d+\])?: .*)$", line)
        if m and m.group(1).rstrip() not in seen:
            seen.append(m.group(1).rstrip())
    return seen


def log_reqs(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"INFO req=(\d+) ", strings(text))]


async def pace(since: float) -> None:
    """Sleep until POLL_S after `since` (the start of the previous read)."""
    left = since + POLL_S - time.monotonic()
    if left > 0:
        await anyio.sleep(left)


# ---- the policies: (system kind, task) -> async fn(meter, ctx) -> answer ----------

async def ours_tests(m: Meter, c: dict) -> Any:
    text, _ = await m.call("run_command", {"paneId": c["pane"], "command": f"sh {c['tests']}", "timeoutMs": 60000})
    return failing_tests(text)


async def libtmux_tests(m: Meter, c: dict) -> Any:
    text, _ = await m.call("run_command", {"pane_id": c["pane"], "command": f"sh {c['tests']}", "timeout": 60})
    return failing_tests(text)


async def mcp_tmux_tests(m: Meter, c: dict) -> Any:
    text, _ = await m.call("tmux_run", {"target_pane": c["pane"], "command": f"sh {c['tests']}", "timeout": 60})
    return failing_tests(text)


async def ours_build(m: Meter, c: dict) -> Any:
    # wait_for_text until an error shows (each call is clamped to the request
    # timeout, 5 s by default or @mcp-request-timeout: the result says so and
    # the agent asks again); its answer holds every line the pattern matches
    # (line, then moreLines, in the text too).
    while True:
        text, s = await m.call("wait_for_text", {"paneId": c["pane"], "patterns": ["error"], "timeoutMs": 120000})
        if s.get("outcome") == "matched":
            return error_lines(text)


async def libtmux_build(m: Meter, c: dict) -> Any:
    # Its wait returns the matching lines and the tail (a ceiling of 30 s a call).
    while True:
        text, s = await m.call("wait_for_text", {"pane_id": c["pane"], "patterns": ["error"], "timeout": 120})
        if s.get("found"):
            return error_lines(text)


async def mcp_tmux_build(m: Meter, c: dict) -> Any:
    # Its wait returns the last capture (the screen) with the match.
    while True:
        text, _ = await m.call("tmux_wait_for_text", {"target_pane": c["pane"], "pattern": "error", "timeout": 120})
        if json.loads(text).get("matched"):
            return error_lines(text)


def panes_with_error(text: str) -> list[str]:
    return sorted(set(re.findall(r"^(%\d+) .*ERROR", text, re.M)))


async def ours_find(m: Meter, c: dict) -> Any:
    text, _ = await m.call("search_panes", {"pattern": "ERROR"})
    return panes_with_error(text)


async def libtmux_find(m: Meter, c: dict) -> Any:
    text, _ = await m.call("search_panes", {"pattern": "ERROR", "match_case": True})
    return sorted({x["pane_id"] for x in json.loads(text)["matches"]})


async def mcp_tmux_find(m: Meter, c: dict) -> Any:
    # No search tool: list the panes, capture each until one shows ERROR.
    text, _ = await m.call("tmux_list_panes", {})
    for p in json.loads(text)["panes"]:
        shown, _ = await m.call("tmux_capture_pane", {"target_pane": p["id"]})
        if "ERROR" in json.loads(shown)["content"]:
            return [p["id"]]
    return []


async def ours_follow(m: Meter, c: dict) -> Any:
    text, s = await m.call("capture_since", {"paneId": c["pane"]})
    got, cursor = log_reqs(text), s["cursor"]
    while LOG_END not in text:
        t = time.monotonic()
        # Nothing new yet: the read waits for output instead of returning empty.
        text, s = await m.call("capture_since", {"paneId": c["pane"], "cursor": cursor, "waitMs": 5000})
        got += log_reqs(text)
        cursor = s["cursor"]
        if LOG_END not in text:
            await pace(t)
    return got


async def libtmux_follow(m: Meter, c: dict) -> Any:
    text, s = await m.call("capture_since", {"pane_id": c["pane"]})
    got, cursor = log_reqs(text), s["cursor"]
    while LOG_END not in text:
        t = time.monotonic()
        text, s = await m.call("capture_since", {"pane_id": c["pane"], "cursor": cursor})
        got += log_reqs(text)
        cursor = s["cursor"]
        if LOG_END not in text:
            await pace(t)
    return got


async def mcp_tmux_follow(m: Meter, c: dict) -> Any:
    # No read since a cursor by default (its tmux_stream_* toolset is opt-in):
    # capture the screen each second and keep the lines not seen before.
    got: list[int] = []
    while True:
        t = time.monotonic()
        text, _ = await m.call("tmux_capture_pane", {"target_pane": c["pane"]})
        got += [n for n in log_reqs(text) if n not in got]
        if LOG_END in text:
            return got
        await pace(t)


POLICIES: dict[str, dict[str, Callable[[Meter, dict], Awaitable[Any]]]] = {
    "ours": {"tests": ours_tests, "build": ours_build, "find": ours_find, "follow": ours_follow},
    "libtmux-mcp": {"tests": libtmux_tests, "build": libtmux_build, "find": libtmux_find, "follow": libtmux_follow},
    "mcp-tmux": {"tests": mcp_tmux_tests, "build": mcp_tmux_build, "find": mcp_tmux_find, "follow": mcp_tmux_follow},
}

TASKS = [
    ("tests", "a", "run a test suite in a pane and name the failing test"),
    ("build", "b", "watch a {s}-second build and return its error lines"),
    ("find", "c", "find which of 20 panes shows ERROR"),
    ("follow", "d", "follow a log that grows for {s} s ({n} lines, read at most every {p:g} s), return every line"),
]

POLICY_NOTES = {
    "tests": {"ours": "run_command", "libtmux-mcp": "run_command", "mcp-tmux": "tmux_run"},
    "build": {"ours": "wait_for_text (request timeout a call) until matched; its line and moreLines",
              "libtmux-mcp": "wait_for_text (30 s a call) until found; matched lines + tail",
              "mcp-tmux": "tmux_wait_for_text until matched; the screen"},
    "find": {"ours": "search_panes", "libtmux-mcp": "search_panes", "mcp-tmux": "tmux_list_panes, tmux_capture_pane each until found"},
    "follow": {"ours": "capture_since seed, then with cursor and waitMs each second",
               "libtmux-mcp": "capture_since seed, then with cursor each second",
               "mcp-tmux": "tmux_capture_pane each second, new lines kept"},
}


def family(system: dict[str, Any]) -> str | None:
    name = system["name"]
    if system["kind"] in ("ours", "ours-variant"):
        return "ours"
    for f in ("libtmux-mcp", "mcp-tmux"):
        if name.startswith(f):
            return f
    return None


def expected(task: str, fx: dict[str, Any], ids: list[str] | None) -> Any:
    return {"tests": [FAILING_TEST], "build": BUILD_ERRORS, "find": [ids[ERROR_PANE]] if ids else None,
            "follow": list(range(1, fx["log_lines"] + 1))}[task]


async def run_one(system: dict[str, Any], task: str, fx: dict[str, Any], errlog: Any) -> dict[str, Any]:
    fam = family(system)
    row: dict[str, Any] = {"system": system["name"], "kind": system["kind"], "task": task, "policy": POLICY_NOTES[task].get(fam or "", "")}
    policy = POLICIES.get(fam or "", {}).get(task)
    if policy is None:
        row["error"] = "no policy written for this system"
        return row
    srv = Server(task)
    try:
        ids = srv.twenty(fx["panes"]) if task == "find" else None
        agent = Agent(system, "s", {"servers": {"s": srv.plan()}})
        async with AsyncExitStack() as stack:
            await agent.open(stack, errlog)
            m = Meter(agent)
            ctx = {"pane": srv.pane, "tests": fx["tests"]}
            if task == "build":
                srv.type(f"sh {fx['build']}")
            elif task == "follow":
                srv.type(f"sh {fx['log']}")
                srv.wait_for(srv.pane, lambda t: "INFO req=1 " in t)
            t = time.monotonic()
            try:
                with anyio.fail_after(180):
                    answer = await policy(m, ctx)
                row["answer"] = answer
            except Exception as e:  # noqa: BLE001
                row["error"] = f"{type(e).__name__}: {e}"[:300]
                answer = None
            row.update(wall=time.monotonic() - t, calls=m.calls, text=m.text, structured=m.structured,
                       model=m.model, tools=m.tools)
            want = expected(task, fx, ids)
            row["correct"] = answer == want
            if not row["correct"] and "error" not in row:
                row["error"] = f"answer {short(answer)} != expected {short(want)}"
    except Exception as e:  # noqa: BLE001  (the session did not start, the fixture failed)
        row.pop("calls", None)
        row["error"] = f"{type(e).__name__}: {e}"[:300]
    finally:
        srv.kill()
    return row


def short(v: Any) -> str:
    s = json.dumps(v)
    return s if len(s) < 160 else s[:150] + "..."


def report(rows: list[dict[str, Any]], tasks: list[tuple[str, str, str]], fx: dict[str, Any], seconds: int) -> None:
    for task, letter, title in tasks:
        print(f"\n({letter}) {title.format(s=seconds, n=fx['log_lines'], p=POLL_S)}")
        rs = [r for r in rows if r["task"] == task]
        peers = [r for r in rs if r["kind"] == "peer" and r.get("correct")]
        best_calls = min((r["calls"] for r in peers), default=None)
        best_text = min((r["text"] for r in peers), default=None)
        best_model = min((r["model"] for r in peers), default=None)
        print(f"  {'server':<34} {'calls':>5} {'Claude/Codex B':>14} {'Gemini B':>9} {'wall s':>7} {'correct':>7} "
              f"{'calls/best':>10} {'CC/best':>8} {'Gem/best':>8}  policy")
        for r in rs:
            if "calls" not in r:
                print(f"  {r['system']:<34} not run: {r.get('error')}")
                continue
            ok = "yes" if r["correct"] else "NO"
            mine = r["kind"] in ("ours", "ours-variant")
            rc = f"{r['calls'] / best_calls:.2f}x" if mine and best_calls else ""
            rm = f"{r['model'] / best_model:.2f}x" if mine and best_model else ""
            rt = f"{r['text'] / best_text:.2f}x" if mine and best_text else ""
            used = ", ".join(f"{k} {v}" for k, v in r["tools"].items())
            print(f"  {r['system']:<34} {r['calls']:>5} {r['model']:>14} {r['text']:>9} {r['wall']:>7.2f} {ok:>7} "
                  f"{rc:>10} {rm:>8} {rt:>8}  {r['policy']} [{used}]")
            if not r["correct"]:
                print(f"  {'':<34} {r.get('error', '')}")
        if best_calls is not None:
            ours = next((r for r in rs if r["kind"] == "ours" and r.get("correct")), None)
            if ours:
                print(f"  target (issue 49): in each client family at most the best peer's bytes, (b)-(d) at most half: "
                      f"Claude/Codex ours {ours['model']} B against {best_model} B, Gemini ours {ours['text']} B "
                      f"against {best_text} B (not asserted)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", type=Path, required=True)
    ap.add_argument("--bin", type=Path, required=True)
    ap.add_argument("--libtmux-rs", default=None)
    ap.add_argument("--libtmux-rs-note", default="")
    ap.add_argument("--quick", action="store_true", default=os.environ.get("TASKS_QUICK", "") not in ("", "0"))
    ap.add_argument("--only", default="", help="tasks to run, by letter or name: a,b,c,d")
    ap.add_argument("--ours-request-timeout", type=float, default=None,
                    help="also run ours with its broker started with --request-timeout S (the ceiling of every wait)")
    a = ap.parse_args()
    seconds = 5 if a.quick else 30
    wanted = {x.strip() for x in a.only.split(",") if x.strip()}
    tasks = [t for t in TASKS if not wanted or t[0] in wanted or t[1] in wanted]
    plan_systems = [s for s in systems(a.tools, a.bin, a.libtmux_rs) if s["kind"] != "echo"]
    for s in plan_systems:
        s.pop("vars", None)  # no set-up calls: the session is opened, then the task starts
        if s["kind"] == "ours":
            # run_command is mutating: the agent is allowed that tier.
            s["args"] = ["attach", "-S", "{sock}", "--scope", "server", "--safety", "mutating"]
    work = Path(tempfile.mkdtemp(prefix="tmcp-tasks-run-"))
    if a.ours_request_timeout:
        # attach starts the broker it finds beside its own binary (current_exe, so a
        # copy, not a link): a wrapper there adds --request-timeout.
        rt = work / "ours-rt"
        rt.mkdir()
        shutil.copy2(a.bin / "tmux-mcp", rt / "tmux-mcp")
        (rt / "tmux-mcp-broker").write_text(f'#!/bin/sh\nexec {a.bin / "tmux-mcp-broker"} --request-timeout {a.ours_request_timeout:g} "$@"\n')
        (rt / "tmux-mcp-broker").chmod(0o755)
        ours = next(s for s in plan_systems if s["kind"] == "ours")
        plan_systems.insert(1, {**ours, "name": f"ours, broker --request-timeout {a.ours_request_timeout:g}",
                                "kind": "ours-variant", "command": str(rt / "tmux-mcp")})

    def stop(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    started = time.monotonic()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    try:
        fx = fixtures(work, seconds)
        errlog = open(work / "servers.stderr", "a")
        rows = []
        for task, letter, _ in tasks:
            for s in plan_systems:
                print(f"==> ({letter}) {task}: {s['name']} ...", file=sys.stderr, flush=True)
                rows.append(anyio.run(run_one, s, task, fx, errlog))
        from importlib.metadata import version
        print(f"\nscripted agent tasks, ours against the peers: {os.uname().nodename}, {os.cpu_count()} CPUs, "
              f"{subprocess.run(['tmux', '-V'], capture_output=True, text=True).stdout.strip()}, Python SDK mcp {version('mcp')}, "
              f"our binaries {a.bin}{', --quick' if a.quick else ''}; load at start {load}")
        print("calls: tools/call requests; Claude/Codex B: what Claude Code and Codex give their model, the "
              "structuredContent as compact JSON, else the text; Gemini B: the result's text content (what Gemini "
              "gives its model; the peers' text is their JSON); wall: first call to answer; "
              "ratios: ours / the best peer that answered right, in each family")
        if not a.libtmux_rs:
            print(f"libtmux-rs tmux-mcp 0.1.0-alpha.8: not measured ({a.libtmux_rs_note or 'run with --with-libtmux-rs'})")
        elif not any(family(s) for s in plan_systems if s["name"].startswith("libtmux-rs")):
            print("libtmux-rs tmux-mcp 0.1.0-alpha.8: installed, but no task policies are written for it yet")
        report(rows, tasks, fx, seconds)
        raw = Path(tempfile.gettempdir()) / "tmux-mcp-tasks.json"
        raw.write_text(json.dumps(rows, indent=1))
        print(f"\nraw rows: {raw}; load at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"wall time {time.monotonic() - started:.0f} s")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt as e:
        print(f"scripts/bench --tasks: interrupted ({e or 'Ctrl-C'})", file=sys.stderr)
        sys.exit(130)
