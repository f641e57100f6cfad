"""list_agents and wait_for_agent through the official MCP Python SDK, with a
stand-in TUI (agents/fake_tui.py) that shows real screens captured from the
CLIs (agents/screens/) under the CLI's command name: discovery from the
pane's processes (not the title), the state and its deciding lines, the
session filter,
`exited` once the agent is gone, the event-driven wait, and bad input.
Whether the real CLIs' screens are recognised as they run is checked by the
tests with the real CLIs (test_agents_tui.py).

Every structuredContent is validated against the published outputSchema with
jsonschema (`harness.call`)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import anyio

from harness import async_test, call, call_ok, list_tools, mcp_session, wait_until

HERE = Path(__file__).resolve().parent
SCREENS = HERE / "agents" / "screens"
FAKE = HERE / "agents" / "fake_tui.py"


def screens_of(cli_dir: str) -> Path:
    d = SCREENS / cli_dir
    assert (d / "idle-start-1.txt").is_file(), f"no captured screens in {d}"
    return d


def fake_cli(srv, command: str) -> Path:
    """A copy of the stand-in TUI named like the CLI's launcher."""
    bindir = srv.dir / "bin"
    bindir.mkdir(exist_ok=True)
    path = bindir / command
    shutil.copy(FAKE, path)
    return path


async def shell_pane(srv, window: str = "") -> str:
    args = ["new-window", "-d", "-P", "-F", "#{pane_id}"]
    if window:
        args += ["-n", window]
    pane = srv.tmux(*args, "env", "PS1=$ ", "HISTFILE=/dev/null", "bash", "--norc", "--noprofile")
    await wait_until(lambda: "$" in srv.tmux("capture-pane", "-p", "-t", pane))
    return pane


async def start_agent(srv, pane: str, command: str, screens: Path) -> None:
    """Types the launch line into the pane's shell, as a person would."""
    script = fake_cli(srv, command)
    srv.tmux("send-keys", "-t", pane, "-l", f"{sys.executable} {script} {screens}")
    srv.tmux("send-keys", "-t", pane, "Enter")
    first = (screens / "idle-start-1.txt").read_text().strip().splitlines()[-1].strip()
    await wait_until(lambda: first in srv.tmux("capture-pane", "-p", "-t", pane))


def agent_pid(srv, pane: str, command: str) -> int:
    """The pid of the stand-in on the pane's terminal, from /proc."""
    shell = int(srv.tmux("display-message", "-p", "-t", pane, "#{pane_pid}"))
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
            argv = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == shell and any(a.endswith(b"/" + command.encode()) for a in argv):
            return int(entry)
    raise AssertionError(f"no {command} process under {shell}")


@async_test(timeout=60)
async def test_list_agents_finds_the_cli_from_its_processes_and_reads_its_state(tmux_server):
    srv = tmux_server
    screens = screens_of("claude-2.1.332")
    agent = await shell_pane(srv, "work")
    plain = await shell_pane(srv, "claude")  # a window *named* claude runs no agent
    await start_agent(srv, agent, "claude", screens)
    async with mcp_session(srv) as s:
        tools = await list_tools(s)
        assert tools["list_agents"].annotations.read_only_hint is True
        assert tools["wait_for_agent"].annotations.read_only_hint is True
        out = await call_ok(s, "list_agents")
        assert [a["paneId"] for a in out["agents"]] == [agent], out
        a = out["agents"][0]
        assert a["cli"] == "claude-code" and a["foreground"] is True, a
        assert a["pid"] == agent_pid(srv, agent, "claude"), a
        assert a["state"] == "waiting_for_input", a
        assert a["rule"].startswith("claude-code 2.1.332: "), a
        assert a["lines"] and all(line in (screens / "idle-start-1.txt").read_text() for line in a["lines"]), a
        assert out["panesScanned"] == 3, out
        assert plain not in [x["paneId"] for x in out["agents"]]

        # Each state the CLI's table knows, from the screen alone.
        for key, state in (("w", "working"), ("a", "waiting_for_approval"), ("i", "waiting_for_input")):
            srv.tmux("send-keys", "-t", agent, "-l", key)
            w = await call_ok(s, "wait_for_agent", {"paneId": agent, "states": [state], "timeoutMs": 5000})
            assert w["outcome"] == "reached" and w["agent"]["state"] == state, w
            assert w["agent"]["lines"], w
            if state == "waiting_for_approval":
                q = w["agent"]["question"]
                assert q and q in (screens / "approval-1.txt").read_text(), w
            else:
                assert "question" not in w["agent"], w

        # A screen no rule knows is unknown, never a guess.
        srv.tmux("send-keys", "-t", agent, "-l", "u")
        await wait_until(lambda: "nothing any rule knows" in srv.tmux("capture-pane", "-p", "-t", agent))
        out = await call_ok(s, "list_agents")
        a = out["agents"][0]
        assert a["state"] == "unknown" and a["lines"] == [] and "rule" not in a, a
        assert "No rule" in a["note"], a

        # Its exit: the shell's prompt comes back; the wait sees it as it happens.
        async with anyio.create_task_group() as tg:
            got: dict = {}

            async def wait_exit():
                got["w"] = await call_ok(s, "wait_for_agent", {"paneId": agent, "states": ["exited"], "timeoutMs": 8000})

            tg.start_soon(wait_exit)
            await anyio.sleep(0.3)
            srv.tmux("send-keys", "-t", agent, "-l", "q")
        w = got["w"]
        assert w["outcome"] == "reached" and w["agent"]["state"] == "exited", w
        assert w["waitedMs"] < 8000, w
        out = await call_ok(s, "list_agents")
        assert [(a["paneId"], a["state"]) for a in out["agents"]] == [(agent, "exited")], out
        assert "process is gone" in out["agents"][0]["note"], out


@async_test(timeout=40)
async def test_list_agents_by_session_and_bad_input_changes_nothing(tmux_server):
    srv = tmux_server
    screens = screens_of("claude-2.1.332")
    srv.tmux("new-session", "-d", "-s", "other")
    other = srv.tmux("new-window", "-d", "-t", "other:", "-P", "-F", "#{pane_id}",
                     "env", "PS1=$ ", "HISTFILE=/dev/null", "bash", "--norc", "--noprofile")
    await wait_until(lambda: "$" in srv.tmux("capture-pane", "-p", "-t", other))
    await start_agent(srv, other, "claude", screens)
    main_pane = srv.tmux("display-message", "-p", "-t", "main:0.0", "#{pane_id}")
    async with mcp_session(srv, "--scope", "server") as s:
        out = await call_ok(s, "list_agents", {"session": "other"})
        assert [a["paneId"] for a in out["agents"]] == [other], out
        out = await call_ok(s, "list_agents", {"session": "main"})
        assert out["agents"] == [] and out["panesScanned"] == 1, out
        before = srv.tmux("capture-pane", "-p", "-t", other)
        for args, field in (
            ({"paneId": other, "states": ["bogus"]}, "states"),
            ({"paneId": other, "states": []}, "states"),
            ({"paneId": "pane-1"}, "paneId"),
            ({"paneId": other, "timeoutMs": 0}, "timeoutMs"),
        ):
            r = await call(s, "wait_for_agent", args)
            assert r.is_error and field in r.text, (args, r)
        r = await call(s, "list_agents", {"session": "nope"})
        assert r.is_error and "session" in r.text and "nope" in r.text, r
        # A pane that runs no agent: a clear error naming its command.
        r = await call(s, "wait_for_agent", {"paneId": main_pane, "timeoutMs": 500})
        assert r.is_error and "no coding-agent CLI" in r.text and "Nothing was sent" in r.text, r
        assert srv.tmux("capture-pane", "-p", "-t", other) == before


@async_test(timeout=60)
async def test_a_screen_that_looks_idle_while_an_answer_streams_is_told_by_the_writes(tmux_server):
    """Codex CLI 0.171.0 shows the idle screen while an answer streams in:
    its table's rows need the terminal's activity (quiet for 1 s, or being
    written), which list_agents watches and wait_for_agent takes from its
    events."""
    srv = tmux_server
    screens = screens_of("codex-0.171.0")
    pane = await shell_pane(srv)
    await start_agent(srv, pane, "codex", screens)
    async with mcp_session(srv) as s:
        out = await call_ok(s, "list_agents")
        a = out["agents"][0]
        # The start screen is its own row (no answer on it yet: issue 38
        # item 6); the quiet row is what the wait below ends on.
        assert (a["cli"], a["state"]) == ("codex", "waiting_for_input"), a
        assert "the start screen" in a["rule"], a
        srv.tmux("send-keys", "-t", pane, "-l", "s")
        await wait_until(lambda: "word3" in srv.tmux("capture-pane", "-p", "-t", pane))
        out = await call_ok(s, "list_agents")
        a = out["agents"][0]
        assert a["state"] == "working" and "streaming" in a["rule"], a
        w = await call_ok(s, "wait_for_agent", {"paneId": pane, "states": ["working"], "timeoutMs": 5000})
        assert w["agent"]["state"] == "working", w
        # Streaming stops (the idle screen stays): waiting once quiet for 1 s.
        async with anyio.create_task_group() as tg:
            got: dict = {}

            async def wait_input():
                got["w"] = await call_ok(s, "wait_for_agent", {"paneId": pane, "timeoutMs": 8000})

            tg.start_soon(wait_input)
            await anyio.sleep(1.5)
            assert "w" not in got, f"the wait ended while the answer streamed: {got}"
            srv.tmux("send-keys", "-t", pane, "-l", "i")
        w = got["w"]
        assert w["outcome"] == "reached" and w["agent"]["state"] == "waiting_for_input", w
        assert w["waitedMs"] >= 2400, w
