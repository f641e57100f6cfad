"""`scripts/bench --peers`, the official MCP Python SDK driver (stdio client).

    python driver.py PLAN.json OUT.json

PLAN.json (written by run.py) names the tmux servers (private sockets), the
systems (a server command per tmux server) and, per system, the tool calls that
capture one pane, list every pane, read a one-line delta. driver.mjs measures the
same plan through the TypeScript SDK; the order of work is the same in both.
Every measurement is interleaved round by round (system A, B, C, …, then A, B, C
again) so load noise hits every system alike. Writes the raw figures (sorted
milliseconds, result sizes, failure counts) to OUT.json; prints nothing and
asserts nothing about speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from importlib.metadata import version
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

now = time.perf_counter


def subst(value: Any, names: dict[str, str]) -> Any:
    """The plan's "{name}" placeholders, replaced (whole strings only)."""
    if isinstance(value, str) and value.startswith("{") and value.endswith("}") and value[1:-1] in names:
        return names[value[1:-1]]
    if isinstance(value, dict):
        return {k: subst(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [subst(v, names) for v in value]
    return value


def dig(value: Any, path: list[str]) -> Any:
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def result_json(result: Any) -> str:
    """The CallToolResult as JSON, as a server writes it on the wire."""
    return result.model_dump_json(by_alias=True, exclude_none=True)


class Agent:
    """One stdio session of one system on one tmux server."""

    def __init__(self, system: dict[str, Any], server: str, plan: dict[str, Any]) -> None:
        self.system = system
        self.server = server
        # The server's socket, pane, fifo, config file: what "{…}" in the plan may name.
        self.names: dict[str, str] = dict(plan["servers"][server]) if server else {}
        self.session: ClientSession | None = None

    def params(self) -> StdioServerParameters:
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        env.update(subst(self.system.get("env", {}), self.names))
        return StdioServerParameters(command=self.system["command"], args=subst(self.system["args"], self.names), env=env)

    async def open(self, stack: AsyncExitStack, errlog: Any) -> None:
        read, write = await stack.enter_async_context(stdio_client(self.params(), errlog=errlog))
        self.session = await stack.enter_async_context(ClientSession(read, write, read_timeout_seconds=120))
        await self.session.initialize()
        await self.session.list_tools()  # the SDK checks structured results against these schemas
        for name, how in self.system.get("vars", {}).items():
            r = await self.session.call_tool(how["tool"], how.get("args", {}))
            self.names[name] = str(dig(r.structured_content, how["path"]))

    async def call(self, call: dict[str, Any], extra: dict[str, str] | None = None) -> tuple[float, Any]:
        args = subst(call["args"], {**self.names, **(extra or {})})
        assert self.session is not None
        t = now()
        r = await self.session.call_tool(call["tool"], args)
        took = (now() - t) * 1000.0
        # The seed family's envelope says {ok:false} for a refusal (capacity …).
        if r.is_error or (isinstance(r.structured_content, dict) and r.structured_content.get("ok") is False):
            raise RuntimeError(f"{call['tool']}: {result_json(r)[:300]}")
        return took, r


class Row:
    def __init__(self, system: str, tool: str | None) -> None:
        self.system, self.tool = system, tool
        self.ms: list[float] = []
        self.bytes = 0
        self.failed = 0
        self.error = ""
        self.count = 0
        self.rate: list[float] = []

    def fail(self, e: BaseException) -> None:
        self.failed += 1
        self.error = self.error or f"{type(e).__name__}: {e}"[:300]

    def out(self) -> dict[str, Any]:
        return {"system": self.system, "tool": self.tool, "ms": sorted(self.ms), "bytes": self.bytes,
                "failed": self.failed, "error": self.error, "rate": self.rate}


def tmux_capture(sock: str, pane: str) -> str:
    return subprocess.run(["tmux", "-S", sock, "capture-pane", "-p", "-t", pane], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=15).stdout


async def sequential(plan: dict[str, Any], agents: dict[tuple[str, str], Agent], kind: str, server: str, n: int) -> list[dict]:
    """`n` rounds; in each, every system's `kind` calls once, in plan order."""
    rows: list[tuple[Agent, dict, Row]] = []
    for s in plan["systems"]:
        calls = s["ops"].get(kind)
        if calls is None:
            rows.append((None, None, Row(s["name"], None)))  # type: ignore[arg-type]
            continue
        for c in calls:
            row = Row(s["name"], c.get("label", c["tool"]))
            agent = agents.get((s["name"], "" if s.get("serverless") else server))
            if agent is None:
                row.error = f"did not start on the {server} server"
            rows.append((agent, c, row))
    for agent, c, row in rows:  # warm: first-call work (caches, pidfd identities) is not measured
        if agent is not None:
            try:
                await agent.call(c)
            except Exception as e:  # noqa: BLE001
                row.fail(e)
    for _ in range(n):
        for agent, c, row in rows:
            if agent is None or row.failed > 3:
                continue
            try:
                took, r = await agent.call(c)
                row.ms.append(took)
                row.bytes = len(result_json(r))
            except Exception as e:  # noqa: BLE001
                row.fail(e)
    return [row.out() for _, _, row in rows]


async def delta(plan: dict[str, Any], agents: dict[tuple[str, str], Agent], n: int) -> list[dict]:
    """Each round: one line appended to the pane (and seen there), then every
    system reads what is new since its cursor."""
    srv = plan["servers"]["one"]
    rows = []
    for s in plan["systems"]:
        d = s["ops"].get("delta")
        if d is None:
            rows.append((None, None, Row(s["name"], None), None))
            continue
        for c in d:
            agent = agents.get((s["name"], "" if s.get("serverless") else "one"))
            row = Row(s["name"], c.get("label", c["tool"]))
            state: dict[str, Any] = {"cursor": None}
            if agent is None:
                row.error = "did not start on the one server"
                rows.append((None, c, row, state))
                continue
            try:
                _, r = await agent.call(c["first"])
                state["cursor"] = str(dig(r.structured_content, c["cursor"])) if c["cursor"] else ""
            except Exception as e:  # noqa: BLE001
                row.fail(e)
            rows.append((agent, c, row, state))
    missing = {id(r): 0 for _, _, r, _ in rows}
    for i in range(n):
        line = f"appended {i} {os.getpid()} of the delta bench"
        with open(srv["fifo"], "w") as f:
            f.write(line + "\n")
        deadline = now() + 10
        while line not in tmux_capture(srv["sock"], srv["pane"]):
            if now() > deadline:
                raise RuntimeError(f"the pane never showed {line!r}")
            await anyio.sleep(0.002)
        for agent, c, row, state in rows:
            if agent is None or state["cursor"] is None or row.failed > 3:
                continue
            try:
                took, r = await agent.call(c["next"], {"cursor": state["cursor"]})
                text = result_json(r)
                row.ms.append(took)
                row.bytes = max(row.bytes, len(text))
                if c["cursor"] and line not in text:
                    missing[id(row)] += 1
                if c["cursor"]:
                    state["cursor"] = str(dig(r.structured_content, c["cursor"]))
            except Exception as e:  # noqa: BLE001
                row.fail(e)
    out = []
    for _, _, row, _ in rows:
        o = row.out()
        o["missing"] = missing[id(row)]
        out.append(o)
    return out


async def hold(agent: Agent, pool: list[Agent], gate: anyio.Semaphore, started: list[int], done: anyio.Event, errlog: Any) -> None:
    """Open `agent` (at most `gate`'s count of starts at once) and keep its session
    until `done`: the session is entered and left in this task, as anyio wants."""
    try:
        async with AsyncExitStack() as stack:
            async with gate:
                await agent.open(stack, errlog)
            pool.append(agent)
            started[0] += 1
            await done.wait()
    except Exception as e:  # noqa: BLE001
        started[0] += 1
        print(f"{agent.system['name']}: an agent did not start: {e}", file=sys.stderr)


async def concurrency(plan: dict[str, Any], errlog: Any) -> list[dict]:
    """For N in plan["agents"]: N agents of each system capturing the same pane in
    a loop for plan["window_s"] seconds, against N loops of a tmux capture-pane
    fork+exec. Agents are opened once per system (the largest N) and reused."""
    srv = plan["servers"]["one"]
    most = max(plan["agents"])
    rows: dict[tuple[str, str, int], Row] = {}
    done = anyio.Event()
    async with anyio.create_task_group() as holders:
        pools: list[tuple[dict, dict, list[Agent]]] = []
        gate, started, expected = anyio.Semaphore(4), [0], 0
        for s in plan["systems"]:
            if s.get("serverless") or not s["ops"].get("capture"):
                continue
            pool: list[Agent] = []
            for _ in range(most):
                holders.start_soon(hold, Agent(s, "one", plan), pool, gate, started, done, errlog)
                expected += 1
            for c in s["ops"]["capture"]:
                pools.append((s, c, pool))
        while started[0] < expected:
            await anyio.sleep(0.05)
        for _ in range(plan["concurrency_rounds"]):
            for n in plan["agents"]:
                # tmux itself: N loops of fork+exec `tmux capture-pane`.
                row = rows.setdefault(("tmux capture-pane", "fork+exec", n), Row("tmux capture-pane", "fork+exec"))
                count = [0]
                end = now() + plan["window_s"]

                async def fork_loop(row=row, count=count, end=end) -> None:
                    while now() < end:
                        p = await anyio.run_process(["tmux", "-S", srv["sock"], "capture-pane", "-p", "-t", srv["pane"]], check=False)
                        if p.returncode == 0:
                            count[0] += 1
                        else:
                            row.failed += 1

                t = now()
                async with anyio.create_task_group() as tg:
                    for _ in range(n):
                        tg.start_soon(fork_loop)
                row.rate.append(count[0] / (now() - t))
                for s, c, pool in pools:
                    row = rows.setdefault((s["name"], c["tool"], n), Row(s["name"], c["tool"]))
                    if len(pool) < n:
                        row.error = f"only {len(pool)} agents started"
                        continue
                    count = [0]
                    end = now() + plan["window_s"]

                    async def agent_loop(a: Agent, c=c, row=row, count=count, end=end) -> None:
                        while now() < end:
                            try:
                                await a.call(c)
                                count[0] += 1
                            except Exception as e:  # noqa: BLE001
                                row.fail(e)

                    t = now()
                    async with anyio.create_task_group() as tg:
                        for a in pool[:n]:
                            tg.start_soon(agent_loop, a)
                    row.rate.append(count[0] / (now() - t))
        done.set()
    return [dict(r.out(), agents=n, ms=[]) for (_, _, n), r in rows.items()]


async def cold(plan: dict[str, Any], errlog: Any, n: int) -> list[dict]:
    """Spawn the server command, `initialize`, `tools/list` answered; then close."""
    rows = [(s, Row(s["name"], "initialize + tools/list")) for s in plan["systems"]]
    for _ in range(n):
        for s, row in rows:
            agent = Agent({**s, "vars": {}}, "" if s.get("serverless") else "one", plan)
            try:
                t = now()
                async with AsyncExitStack() as stack:
                    await agent.open(stack, errlog)
                    row.ms.append((now() - t) * 1000.0)
            except Exception as e:  # noqa: BLE001
                row.fail(e)
    return [r.out() for _, r in rows]


_last = [now()]


def phase(name: str) -> None:
    """How long each part took, on stderr: what bounds the run's length."""
    print(f"    python driver: {name} {now() - _last[0]:.0f} s", file=sys.stderr, flush=True)
    _last[0] = now()


async def main(plan_path: str, out_path: str) -> None:
    plan = json.load(open(plan_path))
    out: dict[str, Any] = {"driver": "Python SDK", "sdk": f"mcp {version('mcp')}", "ops": {}, "vars": {}}
    rounds, big = plan["rounds"], plan["rounds_big"]
    errlog = open(plan["errlog"] + ".python", "a")
    agents: dict[tuple[str, str], Agent] = {}
    async with AsyncExitStack() as stack:
        for s in plan["systems"]:
            for server in ([""] if s.get("serverless") else list(plan["servers"])):
                a = Agent(s, server, plan)
                try:
                    await a.open(stack, errlog)
                except Exception as e:  # noqa: BLE001
                    out.setdefault("start_errors", {})[f"{s['name']}@{server}"] = f"{type(e).__name__}: {e}"[:300]
                    continue
                agents[(s["name"], server)] = a
                out["vars"][f"{s['name']}@{server}"] = {k: a.names[k] for k in s.get("vars", {})}
        phase("sessions")
        live = {name for name, _ in agents}
        plan = {**plan, "systems": [s for s in plan["systems"] if s["name"] in live]}
        out["ops"]["capture_one"] = await sequential(plan, agents, "capture", "one", rounds)
        for server in plan["servers"]:
            if server.startswith("panes"):
                out["ops"][f"capture_{server}"] = await sequential(plan, agents, "capture", server, big)
        out["ops"]["capture_big"] = await sequential(plan, agents, "capture", "big", big)
        phase("captures")
        out["ops"]["list_big"] = await sequential(plan, agents, "list", "big", big)
        phase("listing")
        out["ops"]["delta"] = await delta(plan, agents, rounds)
        phase("delta")
    out["ops"]["concurrency"] = await concurrency(plan, errlog)
    phase("concurrency")
    out["ops"]["cold"] = await cold(plan, errlog, plan["rounds_cold"])
    phase("cold starts")
    json.dump(out, open(out_path, "w"))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
