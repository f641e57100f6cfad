//! The lean records a listing gives by default (issue 49): a pane, a
//! window, a session as the text line says it, read from the whole records
//! of the graph (`graph`), and the small helpers their serialization shares.

use super::detail::{Lean, Mark};
use super::graph::{is_zero, process_state, size, ProcessState, SessionRecord, WindowRecord};
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tmux_mcp_engine::registry::Pane;

// Lean records (issue 49): what a listing gives by default. Claude Code and
// Codex hand their model the compact JSON of a result's structured content,
// never its text, so these say what the text says in about as few bytes: the
// generation once per result (not a reference in every record), nothing at
// its default (each field's description says what its absence means), and
// the exactness fields (process generation, layout, every placement's
// fields, references) only in the full records (`detail: "full"`).

// `detail: "full"`: a listing's whole records (references, process
// generations, layouts, every placement's fields); absent, the lean ones.
// Not a doc comment, which schemars would publish as the argument's.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub enum Full {
    Full,
}

/// A pane as a listing gives it by default: where it is, what runs in it,
/// how big it is.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeanPane {
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    pub id: String,
    /// `session:window.pane`, one per session the pane is placed in.
    pub at: Vec<String>,
    /// `WIDTHxHEIGHT` in cells. Absent in a brief listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = r"^[0-9]+x[0-9]+$"))]
    pub size: Option<String>,
    pub command: String,
    pub cwd: String,
    /// Present (true) on its window's active pane; absent on the others (and
    /// in a brief listing).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub active: bool,
    /// Present (true) when tmux reports the pane dead (remain-on-exit).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dead: bool,
    /// A dead pane's exit status, when tmux knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "i32")]
    pub dead_status: Option<i32>,
    /// The pane's process when it is not running: exited, dead or untracked
    /// (its identity could not be read). Absent: running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ProcessState")]
    pub state: Option<ProcessState>,
    /// Why the process is dead or untracked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub process_note: Option<String>,
    /// Its enrolled shell (`tmux-mcp shell-init`); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "crate::toolkit::shell::enrolled::ShellRecord")]
    pub shell: Option<Box<crate::toolkit::shell::enrolled::ShellRecord>>,
}

impl Lean for LeanPane {
    const MARK: Mark = Mark::LeanHas("at");
}

/// The lean record of `p`; `brief` leaves out what a brief table read does
/// not hold (size, active) and the enrolled shell.
pub fn lean_pane(session: &Session, p: &Pane, brief: bool) -> LeanPane {
    let st = p.process_status();
    let state = process_state(&st);
    LeanPane {
        id: p.id.clone(),
        at: p
            .placements
            .iter()
            .map(|pl| format!("{}:{}.{}", pl.session_name, pl.window_index, p.index))
            .collect(),
        size: (!brief).then(|| size(p.width, p.height)),
        command: p.command.clone(),
        cwd: p.cwd.clone(),
        active: !brief && p.active,
        dead: p.dead,
        dead_status: p.dead_status,
        state: (!matches!(state, ProcessState::Running)).then_some(state),
        process_note: st.note,
        shell: if brief {
            None
        } else {
            crate::toolkit::shell::enrolled::shell(session, &p.id).map(Box::new)
        },
    }
}

/// A window as `list_windows` gives it by default.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeanWindow {
    #[schemars(regex(pattern = crate::toolkit::target::ids::WINDOW_ID))]
    pub id: String,
    pub name: String,
    /// `session:index`, one per session (visible to this agent) the window
    /// is linked into.
    pub at: Vec<String>,
    /// The sessions (by name) whose current window this is; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active_in: Vec<String>,
    /// `WIDTHxHEIGHT` in cells.
    #[schemars(regex(pattern = r"^[0-9]+x[0-9]+$"))]
    pub size: String,
    pub pane_count: u64,
}

impl Lean for LeanWindow {
    const MARK: Mark = Mark::LeanHas("at");
}

impl WindowRecord {
    pub fn lean(self) -> LeanWindow {
        LeanWindow {
            at: self
                .links
                .iter()
                .map(|l| format!("{}:{}", l.session_name, l.index))
                .collect(),
            active_in: self
                .links
                .iter()
                .filter(|l| l.active)
                .map(|l| l.session_name.clone())
                .collect(),
            size: size(self.width, self.height),
            pane_count: self.pane_count,
            id: self.id,
            name: self.name,
        }
    }
}

/// A session as `list_sessions` gives it by default.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeanSession {
    #[schemars(regex(pattern = crate::toolkit::target::ids::SESSION_ID))]
    pub id: String,
    pub name: String,
    /// Clients attached to the session; absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attached: u64,
    pub window_count: u64,
    /// Present (true) when the caller's own pane is in this session.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub holds_caller_pane: bool,
}

impl SessionRecord {
    pub fn lean(self) -> LeanSession {
        LeanSession {
            id: self.id,
            name: self.name,
            attached: self.attached,
            window_count: self.window_count,
            holds_caller_pane: self.holds_caller_pane,
        }
    }
}
