//! `wait_for_agent` (libtmux family, read-only): wait until the coding agent
//! in a pane reaches one of `states` (by default: its turn is over, it waits
//! for input or for approval, or it exited), and return the screen lines that
//! decided it.
//!
//! The agent is found once, from the pane's processes (`list_agents`' way);
//! then each burst of output to the pane's terminal is one guarded capture
//! judged by the CLI's rule table, as `wait_for_text` reads ([`Watched`] over
//! `wait::PaneEvents`): event-driven, nothing polls. The agent's process
//! ending is seen at the next read (its exit writes to the terminal: the
//! shell's prompt, or the pane closing).

use super::act::{self, SelfRule};
use super::ids::PaneId;
use super::list_agents::{self, Agent, StateName};
use super::typed::schema_of;
use super::wait::Event;
use super::wait_for_text::{ClockReport, Watched};
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use tmux_mcp_engine::agents::{self, Found, State};
use tmux_mcp_engine::registry::Pane;

pub const SPEC: ToolSpec = ToolSpec {
    name: "wait_for_agent",
    family: Family::Libtmux,
    description: "Wait until a pane's coding agent reaches one of states; returns the lines that decided it.",
    details: "Finds the pane's coding-agent CLI as list_agents does, then waits, event-driven (tty inotify), judging the visible screen after each burst of output by the CLI's rule table, until the state is one of states (default waiting_for_input, waiting_for_approval, exited; the screen as it is when the call starts counts), or timeoutMs (outcome timeout, with the last state seen; clamped to the request timeout, reported). The agent's process ending is seen at the next output (the shell's prompt) or when the pane closes. Each read is a guarded capture, refused while an after-capture-pane hook is set; types nothing. Sends progress notifications when a progressToken is given.",
    annotations: Annotations::read_only("Wait for a coding agent's state"),
    listed: super::Listed::AtTier,
    input_schema: super::typed::input_of::<Args>,
    output_schema: schema_of::<Waited>,
    run,
};

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
    /// Default: all but working and unknown.
    #[schemars(length(min = 1, max = 5))]
    states: Option<Vec<StateName>>,
    // Capped at the request timeout (the result says so).
    #[schemars(range(min = 1, max = 3_600_000))]
    timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Reached,
    Timeout,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Waited {
    outcome: Outcome,
    /// The agent as last judged (at the timeout: the last state seen).
    agent: Agent,
    #[serde(flatten)]
    clock: ClockReport,
}

const DEFAULT_STATES: [StateName; 3] = [
    StateName::WaitingForInput,
    StateName::WaitingForApproval,
    StateName::Exited,
];

fn run(c: Call<'_>) -> CallFuture<'_> {
    c.run_typed(call)
}

/// A wait on an agent's pane: its events (`Watched`), the agent, and whether
/// the CLI's table needs the terminal's activity, which the events give: an
/// idle event after `agents::QUIET` without output says quiet. Shared with
/// `send_prompt`.
pub(super) struct AgentWatch<'a> {
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
    ) -> Result<AgentWatch<'a>, ToolOutput> {
        let needs = agents::needs_activity(found.cli);
        let idle = needs.then_some(agents::QUIET.as_secs_f64());
        let started = std::time::Instant::now();
        let ev = Watched::on(session, pane, started, timeout_ms, idle, None).await?;
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
pub(super) async fn agent_of(session: &Session, pane: &Pane) -> Result<(bool, Found), ToolOutput> {
    let id = pane.id.as_str();
    let snap = session.broker.registry.cached();
    let all: HashSet<&str> = snap
        .iter()
        .flat_map(|s| s.panes.iter().map(|p| p.id.as_str()))
        .collect();
    let found = list_agents::find(&[pane]).await.map_err(|why| {
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

async fn call(session: &Session, args: Args) -> ToolOutput {
    let id: &str = &args.pane_id;
    let wanted: Vec<StateName> = args.states.clone().unwrap_or(DEFAULT_STATES.to_vec());
    let pane = match act::target(session, id, None, SelfRule::Allowed).await {
        Ok(t) => t.panes[0].clone(),
        Err(e) => return e,
    };
    let (running, found) = match agent_of(session, &pane).await {
        Ok(f) => f,
        Err(e) => return e,
    };
    let exited = |why: &str| Agent::exited(id, &found, why);
    if !running {
        // Already gone: the answer needs no wait.
        let agent = exited("The agent's process is gone.");
        let reached = wanted.contains(&agent.state);
        let w = Waited {
            outcome: if reached {
                Outcome::Reached
            } else {
                Outcome::Timeout
            },
            agent,
            clock: ClockReport {
                waited_ms: 0,
                timeout_ms: 0,
                timeout_clamped: false,
                output_events: 0,
            },
        };
        let text = format!("{} (no wait: it is not running)", w.agent.line());
        return ToolOutput::typed(&w, text);
    }
    let mut watch = match AgentWatch::start(session, pane, args.timeout_ms, found.clone()).await {
        Ok(w) => w,
        Err(e) => return e,
    };
    let last = loop {
        // The screen as it is now counts, then each event's.
        let agent = match watch.judge(session).await {
            Ok(a) => a,
            Err(e) => return e,
        };
        if wanted.contains(&agent.state) {
            let w = Waited {
                outcome: Outcome::Reached,
                clock: watch.ev.report(),
                agent,
            };
            let text = format!("{} after {} ms", w.agent.line(), w.clock.waited_ms);
            return ToolOutput::typed(&w, text);
        }
        match watch.next().await {
            Ok(true) => {}
            Ok(false) => break agent,
            Err(e) => return e,
        }
    };
    let w = Waited {
        outcome: Outcome::Timeout,
        clock: watch.ev.report(),
        agent: last,
    };
    let text = format!(
        "{} did not reach {} within {} ms{}; last seen: {}",
        id,
        wanted
            .iter()
            .map(|s| State::from(*s).name())
            .collect::<Vec<_>>()
            .join(" or "),
        w.clock.timeout_ms,
        if w.clock.timeout_clamped {
            " (timeoutMs clamped to the request timeout; `set -g @mcp-request-timeout SECONDS` raises it)"
        } else {
            ""
        },
        w.agent.line()
    );
    ToolOutput::typed(&w, text)
}
