//! One agent's links to the brokers of other tmux servers (issue 52): a tool
//! call that names another server is served by that server's own broker, so
//! hook-freedom, generations, exact captures and refusals hold there as they
//! do here. A link is an MCP session on that broker's socket, opened the way
//! `tmux-mcp attach` opens one (the msgpack hello, then JSON-RPC lines), with
//! a hello that says whose agent it carries (`via`); it is opened on the
//! first call, reused for every later one, and closed with the agent's
//! session. A call is sent once: a link lost while a call was out says so
//! (`Failure::Lost`) and nothing is retried.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tmux_mcp_core::wire::{self, Hello, McpHello, Reply};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::oneshot;

/// The protocol revision a link speaks (one every broker answers).
const PROTOCOL: &str = "2025-06-18";

/// Why a call over a link has no answer.
#[derive(Debug)]
pub enum Failure {
    /// Nothing of the call left this broker.
    NotSent(String),
    /// The call was written and the link ended (or the wait ran out) before
    /// its answer: it may have reached tmux there.
    Lost(String),
    /// The other broker answered with a JSON-RPC error.
    Refused(String),
}

/// Why no link could be opened (nothing of a tool call has left).
#[derive(Debug)]
pub enum OpenError {
    /// The broker's socket took no connection (a broker that has just died
    /// or not yet come up): worth finding or starting the broker again.
    Connect(String),
    /// Anything else: the broker refused the session, or broke off.
    Other(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Connect(s) | OpenError::Other(s) => f.write_str(s),
        }
    }
}

/// A session's links, by the other server's generation (a server restarted
/// on the same socket is another server, with another link).
#[derive(Default)]
pub struct Links {
    open: tokio::sync::Mutex<HashMap<String, Arc<Link>>>,
}

impl Links {
    /// The live link to the broker at `sock` of the server of `generation`,
    /// opened with `hello` when there is none (or the last one ended).
    pub async fn get(
        &self,
        generation: &str,
        sock: &Path,
        hello: McpHello,
    ) -> Result<Arc<Link>, OpenError> {
        let mut open = self.open.lock().await;
        if let Some(l) = open.get(generation) {
            if l.is_open() {
                return Ok(l.clone());
            }
        }
        let link = Link::open(sock.to_path_buf(), hello).await?;
        open.insert(generation.to_string(), link.clone());
        Ok(link)
    }
}

type Waiting = HashMap<u64, oneshot::Sender<Value>>;

/// One MCP session on another broker.
pub struct Link {
    writer: Arc<tokio::sync::Mutex<OwnedWriteHalf>>,
    /// Calls out, by id; `None` once the link ended.
    waiting: Arc<Mutex<Option<Waiting>>>,
    next_id: AtomicU64,
    reader: tokio::task::AbortHandle,
}

impl Drop for Link {
    /// The reader holds the read half and a writer; ending it closes the
    /// connection, and with it the other broker's session.
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Link {
    async fn open(sock: PathBuf, hello: McpHello) -> Result<Arc<Link>, OpenError> {
        let shown = sock.display().to_string();
        let stream = tokio::task::spawn_blocking(move || wire::connect(&sock, &Hello::Mcp(hello)))
            .await
            .map_err(|e| OpenError::Other(e.to_string()))?
            .map_err(|e| {
                OpenError::Connect(format!(
                    "its broker at {shown} did not take the session: {e}"
                ))
            })?;
        let stream = match stream {
            (s, Reply::McpReady { .. }) => s,
            (_, Reply::Refused { reason }) => {
                return Err(OpenError::Other(format!(
                    "its broker refused this agent: {reason}"
                )))
            }
            (_, other) => return Err(OpenError::Other(format!("its broker answered {other:?}"))),
        };
        let io = |e: std::io::Error| OpenError::Other(e.to_string());
        stream.set_nonblocking(true).map_err(io)?;
        let stream = tokio::net::UnixStream::from_std(stream).map_err(io)?;
        let (r, w) = stream.into_split();
        let writer = Arc::new(tokio::sync::Mutex::new(w));
        let waiting = Arc::new(Mutex::new(Some(Waiting::new())));
        let reader = tokio::spawn(read_answers(r, writer.clone(), waiting.clone())).abort_handle();
        let link = Arc::new(Link {
            writer,
            waiting,
            next_id: AtomicU64::new(1),
            reader,
        });
        let init = json!({
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "tmux-mcp-broker", "version": env!("CARGO_PKG_VERSION")},
        });
        link.request("initialize", init, Duration::from_secs(10))
            .await
            .map_err(|f| {
                OpenError::Other(format!("its broker did not start the MCP session: {f:?}"))
            })?;
        link.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
            .map_err(|e| OpenError::Other(format!("its broker's connection ended: {e}")))?;
        Ok(link)
    }

    fn is_open(&self) -> bool {
        self.waiting.lock().unwrap().is_some()
    }

    async fn write(&self, msg: &Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(msg)?;
        line.push(b'\n');
        self.writer.lock().await.write_all(&line).await
    }

    /// Sends request `method` and waits up to `timeout` for its result.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, Failure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        match self.waiting.lock().unwrap().as_mut() {
            Some(w) => w.insert(id, tx),
            None => return Err(Failure::NotSent("the link to its broker had ended".into())),
        };
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(e) = self.write(&msg).await {
            // A line cut short is not a request the other side can parse, but
            // a whole one may be out: said as possibly sent either way.
            return Err(Failure::Lost(format!("writing to its broker failed: {e}")));
        }
        let answer = match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(a)) => a,
            Ok(Err(_)) => {
                return Err(Failure::Lost(
                    "its broker's connection ended before the answer".into(),
                ))
            }
            Err(_) => {
                if let Some(w) = self.waiting.lock().unwrap().as_mut() {
                    w.remove(&id);
                }
                let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": id, "reason": "timed out"}});
                let _ = self.write(&cancel).await;
                return Err(Failure::Lost(format!(
                    "its broker gave no answer within {} s",
                    timeout.as_secs()
                )));
            }
        };
        match answer.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(Failure::Refused(
                answer["error"]["message"]
                    .as_str()
                    .unwrap_or("an error without a message")
                    .to_string(),
            )),
        }
    }
}

/// Hands each answer to its caller; answers every request of the other
/// broker (an elicitation, a ping) with "method not found", since no person
/// is on this side of the link; at the end, fails every call still out.
async fn read_answers(
    r: tokio::net::unix::OwnedReadHalf,
    writer: Arc<tokio::sync::Mutex<OwnedWriteHalf>>,
    waiting: Arc<Mutex<Option<Waiting>>>,
) {
    let mut lines = BufReader::new(r).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        if msg.get("method").is_some() {
            if !id.is_null() {
                let no = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601,
                    "message": "not available through another server's broker"}});
                let mut out = serde_json::to_vec(&no).unwrap_or_default();
                out.push(b'\n');
                let _ = writer.lock().await.write_all(&out).await;
            }
            continue;
        }
        let Some(id) = id.as_u64() else { continue };
        let tx = waiting.lock().unwrap().as_mut().and_then(|w| w.remove(&id));
        if let Some(tx) = tx {
            let _ = tx.send(msg);
        }
    }
    // Dropping the senders fails every call still out.
    waiting.lock().unwrap().take();
}
