//! `send_prompt` (libtmux family, mutating): a prompt into a coding agent's
//! TUI as one message, submitted, and the submission seen on the screen.
//!
//! Typing a multi-line prompt key by key makes each line feed an Enter (one
//! message per line), and an Enter pressed at once after a paste can be taken
//! for part of it: Gemini CLI 0.61.0 turns an Enter that comes within 30 ms of
//! the previous key into a new line. So: the agent must be waiting for input
//! with an empty input box (its table's `waiting_for_input`, else nothing is
//! sent); the text is pasted through a private buffer (`toolkit::typing::paste`, as
//! `paste_text` pastes; bracketed, since every CLI we know turns bracketed
//! paste on), which makes it one message; Enter is pressed only once the screen shows the draft and
//! the terminal has been quiet for a moment; then the submission is verified:
//! the box is empty again or the agent works or asks (its state leaves the
//! draft), event-driven as the waits are. An Enter that did not submit is a
//! clear error; nothing is pressed twice.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, Progress, ToolOutput, ToolSpec};
use crate::toolkit::events::agent_panes::{agent_of, Agent, AgentWatch, StateName};
use crate::toolkit::libtmux::action;
use crate::toolkit::libtmux::wording;
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::schemas::patterns::NO_NUL;
use crate::toolkit::target::ids::{Generation, PaneId};
use crate::toolkit::typing::keystrokes::{commands, deliver, Input};
use crate::toolkit::typing::paste::{paste, LineEnding};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

pub const SPEC: ToolSpec = ToolSpec::new(
    "send_prompt",
    Annotations::mutating("Send a prompt to a coding agent", false),
    input_of::<Args>,
    schema_of::<Prompted>,
    |c| c.run_with_progress(call),
)
.description("Send a prompt (any number of lines) to the coding agent in a pane as one message and submit it; verified on its screen.")
.details("For a pane whose coding-agent CLI (see list_agents) waits for input with an empty input box: a turn still running is waited for (within timeoutMs); an approval dialog, a draft in the box or an unknown screen sends nothing. Pastes text through a private buffer (bracketed, so line feeds stay inside the one message), waits until the screen shows the draft and the terminal is quiet for 150 ms, presses Enter once, then waits, event-driven, until the screen shows the submission (the agent works, asks for approval, or its input box is empty again) or timeoutMs (default 10000; an error saying the prompt did not submit: the draft is still in the box). submit false stops after the paste. Mutating tier; the agent's own pane needs --allow-self.");

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
    generation: Option<Generation>,
    #[schemars(length(min = 1, max = 65536), regex(pattern = NO_NUL))]
    text: String,
    /// Press Enter (default true).
    #[serde(default = "yes")]
    submit: bool,
    // Capped at the request timeout (the result says so).
    #[schemars(range(min = 1, max = 3_600_000))]
    timeout_ms: Option<u64>,
}

fn yes() -> bool {
    true
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Prompted {
    submitted: bool,
    /// The agent as its screen showed it last.
    agent: Agent,
    /// From the paste to the draft on the screen, quiet.
    paste_shown_ms: u64,
    /// From Enter to the submission on the screen.
    #[serde(skip_serializing_if = "Option::is_none")]
    submit_seen_ms: Option<u64>,
}

/// How long the terminal stays unwritten after the draft shows before Enter:
/// the paste is taken in whole, and Enter comes well after its last byte.
const DRAFT_QUIET: Duration = Duration::from_millis(150);

const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// How long an emptied input box is watched for the turn to show (a spinner,
/// a dialog) before the answer says the agent waits for input: a CLI empties
/// the box a moment before its turn starts, and a wait called right after
/// would otherwise take that moment for the turn's end.
const TURN_START: Duration = Duration::from_secs(2);

/// After the box emptied: the agent once its turn shows (working, asking, or
/// gone) within [`TURN_START`], else as it was (a turn that ended at once, or
/// that has not shown yet).
async fn turn_start(session: &Session, watch: &mut AgentWatch<'_>, emptied: Agent) -> Agent {
    let until = tokio::time::Instant::now() + TURN_START;
    let mut last = emptied;
    while let Ok(Ok(true)) = tokio::time::timeout_at(until, watch.next()).await {
        match watch.judge(session).await {
            Ok(a) if a.state != StateName::WaitingForInput && a.state != StateName::Unknown => {
                return a
            }
            Ok(a) if a.state == StateName::WaitingForInput => last = a,
            _ => {}
        }
    }
    last
}

/// A failure after something reached the pane: says what did.
fn failed(what: &str, agent: &Agent) -> ToolOutput {
    ToolOutput::libtmux_error(format!("{what} Last seen: {}.", agent.line()))
}

async fn call(
    session: &Session,
    args: Args,
    progress: Option<Progress>,
) -> Result<ToolOutput, ToolOutput> {
    let target = action::typing_target(session, &args.pane_id, args.generation.as_deref()).await?;
    let id = target.id.clone();
    let pane = target.panes[0].clone();
    let (alive, found) = agent_of(session, &pane).await?;
    if !alive {
        return Err(ToolOutput::libtmux_error(format!(
            "The coding agent in pane {id} has exited. Nothing was sent to tmux."
        )));
    }
    let timeout = Some(args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS));
    let mut watch = AgentWatch::start(session, pane, timeout, found, progress).await?;
    let before = waiting_for_input(session, &mut watch, &id).await?;
    let pasted_at = Instant::now();
    paste(session, &id, &args.text, LineEnding::Cr).await?;
    let draft = draft_shown(session, &mut watch, &id, before).await?;
    let shown_ms = pasted_at.elapsed().as_millis() as u64;
    if !args.submit {
        let agent = watch.judge(session).await.unwrap_or(draft);
        let out = Prompted {
            submitted: false,
            agent,
            paste_shown_ms: shown_ms,
            submit_seen_ms: None,
        };
        let text = format!(
            "pasted the prompt into {id} ({} bytes); Enter not pressed",
            args.text.len()
        );
        return Ok(ToolOutput::typed(&out, text));
    }
    let enter = ["Enter".to_string()];
    let entered_at = Instant::now();
    if let Err((_, f)) = deliver(session, &commands(&id, Input::Keys(&enter))).await {
        return Err(wording::failed(&f));
    }
    let (agent, submit_seen_ms) = submitted(session, &mut watch, &id, draft, entered_at).await?;
    let out = Prompted {
        submitted: true,
        paste_shown_ms: shown_ms,
        submit_seen_ms: Some(submit_seen_ms),
        agent,
    };
    let text = format!(
        "sent the prompt ({} bytes) to {}; submitted: {}",
        args.text.len(),
        id,
        out.agent.line()
    );
    Ok(ToolOutput::typed(&out, text))
}

/// Waits until the agent waits for input, the box empty (nothing is sent
/// before): a turn still running is waited for; any other state refuses.
/// A table that needs the terminal's activity knows the state once the
/// terminal was quiet for a second.
async fn waiting_for_input(
    session: &Session,
    watch: &mut AgentWatch<'_>,
    id: &str,
) -> Result<Agent, ToolOutput> {
    loop {
        let agent = watch.judge(session).await?;
        match agent.state {
            StateName::WaitingForInput => return Ok(agent),
            // Its turn is still running (then it waits for input), or its
            // state is not known until the terminal was quiet for a second.
            StateName::Working => {}
            StateName::Unknown if !watch.activity_known() => {}
            _ => {
                return Err(ToolOutput::libtmux_error(format!(
                    "The agent in pane {id} is not waiting for input with an empty input box (it is {}); nothing was sent to tmux. Wait for it (wait_for_agent), or answer what it shows.",
                    agent.line()
                )))
            }
        }
        if !watch.next().await? {
            return Err(ToolOutput::libtmux_error(format!(
                "The agent in pane {id} did not come to wait for input with an empty input box within the timeout; nothing was sent to tmux. Last seen: {}.",
                agent.line()
            )));
        }
    }
}

/// After the paste: waits until the screen shows the draft (the box no
/// longer empty), then until the terminal is quiet, so that Enter is not
/// taken for part of the paste.
async fn draft_shown(
    session: &Session,
    watch: &mut AgentWatch<'_>,
    id: &str,
    before: Agent,
) -> Result<Agent, ToolOutput> {
    let draft = loop {
        if !watch.next().await? {
            return Err(failed(&format!("The text was pasted into pane {id}, but its input box did not show it within the timeout; Enter was not pressed."), &before));
        }
        let agent = watch.judge(session).await?;
        if agent.state != StateName::WaitingForInput {
            break agent;
        }
    };
    if !watch.settle(DRAFT_QUIET).await? {
        return Err(failed(&format!("The text was pasted into pane {id}, but its terminal did not go quiet within the timeout; Enter was not pressed."), &draft));
    }
    Ok(draft)
}

/// After Enter: waits until the state leaves the draft (the box empties, or
/// the agent works or asks; the first read may still show the draft), and
/// how long after `entered_at` that was seen. An Enter that did not submit
/// is an error; nothing is pressed twice.
async fn submitted(
    session: &Session,
    watch: &mut AgentWatch<'_>,
    id: &str,
    draft: Agent,
    entered_at: Instant,
) -> Result<(Agent, u64), ToolOutput> {
    let mut last = draft;
    loop {
        if !watch.next().await? {
            return Err(failed(&format!("The prompt did not submit: Enter was pressed in pane {id}, but within the timeout its screen still showed the draft (tmux received the paste and the key)."), &last));
        }
        let agent = watch.judge(session).await?;
        let moved = matches!(
            agent.state,
            StateName::Working
                | StateName::WaitingForApproval
                | StateName::WaitingForInput
                | StateName::Exited
        );
        if moved {
            let submit_seen_ms = entered_at.elapsed().as_millis() as u64;
            let agent = if agent.state == StateName::WaitingForInput {
                turn_start(session, watch, agent).await
            } else {
                agent
            };
            return Ok((agent, submit_seen_ms));
        }
        last = agent;
    }
}
