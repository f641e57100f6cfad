//! `get_pane_info` (libtmux family): one pane's `list_panes` record with its
//! window, pid and title; with `detail: full` the whole records of the pane,
//! the window it is in and the sessions it is placed in (their `list_windows`
//! and `list_sessions` records), all cut to the agent's scope. One table read.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::pane_read;
use crate::toolkit::records::detail::{Lean, Mark, Record};
use crate::toolkit::records::graph::{self, Graph, PaneRecord, SessionRecord, WindowRecord};
use crate::toolkit::records::lean::{self, Full, LeanPane};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::PaneId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const SPEC: ToolSpec = ToolSpec::new(
    "get_pane_info",
    Annotations::read_only("Get pane info"),
    input_of::<Args>,
    schema_of::<Info>,
    |c| c.run(call),
)
.description("One pane: where, size, command, pid, title.")
.details("Describe one tmux pane by id (%N): its list_panes record ({id, at, size, command, cwd}, active, and what is not at its default) with its window id and name, pid and title; isCallerPane (true) when it is the caller's own. `detail: full`: the whole records of the pane (reference {kind, id, generation}, placements, process generation and state, history size), of the window it is in and of the sessions it is placed in. Read-only; fires no tmux hook.")
.sample(|s| json!({"paneId": s.pane}))
.ids_in_text();

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
    detail: Option<Full>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Info {
    generation: String,
    /// Absent: server; session: this agent sees only the sessions of the
    /// caller's pane.
    #[serde(
        default = "graph::server_scope",
        skip_serializing_if = "graph::is_server_scope"
    )]
    #[schemars(with = "crate::toolkit::schemas::wire_schemas::Scope")]
    scope: tmux_mcp_core::wire::Scope,
    pane: Record<Box<PaneRecord>, Box<LeanInfo>>,
    /// The window's `list_windows` record (`detail: full` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "WindowRecord")]
    window: Option<WindowRecord>,
    /// The `list_sessions` records of the sessions the pane is placed in
    /// (`detail: full` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<SessionRecord>")]
    sessions: Option<Vec<SessionRecord>>,
}

/// The pane's `list_panes` record and what else says which pane it is.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LeanInfo {
    #[serde(flatten)]
    pane: LeanPane,
    #[schemars(regex(pattern = crate::toolkit::target::ids::WINDOW_ID))]
    window_id: String,
    window_name: String,
    pid: u32,
    title: String,
    /// Present (true) when this is the caller's own pane.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    is_caller_pane: bool,
}

/// A lean pane has `at`, a whole one `placements`.
impl Lean for LeanInfo {
    const MARK: Mark = Mark::LeanHas("at");
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    // A fresh read; the errors (unknown pane with a hint, out of scope) are
    // the family's (pane_read::pane).
    let pane = pane_read::pane(
        session,
        &args.pane_id,
        tmux_mcp_engine::observe::Freshness::Fresh,
    )
    .await?;
    let Some(pane) = session.scoped(&pane) else {
        return Err(ToolOutput::libtmux_error(format!(
            "Pane {} is outside this session's scope.",
            args.pane_id
        )));
    };
    // The graph of everything this agent sees (the table `resolve` just
    // read), so the window's active pane is known whichever pane this is.
    let Some(snap) = session.broker.registry.cached() else {
        return Err(ToolOutput::libtmux_error(
            "The pane table is not available; retry.".to_string(),
        ));
    };
    let visible: Vec<_> = session.visible(&snap).collect();
    let g = Graph::build(
        visible.iter().map(|p| p.as_ref()),
        &[],
        session.generation(),
    );
    let Some(window) = graph::window_records(session, &g, None)
        .into_iter()
        .find(|w| w.id == pane.window_id)
    else {
        return Err(ToolOutput::libtmux_error(format!(
            "Pane {} is in no window any more; call list_panes.",
            args.pane_id
        )));
    };
    let sessions: Vec<SessionRecord> = graph::session_records(session, &g)
        .into_iter()
        .filter(|s| pane.in_session(&s.id))
        .collect();
    let text = format!(
        "pane {} in window {} ({}), session(s) {}; pid {} {} {}x{}{}{}",
        pane.id,
        window.id,
        pane.window_name,
        sessions
            .iter()
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>()
            .join(","),
        pane.pid,
        pane.command,
        pane.width,
        pane.height,
        if pane.dead { " [dead]" } else { "" },
        if session.is_caller(&pane.id) {
            " [caller]"
        } else {
            ""
        },
    );
    let info = match args.detail {
        Some(Full::Full) => Info {
            generation: session.generation().to_string(),
            scope: session.scope,
            pane: Record::Full(Box::new(graph::pane_record(session, &pane))),
            window: Some(window),
            sessions: Some(sessions),
        },
        None => Info {
            generation: session.generation().to_string(),
            scope: session.scope,
            pane: Record::Lean(Box::new(LeanInfo {
                pane: lean::lean_pane(session, &pane, false),
                window_id: pane.window_id.clone(),
                window_name: pane.window_name.clone(),
                pid: pane.pid,
                title: pane.title.clone(),
                is_caller_pane: session.is_caller(&pane.id),
            })),
            window: None,
            sessions: None,
        },
    };
    Ok(ToolOutput::typed(&info, text))
}
