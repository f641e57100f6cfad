//! `list_panes` (libtmux family): every pane this session may see: where it is
//! placed, what runs in it, its size; paged by pane id (a page stays within
//! tens of kB on a server of 1,000 panes). Each record lean (the default,
//! `lean::LeanPane`: what the text line says, for the clients that give
//! their model only the structured content), whole (`detail: full`, the
//! record graph's `PaneRecord`: references, process generation, every
//! placement) or brief (lean, from a brief table read).
//!
//! The model of a typed tool: `Args` is decoded from the arguments, `Listing`
//! is what is serialized, and the output schema is derived from it.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::records::detail::Record;
use crate::toolkit::records::graph::{self, pane_record as record, PaneRecord};
use crate::toolkit::records::lean::{lean_pane, LeanPane};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::SessionFilter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::borrow::Cow;
use std::sync::Arc;
use tmux_mcp_core::feed::{Depth, Shape};
use tmux_mcp_engine::registry::{session_ids, Pane, RefreshError, Snapshot};

pub const SPEC: ToolSpec = ToolSpec::new(
    "list_panes",
    Annotations::read_only("List panes"),
    input_of::<Args>,
    schema_of::<Listing>,
    |c| c.run(call),
)
.description("List panes: where, size, command, cwd; paged.")
.details("List tmux panes, each as {id, at, size, command, cwd}: `at` is where it is placed, `session:window.pane` (one per session), size `WIDTHxHEIGHT`; `active: true` marks its window's active pane, and dead, deadStatus, state (exited, dead, untracked; absent while running), processNote and shell (its enrolled shell) appear only when they say something. The server's generation and, when the agent runs in tmux, callerPaneId are given once per result. Optionally only the panes of one session (id like $1, or name). Pages hold `limit` panes (default 100) in pane-id order; `total` counts every pane that matches and `nextCursor`, present while more remain, continues after the last pane of the page (a pane made or gone between pages neither repeats nor hides another). `detail: full` gives the whole records: reference {kind, id, generation}, window id and name, title, pid, process generation and state, history size, every placement (session id and name, window index, whether it is the current window), isCallerPane. `detail: brief`: {id, at, command, cwd} and what is not at its default, from a cheaper table read. Read-only.")
.sample(|_| json!({}))
.ids_in_text()
.across_servers();

use crate::toolkit::records::paging::{self, PAGE_MAX};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Only panes of this session.
    session: Option<SessionFilter>,
    // full: whole records; brief: id, at, command, cwd (the details say so).
    detail: Option<Detail>,
    #[serde(default = "paging::default_limit")]
    #[schemars(range(min = 1, max = PAGE_MAX))]
    limit: usize,
    /// A page's nextCursor.
    cursor: Option<crate::toolkit::target::ids::PaneId>,
}

// A listing's records: lean (absent: `Normal`), whole or brief (not a doc
// comment, which schemars would publish).
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Detail {
    #[serde(skip)]
    Normal,
    Full,
    Brief,
}

impl Args {
    fn detail(&self) -> Detail {
        self.detail.unwrap_or(Detail::Normal)
    }
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Listing {
    generation: String,
    /// Absent: server (every pane of the server); session: only the sessions
    /// of the caller's pane.
    #[serde(
        default = "graph::server_scope",
        skip_serializing_if = "graph::is_server_scope"
    )]
    #[schemars(with = "crate::toolkit::schemas::wire_schemas::Scope")]
    scope: tmux_mcp_core::wire::Scope,
    /// The caller's own pane; absent when the agent runs outside tmux.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    caller_pane_id: Option<String>,
    panes: Vec<Record<Box<PaneRecord>, LeanPane>>,
    /// Panes that match, on every page.
    total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    next_cursor: Option<String>,
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let depth = match args.detail() {
        Detail::Full | Detail::Normal => Depth::Full,
        Detail::Brief => Depth::Brief,
    };
    let snap = read(session, &args, depth).await.map_err(|e| {
        ToolOutput::libtmux_error(format!(
            "Could not read the pane table from tmux: {e}. Nothing was changed."
        ))
    })?;
    let page = select(session, &snap, &args).map_err(ToolOutput::libtmux_error)?;
    let mut text = summary(session, &page.items, args.detail());
    if let Some(line) = page.more_line("pane(s)") {
        text.push('\n');
        text.push_str(&line);
    }
    let panes = page
        .items
        .iter()
        .map(|p| match args.detail() {
            Detail::Full => Record::Full(Box::new(record(session, p))),
            Detail::Normal => Record::Lean(lean_pane(session, p, false)),
            Detail::Brief => Record::Lean(lean_pane(session, p, true)),
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
    Ok(ToolOutput::typed(&listing, text))
}

/// A fresh table holding the page at `depth`. The last snapshot says which
/// panes the page will hold; the read expands their sessions at `depth` and
/// only places every other pane (the total and the cursor need them all), so
/// a page of 100 on a server of 1,000 panes costs tmux a fifth of the whole
/// table. A last page is read whole: panes made since join it, in sessions the
/// snapshot does not name. Should the fresh read not hold the page at `depth`
/// (a pane moved to another session meanwhile), the whole table is read.
async fn read(session: &Session, args: &Args, depth: Depth) -> Result<Arc<Snapshot>, RefreshError> {
    let registry = &session.broker.registry;
    let only = registry.cached().and_then(|cached| {
        let page = select(session, &cached, args).ok()?;
        page.next.as_ref()?;
        let ids = session_ids(page.items.iter().map(|p| &**p));
        (ids.len() < cached.session_ids().len()).then_some(ids)
    });
    let shape = Shape {
        depth,
        only: only.as_deref(),
    };
    let holds_page = |snap: &Snapshot| {
        select(session, snap, args).map_or(true, |page| page.items.iter().all(|p| p.depth >= depth))
    };
    registry.read(&shape, holds_page).await
}

/// The page `args` ask for among the panes of `snap` this session may see.
fn select<'a>(
    session: &'a Session,
    snap: &'a Snapshot,
    args: &Args,
) -> Result<paging::Page<Cow<'a, Pane>>, String> {
    let wanted = args.session.as_deref();
    let in_wanted = |p: &Pane| {
        wanted.is_none_or(|w| {
            p.placements
                .iter()
                .any(|pl| pl.session_id == w || pl.session_name == w)
        })
    };
    let matching: Vec<Cow<'a, Pane>> = session.visible(snap).filter(|p| in_wanted(p)).collect();
    if let Some(w) = wanted.filter(|_| matching.is_empty()) {
        return Err(format!("Argument session: no session with id or name {w:?} is visible. Call list_panes without it to see the sessions."));
    }
    // The table is in pane-id order.
    Ok(paging::page(
        matching,
        |p| &p.id,
        args.cursor.as_deref(),
        args.limit,
    ))
}

/// One line per pane for clients that show only text.
fn summary(session: &Session, panes: &[Cow<'_, Pane>], detail: Detail) -> String {
    let mut lines = vec![format!(
        "{} pane(s), generation {}",
        panes.len(),
        session.generation()
    )];
    for p in panes {
        let places: Vec<String> = p
            .placements
            .iter()
            .map(|pl| format!("{}:{}", pl.session_name, pl.window_index))
            .collect();
        let size = match detail {
            Detail::Full | Detail::Normal => format!(" {}x{} pid {}", p.width, p.height, p.pid),
            Detail::Brief => String::new(),
        };
        lines.push(format!(
            "{} {}{size} {}{}{}",
            p.id,
            places.join(","),
            p.command,
            if p.dead { " [dead]" } else { "" },
            if session.is_caller(&p.id) {
                " [caller]"
            } else {
                ""
            },
        ));
    }
    lines.join("\n")
}
