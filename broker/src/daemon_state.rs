//! The broker daemon's own state, beside the engine's (`engine::Broker`).
//!
//! The engine's state is the bound tmux server: what it reads, retains and
//! watches. This is the daemon's: the defaults it was started with (which
//! every session's policy starts from, read through
//! [`policy::Defaults::of`](crate::policy::Defaults::of)), the figures
//! `status` reports, and `run_command`'s job table. One per broker, shared
//! by its sessions; the engine never sees it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tmux_mcp_core::wire::Tier;

use crate::jobs::Jobs;

pub struct DaemonState {
    /// Tools the broker enables for every session (its `--enable-tool`).
    pub enable_tools: Vec<String>,
    /// The tier of sessions that name none (`--safety`; `@mcp-safety` and the
    /// attach's `--safety` come first).
    pub safety: Tier,
    /// The broker's `--request-timeout`, in seconds: a session's deadline
    /// when `@mcp-request-timeout` does not set one.
    pub request_timeout_seconds: f64,
    /// When the broker started (`status`'s uptime).
    pub started: Instant,
    /// MCP sessions opened since the broker started (numbers their ids).
    pub sessions_served: AtomicU64,
    /// MCP sessions open now (a retired broker exits at 0).
    pub sessions_open: AtomicU64,
    /// `tools/call` requests answered (whatever their outcome), for the
    /// per-call figures of `status`.
    pub tool_calls: AtomicU64,
    /// What became of `@mcp-broker-socket` (`status`'s `option_published`).
    pub option_state: Mutex<String>,
    /// `run_command`'s jobs: one table, shared by the sessions.
    pub jobs: Arc<Jobs>,
}

impl DaemonState {
    pub fn new(
        enable_tools: Vec<String>,
        safety: Tier,
        request_timeout_seconds: f64,
    ) -> DaemonState {
        DaemonState {
            enable_tools,
            safety,
            request_timeout_seconds,
            started: Instant::now(),
            sessions_served: AtomicU64::new(0),
            sessions_open: AtomicU64::new(0),
            tool_calls: AtomicU64::new(0),
            option_state: Mutex::new("not yet".into()),
            jobs: Arc::new(Jobs::default()),
        }
    }

    pub fn sessions_open(&self) -> u64 {
        self.sessions_open.load(Ordering::Relaxed)
    }
}
