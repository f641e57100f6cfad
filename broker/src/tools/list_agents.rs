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
//! The finding and judging is `crate::toolkit::events::agent_panes`'s, which `wait_for_agent` shares.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::events::agent_panes::{survey, Agent};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::SessionFilter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashSet;
use tmux_mcp_engine::registry::Pane;

pub const SPEC: ToolSpec = ToolSpec::new(
    "list_agents",
    Annotations::read_only("List coding agents in panes"),
    input_of::<Args>,
    schema_of::<Listing>,
    |c| c.run(call),
)
.description("Coding agents in panes (Claude Code, Codex, Gemini, aider, opencode), their state.")
.details("Finds coding-agent CLIs from the processes on each pane's terminal (executable and arguments, not the title) and reads each one's visible screen once (a guarded capture, refused while an after-capture-pane hook is set). state is working, waiting_for_input, waiting_for_approval (question holds the question shown), exited (an agent this broker saw before is gone; the pane may still be open) or unknown (no rule of the CLI's table matched: never a guess). lines are the screen lines that decided it; rule names the row and the CLI version it was checked against. Optionally only the panes of one session. Read-only; types nothing.")
.sample(|_| json!({}))
.across_servers();

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

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let snap = session.broker.registry.refresh().await.map_err(|e| {
        ToolOutput::libtmux_error(format!(
            "Could not read the pane table from tmux: {e}. Nothing was changed."
        ))
    })?;
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
            return Err(ToolOutput::libtmux_error(format!("Argument session: no session with id or name {w:?} is visible. Call list_agents without it for every pane.")));
        }
    }
    let all: HashSet<&str> = snap.panes.iter().map(|p| p.id.as_str()).collect();
    let agents = survey(session, &panes, &all).await.map_err(|why| {
        ToolOutput::libtmux_error(format!(
            "Could not look for agents: {why}. Nothing was sent to tmux."
        ))
    })?;
    let mut text = format!("{} agent(s) in {} pane(s)", agents.len(), panes.len());
    for a in &agents {
        text.push('\n');
        text.push_str(&a.line());
    }
    let listing = Listing {
        agents,
        panes_scanned: panes.len(),
    };
    Ok(ToolOutput::typed(&listing, text))
}
