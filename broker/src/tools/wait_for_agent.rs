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
use tmux_mcp_engine::agents::{self, Found};

pub const SPEC: ToolSpec = ToolSpec {
    name: "wait_for_agent",
    family: Family::Libtmux,
    description: "Wait until a pane's coding agent reaches one of states; returns the screen lines that decided it.",
    details: "Finds the pane's coding-agent CLI as list_agents does, then waits, event-driven (tty inotify), judging the visible screen after each burst of output by the CLI's rule table, until the state is one of states (default waiting_for_input, waiting_for_approval, exited; the screen as it is when the call starts counts), or timeoutMs (outcome timeout, with the last state seen; clamped to the broker's request timeout, reported). The agent's process ending is seen at the next output (the shell's prompt) or when the pane closes. Each read is a guarded capture, refused while an after-capture-pane hook is set; types nothing. Sends progress notifications when a progressToken is given.",
    annotations: Annotations::read_only("Wait for a coding agent's state"),
    opt_in: false,
    input_schema: super::typed::input_of::<Args>,
    output_schema: schema_of::<Waited>,
    run,
};

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
    /// Default: waiting_for_input, waiting_for_approval, exited.
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

/// The pane's agent now: found on its terminal (`true`), or remembered and
/// gone (`false`); the pane resolved as every action resolves its target
/// (existence, scope).
async fn agent_of(session: &Session, id: &str) -> Result<(bool, Found), ToolOutput> {
    let target = act::target(session, id, None, SelfRule::Allowed).await?;
    let pane = &target.panes[0];
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
    let (running, found) = match agent_of(session, id).await {
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
    // A table that needs the terminal's activity learns "quiet" from an
    // idle event after agents::QUIET without output.
    let needs = agents::needs_activity(found.cli);
    let quiet = needs.then_some(agents::QUIET);
    let idle = quiet.map(|q| q.as_secs_f64());
    let mut ev = match Watched::start(session, id, None, args.timeout_ms, idle, None).await {
        Ok(e) => e,
        Err(e) => return e,
    };
    let mut check = true; // the screen as it is now counts
    let mut last: Option<Agent> = None;
    loop {
        if check {
            let agent = if !found.alive() {
                exited("The agent's process exited.")
            } else {
                // Written to since the wait began and within QUIET, or quiet
                // for QUIET; not known before either.
                let writing = if !needs {
                    None
                } else if ev.ev.quiet() >= agents::QUIET {
                    Some(false)
                } else if ev.ev.events() > 0 {
                    Some(true)
                } else {
                    None
                };
                match ev.screen(session).await {
                    Ok(rows) => Agent::judged(id, &found, &rows, writing),
                    // Its exit may close the pane: then the read fails.
                    Err(_) if !found.alive() => exited("The agent's process exited."),
                    Err(e) => return e,
                }
            };
            if wanted.contains(&agent.state) {
                let w = Waited {
                    outcome: Outcome::Reached,
                    clock: ev.report(),
                    agent,
                };
                let text = format!("{} after {} ms", w.agent.line(), w.clock.waited_ms);
                return ToolOutput::typed(&w, text);
            }
            last = Some(agent);
        }
        check = match ev.next().await {
            Ok(Event::Output) => {
                ev.ev.set_idle(quiet);
                true
            }
            Ok(Event::Settled) => true,
            Ok(Event::Idle) => {
                ev.ev.set_idle(None);
                true
            }
            Ok(_) => break,
            // The pane closing ends the watch: the agent's exit, when it is gone.
            Err(_) if !found.alive() => true,
            Err(e) => return e,
        };
    }
    let agent = last.unwrap_or_else(|| exited("The agent's process exited."));
    let w = Waited {
        outcome: Outcome::Timeout,
        clock: ev.report(),
        agent,
    };
    let text = format!(
        "{} did not reach {} within {} ms{}; last seen: {}",
        id,
        wanted
            .iter()
            .map(|s| serde_json::to_value(s)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default())
            .collect::<Vec<_>>()
            .join(" or "),
        w.clock.timeout_ms,
        if w.clock.timeout_clamped {
            " (timeoutMs clamped to the broker's request timeout)"
        } else {
            ""
        },
        w.agent.line()
    );
    ToolOutput::typed(&w, text)
}
