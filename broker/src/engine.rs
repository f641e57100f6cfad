//! The engine's shared state: one per broker, shared by every agent session.
//! It knows the bound tmux server (identity, registry), what is retained
//! between calls, and how many observations run. Everything below the MCP
//! layer and the tools reaches tmux through it.
//!
//! Architecture invariant: engine modules (this one, `registry`, `observe`,
//! `capture`, `process`, `hooks`, `retention`, `admission`, `tmux`, `feed`)
//! never import `tools`, `mcp`, `session` or `daemon` (a test checks it).

use crate::paths::BrokerPaths;
use crate::registry::Registry;
use crate::server::ServerIdentity;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

pub struct Broker {
    pub identity: ServerIdentity,
    pub paths: BrokerPaths,
    pub registry: Registry,
    pub enable_tools: Vec<String>,
    /// The tier of sessions that name none (`--safety`; `@mcp-safety` and the
    /// attach's `--safety` come first).
    pub safety: crate::wire::Tier,
    pub started: Instant,
    pub(crate) sessions_served: AtomicU64,
    /// `tools/call` requests answered (whatever their outcome), for the
    /// per-call figures of `status`.
    pub tool_calls: AtomicU64,
    pub(crate) sessions_open: AtomicU64,
    pub(crate) option_state: Mutex<String>,
    /// Retained cursors and snapshot pages, shared by every session.
    pub retained: crate::retention::Store,
    /// Admission of concurrent captures and waits.
    pub admission: crate::admission::Admission,
    /// The deadline of one request, in seconds (`--request-timeout`); a
    /// `tmux_wait` never waits longer.
    pub request_timeout_seconds: f64,
    /// Turns true when the broker stops, normally because the tmux server
    /// exited (observations end with `observation_lost` before it does).
    server_gone: tokio::sync::watch::Sender<bool>,
    /// Events about the server as a whole (the pane set), for subscriptions.
    pub changes: crate::changes::Changes,
    /// The safety net for screen changes no process wrote (typed echo).
    pub activity: crate::activity::Net,
}

impl Broker {
    pub fn new(
        identity: ServerIdentity,
        paths: BrokerPaths,
        registry: Registry,
        enable_tools: Vec<String>,
        safety: crate::wire::Tier,
        request_timeout_seconds: f64,
    ) -> Broker {
        Broker {
            identity,
            paths,
            registry,
            enable_tools,
            safety,
            started: Instant::now(),
            sessions_served: AtomicU64::new(0),
            tool_calls: AtomicU64::new(0),
            sessions_open: AtomicU64::new(0),
            option_state: Mutex::new("not yet".into()),
            retained: crate::retention::Store::default(),
            admission: crate::admission::Admission::default(),
            request_timeout_seconds,
            server_gone: tokio::sync::watch::channel(false).0,
            changes: Default::default(),
            activity: Default::default(),
        }
    }

    /// Observations end (`observation_lost`): the server is gone or the broker stops.
    pub fn mark_server_gone(&self) {
        self.server_gone.send_replace(true);
    }

    /// Resolves once the tmux server has exited.
    pub async fn server_gone(&self) {
        let mut rx = self.server_gone.subscribe();
        let _ = rx.wait_for(|gone| *gone).await;
    }

    /// tmux's version string as last read ("" before the first read).
    pub fn tmux_version(&self) -> String {
        self.registry
            .cached()
            .map(|s| s.server.version.clone())
            .unwrap_or_default()
    }

    pub fn sessions_open(&self) -> u64 {
        self.sessions_open.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    /// The engine's files, relative to `src/`.
    const ENGINE: &[&str] = &[
        "engine.rs",
        "changes.rs",
        "capture_batch.rs",
        "registry.rs",
        "observe.rs",
        "capture.rs",
        "process.rs",
        "hooks.rs",
        "retention.rs",
        "admission.rs",
        "feed.rs",
        "tty_watch.rs",
        "server.rs",
        "paths.rs",
        "procfs.rs",
        "sys.rs",
        "wire.rs",
        "limits.rs",
        "tmux",
    ];
    /// The layers above the engine: client → MCP → session/tools → engine.
    const UPPER: &[&str] = &["tools", "mcp", "session", "daemon"];

    fn sources(rel: &str) -> Vec<(String, String)> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src")
            .join(rel);
        if path.is_dir() {
            let mut out = Vec::new();
            for e in std::fs::read_dir(&path).expect("engine dir") {
                let name = e.unwrap().file_name().into_string().unwrap();
                out.extend(sources(&format!("{rel}/{name}")));
            }
            return out;
        }
        vec![(
            rel.to_string(),
            std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("engine module {rel} is missing: {e}")),
        )]
    }

    /// Architecture invariant: no engine module imports upward.
    #[test]
    fn no_engine_module_imports_upward() {
        let mut found = Vec::new();
        for rel in ENGINE {
            for (file, text) in sources(rel) {
                for (n, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or_default();
                    for up in UPPER {
                        let direct = code.contains(&format!("crate::{up}::"))
                            || code.contains(&format!("crate::{up};"));
                        let grouped = code.contains("use crate::{")
                            && code
                                .split("use crate::{")
                                .nth(1)
                                .is_some_and(|g| g.split([',', '}', ' ']).any(|m| m == *up));
                        if direct || grouped {
                            found.push(format!("{file}:{}: {}", n + 1, line.trim()));
                        }
                    }
                }
            }
        }
        assert!(
            found.is_empty(),
            "engine modules import the layers above them:\n{}",
            found.join("\n")
        );
    }
}
