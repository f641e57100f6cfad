"""Resources through the official MCP SDK: list, templates, read (JSON that
validates against the matching tool's outputSchema, the screen as text), and a
legacy subscription told by a line written into the pane's terminal."""

import asyncio
import json
import warnings

from mcp import types

from harness import async_test, list_tools, mcp_session, validator_for_schema


def write_to_pane(server, pane, line):
    tty = server.tmux("display-message", "-p", "-t", pane, "#{pane_tty}").strip()
    with open(tty, "w") as f:
        f.write(line + "\r\n")


@async_test(60)
async def test_resources_list_read_and_subscribe(tmux_server):
    updates: asyncio.Queue = asyncio.Queue()

    async def on_message(message):
        note = getattr(message, "root", message)  # a ServerNotification wraps it in older SDKs
        if isinstance(note, types.ResourceUpdatedNotification):
            await updates.put(str(note.params.uri))

    write_to_pane(tmux_server, "%0", "seen by the resource")
    async with mcp_session(tmux_server, message_handler=on_message) as s:
        tools = await list_tools(s)
        listed = [str(r.uri) for r in (await s.list_resources()).resources]
        assert {"tmux://server", "tmux://sessions", "tmux://panes", "tmux://pane/%250"} <= set(listed), listed
        templates = [t.uri_template for t in (await s.list_resource_templates()).resource_templates]
        assert templates == ["tmux://pane/{pane_id}", "tmux://pane/{pane_id}/info", "tmux://tool/{name}"], templates
        panes = json.loads((await s.read_resource("tmux://panes")).contents[0].text)
        errors = list(validator_for_schema(tools["list_panes"].output_schema).iter_errors(panes))
        assert not errors, errors
        screen = (await s.read_resource("tmux://pane/%250")).contents[0]
        assert screen.mime_type == "text/plain" and "seen by the resource" in screen.text, screen
        # resources/subscribe is the initialize eras' subscription (the SDK
        # warns that 2026-07-28 replaced it with subscriptions/listen).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await s.subscribe_resource("tmux://pane/%250")
        write_to_pane(tmux_server, "%0", "a change")
        uri = await asyncio.wait_for(updates.get(), 5)
        assert uri == "tmux://pane/%250", uri
        assert "a change" in (await s.read_resource(uri)).contents[0].text
