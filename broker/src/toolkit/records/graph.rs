//! The record graph: what a session may see of the pane table, as the
//! session, window and pane records the listing tools publish and the
//! arranging tools read back.
//!
//! [`Graph`] holds every record of each entity of the criteria catalog
//! (`criteria::ENTITIES`) and their relations (`criteria::RELATIONS`),
//! built from the panes a session may see, already cut to its scope, so
//! relations never reach outside it either; `tmux_snapshot`'s filters run
//! on it ([`Graph::select`]). The typed records below are read from it.

use crate::session::Session;
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::records::criteria::{Entity, Filter, Related, Relation, RELATIONS};
use crate::toolkit::target::references::{self, Kind, SessionRef, WindowRef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tmux_mcp_core::wire::ProcessStatus;
use tmux_mcp_engine::registry::{numeric_id, Pane, Snapshot};

// The graph.

/// One record: its wire fields and its entity reference.
#[derive(Debug, Clone)]
pub struct Record {
    pub fields: Value,
    pub reference: Value,
}

/// Every record the session may see, in the documented order per entity, and
/// for each relation the related records of each record (indexes).
#[derive(Debug, Default)]
pub struct Graph {
    records: HashMap<Entity, Vec<Record>>,
    /// `links[relation][record]` = indexes into the target entity's records,
    /// worked out on the first filter that follows a relation: the listings
    /// that only read records (list_sessions, list_windows) never pay for it.
    links: std::sync::OnceLock<Vec<Vec<Vec<usize>>>>,
}

impl Graph {
    /// The graph of `panes` (each already cut to the session's scope) and the
    /// attached `clients` the session may see.
    pub fn build<'a>(
        panes: impl IntoIterator<Item = &'a Pane>,
        clients: &[tmux_mcp_engine::clients::Client],
        generation: &str,
    ) -> Graph {
        let reference = |kind: Kind, id: &str| references::reference(kind, id, generation);
        let mut sessions: BTreeMap<u64, Record> = BTreeMap::new();
        let mut windows: BTreeMap<u64, Record> = BTreeMap::new();
        let mut pane_recs: BTreeMap<u64, Record> = BTreeMap::new();
        let mut wlinks: BTreeMap<(u64, i64, u64), Record> = BTreeMap::new();
        for p in panes {
            let fields = json!({
                "id": p.id, "windowId": p.window_id, "index": p.index, "pid": p.pid, "currentCommand": p.command,
                "currentPath": if p.cwd.is_empty() { Value::Null } else { json!(p.cwd) }, "title": p.title,
                "active": p.active, "dead": p.dead, "deadStatus": p.dead_status, "width": p.width, "height": p.height,
            });
            pane_recs.insert(
                numeric_id(&p.id),
                Record {
                    fields,
                    reference: reference(Kind::Pane, &p.id),
                },
            );
            windows.entry(numeric_id(&p.window_id)).or_insert_with(|| Record {
                fields: json!({ "id": p.window_id, "name": p.window_name, "width": p.window_width, "height": p.window_height, "paneCount": p.window_panes, "layout": p.window_layout }),
                reference: reference(Kind::Window, &p.window_id),
            });
            for pl in &p.placements {
                sessions.entry(numeric_id(&pl.session_id)).or_insert_with(|| Record {
                    fields: json!({ "id": pl.session_id, "name": pl.session_name, "created": pl.session_created, "attached": pl.session_attached, "windowCount": pl.session_windows }),
                    reference: reference(Kind::Session, &pl.session_id),
                });
                wlinks.entry((numeric_id(&pl.session_id), pl.window_index, numeric_id(&p.window_id))).or_insert_with(|| {
                    let mut r = reference(Kind::Window, &p.window_id);
                    r["kind"] = json!("window_link");
                    r["session_id"] = json!(pl.session_id);
                    r["index"] = json!(pl.window_index);
                    Record { fields: json!({ "sessionId": pl.session_id, "windowId": p.window_id, "index": pl.window_index, "active": pl.window_active }), reference: r }
                });
            }
        }
        let mut g = Graph::default();
        g.records
            .insert(Entity::Session, sessions.into_values().collect());
        g.records
            .insert(Entity::Window, windows.into_values().collect());
        g.records
            .insert(Entity::Pane, pane_recs.into_values().collect());
        g.records
            .insert(Entity::WindowLink, wlinks.into_values().collect());
        // Already in the reference order (pid, created, name); clients have no
        // entity reference.
        let client_recs = clients.iter().map(|c| Record {
            fields: json!({
                "name": c.name, "pid": c.pid, "created": c.created,
                "tty": if c.tty.is_empty() { Value::Null } else { json!(c.tty) },
                "sessionId": if c.session_id.is_empty() { Value::Null } else { json!(c.session_id) },
                "width": c.width.unwrap_or(0), "height": c.height,
                "readOnly": c.readonly, "utf8": c.utf8, "controlMode": c.control_mode,
            }),
            reference: Value::Null,
        });
        g.records.insert(Entity::Client, client_recs.collect());
        g
    }

    fn links(&self) -> &[Vec<Vec<usize>>] {
        self.links
            .get_or_init(|| RELATIONS.iter().map(|rel| self.relate(rel)).collect())
    }

    pub fn records(&self, e: Entity) -> &[Record] {
        self.records.get(&e).map_or(&[], Vec::as_slice)
    }

    fn index_by(&self, e: Entity, key: &str) -> HashMap<String, usize> {
        self.records(e)
            .iter()
            .enumerate()
            .map(|(i, r)| (r.fields[key].as_str().unwrap_or_default().to_string(), i))
            .collect()
    }

    /// For each record of `rel.from`, its related records of `rel.to`.
    fn relate(&self, rel: &Relation) -> Vec<Vec<usize>> {
        let n = self.records(rel.from).len();
        let mut out = vec![Vec::new(); n];
        let links = self.records(Entity::WindowLink);
        let sessions = self.index_by(Entity::Session, "id");
        let windows = self.index_by(Entity::Window, "id");
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let mut push = |from: Option<&usize>, to: usize| {
            if let Some(&f) = from {
                if !out[f].contains(&to) {
                    out[f].push(to);
                }
            }
        };
        match (rel.from, rel.name) {
            (Entity::Session, "windowLinks") => links
                .iter()
                .enumerate()
                .for_each(|(i, l)| push(sessions.get(&s(&l.fields["sessionId"])), i)),
            (Entity::Session, "windows") => links.iter().for_each(|l| {
                if let Some(&w) = windows.get(&s(&l.fields["windowId"])) {
                    push(sessions.get(&s(&l.fields["sessionId"])), w)
                }
            }),
            (Entity::Session, "currentWindow") => links
                .iter()
                .filter(|l| l.fields["active"] == true)
                .for_each(|l| {
                    if let Some(&w) = windows.get(&s(&l.fields["windowId"])) {
                        push(sessions.get(&s(&l.fields["sessionId"])), w)
                    }
                }),
            (Entity::Session, "panes") => {
                let panes_of_window = self.panes_by_window();
                for l in links {
                    for &p in panes_of_window
                        .get(&s(&l.fields["windowId"]))
                        .into_iter()
                        .flatten()
                    {
                        push(sessions.get(&s(&l.fields["sessionId"])), p);
                    }
                }
            }
            (Entity::Window, "panes") => {
                for (i, p) in self.records(Entity::Pane).iter().enumerate() {
                    push(windows.get(&s(&p.fields["windowId"])), i);
                }
            }
            (Entity::Window, "activePane") => {
                for (i, p) in self
                    .records(Entity::Pane)
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.fields["active"] == true)
                {
                    push(windows.get(&s(&p.fields["windowId"])), i);
                }
            }
            (Entity::Window, "windowLinks") => links
                .iter()
                .enumerate()
                .for_each(|(i, l)| push(windows.get(&s(&l.fields["windowId"])), i)),
            (Entity::Pane, "window") => {
                for (i, p) in self.records(Entity::Pane).iter().enumerate() {
                    if let Some(&w) = windows.get(&s(&p.fields["windowId"])) {
                        out[i].push(w);
                    }
                }
            }
            (Entity::WindowLink, "session") => {
                for (i, l) in links.iter().enumerate() {
                    out[i].extend(sessions.get(&s(&l.fields["sessionId"])));
                }
            }
            (Entity::WindowLink, "window") => {
                for (i, l) in links.iter().enumerate() {
                    out[i].extend(windows.get(&s(&l.fields["windowId"])));
                }
            }
            (Entity::Client, "session") => {
                for (i, c) in self.records(Entity::Client).iter().enumerate() {
                    out[i].extend(sessions.get(&s(&c.fields["sessionId"])));
                }
            }
            _ => {}
        }
        out
    }

    fn panes_by_window(&self) -> HashMap<String, Vec<usize>> {
        let mut m: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, p) in self.records(Entity::Pane).iter().enumerate() {
            m.entry(
                p.fields["windowId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
            .or_default()
            .push(i);
        }
        m
    }

    /// The records of `entity` that `filter` selects, in order.
    pub fn select(&self, entity: Entity, filter: &Filter) -> Vec<&Record> {
        self.records(entity)
            .iter()
            .enumerate()
            .filter(|(i, _)| filter.matches(self, entity, *i))
            .map(|(_, r)| r)
            .collect()
    }
}

impl Related for Graph {
    fn fields(&self, e: Entity, i: usize) -> &Value {
        &self.records(e)[i].fields
    }

    fn related(&self, relation: usize, i: usize) -> &[usize] {
        &self.links()[relation][i]
    }
}

// Sessions.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRecord {
    #[serde(rename = "ref")]
    reference: SessionRef,
    #[schemars(regex(pattern = crate::toolkit::target::ids::SESSION_ID))]
    pub id: String,
    pub name: String,
    /// Seconds since the epoch.
    created: u64,
    /// Clients attached to the session.
    pub attached: u64,
    pub window_count: u64,
    windows: Vec<SessionWindow>,
    pub holds_caller_pane: bool,
}

/// A window as linked into this session.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SessionWindow {
    #[schemars(regex(pattern = crate::toolkit::target::ids::WINDOW_ID))]
    window_id: String,
    index: i64,
    active: bool,
}

/// The session fields of a graph record ([`Graph::build`]).
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
pub struct LinkFields {
    pub session_id: String,
    pub window_id: String,
    pub index: i64,
    pub active: bool,
}

pub fn fields<T: serde::de::DeserializeOwned>(r: &Record) -> T {
    serde_json::from_value(r.fields.clone()).expect("graph records carry these fields")
}

/// A fresh snapshot and the record graph of what `session` may see.
pub async fn fresh(session: &Session) -> Result<(Arc<Snapshot>, Graph), ToolOutput> {
    let snap = session.broker.registry.refresh().await.map_err(|e| {
        ToolOutput::libtmux_error(format!(
            "Could not read the session table from tmux: {e}. Nothing was changed."
        ))
    })?;
    let g = of(session, &snap);
    Ok((snap, g))
}

/// The record graph of what `session` may see of `snap`.
pub fn of(session: &Session, snap: &Snapshot) -> Graph {
    let visible: Vec<_> = session.visible(snap).collect();
    Graph::build(
        visible.iter().map(|p| p.as_ref()),
        &[],
        session.generation(),
    )
}

/// The id of the visible session `wanted` names: by id first, then by name
/// (SPEC B.4). The error names `field` and lists the visible sessions.
pub fn resolve_session(g: &Graph, field: &str, wanted: &str) -> Result<String, ToolOutput> {
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

/// The id of the session a `session` filter argument names, if given
/// ([`resolve_session`] under the argument's name).
pub fn session_filter(g: &Graph, wanted: Option<&str>) -> Result<Option<String>, ToolOutput> {
    wanted.map(|s| resolve_session(g, "session", s)).transpose()
}

/// The session records of `g`, in numeric id order.
pub fn session_records(session: &Session, g: &Graph) -> Vec<SessionRecord> {
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

// Windows.

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WindowRecord {
    #[serde(rename = "ref")]
    pub reference: WindowRef,
    #[schemars(regex(pattern = crate::toolkit::target::ids::WINDOW_ID))]
    pub id: String,
    pub name: String,
    pub width: u32,
    pub height: u32,
    pub pane_count: u64,
    pub layout: String,
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    pub active_pane_id: Option<String>,
    pub links: Vec<WindowLink>,
}

/// Where the window is linked: a session (visible to this agent) and index.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WindowLink {
    #[schemars(regex(pattern = crate::toolkit::target::ids::SESSION_ID))]
    pub session_id: String,
    pub session_name: String,
    pub index: i64,
    /// Whether this is the session's current window.
    pub active: bool,
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

/// The windows of a graph and what their records need, indexed once: every
/// lookup is a map, not a scan of every pane and link (on 1,000 windows a scan
/// per window cost milliseconds, paid on every page).
pub struct Windows<'g> {
    session: &'g Session,
    /// In numeric id order.
    windows: &'g [Record],
    by_id: HashMap<&'g str, &'g Record>,
    /// Window id → its links, in the graph's (session, index) order.
    links: HashMap<&'g str, Vec<&'g Record>>,
    /// Window id → its active pane (the first, in pane order).
    active: HashMap<&'g str, &'g str>,
    /// Session id → name.
    names: HashMap<&'g str, &'g str>,
}

/// A string field of a graph record.
fn text<'r>(r: &'r Record, key: &str) -> &'r str {
    r.fields[key].as_str().unwrap_or_default()
}

impl<'g> Windows<'g> {
    pub fn of(session: &'g Session, g: &'g Graph) -> Windows<'g> {
        let windows = g.records(Entity::Window);
        let mut links: HashMap<&str, Vec<&Record>> = HashMap::new();
        for l in g.records(Entity::WindowLink) {
            links.entry(text(l, "windowId")).or_default().push(l);
        }
        let mut active = HashMap::new();
        for p in g.records(Entity::Pane) {
            if p.fields["active"] == serde_json::Value::Bool(true) {
                active.entry(text(p, "windowId")).or_insert(text(p, "id"));
            }
        }
        Windows {
            session,
            windows,
            by_id: windows.iter().map(|w| (text(w, "id"), w)).collect(),
            links,
            active,
            names: g
                .records(Entity::Session)
                .iter()
                .map(|s| (text(s, "id"), text(s, "name")))
                .collect(),
        }
    }

    /// The ids of the windows linked into session `only` (every window
    /// when `None`), in numeric id order.
    pub fn ids(&self, only: Option<&str>) -> Vec<&'g str> {
        self.windows
            .iter()
            .map(|w| text(w, "id"))
            .filter(|id| {
                only.is_none_or(|s| {
                    self.links
                        .get(id)
                        .is_some_and(|ls| ls.iter().any(|l| text(l, "sessionId") == s))
                })
            })
            .collect()
    }

    /// The record of window `id` (one of [`ids`](Self::ids)).
    pub fn record(&self, id: &str) -> WindowRecord {
        let w: WindowFields = fields(self.by_id[id]);
        let links = self.links.get(id).map_or(&[][..], Vec::as_slice);
        WindowRecord {
            reference: WindowRef::new(&w.id, self.session.generation()),
            active_pane_id: self.active.get(id).map(|p| p.to_string()),
            links: links
                .iter()
                .map(|l| {
                    let l: LinkFields = fields(l);
                    WindowLink {
                        session_name: self
                            .names
                            .get(l.session_id.as_str())
                            .map(|n| n.to_string())
                            .unwrap_or_default(),
                        session_id: l.session_id,
                        index: l.index,
                        active: l.active,
                    }
                })
                .collect(),
            id: w.id,
            name: w.name,
            width: w.width,
            height: w.height,
            pane_count: w.pane_count,
            layout: w.layout,
        }
    }
}

/// The window records of `g` (numeric id order), only those linked into
/// session `only` when given.
pub fn window_records(session: &Session, g: &Graph, only: Option<&str>) -> Vec<WindowRecord> {
    let w = Windows::of(session, g);
    w.ids(only).into_iter().map(|id| w.record(id)).collect()
}

// Panes.

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PaneRecord {
    #[serde(rename = "ref")]
    reference: references::PaneRef,
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    id: String,
    index: i64,
    #[schemars(regex(pattern = crate::toolkit::target::ids::WINDOW_ID))]
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
    /// Its enrolled shell (`tmux-mcp shell-init`); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    shell: Option<Box<crate::toolkit::shell::enrolled::ShellRecord>>,
}

impl PaneRecord {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn is_dead(&self) -> bool {
        self.dead
    }

    pub fn has_dead_status(&self) -> bool {
        self.dead_status.is_some()
    }
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProcessState {
    Running,
    Exited,
    Dead,
    Untracked,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlacementRecord {
    #[schemars(regex(pattern = crate::toolkit::target::ids::SESSION_ID))]
    session_id: String,
    session_name: String,
    index: i64,
    window_active: bool,
}

pub fn process_state(st: &ProcessStatus) -> ProcessState {
    match st.state.as_str() {
        "running" => ProcessState::Running,
        "exited" => ProcessState::Exited,
        "dead" => ProcessState::Dead,
        _ => ProcessState::Untracked,
    }
}

pub fn pane_record(session: &Session, p: &Pane) -> PaneRecord {
    let st = p.process_status();
    let process_state = process_state(&st);
    PaneRecord {
        reference: references::PaneRef::new(&p.id, session.generation()),
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
        shell: crate::toolkit::shell::enrolled::shell(session, &p.id).map(Box::new),
    }
}

// Serialization helpers every record shares.

/// Skips a scope that is the default (`server`) when serializing.
pub fn is_server_scope(s: &tmux_mcp_core::wire::Scope) -> bool {
    *s == tmux_mcp_core::wire::Scope::Server
}

/// What an absent scope means (its schema's default).
pub fn server_scope() -> tmux_mcp_core::wire::Scope {
    tmux_mcp_core::wire::Scope::Server
}

/// Skips a zero count when serializing.
pub fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `WIDTHxHEIGHT`.
pub fn size(width: u32, height: u32) -> String {
    format!("{width}x{height}")
}
