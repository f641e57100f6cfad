//! `list_agents` (libtmux family, read-only): the panes that run a coding-agent
//! CLI (Claude Code, Codex CLI, Gemini CLI, aider, opencode), and what each is
//! doing: `working`, `waiting_for_input`, `waiting_for_approval` (with the
//! question), `exited`, or `unknown`.
//!
//! The CLI comes from the processes on the pane's terminal (one pass over
//! `/proc`: executable and argv, never the title); the state from one guarded,
//! hook-refusing capture of the visible screen, matched against the CLI's rule
//! table (`tmux_mcp_engine::agents`), whose rows name the CLI version they
//! were checked against. No row matching is `unknown`, never a guess.
//! `wait_for_agent` shares [`survey`] and [`Agent`].

use super::ids::SessionFilter;
use super::typed::{input_of, schema_of};
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use tmux_mcp_engine::agents::{self, Cli, Found, State, Verdict};
use tmux_mcp_engine::registry::Pane;
use tmux_mcp_engine::{lines, observe};

pub const SPEC: ToolSpec = ToolSpec {
    name: "list_agents",
    family: Family::Libtmux,
    description: "Panes running a coding-agent CLI (Claude Code, Codex, Gemini, aider, opencode), each with its state.",
    details: "Finds coding-agent CLIs from the processes on each pane's terminal (executable and arguments, not the title) and reads each one's visible screen once (a guarded capture, refused while an after-capture-pane hook is set). state is working, waiting_for_input, waiting_for_approval (question holds the question shown), exited (an agent this broker saw before is gone; the pane may still be open) or unknown (no rule of the CLI's table matched: never a guess). lines are the screen lines that decided it; rule names the row and the CLI version it was checked against. Optionally only the panes of one session. Read-only; types nothing.",
    annotations: Annotations::read_only("List coding agents in panes"),
    listed: super::Listed::AtTier,
    input_schema: input_of::<Args>,
    output_schema: schema_of::<Listing>,
    run,
};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Only panes of this session.
    session: Option<SessionFilter>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Listing {
    agents: Vec<Agent>,
    /// Panes looked at.
    panes_scanned: usize,
}

// The CLIs, as results name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(super) enum CliName {
    ClaudeCode,
    Codex,
    Gemini,
    Aider,
    Opencode,
}

impl From<Cli> for CliName {
    fn from(c: Cli) -> CliName {
        match c {
            Cli::ClaudeCode => CliName::ClaudeCode,
            Cli::Codex => CliName::Codex,
            Cli::Gemini => CliName::Gemini,
            Cli::Aider => CliName::Aider,
            Cli::Opencode => CliName::Opencode,
        }
    }
}

// The states, as arguments and results name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum StateName {
    Working,
    WaitingForInput,
    WaitingForApproval,
    Exited,
    Unknown,
}

impl From<StateName> for State {
    fn from(s: StateName) -> State {
        match s {
            StateName::Working => State::Working,
            StateName::WaitingForInput => State::WaitingForInput,
            StateName::WaitingForApproval => State::WaitingForApproval,
            StateName::Exited => State::Exited,
            StateName::Unknown => State::Unknown,
        }
    }
}

impl From<State> for StateName {
    fn from(s: State) -> StateName {
        match s {
            State::Working => StateName::Working,
            State::WaitingForInput => StateName::WaitingForInput,
            State::WaitingForApproval => StateName::WaitingForApproval,
            State::Exited => StateName::Exited,
            State::Unknown => StateName::Unknown,
        }
    }
}

/// One agent pane.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Agent {
    #[schemars(regex(pattern = super::ids::PANE_ID))]
    pub pane_id: String,
    pub cli: CliName,
    /// From the CLI's package, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub pid: u32,
    /// In its terminal's foreground process group.
    pub foreground: bool,
    pub state: StateName,
    /// The question shown, when waiting for approval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The screen lines that decided the state.
    pub lines: Vec<String>,
    /// The rule that decided it and the CLI version it was checked against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The same, in the engine's terms (for the text line and comparisons).
    #[serde(skip)]
    pub of: (Cli, State),
}

impl Agent {
    fn new(pane_id: &str, found: &Found, state: State) -> Agent {
        Agent {
            pane_id: pane_id.to_string(),
            cli: found.cli.into(),
            version: found.version.clone(),
            pid: found.pid,
            foreground: found.foreground,
            state: state.into(),
            question: None,
            lines: Vec::new(),
            rule: None,
            note: None,
            of: (found.cli, state),
        }
    }

    /// An agent whose process is gone.
    pub fn exited(pane_id: &str, found: &Found, why: &str) -> Agent {
        Agent {
            foreground: false,
            note: Some(why.to_string()),
            ..Agent::new(pane_id, found, State::Exited)
        }
    }

    /// An agent and what its screen (visible lines, top first) shows, with
    /// whether its terminal was written to within `agents::QUIET` when
    /// known (some rows need it).
    pub fn judged(pane_id: &str, found: &Found, screen: &[String], writing: Option<bool>) -> Agent {
        if !found.foreground {
            return Agent {
                note: Some(
                    "The agent is not in its terminal's foreground (suspended, or another program took the terminal): the screen is not its."
                        .into(),
                ),
                ..Agent::new(pane_id, found, State::Unknown)
            };
        }
        let Verdict {
            state,
            rule,
            lines,
            question,
        } = agents::classify(found.cli, screen, writing);
        let note = match (rule, &found.version) {
            (None, _) => Some(format!(
                "No rule of {}'s table matches the screen.",
                found.cli.name()
            )),
            (Some(r), Some(v)) if *v != r.checked => Some(format!(
                "The rule was checked against {} {}; this is {v}.",
                found.cli.name(),
                r.checked
            )),
            _ => None,
        };
        Agent {
            question,
            lines,
            rule: rule.map(|r| format!("{} {}: {}", r.cli.name(), r.checked, r.what)),
            note,
            ..Agent::new(pane_id, found, state)
        }
    }

    /// One line for clients that show only text.
    pub fn line(&self) -> String {
        let (cli, state) = self.of;
        let mut s = format!(
            "{} {}{} (pid {}): {}",
            self.pane_id,
            cli.name(),
            self.version
                .as_deref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default(),
            self.pid,
            state.name(),
        );
        if let Some(q) = &self.question {
            s.push_str(&format!(" — {q}"));
        } else if let Some(l) = self.lines.last() {
            s.push_str(&format!(" — {}", l.trim()));
        }
        if let Some(n) = &self.note {
            s.push_str(&format!(" ({n})"));
        }
        s
    }
}

/// The agent CLI on each of `panes`' terminals, from one pass over `/proc`
/// (off the runtime thread: it reads a file per process).
pub(super) async fn find(panes: &[&Pane]) -> Result<HashMap<String, Found>, String> {
    let ttys: Vec<(String, String)> = panes
        .iter()
        .filter(|p| !p.dead && !p.tty.is_empty())
        .map(|p| (p.id.clone(), p.tty.clone()))
        .collect();
    tokio::task::spawn_blocking(move || {
        agents::find_in_terminals(ttys.iter().map(|(p, t)| (p.as_str(), t.as_str())))
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("cannot read /proc: {e}"))
}

/// The visible screen of `pane` as lines (a guarded capture), or why not.
pub(super) async fn screen(session: &Session, pane: &Pane) -> Result<Vec<String>, String> {
    observe::capture_range(&session.broker, pane.clone(), None, None, false)
        .await
        .map(|(_, out)| lines::decode_lines(&out))
        .map_err(|e| e.why().to_string())
}

/// Whether programs keep writing to `pane`'s terminal: two bursts of writes
/// within `agents::QUIET` (an answer streaming in); one (a title update, a
/// last redraw) or none is quiet. Writes only (inotify), not the safety net's
/// readings. `None` when it cannot be watched.
async fn writing(pane: &Pane) -> Option<bool> {
    let watch = tmux_mcp_engine::tty_watch::TtyWatch::new(&pane.tty).ok()?;
    let until = tokio::time::Instant::now() + agents::QUIET;
    for _ in 0..2 {
        match tokio::time::timeout_at(until, watch.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return None,
            Err(_) => return Some(false),
        }
    }
    Some(true)
}

/// One found agent judged: its terminal's activity when its table needs it
/// (watched first, so the screen read after it is the one judged), then its
/// screen.
async fn judge(session: &Session, pane: &Pane, found: &Found) -> Agent {
    let activity = match agents::needs_activity(found.cli) {
        true => writing(pane).await,
        false => None,
    };
    match screen(session, pane).await {
        Ok(rows) => Agent::judged(&pane.id, found, &rows, activity),
        Err(why) => Agent {
            note: Some(format!("Could not read the screen: {why}")),
            ..Agent::new(&pane.id, found, State::Unknown)
        },
    }
}

/// The agents on `panes` (this session may see them all), in their order:
/// found now and judged from the screen (all at once: a table that needs the
/// terminal's activity watches it for up to `agents::QUIET`), or seen before
/// and gone (exited).
/// `all` are the ids of every pane of the server, for the broker's memory.
pub(super) async fn survey(
    session: &Session,
    panes: &[&Pane],
    all: &HashSet<&str>,
) -> Result<Vec<Agent>, String> {
    let found = find(panes).await?;
    let gone = session
        .broker
        .agents
        .update(panes.iter().map(|p| p.id.as_str()), &found, all);
    let agents = panes.iter().filter_map(|pane| {
        // Running now (judge it), or gone since it was seen.
        let (f, running) = match found.get(&pane.id) {
            Some(f) => (f, true),
            None => (gone.get(&pane.id)?, false),
        };
        Some(async move {
            if running {
                return judge(session, pane, f).await;
            }
            let why = if pane.dead {
                "The pane is dead (its program exited)."
            } else {
                "The agent's process is gone; the pane is open."
            };
            Agent::exited(&pane.id, f, why)
        })
    });
    Ok(futures::future::join_all(agents).await)
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
    let visible: Vec<_> = session.visible(&snap).collect();
    let wanted = args.session.as_deref();
    let panes: Vec<&Pane> = visible
        .iter()
        .map(|p| p.as_ref())
        .filter(|p| {
            wanted.is_none_or(|w| {
                p.placements
                    .iter()
                    .any(|pl| pl.session_id == w || pl.session_name == w)
            })
        })
        .collect();
    if let Some(w) = wanted {
        if panes.is_empty() {
            return ToolOutput::libtmux_error(format!("Argument session: no session with id or name {w:?} is visible. Call list_agents without it for every pane."));
        }
    }
    let all: HashSet<&str> = snap.panes.iter().map(|p| p.id.as_str()).collect();
    let agents = match survey(session, &panes, &all).await {
        Ok(a) => a,
        Err(why) => {
            return ToolOutput::libtmux_error(format!(
                "Could not look for agents: {why}. Nothing was sent to tmux."
            ))
        }
    };
    let mut text = format!("{} agent(s) in {} pane(s)", agents.len(), panes.len());
    for a in &agents {
        text.push('\n');
        text.push_str(&a.line());
    }
    let listing = Listing {
        agents,
        panes_scanned: panes.len(),
    };
    ToolOutput::typed(&listing, text)
}
