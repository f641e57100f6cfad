//! `list_sessions` (libtmux family): every tmux session this agent may see,
//! with its attached-client count and window count (lean by default; with
//! `detail: full` its reference and the windows linked into it too), and a
//! summary an agent can read before anything else: how
//! many panes each session has, which are busy (their foreground program is
//! not a shell) and which are dead, with totals over the server. Derived from
//! the registry snapshot through the record graph of `records::graph` (one
//! derivation of sessions and windows from placements), so a session-scoped
//! agent sees only its own sessions.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::records::detail::{Lean, Mark, Record};
use crate::toolkit::records::graph::{self, fresh, session_records as records, SessionRecord};
use crate::toolkit::records::lean::{Full, LeanSession};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::shell::shells;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashMap;
use tmux_mcp_engine::clients;
use tmux_mcp_engine::registry::{Pane, Placement};

pub const SPEC: ToolSpec = ToolSpec::new(
    "list_sessions",
    Annotations::read_only("List sessions"),
    input_of::<Args>,
    schema_of::<Listing>,
    |c| c.run(call),
)
.description("List sessions: busy, dead and attended panes, windows.")
.details("List the tmux sessions this agent may see, each as {id, name, windowCount, paneCount} and what is not at its default: attached (clients attached), holdsCallerPane (the caller's own pane is in it), busyPanes (the ids of live panes whose foreground program is not a shell), deadPanes and attendedPanes (those a person sees through this session: its current window, only the zoomed pane of a zoomed one, on a client that is not in control mode; before tmux 3.5, which cannot tell a control-mode client hook-free, on any attached client). At the top, the server's generation, and paneCount, busyCount, deadCount and attendedCount over the server, each pane counted once (a window linked into two sessions is in both sessions' lists); a count of 0 is left out. `detail: full` gives the whole records: reference {kind, id, generation}, creation time, the windows linked in (index, active), every list. Read-only; fires no tmux hook.")
.sample(|_| json!({}))
.ids_in_text()
.across_servers();

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    detail: Option<Full>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Listing {
    generation: String,
    /// Absent: server (every session of the server); session: only the
    /// sessions of the caller's pane.
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
    /// Over every visible pane, each counted once.
    #[serde(flatten)]
    totals: Totals,
    sessions: Vec<Record<ListedSession, LeanListedSession>>,
}

/// A session as listed by default: its lean record and its panes, the lists
/// left out when empty.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LeanListedSession {
    #[serde(flatten)]
    session: LeanSession,
    pane_count: u64,
    /// Live panes whose foreground program is not a shell; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    busy_panes: Vec<String>,
    /// Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    dead_panes: Vec<String>,
    /// Shown to a person on a client attached to this session (B.2.2);
    /// absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    attended_panes: Vec<String>,
}

/// A whole session has `ref`.
impl Lean for LeanListedSession {
    const MARK: Mark = Mark::FullHas("ref");
}

impl ListedSession {
    fn lean(self) -> LeanListedSession {
        LeanListedSession {
            session: self.session.lean(),
            pane_count: self.panes.pane_count,
            busy_panes: self.panes.busy_panes,
            dead_panes: self.panes.dead_panes,
            attended_panes: self.panes.attended_panes,
        }
    }
}

/// A session with the summary of its panes.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ListedSession {
    #[serde(flatten)]
    session: SessionRecord,
    #[serde(flatten)]
    panes: SessionPanes,
}

/// A session's panes: how many, which are busy or dead, and which a person
/// sees through this session (every id: a few bytes per pane, against a
/// listing's hundreds).
#[derive(Serialize, JsonSchema, Default, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
struct SessionPanes {
    pane_count: u64,
    busy_panes: Vec<String>,
    dead_panes: Vec<String>,
    /// Shown to a person on a client attached to this session (B.2.2).
    attended_panes: Vec<String>,
}

/// The server's panes, each counted once (a window linked into two
/// sessions is in both sessions' lists).
#[derive(Serialize, JsonSchema, Default, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Totals {
    pane_count: u64,
    /// Absent: 0.
    #[serde(default, skip_serializing_if = "graph::is_zero")]
    busy_count: u64,
    /// Absent: 0.
    #[serde(default, skip_serializing_if = "graph::is_zero")]
    dead_count: u64,
    /// Absent: 0.
    #[serde(default, skip_serializing_if = "graph::is_zero")]
    attended_count: u64,
}

/// What a pane counts as.
#[derive(Clone, Copy, PartialEq)]
enum State {
    Idle,
    Busy,
    Dead,
}

fn state(p: &Pane) -> State {
    if p.dead {
        State::Dead
    } else if shells::is_shell(&p.command) {
        State::Idle
    } else {
        State::Busy
    }
}

/// The totals over `panes`, and the panes of each session they are in.
/// `watched` says whether a person's client is attached to a placement's
/// session.
fn count<'a>(
    panes: impl Iterator<Item = &'a Pane>,
    watched: impl Fn(&Placement) -> bool,
) -> (Totals, HashMap<String, SessionPanes>) {
    let mut totals = Totals::default();
    let mut per: HashMap<String, SessionPanes> = HashMap::new();
    for p in panes {
        let st = state(p);
        totals.pane_count += 1;
        totals.busy_count += u64::from(st == State::Busy);
        totals.dead_count += u64::from(st == State::Dead);
        totals.attended_count += u64::from(clients::shown(p, &watched));
        // Placements are in session order: a session's come together.
        let mut last: Option<&str> = None;
        for pl in &p.placements {
            if last == Some(pl.session_id.as_str()) {
                continue;
            }
            last = Some(&pl.session_id);
            let s = per.entry(pl.session_id.clone()).or_default();
            s.pane_count += 1;
            match st {
                State::Busy => s.busy_panes.push(p.id.clone()),
                State::Dead => s.dead_panes.push(p.id.clone()),
                State::Idle => {}
            }
            // Seen through this session: the rule with only its placements.
            let this = |x: &Placement| x.session_id == pl.session_id && watched(x);
            if clients::shown(p, this) {
                s.attended_panes.push(p.id.clone());
            }
        }
    }
    (totals, per)
}

/// Which sessions a person is attached to, as `count` asks it: from tmux 3.5
/// the clients themselves (those not in control mode); before, or when they
/// cannot be read, any session with an attached client (the table cannot
/// tell a control-mode client from a terminal), as `snapshot_pane` does.
/// Only sessions this agent may see count.
async fn watched<'s>(session: &'s Session, version: &str) -> impl Fn(&Placement) -> bool + 's {
    let exact = match clients::read(&session.broker.registry, version).await {
        Ok(all) => Some(clients::watched_sessions(&all)),
        Err(_) => None,
    };
    move |pl: &Placement| {
        session.sees_session(&pl.session_id)
            && match &exact {
                Some(ids) => ids.contains(&pl.session_id),
                None => pl.session_attached > 0,
            }
    }
}

impl Totals {
    /// `12 pane(s), 2 busy, 1 dead`.
    fn text(&self) -> String {
        format!(
            "{} pane(s), {} busy, {} dead, {} attended",
            self.pane_count, self.busy_count, self.dead_count, self.attended_count
        )
    }
}

impl SessionPanes {
    /// `12 pane(s), busy %3 %7, dead %9, attended %1 %3`.
    fn text(&self) -> String {
        let mut t = format!("{} pane(s)", self.pane_count);
        for (label, ids) in [
            ("busy", &self.busy_panes),
            ("dead", &self.dead_panes),
            ("attended", &self.attended_panes),
        ] {
            if !ids.is_empty() {
                t.push_str(&format!(", {label} {}", ids.join(" ")));
            }
        }
        t
    }
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let (snap, g) = fresh(session).await?;
    let visible: Vec<_> = session.visible(&snap).collect();
    let watched = watched(session, &snap.server.version).await;
    let (totals, mut per) = count(visible.iter().map(|p| p.as_ref()), watched);
    let sessions: Vec<ListedSession> = records(session, &g)
        .into_iter()
        .map(|s| ListedSession {
            panes: per.remove(s.id.as_str()).unwrap_or_default(),
            session: s,
        })
        .collect();
    let mut lines = vec![format!(
        "{} session(s), {}; generation {}",
        sessions.len(),
        totals.text(),
        session.generation()
    )];
    for l in &sessions {
        let s = &l.session;
        lines.push(format!(
            "{} {} {} window(s), {} attached{}: {}",
            s.id,
            s.name,
            s.window_count,
            s.attached,
            if s.holds_caller_pane { " [caller]" } else { "" },
            l.panes.text()
        ));
    }
    let listing = Listing {
        generation: session.generation().to_string(),
        scope: session.scope,
        caller_pane_id: session.caller_pane.clone(),
        totals,
        sessions: match args.detail {
            Some(Full::Full) => sessions.into_iter().map(Record::Full).collect(),
            None => sessions
                .into_iter()
                .map(|s| Record::Lean(s.lean()))
                .collect(),
        },
    };
    Ok(ToolOutput::typed(&listing, lines.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tmux_mcp_engine::registry::Placement;

    fn pane(id: &str, command: &str, dead: bool, sessions: &[&str]) -> Pane {
        let mut p = Pane::sample(id, "@0");
        p.command = command.into();
        p.dead = dead;
        p.placements = sessions
            .iter()
            .map(|s| Placement {
                session_id: (*s).into(),
                session_name: (*s).into(),
                window_index: 0,
                window_active: true,
                session_created: 0,
                session_attached: 0,
                session_windows: 1,
            })
            .collect();
        p
    }

    #[test]
    fn busy_is_a_live_non_shell_dead_is_dead_and_a_linked_pane_counts_once_in_the_totals() {
        let panes = [
            pane("%0", "bash", false, &["$0"]),
            pane("%1", "vim", false, &["$0", "$1"]),
            pane("%2", "-zsh", false, &["$1"]),
            pane("%3", "make", true, &["$1"]),
        ];
        let (totals, per) = count(panes.iter(), |_| false);
        assert_eq!(
            totals,
            Totals {
                pane_count: 4,
                busy_count: 1,
                dead_count: 1,
                attended_count: 0,
            }
        );
        assert_eq!(per["$0"].text(), "2 pane(s), busy %1");
        assert_eq!(per["$1"].text(), "3 pane(s), busy %1, dead %3");
    }

    #[test]
    fn attended_panes_are_listed_under_the_session_a_person_sees_them_through() {
        let mut hidden = pane("%2", "bash", false, &["$1"]);
        hidden.placements[0].window_active = false;
        let mut zoomed_away = pane("%3", "bash", false, &["$1"]);
        zoomed_away.window_zoomed = true;
        zoomed_away.active = false;
        let panes = [
            pane("%0", "bash", false, &["$0"]),
            pane("%1", "vim", false, &["$0", "$1"]),
            hidden,
            zoomed_away,
        ];
        let (totals, per) = count(panes.iter(), |pl| pl.session_id == "$1");
        assert_eq!(totals.attended_count, 1, "{totals:?}");
        assert!(per["$0"].attended_panes.is_empty(), "nobody is on $0");
        assert_eq!(
            per["$1"].attended_panes,
            vec!["%1".to_string()],
            "not another window, not behind a zoomed pane"
        );
        assert_eq!(
            per["$1"].text(),
            "3 pane(s), busy %1, attended %1",
            "the pane linked into $0 is seen through $1 only"
        );
    }
}
