//! `list_windows` (libtmux family): every tmux window this agent may see, with
//! its size, pane count and the sessions it is linked into (cut to the
//! agent's scope): lean records by default (`lean::LeanWindow`), the whole
//! ones (reference, layout, active pane, links) with `detail: full`. Optionally only the windows of one session;
//! paged like `list_panes` (`paging`), and like it a page reads only the
//! sessions that hold it in full. Derived from the registry snapshot through
//! `graph::Graph`.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::records::detail::Record;
use crate::toolkit::records::graph::{self, WindowRecord, Windows as Graphed};
use crate::toolkit::records::lean::{Full, LeanWindow};
use crate::toolkit::records::paging::{self, PAGE_MAX};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::{SessionFilter, WindowId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use tmux_mcp_core::feed::{Depth, Shape};
use tmux_mcp_engine::registry::{session_ids, RefreshError, Snapshot};

pub const SPEC: ToolSpec = ToolSpec::new(
    "list_windows",
    Annotations::read_only("List windows"),
    input_of::<Args>,
    schema_of::<Listing>,
    |c| c.run(call),
)
.description("List windows: where, size, pane count; paged.")
.details("List the tmux windows this agent may see, each as {id, name, at, size, paneCount}: `at` is where it is linked, `session:index` (one per session this agent may see), size `WIDTHxHEIGHT`; activeIn names the sessions whose current window it is (absent when none). The server's generation is given once per result. Optionally only the windows of one session (id like $1, or name). Pages hold `limit` windows (default 100) in window-id order; `total` counts every window that matches and `nextCursor`, present while more remain, continues after the last window of the page (a window made or gone between pages neither repeats nor hides another). `detail: full` gives the whole records: reference {kind, id, generation}, width and height, layout, active pane id, links (session id and name, index, active). Read-only; fires no tmux hook.")
.sample(|_| json!({}))
.ids_in_text();

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Only windows of this session.
    ///
    /// Its id ($1) or, when no session has that id, its name.
    session: Option<SessionFilter>,
    #[serde(default = "paging::default_limit")]
    #[schemars(range(min = 1, max = PAGE_MAX))]
    limit: usize,
    /// A page's nextCursor.
    cursor: Option<WindowId>,
    detail: Option<Full>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Listing {
    generation: String,
    /// Absent: server (every window of the server); session: only the
    /// sessions of the caller's pane.
    #[serde(
        default = "graph::server_scope",
        skip_serializing_if = "graph::is_server_scope"
    )]
    #[schemars(with = "crate::toolkit::schemas::wire_schemas::Scope")]
    scope: tmux_mcp_core::wire::Scope,
    windows: Vec<Record<WindowRecord, LeanWindow>>,
    /// Windows that match, on every page.
    total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::toolkit::target::ids::WINDOW_ID))]
    next_cursor: Option<String>,
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let (snap, held) = read(session, &args).await.map_err(|e| {
        ToolOutput::libtmux_error(format!(
            "Could not read the session table from tmux: {e}. Nothing was changed."
        ))
    })?;
    let page = held.map_or_else(|| select(session, &snap, &args), Ok)?;
    let mut lines = vec![format!(
        "{} window(s), generation {}",
        page.total,
        session.generation()
    )];
    for w in &page.items {
        let places: Vec<String> = w
            .links
            .iter()
            .map(|l| {
                format!(
                    "{}:{}{}",
                    l.session_name,
                    l.index,
                    if l.active { "*" } else { "" }
                )
            })
            .collect();
        lines.push(format!(
            "{} {} {} {}x{} {} pane(s)",
            w.id,
            places.join(","),
            w.name,
            w.width,
            w.height,
            w.pane_count
        ));
    }
    lines.extend(page.more_line("window(s)"));
    let listing = Listing {
        generation: session.generation().to_string(),
        scope: session.scope,
        windows: match args.detail {
            Some(Full::Full) => page.items.into_iter().map(Record::Full).collect(),
            None => page
                .items
                .into_iter()
                .map(|w| Record::Lean(w.lean()))
                .collect(),
        },
        total: page.total,
        next_cursor: page.next,
    };
    Ok(ToolOutput::typed(&listing, lines.join("\n")))
}

/// The page `args` ask for among the windows of `snap` this session may see
/// (records made for the page only).
fn select(
    session: &Session,
    snap: &Snapshot,
    args: &Args,
) -> Result<paging::Page<WindowRecord>, ToolOutput> {
    let g = graph::of(session, snap);
    let only = graph::session_filter(&g, args.session.as_deref())?;
    let w = Graphed::of(session, &g);
    let page = paging::page(
        w.ids(only.as_deref()),
        |id| id,
        args.cursor.as_deref(),
        args.limit,
    );
    Ok(paging::Page {
        items: page.items.iter().map(|id| w.record(id)).collect(),
        total: page.total,
        next: page.next,
    })
}

/// A fresh table holding the page, read the way `list_panes` reads its own:
/// the last snapshot says which windows the page will hold, and the read
/// expands in full the sessions their panes are placed in (every link of those
/// windows) and only places every other pane (the total and the cursor need
/// every window). A last page is read whole (windows made since join it), and
/// so is a page the fresh read no longer holds in full (a window linked or
/// moved meanwhile). With the snapshot, the page when the shaped read held it.
async fn read(
    session: &Session,
    args: &Args,
) -> Result<(Arc<Snapshot>, Option<paging::Page<WindowRecord>>), RefreshError> {
    let registry = &session.broker.registry;
    let only = registry.cached().and_then(|cached| {
        let page = select(session, &cached, args).ok()?;
        page.next.as_ref()?;
        let ids = page_sessions(&cached, &page.items);
        (ids.len() < cached.session_ids().len()).then_some(ids)
    });
    let shape = Shape {
        depth: Depth::Full,
        only: only.as_deref(),
    };
    let mut held = None;
    let holds_page = |snap: &Snapshot| {
        let Ok(page) = select(session, snap, args) else {
            return true; // the answer's own select says what is wrong
        };
        let windows = window_ids(&page.items);
        let full = snap
            .panes
            .iter()
            .filter(|p| windows.contains(p.window_id.as_str()))
            .all(|p| p.depth == Depth::Full);
        if full {
            held = Some(page);
        }
        full
    };
    let snap = registry.read(&shape, holds_page).await?;
    Ok((snap, held))
}

fn window_ids(windows: &[WindowRecord]) -> HashSet<&str> {
    windows.iter().map(|w| w.id.as_str()).collect()
}

/// The sessions the panes of `windows` are placed in, visible to the agent
/// or not: a placement's fields (the link's index and whether it is the
/// session's current window) are read only in a session read in full.
fn page_sessions(snap: &Snapshot, windows: &[WindowRecord]) -> Vec<String> {
    let ids = window_ids(windows);
    session_ids(
        snap.panes
            .iter()
            .filter(|p| ids.contains(p.window_id.as_str())),
    )
}
