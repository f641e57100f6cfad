"""A scripted fake model server on loopback for tests that run real agent CLIs.

The server speaks a model provider's HTTP API (one `Wire` per format) on
127.0.0.1 with a free port, records every request, and answers each model
request with the next move of a `Script`: call a tool, or answer with text.
The script sees a wire-neutral `Turn` (the tools the client offered its model,
the tool results it sent back), so one script serves every wire format.

Wire formats: `OpenAIResponses` (the OpenAI Responses API, `POST /v1/responses`
with `stream: true`, as Codex CLI uses it), `AnthropicMessages` (`POST
/v1/messages`, as Claude Code uses it) and `GeminiGenerateContent` (`POST
/v1beta/models/M:streamGenerateContent`, as Gemini CLI uses it). Another format
is one more `Wire` subclass: `parse` a request body into a `Turn`, `render` a
`Reply`.

The same port is also an HTTP proxy that refuses everything: point
HTTPS_PROXY/HTTP_PROXY at `server.proxy_url` (with NO_PROXY for loopback) and
every connection the client tries to make beyond loopback is recorded in
`server.outbound` and answered 403, so nothing leaves the machine.
"""

from __future__ import annotations

import gzip
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union

# --------------------------------------------------------------------------
# Wire-neutral view of a model request and of the model's answer
# --------------------------------------------------------------------------


@dataclass
class Tool:
    name: str
    description: str
    parameters: Any
    # The group the client put the tool in, when it groups them (Codex sends
    # each MCP server's tools as one Responses API `namespace`, e.g. `mcp__tmux`).
    namespace: str | None = None
    namespace_description: str | None = None

    @property
    def qualified(self) -> str:
        return f"{self.namespace}.{self.name}" if self.namespace else self.name


@dataclass
class ToolResult:
    call_id: str
    output: str
    is_error: bool = False  # when the wire format says so (Anthropic's tool_result)


@dataclass
class Turn:
    """What one model request carries, whatever the wire format."""
    tools: list[Tool]
    tool_results: list[ToolResult]
    body: Any  # the raw request body (parsed JSON)
    prompt: str = ""  # the text of the last user message (what a person typed, when a person did)
    after_tool: bool = False  # the request ends with a tool's result (the model's turn goes on)

    def find(self, name: str) -> list[Tool]:
        """The offered tools called `name`: bare (also inside a namespace, as
        Codex sends MCP tools) or behind a client's prefix (`mcp__tmux__capture_pane`)."""
        return [t for t in self.tools if t.name == name or t.name.endswith("_" + name)]


@dataclass
class ToolCall:
    tool: Tool
    arguments: dict[str, Any]
    call_id: str


@dataclass
class Text:
    """A text answer. With `seconds` > 0 it is streamed slowly: split into
    `chunks` pieces (at least 2), one wire event each, spread over `seconds`
    (the first after a pause), so the client shows its "working" state; with
    `wait` > 0 the answer starts only after `wait` s (a model's time to its
    first token: the client shows its spinner with no text yet)."""
    text: str
    seconds: float = 0.0
    chunks: int = 10
    wait: float = 0.0

    def pieces(self) -> list[str]:
        """The text split into the chunks it is streamed in (one piece when not slow)."""
        if self.seconds <= 0:
            return [self.text]
        n = max(2, min(self.chunks, len(self.text) or 1))
        step = -(-len(self.text) // n)
        return [self.text[i:i + step] for i in range(0, len(self.text), step)] or [""]


Reply = Union[ToolCall, Text]
Script = Callable[[Turn], Reply]


@dataclass
class Streamed:
    """An answer body sent in pieces with a pause before each (chunked
    transfer encoding): what `Wire.render` returns for a slow `Text`; the
    status line waits `wait` s."""
    pieces: list[bytes]
    pause: float
    wait: float = 0.0


@dataclass
class Request:
    """One request the server received (model requests and everything else)."""
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON when it was JSON, else the raw bytes
    wire: str | None = None  # the wire format that answered it
    reply: Reply | None = None
    at: float = field(default_factory=time.monotonic)


# --------------------------------------------------------------------------
# Wire formats
# --------------------------------------------------------------------------


class Wire:
    name = "?"

    def handles(self, method: str, path: str) -> bool:
        raise NotImplementedError

    def parse(self, body: Any) -> Turn:
        raise NotImplementedError

    def render(self, reply: Reply, body: Any, seq: int, path: str) -> tuple[int, str, bytes | Streamed]:
        """(status, content type, body) of the answer to a model request; the
        body is `Streamed` for a slow `Text` (`Text.seconds`)."""
        raise NotImplementedError

    def other(self, method: str, path: str) -> tuple[int, str, bytes] | None:
        """An answer to a non-model request of this API (e.g. a model list), or None."""
        return None


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _slow(reply: Reply, head: bytes, middle: list[bytes], tail: bytes) -> bytes | Streamed:
    """The SSE body: all at once, or (a slow Text) the head, then each middle
    piece after a pause, then the tail."""
    if isinstance(reply, Text) and (reply.seconds > 0 or reply.wait > 0):
        pieces = [head, *middle[:-1], middle[-1] + tail] if middle else [head, tail]
        return Streamed(pieces, reply.seconds / max(1, len(pieces) - 1), reply.wait)
    return head + b"".join(middle) + tail


def _last_user_text(messages: Any, role_key: str = "role", user: str = "user",
                    content_key: str = "content") -> str:
    """The text of the last message of role `user` that carries text."""
    for msg in reversed(messages or []):
        if not isinstance(msg, dict) or msg.get(role_key) != user:
            continue
        content = msg.get(content_key)
        if isinstance(content, str):
            return content
        texts = [c.get("text") for c in content or [] if isinstance(c, dict) and isinstance(c.get("text"), str)]
        if texts:
            return "\n".join(texts)
    return ""


class OpenAIResponses(Wire):
    """The OpenAI Responses API as a streaming client uses it: `POST
    {base}/responses` with `stream: true`, answered with server-sent events
    response.created, response.output_item.added, (response.output_text.delta,)
    response.output_item.done, response.completed.

    What Codex CLI 0.171 sends: `model`, `stream: true`, `input` (developer and
    user messages, then the turn's items: the `function_call` it was given and
    its `function_call_output`, whose `output` is a string or a list of
    `input_text` items), `tools`, `tool_choice`, `parallel_tool_calls`,
    `reasoning`, `store: false`, `include`, `prompt_cache_key`,
    `client_metadata`. Its own tools are `function` entries; each MCP server's
    tools come as one `{"type": "namespace", "name": "mcp__<server>",
    "description": <the server's instructions>, "tools": [function...]}`, and a
    call of one carries the bare `name` plus `"namespace": "mcp__<server>"`."""

    name = "openai-responses"

    def __init__(self, model: str = "fake-model") -> None:
        self.model = model

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?", 1)[0].rstrip("/").endswith("/responses")

    def parse(self, body: Any) -> Turn:
        tools: list[Tool] = []
        for t in body.get("tools") or []:
            if t.get("type") == "function" and "name" in t:
                tools.append(Tool(t["name"], t.get("description", ""), t.get("parameters")))
            elif t.get("type") == "namespace":
                for inner in t.get("tools") or []:
                    if inner.get("type") == "function" and "name" in inner:
                        tools.append(Tool(inner["name"], inner.get("description", ""),
                                          inner.get("parameters"), t.get("name"), t.get("description")))
        results = []
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output"):
                out = item.get("output")
                if isinstance(out, list):  # content items
                    out = "\n".join(str(c.get("text", "")) for c in out if isinstance(c, dict))
                elif isinstance(out, dict):
                    out = out.get("content") if isinstance(out.get("content"), str) else json.dumps(out)
                results.append(ToolResult(str(item.get("call_id", "")), str(out)))
        msgs = [i for i in body.get("input") or [] if isinstance(i, dict) and i.get("type", "message") == "message"]
        last = (body.get("input") or [{}])[-1]
        after = isinstance(last, dict) and last.get("type") in ("function_call_output", "custom_tool_call_output")
        return Turn(tools, results, body, _last_user_text(msgs), after)

    def render(self, reply: Reply, body: Any, seq: int, path: str) -> tuple[int, str, bytes]:
        resp_id = f"resp_fake_{seq}"
        if isinstance(reply, ToolCall):
            item = {"type": "function_call", "id": f"fc_fake_{seq}", "status": "completed",
                    "name": reply.tool.name, "arguments": json.dumps(reply.arguments),
                    "call_id": reply.call_id}
            if reply.tool.namespace:
                item["namespace"] = reply.tool.namespace
        else:
            item = {"type": "message", "id": f"msg_fake_{seq}", "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}
        base = {"id": resp_id, "object": "response", "created_at": int(time.time()),
                "model": body.get("model", self.model)}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 15}
        started = dict(item, status="in_progress")
        if started["type"] == "message":
            started["content"] = []
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": dict(base, status="in_progress", output=[])},
            {"type": "response.output_item.added", "output_index": 0, "item": started},
        ]
        deltas = [_sse([{"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
                         "content_index": 0, "delta": piece}]) for piece in reply.pieces()] \
            if isinstance(reply, Text) else []
        tail = [
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed",
             "response": dict(base, status="completed", output=[item], usage=usage)},
        ]
        return 200, "text/event-stream", _slow(reply, _sse(events), deltas, _sse(tail))

    def other(self, method: str, path: str) -> tuple[int, str, bytes] | None:
        if method == "GET" and path.split("?", 1)[0].rstrip("/").endswith("/models"):
            data = {"object": "list", "data": [
                {"id": self.model, "object": "model", "created": 0, "owned_by": "fake"}]}
            return 200, "application/json", json.dumps(data).encode()
        return None



class AnthropicMessages(Wire):
    """The Anthropic Messages API: `POST {base}/v1/messages`, streamed
    (`stream: true`: events message_start, content_block_start/delta/stop,
    message_delta, message_stop) or not (one message object). Tools are
    `{name, description, input_schema}`; a tool's result comes back as a
    `tool_result` block (`tool_use_id`, `content`: a string or text blocks) in
    a user message."""

    name = "anthropic-messages"

    def __init__(self, model: str = "fake-model") -> None:
        self.model = model

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?", 1)[0].rstrip("/").endswith("/v1/messages")

    def parse(self, body: Any) -> Turn:
        tools = [Tool(t["name"], t.get("description", ""), t.get("input_schema"))
                 for t in body.get("tools") or [] if isinstance(t, dict) and "name" in t]
        results = []
        for msg in body.get("messages") or []:
            content = msg.get("content") if isinstance(msg, dict) else None
            if msg.get("role") != "user" or not isinstance(content, list):
                continue
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out = block.get("content")
                    if isinstance(out, list):
                        out = "\n".join(str(c.get("text", "")) for c in out if isinstance(c, dict))
                    results.append(ToolResult(str(block.get("tool_use_id", "")), str(out or ""),
                                              bool(block.get("is_error"))))
        last = (body.get("messages") or [{}])[-1]
        blocks = last.get("content") if isinstance(last, dict) and last.get("role") == "user" else None
        after = isinstance(blocks, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks) and not any(
            isinstance(b, dict) and b.get("type") == "text" and not b.get("text", "").startswith("<")
            for b in blocks)
        return Turn(tools, results, body, _last_user_text(body.get("messages")), after)

    def render(self, reply: Reply, body: Any, seq: int, path: str) -> tuple[int, str, bytes]:
        if isinstance(reply, ToolCall):
            block = {"type": "tool_use", "id": reply.call_id, "name": reply.tool.name,
                     "input": reply.arguments}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": reply.text}
            stop = "end_turn"
        message = {"id": f"msg_fake_{seq}", "type": "message", "role": "assistant",
                   "model": body.get("model", self.model), "content": [block],
                   "stop_reason": stop, "stop_sequence": None,
                   "usage": {"input_tokens": 10, "output_tokens": 5}}
        if not body.get("stream"):
            return 200, "application/json", json.dumps(message).encode()
        if block["type"] == "tool_use":
            start = dict(block, input={})
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(reply.arguments)}]
        else:
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in reply.pieces()]
        head = [
            {"type": "message_start", "message": dict(message, content=[], stop_reason=None,
                                                      usage={"input_tokens": 10, "output_tokens": 1})},
            {"type": "content_block_start", "index": 0, "content_block": start},
        ]
        tail = [
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
             "usage": {"output_tokens": 5}},
            {"type": "message_stop"},
        ]
        middle = [_sse([{"type": "content_block_delta", "index": 0, "delta": d}]) for d in deltas]
        return 200, "text/event-stream", _slow(reply, _sse(head), middle, _sse(tail))

    def other(self, method: str, path: str) -> tuple[int, str, bytes] | None:
        if method == "POST" and path.split("?", 1)[0].rstrip("/").endswith("/v1/messages/count_tokens"):
            return 200, "application/json", json.dumps({"input_tokens": 10}).encode()
        return None


class GeminiGenerateContent(Wire):
    """The Gemini API (generativelanguage): `POST {base}/v1beta/models/MODEL:
    streamGenerateContent?alt=sse` (or `:generateContent`), answered with one
    SSE chunk (or one object) holding a candidate whose parts are the reply:
    a `functionCall {name, args, id}` or `text`. Tools are
    `{"functionDeclarations": [{name, description, parameters or
    parametersJsonSchema}]}`; a result comes back as a `functionResponse
    {name, id, response}` part."""

    name = "gemini-generate-content"

    def __init__(self, model: str = "fake-model") -> None:
        self.model = model

    def handles(self, method: str, path: str) -> bool:
        p = path.split("?", 1)[0]
        return method == "POST" and (p.endswith(":streamGenerateContent") or p.endswith(":generateContent"))

    def parse(self, body: Any) -> Turn:
        tools = []
        for group in body.get("tools") or []:
            for d in (group.get("functionDeclarations") or []) if isinstance(group, dict) else []:
                if "name" in d:
                    tools.append(Tool(d["name"], d.get("description", ""),
                                      d.get("parametersJsonSchema", d.get("parameters"))))
        results = []
        for content in body.get("contents") or []:
            for part in content.get("parts") or [] if isinstance(content, dict) else []:
                fr = part.get("functionResponse") if isinstance(part, dict) else None
                if isinstance(fr, dict):
                    results.append(ToolResult(str(fr.get("id") or fr.get("name", "")),
                                              json.dumps(fr.get("response"))))
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        parts = (contents or [{}])[-1].get("parts") or []
        after = any(isinstance(p, dict) and "functionResponse" in p for p in parts)
        return Turn(tools, results, body, _last_user_text(contents, content_key="parts"), after)

    def render(self, reply: Reply, body: Any, seq: int, path: str) -> tuple[int, str, bytes]:
        if isinstance(reply, ToolCall):
            part = {"functionCall": {"name": reply.tool.name, "args": reply.arguments, "id": reply.call_id}}
        else:
            part = {"text": reply.text}
        chunk = {"candidates": [{"content": {"role": "model", "parts": [part]},
                                 "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                 "modelVersion": self.model, "responseId": f"fake_{seq}"}
        if ":streamGenerateContent" not in path:
            return 200, "application/json", json.dumps(chunk).encode()
        if isinstance(reply, Text) and (reply.seconds > 0 or reply.wait > 0):
            pieces = reply.pieces()
            middle = []
            for i, piece in enumerate(pieces):
                c = json.loads(json.dumps(chunk))
                c["candidates"][0]["content"]["parts"] = [{"text": piece}]
                if i < len(pieces) - 1:
                    del c["candidates"][0]["finishReason"]
                middle.append(f"data: {json.dumps(c)}\r\n\r\n".encode())
            return 200, "text/event-stream", _slow(reply, b"", middle, b"")
        return 200, "text/event-stream", f"data: {json.dumps(chunk)}\r\n\r\n".encode()

    def other(self, method: str, path: str) -> tuple[int, str, bytes] | None:
        if method == "POST" and path.split("?", 1)[0].endswith(":countTokens"):
            return 200, "application/json", json.dumps({"totalTokens": 10}).encode()
        return None

class OpenAIChat(Wire):
    """The OpenAI Chat Completions API (`POST {base}/chat/completions`), as
    aider (through litellm) and other OpenAI-compatible clients use it:
    streamed (`stream: true`: `data: {chat.completion.chunk}` lines, then
    `data: [DONE]`) or one `chat.completion` object. Tools are `{"type":
    "function", "function": {name, description, parameters}}`; a result
    comes back as a `{"role": "tool", "tool_call_id", "content"}` message."""

    name = "openai-chat"

    def __init__(self, model: str = "fake-model") -> None:
        self.model = model

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?", 1)[0].rstrip("/").endswith("/chat/completions")

    def parse(self, body: Any) -> Turn:
        tools = [Tool(f["name"], f.get("description", ""), f.get("parameters"))
                 for t in body.get("tools") or [] if isinstance(t, dict)
                 for f in [t.get("function") or {}] if "name" in f]
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        results = [ToolResult(str(m.get("tool_call_id", "")),
                              m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content")))
                   for m in msgs if m.get("role") == "tool"]
        after = bool(msgs) and msgs[-1].get("role") == "tool"
        return Turn(tools, results, body, _last_user_text(msgs), after)

    def render(self, reply: Reply, body: Any, seq: int, path: str) -> tuple[int, str, bytes | Streamed]:
        base = {"id": f"chatcmpl-fake-{seq}", "created": int(time.time()), "model": body.get("model", self.model)}
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if isinstance(reply, ToolCall):
            call = {"id": reply.call_id, "type": "function",
                    "function": {"name": reply.tool.name, "arguments": json.dumps(reply.arguments)}}
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": reply.text}, "stop"
        if not body.get("stream"):
            obj = dict(base, object="chat.completion", usage=usage,
                       choices=[{"index": 0, "message": message, "finish_reason": finish}])
            return 200, "application/json", json.dumps(obj).encode()

        def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> bytes:
            obj = dict(base, object="chat.completion.chunk",
                       choices=[{"index": 0, "delta": delta, "finish_reason": finish_reason}], **extra)
            return f"data: {json.dumps(obj)}\n\n".encode()

        head = chunk({"role": "assistant", "content": ""})
        if isinstance(reply, ToolCall):
            middle = [chunk({"tool_calls": [dict(message["tool_calls"][0], index=0)]})]
        else:
            middle = [chunk({"content": piece}) for piece in reply.pieces()]
        tail = chunk({}, finish, usage=usage) + b"data: [DONE]\n\n"
        return 200, "text/event-stream", _slow(reply, head, middle, tail)

    def other(self, method: str, path: str) -> tuple[int, str, bytes] | None:
        if method == "GET" and path.split("?", 1)[0].rstrip("/").endswith("/models"):
            data = {"object": "list", "data": [
                {"id": self.model, "object": "model", "created": 0, "owned_by": "fake"}]}
            return 200, "application/json", json.dumps(data).encode()
        return None


# --------------------------------------------------------------------------
# Scripts
# --------------------------------------------------------------------------


def call_tool_then_answer(tool_name: str, arguments: dict[str, Any],
                          final_text: str = "done") -> Script:
    """Turn 1: call the offered tool `tool_name` (see `Turn.find`: clients
    prefix or group MCP tools by their server's name). Once a request carries that
    call's result: answer `final_text`. A request that offers no such tool is
    answered with text naming the problem (the test then fails on its asserts)."""
    call_id = "call_fake_capture_1"

    def script(turn: Turn) -> Reply:
        if any(r.call_id == call_id for r in turn.tool_results):
            return Text(final_text)
        matches = turn.find(tool_name)
        if len(matches) != 1:
            return Text(f"fake model: expected one tool named {tool_name}, got "
                        f"{sorted(t.qualified for t in turn.tools)}")
        return ToolCall(matches[0], arguments, call_id)

    return script


def call_tools_then_answer(calls: list[tuple[str, dict[str, Any]]], final_text: str = "done") -> Script:
    """Call each offered tool of `calls` in turn, one a model request (call id
    `call_fake_N`, N from 1), each once the previous call's result came back;
    then answer `final_text`. A request that offers no such tool is answered
    with text naming the problem (the test then fails on its asserts)."""
    ids = [f"call_fake_{n}" for n in range(1, len(calls) + 1)]

    def script(turn: Turn) -> Reply:
        done = {r.call_id for r in turn.tool_results}
        for (tool_name, arguments), call_id in zip(calls, ids):
            if call_id in done:
                continue
            matches = turn.find(tool_name)
            if len(matches) != 1:
                return Text(f"fake model: expected one tool named {tool_name}, got "
                            f"{sorted(t.qualified for t in turn.tools)}")
            return ToolCall(matches[0], arguments, call_id)
        return Text(final_text)

    return script


# --------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------


class FakeModelServer:
    """`with FakeModelServer(OpenAIResponses(), script) as fake:` — serving on
    `fake.base_url` (http://127.0.0.1:PORT) until the block ends."""

    def __init__(self, wire: Wire, script: Script) -> None:
        self.wire = wire
        self.script = script
        self.requests: list[Request] = []   # every request to this server, in order
        self.outbound: list[str] = []       # proxy requests: where the client tried to go
        self.errors: list[str] = []         # exceptions while answering
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.proxy_url = self.base_url
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "FakeModelServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def model_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.wire == self.wire.name]

    def turns(self) -> list[Turn]:
        return [self.wire.parse(r.body) for r in self.model_requests()]

    def proxy_env(self) -> dict[str, str]:
        """Environment that sends every non-loopback HTTP(S) connection to the
        refusing proxy (recorded in `outbound`)."""
        env = {}
        for k in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
            env[k] = env[k.lower()] = self.proxy_url
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost,::1"
        return env

    def describe(self) -> str:
        """Every request, for failure messages."""
        lines = []
        with self._lock:
            reqs = list(self.requests)
        for r in reqs:
            body = r.body if not isinstance(r.body, bytes) else r.body[:200]
            text = json.dumps(body) if not isinstance(body, bytes) else repr(body)
            lines.append(f"{r.method} {r.path} wire={r.wire} reply={r.reply!r} body={text[:3000]}")
        if self.outbound:
            lines.append(f"outbound (refused): {self.outbound}")
        if self.errors:
            lines.append(f"errors: {self.errors}")
        return "\n".join(lines) or "(no requests)"

    # ---- request handling --------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt: str, *args: Any) -> None:
                pass

            def _send(self, status: int, ctype: str, data: bytes | Streamed) -> None:
                if isinstance(data, Streamed):
                    self._send_streamed(status, ctype, data)
                    return
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                if ctype == "text/event-stream":
                    self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

            def _send_streamed(self, status: int, ctype: str, data: Streamed) -> None:
                time.sleep(data.wait)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for i, piece in enumerate(data.pieces):
                    if i:
                        time.sleep(data.pause)
                    if piece:
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def do_CONNECT(self) -> None:
                with server._lock:
                    server.outbound.append(f"CONNECT {self.path}")
                self._send(403, "text/plain", b"fake model server: no network in tests\n")
                self.close_connection = True

            def _handle(self) -> None:
                try:
                    server._answer(self)
                except Exception as e:  # noqa: BLE001
                    with server._lock:
                        server.errors.append(f"{self.command} {self.path}: {e!r}")
                    try:
                        self._send(500, "text/plain", f"fake model server error: {e!r}\n".encode())
                    except OSError:
                        pass

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _handle

        return Handler

    def _answer(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        if (h.headers.get("Content-Encoding") or "").lower() == "gzip":
            raw = gzip.decompress(raw)
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        req = Request(h.command, h.path, {k.lower(): v for k, v in h.headers.items()}, body)
        with self._lock:
            self.requests.append(req)
        if h.path.startswith(("http://", "https://")):  # a plain-HTTP proxy request
            with self._lock:
                self.outbound.append(f"{h.command} {h.path}")
            h._send(403, "text/plain", b"fake model server: no network in tests\n")  # type: ignore[attr-defined]
            return
        if self.wire.handles(h.command, h.path) and isinstance(body, dict):
            turn = self.wire.parse(body)
            reply = self.script(turn)
            req.wire, req.reply = self.wire.name, reply
            status, ctype, data = self.wire.render(reply, body, next(self._seq), h.path)
        else:
            answer = self.wire.other(h.command, h.path)
            status, ctype, data = answer or (404, "application/json", json.dumps(
                {"error": {"message": f"fake model server: no route {h.command} {h.path}"}}).encode())
        h._send(status, ctype, data)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------
# Scripts for an interactive CLI (tui.py): what a person typed decides
# --------------------------------------------------------------------------

# The CLIs' own shell tools: Claude Code `Bash` {command, description}, Codex
# `exec_command` {cmd} / `shell` {command: [argv]} / `shell_command` {command},
# Gemini CLI `run_shell_command` {command, description}, opencode `bash`
# {command, description, ...}.
SHELL_TOOLS = ("Bash", "exec_command", "shell_command", "shell", "local_shell", "run_shell_command", "bash")


def shell_call(turn: Turn, command: str, call_id: str) -> ToolCall | None:
    """A call of the client's own shell tool (the first of SHELL_TOOLS it
    offers, outside any MCP namespace) running `command`, with arguments
    shaped by the tool's schema; None when it offers none."""
    for name in SHELL_TOOLS:
        tools = [t for t in turn.tools if t.name == name and t.namespace is None]
        if not tools:
            continue
        tool = tools[0]
        props = (tool.parameters or {}).get("properties") or {}
        key = "cmd" if "cmd" in props and "command" not in props else "command"
        value: Any = command
        if (props.get(key) or {}).get("type") == "array":
            value = ["bash", "-lc", command]
        args: dict[str, Any] = {key: value}
        if "description" in props:
            args["description"] = "Print a word"
        if "require_escalated" in ((props.get("sandbox_permissions") or {}).get("enum") or []):
            # Codex: run outside its sandbox, which needs the person's approval
            # (approval_policy "on-request"; a sandboxed command runs unasked).
            args["sandbox_permissions"] = "require_escalated"
            args["justification"] = "May I write a file in the working directory?"
        return ToolCall(tool, args, call_id)
    return None


def interactive_script(slow_seconds: float = 15.0, answer: str = "Hello from the fake model.",
                       shell_commands: tuple[str, ...] = ("echo hi > hi.txt", "touch marker.txt"),
                       slow_wait: float = 0.0,
                       long_command: str = "sleep 12 && echo slept > slept.txt",
                       shell_as_text: bool = False) -> Script:
    """A script for a person typing at the CLI's prompt. The words in the
    prompt decide the answer:
    - `SLOW`: a text answer streamed over `slow_seconds`, after `slow_wait` s
      with nothing (the "working" states: spinner only, then streaming);
    - `SHELL` and `LONG`: as `SHELL`, with `long_command` (a command that
      runs for a while once approved);
    - `SHELL`: a call of the CLI's own shell tool (`shell_call`) running the
      next of `shell_commands`, in turn (its approval dialog, unless the CLI
      was told to run it unasked: the defaults write a file, since CLIs run
      a read-only command such as a bare `echo hi` without asking); once the
      result is back, a short text answer;
    - anything else: `answer` at once (then the CLI waits for input).
    A request that offers no tools (a CLI's side request: a title, a topic) is
    answered with a short text at once; unless `shell_as_text` (a client that
    offers its model no tools, as aider): then every request is the person's,
    and `SHELL` is answered with the command in a ```bash block (aider offers
    to run it)."""
    lock = threading.Lock()
    issued: dict[str, str] = {}   # call id -> the prompt it answered
    answered: set[str] = set()
    seq = itertools.count(1)

    def script(turn: Turn) -> Reply:
        if shell_as_text:
            prompt = turn.prompt
            if "SLOW" in prompt:
                words = " ".join(f"word{i}" for i in range(1, 41))
                return Text(f"Streaming slowly: {words}. Done.", seconds=slow_seconds, chunks=20, wait=slow_wait)
            if "SHELL" in prompt:
                with lock:
                    n = next(seq)
                command = long_command if "LONG" in prompt else shell_commands[(n - 1) % len(shell_commands)]
                return Text(f"Run this:\n\n```bash\n{command}\n```\n")
            return Text(answer)
        if not turn.tools:
            return Text("Fake title")
        with lock:
            pending = [r for r in turn.tool_results if r.call_id in issued and r.call_id not in answered]
            answered.update(r.call_id for r in pending)
            if pending and turn.after_tool:
                return Text(f"The command ran; it printed: {pending[-1].output.strip()[:60]}")
            prompt = turn.prompt
            if "SLOW" in prompt:
                words = " ".join(f"word{i}" for i in range(1, 41))
                return Text(f"Streaming slowly: {words}. Done.", seconds=slow_seconds, chunks=20, wait=slow_wait)
            if "SHELL" in prompt and prompt not in issued.values():
                n = next(seq)
                command = long_command if "LONG" in prompt else shell_commands[(n - 1) % len(shell_commands)]
                call = shell_call(turn, command, f"call_shell_{n}")
                if call is None:
                    return Text(f"fake model: no shell tool among {sorted(t.qualified for t in turn.tools)}")
                issued[call.call_id] = prompt
                return call
        return Text(answer)

    return script
