//! `tmux-mcp attach`: the MCP server command of an agent. After a msgpack hello it
//! relays newline-delimited JSON-RPC both ways between stdio and the broker;
//! stdout carries nothing but MCP lines.
//!
//! The relay outlives its broker. It forwards every client line unchanged and in
//! order (lines that are not JSON too: the broker answers them), and on the way
//! it notes, per line and without building a document:
//!
//! - the client's `initialize` request and `notifications/initialized` (the
//!   session set-up; a 2026-07-28 client sends neither, it names its version in
//!   each request's `_meta`, so there is nothing to replay);
//! - which requests are in flight: sent by the client, not yet answered. Ids are
//!   kept as the raw JSON text the client sent, so an answer the relay makes up
//!   echoes them byte for byte.
//!
//! When the broker connection ends while the client's stdin is open (the broker
//! was killed or crashed), every in-flight request is answered with a JSON-RPC
//! error saying its delivery to tmux is unknown, one line on stderr says what
//! happened, and the relay finds or starts a new broker ([`locate::ensure`]),
//! sends the same hello, replays the set-up under an id of its own (the answer
//! is swallowed, the client already has one) and carries on. References stay
//! valid (the generation comes from the tmux server); retained cursors lived in
//! the old broker and are `stale_cursor` now. If no broker can be had for the
//! same tmux server (it exited, or another one took its socket), the relay
//! answers what is pending and exits non-zero.

use crate::locate;
use crate::locate::ServerArgs;
use anyhow::{bail, Context};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tmux_mcp_core::limits::MAX_FRAME_BYTES;
use tmux_mcp_core::wire::connect;
use tmux_mcp_core::wire::{Hello, McpHello, Reply, Scope};

/// The JSON-RPC error code of the answer to a request the lost broker had: a
/// code of the project's own, outside JSON-RPC's reserved -32768..-32000 (MCP
/// 2026-07-28: application errors go there; -32000..-32019 is a legacy range
/// whose codes clients may read otherwise). docs/spec.md, A.0.7.
pub const BROKER_LOST_CODE: i64 = -31000;

/// A broker that dies this often this fast is not coming back; the relay stops
/// instead of looping.
const MAX_LOSSES: usize = 5;
const LOSS_WINDOW: Duration = Duration::from_secs(30);

/// What the person grants this agent on the command line.
pub struct Grant {
    pub enable_tools: Vec<String>,
    pub scope: Option<Scope>,
    pub allow_self: bool,
    pub safety: Option<tmux_mcp_core::wire::Tier>,
    pub toolset: Option<tmux_mcp_core::wire::Toolset>,
    pub confirm: bool,
    /// `--via`: another machine's broker opened this relay for its agent.
    pub via: Option<String>,
}

pub fn attach(server: &ServerArgs, grant: Grant) -> anyhow::Result<ExitCode> {
    let server = &locate::pinned(server)?;
    let (id, sock) = locate::ensure(server)?;
    let hello = Hello::Mcp(McpHello {
        client_name: parent_name(),
        enable_tools: grant.enable_tools,
        scope: grant.scope,
        allow_self: grant.allow_self,
        tmux_pane_env: std::env::var("TMUX_PANE").ok(),
        safety: grant.safety,
        toolset: grant.toolset,
        confirm: grant.confirm,
        via: grant.via,
    });
    let stream = open_session(&sock, &hello)?;
    let relay = Arc::new(Relay {
        conn: Mutex::new(Conn {
            to_broker: stream.try_clone()?,
            epoch: 0,
            broken: false,
            finished: false,
        }),
        changed: Condvar::new(),
        track: Mutex::new(Tracker::default()),
        stdin_closed: AtomicBool::new(false),
    });
    let r = relay.clone();
    std::thread::spawn(move || r.client_to_broker());
    relay.broker_to_client(stream, sock, server, &id.generation, &hello)
}

/// Connects to the broker socket and has the hello accepted.
fn open_session(sock: &std::path::Path, hello: &Hello) -> anyhow::Result<UnixStream> {
    let (stream, reply) = connect(sock, hello)
        .with_context(|| format!("talking to the broker at {}", sock.display()))?;
    match reply {
        Reply::McpReady { .. } => Ok(stream),
        Reply::Refused { reason } => bail!("the broker refused this session: {reason}"),
        other => bail!("unexpected broker reply {other:?}"),
    }
}

struct Relay {
    /// The client → broker side. Held while a line is written, so a reconnect
    /// (which takes it too) sees every request either written to the old
    /// broker and in `track`, or not yet written.
    conn: Mutex<Conn>,
    /// Signals the end of a reconnect to a writer that found `broken`.
    changed: Condvar,
    /// Taken briefly by both sides; never held while waiting on I/O, so a broker
    /// that writes while the client side blocks on a full socket never stalls.
    track: Mutex<Tracker>,
    stdin_closed: AtomicBool,
}

enum Written {
    All,
    Part,
    NotAByte,
}

struct Conn {
    to_broker: UnixStream,
    /// Counts reconnects.
    epoch: u64,
    /// A write failed: the broker side is about to see the end and reconnect.
    broken: bool,
    /// The relay is exiting; nothing more is written.
    finished: bool,
}

#[derive(Default)]
struct Tracker {
    /// Requests the client sent and the broker has not answered: key (see
    /// [`id_key`]) → the id exactly as the client wrote it, and whether the
    /// request is a `subscriptions/listen` (its stream ends, not fails).
    inflight: HashMap<String, (Box<str>, bool)>,
    /// The client's last `initialize` request line, as sent.
    initialize: Option<Vec<u8>>,
    /// The client's `notifications/initialized` line, as sent.
    initialized: Option<Vec<u8>>,
    /// Keys of replayed requests whose answers are the relay's, not the client's.
    swallow: HashSet<String>,
}

/// What the relay needs to know about one client line.
#[derive(Debug, PartialEq)]
enum Note<'a> {
    Nothing,
    Request {
        key: String,
        raw_id: &'a str,
        initialize: bool,
        listen: bool,
    },
    Initialized,
    Cancelled(String),
}

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CancelParams<'a> {
    #[serde(borrow, rename = "requestId")]
    request_id: Option<&'a RawValue>,
}

/// The key under which the broker answers `raw` (an id's JSON text): the
/// broker answers by id only ids that are strings or integers of 64 bits, and
/// writes them back as serde_json does; anything else it answers with id null,
/// so such a request is not tracked (nothing would ever settle it).
fn id_key(raw: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(raw).ok()?;
    match &v {
        serde_json::Value::String(_) => Some(v.to_string()),
        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => Some(v.to_string()),
        _ => None,
    }
}

/// Classifies one client line (with its `\n`) the way the broker will read it:
/// a line the broker cannot parse as one JSON object (not UTF-8, not JSON, a
/// batch, too long) is answered with id null, so it is `Nothing` here too.
fn note(line: &[u8]) -> Note<'_> {
    if line.len() > MAX_FRAME_BYTES + 1 {
        return Note::Nothing;
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Note::Nothing;
    };
    if !text.trim_start().starts_with('{') {
        return Note::Nothing; // a batch or a scalar; serde would read an array into the struct
    }
    let Ok(peek) = serde_json::from_str::<Peek>(text) else {
        return Note::Nothing;
    };
    let Some(method) = peek.method else {
        return Note::Nothing; // a response to a request the broker never sends
    };
    match peek.id {
        Some(raw) => match id_key(raw.get()) {
            Some(key) => Note::Request {
                key,
                raw_id: raw.get(),
                initialize: method == "initialize",
                listen: method == "subscriptions/listen",
            },
            None => Note::Nothing,
        },
        None if method == "notifications/initialized" => Note::Initialized,
        None if method == "notifications/cancelled" => {
            // The broker answers a cancelled call with nothing: stop waiting for it.
            match peek
                .params
                .and_then(|p| serde_json::from_str::<CancelParams>(p.get()).ok())
                .and_then(|c| c.request_id)
                .and_then(|r| id_key(r.get()))
            {
                Some(key) => Note::Cancelled(key),
                None => Note::Nothing,
            }
        }
        None => Note::Nothing,
    }
}

/// The key of the request a broker line answers, if it is a response.
fn answered_key(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Response<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        method: Option<serde::de::IgnoredAny>,
    }
    let r: Response = serde_json::from_slice(line).ok()?;
    if r.method.is_some() {
        return None; // a notification (progress)
    }
    id_key(r.id?.get())
}

/// `initialize_line` with its id replaced by `id` (a JSON string), every other
/// member kept as the client wrote it.
fn with_id(initialize_line: &[u8], id: &str) -> Option<Vec<u8>> {
    let mut obj: BTreeMap<String, Box<RawValue>> = serde_json::from_slice(initialize_line).ok()?;
    obj.insert(
        "id".into(),
        RawValue::from_string(serde_json::to_string(id).ok()?).ok()?,
    );
    let mut out = serde_json::to_vec(&obj).ok()?;
    out.push(b'\n');
    Some(out)
}

/// The end of a `subscriptions/listen` stream the lost broker held: MCP's
/// final result (2026-07-28), naming the stream by the listen request's id,
/// so the client may listen again; nothing was delivered to tmux by a stream.
fn listen_ended_answer(raw_id: &str) -> Vec<u8> {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{raw_id},\"result\":{{\"resultType\":\"complete\",\"_meta\":{{\"io.modelcontextprotocol/subscriptionId\":{raw_id}}}}}}}\n").into_bytes()
}

/// The answer to a request the lost broker had.
fn broker_lost_answer(raw_id: &str) -> Vec<u8> {
    let error = serde_json::json!({
        "code": BROKER_LOST_CODE,
        "message": "tmux-mcp: the broker was lost while this request was in flight, so whether it reached tmux is unknown; \
                    check the state (e.g. capture the pane) before repeating it. The session goes on with a new broker.",
        "data": { "delivery": "possibly_sent" },
    });
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{raw_id},\"error\":{error}}}\n").into_bytes()
}

impl Relay {
    /// stdin → broker, line by line, until stdin ends; then half-closes so the
    /// broker sees the end and finishes.
    fn client_to_broker(&self) {
        let mut stdin = BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
        let mut line: Vec<u8> = Vec::new();
        // A line longer than the broker accepts is not kept whole: it is passed
        // on as it arrives (the broker discards it and says so). `Some(epoch)`
        // while inside one; after a reconnect its tail is dropped, since the new
        // broker never saw its head.
        let mut oversized: Option<u64> = None;
        loop {
            let chunk = match stdin.fill_buf() {
                Ok([]) => break,
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let (take, ends_line) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            let piece = &chunk[..take];
            let alive = match oversized {
                Some(started) => self.write_raw(piece, Some(started)).is_some(),
                None => {
                    line.extend_from_slice(piece);
                    if !ends_line && line.len() > MAX_FRAME_BYTES + 1 {
                        match self.write_raw(&line, None) {
                            Some(e) => {
                                oversized = Some(e);
                                line.clear();
                                true
                            }
                            None => false,
                        }
                    } else {
                        true
                    }
                }
            };
            stdin.consume(take);
            if !alive {
                return;
            }
            if ends_line {
                if oversized.take().is_none() && self.forward(&line).is_none() {
                    return;
                }
                line.clear();
            }
        }
        // A last line without a newline is forwarded as it is.
        if !line.is_empty() && oversized.is_none() && self.forward(&line).is_none() {
            return;
        }
        self.stdin_closed.store(true, Ordering::SeqCst);
        let conn = self.conn.lock().unwrap();
        let _ = conn.to_broker.shutdown(Shutdown::Write);
    }

    /// Waits out a reconnect; `None` when the relay is finishing.
    fn usable_conn(&self) -> Option<std::sync::MutexGuard<'_, Conn>> {
        let mut conn = self.conn.lock().unwrap();
        while conn.broken && !conn.finished {
            conn = self.changed.wait(conn).unwrap();
        }
        (!conn.finished).then_some(conn)
    }

    /// Forwards one whole client line, noting what it means first. A line of
    /// which not one byte reached the lost broker is sent again to the next
    /// one, so only requests the old broker may have read count as in flight.
    /// `None` when the relay is finishing.
    fn forward(&self, line: &[u8]) -> Option<()> {
        let n = note(line);
        loop {
            let mut conn = self.usable_conn()?;
            {
                let mut t = self.track.lock().unwrap();
                match &n {
                    Note::Nothing => {}
                    Note::Request {
                        key,
                        raw_id,
                        initialize,
                        listen,
                    } => {
                        if *initialize {
                            t.initialize = Some(line.to_vec());
                        }
                        t.inflight.insert(key.clone(), ((*raw_id).into(), *listen));
                    }
                    Note::Initialized => t.initialized = Some(line.to_vec()),
                    Note::Cancelled(key) => {
                        t.inflight.remove(key);
                    }
                }
            }
            match self.write_locked(&mut conn, line) {
                Written::NotAByte => {
                    if let Note::Request { key, .. } = &n {
                        self.track.lock().unwrap().inflight.remove(key);
                    }
                }
                Written::All | Written::Part => return Some(()),
            }
        }
    }

    /// Writes part of an oversized line; `None` when finishing. When the
    /// connection changed since the line began, the part is dropped (the new
    /// broker never saw the head) and the line's epoch is kept.
    fn write_raw(&self, bytes: &[u8], started: Option<u64>) -> Option<u64> {
        let mut conn = self.usable_conn()?;
        if let Some(s) = started.filter(|s| *s != conn.epoch) {
            return Some(s);
        }
        let epoch = conn.epoch;
        self.write_locked(&mut conn, bytes);
        Some(epoch)
    }

    fn write_locked(&self, conn: &mut Conn, bytes: &[u8]) -> Written {
        let mut done = 0;
        while done < bytes.len() {
            match conn.to_broker.write(&bytes[done..]) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if done == bytes.len() {
            return Written::All;
        }
        // The broker is gone (or stopped reading): make sure the reading side
        // notices now, and hold further lines until it has reconnected.
        conn.broken = true;
        let _ = conn.to_broker.shutdown(Shutdown::Both);
        if done == 0 {
            Written::NotAByte
        } else {
            Written::Part
        }
    }

    /// broker → stdout until the session ends; reconnects when the broker is
    /// lost while the client is still there.
    fn broker_to_client(
        &self,
        stream: UnixStream,
        mut sock: PathBuf,
        server: &ServerArgs,
        generation: &str,
        hello: &Hello,
    ) -> anyhow::Result<ExitCode> {
        let mut stdout = std::io::stdout().lock();
        let mut from_broker = BufReader::with_capacity(64 * 1024, stream);
        let mut line: Vec<u8> = Vec::new();
        let mut losses: Vec<Instant> = Vec::new();
        loop {
            line.clear();
            let why = match from_broker.read_until(b'\n', &mut line) {
                Ok(0) => "it closed the connection".to_string(),
                Ok(_) if line.last() == Some(&b'\n') => {
                    if let Some(key) = answered_key(&line) {
                        let mut t = self.track.lock().unwrap();
                        if t.swallow.remove(&key) {
                            continue; // the answer to a replayed initialize
                        }
                        t.inflight.remove(&key);
                    }
                    if stdout
                        .write_all(&line)
                        .and_then(|_| stdout.flush())
                        .is_err()
                    {
                        return Ok(self.finish(ExitCode::SUCCESS)); // the client is gone
                    }
                    continue;
                }
                // A partial message is never written: stdout stays whole lines.
                Ok(_) => "it stopped in the middle of a message".to_string(),
                Err(e) => e.to_string(),
            };
            if self.stdin_closed.load(Ordering::SeqCst) {
                return Ok(self.finish(ExitCode::SUCCESS)); // the session ended as the client asked
            }

            // The broker is lost. Hold the client side until this is sorted out.
            let mut conn = self.conn.lock().unwrap();
            let Some(answered) = self.answer_lost_requests(&mut stdout) else {
                conn.finished = true;
                self.changed.notify_all();
                return Ok(ExitCode::SUCCESS);
            };
            eprintln!(
                "tmux-mcp: lost the broker at {} ({why}); answered {answered} request(s) in flight with error {BROKER_LOST_CODE} (delivery to tmux unknown); finding or starting a new broker",
                sock.display(),
            );
            let now = Instant::now();
            losses.retain(|t| now.duration_since(*t) < LOSS_WINDOW);
            losses.push(now);
            let next = if losses.len() >= MAX_LOSSES {
                Err(anyhow::anyhow!(
                    "the broker was lost {} times within {} s; giving up (see `tmux-mcp doctor`)",
                    losses.len(),
                    LOSS_WINDOW.as_secs()
                ))
            } else {
                self.reconnect(server, generation, hello)
            };
            match next {
                Ok((new_sock, stream)) => {
                    self.adopt(&mut conn, &stream);
                    self.changed.notify_all();
                    drop(conn);
                    eprintln!(
                        "tmux-mcp: reconnected to the broker at {}; the MCP session goes on",
                        new_sock.display()
                    );
                    sock = new_sock;
                    from_broker = BufReader::with_capacity(64 * 1024, stream);
                }
                Err(e) => {
                    conn.finished = true;
                    self.changed.notify_all();
                    return Err(e);
                }
            }
        }
    }

    /// Answers every request in flight when the broker was lost with the
    /// broker-lost error (a listen with its end), since their answers will
    /// never come; how many, or `None` when the client is gone. Called with
    /// the connection locked, so no line reaches a broker meanwhile.
    fn answer_lost_requests(&self, stdout: &mut std::io::StdoutLock<'_>) -> Option<usize> {
        let pending = {
            let mut t = self.track.lock().unwrap();
            t.swallow.clear(); // answers that will never come
            t.inflight.drain().map(|(_, raw)| raw).collect::<Vec<_>>()
        };
        for (raw, listen) in &pending {
            let answer = if *listen {
                listen_ended_answer(raw)
            } else {
                broker_lost_answer(raw)
            };
            if stdout
                .write_all(&answer)
                .and_then(|_| stdout.flush())
                .is_err()
            {
                return None;
            }
        }
        Some(pending.len())
    }

    /// Makes a new broker's `stream` the one client lines go to, in a new
    /// epoch, once the session's setup is replayed on it (so the new broker
    /// knows the session before any line); a stream that fails that is shut,
    /// to be read to its end as another loss.
    fn adopt(&self, conn: &mut Conn, stream: &UnixStream) {
        conn.epoch += 1;
        let setup = self.setup_replay(conn.epoch);
        conn.broken = stream
            .try_clone()
            .and_then(|mut w| w.write_all(&setup).map(|_| w))
            .map(|w| conn.to_broker = w)
            .is_err();
        if conn.broken {
            let _ = stream.shutdown(Shutdown::Both); // broker_to_client reads it to its end, as a loss
        }
    }

    /// A broker for the same tmux server instance, and a session on it.
    fn reconnect(
        &self,
        server: &ServerArgs,
        generation: &str,
        hello: &Hello,
    ) -> anyhow::Result<(PathBuf, UnixStream)> {
        let tmux_socket = locate::tmux_socket(server)?;
        let id = locate::server(server).map_err(|e| {
            anyhow::anyhow!(
                "the tmux server at {} is gone ({e:#}); this MCP session ends",
                tmux_socket.display()
            )
        })?;
        if id.generation != generation {
            bail!("the tmux server this session was attached to has exited (another one now listens on {}); this MCP session ends", tmux_socket.display());
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let (id, sock) = locate::ensure(server).context("no new broker could be started")?;
            if id.generation != generation {
                bail!("the tmux server this session was attached to has exited (another one now listens on {}); this MCP session ends", tmux_socket.display());
            }
            match connect(&sock, hello) {
                Ok((stream, Reply::McpReady { .. })) => return Ok((sock, stream)),
                Ok((_, Reply::Refused { reason })) => {
                    bail!("the new broker refused this session: {reason}")
                }
                Ok((_, other)) => bail!("unexpected broker reply {other:?}"),
                // A killed broker's socket can still accept for a moment
                // while the process is torn down; then it resets. Look again.
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("talking to the broker at {}", sock.display()))
                }
            }
        }
    }

    /// The client's session set-up for a new broker: its `initialize` under an
    /// id of the relay's own (the answer is swallowed), then its
    /// `notifications/initialized`. Empty for a client of the stateless era.
    fn setup_replay(&self, epoch: u64) -> Vec<u8> {
        let mut t = self.track.lock().unwrap();
        let mut out = Vec::new();
        if let Some(init) = &t.initialize {
            let id = format!("tmux-mcp-relay-{}-replay-{epoch}", std::process::id());
            if let Some(line) = with_id(init, &id) {
                out.extend_from_slice(&line);
                t.swallow.insert(serde_json::Value::String(id).to_string());
            }
        }
        if let Some(n) = &t.initialized {
            out.extend_from_slice(n);
        }
        out
    }

    fn finish(&self, code: ExitCode) -> ExitCode {
        let mut conn = self.conn.lock().unwrap();
        conn.finished = true;
        self.changed.notify_all();
        code
    }
}

/// The MCP client's process name, for the broker's log.
fn parent_name() -> String {
    let ppid = std::os::unix::process::parent_id();
    tmux_mcp_core::platform::process_table::stat(ppid)
        .map(|s| s.comm)
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_keyed_as_the_broker_echoes_them() {
        let call = b"{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0062\",\"method\":\"tools/call\"}\n";
        let request = Note::Request {
            key: "\"ab\"".into(),
            raw_id: "\"a\\u0062\"",
            initialize: false,
            listen: false,
        };
        assert_eq!(note(call), request);
        assert_eq!(
            answered_key(b"{\"jsonrpc\":\"2.0\",\"id\":\"ab\",\"result\":{}}\n"),
            Some("\"ab\"".into())
        );
        // Beyond 64 bits the broker answers with id null: not tracked.
        assert!(matches!(note(b"{\"jsonrpc\":\"2.0\",\"id\":123456789012345678901234567890,\"method\":\"ping\"}\n"), Note::Nothing));
        assert!(matches!(
            note(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n"),
            Note::Nothing
        ));
        assert!(matches!(note(b"not json\n"), Note::Nothing));
        assert!(matches!(
            note(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n"),
            Note::Nothing
        ));
        assert!(matches!(
            note(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"),
            Note::Initialized
        ));
        assert!(
            matches!(note(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":7}}\n"), Note::Cancelled(k) if k == "7")
        );
        assert_eq!(
            answered_key(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"id\":3}\n"),
            None
        );
    }

    #[test]
    fn made_up_answers_echo_the_raw_id() {
        let raw = "18446744073709551616000";
        let v: serde_json::Value = serde_json::from_slice(&broker_lost_answer(raw)).unwrap();
        assert_eq!(v["error"]["code"], BROKER_LOST_CODE);
        assert_eq!(v["error"]["data"]["delivery"], "possibly_sent");
        assert!(String::from_utf8(broker_lost_answer(raw))
            .unwrap()
            .contains(&format!("\"id\":{raw},")));
    }

    #[test]
    fn replayed_initialize_keeps_the_params_as_sent() {
        let line = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"big":123456789012345678901234567890,"s":"\u00e9"}}"#;
        let out = with_id(line, "r-1").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with('\n'));
        assert!(text.contains(r#""id":"r-1""#), "{text}");
        assert!(
            text.contains(r#"{"big":123456789012345678901234567890,"s":"\u00e9"}"#),
            "{text}"
        );
    }
}
