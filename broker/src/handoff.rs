//! The hand-off cursor of the key binding (`tmux-mcp cursor`): the pane's
//! reference plus a tracking cursor made at the key press, which any session
//! of this broker may continue (read-only): handing a pane over is consent.

use tmux_mcp_core::sys;
use tmux_mcp_core::wire::{CursorReply, Reply};
use tmux_mcp_engine::Broker;

/// The key binding's request: the pane's reference plus a tracking cursor made
/// by a `track: true` capture at the key press. Any session of this broker may
/// continue that cursor (read-only): handing a pane over is consent for it.
pub async fn handoff(broker: &Broker, pane_id: &str) -> Reply {
    let snap = match broker.registry.refresh().await {
        Ok(s) => s,
        Err(e) => {
            return Reply::Refused {
                reason: format!("cannot read the pane table: {e}"),
            }
        }
    };
    let hooked = hooked_commands(broker, &snap.session_ids()).await;
    let refuse = |why: String, reference: String| {
        Reply::Cursor(CursorReply {
            reference,
            cursor: None,
            note: None,
            refused: Some(why),
            hooked: hooked.clone(),
        })
    };
    let Some(pane) = snap.pane(pane_id).cloned() else {
        return refuse(
            format!("no pane {pane_id} in this tmux server"),
            String::new(),
        );
    };
    let reference = crate::toolkit::target::references::reference(
        crate::toolkit::target::references::Kind::Pane,
        &pane.id,
        &broker.identity.generation,
    )
    .to_string();
    let made = match tmux_mcp_engine::observe::identity_of(broker, &pane) {
        Err(e) => Err(e),
        Ok(identity) => {
            tmux_mcp_engine::observe::capture(
                broker,
                pane,
                &tmux_mcp_engine::capture::Scope::default(),
                Some(identity),
            )
            .await
        }
    };
    let (cursor, note) = match made {
        // Handing over a pane its agent could not read: refused, loudly.
        Err(e) if e.is_hook_refusal() => {
            return refuse(
                format!("pane {} is not handed over: {}", pane_id, e.why()),
                reference,
            )
        }
        Err(e) => (None, Some(format!("no tracking cursor: {}", e.why()))),
        Ok(c) => retain_handoff_cursor(broker, c),
    };
    Reply::Cursor(CursorReply {
        reference,
        cursor,
        note,
        refused: None,
        hooked,
    })
}

/// Which of the helper's own commands would run a hook of the person's (the
/// reply names them, so the helper can say so before it runs them): a
/// command without a target (set-buffer) takes hooks from a session tmux
/// picks, so every session is asked. A check that fails counts as set.
async fn hooked_commands(broker: &Broker, sessions: &[String]) -> Vec<String> {
    let mut hooked = Vec::new();
    for name in tmux_mcp_core::wire::HANDOFF_HOOKS {
        if !matches!(broker.registry.hook_is_set(name, sessions).await, Ok(false)) {
            hooked.push(name.to_string());
        }
    }
    hooked
}

/// Keeps the key press's capture as a tracking cursor any agent may continue:
/// the cursor's key, or why there is none. Its own step because the cursor
/// is retained unlike any other: pinned for its TTL and readable by every
/// agent, since handing the pane over is the person's consent (for this one
/// pane, read-only).
fn retain_handoff_cursor(
    broker: &Broker,
    c: tmux_mcp_engine::observe::Captured,
) -> (Option<String>, Option<String>) {
    let key = sys::random_hex(16);
    let entry = tmux_mcp_engine::capture::CursorEntry {
        pane_id: c.pane.id.clone(),
        generation: broker.identity.generation.clone(),
        rows: c.rows,
        scope: tmux_mcp_engine::capture::Scope::default(),
        identity: c.identity.expect("tracked capture has an identity"),
        handoff: true,
    };
    let owner = tmux_mcp_engine::retention::Owner {
        agent: None,
        view: tmux_mcp_engine::retention::View::Anyone,
    };
    match broker.retained.insert(
        key.clone(),
        tmux_mcp_engine::retention::Retained::Cursor(entry),
        owner,
    ) {
        Ok(()) => (Some(key), None),
        Err(_) => (
            None,
            Some("no tracking cursor: the capture exceeds the retention budget".into()),
        ),
    }
}
