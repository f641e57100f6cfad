//! `wait_for_agent` (libtmux family, read-only): wait until the coding agent
//! in a pane reaches one of `states` (by default: its turn is over, it waits
//! for input or for approval, or it exited), and return the screen lines that
//! decided it.
//!
//! The agent is found once, from the pane's processes (`list_agents`' way);
//! then each burst of output to the pane's terminal is one guarded capture
//! judged by the CLI's rule table, as `wait_for_text` reads ([`Watched`] over
//! `toolkit::events::pane_events::PaneEvents`): event-driven, nothing polls. The agent's process
//! ending is seen at the next read (its exit writes to the terminal: the
//! shell's prompt, or the pane closing).

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, Progress, ToolOutput, ToolSpec};
use crate::toolkit::events::agent_panes::{agent_of, Agent, AgentWatch, StateName};
use crate::toolkit::events::pane_events::ClockReport;
use crate::toolkit::libtmux::wording;
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::PaneId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tmux_mcp_engine::agents::State;

pub const SPEC: ToolSpec = ToolSpec::new(
    "wait_for_agent",
    Annotations::read_only("Wait for a coding agent's state"),
    input_of::<Args>,
    schema_of::<Waited>,
    |c| c.run_with_progress(call),
)
.description("Wait until a pane's coding agent reaches one of states; gives the deciding lines.")
.details("Finds the pane's coding-agent CLI as list_agents does, then waits, event-driven (tty inotify), judging the visible screen after each burst of output by the CLI's rule table, until the state is one of states (default waiting_for_input, waiting_for_approval, exited; the screen as it is when the call starts counts), or timeoutMs (outcome timeout, with the last state seen; clamped to the request timeout, reported). The agent's process ending is seen at the next output (the shell's prompt) or when the pane closes. Each read is a guarded capture, refused while an after-capture-pane hook is set; types nothing. Sends progress notifications when a progressToken is given.")
.sample(|s| json!({"paneId": s.pane, "timeoutMs": 300}));

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

async fn call(
    session: &Session,
    args: Args,
    progress: Option<Progress>,
) -> Result<ToolOutput, ToolOutput> {
    let id: &str = &args.pane_id;
    let wanted: Vec<StateName> = args.states.clone().unwrap_or(DEFAULT_STATES.to_vec());
    let pane = wording::target(session, id, None).await?.panes[0].clone();
    let (running, found) = agent_of(session, &pane).await?;
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
        return Ok(ToolOutput::typed(&w, text));
    }
    let mut watch =
        AgentWatch::start(session, pane, args.timeout_ms, found.clone(), progress).await?;
    let last = loop {
        // The screen as it is now counts, then each event's.
        let agent = watch.judge(session).await?;
        if wanted.contains(&agent.state) {
            let w = Waited {
                outcome: Outcome::Reached,
                clock: watch.ev.report(),
                agent,
            };
            let text = format!("{} after {} ms", w.agent.line(), w.clock.waited_ms);
            return Ok(ToolOutput::typed(&w, text));
        }
        if !watch.next().await? {
            break agent;
        }
    };
    let w = Waited {
        outcome: Outcome::Timeout,
        clock: watch.ev.report(),
        agent: last,
    };
    let text = format!(
        "{} did not reach {} {}; last seen: {}",
        id,
        wanted
            .iter()
            .map(|s| State::from(*s).name())
            .collect::<Vec<_>>()
            .join(" or "),
        w.clock.within(),
        w.agent.line()
    );
    Ok(ToolOutput::typed(&w, text))
}
