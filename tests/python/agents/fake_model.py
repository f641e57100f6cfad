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
    text: str


Reply = Union[ToolCall, Text]
Script = Callable[[Turn], Reply]


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

    def render(self, reply: Reply, body: Any, seq: int, path: str) -> tuple[int, str, bytes]:
        """(status, content type, body) of the answer to a model request."""
        raise NotImplementedError

    def other(self, method: str, path: str) -> tuple[int, str, bytes] | None:
        """An answer to a non-model request of this API (e.g. a model list), or None."""
        return None


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


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
        return Turn(tools, results, body)

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
        if isinstance(reply, Text):
            events.append({"type": "response.output_text.delta", "item_id": item["id"],
                           "output_index": 0, "content_index": 0, "delta": reply.text})
        events += [
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed",
             "response": dict(base, status="completed", output=[item], usage=usage)},
        ]
        return 200, "text/event-stream", _sse(events)

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
        return Turn(tools, results, body)

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
            delta = {"type": "input_json_delta", "partial_json": json.dumps(reply.arguments)}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events = [
            {"type": "message_start", "message": dict(message, content=[], stop_reason=None,
                                                      usage={"input_tokens": 10, "output_tokens": 1})},
            {"type": "content_block_start", "index": 0, "content_block": start},
            {"type": "content_block_delta", "index": 0, "delta": delta},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
             "usage": {"output_tokens": 5}},
            {"type": "message_stop"},
        ]
        return 200, "text/event-stream", _sse(events)

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
        return Turn(tools, results, body)

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
        return 200, "text/event-stream", f"data: {json.dumps(chunk)}\r\n\r\n".encode()

    def other(self, method: str, path: str) -> tuple[int, str, bytes] | None:
        if method == "POST" and path.split("?", 1)[0].endswith(":countTokens"):
            return 200, "application/json", json.dumps({"totalTokens": 10}).encode()
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

            def _send(self, status: int, ctype: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                if ctype == "text/event-stream":
                    self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                self.wfile.write(data)
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
