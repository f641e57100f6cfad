//! `get_pane_info` (libtmux family): one pane's `list_panes` record, plus the
//! window it is in and the sessions it is placed in (their `list_windows` and
//! `list_sessions` records), all cut to the agent's scope. One table read.

use crate::session::Session;
use crate::toolkit::criteria::Graph;
use crate::toolkit::ids::PaneId;
use crate::toolkit::read;
use crate::toolkit::records::SessionRecord;
use crate::toolkit::records::WindowRecord;
use crate::toolkit::records::{self, PaneRecord};
use crate::toolkit::spec::{Annotations, Call, CallFuture, ToolOutput, ToolSpec};
use crate::toolkit::typed::{input_of, schema_of};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const SPEC: ToolSpec = ToolSpec::new(
    "get_pane_info",
    Annotations::read_only("Get pane info"),
    input_of::<Args>,
    schema_of::<Info>,
    run,
)
.description("One pane's record with its window and sessions.")
.details("Describe one tmux pane by id (%N): its list_panes record (reference {kind, id, generation}, placements, pid, process generation and state, size, command, cwd, title, isCallerPane), the window it is in and the sessions it is placed in, with their references. Read-only; fires no tmux hook.")
.sample(|s| json!({"paneId": s.pane}));

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Info {
    generation: String,
    #[schemars(with = "crate::toolkit::wire_schemas::Scope")]
    scope: tmux_mcp_core::wire::Scope,
    pane: PaneRecord,
    window: WindowRecord,
    sessions: Vec<SessionRecord>,
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    c.run_fallible(call)
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    // A fresh read; the errors (unknown pane with a hint, out of scope) are
    // the family's (read::resolve).
    let pane = read::resolve(
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
    let record = records::pane_record(session, &pane);
    let Some(window) = records::window_records(session, &g, None)
        .into_iter()
        .find(|w| w.id == pane.window_id)
    else {
        return Err(ToolOutput::libtmux_error(format!(
            "Pane {} is in no window any more; call list_panes.",
            args.pane_id
        )));
    };
    let sessions: Vec<SessionRecord> = records::session_records(session, &g)
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
    let info = Info {
        generation: session.generation().to_string(),
        scope: session.scope,
        pane: record,
        window,
        sessions,
    };
    Ok(ToolOutput::typed(&info, text))
}
