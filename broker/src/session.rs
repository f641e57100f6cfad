//! One agent's session: who is calling (the caller's pane, found from process
//! ancestry), what it may see (scope) and what it may use (enabled tools).
//!
//! It also holds its tier, its toolset, `--allow-self`, `--confirm` and its
//! questions out in `input_required` results, and its request timeout: the
//! most any of its waits waits. That is `@mcp-request-timeout` when set at
//! its start, else the broker's `--request-timeout`. `jobs` is the broker's
//! job table.
//!
//! [`Session::scoped`] cuts a pane's placements to the scope.
//! [`Session::view`] is what it may read of retained objects;
//! [`Session::owner`] is what it records on them.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;
use tmux_mcp_core::wire::Scope;
use tmux_mcp_engine::registry::{Pane, Snapshot};
use tmux_mcp_engine::retention::{Owner, View};
use tmux_mcp_engine::Broker;

pub struct Session {
    pub id: u64,
    pub broker: Arc<Broker>,
    /// The daemon's own state: its defaults and the figures `status` reports.
    pub daemon: Arc<crate::daemon_state::DaemonState>,
    pub client_name: String,
    /// pid of the relay process on the other end of the socket.
    pub peer_pid: u32,
    /// The pane the agent runs in, if it runs inside this tmux server.
    pub caller_pane: Option<String>,
    /// Sessions the caller's pane is placed in (what `Scope::Session` allows).
    pub caller_sessions: Vec<String>,
    pub scope: Scope,
    pub enabled: BTreeSet<String>,
    /// The highest tier of tools this session may use (`--safety`).
    pub safety: tmux_mcp_core::wire::Tier,
    /// Whose spellings of the libtmux family this session uses (`--toolset`).
    pub toolset: tmux_mcp_core::wire::Toolset,
    pub allow_self: bool,
    /// The kill, respawn and close tools ask the person first (`--confirm`,
    /// `@mcp-confirm`; see `toolkit::call::confirm`).
    pub confirm: bool,
    /// Questions out in `input_required` results (2026-07-28), by their
    /// `requestState`: what a retry must repeat for its answer to count.
    pub pending_confirmations: std::sync::Mutex<PendingConfirmations>,
    /// The most any wait of this session waits, in seconds:
    /// `@mcp-request-timeout` when set, else the broker's `--request-timeout`
    /// (published as `limits.request_timeout_seconds`).
    pub request_timeout_seconds: f64,
    /// `run_command`'s jobs: the daemon's one table, shared by its sessions.
    pub jobs: Arc<crate::jobs::Jobs>,
    /// Notices for this agent (`notifications/message`) at the level it chose.
    pub log: AgentLog,
    /// Set when another server's broker opened this session for its agent
    /// (its hello's `via`: that server's socket).
    pub via: Option<String>,
    /// This agent's links to other servers' brokers (a call naming another
    /// server, `toolkit::call::route`).
    pub other_servers: crate::peers::Links,
}

impl Session {
    /// [`Session::request_timeout_seconds`] in milliseconds.
    pub fn request_timeout_ms(&self) -> u64 {
        (self.request_timeout_seconds * 1000.0) as u64
    }

    /// A wait that asked for `asked_ms` (none: the request timeout): what it
    /// asked, and how long it waits (clamped to the request timeout).
    pub fn wait_ms(&self, asked_ms: Option<u64>) -> (u64, u64) {
        let cap_ms = self.request_timeout_ms();
        let asked = asked_ms.unwrap_or(cap_ms);
        (asked, asked.min(cap_ms))
    }

    /// Whether this session may see `pane`.
    pub fn can_see(&self, pane: &Pane) -> bool {
        match self.scope {
            Scope::Server => true,
            Scope::Session => self.caller_sessions.iter().any(|s| pane.in_session(s)),
        }
    }

    /// Whether this session may see session `session_id` (and what is attached to it).
    pub fn sees_session(&self, session_id: &str) -> bool {
        self.scope == Scope::Server || self.caller_sessions.iter().any(|s| s == session_id)
    }

    /// `pane` as this session may see it, or `None` when it may not. In
    /// session scope only the placements in the caller's sessions remain: a
    /// window linked into another session as well must not reveal that session
    /// (its name, id, index there, attached count …) through any record.
    pub fn scoped<'a>(&self, pane: &'a Pane) -> Option<Cow<'a, Pane>> {
        match self.scope {
            Scope::Server => Some(Cow::Borrowed(pane)),
            Scope::Session => {
                if !self.can_see(pane) {
                    return None;
                }
                if pane
                    .placements
                    .iter()
                    .all(|pl| self.caller_sessions.contains(&pl.session_id))
                {
                    return Some(Cow::Borrowed(pane));
                }
                let mut p = pane.clone();
                p.placements
                    .retain(|pl| self.caller_sessions.contains(&pl.session_id));
                Some(Cow::Owned(p))
            }
        }
    }

    /// The panes this session may see, each cut to its scope ([`Session::scoped`]).
    pub fn visible<'a>(&'a self, snap: &'a Snapshot) -> impl Iterator<Item = Cow<'a, Pane>> + 'a {
        snap.panes.iter().filter_map(move |p| self.scoped(p))
    }

    /// How current a pane's table entry must be before this session reads the
    /// pane. The capture guard proves the pane, its process and its size, but
    /// not which sessions it is placed in (only how many): a session-scoped
    /// agent's scope check therefore runs on a fresh table, so a pane moved out
    /// of its sessions since the last read is never captured for it.
    pub fn read_freshness(&self) -> tmux_mcp_engine::observe::Freshness {
        match self.scope {
            Scope::Server => tmux_mcp_engine::observe::Freshness::Cached,
            Scope::Session => tmux_mcp_engine::observe::Freshness::Fresh,
        }
    }

    /// What this session may read of what other sessions retained.
    pub fn view(&self) -> View {
        match self.scope {
            Scope::Server => View::Server,
            Scope::Session => View::Sessions(self.caller_sessions.iter().cloned().collect()),
        }
    }

    /// The owner recorded on what this session retains.
    pub fn owner(&self) -> Owner {
        Owner {
            agent: Some(self.id),
            view: self.view(),
        }
    }

    pub fn is_caller(&self, pane_id: &str) -> bool {
        self.caller_pane.as_deref() == Some(pane_id)
    }

    pub fn generation(&self) -> &str {
        &self.broker.identity.generation
    }
}

/// The severity of a notice to an agent (RFC 5424 order, as MCP's logging).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

/// Delivers a notice to the agent (the MCP layer: `notifications/message`).
pub trait LogSink: Send + Sync {
    fn send(
        &self,
        level: LogLevel,
        logger: &str,
        data: serde_json::Value,
    ) -> futures::future::BoxFuture<'static, ()>;
}

/// Notices for one agent: before 2026-07-28 at the level it chose with
/// `logging/setLevel` (until it chooses, nothing is sent); from 2026-07-28 at
/// the level each request names in its `_meta` (none named: nothing sent).
#[derive(Default)]
pub struct AgentLog {
    level: std::sync::Mutex<Option<LogLevel>>,
    sink: std::sync::OnceLock<Arc<dyn LogSink>>,
}

impl AgentLog {
    pub fn set_level(&self, level: LogLevel) {
        *self.level.lock().unwrap() = Some(level);
    }

    /// The level the agent chose with `logging/setLevel` (eras before
    /// 2026-07-28), if any.
    pub fn level(&self) -> Option<LogLevel> {
        *self.level.lock().unwrap()
    }

    /// Connects the sink, once (the MCP layer does, on the session's first request
    /// that can lead to a notice).
    pub fn attach(&self, sink: impl FnOnce() -> Arc<dyn LogSink>) {
        self.sink.get_or_init(sink);
    }

    /// Sends `data` to the agent when `min` (the level its request asked
    /// for: the session's [`level`](Self::level) before 2026-07-28, the
    /// request's own `_meta` level from then on) is `level` or below; returns
    /// once the notice is on its way (so it precedes the call's answer).
    pub async fn send(
        &self,
        min: Option<LogLevel>,
        level: LogLevel,
        logger: &str,
        data: serde_json::Value,
    ) {
        if min.is_none_or(|min| level < min) {
            return;
        }
        if let Some(sink) = self.sink.get() {
            sink.send(level, logger, data).await;
        }
    }
}

/// A question sent in an `input_required` result, kept until its retry.
pub struct PendingConfirmation {
    pub tool: String,
    /// The call's arguments: the retry must repeat them exactly.
    pub args: serde_json::Value,
    pub question: String,
    pub made: std::time::Instant,
}

/// [`PendingConfirmation`]s by `requestState`, oldest first.
pub type PendingConfirmations = std::collections::VecDeque<(String, PendingConfirmation)>;
