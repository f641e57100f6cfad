//! The broker daemon: one per tmux server.
//!
//! Start-up: identify the server from its socket (no tmux command), take the
//! per-server lock (a second broker exits 0 and leaves the first alone), probe
//! with `wire::is_live` that no broker serves it from here or another
//! directory, replace a stale socket file, listen on a 0600 socket in a 0700 directory, read the pane
//! table once (hook-free), publish `@mcp-broker-socket` unless that would fire a
//! user's `after-set-option` hook.
//!
//! Each connection opens with a hello of one of four kinds: an attach relay
//! (MCP follows), a `feed` table, a `cursor` request, or `status`.
//!
//! Lifetime: it exits when the tmux server exits (pidfd readable) or on
//! SIGTERM/SIGINT/SIGHUP (signal-hook-tokio), unlinks its socket and lock, and
//! leaves nothing running.
//!
//! Hand-over: on SIGUSR1 the broker *retires* (the plugin does this after an
//! update, so new agents get the new binary): it gives up its public socket
//! and lock at once, so a successor can start, and keeps serving the agents it
//! has, with run-shell feed answers coming to a private socket of its own; it
//! exits when its last agent leaves (or the server does).
//!
//! The listening socket is an `interprocess` local socket (a Unix socket
//! created with mode 0600 before `bind`, so there is no window in which it is
//! wider); each accepted connection's peer credentials come from it, then the
//! stream is used as the tokio `UnixStream` it wraps.

use crate::daemon_state::DaemonState;
use crate::policy::{self, Policy, Refusal};
use crate::session::Session;
use crate::{mcp, tools};
use futures::StreamExt;
use interprocess::local_socket::tokio::{Listener, Stream as LocalStream};
use interprocess::local_socket::traits::tokio::Listener as _;
use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};
use interprocess::os::unix::local_socket::ListenerOptionsExt as _;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tmux_mcp_core::paths::{self, BrokerPaths};
use tmux_mcp_core::platform::{self, process_table};
use tmux_mcp_core::process::Backend;
use tmux_mcp_core::server::{self, ServerIdentity};
use tmux_mcp_core::sys;
use tmux_mcp_core::tmux::{Tmux, DEFAULT_TIMEOUT};
use tmux_mcp_core::wire::is_live;
use tmux_mcp_core::wire::{self, Hello, McpHello, Reply, StatusReply, Tier};
use tmux_mcp_engine::registry::{self, FeedMode, FeedSource, Registry};
use tmux_mcp_engine::Broker;
use tokio::net::UnixStream;
use tokio::task::JoinHandle;

pub struct Config {
    pub tmux_socket: PathBuf,
    /// Where to put the broker socket; default: `paths::choose_runtime_dir`.
    pub runtime_dir: Option<PathBuf>,
    /// Tools enabled for every session, beyond the defaults.
    pub enable_tools: Vec<String>,
    /// The default safety tier of sessions (`--safety`).
    pub safety: Tier,
    /// The `tmux-mcp` helper binary; default: next to this executable, else PATH.
    pub helper: Option<PathBuf>,
    /// How to read the pane table; default: `list-commands`, falling back to
    /// `run-shell` when that does not work on this tmux.
    pub feed: Option<FeedMode>,
    /// Never use the in-process tmux protocol client (exec `tmux` instead).
    pub exec_only: bool,
    /// The deadline of one request, in seconds (reported as
    /// `limits.request_timeout_seconds`).
    pub request_timeout_seconds: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Server(#[from] server::ServerError),
    #[error("runtime directory {path}: {source}")]
    RuntimeDir { path: PathBuf, source: io::Error },
    #[error("{0}")]
    NoRuntimeDir(String),
    #[error("cannot listen on {path}: {source}")]
    Listen { path: PathBuf, source: io::Error },
    #[error("unknown tool(s) {0:?}")]
    UnknownTools(Vec<String>),
}

pub enum Outcome {
    /// Another broker already serves this tmux server.
    AlreadyRunning(PathBuf),
    /// This broker ran and has shut down.
    Stopped(StopReason),
}

/// The per-server lock, held for the broker's life.
struct Lock {
    _file: File,
    path: PathBuf,
}

fn take_lock(path: &Path) -> io::Result<Option<Lock>> {
    loop {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        if !sys::try_lock_exclusive(&file)? {
            return Ok(None);
        }
        // A broker that exited may have unlinked the file we opened; lock the
        // file that is at the path now, or two brokers could each hold "the" lock.
        match std::fs::metadata(path) {
            Ok(md) if md.ino() == file.metadata()?.ino() => {
                return Ok(Some(Lock {
                    _file: file,
                    path: path.to_path_buf(),
                }))
            }
            _ => continue,
        }
    }
}

/// A 0600 socket at `path` (the mode is set before `bind`). The file is not
/// removed when the listener is dropped: shutdown unlinks it explicitly, while
/// the lock is still held.
fn listen(path: &Path) -> io::Result<Listener> {
    ListenerOptions::new()
        .name(path.to_fs_name::<GenericFilePath>()?)
        .mode(0o600)
        .reclaim_name(false)
        .create_tokio()
}

pub fn helper_path(explicit: Option<PathBuf>) -> PathBuf {
    explicit
        .or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().map(|d| d.join("tmux-mcp")))
                .filter(|p| p.is_file())
        })
        .or_else(|| tmux_mcp_core::tmux::find_in_path("tmux-mcp"))
        .unwrap_or_else(|| PathBuf::from("tmux-mcp"))
}

/// The broker's life, phase by phase: check the configuration, identify the
/// server, claim its socket (or find it served), start the engine, serve
/// until a stop (retiring first on SIGUSR1), shut down.
pub async fn run(cfg: Config) -> Result<Outcome, DaemonError> {
    let unknown = tools::unknown_tools(&cfg.enable_tools);
    if !unknown.is_empty() {
        return Err(DaemonError::UnknownTools(unknown));
    }
    let probe = server::probe(&cfg.tmux_socket)?;
    // Signals are caught from here on: a SIGTERM during start-up (tmux
    // exiting right after it started us) is handled once the broker is
    // up, with the cleanup of any stop, instead of killing it half made
    // with its socket and lock left behind.
    let mut stop = Stop::new(probe.pidfd, probe.identity.pid);
    let identity = probe.identity;
    let bpaths = BrokerPaths::new(&runtime_dir(cfg.runtime_dir.clone())?, &identity.generation);
    let (lock, listener) = match claim(&bpaths, &identity.generation)? {
        Claim::Ours(lock, listener) => (lock, listener),
        Claim::Served(socket) => return Ok(Outcome::AlreadyRunning(socket)),
    };
    tracing::info!(socket = %bpaths.socket.display(), tmux = %identity.socket_path.display(), pid = identity.pid, generation = %identity.generation, "broker listening");
    let broker = start_engine(&cfg, identity, &bpaths).await;
    follow_enrolled_shells(&broker);
    // The daemon's own state beside the engine's: its defaults, its
    // figures, run_command's jobs.
    let daemon = Arc::new(DaemonState::new(
        cfg.enable_tools,
        cfg.safety,
        cfg.request_timeout_seconds,
    ));
    let accept = tokio::spawn(accept_loop(listener, broker.clone(), daemon.clone()));
    tokio::spawn(publish_option(broker.clone(), daemon.clone()));
    let (reason, standing) = match stop.next().await {
        StopReason::Retire => {
            let private = hand_over(&broker, &daemon, &bpaths, &lock, &accept);
            (
                serve_out(&daemon, &mut stop).await,
                Standing::Retired { private },
            )
        }
        reason => (reason, Standing::Serving),
    };
    shut_down(&broker, accept, standing, lock, reason).await;
    Ok(Outcome::Stopped(reason))
}

/// The runtime directory: `--runtime-dir` (made private if need be), else
/// the first safe one of the usual places, saying which were passed over
/// and why (a person reading the log wonders where the socket went).
fn runtime_dir(explicit: Option<PathBuf>) -> Result<PathBuf, DaemonError> {
    match explicit {
        Some(dir) => {
            paths::ensure_private_dir(&dir).map_err(|source| DaemonError::RuntimeDir {
                path: dir.clone(),
                source,
            })?;
            Ok(dir)
        }
        None => {
            let (dir, plan) = paths::choose_runtime_dir().map_err(DaemonError::NoRuntimeDir)?;
            if !plan.refused.is_empty() {
                tracing::warn!(
                    "runtime directory {}; passed over: {}",
                    dir.display(),
                    plan.refusals_text()
                );
            }
            Ok(dir)
        }
    }
}

/// Whether this broker is the server's: it holds the lock and listens, or
/// another live broker serves the server already (and is left alone).
enum Claim {
    Ours(Lock, Listener),
    Served(PathBuf),
}

/// Claims the server for this broker: the lock first (one claimant at a
/// time), then a look for a live broker at this socket or in another runtime
/// directory, and only then the stale socket file of a dead one is replaced.
fn claim(bpaths: &BrokerPaths, generation: &str) -> Result<Claim, DaemonError> {
    let lock = match take_lock(&bpaths.lock).map_err(|source| DaemonError::RuntimeDir {
        path: bpaths.lock.clone(),
        source,
    })? {
        Some(l) => l,
        None => return Ok(Claim::Served(bpaths.socket.clone())),
    };
    if is_live(&bpaths.socket) {
        return Ok(Claim::Served(bpaths.socket.clone()));
    }
    // A broker that chose another directory (another environment, or a name
    // that was squatted then) serves this server too: it is not displaced.
    if let Some(other) = BrokerPaths::candidates(generation)
        .into_iter()
        .map(|p| p.socket)
        .find(|s| *s != bpaths.socket && is_live(s))
    {
        return Ok(Claim::Served(other));
    }
    let _ = std::fs::remove_file(&bpaths.socket); // stale file of a dead broker
    let listener = listen(&bpaths.socket).map_err(|source| DaemonError::Listen {
        path: bpaths.socket.clone(),
        source,
    })?;
    Ok(Claim::Ours(lock, listener))
}

/// The engine of this server: tmux access (the in-process protocol client
/// unless `--exec-only`), how the pane table is read, process identities,
/// and the broker state every session holds.
async fn start_engine(cfg: &Config, identity: ServerIdentity, bpaths: &BrokerPaths) -> Arc<Broker> {
    let tmux = Tmux::for_server(&identity.socket_path, identity.pid);
    if !cfg.exec_only {
        tmux.try_enable_direct().await;
    }
    let mode = match cfg.feed {
        Some(m) => m,
        None => feed_mode(&tmux).await,
    };
    tracing::info!(direct = tmux.uses_direct(), ?mode, "tmux access");
    let source = FeedSource {
        mode,
        tmux,
        helper: helper_path(cfg.helper.clone()),
        broker_socket: bpaths.socket.clone(),
        server_pid: identity.pid,
        timeout: DEFAULT_TIMEOUT,
    };
    let backend = Backend::detect(identity.pid);
    Arc::new(Broker::new(
        identity,
        bpaths.clone(),
        Registry::new(source, backend),
    ))
}

/// How to read the pane table when `--feed` does not say: `list-commands`
/// if this tmux expands the table there (one command, no helper process),
/// else the `run-shell` feed.
async fn feed_mode(tmux: &Tmux) -> FeedMode {
    let probe = tmux
        .run(
            &[
                "list-commands",
                "-F",
                &tmux_mcp_core::feed::table_format(),
                "list-commands",
            ],
            DEFAULT_TIMEOUT,
        )
        .await;
    match probe.as_deref().map(tmux_mcp_core::feed::parse) {
        Ok(Ok(_)) => FeedMode::ListCommands,
        other => {
            tracing::warn!(
                "list-commands cannot read the table here ({other:?}); using the run-shell feed"
            );
            FeedMode::RunShell
        }
    }
}

/// Enrolled shells write their marks in the server's marks directory
/// (`tmux-mcp shell-init`); the directory is the server instance's, so it is
/// kept across a broker restart and removed with the server. Without it
/// there is no shell integration, and the broker says so and goes on.
fn follow_enrolled_shells(broker: &Arc<Broker>) {
    match paths::ensure_private_dir(&broker.paths.marks) {
        Ok(()) => {
            broker.marks.set_dir(broker.paths.marks.clone());
            tokio::spawn(tmux_mcp_engine::shell_watch::follow(
                Arc::downgrade(broker),
                broker.paths.marks.clone(),
            ));
        }
        Err(e) => tracing::warn!(
            "no shell integration: {}: {e}",
            broker.paths.marks.display()
        ),
    }
}

/// What of the server's broker files this broker still holds when it stops,
/// and so removes.
enum Standing {
    /// The server's broker: the public socket, the lock and the marks
    /// directory (when empty) are its to remove.
    Serving,
    /// Retired: those are the successor's; its own is the private socket
    /// the run-shell feed answers came to, if it could make one.
    Retired { private: Option<PathBuf> },
}

/// Retiring (SIGUSR1): gives up the public socket and the lock first, so a
/// successor can take them while this broker serves the agents it has;
/// run-shell feed answers come to a private socket from now on. Returns that
/// socket, or `None` when it could not be made.
fn hand_over(
    broker: &Arc<Broker>,
    daemon: &Arc<DaemonState>,
    bpaths: &BrokerPaths,
    lock: &Lock,
    accept: &JoinHandle<()>,
) -> Option<PathBuf> {
    let private = bpaths.dir.join(format!(
        "{}.retired-{}.sock",
        bpaths
            .socket
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("srv"),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&private);
    let retired = match listen(&private) {
        Ok(l) => {
            broker.registry.set_feed_socket(private.clone());
            tokio::spawn(accept_loop(l, broker.clone(), daemon.clone()));
            Some(private)
        }
        Err(e) => {
            tracing::warn!(
                "retiring without a private socket ({e}); a run-shell feed cannot answer any more"
            );
            None
        }
    };
    accept.abort();
    let _ = std::fs::remove_file(&bpaths.socket);
    let _ = std::fs::remove_file(&lock.path);
    tracing::info!(
        sessions = daemon.sessions_open(),
        "broker retired: serving its agents until they leave"
    );
    retired
}

/// A retired broker's last phase: until its last agent leaves, or a stop.
/// A second SIGUSR1 changes nothing. Watching our own session count is a
/// look at broker memory, not at tmux.
async fn serve_out(daemon: &DaemonState, stop: &mut Stop) -> StopReason {
    let stopped = async {
        loop {
            let r = stop.next().await;
            if r != StopReason::Retire {
                return r;
            }
        }
    };
    let last_left = async {
        while daemon.sessions_open() > 0 {
            tokio::time::sleep(Duration::from_millis(200)).await
        }
    };
    tokio::select! {
        r = stopped => r,
        _ = last_left => StopReason::LastAgentLeft,
    }
}

/// Ends the broker's service: running waits answer `observation_lost` and get
/// a moment to reach their clients (every observer returns its permit when it
/// is done; tmux itself sends its jobs SIGTERM when it exits, so this covers
/// both ways), then the files this broker holds are removed while the lock
/// is still ours, and the lock is let go. When the server is gone, so is
/// everything the log was about; a broker stopped by a signal while its
/// server lives keeps its log.
async fn shut_down(
    broker: &Broker,
    accept: JoinHandle<()>,
    standing: Standing,
    lock: Lock,
    reason: StopReason,
) {
    tracing::info!("broker stopping: {reason}");
    broker.mark_server_gone();
    broker.admission.drain(Duration::from_millis(300)).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    accept.abort();
    let bpaths = &broker.paths;
    match standing {
        // The public socket and lock are the successor's now.
        Standing::Retired {
            private: Some(private),
        } => {
            let _ = std::fs::remove_file(private);
        }
        // Retired without a private socket of its own: the public socket,
        // lock and marks directory may be a successor's by now (it took
        // the freed paths): nothing of them is removed.
        Standing::Retired { private: None } => {}
        Standing::Serving => {
            let _ = std::fs::remove_file(&bpaths.socket);
            let _ = std::fs::remove_file(&lock.path);
            // An empty marks directory holds nothing worth keeping for the
            // next broker (which makes it again); one with enrolled shells'
            // files is kept while the server lives. Removed while the lock
            // is still ours, so no successor has made it its own yet.
            let _ = std::fs::remove_dir(&bpaths.marks);
        }
    }
    drop(lock);
    if reason == StopReason::ServerExited || server_gone_soon(&broker.identity).await {
        let _ = std::fs::remove_file(&bpaths.log);
        let _ = std::fs::remove_dir_all(&bpaths.marks);
    }
}

/// Whether the server process ends within a moment (a signal often arrives
/// while tmux is exiting).
async fn server_gone_soon(id: &ServerIdentity) -> bool {
    for _ in 0..20 {
        if process_table::stat(id.pid).map_or(true, |st| {
            st.start_ticks != id.start_ticks || st.state == 'Z'
        }) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// Why the broker stops, or (`Retire`) why a phase of its life ends. Its
/// text is what the log says (`broker stopping: …`, `stopped: …`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The tmux server exited (its pidfd turned readable, or its pid went).
    ServerExited,
    Sigterm,
    Sigint,
    Sighup,
    /// SIGUSR1: retire (see the module doc); never the reason it stops.
    Retire,
    /// The signal stream ended without a signal we asked for.
    OtherSignal,
    /// It had retired, and the last agent it served left.
    LastAgentLeft,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::ServerExited => "the tmux server exited",
            StopReason::Sigterm => "SIGTERM",
            StopReason::Sigint => "SIGINT",
            StopReason::Sighup => "SIGHUP",
            StopReason::Retire => "SIGUSR1: retire",
            StopReason::OtherSignal => "a signal",
            StopReason::LastAgentLeft => "retired, and its last agent left",
        })
    }
}

/// What ends (a phase of) the broker's life: the tmux server exiting, a stop
/// signal, or SIGUSR1, which asks it to retire (see the module doc).
struct Stop {
    signals: signal_hook_tokio::Signals,
    server_gone: tokio::sync::watch::Receiver<bool>,
}

impl Stop {
    fn new(pidfd: Option<OwnedFd>, server_pid: u32) -> Stop {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1};
        let signals = signal_hook_tokio::Signals::new([SIGTERM, SIGINT, SIGHUP, SIGUSR1])
            .expect("signal handlers");
        let (tx, server_gone) = tokio::sync::watch::channel(false);
        let pidfd = pidfd.or_else(|| platform::exit_fd(server_pid).ok());
        tokio::spawn(async move {
            match pidfd.and_then(|fd| sys::async_exit_fd(fd).ok()) {
                Some(afd) => {
                    let _ = afd.readable().await;
                }
                // No pidfd at all (old kernel): fall back to checking the pid.
                None => loop {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    if process_table::stat(server_pid).is_err() {
                        break;
                    }
                },
            }
            let _ = tx.send(true);
        });
        Stop {
            signals,
            server_gone,
        }
    }

    async fn next(&mut self) -> StopReason {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1};
        tokio::select! {
            _ = self.server_gone.wait_for(|gone| *gone) => StopReason::ServerExited,
            sig = self.signals.next() => match sig {
                Some(SIGTERM) => StopReason::Sigterm,
                Some(SIGINT) => StopReason::Sigint,
                Some(SIGHUP) => StopReason::Sighup,
                Some(SIGUSR1) => StopReason::Retire,
                _ => StopReason::OtherSignal,
            },
        }
    }
}

async fn accept_loop(listener: Listener, broker: Arc<Broker>, daemon: Arc<DaemonState>) {
    let own_uid = sys::current_uid();
    loop {
        let stream = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let (broker, daemon) = (broker.clone(), daemon.clone());
        tokio::spawn(async move {
            if let Err(e) = handle_connection(stream, broker, daemon, own_uid).await {
                tracing::debug!("connection ended: {e}");
            }
        });
    }
}

async fn handle_connection(
    stream: LocalStream,
    broker: Arc<Broker>,
    daemon: Arc<DaemonState>,
    own_uid: u32,
) -> Result<(), wire::WireError> {
    let LocalStream::UdSocket(stream) = stream;
    let mut stream = UnixStream::from(stream);
    // The platform's call, not interprocess's `peer_creds`: that has no pid
    // on macOS, and the relay's pid is how its pane is found.
    let cred = platform::peer_cred(&stream)?;
    if let Err(reason) = sys::check_peer(&cred, own_uid) {
        tracing::warn!("refused peer pid {}: {reason}", cred.pid);
        return wire::write_frame_async(&mut stream, &Reply::Refused { reason }).await;
    }
    let hello: Hello =
        match tokio::time::timeout(Duration::from_secs(10), wire::read_frame_async(&mut stream))
            .await
        {
            Ok(Ok(h)) => h,
            Ok(Err(e)) => {
                let _ = wire::write_frame_async(
                    &mut stream,
                    &Reply::Refused {
                        reason: format!("bad hello: {e}"),
                    },
                )
                .await;
                return Err(e);
            }
            Err(_) => return Ok(()),
        };
    match hello {
        Hello::Feed(msg) => {
            broker.registry.deliver(msg.req, msg.table);
            wire::write_frame_async(&mut stream, &Reply::FeedAccepted).await
        }
        Hello::Status => {
            wire::write_frame_async(
                &mut stream,
                &Reply::Status(Box::new(status(&broker, &daemon))),
            )
            .await
        }
        Hello::Cursor(req) => {
            let reply = crate::handoff::handoff(&broker, &req.pane_id).await;
            wire::write_frame_async(&mut stream, &reply).await
        }
        Hello::Mcp(h) => serve_mcp(stream, broker, daemon, cred.pid, h).await,
    }
}

/// One agent's MCP session: its policy from the hello, the pane table and
/// the broker's defaults (refused with the reason when it has none), then
/// MCP until the agent leaves.
async fn serve_mcp(
    mut stream: UnixStream,
    broker: Arc<Broker>,
    daemon: Arc<DaemonState>,
    peer_pid: u32,
    hello: McpHello,
) -> Result<(), wire::WireError> {
    let (policy, caller_pane, caller_sessions) =
        match admit(&broker, &daemon, peer_pid, &hello).await {
            Ok(admitted) => admitted,
            Err(refusal) => {
                let reason = refusal.to_string();
                return wire::write_frame_async(&mut stream, &Reply::Refused { reason }).await;
            }
        };
    let id = daemon.sessions_served.fetch_add(1, Ordering::Relaxed) + 1;
    wire::write_frame_async(&mut stream, &Reply::McpReady { session: id }).await?;
    tracing::info!(session = id, peer_pid, client = %hello.client_name, caller = ?caller_pane, scope = ?policy.scope, "MCP session open");
    let session = Arc::new(Session {
        id,
        broker: broker.clone(),
        daemon: daemon.clone(),
        client_name: hello.client_name,
        peer_pid,
        caller_pane,
        caller_sessions,
        scope: policy.scope,
        enabled: policy.enabled,
        safety: policy.safety,
        toolset: policy.toolset,
        allow_self: policy.allow_self,
        confirm: policy.confirm,
        pending_confirmations: Default::default(),
        request_timeout_seconds: policy.request_timeout_seconds,
        jobs: daemon.jobs.clone(),
        log: Default::default(),
        via: hello.via,
        other_servers: Default::default(),
    });
    daemon.sessions_open.fetch_add(1, Ordering::Relaxed);
    let (r, w) = stream.into_split();
    mcp::serve(r, w, session).await;
    daemon.sessions_open.fetch_sub(1, Ordering::Relaxed);
    tracing::info!(session = id, "MCP session closed");
    Ok(())
}

/// A hello's policy, with the caller's pane and the sessions it is placed in.
/// The hello is checked on its own first, so a refused one reads no tmux;
/// then the pane table (fresh: the options may have just changed) gives the
/// caller (found from the relay's process ancestry, never `$TMUX_PANE`) and
/// the `@mcp-*` options, and [`policy::session_policy`] decides.
async fn admit(
    broker: &Broker,
    daemon: &DaemonState,
    peer_pid: u32,
    hello: &McpHello,
) -> Result<(Policy, Option<String>, Vec<String>), Refusal> {
    policy::check_hello(hello)?;
    let snap = broker
        .registry
        .refresh()
        .await
        .map_err(|e| Refusal::PaneTable(e.to_string()))?;
    let caller_pane = registry::pane_of_process(&snap, peer_pid);
    if caller_pane.is_none() && hello.tmux_pane_env.is_some() {
        tracing::info!("relay says TMUX_PANE={:?} but its process ancestry is in no pane; treating it as outside tmux", hello.tmux_pane_env);
    }
    let caller_sessions: Vec<String> = caller_pane
        .as_ref()
        .and_then(|id| snap.pane(id))
        .map(|p| {
            p.placements
                .iter()
                .map(|pl| pl.session_id.clone())
                .collect()
        })
        .unwrap_or_default();
    let defaults = policy::Defaults::of(daemon);
    let policy = policy::session_policy(hello, caller_pane.is_some(), &snap.server, &defaults)?;
    // Another server's session-scoped agent has no session here, wherever
    // its link's process runs: it sees no pane (it may only continue a
    // hand-off cursor, which any session may).
    let caller_sessions = match (&hello.via, policy.scope) {
        (Some(_), tmux_mcp_core::wire::Scope::Session) => Vec::new(),
        _ => caller_sessions,
    };
    Ok((policy, caller_pane, caller_sessions))
}

fn status(broker: &Broker, daemon: &DaemonState) -> StatusReply {
    let defaults = policy::Defaults::of(daemon);
    let snap = broker.registry.cached();
    let processes: Vec<_> = snap
        .iter()
        .flat_map(|s| s.panes.iter().map(|p| p.process_status()))
        .collect();
    StatusReply {
        broker_pid: std::process::id(),
        broker_socket: broker.paths.socket.display().to_string(),
        tmux_socket: broker.identity.socket_path.display().to_string(),
        generation: broker.identity.generation.clone(),
        server_pid: broker.identity.pid,
        server_start_time: broker.identity.start_time,
        tmux_version: snap
            .as_ref()
            .map(|s| s.server.version.clone())
            .unwrap_or_default(),
        uptime_seconds: daemon.started.elapsed().as_secs_f64(),
        sessions_served: daemon.sessions_served.load(Ordering::Relaxed),
        sessions_open: daemon.sessions_open(),
        panes: processes.len() as u64,
        panes_tracked: processes
            .iter()
            .filter(|p| p.process_generation.is_some())
            .count() as u64,
        panes_untracked: processes
            .iter()
            .filter_map(|p| p.note.clone().map(|n| (p.pane_id.clone(), n)))
            .collect(),
        option_published: daemon.option_state.lock().unwrap().clone(),
        tmux_connections: Some(broker.registry.tmux_connections.load(Ordering::Relaxed)),
        tmux_commands: broker.registry.tmux_commands.load(Ordering::Relaxed),
        tool_calls: daemon.tool_calls.load(Ordering::Relaxed),
        retained_entries: broker.retained.usage().entries as u64,
        retained_bytes: broker.retained.usage().bytes as u64,
        tmux_access: broker.registry.access(),
        processes,
        log_file: broker.paths.log.display().to_string(),
        enabled_tools: tools::enabled_in_catalog_order(&tools::enabled_set(
            defaults.safety,
            defaults.enable_tools.iter().cloned(),
        ))
        .into_iter()
        .map(String::from)
        .collect(),
    }
}

/// Publishes `@mcp-broker-socket`, unless it already holds our path or setting it
/// would run a user's `after-set-option` hook.
async fn publish_option(broker: Arc<Broker>, daemon: Arc<DaemonState>) {
    let state = match broker.registry.refresh().await {
        Err(e) => format!("not published: cannot read the server: {e}"),
        Ok(snap) => {
            let want = broker.paths.socket.display().to_string();
            if snap.server.broker_option == want {
                "published (already set)".to_string()
            } else {
                let sessions = snap.session_ids();
                match broker.registry.hook_is_set("after-set-option", &sessions).await {
                    Ok(true) => "not published: an after-set-option hook is set and setting the option would run it".to_string(),
                    Err(e) => format!("not published: cannot read hooks: {e}"),
                    Ok(false) => match broker.registry.run_tmux(&["set-option", "-s", "@mcp-broker-socket", &want]).await {
                        Ok(_) => "published".to_string(),
                        Err(e) => format!("not published: {e}"),
                    },
                }
            }
        }
    };
    tracing::info!("@mcp-broker-socket: {state}");
    *daemon.option_state.lock().unwrap() = state;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log's wording of each stop, as it was when the reasons were strings.
    #[test]
    fn stop_reasons_read_as_before() {
        let texts = [
            (StopReason::ServerExited, "the tmux server exited"),
            (StopReason::Sigterm, "SIGTERM"),
            (StopReason::Sigint, "SIGINT"),
            (StopReason::Sighup, "SIGHUP"),
            (StopReason::Retire, "SIGUSR1: retire"),
            (StopReason::OtherSignal, "a signal"),
            (
                StopReason::LastAgentLeft,
                "retired, and its last agent left",
            ),
        ];
        for (reason, text) in texts {
            assert_eq!(reason.to_string(), text);
        }
    }
}
