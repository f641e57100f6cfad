//! `list_sessions` (libtmux family): every tmux session this agent may see,
//! with its reference, attached-client count, window count and the windows
//! linked into it. Derived from the registry snapshot through the record graph
//! of `criteria` (one derivation of sessions and windows from placements), so
//! a session-scoped agent sees only its own sessions.

use super::criteria::{Entity, Graph, Record};
use super::entity_refs::SessionRef;
use super::typed::schema_of;
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tmux_mcp_engine::registry::Snapshot;

pub const SPEC: ToolSpec = ToolSpec {
    name: "list_sessions",
    family: Family::Libtmux,
    description: "List the sessions with their windows and attached-client counts.",
    details: "List the tmux sessions this agent may see, each with its stable reference {kind, id, generation}, name, creation time, number of attached clients, window count, the windows linked into it (index, active) and whether the caller's own pane is in it. Read-only; fires no tmux hook.",
    annotations: Annotations::read_only("List sessions"),
    opt_in: false,
    input_schema: super::typed::input_of::<super::typed::NoArgs>,
    output_schema: schema_of::<Listing>,
    run,
};

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Listing {
    generation: String,
    scope: tmux_mcp_core::wire::Scope,
    caller_pane_id: Option<String>,
    sessions: Vec<SessionRecord>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct SessionRecord {
    #[serde(rename = "ref")]
    reference: SessionRef,
    #[schemars(regex(pattern = super::ids::SESSION_ID))]
    id: String,
    name: String,
    /// Seconds since the epoch.
    created: u64,
    /// Clients attached to the session.
    attached: u64,
    window_count: u64,
    windows: Vec<SessionWindow>,
    holds_caller_pane: bool,
}

/// A window as linked into this session.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SessionWindow {
    #[schemars(regex(pattern = super::ids::WINDOW_ID))]
    window_id: String,
    index: i64,
    active: bool,
}

/// The session fields of a graph record (`criteria::Graph::build`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionFields {
    id: String,
    name: String,
    created: u64,
    attached: u64,
    window_count: u64,
}

/// The window-link fields of a graph record.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LinkFields {
    pub session_id: String,
    pub window_id: String,
    pub index: i64,
    pub active: bool,
}

pub(super) fn fields<T: serde::de::DeserializeOwned>(r: &Record) -> T {
    serde_json::from_value(r.fields.clone()).expect("criteria::Graph records carry these fields")
}

/// A fresh snapshot and the record graph of what `session` may see.
pub(super) async fn graph(session: &Session) -> Result<(Arc<Snapshot>, Graph), ToolOutput> {
    let snap = session.broker.registry.refresh().await.map_err(|e| {
        ToolOutput::libtmux_error(format!(
            "Could not read the session table from tmux: {e}. Nothing was changed."
        ))
    })?;
    let visible: Vec<_> = session.visible(&snap).collect();
    let g = Graph::build(
        visible.iter().map(|p| p.as_ref()),
        &[],
        session.generation(),
    );
    Ok((snap, g))
}

/// The id of the visible session `wanted` names: by id first, then by name
/// (SPEC B.4). The error names `field` and lists the visible sessions.
pub(super) fn resolve_session(g: &Graph, field: &str, wanted: &str) -> Result<String, ToolOutput> {
    let sessions: Vec<SessionFields> = g.records(Entity::Session).iter().map(fields).collect();
    if let Some(s) = sessions
        .iter()
        .find(|s| s.id == wanted)
        .or_else(|| sessions.iter().find(|s| s.name == wanted))
    {
        return Ok(s.id.clone());
    }
    let known: Vec<String> = sessions
        .iter()
        .map(|s| format!("{} ({})", s.id, s.name))
        .collect();
    Err(ToolOutput::libtmux_error(format!(
        "Argument {field}: no session with id or name {wanted:?} is visible to this agent. Visible sessions: {}. Nothing was sent to tmux.",
        if known.is_empty() { "none".to_string() } else { known.join(", ") }
    )))
}

/// The session records of `g`, in numeric id order.
pub(super) fn records(session: &Session, g: &Graph) -> Vec<SessionRecord> {
    let links: Vec<LinkFields> = g.records(Entity::WindowLink).iter().map(fields).collect();
    g.records(Entity::Session)
        .iter()
        .map(|r| {
            let f: SessionFields = fields(r);
            let windows = links
                .iter()
                .filter(|l| l.session_id == f.id)
                .map(|l| SessionWindow {
                    window_id: l.window_id.clone(),
                    index: l.index,
                    active: l.active,
                })
                .collect();
            SessionRecord {
                reference: SessionRef::new(&f.id, session.generation()),
                holds_caller_pane: session.caller_sessions.contains(&f.id),
                id: f.id,
                name: f.name,
                created: f.created,
                attached: f.attached,
                window_count: f.window_count,
                windows,
            }
        })
        .collect()
}

impl SessionRecord {
    pub(super) fn id(&self) -> &str {
        &self.id
    }
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move {
        let (_, g) = match graph(c.session).await {
            Ok(x) => x,
            Err(e) => return e,
        };
        let sessions = records(c.session, &g);
        let mut lines = vec![format!(
            "{} session(s), generation {}",
            sessions.len(),
            c.session.generation()
        )];
        for s in &sessions {
            lines.push(format!(
                "{} {} {} window(s), {} attached{}",
                s.id,
                s.name,
                s.window_count,
                s.attached,
                if s.holds_caller_pane { " [caller]" } else { "" }
            ));
        }
        let listing = Listing {
            generation: c.session.generation().to_string(),
            scope: c.session.scope,
            caller_pane_id: c.session.caller_pane.clone(),
            sessions,
        };
        ToolOutput::typed(&listing, lines.join("\n"))
    })
}
