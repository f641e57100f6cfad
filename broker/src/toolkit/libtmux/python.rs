//! The Python toolset's spelling (`--toolset python`, docs/spec.md C.0):
//! how tmux-python/libtmux-mcp names a pane and its server (every field
//! nullable), its limits, its not-found errors, and the pane a selector
//! picks among the panes a session may see ([`selected_pane`]).

use crate::session::Session;
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::libtmux::pane_read;
use crate::toolkit::libtmux::wording::read_error;
use serde::Deserialize;
use tmux_mcp_engine::registry::{numeric_id, Pane};

/// The Python family's way to name a pane and its server: every field
/// nullable, `null` the same as absent (the contract's defaults).
#[derive(Deserialize, Default, schemars::JsonSchema)]
pub struct PaneSelector {
    /// Pane ID (e.g. '%1').
    #[serde(default)]
    pub pane_id: Option<String>,
    /// Window ID for pane resolution.
    #[serde(default)]
    pub window_id: Option<String>,
    /// Session ID (e.g. '$1') for pane resolution.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Session name for pane resolution.
    #[serde(default)]
    pub session_name: Option<String>,
    #[serde(flatten)]
    pub server: ServerArg,
}

impl PaneSelector {
    /// Whether any field names a pane (else the first session's is meant).
    pub fn targeted(&self) -> bool {
        self.pane_id.is_some()
            || self.window_id.is_some()
            || self.session_id.is_some()
            || self.session_name.is_some()
    }
}

/// `socket_name`: the tmux server the caller means (checked against ours).
#[derive(Deserialize, Default, schemars::JsonSchema)]
pub struct ServerArg {
    /// tmux socket name.
    #[serde(default)]
    pub socket_name: Option<String>,
}

/// A nullable argument whose absence is its field's `default`: `null` is
/// `None` (for a limit: no limit), so it cannot be mistaken for absent.
pub fn nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

/// C.0 errors: the message, a newline and the suggestion; nothing reached tmux.
fn not_found(what: &str, suggestion: &str) -> ToolOutput {
    ToolOutput::libtmux_error(format!("{what}\n{suggestion}"))
}

/// A Python limit, decoded (absent: its default; `null`: no limit): a
/// positive integer or no limit (≤ 0 is refused, unlike the reference's quirks).
pub fn positive_limit(
    tool: &str,
    key: &str,
    limit: Option<i64>,
) -> Result<Option<i64>, ToolOutput> {
    match limit {
        Some(n) if n <= 0 => Err(ToolOutput::libtmux_error(format!("Invalid arguments for {tool}: {key} must be a positive integer, or null for no limit. Nothing was sent to tmux."))),
        other => Ok(other),
    }
}

/// `socket_name`, when given, must name the server this broker serves (a
/// call naming another is sent there before it reaches a tool:
/// `route::python_socket`).
pub fn check_socket(session: &Session, server: &ServerArg) -> Result<(), ToolOutput> {
    if let Some(name) = &server.socket_name {
        let ours = session
            .broker
            .identity
            .socket_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if *name != ours {
            return Err(ToolOutput::libtmux_error(format!(
                "socket_name {name:?} names another tmux server: this broker serves the one on socket {ours:?}. Nothing was sent to tmux."
            )));
        }
    }
    Ok(())
}

/// C.0 pane resolution over the panes this session may see: `pane_id`, else
/// `window_id`'s first pane, else the first pane of the first window of the
/// session named by `session_id`, then `session_name`, else of the first session.
pub async fn selected_pane(session: &Session, by: &PaneSelector) -> Result<Pane, ToolOutput> {
    if let Some(id) = by.pane_id.as_deref() {
        return match pane_read::pane(session, id, session.read_freshness()).await {
            Ok(p) => Ok(p),
            Err(_) if !id.starts_with('%') => Err(not_found(
                &format!("Pane not found: {id}"),
                "Pane ids look like %1. Call list_panes to discover valid pane ids.",
            )),
            Err(e) => Err(e),
        };
    }
    let snap = session.broker.registry.refresh().await.map_err(|e| {
        read_error(
            &format!("Could not read the pane table from tmux: {e}."),
            Some("Nothing was sent to the pane."),
        )
    })?;
    let visible: Vec<Pane> = session.visible(&snap).map(|p| p.into_owned()).collect();
    let first_pane = |panes: Vec<&Pane>| panes.into_iter().min_by_key(|p| p.index).cloned();
    if let Some(w) = by.window_id.as_deref() {
        return first_pane(visible.iter().filter(|p| p.window_id == w).collect()).ok_or_else(
            || {
                not_found(
                    &format!("Object not found: window {w}"),
                    "Call list_windows to discover valid window ids.",
                )
            },
        );
    }
    // Sessions as tmux lists them (by name), each with its placements.
    let mut sessions: Vec<(&str, &str)> = visible
        .iter()
        .flat_map(|p| {
            p.placements
                .iter()
                .map(|pl| (pl.session_name.as_str(), pl.session_id.as_str()))
        })
        .collect();
    sessions.sort();
    sessions.dedup();
    let chosen = if let Some(sid) = by.session_id.as_deref() {
        sessions
            .iter()
            .find(|(_, id)| *id == sid)
            .ok_or_else(|| {
                not_found(
                    &format!("Object not found: session {sid}"),
                    "Call list_sessions to discover valid session ids.",
                )
            })?
            .1
    } else if let Some(name) = by.session_name.as_deref() {
        sessions
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| {
                not_found(
                    &format!("Object not found: session {name:?}"),
                    "Call list_sessions to discover valid session names.",
                )
            })?
            .1
    } else {
        sessions
            .first()
            .ok_or_else(|| {
                not_found(
                    "Object not found: no session",
                    "This MCP session can see no tmux session.",
                )
            })?
            .1
    };
    // The session's first window (lowest index), then its first pane.
    let window = visible
        .iter()
        .flat_map(|p| {
            p.placements
                .iter()
                .filter(|pl| pl.session_id == chosen)
                .map(move |pl| (pl.window_index, numeric_id(&p.window_id), &p.window_id))
        })
        .min()
        .map(|(_, _, w)| w.clone())
        .ok_or_else(|| {
            not_found(
                &format!("Object not found: session {chosen} has no window"),
                "Call list_windows.",
            )
        })?;
    first_pane(visible.iter().filter(|p| p.window_id == window).collect()).ok_or_else(|| {
        not_found(
            &format!("Object not found: window {window} has no pane"),
            "Call list_panes.",
        )
    })
}
