//! MCP over newline-delimited JSON-RPC on one relay connection.
//!
//! Written directly on serde_json rather than on rmcp's server runtime because the
//! broker must answer both protocol eras on one stream (`initialize` and the
//! 2026-07-28 `server/discover`), reply -32601 to any unknown method at once, and
//! survive whatever bytes a client sends: invalid UTF-8, invalid JSON, wrong
//! types and oversized lines each get a JSON-RPC error and the session goes on.
//! rmcp's client and the official Python SDK drive it in the tests.

use crate::limits::MAX_FRAME_BYTES;
use crate::session::Session;
use crate::tools;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Protocol versions answered by `initialize`, newest first.
pub const INITIALIZE_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The stateless era, answered by `server/discover`.
pub const STATELESS_VERSION: &str = "2026-07-28";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

const INSTRUCTIONS: &str = "tmux-mcp: exact, hook-safe access to this person's tmux server. Every pane reference carries the server generation; a reference from another server instance is refused. Start with tmux_capabilities or list_panes.";

/// Serves one MCP session until the client closes its side.
pub async fn serve<R, W>(mut reader: R, writer: W, session: Arc<Session>)
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Value>(64);
    let writer_task = tokio::spawn(write_loop(writer, rx));
    let inflight: InFlight = Arc::new(Mutex::new(HashMap::new()));
    loop {
        let line = match read_line(&mut reader, MAX_FRAME_BYTES).await {
            Ok(Line::Eof) => break,
            Ok(Line::TooLong(n)) => {
                let _ = tx.send(error(Value::Null, INVALID_REQUEST, &format!("request line of {n}+ bytes exceeds the {MAX_FRAME_BYTES}-byte limit; it was discarded"))).await;
                continue;
            }
            Ok(Line::Data(bytes)) => bytes,
            Err(e) => {
                tracing::debug!(session = session.id, "read error: {e}");
                break;
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let msg: Value = match serde_json::from_slice(&line) {
            Ok(v) => v,
            Err(e) => {
                let _ = tx.send(error(Value::Null, PARSE_ERROR, &format!("parse error: not valid JSON ({e})"))).await;
                continue;
            }
        };
        if let Some(reply) = handle(&session, msg, &tx, &inflight).await {
            if tx.send(reply).await.is_err() {
                break;
            }
        }
    }
    drop(tx);
    // The client is gone: stop its running calls (waits hold no tmux client).
    for (_, h) in inflight.lock().unwrap().drain() {
        h.abort();
    }
    let _ = writer_task.await;
}

/// Running tool calls by request id (as JSON text), for `notifications/cancelled`.
type InFlight = Arc<Mutex<HashMap<String, tokio::task::AbortHandle>>>;

enum Line {
    Data(Vec<u8>),
    TooLong(usize),
    Eof,
}

/// Reads one `\n`-terminated line of at most `max` bytes. A longer line is read
/// to its end and discarded, so the stream stays in step.
async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R, max: usize) -> std::io::Result<Line> {
    let mut buf = Vec::new();
    let mut overflow = 0usize;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if buf.is_empty() && overflow == 0 { Line::Eof } else if overflow > 0 { Line::TooLong(overflow) } else { Line::Data(buf) });
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if overflow == 0 && buf.len() + take <= max + 1 {
            buf.extend_from_slice(&chunk[..take]);
        } else {
            overflow = overflow.max(buf.len()) + take;
            buf.clear();
        }
        r.consume(take);
        if done {
            return Ok(if overflow > 0 { Line::TooLong(overflow) } else { Line::Data(buf) });
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(mut w: W, mut rx: mpsc::Receiver<Value>) {
    while let Some(v) = rx.recv().await {
        let mut bytes = serde_json::to_vec(&v).unwrap_or_default();
        bytes.push(b'\n');
        if w.write_all(&bytes).await.is_err() || w.flush().await.is_err() {
            break;
        }
    }
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// Wraps a method's result. Requests of the stateless era (2026-07-28) say so in
/// `_meta` (and `server/discover` belongs to it); their results carry a
/// `resultType`, and cacheable ones freshness hints (never cache: state is live).
fn result(id: Value, method: &str, mut result: Value, params: &Value) -> Value {
    let stateless = method == "server/discover"
        || params.pointer("/_meta/io.modelcontextprotocol~1protocolVersion").and_then(Value::as_str) == Some(STATELESS_VERSION);
    if stateless {
        if let Some(obj) = result.as_object_mut() {
            obj.insert("resultType".into(), json!("complete"));
            if matches!(method, "tools/list" | "server/discover") {
                obj.insert("ttlMs".into(), json!(0));
                obj.insert("cacheScope".into(), json!("private"));
            }
            if method == "server/discover" {
                obj.insert("_meta".into(), json!({ "io.modelcontextprotocol/serverInfo": server_info() }));
            }
        }
    }
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// Handles one message; returns the reply to send now, if any. Tool calls run
/// concurrently and reply through `tx` themselves.
async fn handle(session: &Arc<Session>, msg: Value, tx: &mpsc::Sender<Value>, inflight: &InFlight) -> Option<Value> {
    let Some(obj) = msg.as_object() else {
        return Some(error(Value::Null, INVALID_REQUEST, "invalid request: expected a JSON-RPC object (batches are not supported)"));
    };
    let id = obj.get("id").cloned();
    let method = obj.get("method");
    if method.is_none() && (obj.contains_key("result") || obj.contains_key("error")) {
        return None; // a response to a request we never send; ignore
    }
    let valid_id = matches!(&id, None | Some(Value::String(_))) || id.as_ref().is_some_and(|v| v.is_i64() || v.is_u64());
    let Some(method) = method.and_then(Value::as_str).filter(|_| obj.get("jsonrpc") == Some(&json!("2.0")) && valid_id) else {
        return Some(error(if valid_id { id.unwrap_or(Value::Null) } else { Value::Null }, INVALID_REQUEST, "invalid request: needs \"jsonrpc\":\"2.0\", a string \"method\" and a string or integer \"id\""));
    };
    let params = obj.get("params").cloned().unwrap_or(json!({}));
    let Some(id) = id else {
        // Notifications: nothing to answer. A cancelled request gets no response.
        if method == "notifications/cancelled" {
            if let Some(req) = params.get("requestId") {
                if let Some(h) = inflight.lock().unwrap().remove(&req.to_string()) {
                    h.abort();
                }
            }
        }
        return None;
    };
    if !params.is_object() {
        return Some(error(id, INVALID_PARAMS, "invalid params: \"params\" must be an object"));
    }
    match method {
        "initialize" => {
            let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
            let version = INITIALIZE_VERSIONS.iter().find(|v| **v == asked).copied().unwrap_or(INITIALIZE_VERSIONS[0]);
            Some(result(id, method, json!({
                "protocolVersion": version,
                "capabilities": capabilities(),
                "serverInfo": server_info(),
                "instructions": INSTRUCTIONS,
            }), &params))
        }
        "server/discover" => {
            let mut versions = vec![STATELESS_VERSION];
            versions.extend_from_slice(INITIALIZE_VERSIONS);
            Some(result(id, method, json!({
                "supportedVersions": versions,
                "capabilities": capabilities(),
                "serverInfo": server_info(),
                "instructions": INSTRUCTIONS,
            }), &params))
        }
        "ping" => Some(result(id, method, json!({}), &params)),
        "tools/list" => {
            let list: Vec<Value> = tools::CATALOG.iter().filter(|t| session.enabled.contains(t.name)).map(tools::describe).collect();
            Some(result(id, method, json!({ "tools": list }), &params))
        }
        "tools/call" => {
            let Some(name) = params.get("name").and_then(Value::as_str).map(str::to_string) else {
                return Some(error(id, INVALID_PARAMS, "invalid params: tools/call needs a string \"name\""));
            };
            let args = params.get("arguments").cloned().unwrap_or(json!({}));
            if !args.is_object() {
                return Some(error(id, INVALID_PARAMS, "invalid params: \"arguments\" must be an object"));
            }
            let session = session.clone();
            let progress = params.pointer("/_meta/progressToken").filter(|t| t.is_string() || t.is_i64() || t.is_u64()).map(|t| tools::Progress::new(t.clone(), tx.clone()));
            let tx = tx.clone();
            let key = id.to_string();
            let registry = inflight.clone();
            let mut map = inflight.lock().unwrap();
            let task = tokio::spawn(async move {
                let out = tools::call(&session, &name, args, progress).await;
                registry.lock().unwrap().remove(&id.to_string());
                let _ = tx.send(result(id, "tools/call", out.to_call_result(), &params)).await;
            });
            map.insert(key, task.abort_handle());
            None
        }
        other => Some(error(id, METHOD_NOT_FOUND, &format!("method not found: {other}"))),
    }
}

fn capabilities() -> Value {
    json!({ "tools": { "listChanged": false } })
}

fn server_info() -> Value {
    json!({ "name": "tmux-mcp", "title": "tmux-mcp broker", "version": env!("CARGO_PKG_VERSION") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    #[tokio::test]
    async fn long_lines_are_discarded_and_the_stream_stays_in_step() {
        let mut data = vec![b'a'; 50];
        data.push(b'\n');
        data.extend_from_slice(b"{\"x\":1}\n");
        let mut r = BufReader::with_capacity(8, &data[..]);
        assert!(matches!(read_line(&mut r, 10).await.unwrap(), Line::TooLong(n) if n >= 50));
        assert!(matches!(read_line(&mut r, 10).await.unwrap(), Line::Data(d) if d == b"{\"x\":1}\n"));
        assert!(matches!(read_line(&mut r, 10).await.unwrap(), Line::Eof));
    }
}
