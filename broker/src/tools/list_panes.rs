//! `list_panes` (libtmux family): every pane this session may see, with its
//! entity reference, placements, process and whether it is the caller's pane;
//! paged by pane id (a page stays within tens of kB on a server of 1,000
//! panes), each record whole or brief.
//!
//! The model of a typed tool: `Args` is decoded from the arguments, `Listing`
//! is what is serialized, and the output schema is derived from it.

use super::ids::SessionFilter;
use super::refs;
use super::typed::{input_of, schema_of};
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tmux_mcp_engine::registry::{numeric_id, Pane};

pub const SPEC: ToolSpec = ToolSpec {
    name: "list_panes",
    family: Family::Libtmux,
    description: "List panes: id, placements, process, size, command, cwd; paged.",
    details: "List tmux panes with their stable reference {kind, id, generation}, the sessions and window indexes they are placed in, pid, process generation, dead flag, size, current command and directory, and whether a pane is the caller's own. Optionally only the panes of one session (id like $1, or name). Pages hold `limit` panes (default 100) in pane-id order; `total` counts every pane that matches and `nextCursor`, present while more remain, continues after the last pane of the page (a pane made or gone between pages neither repeats nor hides another). `detail: brief` gives each pane as {id, at, command, cwd, state}: `at` is where it is placed, `session:window.pane`. Read-only.",
    annotations: Annotations::read_only("List panes"),
    listed: super::Listed::AtTier,
    input_schema: input_of::<Args>,
    output_schema: schema_of::<Listing>,
    run,
};

use super::paging::{self, PAGE_MAX};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Only panes of this session.
    session: Option<SessionFilter>,
    /// brief: id, at, command, cwd, state.
    #[serde(default)]
    detail: Detail,
    #[serde(default = "paging::default_limit")]
    #[schemars(range(min = 1, max = PAGE_MAX))]
    limit: usize,
    /// A page's nextCursor.
    cursor: Option<super::ids::PaneId>,
}

#[derive(Deserialize, JsonSchema, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Detail {
    #[default]
    Full,
    Brief,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Listing {
    generation: String,
    scope: tmux_mcp_core::wire::Scope,
    caller_pane_id: Option<String>,
    panes: Vec<Record>,
    /// Panes that match, on every page.
    total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = super::ids::PANE_ID))]
    next_cursor: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
enum Record {
    Full(PaneRecord),
    Brief(BriefRecord),
}

/// A pane in a few words: enough to pick one and name it to a tool.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BriefRecord {
    #[schemars(regex(pattern = super::ids::PANE_ID))]
    id: String,
    /// `session:window.pane`, one per session the pane is placed in.
    at: Vec<String>,
    command: String,
    cwd: String,
    state: ProcessState,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct PaneRecord {
    #[serde(rename = "ref")]
    reference: refs::PaneRef,
    #[schemars(regex(pattern = super::ids::PANE_ID))]
    id: String,
    index: i64,
    #[schemars(regex(pattern = super::ids::WINDOW_ID))]
    window_id: String,
    window_name: String,
    active: bool,
    title: String,
    pid: u32,
    #[schemars(regex(pattern = r"^[a-f0-9]{32}$"))]
    process_generation: Option<String>,
    process_state: ProcessState,
    #[serde(skip_serializing_if = "Option::is_none")]
    process_note: Option<String>,
    dead: bool,
    dead_status: Option<i32>,
    width: u32,
    height: u32,
    history_size: u64,
    command: String,
    cwd: String,
    placements: Vec<PlacementRecord>,
    is_caller_pane: bool,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ProcessState {
    Running,
    Exited,
    Dead,
    Untracked,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlacementRecord {
    #[schemars(regex(pattern = super::ids::SESSION_ID))]
    session_id: String,
    session_name: String,
    index: i64,
    window_active: bool,
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    c.run_typed(call)
}

async fn call(session: &Session, args: Args) -> ToolOutput {
    let snap = match session.broker.registry.refresh().await {
        Ok(s) => s,
        Err(e) => {
            return ToolOutput::libtmux_error(format!(
                "Could not read the pane table from tmux: {e}. Nothing was changed."
            ))
        }
    };
    let wanted = args.session.as_deref();
    let visible: Vec<_> = session.visible(&snap).collect();
    if let Some(w) = wanted {
        let known = visible
            .iter()
            .flat_map(|p| &p.placements)
            .any(|pl| pl.session_id == w || pl.session_name == w);
        if !known {
            return ToolOutput::libtmux_error(format!("Argument session: no session with id or name {w:?} is visible. Call list_panes without it to see the sessions."));
        }
    }
    let matching: Vec<_> = visible
        .iter()
        .filter(|p| {
            wanted.is_none_or(|w| {
                p.placements
                    .iter()
                    .any(|pl| pl.session_id == w || pl.session_name == w)
            })
        })
        .collect();
    // The table is in pane-id order.
    let page = paging::page(matching, |p| &p.id, args.cursor.as_deref(), args.limit);
    let more = page.more_line("pane(s)");
    let records: Vec<PaneRecord> = page.items.into_iter().map(|p| record(session, p)).collect();
    let mut text = summary(session, &records);
    if let Some(line) = more {
        text.push('\n');
        text.push_str(&line);
    }
    let panes = records
        .into_iter()
        .map(|r| match args.detail {
            Detail::Full => Record::Full(r),
            Detail::Brief => Record::Brief(brief(r)),
        })
        .collect();
    let listing = Listing {
        generation: session.generation().to_string(),
        scope: session.scope,
        caller_pane_id: session.caller_pane.clone(),
        panes,
        total: page.total,
        next_cursor: page.next,
    };
    ToolOutput::typed(&listing, text)
}

fn brief(r: PaneRecord) -> BriefRecord {
    BriefRecord {
        at: r
            .placements
            .iter()
            .map(|pl| format!("{}:{}.{}", pl.session_name, pl.index, r.index))
            .collect(),
        id: r.id,
        command: r.command,
        cwd: r.cwd,
        state: r.process_state,
    }
}

pub(super) fn record(session: &Session, p: &Pane) -> PaneRecord {
    let st = p.process_status();
    let process_state = match st.state.as_str() {
        "running" => ProcessState::Running,
        "exited" => ProcessState::Exited,
        "dead" => ProcessState::Dead,
        _ => ProcessState::Untracked,
    };
    PaneRecord {
        reference: refs::PaneRef::new(&p.id, session.generation()),
        id: p.id.clone(),
        index: p.index,
        window_id: p.window_id.clone(),
        window_name: p.window_name.clone(),
        active: p.active,
        title: p.title.clone(),
        pid: p.pid,
        process_generation: st.process_generation,
        process_state,
        process_note: st.note,
        dead: p.dead,
        dead_status: p.dead_status,
        width: p.width,
        height: p.height,
        history_size: p.history_size,
        command: p.command.clone(),
        cwd: p.cwd.clone(),
        placements: p
            .placements
            .iter()
            .map(|pl| PlacementRecord {
                session_id: pl.session_id.clone(),
                session_name: pl.session_name.clone(),
                index: pl.window_index,
                window_active: pl.window_active,
            })
            .collect(),
        is_caller_pane: session.is_caller(&p.id),
    }
}

/// One line per pane for clients that show only text.
fn summary(session: &Session, panes: &[PaneRecord]) -> String {
    let mut lines = vec![format!(
        "{} pane(s), generation {}",
        panes.len(),
        session.generation()
    )];
    let mut sorted: Vec<&PaneRecord> = panes.iter().collect();
    sorted.sort_by_key(|p| numeric_id(&p.id));
    for p in sorted {
        let places: Vec<String> = p
            .placements
            .iter()
            .map(|pl| format!("{}:{}", pl.session_name, pl.index))
            .collect();
        lines.push(format!(
            "{} {} {}x{} pid {} {}{}{}",
            p.id,
            places.join(","),
            p.width,
            p.height,
            p.pid,
            p.command,
            if p.dead { " [dead]" } else { "" },
            if p.is_caller_pane { " [caller]" } else { "" },
        ));
    }
    lines.join("\n")
}
