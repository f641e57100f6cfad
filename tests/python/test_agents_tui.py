"""The real agent CLIs' interactive TUIs in a tmux pane, driven and read only
through our tools, against the scripted fake model (issue 19 item 5).

For each of Claude Code, Codex CLI, Gemini CLI, aider and opencode (pinned;
installed into the cache outside the clone by agents/npm_tools.py and
agents/aider.py),
agents/tui.py starts the TUI typed into bash in a pane of a private tmux
server (its own socket, -f /dev/null), pointed at a FakeModelServer that
answers by the prompt's words (agents/fake_model.py `interactive_script`):
a plain answer, a slowly streamed one (`SLOW`), a call of the CLI's own shell
tool that writes hi.txt (`SHELL`: its approval dialog). Then, through the
official MCP Python SDK, with every structured result validated against the
published output schema: list_agents finds the CLI and its version from the
pane's processes; send_prompt delivers a three-line prompt as one message
(what the fake model received is compared); wait_for_agent sees it work
while the answer streams, wait for approval (the question and the command
shown), and wait for input again once send_keys approved (the command ran:
hi.txt exists); the CLI's exit command makes it `exited`. Nothing leaves
loopback: the fake server is also the CLIs' proxy and refuses every other
connection (Claude Code tries downloads.claude.ai and github.com). The states compared are the
ones the fake model's script produced.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import anyio
import pytest

import leftovers
from agents import codex as codex_cli
from agents import tui
from agents.fake_model import (AnthropicMessages, FakeModelServer, GeminiGenerateContent, OpenAIChat,
                               OpenAIResponses, interactive_script)
from harness import BROKER_NAME, async_test, call, call_ok, mcp_session

WIRES = {"claude": AnthropicMessages, "codex": OpenAIResponses, "gemini": GeminiGenerateContent,
         "aider": OpenAIChat, "opencode": OpenAIChat}
CLI_NAMES = {"claude": "claude-code", "codex": "codex", "gemini": "gemini", "aider": "aider",
             "opencode": "opencode"}
EXIT = {"claude": "/exit", "codex": "/quit", "gemini": "/quit", "aider": "/exit", "opencode": "/exit"}
QUESTION = {"claude": "Do you want to proceed?", "codex": "Would you like to run the following command?",
            "gemini": "Allow execution of", "aider": "Run shell command?", "opencode": "Permission required"}
PROMPT = "Say hello\nin a second line\nand a third"


async def wait_state(s, pane: str, states: list[str], timeout_ms: int = 60_000) -> dict:
    """wait_for_agent, called again while it times out (each call is capped
    at the broker's request timeout) until `timeout_ms` passed."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        w = await call_ok(s, "wait_for_agent", {"paneId": pane, "states": states, "timeoutMs": timeout_ms})
        if w["outcome"] == "reached" or time.monotonic() >= deadline:
            break
    assert w["outcome"] == "reached", w
    return w["agent"]


def end_left_in(directory: Path) -> list[str]:
    """End what still runs from this test's directory (its command line,
    environment or working directory names it), and only that: the broker of
    the killed tmux server exits by itself and removes its runtime files
    (given up to 5 s); the rest (Codex CLI's app-server daemon outlives its
    TUI, in a session of its own) gets SIGTERM, and SIGKILL only when still
    there 5 s later. Returns the processes that needed a signal."""
    def brokers() -> list[str]:
        return [p for p in leftovers.processes(str(directory)) if BROKER_NAME in p.split(" ", 2)[1]]

    deadline = time.monotonic() + 5
    while brokers() and time.monotonic() < deadline:
        time.sleep(0.05)
    signalled = leftovers.processes(str(directory))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for line in leftovers.processes(str(directory)):
            try:
                os.kill(int(line.split()[0]), sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while leftovers.processes(str(directory)) and time.monotonic() < deadline:
            time.sleep(0.05)
    return signalled


def user_prompts(fake: FakeModelServer, name: str) -> list[str]:
    """What the person's turns sent the model (side requests offer no tools)."""
    return [t.prompt for t in fake.turns() if t.tools or name == "aider"]


@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "aider", "opencode"])
@async_test(timeout=420)
async def test_a_real_agent_tui_is_driven_and_read_through_our_tools(name):
    script = interactive_script(slow_seconds=8.0, slow_wait=2.0, shell_as_text=name == "aider")
    work = Path(os.environ.get("TMUX_MCP_TEST_TMPDIR") or "/tmp")
    daemon_dir_existed = codex_cli.DAEMON_DIR.exists()
    with FakeModelServer(WIRES[name](), script) as fake:
        home = Path(tempfile.mkdtemp(prefix=f"agtui-{name}-", dir=work))
        launch = tui.LAUNCHERS[name](fake, home / "home")
        srv = tui.TuiServer(dir=home / "tmux")
        srv.dir.mkdir()
        try:
            pane = srv.start(launch, via_shell=True)
            # First-run dialogs are the harness's business (not a state).
            screen = srv.settle(2.0, 60)
            tui.dismiss_startup_dialogs(srv, name, screen)
            async with mcp_session(srv.sock, "--safety", "mutating") as s:
                try:
                    await drive(s, name, launch, pane, fake)
                except AssertionError as e:
                    raise AssertionError(f"{e}\n--- the pane's screen ---\n{srv.screen()}") from None
        finally:
            srv.close()
            end_left_in(home)
            # Codex CLI keeps its daemon's sockets in a directory of its own
            # in /tmp (whatever TMPDIR says): remove this test's.
            codex_cli.remove_daemon_sockets(home, daemon_dir_existed)
            shutil.rmtree(home, ignore_errors=True)


async def drive(s, name: str, launch: tui.Launch, pane: str, fake: FakeModelServer) -> None:
    a = await wait_state(s, pane, ["waiting_for_input"])
    out = await call_ok(s, "list_agents")
    [found] = [x for x in out["agents"] if x["paneId"] == pane]
    assert found["cli"] == CLI_NAMES[name] and found["foreground"] is True, found
    if name != "aider" or found.get("version"):
        assert found["version"] == launch.version, found
    assert found["rule"].startswith(f"{CLI_NAMES[name]} {launch.version}: "), found

    # A three-line prompt arrives as one message.
    sent = await call_ok(s, "send_prompt", {"paneId": pane, "text": PROMPT, "timeoutMs": 30_000})
    assert sent["submitted"] is True, sent
    deadline = time.monotonic() + 20
    while not any("a third" in p for p in user_prompts(fake, name)):
        assert time.monotonic() < deadline, f"the fake model got no prompt: {sent}"
        await anyio.sleep(0.1)
    await wait_state(s, pane, ["waiting_for_input"])
    # One message holds all three lines (Claude Code puts a system reminder
    # before the person's text, aider its edit rules after it).
    prompts = user_prompts(fake, name)
    assert [p for p in prompts if "a second line" in p or "a third" in p] == [prompts[-1]], prompts
    assert PROMPT in prompts[-1], prompts

    # A streamed answer: working, then waiting for input again.
    sent = await call_ok(s, "send_prompt", {"paneId": pane, "text": "SLOW: tell me a long story"})
    assert sent["submitted"] is True, sent
    w = await wait_state(s, pane, ["working"], 20_000)
    assert w["lines"], w
    w = await wait_state(s, pane, ["waiting_for_input", "waiting_for_approval"])
    assert w["state"] == "waiting_for_input", w

    # Its own shell tool: the approval dialog, with the command.
    sent = await call_ok(s, "send_prompt", {"paneId": pane, "text": "SHELL: please run a command"})
    assert sent["submitted"] is True, sent
    w = await wait_state(s, pane, ["waiting_for_approval", "waiting_for_input"])
    assert w["state"] == "waiting_for_approval", w
    assert QUESTION[name] in w["question"], w
    assert any("echo hi > hi.txt" in line for line in w["lines"]), w
    r = await call(s, "send_prompt", {"paneId": pane, "text": "not now"})
    assert r.is_error and "not waiting for input" in r.text and "nothing was sent" in r.text, r
    # A dialog may ignore keys for a moment after it opens (against a key
    # pressed by accident): a person reads it first, so does this test.
    await anyio.sleep(1.0)
    await call_ok(s, "send_keys", {"paneId": pane, "keys": ["Enter"]})
    w = await wait_state(s, pane, ["waiting_for_input"])
    deadline = time.monotonic() + 10
    while not (launch.cwd / "hi.txt").exists():
        assert time.monotonic() < deadline, "the approved command did not run"
        await anyio.sleep(0.1)

    # Its exit command: exited.
    # Typed, then Enter once its command menu has opened (Codex CLI takes an
    # Enter pressed at once for the menu's).
    await call_ok(s, "send_keys", {"paneId": pane, "text": EXIT[name]})
    await anyio.sleep(1.0)
    await call_ok(s, "send_keys", {"paneId": pane, "keys": ["Enter"]})
    w = await wait_state(s, pane, ["exited"], 30_000)
    out = await call_ok(s, "list_agents")
    assert [(x["paneId"], x["state"]) for x in out["agents"]] == [(pane, "exited")], out
