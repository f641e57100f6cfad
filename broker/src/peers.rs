//! One agent's links to the brokers of other tmux servers (issue 52): a tool
//! call that names another server is served by that server's own broker, so
//! hook-freedom, generations, exact captures and refusals hold there as they
//! do here. A link is an MCP session on that broker's socket, opened the way
//! `tmux-mcp attach` opens one (the msgpack hello, then JSON-RPC lines), with
//! a hello that says whose agent it carries (`via`); it is opened on the
//! first call, reused for every later one, and closed with the agent's
//! session. A call is sent once: a link lost while a call was out says so
//! (`Failure::Lost`) and nothing is retried.
//!
//! A link declares form elicitation: when the other broker asks the person
//! before a kill, respawn or close (its `--confirm`, the agent's, or its
//! `@mcp-confirm`), its `elicitation/create` comes back over the link and is
//! put to the person through the agent's own call ([`Link::call_tool`]'s
//! `ask`), named by the server the agent named. While the person reads, the
//! call's wait for its answer stands still.

use crate::toolkit::call::confirm::{self, Answer, Ask};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tmux_mcp_core::wire::{self, Hello, McpHello, Reply};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;

/// The side of a link this broker writes: a broker's socket, or the stdin
/// of the `ssh` that carries a remote relay.
type Writer = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

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

/// How long setting a link up may take (an SSH connection included).
pub const OPEN_TIMEOUT: Duration = Duration::from_secs(15);

/// Why no link could be opened (nothing of a tool call has left).
#[derive(Debug)]
pub enum OpenError {
    /// The broker's socket took no connection (a broker that has just died
    /// or not yet come up): worth finding or starting the broker again.
    Connect(String),
    /// Another machine did not answer (ssh could not connect, or the remote
    /// relay did not start): what ssh said.
    Offline(String),
    /// Another machine refused the key or its host key did not match.
    AuthFailed(String),
    /// Anything else: the broker refused the session, or broke off.
    Other(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Connect(s) | OpenError::Other(s) => f.write_str(s),
            OpenError::Offline(s) => write!(f, "offline: {s}"),
            OpenError::AuthFailed(s) => write!(f, "auth_failed: {s}"),
        }
    }
}

/// What is known of a host's link: when it last answered, and why it last
/// could not be reached (for `list_servers`).
#[derive(Debug, Clone, Default)]
pub struct HostSeen {
    pub last_answer: Option<std::time::SystemTime>,
    pub last_failure: Option<String>,
    pub auth_failed: bool,
}

/// ssh's stderr, kept (its last 4 kB) for the reason a link failed.
async fn keep_stderr(mut err: tokio::process::ChildStderr, said: Arc<Mutex<String>>) {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 1024];
    while let Ok(n) = err.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut s = said.lock().unwrap();
        s.push_str(&String::from_utf8_lossy(&buf[..n]));
        if s.len() > 4096 {
            let cut = s.len() - 4096;
            let cut = (cut..s.len())
                .find(|i| s.is_char_boundary(*i))
                .unwrap_or(s.len());
            s.drain(..cut);
        }
    }
}

/// A session's links, by the other server's generation (a server restarted
/// on the same socket is another server, with another link).
#[derive(Default)]
pub struct Links {
    open: tokio::sync::Mutex<HashMap<String, Arc<Link>>>,
    /// Per host key (`ssh:HOST`): when it last answered, why it last failed.
    seen: Mutex<HashMap<String, HostSeen>>,
    /// The link each key last reached, by the key the agent named: a later
    /// call naming it goes straight to the link while it is open, with no
    /// knock and no broker search (an open link is that server instance's
    /// broker: a broker ends with its server).
    named: Mutex<HashMap<String, Arc<Link>>>,
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
        self.reuse_or_open(generation, || Link::open(sock.to_path_buf(), hello))
            .await
    }

    /// The live link to host `key` (`ssh:HOST`), opened with `open` when
    /// there is none (or the last one ended: the host went away). Whether it
    /// could be opened is kept for `list_servers`.
    pub async fn host<F, Fut>(&self, key: &str, open: F) -> Result<Arc<Link>, OpenError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Arc<Link>, OpenError>>,
    {
        let opened = self.reuse_or_open(key, open).await;
        match &opened {
            Ok(_) => self.answered(key),
            Err(e) => self.failed(key, e),
        }
        opened
    }

    /// The open link under `key`, else one `open` makes (kept under `key`).
    async fn reuse_or_open<F, Fut>(&self, key: &str, open: F) -> Result<Arc<Link>, OpenError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Arc<Link>, OpenError>>,
    {
        let mut links = self.open.lock().await;
        if let Some(l) = links.get(key).filter(|l| l.is_open()) {
            return Ok(l.clone());
        }
        let link = open().await?;
        links.insert(key.to_string(), link.clone());
        Ok(link)
    }

    /// The open link `key` reached last, if any.
    pub fn named(&self, key: &str) -> Option<Arc<Link>> {
        let mut named = self.named.lock().unwrap();
        match named.get(key) {
            Some(l) if l.is_open() => Some(l.clone()),
            Some(_) => {
                named.remove(key);
                None
            }
            None => None,
        }
    }

    /// `key` reached `link`.
    pub fn name(&self, key: &str, link: &Arc<Link>) {
        self.named
            .lock()
            .unwrap()
            .insert(key.to_string(), link.clone());
    }

    /// `key` is no longer to be reached: its fast path goes, and a host's
    /// link (kept under its key) is let go, its `ssh` ending with the last
    /// call on it. A local server's link stays under its generation for the
    /// keys that still name that server.
    pub fn forget(&self, key: &str) {
        self.named.lock().unwrap().remove(key);
        if let Ok(mut open) = self.open.try_lock() {
            open.remove(key);
        }
    }

    /// Host `key` answered now.
    pub fn answered(&self, key: &str) {
        let mut seen = self.seen.lock().unwrap();
        let s = seen.entry(key.to_string()).or_default();
        s.last_answer = Some(std::time::SystemTime::now());
        s.last_failure = None;
        s.auth_failed = false;
    }

    /// Host `key` could not be reached: why.
    pub fn failed(&self, key: &str, e: &OpenError) {
        let mut seen = self.seen.lock().unwrap();
        let s = seen.entry(key.to_string()).or_default();
        s.auth_failed = matches!(e, OpenError::AuthFailed(_));
        s.last_failure = Some(match e {
            OpenError::Offline(w) | OpenError::AuthFailed(w) => w.clone(),
            other => other.to_string(),
        });
    }

    /// What is known of host `key`.
    pub fn seen(&self, key: &str) -> HostSeen {
        self.seen
            .lock()
            .unwrap()
            .get(key)
            .cloned()
            .unwrap_or_default()
    }
}

type Waiting = HashMap<u64, oneshot::Sender<Value>>;

/// What a link's calls and its reader share.
struct Shared {
    writer: Writer,
    /// Calls out, by id; `None` once the link ended.
    waiting: Mutex<Option<Waiting>>,
    /// The tool calls out that may ask the person, by id: the key the agent
    /// named the server by, and how the agent's call asks.
    askers: Mutex<Vec<(u64, String, Ask)>>,
    /// Questions being put to the person now, and when the last one was
    /// answered: a call's wait does not run out while the person reads.
    asking: Mutex<(usize, Option<Instant>)>,
    /// The questions' own tasks, ended with the link (no question is left
    /// before the person once no call can take its answer).
    questions: Mutex<Vec<tokio::task::AbortHandle>>,
}

/// One MCP session on another broker.
pub struct Link {
    shared: Arc<Shared>,
    next_id: AtomicU64,
    reader: tokio::task::AbortHandle,
    /// The `ssh` of a link to another machine (killed with the link), and
    /// what it wrote on stderr (the reason a connection failed).
    ssh: Option<(tokio::process::Child, Arc<Mutex<String>>)>,
}

/// Takes a call's asker out of its link's list when the call ends, however
/// it ends (an agent's cancel drops the call mid-wait).
struct AskerOut<'a>(&'a Shared, u64);

impl Drop for AskerOut<'_> {
    fn drop(&mut self) {
        self.0
            .askers
            .lock()
            .unwrap()
            .retain(|(id, _, _)| *id != self.1);
    }
}

impl Drop for Link {
    /// The reader holds the read half and a writer; ending it closes the
    /// connection, and with it the other broker's session.
    fn drop(&mut self) {
        self.reader.abort();
        self.shared.end_questions();
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
        Link::start(r, Box::new(w), None).await
    }

    /// A link over `r` and `w`: its reader started, then the MCP session
    /// set up (`initialize`, `notifications/initialized`).
    async fn start(
        r: impl AsyncRead + Send + Unpin + 'static,
        w: Box<dyn AsyncWrite + Send + Unpin>,
        ssh: Option<(tokio::process::Child, Arc<Mutex<String>>)>,
    ) -> Result<Arc<Link>, OpenError> {
        let shared = Arc::new(Shared {
            writer: Arc::new(tokio::sync::Mutex::new(w)),
            waiting: Mutex::new(Some(Waiting::new())),
            askers: Mutex::new(Vec::new()),
            asking: Mutex::new((0, None)),
            questions: Mutex::new(Vec::new()),
        });
        let reader = tokio::spawn(read_answers(r, shared.clone())).abort_handle();
        let link = Arc::new(Link {
            shared,
            next_id: AtomicU64::new(1),
            reader,
            ssh,
        });
        // Form elicitation (`{}` in this revision): the other broker's
        // questions come here and go on to the person.
        let init = json!({
            "protocolVersion": PROTOCOL,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "tmux-mcp-broker", "version": env!("CARGO_PKG_VERSION")},
        });
        if let Err(f) = link.request("initialize", init, OPEN_TIMEOUT).await {
            return Err(link.why_not(f).await);
        }
        link.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
            .map_err(|e| OpenError::Other(format!("its broker's connection ended: {e}")))?;
        Ok(link)
    }

    /// A link to another machine: `ssh` (the words of `@mcp-ssh-command`)
    /// `-T -o BatchMode=yes HOST REMOTE…`, the remote command a relay
    /// (`tmux-mcp attach …`). OpenSSH decides users, keys, `ProxyJump` and
    /// `ControlMaster` from the person's configuration; nothing listens here
    /// and nothing is forwarded.
    pub async fn over_ssh(
        ssh: &[String],
        host: &str,
        remote: &str,
    ) -> Result<Arc<Link>, OpenError> {
        let (program, words) = ssh
            .split_first()
            .ok_or_else(|| OpenError::Other("@mcp-ssh-command is empty".into()))?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(words)
            .args([
                "-T",
                "-o",
                "BatchMode=yes",
                "-o",
                "ConnectTimeout=10",
                "--",
                host,
                remote,
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| OpenError::Offline(format!("{program} could not be started: {e}")))?;
        let (Some(r), Some(w), Some(err)) =
            (child.stdout.take(), child.stdin.take(), child.stderr.take())
        else {
            return Err(OpenError::Other("ssh's pipes are missing".into()));
        };
        let said = Arc::new(Mutex::new(String::new()));
        tokio::spawn(keep_stderr(err, said.clone()));
        Link::start(r, Box::new(w), Some((child, said))).await
    }

    /// Why a link could not be set up: for `ssh`, what it said on stderr
    /// (once it has exited), as `auth_failed` or `offline`.
    async fn why_not(&self, f: Failure) -> OpenError {
        let why = match f {
            Failure::NotSent(w) | Failure::Lost(w) | Failure::Refused(w) => w,
        };
        let Some((_, said)) = &self.ssh else {
            return OpenError::Other(format!("its broker did not start the MCP session: {why}"));
        };
        // ssh has usually exited by now; its last words are the reason.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let text = said.lock().unwrap().clone();
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or(&why)
            .trim()
            .to_string();
        const AUTH: [&str; 4] = [
            "Permission denied",
            "Host key verification failed",
            "Too many authentication failures",
            "REMOTE HOST IDENTIFICATION HAS CHANGED",
        ];
        if AUTH.iter().any(|a| text.contains(a)) {
            OpenError::AuthFailed(last)
        } else {
            OpenError::Offline(last)
        }
    }

    fn is_open(&self) -> bool {
        self.shared.waiting.lock().unwrap().is_some()
    }

    async fn write(&self, msg: &Value) -> std::io::Result<()> {
        write_line(&self.shared.writer, msg).await
    }

    /// Sends request `method` and waits up to `timeout` for its result (the
    /// other broker's questions, if any, are answered "cannot ask").
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, Failure> {
        self.send(method, params, timeout, None).await
    }

    /// `tools/call` with `params`, on the server the agent named `key`: a
    /// question the other broker asks during it is put to the person as this
    /// call asks (`ask`), naming `key`, and `timeout` does not run while the
    /// person reads.
    pub async fn call_tool(
        &self,
        key: &str,
        params: Value,
        timeout: Duration,
        ask: Ask,
    ) -> Result<Value, Failure> {
        self.send("tools/call", params, timeout, Some((key, ask)))
            .await
    }

    async fn send(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        asker: Option<(&str, Ask)>,
    ) -> Result<Value, Failure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        match self.shared.waiting.lock().unwrap().as_mut() {
            Some(w) => w.insert(id, tx),
            None => return Err(Failure::NotSent("the link to its broker had ended".into())),
        };
        let _out = asker.map(|(key, ask)| {
            let mut askers = self.shared.askers.lock().unwrap();
            askers.push((id, key.to_string(), ask));
            AskerOut(&self.shared, id)
        });
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(e) = self.write(&msg).await {
            // A line cut short is not a request the other side can parse, but
            // a whole one may be out: said as possibly sent either way.
            return Err(Failure::Lost(format!("writing to its broker failed: {e}")));
        }
        let answer = match self.shared.wait(rx, timeout).await {
            Ok(Ok(a)) => a,
            Ok(Err(_)) => {
                return Err(Failure::Lost(
                    "its broker's connection ended before the answer".into(),
                ))
            }
            Err(_) => {
                if let Some(w) = self.shared.waiting.lock().unwrap().as_mut() {
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

impl Shared {
    fn end_questions(&self) {
        for q in self.questions.lock().unwrap().drain(..) {
            q.abort();
        }
    }

    /// `rx`, waited for up to `timeout`, not counting the time a question to
    /// the person was out: a wait that runs out while one is out, or after
    /// one was answered, starts again from then.
    async fn wait(
        &self,
        mut rx: oneshot::Receiver<Value>,
        timeout: Duration,
    ) -> Result<Result<Value, oneshot::error::RecvError>, ()> {
        let mut until = Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(until.into(), &mut rx).await {
                Ok(answer) => return Ok(answer),
                Err(_) => {
                    let (out, answered) = *self.asking.lock().unwrap();
                    let from = match (out, answered) {
                        (0, None) => return Err(()),
                        (0, Some(at)) => at,
                        _ => Instant::now(),
                    };
                    if from + timeout <= until {
                        return Err(());
                    }
                    until = from + timeout;
                }
            }
        }
    }

    /// The call a question of the other broker belongs to: the one whose
    /// earlier round answered this very question (2026-07-28), else the
    /// latest call out that may ask. Every call on a link is one agent's,
    /// so either way the question reaches that agent's person.
    fn asker_for(&self, message: &str) -> Option<(String, Ask)> {
        let askers = self.askers.lock().unwrap();
        let answered = askers.iter().rev().find(|(_, key, ask)| match ask {
            Ask::Rounds(r) => r
                .answered
                .as_ref()
                .is_some_and(|(q, _)| *q == question(key, message)),
            _ => false,
        });
        answered
            .or(askers.last())
            .map(|(_, key, ask)| (key.clone(), ask.clone()))
    }

    /// Puts the other broker's question to the person and answers it.
    async fn answer_question(self: Arc<Self>, id: Value, params: Value) {
        let message = params["message"].as_str().unwrap_or_default().to_string();
        let answer = match self.asker_for(&message) {
            None => Err("no call of this agent's is waiting to ask the person".to_string()),
            Some((key, ask)) => {
                self.asking.lock().unwrap().0 += 1;
                let answer = confirm::relay(&ask, &question(&key, &message)).await;
                let mut asking = self.asking.lock().unwrap();
                *asking = (asking.0 - 1, Some(Instant::now()));
                answer
            }
        };
        let reply = match answer {
            Ok(Answer::Accept) => json!({"jsonrpc": "2.0", "id": id,
                "result": {"action": "accept", "content": {}}}),
            Ok(Answer::Decline) => json!({"jsonrpc": "2.0", "id": id,
                "result": {"action": "decline"}}),
            Ok(Answer::Cancel) => json!({"jsonrpc": "2.0", "id": id,
                "result": {"action": "cancel"}}),
            Err(why) => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32603, "message": why}}),
        };
        let _ = write_line(&self.writer, &reply).await;
    }
}

/// The other broker's question as the person reads it: which server asks.
fn question(key: &str, message: &str) -> String {
    format!("[server {key}] {message}")
}

async fn write_line(writer: &Writer, msg: &Value) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg)?;
    line.push(b'\n');
    writer.lock().await.write_all(&line).await
}

/// Hands each answer to its caller; puts the other broker's questions to the
/// person (each on its own task, so answers keep coming while one is read),
/// answers a ping, and answers any other request of the other broker with
/// "method not found"; at the end, fails every call still out.
async fn read_answers(r: impl AsyncRead + Unpin, shared: Arc<Shared>) {
    let mut lines = BufReader::new(r).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(mut msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        if let Some(method) = msg.get("method").and_then(Value::as_str) {
            if id.is_null() {
                continue;
            }
            match method {
                "elicitation/create" => {
                    let params = msg["params"].take();
                    let task = tokio::spawn(shared.clone().answer_question(id, params));
                    let mut questions = shared.questions.lock().unwrap();
                    questions.retain(|q| !q.is_finished());
                    questions.push(task.abort_handle());
                }
                "ping" => {
                    let _ = write_line(
                        &shared.writer,
                        &json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                    )
                    .await;
                }
                _ => {
                    let no = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601,
                        "message": "not available through another server's broker"}});
                    let _ = write_line(&shared.writer, &no).await;
                }
            }
            continue;
        }
        let Some(id) = id.as_u64() else { continue };
        let tx = shared
            .waiting
            .lock()
            .unwrap()
            .as_mut()
            .and_then(|w| w.remove(&id));
        if let Some(tx) = tx {
            let _ = tx.send(msg);
        }
    }
    // Dropping the senders fails every call still out.
    shared.waiting.lock().unwrap().take();
    shared.end_questions();
}
