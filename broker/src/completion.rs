//! `completion/complete`: the values an argument of a prompt or of a resource
//! template may take, from what this session may see now.
//!
//! An argument says what it names ([`Kind`]): a pane, a window, a session
//! name, a tool name, or free text. The candidates of a kind come
//! from a pane table read after the request came (hook-free, like every table
//! read: a pane made a moment ago is offered) and are cut to the session's
//! scope, so a session-scoped agent is never offered a pane, window or
//! session it could not use. That read is of ids and places only
//! (`Registry::read` of a `Placed` shape).

use crate::session::Session;
use std::collections::HashMap;
use tmux_mcp_core::feed::{Depth, Shape};
use tmux_mcp_engine::registry::{numeric_id, Snapshot};

/// What the value of an argument names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A pane id `%N`.
    Pane,
    /// A session's name.
    SessionName,
    /// A window id `@N`.
    Window,
    /// A tool name of this session's toolset.
    Tool,
    /// Free text (a command, a pattern, a cursor): nothing to offer.
    Free,
}

/// The most values one answer carries (MCP's limit).
pub const MAX_VALUES: usize = 100;

/// One answer: the first [`MAX_VALUES`] matches and how many there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub values: Vec<String>,
    pub total: usize,
}

impl Completion {
    pub fn has_more(&self) -> bool {
        self.total > self.values.len()
    }
}

/// The values of `kind` that start with `typed`, ignoring case (an id also
/// matches typed without its sigil: `3` offers `%3`, `%30` …). `context` holds
/// the arguments the client already resolved: a `session` narrows panes and
/// windows to that session.
pub async fn complete(
    session: &Session,
    kind: Kind,
    typed: &str,
    context: &HashMap<String, String>,
) -> Result<Completion, String> {
    let candidates = match kind {
        Kind::Free => Vec::new(),
        Kind::Tool => crate::tools::catalog(session.toolset)
            .map(|t| t.name.to_string())
            .collect(),
        Kind::Pane | Kind::SessionName | Kind::Window => {
            // Ids and names are all a candidate needs: every pane placed
            // only, a tenth of tmux's time for the whole table (completion
            // runs as a person types).
            let placed = Shape {
                depth: Depth::Placed,
                only: None,
            };
            let snap = session
                .broker
                .registry
                .read(&placed, |_| true)
                .await
                .map_err(|e| format!("cannot read the pane table: {e}"))?;
            let in_session = context.get("session").map(String::as_str);
            candidates(session, &snap, kind, in_session)
        }
    };
    let mut matching = candidates.into_iter().filter(|c| starts_with(c, typed));
    let values: Vec<String> = matching.by_ref().take(MAX_VALUES).collect();
    let total = values.len() + matching.count();
    Ok(Completion { values, total })
}

/// The pane table as the broker holds it (kept current by its events); read
/// from tmux only when there is none yet.
pub async fn table(session: &Session) -> Result<std::sync::Arc<Snapshot>, String> {
    if let Some(s) = session.broker.registry.cached() {
        return Ok(s);
    }
    session
        .broker
        .registry
        .refresh()
        .await
        .map_err(|e| format!("cannot read the pane table: {e}"))
}

/// Every value of `kind` this session may see, in tmux's order (ids by
/// number, sessions by name), each once.
fn candidates(
    session: &Session,
    snap: &Snapshot,
    kind: Kind,
    in_session: Option<&str>,
) -> Vec<String> {
    let panes = session.visible(snap).filter(|p| {
        in_session.is_none_or(|name| p.placements.iter().any(|pl| pl.session_name == name))
    });
    let mut out: Vec<String> = match kind {
        Kind::Pane => panes.map(|p| p.id.clone()).collect(),
        Kind::Window => {
            let mut w: Vec<String> = panes.map(|p| p.window_id.clone()).collect();
            w.sort_by_key(|id| numeric_id(id));
            w
        }
        Kind::SessionName => {
            let mut s: Vec<String> = panes
                .flat_map(|p| {
                    p.placements
                        .iter()
                        .map(|pl| pl.session_name.clone())
                        .collect::<Vec<_>>()
                })
                .collect();
            s.sort();
            s
        }
        Kind::Tool | Kind::Free => Vec::new(),
    };
    out.dedup();
    out
}

fn starts_with(candidate: &str, typed: &str) -> bool {
    let lower = |s: &str| s.to_lowercase();
    let (c, t) = (lower(candidate), lower(typed));
    c.starts_with(&t)
        || (matches!(c.chars().next(), Some('%' | '@' | '$'))
            && !t.is_empty()
            && t.bytes().all(|b| b.is_ascii_digit())
            && c[1..].starts_with(&t))
}

#[cfg(test)]
mod tests {
    use super::starts_with;

    #[test]
    fn typed_text_matches_a_prefix_ignoring_case_and_an_id_without_its_sigil() {
        assert!(starts_with("%3", ""));
        assert!(starts_with("%30", "%3"));
        assert!(starts_with("%30", "3"));
        assert!(!starts_with("%13", "3"));
        assert!(starts_with("@7", "7"));
        assert!(starts_with("Work", "wo"));
        assert!(!starts_with("work", "x"));
        assert!(!starts_with("w3", "3"), "only ids lose their sigil");
    }
}
