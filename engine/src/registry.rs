//! The pane registry: the broker's picture of the tmux server's panes.
//!
//! A refresh reads the whole table in one hook-free tmux command (see `feed` and
//! `FeedMode`): normally `list-commands -F`, else by `run-shell` of the feed
//! helper, whose msgpack table arrives on the broker socket tagged with the
//! request id. Refreshes are single-flight: callers that arrive while one is running
//! share its result. Process identities (see `process`) are carried over from one
//! snapshot to the next while the pane's pid is unchanged, so `process_generation`
//! is stable for a process and new for a respawned one.
//!
//! A listing page reads a shaped table of its own ([`Registry::read`]): some
//! sessions in full, every other pane only placed. [`pane_of_process`] finds
//! the caller's pane from process ancestry. [`Registry::hook_is_set`] is one
//! counted, hook-free `show-hooks` read, built by core's `hooks`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tmux_mcp_core::process::{Backend, IdentityError, ProcessIdentity};
use tmux_mcp_core::tmux::{Tmux, TmuxError};
use tmux_mcp_core::wire::{Depth, PaneRow, PaneTable, ProcessStatus, ServerRow};
use tmux_mcp_core::{feed, hooks};
use tokio::sync::oneshot;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub session_id: String,
    pub session_name: String,
    pub window_index: i64,
    pub window_active: bool,
    pub session_created: u64,
    pub session_attached: u64,
    pub session_windows: u64,
}

#[derive(Debug, Clone)]
pub struct Pane {
    /// What was read of this pane: `Full` in every snapshot but a listing's
    /// own read (`Registry::read`), where the other fields may be empty.
    pub depth: Depth,
    pub id: String,
    pub index: i64,
    pub window_id: String,
    pub window_name: String,
    pub window_width: u32,
    pub window_height: u32,
    pub window_panes: u64,
    pub window_layout: String,
    pub active: bool,
    pub pid: u32,
    pub dead: bool,
    pub dead_status: Option<i32>,
    pub width: u32,
    pub height: u32,
    pub history_size: u64,
    pub history_limit: u64,
    pub command: String,
    pub cwd: String,
    pub title: String,
    pub tty: String,
    pub cursor_x: u32,
    pub cursor_y: u32,
    /// `pane_in_mode` (0 or 1).
    pub in_mode: u32,
    /// `scroll_position`: 0 unless in copy mode.
    pub scroll_position: i64,
    /// Whether the pane's window is zoomed.
    pub window_zoomed: bool,
    /// Sessions (and window indexes there) through which the pane is reachable,
    /// ordered by numeric session id, then index.
    pub placements: Vec<Placement>,
    pub process: Result<Arc<ProcessIdentity>, IdentityError>,
}

#[cfg(any(test, feature = "test-support"))]
impl Pane {
    /// A live-looking 80×24 pane `id` of window `window_id` running `sh`, in no
    /// session, with no process identity: unit tests change what they need.
    pub fn sample(id: &str, window_id: &str) -> Pane {
        Pane {
            depth: Depth::Full,
            id: id.into(),
            index: 0,
            window_id: window_id.into(),
            window_name: "w".into(),
            window_width: 80,
            window_height: 24,
            window_panes: 1,
            window_layout: String::new(),
            active: true,
            pid: 1,
            dead: false,
            dead_status: None,
            width: 80,
            height: 24,
            history_size: 0,
            history_limit: 2000,
            command: "sh".into(),
            cwd: String::new(),
            title: String::new(),
            tty: String::new(),
            cursor_x: 0,
            cursor_y: 0,
            in_mode: 0,
            scroll_position: 0,
            window_zoomed: false,
            placements: Vec::new(),
            process: Err(IdentityError::PaneDead),
        }
    }
}

impl Pane {
    pub fn process_status(&self) -> ProcessStatus {
        let (gen, state, note) = match &self.process {
            Ok(p) if p.exited() => (Some(p.generation.clone()), "exited", None),
            Ok(p) => (Some(p.generation.clone()), "running", None),
            Err(IdentityError::PaneDead) => {
                (None, "dead", Some(IdentityError::PaneDead.to_string()))
            }
            Err(e) => (None, "untracked", Some(e.to_string())),
        };
        ProcessStatus {
            pane_id: self.id.clone(),
            pid: self.pid,
            process_generation: gen,
            state: state.into(),
            note,
        }
    }

    pub fn in_session(&self, session_id: &str) -> bool {
        self.placements.iter().any(|p| p.session_id == session_id)
    }
}

#[derive(Debug, Clone)]
pub struct Snapshot {
    pub server: ServerRow,
    /// Ordered by numeric pane id.
    pub panes: Vec<Pane>,
    /// When the read of this table was asked of tmux: its rows are no older.
    pub taken: Instant,
    pub seq: u64,
}

impl Snapshot {
    pub fn pane(&self, id: &str) -> Option<&Pane> {
        self.panes.iter().find(|p| p.id == id)
    }

    /// Every session that holds a pane, sorted, each once.
    pub fn session_ids(&self) -> Vec<String> {
        session_ids(&self.panes)
    }
}

/// The sessions `panes` are placed in, sorted, each once.
pub fn session_ids<'a>(panes: impl IntoIterator<Item = &'a Pane>) -> Vec<String> {
    let mut s: Vec<String> = panes
        .into_iter()
        .flat_map(|p| p.placements.iter().map(|pl| pl.session_id.clone()))
        .collect();
    s.sort();
    s.dedup();
    s
}

#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    #[error(transparent)]
    Tmux(#[from] TmuxError),
    #[error("the feed helper reported: {0}")]
    Helper(String),
    #[error("the table did not parse: {0}")]
    Table(String),
    #[error("the feed helper did not answer within {0:?}")]
    NoAnswer(Duration),
    #[error("the table came from tmux server pid {got}, not {expected}")]
    WrongServer { expected: u32, got: u32 },
}

/// How the pane table is read. Both ways are hook-free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedMode {
    /// `list-commands -F <table format> list-commands`: tmux expands the format
    /// once and runs no hook; no shell, no helper process.
    ListCommands,
    /// `run-shell` the `tmux-mcp feed` helper with the expanded format on its
    /// stdin; the helper sends the table over the broker socket.
    RunShell,
}

/// How the registry reaches tmux.
pub struct FeedSource {
    pub mode: FeedMode,
    pub tmux: Tmux,
    pub helper: PathBuf,
    pub broker_socket: PathBuf,
    pub server_pid: u32,
    pub timeout: Duration,
}

/// At debug level (`TMUX_MCP_LOG=tmux_mcp_core::registry=debug`): each tmux
/// invocation's first command and how long it took, for finding where a call's
/// time goes.
fn log_command(args: &[&str], started: Instant) {
    tracing::debug!(
        command = args.first().copied().unwrap_or_default(),
        args = args.len(),
        ms = started.elapsed().as_secs_f64() * 1000.0,
        "tmux"
    );
}

pub struct Registry {
    source: FeedSource,
    pub backend: Backend,
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<PaneTable, String>>>>,
    next_req: AtomicU64,
    current: Mutex<Option<Arc<Snapshot>>>,
    refresh_gate: tokio::sync::Mutex<()>,
    /// tmux client invocations so far (reads and writes), each one connection
    /// (or one exec), and the top-level commands they carried.
    pub tmux_connections: AtomicU64,
    pub tmux_commands: AtomicU64,
    /// Where run-shell feed helpers answer once the broker has retired (its
    /// public socket then belongs to its successor).
    feed_socket: Mutex<Option<PathBuf>>,
}

impl Registry {
    pub fn new(source: FeedSource, backend: Backend) -> Self {
        Registry {
            source,
            backend,
            pending: Mutex::new(HashMap::new()),
            next_req: AtomicU64::new(1),
            current: Mutex::new(None),
            refresh_gate: tokio::sync::Mutex::new(()),
            tmux_connections: AtomicU64::new(0),
            tmux_commands: AtomicU64::new(0),
            feed_socket: Mutex::new(None),
        }
    }

    /// Run-shell feed helpers answer on `socket` from now on.
    pub fn set_feed_socket(&self, socket: PathBuf) {
        *self.feed_socket.lock().unwrap() = Some(socket);
    }

    pub fn tmux(&self) -> &Tmux {
        &self.source.tmux
    }

    /// A line for `status`: how tmux is reached and how the table is read.
    pub fn access(&self) -> String {
        let client = if self.source.tmux.uses_direct() {
            "in-process tmux protocol client"
        } else {
            "exec of the tmux binary"
        };
        let feed = match self.source.mode {
            FeedMode::ListCommands => "table via list-commands -F",
            FeedMode::RunShell => "table via run-shell feed helper",
        };
        format!("{client}; {feed}")
    }

    fn count(&self, args: &[&str]) {
        self.tmux_connections.fetch_add(1, Ordering::Relaxed);
        self.tmux_commands.fetch_add(
            tmux_mcp_core::tmux::command_count(args) as u64,
            Ordering::Relaxed,
        );
    }

    /// Runs a tmux command and counts it.
    pub async fn run_tmux(&self, args: &[&str]) -> Result<String, TmuxError> {
        self.count(args);
        let t = Instant::now();
        let r = self.source.tmux.run(args, self.source.timeout).await;
        log_command(args, t);
        r
    }

    /// Whether hook `name` (e.g. `after-set-option`) has any entry, globally or in
    /// one of `sessions`; sparse array entries (`name[17]`) count. One counted,
    /// hook-free tmux connection (`hooks::is_set_argv`).
    pub async fn hook_is_set(&self, name: &str, sessions: &[String]) -> Result<bool, TmuxError> {
        let args = hooks::is_set_argv(name, sessions);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Ok(hooks::has_entry(&self.run_tmux(&args).await?, name))
    }

    /// Runs a tmux command and returns status and both streams; counted.
    pub async fn tmux_output(
        &self,
        args: &[&str],
    ) -> Result<tmux_mcp_core::tmux::Output, TmuxError> {
        self.count(args);
        let t = Instant::now();
        let r = self.source.tmux.output(args, self.source.timeout).await;
        log_command(args, t);
        r
    }

    /// Expands `format` in tmux with one hook-free command, `list-commands -F
    /// FORMAT list-commands` (tmux has no `after-list-commands` hook), for reads
    /// beyond the pane table (options, clients). Whatever the feed mode: tmux
    /// 3.4 and 3.5 print it strvis-escaped (control bytes as `\NNN`, a
    /// backslash as itself), which is why the table uses the run-shell feed
    /// there; the caller decodes what it needs.
    pub async fn expand_format(&self, format: &str) -> Result<String, TmuxError> {
        self.run_tmux(&["list-commands", "-F", format, "list-commands"])
            .await
    }

    /// The last snapshot, without asking tmux.
    pub fn cached(&self) -> Option<Arc<Snapshot>> {
        self.current.lock().unwrap().clone()
    }

    /// A snapshot taken after this call started.
    pub async fn refresh(&self) -> Result<Arc<Snapshot>, RefreshError> {
        let asked = Instant::now();
        let _gate = self.refresh_gate.lock().await;
        if let Some(s) = self.cached().filter(|s| s.taken >= asked) {
            return Ok(s); // someone asked tmux after we were asked
        }
        // A read that was already under way when we were asked may hold rows
        // from before: so `taken` is when the read starts, not when it ends.
        let taken = Instant::now();
        let table = self.fetch(&feed::Shape::FULL).await?;
        let snap = Arc::new(self.build(table, taken, Identities::Opened).0);
        *self.current.lock().unwrap() = Some(snap.clone());
        Ok(snap)
    }

    /// A table of `shape` read now (a listing page, one pane's fresh read,
    /// completion): neither cached nor shared, since panes outside the
    /// shape's sessions are only placed. When it does not hold what the
    /// caller needs (`holds`: a pane moved out of the shape's sessions), the
    /// whole table is read instead, as it is for the whole `Full` shape.
    ///
    /// Process identities come from the last snapshot where the pid is the
    /// same; it opens none, since an identity would go with its snapshot and
    /// the next read would open another (a new `process_generation` for the
    /// same process). So when a pane it reads runs a process the last
    /// snapshot does not know, it refreshes too: the whole table, which keeps
    /// the identities it opens.
    ///
    /// `holds` is asked at most once, of the shaped snapshot, and when it
    /// answers yes that snapshot is the one returned: what the caller made of
    /// it there (its page) it can keep rather than work out again.
    pub async fn read(
        &self,
        shape: &feed::Shape<'_>,
        mut holds: impl FnMut(&Snapshot) -> bool,
    ) -> Result<Arc<Snapshot>, RefreshError> {
        if shape.depth == Depth::Full && shape.only.is_none() {
            return self.refresh().await;
        }
        let taken = Instant::now();
        let table = self.fetch(shape).await?;
        match self.build(table, taken, Identities::Carried) {
            (snap, Complete::Yes) if holds(&snap) => Ok(Arc::new(snap)),
            _ => self.refresh().await,
        }
    }

    /// The table of `shape` from this broker's tmux server. Current command
    /// and path are read bare only through `list-commands` (the run-shell
    /// feed's here-document needs every line careful), and the table is read
    /// again careful when a value holding a separator kept it from parsing.
    async fn fetch(&self, shape: &feed::Shape<'_>) -> Result<PaneTable, RefreshError> {
        let careful = || async move {
            self.fetch_any(&feed::shaped_format(shape, feed::Spelling::Careful))
                .await
        };
        let table = match self.source.mode {
            FeedMode::ListCommands => {
                match self
                    .fetch_any(&feed::shaped_format(shape, feed::Spelling::Bare))
                    .await
                {
                    Err(RefreshError::Table(why)) => {
                        tracing::debug!(%why, "a bare table read did not parse; reading it careful");
                        careful().await?
                    }
                    other => other?,
                }
            }
            FeedMode::RunShell => careful().await?,
        };
        if table.server.pid != self.source.server_pid {
            return Err(RefreshError::WrongServer {
                expected: self.source.server_pid,
                got: table.server.pid,
            });
        }
        Ok(table)
    }

    async fn fetch_any(&self, format: &str) -> Result<PaneTable, RefreshError> {
        match self.source.mode {
            FeedMode::ListCommands => {
                // Bytes, not text: counted fields are measured in bytes, and a
                // value that is not UTF-8 must not change the table's lengths.
                let out = self
                    .tmux_output(&["list-commands", "-F", format, "list-commands"])
                    .await?;
                if out.status != 0 {
                    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
                    return Err(TmuxError::Failed {
                        command: "list-commands".into(),
                        status: Some(out.status),
                        stderr,
                    }
                    .into());
                }
                feed::parse(&out.stdout).map_err(|e| RefreshError::Table(e.to_string()))
            }
            FeedMode::RunShell => self.fetch_run_shell(format).await,
        }
    }

    async fn fetch_run_shell(&self, format: &str) -> Result<PaneTable, RefreshError> {
        let req = self.next_req.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(req, tx);
        let socket = self
            .feed_socket
            .lock()
            .unwrap()
            .clone()
            .unwrap_or_else(|| self.source.broker_socket.clone());
        let cmd = feed::run_shell_command(&self.source.helper, &socket, req, format);
        let ran = self.run_tmux(&["run-shell", &cmd]).await;
        let result = match ran {
            Err(e) => Err(RefreshError::Tmux(e)),
            // run-shell returns once the helper exited; it has delivered by now
            // unless it failed, so a short wait is enough.
            Ok(_) => match tokio::time::timeout(self.source.timeout, rx).await {
                Ok(Ok(Ok(table))) => Ok(table),
                Ok(Ok(Err(msg))) => Err(RefreshError::Helper(msg)),
                Ok(Err(_)) | Err(_) => Err(RefreshError::NoAnswer(self.source.timeout)),
            },
        };
        self.pending.lock().unwrap().remove(&req);
        result
    }

    /// Hands a helper's table to the refresh waiting for it. Unknown ids are
    /// ignored (a late answer to a refresh that already gave up).
    pub fn deliver(&self, req: u64, table: Result<PaneTable, String>) -> bool {
        match self.pending.lock().unwrap().remove(&req) {
            Some(tx) => tx.send(table).is_ok(),
            None => false,
        }
    }

    fn build(
        &self,
        table: PaneTable,
        taken: Instant,
        identities: Identities,
    ) -> (Snapshot, Complete) {
        let previous = self.cached();
        let seq = previous.as_ref().map_or(1, |s| s.seq + 1);
        // The previous pids and identities by pane id: one lookup per pane, not a scan.
        type Known<'a> = (u32, &'a Result<Arc<ProcessIdentity>, IdentityError>);
        let old_ids: HashMap<&str, Known> = previous
            .iter()
            .flat_map(|s| s.panes.iter().map(|p| (p.id.as_str(), (p.pid, &p.process))))
            .collect();
        let mut complete = Complete::Yes;
        let mut by_id: BTreeMap<u64, Vec<PaneRow>> = BTreeMap::new();
        for row in table.rows {
            by_id.entry(numeric_id(&row.pane_id)).or_default().push(row);
        }
        let panes = by_id
            .into_values()
            .map(|rows| {
                // The deepest row holds the pane's own fields (a listing's
                // read may place a linked window's pane in one session and
                // read it in another).
                let first = rows.iter().max_by_key(|r| r.depth).unwrap_or(&rows[0]);
                let mut placements: Vec<Placement> = rows
                    .iter()
                    .map(|r| Placement {
                        session_id: r.session_id.clone(),
                        session_name: r.session_name.clone(),
                        window_index: r.window_index,
                        window_active: r.window_active,
                        session_created: r.session_created,
                        session_attached: r.session_attached,
                        session_windows: r.session_windows,
                    })
                    .collect();
                placements.sort_by_key(|p| (numeric_id(&p.session_id), p.window_index));
                placements.dedup();
                let old = old_ids.get(first.pane_id.as_str()).copied();
                let process = if first.pane_dead {
                    Err(IdentityError::PaneDead)
                } else if first.depth == Depth::Placed {
                    Err(IdentityError::NotRead)
                } else {
                    match (old, identities) {
                        // Same pid as before: the same process (its pidfd says if it exited).
                        (Some((_, Ok(id))), _) if id.pid == first.pane_pid => Ok(id.clone()),
                        (_, Identities::Opened) => self.backend.acquire(first.pane_pid),
                        // Why it could not be opened last time holds for the same pid.
                        (Some((pid, Err(e))), Identities::Carried) if pid == first.pane_pid => {
                            Err(e.clone())
                        }
                        (_, Identities::Carried) => {
                            complete = Complete::NewProcess;
                            Err(IdentityError::NotRead)
                        }
                    }
                };
                Pane {
                    depth: first.depth,
                    id: first.pane_id.clone(),
                    index: first.pane_index,
                    window_id: first.window_id.clone(),
                    window_name: first.window_name.clone(),
                    window_width: first.window_width,
                    window_height: first.window_height,
                    window_panes: first.window_panes,
                    window_layout: first.window_layout.clone(),
                    active: first.pane_active,
                    pid: first.pane_pid,
                    dead: first.pane_dead,
                    dead_status: first.pane_dead_status,
                    width: first.width,
                    height: first.height,
                    history_size: first.history_size,
                    history_limit: first.history_limit,
                    command: first.current_command.clone(),
                    cwd: first.current_path.clone(),
                    title: first.title.clone(),
                    tty: first.tty.clone(),
                    cursor_x: first.cursor_x,
                    cursor_y: first.cursor_y,
                    in_mode: first.pane_in_mode,
                    scroll_position: first.scroll_position,
                    window_zoomed: first.window_zoomed,
                    placements,
                    process,
                }
            })
            .collect();
        let snap = Snapshot {
            server: table.server,
            panes,
            taken,
            seq,
        };
        (snap, complete)
    }
}

/// Whether a table's build opens the identities of processes the last
/// snapshot does not know (a refresh) or only carries the known ones (a
/// shaped read, whose snapshot is dropped after one call).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Identities {
    Opened,
    Carried,
}

/// What a build that only carries identities found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Complete {
    Yes,
    /// A pane it read runs a process the last snapshot does not know.
    NewProcess,
}

/// The number in `%12`, `$3`, `@7` (sorts ids the way tmux numbers them).
pub fn numeric_id(id: &str) -> u64 {
    id.get(1..).and_then(|n| n.parse().ok()).unwrap_or(u64::MAX)
}

/// The pane among `snapshot` whose process is `pid` or one of its ancestors.
/// This is how the broker knows the caller's pane: from the relay's peer pid, not
/// from environment variables a client may not pass on.
pub fn pane_of_process(snapshot: &Snapshot, pid: u32) -> Option<String> {
    let chain = tmux_mcp_core::platform::process_table::ancestry(pid, 128);
    chain.iter().find_map(|p| {
        snapshot
            .panes
            .iter()
            .find(|pane| !pane.dead && pane.pid == *p)
            .map(|pane| pane.id.clone())
    })
}
