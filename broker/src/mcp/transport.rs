//! The line framing in front of rmcp: one `\n`-terminated JSON-RPC message per
//! line, at most [`MAX_FRAME_BYTES`], over the relay connection.
//!
//! rmcp's own stream transport silently skips unparsable lines, answers a
//! wrong-shaped one without its id, and its `RequestId` holds only `i64` or a
//! string. This layer keeps the broker's rules instead (ARCHITECTURE.md, "MCP
//! layer"):
//! - a line that is not UTF-8 JSON gets -32700, a too-long line or a value that
//!   is not a request object gets -32600, both with `"id": null`; the session
//!   goes on;
//! - every request that parses gets exactly one answer carrying its id exactly
//!   as sent: each request id is swapped for an internal number on the way in
//!   and the original bytes are put back on the way out (so integers beyond 64
//!   bits and strings with escapes come back byte for byte);
//! - a request rmcp cannot decode (params of the wrong shape) is answered here
//!   with -32602 naming what was wrong;
//! - before `initialize`, only `ping`, `initialize` and `server/discover` are
//!   served, and requests that carry their own protocol version in `_meta`
//!   (the 2026-07-28 era has no handshake); one that carries other keys of
//!   that era's `_meta` but no version gets -32602 naming the key, anything
//!   else -32600, and nothing runs. A version that is not a string is -32602
//!   at any time. Decided here, in arrival order: rmcp runs each request in a
//!   task of its own, so a gate behind it could let a call that follows
//!   `initialize` on the same line stream (the relay's replay) race it.
//!
//! End of input is the client going away: `gone` fires, and the handler stops
//! running tool calls at once.

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, NumberOrString, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::service::RoleServer;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tmux_mcp_core::limits::MAX_FRAME_BYTES;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// Outgoing lines waiting for the writer task. Bounded, so a client that stops
/// reading slows the handlers down instead of growing the queue.
const OUT_QUEUE: usize = 64;

/// The `_meta` key of a request that names its own protocol version (2026-07-28).
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// Request ids as the client sent them (JSON text), by the internal id rmcp sees.
#[derive(Default)]
struct Ids {
    next: i64,
    raw: HashMap<i64, Box<str>>,
    by_raw: HashMap<Box<str>, i64>,
}

impl Ids {
    fn intern(&mut self, raw: &str) -> i64 {
        self.next += 1;
        let n = self.next;
        self.raw.insert(n, raw.into());
        self.by_raw.insert(canonical(raw), n);
        n
    }

    /// The client's id for internal id `n`, forgotten once answered.
    fn take(&mut self, n: i64) -> Option<Box<str>> {
        let raw = self.raw.remove(&n)?;
        let key = canonical(&raw);
        if self.by_raw.get(&key) == Some(&n) {
            self.by_raw.remove(&key);
        }
        Some(raw)
    }

    /// The internal id of the latest request the client sent as `raw`; it is
    /// forgotten: a cancelled request is not answered (rmcp drops its result).
    fn cancel(&mut self, raw: &str) -> Option<i64> {
        let n = self.by_raw.remove(&canonical(raw))?;
        self.raw.remove(&n);
        Some(n)
    }
}

pub struct LineTransport<R> {
    reader: BufReader<R>,
    /// The line being read; kept across calls because rmcp polls `receive`
    /// inside a `select!` and may drop it between two reads.
    line: Vec<u8>,
    /// Bytes of an oversized line counted so far (its rest is skipped).
    overflow: usize,
    /// An answer this layer owes the client (to a line rmcp never saw).
    pending: Option<Vec<u8>>,
    out: Option<mpsc::Sender<Vec<u8>>>,
    ids: Arc<Mutex<Ids>>,
    gone: CancellationToken,
    /// Whether the client has sent `initialize` (the lifecycle's first request).
    initialized: bool,
}

impl<R: AsyncRead + Unpin + Send + 'static> LineTransport<R> {
    /// The transport, and the writer task to await once rmcp is done (it ends
    /// when every queued line is written, then shuts the write side down).
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(
        reader: R,
        writer: W,
        gone: CancellationToken,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel(OUT_QUEUE);
        let task = tokio::spawn(write_loop(writer, rx, gone.clone()));
        let t = LineTransport {
            reader: BufReader::new(reader),
            line: Vec::new(),
            overflow: 0,
            pending: None,
            out: Some(tx),
            ids: Arc::default(),
            gone,
            initialized: false,
        };
        (t, task)
    }

    /// Reads one line into `self.line`. `Ok(false)` at end of input (a last
    /// line without `\n` is still a line). A line longer than the limit is
    /// consumed to its end and reported as `Err(bytes seen)`.
    async fn read_line(&mut self) -> std::io::Result<Result<bool, usize>> {
        loop {
            let chunk = self.reader.fill_buf().await?;
            if chunk.is_empty() {
                if self.overflow > 0 {
                    return Ok(Err(std::mem::take(&mut self.overflow)));
                }
                return Ok(Ok(!self.line.is_empty()));
            }
            let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            if self.overflow == 0 && self.line.len() + take <= MAX_FRAME_BYTES + 1 {
                self.line.extend_from_slice(&chunk[..take]);
            } else {
                self.overflow = self.overflow.max(self.line.len()) + take;
                self.line.clear();
            }
            self.reader.consume(take);
            if done {
                if self.overflow > 0 {
                    return Ok(Err(std::mem::take(&mut self.overflow)));
                }
                return Ok(Ok(true));
            }
        }
    }

    /// What one complete line means: a message for rmcp, an answer of our own,
    /// or nothing (blank lines, responses, undecodable notifications).
    fn decode(&mut self, line: &[u8]) -> Decoded {
        let (text, mut obj) = match json_object(line) {
            Line::Blank => return Decoded::Nothing,
            Line::Invalid(answer) => return Decoded::Reply(answer),
            Line::Object(text, obj) => (text, obj),
        };
        if !obj.contains_key("method") && (obj.contains_key("result") || obj.contains_key("error"))
        {
            return answer_to_broker(obj);
        }
        // The id exactly as written: the lossy `Value` above cannot hold an
        // integer beyond 64 bits.
        let raw_id = match obj.contains_key("id") {
            false => None,
            true => match raw_member(text, "id") {
                Some(raw) if is_string_or_integer(&raw) => Some(raw),
                _ => {
                    return Decoded::Reply(error_line(
                        None,
                        INVALID_REQUEST,
                        "invalid request: \"id\" must be a string or an integer",
                    ))
                }
            },
        };
        let method = match (obj.get("jsonrpc"), obj.get("method")) {
            (Some(Value::String(v)), Some(Value::String(m))) if v == "2.0" => m.clone(),
            _ => return Decoded::Reply(error_line(raw_id.as_deref(), INVALID_REQUEST, "invalid request: needs \"jsonrpc\":\"2.0\", a string \"method\" and a string or integer \"id\"")),
        };
        if obj.get("params").is_some_and(|p| !p.is_object()) {
            return match raw_id {
                Some(id) => Decoded::Reply(error_line(
                    Some(&id),
                    INVALID_PARAMS,
                    "invalid params: \"params\" must be an object",
                )),
                None => Decoded::Nothing,
            };
        }
        let mut call = Map::new();
        call.insert("method".into(), Value::String(method.clone()));
        if let Some(p) = obj.remove("params") {
            call.insert("params".into(), p);
        }
        let Some(raw_id) = raw_id else {
            return self.notification(call, text);
        };
        if let Some((code, refused)) = self.lifecycle(&method, &call) {
            return Decoded::Reply(error_line(Some(&raw_id), code, &refused));
        }
        self.request(&method, &raw_id, call)
    }

    /// A request that may run, as rmcp's: its params decoded for the method,
    /// its id exchanged for a number of ours (the client's is given back on
    /// the answer, `Ids`).
    fn request(&mut self, method: &str, raw_id: &str, call: Map<String, Value>) -> Decoded {
        match serde_json::from_value::<ClientRequest>(Value::Object(call)) {
            // rmcp decodes a known method whose params do not fit as a custom
            // request; that is a caller's mistake, not an unknown method.
            Ok(ClientRequest::CustomRequest(c)) if KNOWN_REQUESTS.contains(&c.method.as_str()) => {
                let why = params_problem(&c.method, c.params.unwrap_or_else(|| json!({})));
                Decoded::Reply(error_line(
                    Some(raw_id),
                    INVALID_PARAMS,
                    &format!("invalid params for {method}: {why}"),
                ))
            }
            Ok(req) => {
                let n = self.ids.lock().unwrap().intern(raw_id);
                Decoded::Message(ClientJsonRpcMessage::request(
                    req,
                    NumberOrString::Number(n),
                ))
            }
            Err(e) => Decoded::Reply(error_line(
                Some(raw_id),
                INVALID_PARAMS,
                &format!("invalid params for {method}: {e}"),
            )),
        }
    }

    /// Why request `method` may not run yet (MCP lifecycle: `initialize`
    /// first), or `None`. `initialize` opens the session whatever its answer.
    fn lifecycle(&mut self, method: &str, call: &Map<String, Value>) -> Option<(i64, String)> {
        if method == "initialize" {
            self.initialized = true;
        }
        let meta = call
            .get("params")
            .and_then(|p| p.get("_meta"))
            .and_then(Value::as_object);
        let own_version = meta.and_then(|m| m.get(PROTOCOL_VERSION_META));
        if own_version.is_some_and(|v| !v.is_string()) {
            return Some((
                INVALID_PARAMS,
                format!("invalid params: _meta[\"{PROTOCOL_VERSION_META}\"] must be a string (a protocol version such as \"2026-07-28\"). Nothing was run."),
            ));
        }
        if self.initialized || own_version.is_some() || matches!(method, "ping" | "server/discover")
        {
            return None;
        }
        // A request of the 2026-07-28 era (it carries that era's `_meta`
        // keys) that lacks its version: the request's mistake, not the
        // lifecycle's.
        if meta.is_some_and(|m| m.keys().any(|k| k.starts_with("io.modelcontextprotocol/"))) {
            return Some((
                INVALID_PARAMS,
                format!("invalid params: _meta[\"{PROTOCOL_VERSION_META}\"] is missing: a request of protocol 2026-07-28 names its version there (or send initialize first, for the older versions). Nothing was run."),
            ));
        }
        Some((INVALID_REQUEST, format!(
            "invalid request: {method} before initialize; send initialize first (or, in protocol 2026-07-28, put the version in params._meta[\"{PROTOCOL_VERSION_META}\"]). Nothing was run."
        )))
    }

    /// A notification for rmcp. `notifications/cancelled` names the request by
    /// the client's id: it is translated, and dropped when that request is not
    /// running (there is nothing to cancel).
    fn notification(&mut self, mut call: Map<String, Value>, text: &str) -> Decoded {
        if call.get("method").and_then(Value::as_str) == Some("notifications/cancelled") {
            let raw = raw_member(text, "params").and_then(|p| raw_member(&p, "requestId"));
            let Some(req) = call.get_mut("params").and_then(|p| p.get_mut("requestId")) else {
                return Decoded::Nothing;
            };
            let Some(n) = raw.and_then(|raw| self.ids.lock().unwrap().cancel(&raw)) else {
                return Decoded::Nothing;
            };
            *req = json!(n);
        }
        match serde_json::from_value::<ClientNotification>(Value::Object(call)) {
            Ok(n) => Decoded::Message(ClientJsonRpcMessage::notification(n)),
            Err(e) => {
                tracing::debug!("undecodable notification ignored: {e}");
                Decoded::Nothing
            }
        }
    }

    async fn flush_pending(&mut self) -> bool {
        let Some(out) = self.out.clone() else {
            return false;
        };
        if let Some(bytes) = self.pending.take() {
            // `reserve` first: if rmcp drops this future while the queue is
            // full, the answer stays pending instead of being lost.
            match out.reserve().await {
                Ok(permit) => permit.send(bytes),
                Err(_) => return false,
            }
        }
        true
    }
}

/// The client-to-server requests of the MCP eras we answer.
const KNOWN_REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "logging/setLevel",
    "completion/complete",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
];

/// Why `params` do not fit `method` (serde's words for the methods whose
/// params we read).
fn params_problem(method: &str, params: Value) -> String {
    let e = match method {
        "tools/call" => serde_json::from_value::<rmcp::model::CallToolRequestParams>(params).err(),
        "initialize" => {
            serde_json::from_value::<rmcp::model::InitializeRequestParams>(params).err()
        }
        "tools/list" | "prompts/list" => {
            serde_json::from_value::<rmcp::model::PaginatedRequestParams>(params).err()
        }
        "prompts/get" => {
            serde_json::from_value::<rmcp::model::GetPromptRequestParams>(params).err()
        }
        "completion/complete" => {
            serde_json::from_value::<rmcp::model::CompleteRequestParams>(params).err()
        }
        _ => None,
    };
    e.map_or_else(
        || "they do not match the method's parameters".to_string(),
        |e| e.to_string(),
    )
}

// One value per line read and moved on at once: the size difference between
// the variants costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
enum Decoded {
    Message(ClientJsonRpcMessage),
    Reply(Vec<u8>),
    Nothing,
}

impl<R: AsyncRead + Unpin + Send + 'static> rmcp::transport::Transport<RoleServer>
    for LineTransport<R>
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let line = encode(item, &self.ids);
        let out = self.out.clone();
        async move {
            let (Some(line), Some(out)) = (line, out) else {
                return Ok(());
            };
            out.send(line).await.map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the client connection is closed",
                )
            })
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if !self.flush_pending().await {
                return None;
            }
            let read = match self.read_line().await {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!("read error: {e}");
                    self.gone.cancel();
                    return None;
                }
            };
            let line = match read {
                Ok(false) => {
                    self.gone.cancel();
                    return None;
                }
                Ok(true) => std::mem::take(&mut self.line),
                Err(n) => {
                    self.pending = Some(error_line(None, INVALID_REQUEST, &format!("request line of {n}+ bytes exceeds the {MAX_FRAME_BYTES}-byte limit; it was discarded")));
                    continue;
                }
            };
            match self.decode(&line) {
                Decoded::Message(m) => return Some(m),
                Decoded::Reply(bytes) => self.pending = Some(bytes),
                Decoded::Nothing => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The writer ends once the handlers' clones of the sender are gone too.
        self.out = None;
        Ok(())
    }
}

/// What the first look at a line finds.
enum Line<'a> {
    /// Nothing to answer.
    Blank,
    /// Not a JSON object: the error line (a parse error or an invalid
    /// request, id null: no id can be read from it).
    Invalid(Vec<u8>),
    /// The line's text without its line end, and the object it holds.
    Object(&'a str, Map<String, Value>),
}

/// One line as a JSON object, or why not. The first step of every line.
fn json_object(line: &[u8]) -> Line<'_> {
    let text = match std::str::from_utf8(line) {
        Ok(t) => t.trim_end_matches(['\n', '\r']),
        Err(e) => {
            return Line::Invalid(error_line(
                None,
                PARSE_ERROR,
                &format!("parse error: not valid UTF-8 ({e})"),
            ))
        }
    };
    if text.trim().is_empty() {
        return Line::Blank;
    }
    let msg: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Line::Invalid(error_line(
                None,
                PARSE_ERROR,
                &format!("parse error: not valid JSON ({e})"),
            ))
        }
    };
    let Value::Object(obj) = msg else {
        return Line::Invalid(error_line(
            None,
            INVALID_REQUEST,
            "invalid request: expected a JSON-RPC object (batches are not supported)",
        ));
    };
    Line::Object(text, obj)
}

/// The answer to a request of the broker's (`elicitation/create`, under
/// `--confirm`), for rmcp, which matches it by the id it gave that request
/// and drops one it did not send; anything else shaped like an answer is
/// nothing.
fn answer_to_broker(obj: Map<String, Value>) -> Decoded {
    match serde_json::from_value::<ClientJsonRpcMessage>(Value::Object(obj)) {
        Ok(m @ (ClientJsonRpcMessage::Response(_) | ClientJsonRpcMessage::Error(_))) => {
            Decoded::Message(m)
        }
        _ => Decoded::Nothing,
    }
}

/// One outgoing line. A response goes out with the client's id as it sent
/// it; one whose request was cancelled (its id forgotten) is not sent.
fn encode(item: ServerJsonRpcMessage, ids: &Mutex<Ids>) -> Option<Vec<u8>> {
    let id = match &item {
        ServerJsonRpcMessage::Response(r) => Some(&r.id),
        ServerJsonRpcMessage::Error(e) => e.id.as_ref(),
        _ => None,
    };
    let raw = match id {
        None => None,
        Some(NumberOrString::Number(n)) => match ids.lock().unwrap().take(*n) {
            Some(raw) => Some(raw),
            None => {
                tracing::debug!(id = n, "answer to a cancelled or unknown request dropped");
                return None;
            }
        },
        // rmcp only answers requests we gave it, and those all carry numbers.
        Some(NumberOrString::String(s)) => Some(Value::String(s.to_string()).to_string().into()),
    };
    let mut bytes = match serde_json::to_vec(&item) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!("cannot encode an outgoing message: {e}");
            return None;
        }
    };
    let Some(raw) = raw else {
        if matches!(item, ServerJsonRpcMessage::Notification(_)) {
            return Some(with_subscription_id(bytes, ids));
        }
        if let (ServerJsonRpcMessage::Error(_), Ok(Value::Object(m))) =
            (&item, serde_json::from_slice::<Value>(&bytes))
        {
            return Some(splice(Some("null"), m)); // JSON-RPC wants `"id": null` here
        }
        bytes.push(b'\n');
        return Some(bytes);
    };
    // The end of a listen stream names it by the listen request's id, which
    // rmcp knows only as our internal number: the client's id goes there too.
    let ends_stream = matches!(&item, ServerJsonRpcMessage::Response(r)
        if matches!(r.result, ServerResult::SubscriptionsListenResult(_)));
    // rmcp writes a response as `{"jsonrpc":"2.0","id":N,…`: swap N for the
    // client's bytes in place (no second encoding of a large result).
    if let (false, Some(NumberOrString::Number(n))) = (ends_stream, id) {
        let prefix = format!("{{\"jsonrpc\":\"2.0\",\"id\":{n},");
        if bytes.starts_with(prefix.as_bytes()) {
            let mut out = Vec::with_capacity(bytes.len() + raw.len());
            out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
            out.extend_from_slice(raw.as_bytes());
            out.push(b',');
            out.extend_from_slice(&bytes[prefix.len()..]);
            out.push(b'\n');
            return Some(out);
        }
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(mut m)) => {
            if ends_stream {
                if let (Some(meta), Ok(client_id)) = (
                    m.get_mut("result")
                        .and_then(|r| r.get_mut("_meta"))
                        .and_then(Value::as_object_mut),
                    serde_json::from_str::<Value>(&raw),
                ) {
                    meta.insert(SUBSCRIPTION_ID.into(), client_id);
                }
            }
            Some(splice(Some(&raw), m))
        }
        _ => None,
    }
}

/// Where a 2026-07-28 notification names the `subscriptions/listen` request
/// it belongs to.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// A notification line, with the listen request's id in `_meta` written back
/// as the client sent it (rmcp knows only our internal number).
fn with_subscription_id(mut bytes: Vec<u8>, ids: &Mutex<Ids>) -> Vec<u8> {
    let needle = format!("\"{SUBSCRIPTION_ID}\"");
    if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
        if let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) {
            let raw = v
                .pointer(&format!(
                    "/params/_meta/{}",
                    SUBSCRIPTION_ID.replace('/', "~1")
                ))
                .and_then(Value::as_i64)
                .and_then(|n| ids.lock().unwrap().raw.get(&n).cloned());
            if let Some(client_id) = raw.and_then(|r| serde_json::from_str::<Value>(&r).ok()) {
                v["params"]["_meta"][SUBSCRIPTION_ID] = client_id;
                bytes = serde_json::to_vec(&v).unwrap_or(bytes);
            }
        }
    }
    bytes.push(b'\n');
    bytes
}

/// `{"jsonrpc":"2.0","id":RAW,…rest}` and a newline.
fn splice(raw_id: Option<&str>, mut rest: Map<String, Value>) -> Vec<u8> {
    rest.remove("jsonrpc");
    rest.remove("id");
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\"");
    if let Some(id) = raw_id {
        out.extend_from_slice(b",\"id\":");
        out.extend_from_slice(id.as_bytes());
    }
    let tail = serde_json::to_vec(&rest).unwrap_or_else(|_| b"{}".to_vec());
    if tail.len() > 2 {
        out.push(b',');
        out.extend_from_slice(&tail[1..tail.len() - 1]);
    }
    out.extend_from_slice(b"}\n");
    out
}

fn error_line(raw_id: Option<&str>, code: i64, message: &str) -> Vec<u8> {
    let mut rest = Map::new();
    rest.insert("error".into(), json!({ "code": code, "message": message }));
    splice(Some(raw_id.unwrap_or("null")), rest)
}

/// The exact text of top-level member `key` of the JSON object `text` (the
/// last one, as for the parsed value, when a key repeats).
fn raw_member(text: &str, key: &str) -> Option<String> {
    let members: HashMap<String, &RawValue> = serde_json::from_str(text).ok()?;
    members.get(key).map(|v| v.get().to_string())
}

/// One spelling per id, so a cancellation finds its request however the
/// client escaped a string id: strings re-encoded, integers as written (exact).
fn canonical(raw: &str) -> Box<str> {
    match serde_json::from_str::<String>(raw) {
        Ok(s) => Value::String(s).to_string().into(),
        Err(_) => raw.into(),
    }
}

/// A JSON string, or an integer written without fraction or exponent.
fn is_string_or_integer(raw: &str) -> bool {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    raw.starts_with('"')
        || (!digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0')))
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
    gone: CancellationToken,
) {
    while let Some(bytes) = rx.recv().await {
        if w.write_all(&bytes).await.is_err() || w.flush().await.is_err() {
            // Nobody reads any more: the client is gone.
            gone.cancel();
            break;
        }
    }
    let _ = w.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transport(input: &'static [u8]) -> LineTransport<&'static [u8]> {
        LineTransport {
            reader: BufReader::with_capacity(8, input),
            line: Vec::new(),
            overflow: 0,
            pending: None,
            out: None,
            ids: Arc::default(),
            gone: CancellationToken::new(),
            initialized: true,
        }
    }

    #[tokio::test]
    async fn long_lines_are_discarded_and_the_stream_stays_in_step() {
        let mut data = vec![b'a'; MAX_FRAME_BYTES + 50];
        data.push(b'\n');
        data.extend_from_slice(b"{\"x\":1}\n");
        let mut t = transport(Box::leak(data.into_boxed_slice()));
        assert!(matches!(t.read_line().await.unwrap(), Err(n) if n > MAX_FRAME_BYTES));
        assert!(matches!(t.read_line().await.unwrap(), Ok(true)));
        assert_eq!(t.line, b"{\"x\":1}\n");
        t.line.clear();
        assert!(matches!(t.read_line().await.unwrap(), Ok(false)));
    }

    #[test]
    fn ids_come_back_byte_for_byte() {
        let mut t = transport(b"");
        for raw in [
            "123456789012345678901234567890",
            "-18446744073709551617",
            "\"a\\u0041\"",
            "7",
        ] {
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{raw},\"method\":\"ping\"}}");
            let Decoded::Message(ClientJsonRpcMessage::Request(req)) = t.decode(line.as_bytes())
            else {
                panic!("{line} did not decode")
            };
            let out = encode(
                ServerJsonRpcMessage::response(rmcp::model::ServerResult::empty(()), req.id),
                &t.ids,
            )
            .unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{raw},\"result\":{{}}}}\n")
            );
        }
        assert!(
            t.ids.lock().unwrap().raw.is_empty(),
            "answered ids are forgotten"
        );
    }

    #[test]
    fn ids_that_are_neither_strings_nor_integers_are_invalid_requests() {
        let mut t = transport(b"");
        for raw in ["1.5", "1e3", "-0.0", "null", "true", "[1]", "{}"] {
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{raw},\"method\":\"ping\"}}");
            let Decoded::Reply(bytes) = t.decode(line.as_bytes()) else {
                panic!("{line} was accepted")
            };
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(v["error"]["code"], INVALID_REQUEST, "{line}");
            assert_eq!(v["id"], Value::Null, "{line}");
        }
    }

    #[test]
    fn a_cancelled_request_is_not_answered() {
        let mut t = transport(b"");
        let Decoded::Message(ClientJsonRpcMessage::Request(req)) =
            t.decode(br#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#)
        else {
            panic!()
        };
        let Decoded::Message(ClientJsonRpcMessage::Notification(_)) = t.decode(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\u0078"}}"#) else { panic!("the escaped id names the same request") };
        assert!(encode(
            ServerJsonRpcMessage::response(rmcp::model::ServerResult::empty(()), req.id),
            &t.ids
        )
        .is_none());
        assert!(matches!(t.decode(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}"#), Decoded::Nothing), "nothing left to cancel");
    }
}
