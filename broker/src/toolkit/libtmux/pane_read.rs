//! The pane a libtmux read tool (`capture_pane`, `snapshot_pane`,
//! `capture_since`, `search_panes`, `get_pane_info`) reads, and its failures
//! in the family's read words (docs/spec.md B.0, `wording::read_error`): an
//! unknown pane lists the panes the session can see, a scope refusal says how
//! to widen it, a refused capture names the hook.
//!
//! [`pane`] finds the pane through the engine's one pane resolver
//! (`observe::find_pane`, from the cache when the capture's guard proves
//! what matters); [`observe_failure`] words a capture's failure. The row
//! bounding is engine `lines`.

use crate::session::Session;
use crate::toolkit::call::output::RefusalKind;
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::libtmux::wording::read_error;
use tmux_mcp_engine::observe::{self, ObserveError};
use tmux_mcp_engine::registry::{numeric_id, Pane, Snapshot};

/// How the first placement of a pane reads in a hint: `%N (session:window command)`.
fn pane_label(p: &Pane) -> String {
    let place = p
        .placements
        .first()
        .map(|pl| format!("{}:{}", pl.session_name, pl.window_index))
        .unwrap_or_default();
    format!("{} ({place} {})", p.id, p.command)
}

/// Pane `id` as `freshness` says (capture_pane's range plan rests on the size
/// its guard proves, so the cache does; snapshot_pane reports the cursor, which
/// only a fresh read knows), if this session may see it; else the tool error
/// (an unknown pane lists up to 12 panes the session can see).
pub async fn pane(
    session: &Session,
    id: &str,
    freshness: observe::Freshness,
) -> Result<Pane, ToolOutput> {
    let broker = &session.broker;
    match observe::find_pane(broker, id, freshness).await {
        Ok(p) if session.can_see(&p) => Ok(p),
        Ok(_) => Err(read_error(
            &format!("Pane {id} is outside this session's scope."),
            Some("This MCP session sees only the tmux sessions its own pane is placed in (--scope session). Call list_panes for the panes it may read, or attach with --scope server."),
        ).refused(RefusalKind::OutOfScope)),
        Err(ObserveError::StaleTarget { .. }) => {
            let hint = broker.registry.cached().map(|snap| unknown_pane_hint(session, &snap)).unwrap_or_default();
            Err(read_error(&format!("No pane {id} on this server."), Some(&hint)).refused(RefusalKind::Gone))
        }
        Err(e) => Err(read_error(&format!("Could not read the pane table from tmux: {}.", e.why()), Some("Nothing was sent to the pane. Check that the tmux server is running, then retry."))),
    }
}

fn unknown_pane_hint(session: &Session, snap: &Snapshot) -> String {
    const SHOWN: usize = 12;
    let mut visible: Vec<_> = session.visible(snap).collect();
    visible.sort_by_key(|p| numeric_id(&p.id));
    if visible.is_empty() {
        return "This session can see no panes. Call list_panes to check.".to_string();
    }
    let listed: Vec<String> = visible.iter().take(SHOWN).map(|p| pane_label(p)).collect();
    let more = visible.len().saturating_sub(SHOWN);
    let mut hint = format!("Existing panes: {}", listed.join(", "));
    if more > 0 {
        hint.push_str(&format!(" ({more} more not listed)"));
    }
    hint.push_str(". Pane ids are stable for a pane's life; call list_panes for details.");
    hint
}

/// A capture failure as a tool error.
pub fn observe_failure(id: &str, e: &ObserveError) -> ToolOutput {
    match e {
        ObserveError::HookSet { why, .. } => read_error(
            &format!("Refused to capture pane {id}: {why}"),
            Some("The after-capture-pane hook would run a command on every capture. Remove it (set-hook -gu after-capture-pane, or -u in the session that sets it) if captures by tmux-mcp should be allowed."),
        ).refused(RefusalKind::CaptureHook),
        ObserveError::Unsupported { why, .. } => read_error(&format!("Refused to capture pane {id}: {why}."), None),
        ObserveError::StaleTarget { why, .. } => read_error(&format!("Could not capture pane {id}: {why}."), Some("Call list_panes for the panes that exist now.")).refused(RefusalKind::Gone),
        ObserveError::Transport { why, .. } => read_error(&format!("Could not capture pane {id}: tmux did not answer ({why})."), Some("Check that the tmux server is running, then retry.")),
        ObserveError::OutOfScope => read_error(&format!("Pane {id} is outside this session's scope."), None).refused(RefusalKind::OutOfScope),
    }
}
