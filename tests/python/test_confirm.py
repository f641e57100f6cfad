"""Asking the person before destructive actions (`attach --confirm`,
`@mcp-confirm on`), through the official MCP SDK's elicitation callback in
both protocol eras: `initialize` (the broker sends `elicitation/create` during
the call) and 2026-07-28 (`input_required`, then the SDK's retry with the
answer). The kill, respawn and close tools name exactly what they end; only an
accepted question lets anything reach tmux; a client that cannot ask is
refused; without --confirm nothing is asked."""

from __future__ import annotations

import shutil
import subprocess
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import pytest
from mcp import Client, MCPError, StdioServerParameters, types

from harness import BIN, TmuxServer, async_test, call, clean_env, mcp_session, require_binary, validator_for_schema

ERAS = ["legacy", "auto"]  # auto: the SDK discovers 2026-07-28 and adopts it


class Person:
    """The elicitation callback: records each question and answers `action`."""

    def __init__(self, action: str = "accept") -> None:
        self.action = action
        self.questions: list[str] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.questions.append(params.message)
        return types.ElicitResult(action=self.action, content={} if self.action == "accept" else None)


@asynccontextmanager
async def client(server, mode: str, person: Person | None, *extra: str) -> AsyncIterator[Client]:
    require_binary()
    params = StdioServerParameters(command=str(BIN), args=["attach", "-S", server.sock, *extra],
                                   env=clean_env())
    async with Client(params, mode=mode, elicitation_callback=person, read_timeout_seconds=20) as c:
        yield c


async def checked(c: Client, name: str, args: dict[str, Any]) -> types.CallToolResult:
    """tools/call, its structuredContent validated against the published outputSchema."""
    result = await c.call_tool(name, args)
    tool = next(t for t in (await c.list_tools()).tools if t.name == name)
    if result.structured_content is not None and tool.output_schema is not None:
        errors = list(validator_for_schema(tool.output_schema).iter_errors(result.structured_content))
        assert not errors, (name, [e.message for e in errors], result)
    return result


def text(result: types.CallToolResult) -> str:
    return "".join(getattr(b, "text", "") for b in result.content)


def panes(server) -> dict[str, str]:
    """pane id -> pid, now."""
    out = server.tmux("list-panes", "-a", "-F", "#{pane_id} #{pane_pid}")
    return dict(line.split() for line in out.splitlines())


def two_panes(server) -> tuple[str, str]:
    """A second pane running `sleep` in main; returns (its id, its pid)."""
    new = server.tmux("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "sleep 1000").strip()
    return new, panes(server)[new]


@pytest.mark.parametrize("mode", ERAS)
@async_test(60)
async def test_kill_asks_names_the_pane_and_acts_only_when_accepted(tmux_server, mode):
    pane, pid = two_panes(tmux_server)
    no = Person("decline")
    async with client(tmux_server, mode, no, "--safety", "destructive", "--confirm") as c:
        refused = await checked(c, "kill_pane", {"paneId": pane})
        assert refused.is_error, refused
        assert "declined" in text(refused) and "Nothing was sent to tmux" in text(refused), text(refused)
    assert len(no.questions) == 1, no.questions
    q = no.questions[0]
    assert f"Kill pane {pane}?" in q and "sleep" in q and f"pid {pid}" in q and "main:0" in q, q
    assert pane in panes(tmux_server), "a declined kill reached tmux"

    yes = Person("accept")
    async with client(tmux_server, mode, yes, "--safety", "destructive", "--confirm") as c:
        killed = await checked(c, "kill_pane", {"paneId": pane})
        assert not killed.is_error, killed
        assert killed.structured_content["killed"]["id"] == pane, killed
    assert yes.questions == [q], yes.questions
    assert pane not in panes(tmux_server)


@pytest.mark.parametrize("mode", ERAS)
@async_test(60)
async def test_close_and_respawn_ask_too(tmux_server, mode):
    tmux_server.tmux("new-window", "-d", "-t", "main", "-n", "build", "sleep 1000")
    window = tmux_server.tmux("list-windows", "-t", "main", "-F", "#{window_name} #{window_id}")
    window = dict(line.split() for line in window.splitlines())["build"]
    pane, pid = two_panes(tmux_server)
    person = Person("accept")
    async with client(tmux_server, mode, person, "--safety", "destructive", "--confirm",
                      "--enable-tool", "tmux_close") as c:
        generation = (await checked(c, "tmux_capabilities", {})).structured_content["data"]["server_identity"]["generation"]
        closed = await checked(c, "tmux_close", {"target": {"kind": "window", "id": window, "generation": generation}})
        assert not closed.is_error and closed.structured_content["ok"] is True, closed
        person.action = "decline"
        kept = await checked(c, "respawn_pane", {"paneId": pane, "kill": True, "argv": ["sleep", "2000"]})
        assert kept.is_error and "declined" in text(kept), kept
    assert len(person.questions) == 2, person.questions
    close_q, respawn_q = person.questions
    assert f"Close window {window} (\"build\")?" in close_q and "sleep" in close_q, close_q
    assert f"Respawn pane {pane} " in respawn_q and f"pid {pid}" in respawn_q and '"sleep 2000"' in respawn_q, respawn_q
    assert window not in tmux_server.tmux("list-windows", "-a", "-F", "#{window_id}").split()
    assert panes(tmux_server)[pane] == pid, "a declined respawn reached tmux"


@pytest.mark.parametrize("mode", ERAS)
@async_test(60)
async def test_a_client_that_cannot_ask_is_refused_and_nothing_is_killed(tmux_server, mode):
    """Before 2026-07-28 the tool refuses; on 2026-07-28 the call is MCP's
    -32021 with `data.requiredCapabilities` (issue 50, item 4), once the
    tool's checks pass (an unknown pane is still the tool's own answer)."""
    pane, _ = two_panes(tmux_server)
    async with client(tmux_server, mode, None, "--safety", "destructive", "--confirm") as c:
        if mode == "legacy":
            refused = await checked(c, "kill_pane", {"paneId": pane})
            assert refused.is_error and "cannot ask" in text(refused) and "Nothing was sent to tmux" in text(refused), refused
        else:
            with pytest.raises(MCPError) as e:
                await c.call_tool("kill_pane", {"paneId": pane})
            assert e.value.code == -32021, e.value
            assert e.value.data["requiredCapabilities"] == {"elicitation": {"form": {}}}, e.value.data
            assert "Nothing was sent to tmux" in e.value.message, e.value
            unknown = await c.call_tool("kill_pane", {"paneId": "%999"})
            assert unknown.is_error, unknown
    assert pane in panes(tmux_server)


@pytest.mark.parametrize("mode", ERAS)
@async_test(60)
async def test_the_tmux_option_asks_for_every_agent_and_without_it_nothing_is_asked(tmux_server, mode):
    first, _ = two_panes(tmux_server)
    second, _ = two_panes(tmux_server)
    person = Person("accept")
    async with client(tmux_server, mode, person, "--safety", "destructive") as c:
        assert not (await checked(c, "kill_pane", {"paneId": first})).is_error
    assert person.questions == [], "asked without --confirm or @mcp-confirm"
    tmux_server.tmux("set-option", "-g", "@mcp-confirm", "on")
    async with client(tmux_server, mode, person, "--safety", "destructive") as c:
        assert not (await checked(c, "kill_pane", {"paneId": second})).is_error
    assert len(person.questions) == 1 and second in person.questions[0], person.questions
    # A value that is neither on nor off: the attach is refused with the
    # reason, and no session opens with a guess.
    tmux_server.tmux("set-option", "-g", "@mcp-confirm", "maybe")
    refused = subprocess.run([str(BIN), "attach", "-S", tmux_server.sock], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=20, env=clean_env())
    assert refused.returncode != 0, refused
    assert '@mcp-confirm is "maybe"; expected on or off' in refused.stderr, refused.stderr


@async_test(60)
async def test_an_answer_counts_only_for_the_call_it_answered(tmux_server):
    """2026-07-28 by hand: the requestState of one call, retried with other
    arguments, is a new call (asked again, nothing killed); the same call's
    retry acts."""
    first, _ = two_panes(tmux_server)
    second, _ = two_panes(tmux_server)

    async def unused(context, params):
        raise AssertionError("the test answers by hand")

    async with mcp_session(tmux_server, "--safety", "destructive", "--confirm", modern=True,
                           elicitation_callback=unused) as s:
        asked = await s.call_tool("kill_pane", {"paneId": first}, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult), asked
        (key, request), = asked.input_requests.items()
        assert f"Kill pane {first}?" in request.params.message, request
        yes = {key: {"action": "accept", "content": {}}}
        other = await s.call_tool("kill_pane", {"paneId": second}, allow_input_required=True,
                                  input_responses=yes, request_state=asked.request_state)
        assert isinstance(other, types.InputRequiredResult), other
        assert f"Kill pane {second}?" in other.input_requests[key].params.message
        assert {first, second} <= set(panes(tmux_server)), "an answer for another call killed a pane"
        # The state was used once: replaying it is a new call as well.
        again = await s.call_tool("kill_pane", {"paneId": first}, allow_input_required=True,
                                  input_responses=yes, request_state=asked.request_state)
        assert isinstance(again, types.InputRequiredResult), again
        done = await s.call_tool("kill_pane", {"paneId": first}, allow_input_required=True,
                                 input_responses=yes, request_state=again.request_state)
        assert isinstance(done, types.CallToolResult) and not done.is_error, done
        assert first not in panes(tmux_server) and second in panes(tmux_server)
        result = await call(s, "list_panes", {})
        assert not result.is_error


@pytest.mark.parametrize("mode", ERAS)
@async_test(120)
async def test_another_servers_broker_asks_through_the_agents_client_naming_that_server(tmux_server, mode):
    """Issue 52 item 3: a kill on another server is asked when that server
    confirms (its @mcp-confirm) or the agent does (--confirm): the other
    broker's question reaches the person through the agent's own client,
    naming the server as the agent named it; declined, nothing reaches that
    server; accepted, the pane is gone. A client that cannot ask is refused
    there as here."""
    other = TmuxServer()
    try:
        other.tmux("set-option", "-g", "@mcp-safety", "destructive")
        tmux_server.tmux("set-option", "-g", "@mcp-sockets", other.sock)
        tag = f"[server {other.sock}] "
        for confirms_there, flags in [(True, ()), (False, ("--confirm",))]:
            other.tmux("set-option", "-g", "@mcp-confirm", "on" if confirms_there else "off")
            pane, pid = two_panes(other)
            no = Person("decline")
            async with client(tmux_server, mode, no, "--safety", "destructive", *flags) as c:
                refused = await checked(c, "kill_pane", {"paneId": pane, "server": other.sock})
                assert refused.is_error, refused
                assert "declined" in text(refused) and "Nothing was sent to tmux" in text(refused), text(refused)
            assert len(no.questions) == 1, no.questions
            q = no.questions[0]
            assert q.startswith(tag) and f"Kill pane {pane}?" in q and f"pid {pid}" in q, q
            assert pane in panes(other), "a declined kill reached the other server"

            yes = Person("accept")
            async with client(tmux_server, mode, yes, "--safety", "destructive", *flags) as c:
                killed = await checked(c, "kill_pane", {"paneId": pane, "server": other.sock})
                assert not killed.is_error, killed
                assert killed.structured_content["killed"]["id"] == f"{other.sock}:{pane}", killed
            assert yes.questions == [q], yes.questions
            assert pane not in panes(other)

        # Neither confirms: nothing is asked, the kill is done.
        other.tmux("set-option", "-g", "@mcp-confirm", "off")
        pane, _ = two_panes(other)
        nobody = Person("decline")
        async with client(tmux_server, mode, nobody, "--safety", "destructive") as c:
            killed = await checked(c, "kill_pane", {"paneId": pane, "server": other.sock})
            assert not killed.is_error, killed
        assert nobody.questions == [] and pane not in panes(other)

        # That server confirms and this client cannot ask: refused, nothing sent.
        other.tmux("set-option", "-g", "@mcp-confirm", "on")
        pane, _ = two_panes(other)
        async with client(tmux_server, mode, None, "--safety", "destructive") as c:
            if mode == "legacy":
                refused = await checked(c, "kill_pane", {"paneId": pane, "server": other.sock})
                assert refused.is_error and "cannot ask" in text(refused), refused
                assert "Nothing was sent to tmux" in text(refused), refused
            else:
                with pytest.raises(MCPError) as e:
                    await c.call_tool("kill_pane", {"paneId": pane, "server": other.sock})
                assert e.value.code == -32021, e.value
        assert pane in panes(other)
    finally:
        problems = other.shutdown()
        shutil.rmtree(other.dir, ignore_errors=True)
    assert not problems, problems
