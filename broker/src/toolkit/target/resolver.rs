//! The one target resolver: what an entity reference names, found on a fresh
//! read of the registry, checked in a fixed order (generation when the caller
//! gave one, then existence, then this session's scope). A failure is a
//! [`Refusal`], found before anything is sent to tmux; each family words it
//! at its own edge (`seed::mutation::refused`, `libtmux::wording::refused`).
//!
//! Sessions and windows are not tables of their own: they are derived from the
//! panes' placements (`session_id`) and `window_id` in the registry snapshot.
//! A session or window with no pane does not exist in tmux, so this is exact.

use crate::session::Session;
use crate::toolkit::call::output::RefusalKind;
use crate::toolkit::target::references::{reference, Kind};
use serde_json::Value;
use tmux_mcp_core::wire::Scope;
use tmux_mcp_engine::registry::Pane;
use tmux_mcp_engine::Broker;

/// What a reference resolved to: the entity and the panes it contains.
#[derive(Debug, Clone)]
pub struct Target {
    pub kind: Kind,
    pub id: String,
    pub panes: Vec<Pane>,
    /// Every pane of the server at resolution time (to tell "last session").
    pub all_panes: usize,
}

impl Target {
    /// The pane a pane target names; `None` for a window or a session.
    pub fn pane(&self) -> Option<&Pane> {
        match self.kind {
            Kind::Pane => self.panes.iter().find(|p| p.id == self.id),
            _ => None,
        }
    }

    /// The name tmux gives the target: a window's or a session's (as it
    /// read at resolution); a pane has none.
    pub fn name(&self) -> Option<&str> {
        match self.kind {
            Kind::Pane => None,
            Kind::Window => self.panes.first().map(|p| p.window_name.as_str()),
            Kind::Session => self
                .panes
                .iter()
                .flat_map(|p| &p.placements)
                .find(|pl| pl.session_id == self.id)
                .map(|pl| pl.session_name.as_str()),
        }
    }

    pub fn reference(&self, broker: &Broker) -> Value {
        reference(self.kind, &self.id, &broker.identity.generation)
    }

    /// Whether the caller's own pane is (in) this entity.
    pub fn holds_caller(&self, session: &Session) -> bool {
        session
            .caller_pane
            .as_deref()
            .is_some_and(|c| self.panes.iter().any(|p| p.id == c))
    }
}

/// Why a target could not be acted on. Every one is found before anything is
/// sent to tmux (only reads ran); each family words it its own way.
#[derive(Debug, Clone)]
pub enum Refusal {
    /// The reference's generation is not this server's.
    Generation,
    /// The entity does not exist (any more).
    Gone { kind: Kind, id: String },
    /// It exists but this session may not see it.
    OutOfScope { kind: Kind, id: String },
    /// The table could not be read.
    Unreadable(String),
}

impl Refusal {
    pub fn message(&self) -> String {
        match self {
            Refusal::Generation => "The reference's generation is not this tmux server's (another or a restarted server).".to_string(),
            Refusal::Gone { kind, id } => format!("{} {id} does not exist (any more).", kind.as_str()),
            Refusal::OutOfScope { kind, id } => format!(
                "{} {id} is outside this session's scope (--scope session: the agent's own tmux session only); attach with --scope server to reach it.",
                kind.as_str()
            ),
            Refusal::Unreadable(e) => format!("Reading tmux's entities failed: {e}."),
        }
    }

    /// Its kind, as the layers above the tools act on it.
    pub fn kind(&self) -> Option<RefusalKind> {
        match self {
            Refusal::Generation | Refusal::Gone { .. } => Some(RefusalKind::Gone),
            Refusal::OutOfScope { .. } => Some(RefusalKind::OutOfScope),
            Refusal::Unreadable(_) => None,
        }
    }
}

/// Resolves the entity `id` of `kind` with a fresh metadata read: generation
/// first (when the caller gave one), then existence, then this session's scope.
pub async fn find(
    session: &Session,
    kind: Kind,
    id: &str,
    generation: Option<&str>,
) -> Result<Target, Refusal> {
    let broker = &session.broker;
    if generation.is_some_and(|g| g != broker.identity.generation) {
        return Err(Refusal::Generation);
    }
    let snap = broker
        .registry
        .refresh()
        .await
        .map_err(|e| Refusal::Unreadable(e.to_string()))?;
    let panes: Vec<Pane> = snap
        .panes
        .iter()
        .filter(|p| match kind {
            Kind::Session => p.in_session(id),
            Kind::Window => p.window_id == id,
            Kind::Pane => p.id == id,
        })
        .cloned()
        .collect();
    if panes.is_empty() {
        return Err(Refusal::Gone {
            kind,
            id: id.to_string(),
        });
    }
    let visible = match kind {
        Kind::Session => {
            session.scope == Scope::Server || session.caller_sessions.iter().any(|s| s == id)
        }
        Kind::Window | Kind::Pane => panes.iter().any(|p| session.can_see(p)),
    };
    if !visible {
        return Err(Refusal::OutOfScope {
            kind,
            id: id.to_string(),
        });
    }
    Ok(Target {
        kind,
        id: id.to_string(),
        panes,
        all_panes: snap.panes.len(),
    })
}
