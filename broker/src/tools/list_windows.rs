//! `list_windows` (libtmux family): every tmux window this agent may see, with
//! its reference, size, layout, active pane and the sessions it is linked into
//! (cut to the agent's scope). Optionally only the windows of one session;
//! paged like `list_panes` (`paging`), and like it a page reads only the
//! sessions that hold it in full. Derived from the registry snapshot through
//! `criteria::Graph`.

use super::criteria::{Entity, Graph};
use super::entity_refs::WindowRef;
use super::ids::{SessionFilter, WindowId};
use super::list_sessions::{self, fields, LinkFields};
use super::paging::{self, PAGE_MAX};
use super::typed::{input_of, schema_of};
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Arc;
use tmux_mcp_core::feed::{Depth, Shape};
use tmux_mcp_engine::registry::{session_ids, RefreshError, Snapshot};

pub const SPEC: ToolSpec = ToolSpec {
    name: "list_windows",
    family: Family::Libtmux,
    description: "List windows: size, layout, panes, links; paged.",
    details: "List the tmux windows this agent may see, each with its stable reference {kind, id, generation}, name, size, layout, pane count, active pane and the sessions it is linked into (session id and name, index, whether it is that session's current window). Optionally only the windows of one session (id like $1, or name). Pages hold `limit` windows (default 100) in window-id order; `total` counts every window that matches and `nextCursor`, present while more remain, continues after the last window of the page (a window made or gone between pages neither repeats nor hides another). Read-only; fires no tmux hook.",
    annotations: Annotations::read_only("List windows"),
    listed: super::Listed::AtTier,
    input_schema: input_of::<Args>,
    output_schema: schema_of::<Listing>,
    run,
};

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
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Listing {
    generation: String,
    scope: tmux_mcp_core::wire::Scope,
    windows: Vec<WindowRecord>,
    /// Windows that match, on every page.
    total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = super::ids::WINDOW_ID))]
    next_cursor: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WindowRecord {
    #[serde(rename = "ref")]
    reference: WindowRef,
    #[schemars(regex(pattern = super::ids::WINDOW_ID))]
    id: String,
    name: String,
    width: u32,
    height: u32,
    pane_count: u64,
    layout: String,
    #[schemars(regex(pattern = super::ids::PANE_ID))]
    active_pane_id: Option<String>,
    links: Vec<WindowLink>,
}

/// Where the window is linked: a session (visible to this agent) and index.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WindowLink {
    #[schemars(regex(pattern = super::ids::SESSION_ID))]
    session_id: String,
    session_name: String,
    index: i64,
    /// Whether this is the session's current window.
    active: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WindowFields {
    id: String,
    name: String,
    width: u32,
    height: u32,
    pane_count: u64,
    layout: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PaneFields {
    id: String,
    window_id: String,
    active: bool,
}

#[derive(Deserialize)]
struct NameFields {
    id: String,
    name: String,
}

/// The window records of `g` (numeric id order), only those linked into
/// session `only` when given.
pub(super) fn records(session: &Session, g: &Graph, only: Option<&str>) -> Vec<WindowRecord> {
    let names: Vec<NameFields> = g.records(Entity::Session).iter().map(fields).collect();
    let links: Vec<LinkFields> = g.records(Entity::WindowLink).iter().map(fields).collect();
    let panes: Vec<PaneFields> = g.records(Entity::Pane).iter().map(fields).collect();
    g.records(Entity::Window)
        .iter()
        .map(fields::<WindowFields>)
        .filter(|w| {
            only.is_none_or(|s| {
                links
                    .iter()
                    .any(|l| l.window_id == w.id && l.session_id == s)
            })
        })
        .map(|w| WindowRecord {
            reference: WindowRef::new(&w.id, session.generation()),
            active_pane_id: panes
                .iter()
                .find(|p| p.window_id == w.id && p.active)
                .map(|p| p.id.clone()),
            links: links
                .iter()
                .filter(|l| l.window_id == w.id)
                .map(|l| WindowLink {
                    session_id: l.session_id.clone(),
                    session_name: names
                        .iter()
                        .find(|n| n.id == l.session_id)
                        .map(|n| n.name.clone())
                        .unwrap_or_default(),
                    index: l.index,
                    active: l.active,
                })
                .collect(),
            id: w.id,
            name: w.name,
            width: w.width,
            height: w.height,
            pane_count: w.pane_count,
            layout: w.layout,
        })
        .collect()
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move {
        let args = match c.parse::<Args>() {
            Ok(a) => a,
            Err(e) => return e,
        };
        let snap = match read(c.session, &args).await {
            Ok(s) => s,
            Err(e) => {
                return ToolOutput::libtmux_error(format!(
                    "Could not read the session table from tmux: {e}. Nothing was changed."
                ))
            }
        };
        let page = match select(c.session, &snap, &args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let mut lines = vec![format!(
            "{} window(s), generation {}",
            page.total,
            c.session.generation()
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
            generation: c.session.generation().to_string(),
            scope: c.session.scope,
            windows: page.items,
            total: page.total,
            next_cursor: page.next,
        };
        ToolOutput::typed(&listing, lines.join("\n"))
    })
}

/// The page `args` ask for among the windows of `snap` this session may see.
fn select(
    session: &Session,
    snap: &Snapshot,
    args: &Args,
) -> Result<paging::Page<WindowRecord>, ToolOutput> {
    let g = list_sessions::graph_of(session, snap);
    let only = args
        .session
        .as_deref()
        .map(|s| list_sessions::resolve_session(&g, "session", s))
        .transpose()?;
    let all = records(session, &g, only.as_deref());
    Ok(paging::page(
        all,
        |w| &w.id,
        args.cursor.as_deref(),
        args.limit,
    ))
}

/// A fresh table holding the page, read the way `list_panes` reads its own:
/// the last snapshot says which windows the page will hold, and the read
/// expands in full the sessions their panes are placed in (every link of those
/// windows) and only places every other pane (the total and the cursor need
/// every window). A last page is read whole (windows made since join it), and
/// so is a page the fresh read no longer holds in full (a window linked or
/// moved meanwhile).
async fn read(session: &Session, args: &Args) -> Result<Arc<Snapshot>, RefreshError> {
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
    let holds_page = |snap: &Snapshot| {
        select(session, snap, args).map_or(true, |page| {
            let windows = window_ids(&page.items);
            snap.panes
                .iter()
                .filter(|p| windows.contains(p.window_id.as_str()))
                .all(|p| p.depth == Depth::Full)
        })
    };
    registry.read(&shape, holds_page).await
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

impl WindowRecord {
    pub(super) fn id(&self) -> &str {
        &self.id
    }
}
