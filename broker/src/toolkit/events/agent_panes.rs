//! Coding agents in panes, as the agent tools publish and watch them: the
//! CLI on a pane's terminal (one pass over the process table, never the
//! title) and its state from one guarded capture of the screen, matched
//! against the CLI's rule table (`tmux_mcp_engine::agents`); and the wait on
//! an agent's pane that `wait_for_agent` and `send_prompt` share.
//!
//! A survey judges all agents at once. A CLI whose table needs the
//! terminal's activity has its terminal watched for up to `agents::QUIET`
//! (1 s). A wait learns quiet from an idle event.

use crate::session::Session;
use crate::toolkit::call::spec::{Progress, ToolOutput};
use crate::toolkit::events::pane_events::{Event, Watched};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use tmux_mcp_engine::agents::{self, Cli, Found, State, Verdict};
use tmux_mcp_engine::registry::Pane;
use tmux_mcp_engine::{lines, observe};

// The CLIs, as results name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CliName {
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
pub enum StateName {
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
pub struct Agent {
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID))]
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
pub async fn find(panes: &[&Pane]) -> Result<HashMap<String, Found>, String> {
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
pub async fn screen(session: &Session, pane: &Pane) -> Result<Vec<String>, String> {
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
pub async fn survey(
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

/// A wait on an agent's pane: its events (`Watched`), the agent, and whether
/// the CLI's table needs the terminal's activity, which the events give: an
/// idle event after `agents::QUIET` without output says quiet. Shared with
/// `send_prompt`.
pub struct AgentWatch<'a> {
    pub ev: Watched<'a>,
    pub found: Found,
    needs: bool,
}

impl<'a> AgentWatch<'a> {
    /// A wait on `pane` (resolved by the caller) and its agent `found`.
    pub async fn start(
        session: &'a Session,
        pane: Pane,
        timeout_ms: Option<u64>,
        found: Found,
        progress: Option<Progress>,
    ) -> Result<AgentWatch<'a>, ToolOutput> {
        let needs = agents::needs_activity(found.cli);
        let idle = needs.then_some(agents::QUIET.as_secs_f64());
        let started = std::time::Instant::now();
        let ev = Watched::on(session, pane, started, timeout_ms, idle, progress).await?;
        Ok(AgentWatch { ev, found, needs })
    }

    /// Written to (by the pane's programs, not a reading of the safety net)
    /// since the wait began and within QUIET, or not for QUIET; not known
    /// before either (or when the table does not look).
    fn writing(&self) -> Option<bool> {
        if !self.needs {
            None
        } else if self.ev.ev.quiet_writes() >= agents::QUIET {
            Some(false)
        } else if self.ev.ev.writes() > 0 {
            Some(true)
        } else {
            None
        }
    }

    /// Whether the terminal's activity is known (or not needed).
    pub fn activity_known(&self) -> bool {
        !self.needs || self.writing().is_some()
    }

    /// The agent as its screen shows it now (one guarded capture), or exited.
    pub async fn judge(&mut self, session: &Session) -> Result<Agent, ToolOutput> {
        let id = self.ev.pane.id.clone();
        let exited = |f: &Found| Agent::exited(&id, f, "The agent's process exited.");
        if !self.found.alive() {
            return Ok(exited(&self.found));
        }
        let writing = self.writing();
        match self.ev.screen(session).await {
            Ok(rows) => Ok(Agent::judged(&id, &self.found, &rows, writing)),
            // Its exit may close the pane: then the read fails.
            Err(_) if !self.found.alive() => Ok(exited(&self.found)),
            Err(e) => Err(e),
        }
    }

    /// Waits for what calls for judging the screen again (`true`: output,
    /// a settle re-read, quiet), or the deadline (`false`).
    pub async fn next(&mut self) -> Result<bool, ToolOutput> {
        let quiet = self.needs.then_some(agents::QUIET);
        match self.ev.next().await {
            Ok(Event::Output) => {
                self.ev.ev.set_idle(quiet);
                Ok(true)
            }
            Ok(Event::Settled) => Ok(true),
            Ok(Event::Idle) => {
                // Quiet is known now; another idle event only after output.
                self.ev.ev.set_idle(None);
                Ok(true)
            }
            Ok(_) => Ok(false),
            // The pane closing ends the watch: the agent's exit, when it is gone.
            Err(_) if !self.found.alive() => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// Waits until the terminal was not written for `quiet` (at most until the
    /// deadline: `false`), then goes back to the table's own idle period.
    pub async fn settle(&mut self, quiet: std::time::Duration) -> Result<bool, ToolOutput> {
        self.ev.ev.set_idle(Some(quiet));
        let settled = loop {
            match self.ev.next().await {
                Ok(Event::Idle) => break true,
                Ok(Event::Output | Event::Settled) => continue,
                Ok(_) => break false,
                Err(e) => return Err(e),
            }
        };
        self.ev.ev.set_idle(self.needs.then_some(agents::QUIET));
        Ok(settled)
    }
}

/// `pane`'s agent now (the pane resolved by the caller, as every action
/// resolves its target): found on its terminal (`true`), or remembered and
/// gone (`false`).
pub async fn agent_of(session: &Session, pane: &Pane) -> Result<(bool, Found), ToolOutput> {
    let id = pane.id.as_str();
    let snap = session.broker.registry.cached();
    let all: HashSet<&str> = snap
        .iter()
        .flat_map(|s| s.panes.iter().map(|p| p.id.as_str()))
        .collect();
    let found = find(&[pane]).await.map_err(|why| {
        ToolOutput::libtmux_error(format!(
            "Could not look for the agent: {why}. Nothing was sent to tmux."
        ))
    })?;
    let gone = session.broker.agents.update([id], &found, &all);
    if let Some(f) = found.get(id).or_else(|| gone.get(id)) {
        return Ok((found.contains_key(id), f.clone()));
    }
    Err(ToolOutput::libtmux_error(format!(
        "Pane {id} runs no coding-agent CLI this broker knows (Claude Code, Codex CLI, Gemini CLI, aider, opencode); its command is {:?}. Call list_agents for the agent panes. Nothing was sent to tmux.",
        pane.command
    )))
}
