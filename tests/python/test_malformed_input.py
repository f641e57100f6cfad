"""Malformed input gets JSON-RPC errors and never stops the broker serving."""

import json

import anyio

from harness import call_ok, mcp_session


def assert_error(reply, code=None, id_=None):
    assert "error" in reply and "result" not in reply, f"expected a JSON-RPC error, got {reply!r}"
    err = reply["error"]
    assert isinstance(err.get("code"), int) and isinstance(err.get("message"), str), reply
    if code is not None:
        assert err["code"] == code, f"expected error code {code}, got {reply!r}"
    assert reply.get("id") == id_, f"expected id {id_!r}, got {reply!r}"
    return err


def assert_serving(raw, id_):
    reply = raw.request(id_, "ping")
    assert reply.get("result") == {}, f"ping after bad input: {reply!r}"
    reply = raw.call_tool(id_ + 1, "tmux_capabilities")
    assert "result" in reply, reply
    assert reply["result"]["structuredContent"]["ok"] is True, reply


async def sdk_session_works(server):
    with anyio.fail_after(30):
        async with mcp_session(server) as s:
            await call_ok(s, "tmux_capabilities")
            return await call_ok(s, "list_panes")


def wrong_typed_arguments(input_schema):
    """An argument object with one declared property given the wrong JSON type."""
    wrong = {"string": 5, "integer": "five", "number": "five", "boolean": "yes",
             "array": 5, "object": 5}
    for name, prop in (input_schema.get("properties") or {}).items():
        t = prop.get("type") if isinstance(prop, dict) else None
        if isinstance(t, str) and t in wrong:
            return name, {name: wrong[t]}
    assert input_schema.get("additionalProperties") is False, (
        f"list_panes declares no typed property and accepts anything: {input_schema!r}")
    return "session", {"session": 5}


def test_garbage_lines_get_parse_errors_and_session_survives(tmux_server):
    raw = tmux_server.raw_client()
    raw.initialize()

    raw.write(b"\x00\xff\xfe garbage \x01\x02\n")
    assert_error(raw.next_message(), -32700, None)
    raw.write(b"{not json}\n")
    assert_error(raw.next_message(), -32700, None)

    reply = raw.request(7, "nope/x")
    assert_error(reply, -32601, 7)

    # Unknown tool: a JSON-RPC error or a tool error result, never silence.
    reply = raw.request(8, "tools/call", {"name": "no_such_tool_xyz", "arguments": {}})
    if "error" in reply:
        assert reply["error"]["code"] in (-32602, -32601), reply
    else:
        assert reply["result"].get("isError") is True, reply

    # Wrong-typed argument: -32602, or isError naming the field.
    tools = raw.request(9, "tools/list")["result"]["tools"]
    list_panes = next(t for t in tools if t["name"] == "list_panes")
    field, args = wrong_typed_arguments(list_panes["inputSchema"])
    reply = raw.call_tool(10, "list_panes", args)
    if "error" in reply:
        assert reply["error"]["code"] == -32602, reply
    else:
        result = reply["result"]
        assert result.get("isError") is True, f"list_panes accepted {args}: {reply!r}"
        text = json.dumps(result)
        assert field in text, f"tool error does not name the field {field!r}: {reply!r}"

    # A second agent is served while this connection is still open ...
    panes = anyio.run(sdk_session_works, tmux_server)
    assert panes["panes"], panes
    # ... and this connection still works too.
    assert_serving(raw, 11)
    raw.close()


def test_oversized_line_gets_error_and_connection_stays_usable(tmux_server):
    raw = tmux_server.raw_client()
    raw.initialize()
    raw.write(b"a" * (2 * 1024 * 1024) + b"\n", timeout=30)
    reply = raw.next_message(timeout=15)
    assert_error(reply, None, None)
    assert_serving(raw, 20)
    panes = anyio.run(sdk_session_works, tmux_server)
    assert panes["panes"], panes
    raw.close()


def raw_line(raw, timeout=10.0):
    """The next line the relay wrote that is not a notification, as bytes."""
    import queue
    import time
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = raw._lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise AssertionError(f"no response within {timeout} s") from None
        assert line is not None, "attach closed stdout"
        if b'"method"' not in line:
            return line


def test_ids_come_back_exactly_as_sent(tmux_server):
    """Every request that parses is answered once, with its id byte for byte:
    integers beyond 64 bits, negative ones, strings with escapes."""
    raw = tmux_server.raw_client()
    raw.initialize()
    for id_text in (str(2**70), str(-(2**65) - 1), str(2**63), '"caf\\u00e9 \\"q\\""', "0"):
        raw.write(b'{"jsonrpc":"2.0","id":' + id_text.encode() + b',"method":"ping"}\n')
        line = raw_line(raw)
        assert line.startswith(b'{"jsonrpc":"2.0","id":' + id_text.encode() + b","), line
        assert json.loads(line)["result"] == {}, line
    # The same for an answer that is an error, and for a tool call.
    raw.write(b'{"jsonrpc":"2.0","id":' + str(2**80).encode() + b',"method":"no/such"}\n')
    reply = json.loads(raw_line(raw))
    assert_error(reply, -32601, 2**80)
    raw.write(b'{"jsonrpc":"2.0","id":' + str(2**64).encode()
              + b',"method":"tools/call","params":{"name":"tmux_capabilities","arguments":{}}}\n')
    reply = json.loads(raw_line(raw))
    assert reply["id"] == 2**64 and reply["result"]["structuredContent"]["ok"] is True, reply
    # Not an id at all: a fraction, null, an object. -32600 with id null.
    for bad in (b"1.5", b"null", b"{}"):
        raw.write(b'{"jsonrpc":"2.0","id":' + bad + b',"method":"ping"}\n')
        assert_error(raw.next_message(), -32600, None)
    assert_serving(raw, 30)
    raw.close()
