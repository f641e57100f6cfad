//! Reading a pane's rows from tmux, safely: resolve the reference, refuse while
//! an `after-capture-pane` hook is set, and run `capture-pane` behind an
//! in-queue guard so the rows come from exactly the pane (and process) meant.
//!
//! The hook check is `show-hooks` (tmux runs no hook for it) over the global
//! table and every session that links the pane's window, immediately before the
//! capture. tmux 3.3a cannot evaluate that check inside the capture's own command
//! queue, so a hook set in the gap between the two cannot be excluded; the guard
//! at least proves that the set of linking sessions did not change.

use crate::capture::{self, Rows, Scope};
use crate::daemon::Broker;
use crate::hooks;
use crate::process::{IdentityError, ProcessIdentity};
use crate::registry::Pane;
use crate::tmux::TmuxError;
use std::sync::Arc;

/// Why a capture could not be made, with whether anything reached tmux.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObserveError {
    /// The reference is for another server instance, or the pane is gone.
    StaleTarget { observed: bool, why: String },
    /// Hooks, tmux version or platform make the request impossible.
    Unsupported { observed: bool, why: String },
    /// tmux could not be reached or answered nonsense.
    Transport { observed: bool, why: String },
    /// The pane is outside what this session may see.
    OutOfScope,
}

impl ObserveError {
    pub fn why(&self) -> &str {
        match self {
            ObserveError::StaleTarget { why, .. } | ObserveError::Unsupported { why, .. } | ObserveError::Transport { why, .. } => why,
            ObserveError::OutOfScope => "the pane is outside this session's scope",
        }
    }
}

pub struct Captured {
    pub pane: Pane,
    pub rows: Rows,
    pub identity: Option<Arc<ProcessIdentity>>,
}

/// Finds pane `id` of generation `generation` (refreshing once if the cache does
/// not know it yet).
pub async fn resolve(broker: &Broker, generation: &str, id: &str) -> Result<Pane, ObserveError> {
    if generation != broker.identity.generation {
        return Err(ObserveError::StaleTarget { observed: false, why: "the reference's generation is not this tmux server's".into() });
    }
    if let Some(p) = broker.registry.cached().and_then(|s| s.pane(id).cloned()) {
        return Ok(p);
    }
    let snap = broker.registry.refresh().await.map_err(|e| ObserveError::Transport { observed: false, why: e.to_string() })?;
    snap.pane(id).cloned().ok_or_else(|| ObserveError::StaleTarget { observed: false, why: format!("pane {id} does not exist") })
}

/// The process identity a tracked capture binds to.
pub fn identity_of(broker: &Broker, pane: &Pane) -> Result<Arc<ProcessIdentity>, ObserveError> {
    if !crate::tools::version_at_least(&broker.tmux_version(), 3, 3) {
        return Err(ObserveError::Unsupported { observed: false, why: "tracked cursors need tmux >= 3.3".into() });
    }
    match &pane.process {
        Ok(id) if !id.exited() => Ok(id.clone()),
        Ok(_) => Err(ObserveError::StaleTarget { observed: false, why: format!("the process of pane {} has exited", pane.id) }),
        Err(IdentityError::PaneDead) | Err(IdentityError::Gone(_)) => Err(ObserveError::StaleTarget { observed: false, why: format!("pane {} has no live process", pane.id) }),
        Err(e) => Err(ObserveError::Unsupported { observed: false, why: format!("no native process identity: {e}") }),
    }
}

/// Escapes text for use as a literal inside a tmux format comparison.
fn format_literal_arg(s: &str) -> String {
    s.replace('#', "##").replace(',', "#,").replace('}', "#}")
}

/// One guarded capture of `pane` (cache entry) as `scope` says; `identity` makes
/// it tracked. Retries once with a fresh table when the guard fails because the
/// cache was stale.
pub async fn capture(broker: &Broker, pane: Pane, scope: &Scope, identity: Option<Arc<ProcessIdentity>>) -> Result<Captured, ObserveError> {
    match capture_once(broker, &pane, scope, identity.as_ref()).await {
        Err(Guard) => {
            let snap = broker.registry.refresh().await.map_err(|e| ObserveError::Transport { observed: true, why: e.to_string() })?;
            let fresh = snap.pane(&pane.id).cloned().ok_or_else(|| ObserveError::StaleTarget { observed: true, why: format!("pane {} no longer exists", pane.id) })?;
            if let Some(id) = &identity {
                if !id.matches(fresh.pid) {
                    return Err(ObserveError::StaleTarget { observed: true, why: format!("the process of pane {} changed", pane.id) });
                }
            }
            match capture_once(broker, &fresh, scope, identity.as_ref()).await {
                Err(Guard) => Err(ObserveError::StaleTarget { observed: true, why: format!("pane {} changed while it was being captured", pane.id) }),
                Ok(r) => r.map(|rows| Captured { pane: fresh, rows, identity }),
            }
        }
        Ok(r) => r.map(|rows| Captured { pane, rows, identity }),
    }
}

/// The guard did not hold (nothing was captured).
struct Guard;

async fn capture_once(broker: &Broker, pane: &Pane, scope: &Scope, identity: Option<&Arc<ProcessIdentity>>) -> Result<Result<Rows, ObserveError>, Guard> {
    let sessions: Vec<String> = pane.placements.iter().map(|p| p.session_id.clone()).collect();
    if sessions.is_empty() {
        return Ok(Err(ObserveError::StaleTarget { observed: false, why: format!("pane {} is in no session", pane.id) }));
    }
    match hooks::is_set(&broker.registry, "after-capture-pane", &sessions).await {
        Ok(false) => {}
        Ok(true) => {
            return Ok(Err(ObserveError::Unsupported {
                observed: false,
                why: "an after-capture-pane hook is set (globally or in a session linking this pane's window); tmux-mcp does not capture while it is, so the hook cannot run. Nothing was sent.".into(),
            }))
        }
        Err(e) => return Ok(Err(ObserveError::Transport { observed: false, why: e.to_string() })),
    }
    if let Some(id) = identity {
        if id.exited() {
            return Ok(Err(ObserveError::StaleTarget { observed: false, why: format!("the process of pane {} has exited", pane.id) }));
        }
    }
    let mut guard = format!("#{{==:#{{pane_id}},{}}}", format_literal_arg(&pane.id));
    guard = format!("#{{&&:{guard},#{{==:#{{window_linked_sessions}},{}}}}}", sessions.len());
    if let Some(id) = identity {
        guard = format!("#{{&&:{guard},#{{&&:#{{==:#{{pane_pid}},{}}},#{{==:#{{pane_dead}},0}}}}}}", id.pid);
    }
    let start = if scope.history_lines == 0 { "0".to_string() } else { format!("-{}", scope.history_lines) };
    let cmd = format!("capture-pane -p -t {} -S {start} -E -", pane.id);
    let out = match broker.registry.tmux_output(&["if-shell", "-F", "-t", &pane.id, &guard, &cmd]).await {
        Ok(o) => o,
        Err(e) => return Ok(Err(transport(e))),
    };
    if out.status != 0 {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Ok(Err(ObserveError::StaleTarget { observed: true, why: format!("tmux refused the capture: {err}") }));
    }
    if out.stdout.is_empty() || !out.stdout.ends_with(b"\n") {
        return Err(Guard);
    }
    if let Some(id) = identity {
        if id.exited() {
            return Ok(Err(ObserveError::StaleTarget { observed: true, why: format!("the process of pane {} exited during the capture", pane.id) }));
        }
    }
    Ok(Ok(capture::select(&out.stdout, scope)))
}

fn transport(e: TmuxError) -> ObserveError {
    ObserveError::Transport { observed: e.possibly_sent(), why: e.to_string() }
}
