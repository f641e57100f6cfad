"""The 2026-07-28 revision, exactly (issue 50): each exchange is checked
against the revision's published schema.json (tests/python/schemas/, with its
source and date), raw and through the official SDK."""

from __future__ import annotations

import json
import queue
import time
from pathlib import Path
from typing import Any

import jsonschema
from mcp import Client, StdioServerParameters

from harness import BIN, async_test, clean_env, require_binary

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "2026-07-28.schema.json").read_text())
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "tmux-mcp-raw-test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def conforms(message: dict[str, Any], definition: str) -> None:
    """`message` is valid as `$defs[definition]` of the published schema."""
    validator = jsonschema.Draft202012Validator({**SCHEMA, "$ref": f"#/$defs/{definition}"})
    errors = sorted(validator.iter_errors(message), key=lambda e: list(e.absolute_path))
    assert not errors, (f"not a valid {definition}: "
                        + "; ".join(f"at {list(e.absolute_path)}: {e.message[:200]}" for e in errors[:5])
                        + f" in {json.dumps(message)[:600]}")


def exchange(raw, id_: Any, method: str, params: dict[str, Any] | None = None,
             timeout: float = 15.0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Sends one request; returns its answer and the notifications that came
    before it (each checked against the schema)."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    raw.send(msg)
    notes: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = raw._lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise AssertionError(f"no answer to {method} within {timeout} s; {raw.diag()}") from None
        assert line is not None, f"attach closed stdout; {raw.diag()}"
        m = json.loads(line)
        if "method" in m:
            conforms(m, "JSONRPCNotification")
            notes.append(m)
            continue
        assert m.get("id") == id_, f"expected the answer to {id_!r}, got {m!r}"
        return m, notes


def with_meta(params: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return {**(params or {}), "_meta": {**META, **meta}}


def first_pane(server) -> str:
    return server.tmux("display-message", "-p", "-t", "main", "#{pane_id}")


def test_logging_is_per_request_in_2026(tmux_server):
    """Item 1: a request's `_meta` logLevel, not a session state, decides the
    `notifications/message` it gets; an unknown level is -32602 naming the key."""
    pane = first_pane(tmux_server)
    tmux_server.tmux("set-hook", "-g", "after-capture-pane", "set -g @mcp-test-hook-ran 1")
    raw = tmux_server.raw_client()
    capture = {"name": "capture_pane", "arguments": {"paneId": pane}}

    reply, notes = exchange(raw, 1, "tools/call", with_meta(capture, **{LOG_LEVEL: "debug"}))
    conforms(reply, "CallToolResultResponse")
    assert reply["result"]["isError"] is True, reply
    assert [n["method"] for n in notes] == ["notifications/message"], notes
    conforms(notes[0], "LoggingMessageNotification")
    assert notes[0]["params"]["level"] == "warning", notes
    assert "after-capture-pane" in json.dumps(notes[0]["params"]["data"]), notes

    # Above the notice's level: nothing.
    reply, notes = exchange(raw, 2, "tools/call", with_meta(capture, **{LOG_LEVEL: "error"}))
    assert reply["result"]["isError"] is True and notes == [], (reply, notes)

    # No level on the request: nothing, whatever a logging/setLevel said (a
    # method this revision removed, answered or not).
    exchange(raw, 3, "logging/setLevel", with_meta({"level": "debug"}))
    reply, notes = exchange(raw, 4, "tools/call", with_meta(capture))
    assert reply["result"]["isError"] is True and notes == [], (reply, notes)

    # A level that is not one of the eight: -32602 naming the key, nothing run.
    for id_, bad in ((5, "verbose"), (6, 3), (7, "DEBUG")):
        reply, notes = exchange(raw, id_, "tools/call", with_meta(capture, **{LOG_LEVEL: bad}))
        conforms(reply, "JSONRPCErrorResponse")
        assert reply["error"]["code"] == -32602, reply
        assert LOG_LEVEL in reply["error"]["message"], reply
        assert notes == [], notes
    reply, _ = exchange(raw, 8, "tools/list", with_meta(**{LOG_LEVEL: "verbose"}))
    assert reply.get("error", {}).get("code") == -32602, reply
    assert tmux_server.tmux("show-options", "-gqv", "@mcp-test-hook-ran") == "", "a capture happened"
    raw.close()


@async_test(60)
async def test_sdk_gets_log_callbacks_at_the_level_it_asked_for(tmux_server):
    """Item 1 through the official SDK in 2026 mode: `Client(log_level=...)`."""
    require_binary()
    pane = first_pane(tmux_server)
    tmux_server.tmux("set-hook", "-g", "after-capture-pane", "set -g @mcp-test-hook-ran 1")
    params = StdioServerParameters(command=str(BIN), args=["attach", "-S", tmux_server.sock],
                                   env=clean_env())
    for level, expected in (("warning", 1), ("error", 0), (None, 0)):
        heard: list[Any] = []

        async def logged(p: Any) -> None:
            heard.append(p)

        async with Client(params, mode="auto", log_level=level, logging_callback=logged,
                          read_timeout_seconds=20) as c:
            assert c.session.protocol_version == "2026-07-28", c.session.protocol_version
            result = await c.call_tool("capture_pane", {"paneId": pane})
            assert result.is_error, result
        assert len(heard) == expected, (level, heard)
        if expected:
            assert heard[0].level == "warning", heard


def test_lists_that_cannot_change_carry_a_real_ttl(tmux_server):
    """Item 2: tools/list and prompts/list (`listChanged: false`) carry a
    positive `ttlMs`, `cacheScope: "private"` (they differ with the session's
    options); resources/list, live state, keeps `ttlMs: 0`."""
    raw = tmux_server.raw_client()
    discover, _ = exchange(raw, 1, "server/discover", with_meta())
    conforms(discover, "DiscoverResultResponse")
    caps = discover["result"]["capabilities"]
    assert caps["tools"].get("listChanged") is False and caps["prompts"].get("listChanged") is False, caps
    for id_, method, definition in ((2, "tools/list", "ListToolsResultResponse"),
                                    (3, "prompts/list", "ListPromptsResultResponse"),
                                    (4, "resources/templates/list", "ListResourceTemplatesResultResponse")):
        reply, _ = exchange(raw, id_, method, with_meta())
        conforms(reply, definition)
        assert reply["result"]["ttlMs"] >= 60_000, (method, reply["result"].get("ttlMs"))
        assert reply["result"]["cacheScope"] == "private", (method, reply["result"].get("cacheScope"))
    reply, _ = exchange(raw, 5, "resources/list", with_meta())
    conforms(reply, "ListResourcesResultResponse")
    assert reply["result"]["ttlMs"] == 0, reply["result"].get("ttlMs")
    # The initialize eras have no cache hints (nor their bytes, tests/e2e/budget.rs).
    raw.initialize(6)
    for id_, method in ((7, "tools/list"), (8, "prompts/list")):
        legacy = raw.request(id_, method)["result"]
        assert "ttlMs" not in legacy and "cacheScope" not in legacy, (method, sorted(legacy))
    raw.close()


@async_test(60)
async def test_sdk_caches_list_tools_in_2026(tmux_server, tmp_path):
    """Item 2 through the official SDK: a second list_tools()/list_prompts()
    is served from its response cache (the requests the relay received are
    counted on its stdin)."""
    require_binary()
    seen = tmp_path / "to-attach.jsonl"
    params = StdioServerParameters(
        command="sh", args=["-c", 'tee "$0" | exec "$1" attach -S "$2"', str(seen), str(BIN), tmux_server.sock],
        env=clean_env())
    async with Client(params, mode="auto", read_timeout_seconds=20) as c:
        assert c.session.protocol_version == "2026-07-28", c.session.protocol_version
        first = await c.list_tools()
        again = await c.list_tools()
        assert [t.name for t in again.tools] == [t.name for t in first.tools]
        await c.list_prompts()
        await c.list_prompts()
        sent = [json.loads(line).get("method") for line in seen.read_text().splitlines() if line.strip()]
    assert sent.count("tools/list") == 1, sent
    assert sent.count("prompts/list") == 1, sent


def test_removed_methods_are_unknown_in_2026_and_kept_in_legacy(tmux_server):
    """Item 6: `ping` and `logging/setLevel` were removed in 2026-07-28: a
    request of that era gets -32601; the initialize eras keep both."""
    raw = tmux_server.raw_client()
    for id_, method, params in ((1, "ping", {}), (2, "logging/setLevel", {"level": "debug"})):
        reply, _ = exchange(raw, id_, method, with_meta(params))
        conforms(reply, "JSONRPCErrorResponse")
        assert reply.get("error", {}).get("code") == -32601, (method, reply)
    # The session goes on; the same session may still speak an older era.
    reply, _ = exchange(raw, 3, "tools/list", with_meta())
    conforms(reply, "ListToolsResultResponse")
    raw.initialize(4)
    assert raw.request(5, "ping").get("result") == {}
    assert raw.request(6, "logging/setLevel", {"level": "debug"}).get("result") == {}
    raw.close()


def test_project_errors_use_codes_outside_the_reserved_range(tmux_server):
    """Item 5: a read refused by an `after-capture-pane` hook is the project's
    -31001 (was -32003, in MCP's legacy range and its old missing-capability
    number), an unknown resource is -32602 (2026-07-28 retired -32002)."""
    pane = first_pane(tmux_server)
    tmux_server.tmux("set-hook", "-g", "after-capture-pane", "set -g @mcp-test-hook-ran 1")
    raw = tmux_server.raw_client()
    uri = "tmux://pane/" + pane.replace("%", "%25")
    reply, _ = exchange(raw, 1, "resources/read", with_meta({"uri": uri}))
    conforms(reply, "JSONRPCErrorResponse")
    assert reply["error"]["code"] == -31001, reply
    assert not -32768 <= reply["error"]["code"] <= -32000, reply
    assert reply["error"]["data"] == {"reason": "hook_set", "delivery": "not_sent"}, reply
    reply, _ = exchange(raw, 2, "resources/read", with_meta({"uri": "tmux://pane/%25999"}))
    conforms(reply, "JSONRPCErrorResponse")
    assert reply["error"]["code"] == -32602, reply
    assert tmux_server.tmux("show-options", "-gqv", "@mcp-test-hook-ran") == "", "a capture happened"
    raw.close()


def test_a_missing_client_capability_is_32021(tmux_server):
    """Item 4: under --confirm, a 2026-07-28 call whose client declared no
    elicitation is -32021 with `data.requiredCapabilities` (was a tool error);
    the same call declaring it gets its question (`input_required`)."""
    new = tmux_server.tmux("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "sleep 1000")
    raw = tmux_server.raw_client("--safety", "destructive", "--confirm")
    kill = {"name": "kill_pane", "arguments": {"paneId": new}}
    reply, _ = exchange(raw, 1, "tools/call", with_meta(kill))
    conforms(reply, "MissingRequiredClientCapabilityError")
    assert reply["error"]["data"]["requiredCapabilities"] == {"elicitation": {"form": {}}}, reply
    reply, _ = exchange(raw, 2, "tools/call", with_meta(kill, **{
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}))
    conforms(reply, "CallToolResultResponse")
    assert reply["result"]["resultType"] == "input_required", reply
    assert new in tmux_server.tmux("list-panes", "-a", "-F", "#{pane_id}").split(), "the pane was killed"
    raw.close()


def test_invalid_cursors_and_versions_are_invalid_params(tmux_server):
    """Item 8: a cursor this server never gave is -32602 on every list (was the
    whole list); a 2026-07-28 request without its protocolVersion, or with one
    that is not a string, is -32602 naming the key (was -32600, or served)."""
    raw = tmux_server.raw_client()
    for id_, method in enumerate(("tools/list", "prompts/list", "resources/list",
                                  "resources/templates/list"), start=1):
        reply, _ = exchange(raw, id_, method, with_meta({"cursor": "bogus"}))
        conforms(reply, "JSONRPCErrorResponse")
        assert reply["error"]["code"] == -32602 and "cursor" in reply["error"]["message"], (method, reply)
    no_version = {k: v for k, v in META.items() if not k.endswith("/protocolVersion")}
    for id_, meta in ((10, no_version), (11, {**META, "io.modelcontextprotocol/protocolVersion": 20260728})):
        reply, _ = exchange(raw, id_, "tools/list", {"_meta": meta})
        conforms(reply, "JSONRPCErrorResponse")
        assert reply["error"]["code"] == -32602, reply
        assert "io.modelcontextprotocol/protocolVersion" in reply["error"]["message"], reply
    # A request with no `_meta` before initialize is still the lifecycle's -32600.
    assert exchange(raw, 12, "tools/list", {})[0]["error"]["code"] == -32600
    raw.close()


def test_a_malformed_mrtr_answer_is_refused(tmux_server):
    """Item 8: a retry whose `inputResponses.confirm` is no elicitation answer
    (`{"action": "maybe"}`) is -32602 naming the field (was asked again); the
    pane lives."""
    new = tmux_server.tmux("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "sleep 1000")
    raw = tmux_server.raw_client("--safety", "destructive", "--confirm")
    caps = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
    kill = {"name": "kill_pane", "arguments": {"paneId": new}}
    asked, _ = exchange(raw, 1, "tools/call", with_meta(kill, **caps))
    conforms(asked, "CallToolResultResponse")
    assert asked["result"]["resultType"] == "input_required", asked
    retry = {**kill, "requestState": asked["result"]["requestState"],
             "inputResponses": {"confirm": {"action": "maybe"}}}
    reply, _ = exchange(raw, 2, "tools/call", with_meta(retry, **caps))
    conforms(reply, "JSONRPCErrorResponse")
    assert reply["error"]["code"] == -32602, reply
    assert "inputResponses.confirm" in reply["error"]["message"], reply
    assert new in tmux_server.tmux("list-panes", "-a", "-F", "#{pane_id}").split(), "the pane was killed"
    raw.close()


def test_results_name_the_server_in_meta(tmux_server):
    """Item 8: every 2026-07-28 result carries
    `_meta["io.modelcontextprotocol/serverInfo"]` (SHOULD); the initialize
    eras' results are as before."""
    key = "io.modelcontextprotocol/serverInfo"
    raw = tmux_server.raw_client()
    for id_, method, params, definition in (
            (1, "tools/list", {}, "ListToolsResultResponse"),
            (2, "tools/call", {"name": "list_panes", "arguments": {}}, "CallToolResultResponse"),
            (3, "prompts/list", {}, "ListPromptsResultResponse"),
            (4, "resources/list", {}, "ListResourcesResultResponse"),
            (5, "resources/templates/list", {}, "ListResourceTemplatesResultResponse"),
            (6, "resources/read", {"uri": "tmux://server"}, "ReadResourceResultResponse"),
            (7, "server/discover", {}, "DiscoverResultResponse")):
        reply, _ = exchange(raw, id_, method, with_meta(params))
        conforms(reply, definition)
        info = (reply["result"].get("_meta") or {}).get(key)
        assert isinstance(info, dict) and info.get("name") == "tmux-mcp" and info.get("version"), (method, reply["result"].get("_meta"))
    raw.initialize(8)
    legacy = raw.request(9, "tools/list")
    assert key not in (legacy["result"].get("_meta") or {}), legacy["result"].get("_meta")
    raw.close()


def next_line(raw, timeout: float = 15.0) -> dict[str, Any]:
    try:
        line = raw._lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"nothing within {timeout} s; {raw.diag()}") from None
    assert line is not None, f"attach closed stdout; {raw.diag()}"
    return json.loads(line)


def listen(raw, id_: Any) -> None:
    raw.send({"jsonrpc": "2.0", "id": id_, "method": "subscriptions/listen",
              "params": with_meta({"notifications": {"resourcesListChanged": True}})})
    ack = next_line(raw)
    conforms(ack, "JSONRPCNotification")
    assert ack["method"] == "notifications/subscriptions/acknowledged", ack
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == id_, ack


def stream_end(raw, id_: Any) -> dict[str, Any]:
    """The listen stream's closing response (list_changed notices may come first)."""
    while True:
        m = next_line(raw)
        if "method" in m:
            assert m["method"] == "notifications/resources/list_changed", m
            continue
        assert m.get("id") == id_, m
        return m


def test_a_listen_stream_ends_with_its_result_when_the_tmux_server_exits(tmux_server):
    """Item 3: the server exiting ends a listen stream with the revision's final
    result (not an error meant for tool calls), its subscriptionId the listen
    request's id as the client wrote it."""
    raw = tmux_server.raw_client()
    listen(raw, "listen-77")
    tmux_server.tmux("kill-server")
    end = stream_end(raw, "listen-77")
    conforms(end, "SubscriptionsListenResultResponse")
    assert "error" not in end, end
    assert end["result"]["resultType"] == "complete", end
    assert end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-77", end
    # The broker ended it (the relay, which would if the broker vanished first, names no server).
    assert end["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "tmux-mcp", end
    raw.close()


def test_a_listen_stream_ends_with_its_result_when_the_broker_is_lost(tmux_server):
    """Item 3, the relay's side: a broker killed under an open stream ends it
    with the final result (id 77 in `_meta`); the session goes on, and the
    client may listen again on the next broker."""
    import os
    import signal
    raw = tmux_server.raw_client()
    listen(raw, 77)
    brokers = tmux_server.brokers()
    assert len(brokers) == 1, brokers
    os.kill(brokers[0], signal.SIGKILL)  # this test's broker, by its pid
    end = stream_end(raw, 77)
    conforms(end, "SubscriptionsListenResultResponse")
    assert end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 77, end
    reply, _ = exchange(raw, 78, "tools/list", with_meta(), timeout=30)
    conforms(reply, "ListToolsResultResponse")
    listen(raw, 79)
    raw.close()


@async_test(60)
async def test_run_command_sends_progress_while_it_blocks(tmux_server):
    """Item 7: a blocking run_command with a `progressToken` reports progress
    every second, as the waits do (it sent none); without a token, none."""
    from harness import wait_until
    pane = tmux_server.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "env", "PS1=$ ",
                            "HISTFILE=/dev/null", "bash", "--norc", "--noprofile")

    def at_prompt() -> bool:
        return tmux_server.tmux("capture-pane", "-p", "-t", pane).strip().endswith("$")

    await wait_until(at_prompt)
    raw = tmux_server.raw_client("--safety", "mutating")
    run = {"name": "run_command", "arguments": {"paneId": pane, "command": "sleep 3; echo done-here"}}
    reply, notes = exchange(raw, 1, "tools/call", with_meta(run, progressToken="run-1"),
                            timeout=30)
    conforms(reply, "CallToolResultResponse")
    assert reply["result"].get("isError") is not True, reply
    assert reply["result"]["structuredContent"]["state"] != "running", reply
    progress = [n for n in notes if n["method"] == "notifications/progress"]
    assert len(progress) >= 2, notes
    for n in progress:
        conforms(n, "ProgressNotification")
        assert n["params"]["progressToken"] == "run-1", n
    values = [n["params"]["progress"] for n in progress]
    assert values == sorted(values) and len(set(values)) == len(values), values
    await wait_until(at_prompt)
    reply, notes = exchange(raw, 2, "tools/call", with_meta(run), timeout=30)
    assert reply["result"].get("isError") is not True and notes == [], (reply, notes)
    raw.close()


@async_test(60)
async def test_wait_for_agent_sends_the_progress_it_promises(tmux_server):
    """Item 7: wait_for_agent's description says it sends progress with a
    `progressToken`; it sent none (its watch was started without the call's
    progress)."""
    from test_agents_state import screens_of, shell_pane, start_agent
    pane = await shell_pane(tmux_server)
    await start_agent(tmux_server, pane, "claude", screens_of("claude-2.1.332"))
    raw = tmux_server.raw_client("--scope", "server")
    wait = {"name": "wait_for_agent",
            "arguments": {"paneId": pane, "states": ["waiting_for_approval"], "timeoutMs": 2500}}
    reply, notes = exchange(raw, 1, "tools/call", with_meta(wait, progressToken=7), timeout=30)
    conforms(reply, "CallToolResultResponse")
    assert reply["result"]["structuredContent"]["outcome"] == "timeout", reply
    progress = [n for n in notes if n["method"] == "notifications/progress"]
    assert len(progress) >= 2 and all(n["params"]["progressToken"] == 7 for n in progress), notes
    raw.close()


TASKS = "io.modelcontextprotocol/tasks"


@async_test(90)
async def test_run_command_is_a_task_only_for_a_client_that_declares_the_extension(tmux_server):
    """Item 9 (tasks extension, SEP-2663): a 2026-07-28 run_command whose
    request declares `io.modelcontextprotocol/tasks` answers `resultType:
    "task"`; `tasks/get` polls it to the blocking call's result. Without the
    extension (and in the initialize era) the call is exactly as before; a
    client that did not declare it gets no task and cannot poll one."""
    from harness import wait_until
    pane = tmux_server.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "env", "PS1=$ ",
                            "HISTFILE=/dev/null", "bash", "--norc", "--noprofile")

    def at_prompt() -> bool:
        return tmux_server.tmux("capture-pane", "-p", "-t", pane).strip().endswith("$")

    await wait_until(at_prompt)
    raw = tmux_server.raw_client("--safety", "mutating")
    tasks_caps = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}}
    discover, _ = exchange(raw, 1, "server/discover", with_meta(**tasks_caps))
    conforms(discover, "DiscoverResultResponse")
    assert TASKS in discover["result"]["capabilities"].get("extensions", {}), discover

    run = {"name": "run_command", "arguments": {"paneId": pane, "command": "sleep 2; echo task-$((40+2))"}}
    created, _ = exchange(raw, 2, "tools/call", with_meta(run, **tasks_caps))
    assert created["result"]["resultType"] == "task", created
    task_id = created["result"]["taskId"]
    assert created["result"]["status"] == "working", created
    # Not pollable by a request that did not declare the extension.
    reply, _ = exchange(raw, 3, "tasks/get", with_meta({"taskId": task_id}))
    assert reply.get("error", {}).get("code") == -32021, reply
    deadline = time.monotonic() + 30
    while True:
        got, _ = exchange(raw, 4, "tasks/get", with_meta({"taskId": task_id}, **tasks_caps))
        assert "result" in got, got
        if got["result"]["status"] != "working":
            break
        assert time.monotonic() < deadline, got
        time.sleep(0.3)
    assert got["result"]["status"] == "completed", got
    result = got["result"]["result"]
    assert result.get("isError") is not True, result
    assert result["structuredContent"]["state"] == "done", result
    assert result["structuredContent"]["exitStatus"] == 0, result
    assert "task-42" in json.dumps(result["structuredContent"]), result

    # Without the extension: the blocking call of today (no task).
    await wait_until(at_prompt)
    reply, _ = exchange(raw, 5, "tools/call", with_meta(run), timeout=30)
    conforms(reply, "CallToolResultResponse")
    assert reply["result"]["resultType"] == "complete", reply
    assert reply["result"]["structuredContent"]["state"] == "done", reply
    # Cancelled: the task ends `cancelled` (the command itself runs on in the
    # person's shell, as a cancelled blocking call leaves it).
    other = tmux_server.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "env", "PS1=$ ",
                             "HISTFILE=/dev/null", "bash", "--norc", "--noprofile")
    await wait_until(lambda: tmux_server.tmux("capture-pane", "-p", "-t", other).strip().endswith("$"))
    slow = {"name": "run_command", "arguments": {"paneId": other, "command": "sleep 3"}}
    created, _ = exchange(raw, 20, "tools/call", with_meta(slow, **tasks_caps))
    task_id = created["result"]["taskId"]
    reply, _ = exchange(raw, 21, "tasks/cancel", with_meta({"taskId": task_id}, **tasks_caps))
    assert "result" in reply, reply
    deadline = time.monotonic() + 10
    while True:
        got, _ = exchange(raw, 22, "tasks/get", with_meta({"taskId": task_id}, **tasks_caps))
        if got["result"]["status"] != "working":
            break
        assert time.monotonic() < deadline, got
        time.sleep(0.2)
    assert got["result"]["status"] == "cancelled", got
    # The initialize era: no extension in the capabilities, no task.
    init = raw.initialize(6)
    assert "extensions" not in init["capabilities"], init
    await wait_until(at_prompt)
    reply = raw.request(7, "tools/call", run, timeout=30)
    assert "taskId" not in reply["result"], reply
    assert reply["result"].get("structuredContent", {}).get("state") == "done", reply
    raw.close()
