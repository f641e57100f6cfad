"""Prompts and completion through the official MCP SDK, in both protocol eras
(`initialize`, and `server/discover` with per-request `_meta`): the prompts a
session lists follow the tools it may call; `prompts/get` renders a message
that names those tools and quotes its arguments, and refuses (invalid params,
naming the argument) a pane that does not exist; `completion/complete` offers
the panes, windows, sessions and tool names that exist now, for prompt
arguments and for the resource templates' `{pane_id}` and `{name}`."""

import json

import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from harness import async_test, mcp_session

READONLY_PROMPTS = ["watch_run", "find_error", "take_over_pane"]


async def refused(coro) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await coro
    return caught.value


def layout(server) -> dict[str, list[str]]:
    """A second window and pane in session main, and a session `work`."""
    server.tmux("split-window", "-d", "-t", "main")
    server.tmux("new-window", "-d", "-t", "main")
    server.tmux("new-session", "-d", "-s", "work")
    panes = server.tmux("list-panes", "-a", "-F", "#{pane_id}").split()
    windows = server.tmux("list-windows", "-a", "-F", "#{window_id}").split()
    return {"panes": sorted(panes, key=lambda p: int(p[1:])),
            "windows": sorted(set(windows), key=lambda w: int(w[1:]))}


@pytest.mark.parametrize("modern", [False, True], ids=["initialize", "discover"])
@async_test(60)
async def test_prompts_list_get_and_refuse(tmux_server, modern):
    async with mcp_session(tmux_server, modern=modern) as s:
        listed = (await s.list_prompts()).prompts
        assert [p.name for p in listed] == READONLY_PROMPTS, [p.name for p in listed]
        for p in listed:
            assert p.title and p.description and len(p.description) <= 120, p
            pane_args = [a for a in p.arguments or [] if a.name == "pane"]
            assert all(a.required for a in pane_args), p

        got = await s.get_prompt("watch_run", {"pane": "%0", "done_text": 'test "result":'})
        assert len(got.messages) == 1 and got.messages[0].role == "user", got
        text = got.messages[0].content.text
        for needle in ("%0", "capture_since", "wait_for_text", json.dumps('test "result":')):
            assert needle in text, (needle, text)
        idle = (await s.get_prompt("watch_run", {"pane": "%0"})).messages[0].content.text
        assert "wait_for_idle" in idle and "wait_for_text" not in idle, idle
        found = (await s.get_prompt("find_error", {"session": "main"})).messages[0].content.text
        assert "search_panes" in found and '"main"' in found, found
        plain = (await s.get_prompt("find_error")).messages[0].content.text
        assert '"error|fail|panic|traceback|exception"' in plain, plain

        # Refusals: invalid params, naming the argument; nothing reached tmux.
        cases = [
            ("watch_run", {}, "pane", "required"),
            ("watch_run", {"pane": "%99"}, "pane", "no pane"),
            ("watch_run", {"pane": "0"}, "pane", "not a pane id"),
            ("watch_run", {"pane": "%0", "colour": "red"}, "colour", "no such argument"),
            ("find_error", {"session": "nope"}, "session", "no session named"),
            ("take_over_pane", {"pane": "%0", "cursor": "A" * 22}, "cursor", "not a hand-off cursor"),
            ("no_such_prompt", {}, None, "no prompt"),
            # run_command is in the mutating tier: this readonly session cannot get it.
            ("run_and_report", {"pane": "%0", "command": "ls"}, None, "run_command"),
        ]
        for name, args, argument, words in cases:
            e = await refused(s.get_prompt(name, args))
            assert e.code == types.INVALID_PARAMS, (name, args, e.error)
            assert words in e.message, (name, args, e.message)
            assert e.data == {"argument": argument, "delivery": "not_sent"}, (name, args, e.error)


@async_test(60)
async def test_run_and_report_is_listed_where_run_command_may_be_called(tmux_server):
    async with mcp_session(tmux_server, "--safety", "mutating") as s:
        names = [p.name for p in (await s.list_prompts()).prompts]
        assert names == READONLY_PROMPTS + ["run_and_report"], names
        text = (await s.get_prompt("run_and_report", {"pane": "%0", "command": "make test 'a b'"})).messages[0].content.text
        assert "run_command" in text and "get_job" in text and json.dumps("make test 'a b'") in text, text


@pytest.mark.parametrize("modern", [False, True], ids=["initialize", "discover"])
@async_test(60)
async def test_completion_offers_what_exists_now(tmux_server, modern):
    ids = layout(tmux_server)
    assert len(ids["panes"]) == 4, ids
    async with mcp_session(tmux_server, modern=modern) as s:
        watch = types.PromptReference(type="ref/prompt", name="watch_run")

        async def values(ref, name, value, context=None):
            c = (await s.complete(ref, {"name": name, "value": value}, context)).completion
            assert c.total == len(c.values) and c.has_more is False, c
            return c.values

        assert await values(watch, "pane", "") == ids["panes"]
        # A pane made after the session started is offered too.
        new = tmux_server.tmux("split-window", "-d", "-t", "work", "-P", "-F", "#{pane_id}")
        assert await values(watch, "pane", "") == ids["panes"] + [new]
        assert await values(watch, "pane", new) == [new]
        assert await values(watch, "pane", new[1:]) == [new], "an id without its sigil"
        assert await values(watch, "pane", "%9999") == []
        # Narrowed by a session already chosen.
        in_work = tmux_server.tmux("list-panes", "-s", "-t", "work", "-F", "#{pane_id}").split()
        assert await values(watch, "pane", "", {"session": "work"}) == in_work
        assert await values(watch, "done_text", "te") == [], "free text has nothing to offer"

        find = types.PromptReference(type="ref/prompt", name="find_error")
        assert await values(find, "session", "") == ["main", "work"]
        assert await values(find, "session", "WO") == ["work"], "case is ignored"

        for template in ("tmux://pane/{pane_id}", "tmux://pane/{pane_id}/info"):
            ref = types.ResourceTemplateReference(type="ref/resource", uri=template)
            assert await values(ref, "pane_id", "") == ids["panes"] + [new]
        tool = types.ResourceTemplateReference(type="ref/resource", uri="tmux://tool/{name}")
        assert await values(tool, "name", "capture_s") == ["capture_since"]
        tools_listed = [t.name for t in (await s.list_tools()).tools]
        offered = await values(tool, "name", "")
        assert set(tools_listed) <= set(offered), (tools_listed, offered)

        # Unknown references and arguments are invalid params.
        for ref, arg in [
            (types.PromptReference(type="ref/prompt", name="no_such_prompt"), "pane"),
            (watch, "colour"),
            (types.ResourceTemplateReference(type="ref/resource", uri="tmux://nothing/{x}"), "x"),
            (tool, "pane_id"),
        ]:
            e = await refused(s.complete(ref, {"name": arg, "value": ""}))
            assert e.code == types.INVALID_PARAMS, (ref, arg, e.error)


def test_typescript_sdk_and_inspector_get_prompts_and_completions(tmux_server, tmp_path):
    """The same surface through the TypeScript SDK's client (both eras) and the
    MCP Inspector's CLI, as the pinned Inspector install provides them."""
    import shutil
    import subprocess

    from agents import npm_tools
    from harness import BIN, clean_env, require_binary
    from test_inspector_strict import PINS, inspector

    require_binary()
    cmd = inspector()
    root = npm_tools.npm_install(PINS, "MCP Inspector (@modelcontextprotocol/inspector 2.12.0) and Node 22",
                                 npm_args=("--omit=optional",))
    script = root / "ts_sdk_prompts.mjs"
    shutil.copy(PINS / "ts_sdk_prompts.mjs", script)
    node = cmd[0]
    panes = tmux_server.tmux("list-panes", "-a", "-F", "#{pane_id}").split()
    env = clean_env(HOME=str(tmp_path), MCP_CATALOG_PATH=str(tmp_path / "catalog.json"))
    for era in ("legacy", "2026-07-28"):
        proc = subprocess.run([node, str(script), str(BIN), tmux_server.sock, era, panes[0]],
                              env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"TypeScript SDK client ({era}) exited {proc.returncode}:\n{proc.stderr[-3000:]}"
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        assert [p["name"] for p in got["prompts"]] == READONLY_PROMPTS, (era, got["prompts"])
        text = got["get"]["messages"][0]["content"]["text"]
        assert panes[0] in text and "capture_since" in text, (era, text)
        assert got["promptPanes"]["values"] == panes, (era, got["promptPanes"])
        assert got["templatePanes"]["values"][0] == panes[0], (era, got["templatePanes"])
        assert got["refused"] and got["refused"]["code"] == -32602, (era, got["refused"])
        print(f"TypeScript SDK ({era}): {len(got['prompts'])} prompts, {len(panes)} panes completed")

    def inspect(*args: str) -> dict:
        proc = subprocess.run([*cmd, "--cli", *args, str(BIN), "attach", "-S", tmux_server.sock],
                              env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"Inspector {args} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
        return json.loads(proc.stdout[proc.stdout.index("{"):])

    listed = inspect("--method", "prompts/list")
    assert [p["name"] for p in listed["prompts"]] == READONLY_PROMPTS, listed
    got = inspect("--prompt-args", "session=main", "--method", "prompts/get", "--prompt-name", "find_error")
    assert '"main"' in got["messages"][0]["content"]["text"], got
