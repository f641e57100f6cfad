//! `get_commands` (libtmux family, read-only, opt-in): a pane's recent
//! commands as its enrolled shell reported them (`tmux-mcp shell-init`), newest
//! first: the command line, its directory, when it started and ended, its
//! exit status, and the rows it printed. `{"paneId":"%3","limit":1}` answers
//! "what just failed in %3, and what did it print?" in one call.
//!
//! The marks come from the shell itself (never from guessing where a prompt
//! was); the rows are the grid's from the one after the command line the
//! shell echoed to the cursor when the shell was back at its prompt, kept by
//! the broker when the command ended (`tmux_mcp_engine::shell_watch`). A pane
//! without an enrolled shell is refused with how to enroll one. Opt-in: the
//! default `tools/list` has no room left in its context budget.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, Listed, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::pane_read;
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::shell::enrolled::{self, ShellRecord, HOW_TO_ENROLL};
use crate::toolkit::target::ids::PaneId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tmux_mcp_engine::marks::{Command, KEEP};

pub const SPEC: ToolSpec = ToolSpec::new(
    "get_commands",
    Annotations::read_only("Get a pane's recent commands"),
    input_of::<Args>,
    schema_of::<Commands>,
    |c| c.run(call),
)
.description("A pane's recent commands from its enrolled shell, newest first: exit status, times, cwd and the lines each printed.")
.details("List the recent commands of a pane whose shell is enrolled (tmux-mcp shell-init in bash, zsh or fish), newest first, as the shell reported them: the command line, its working directory, start and end (Unix seconds), its exit status ($?), and the screen and history rows it printed (from the row after its command line to the cursor when the shell was back at its prompt; the last maxLines, what was dropped counted). A running command has no end yet. The broker keeps 20 commands per pane; page older ones with before (a seq of this listing). A pane without an enrolled shell is refused, saying how to enroll it. Read-only; fires no tmux hook.")
.listed(Listed::OptIn)
.sample(|s| json!({"paneId": s.pane, "limit": 1}));

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
    /// Commands returned (default 5).
    #[schemars(range(min = 1, max = 20))]
    limit: Option<usize>,
    /// Only commands older than this seq (the next page).
    #[schemars(range(min = 1))]
    before: Option<u64>,
    /// Rows per command, its last ones (default 200).
    #[schemars(range(min = 0, max = 5000))]
    max_lines: Option<usize>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Commands {
    generation: String,
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    pane_id: String,
    shell: ShellRecord,
    commands: Vec<CommandRecord>,
    /// Older commands are kept: ask again with before = the last seq here.
    more: bool,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CommandRecord {
    /// Counts the pane's commands (for before).
    seq: u64,
    command: String,
    cwd: String,
    started_at: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    ended_at: Option<f64>,
    /// $? (absent while it runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_status: Option<i32>,
    /// The rows it printed (absent while it runs, or when they could not be
    /// read: outputMissing says why).
    #[serde(skip_serializing_if = "Option::is_none")]
    lines: Option<Vec<String>>,
    /// Rows it printed before the ones returned.
    dropped_lines: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_missing: Option<String>,
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let pane = pane_read::pane(
        session,
        &args.pane_id,
        tmux_mcp_engine::observe::Freshness::Cached,
    )
    .await?; // refuses a pane outside this session's scope
    let Some(shell) = enrolled::shell(session, &pane.id) else {
        return Err(ToolOutput::libtmux_error(format!(
            "Pane {} has no enrolled shell, so its commands are not known (nothing was sent to tmux); {HOW_TO_ENROLL}.",
            pane.id
        )));
    };
    let limit = args.limit.unwrap_or(5).min(KEEP);
    let max_lines = args.max_lines.unwrap_or(200);
    let all: Vec<Command> = session
        .broker
        .marks
        .commands(&pane.id)
        .into_iter()
        .filter(|c| args.before.is_none_or(|b| c.seq < b))
        .collect();
    let more = all.len() > limit;
    let commands: Vec<CommandRecord> = all
        .into_iter()
        .take(limit)
        .map(|c| record(c, max_lines))
        .collect();
    let text = text(&pane.id, &shell, &commands);
    Ok(ToolOutput::typed(
        &Commands {
            generation: session.generation().to_string(),
            pane_id: pane.id.clone(),
            shell,
            commands,
            more,
        },
        text,
    ))
}

fn record(c: Command, max_lines: usize) -> CommandRecord {
    let (lines, mut dropped, note) = match c.output {
        Some(o) => (Some(o.lines), o.dropped, o.note),
        None => (None, 0, None),
    };
    let lines = lines.map(|mut l| {
        if l.len() > max_lines {
            dropped += l.len() - max_lines;
            l.drain(..l.len() - max_lines);
        }
        l
    });
    let missing = match (&lines, c.ended) {
        (None, Some(_)) => c
            .output_missing
            .or_else(|| Some("the broker has not read its rows yet".into())),
        _ => None,
    };
    CommandRecord {
        seq: c.seq,
        command: c.text,
        cwd: c.cwd,
        started_at: c.started,
        ended_at: c.ended,
        exit_status: c.status,
        lines,
        dropped_lines: dropped,
        output_note: note,
        output_missing: missing,
    }
}

fn text(pane: &str, shell: &ShellRecord, commands: &[CommandRecord]) -> String {
    let mut out = vec![format!(
        "{pane}: {} (pid {}) {}; {} command(s)",
        shell.name,
        shell.pid,
        match &shell.command {
            Some(c) => format!("running {c:?}"),
            None => "at its prompt".into(),
        },
        commands.len()
    )];
    for c in commands {
        let status = match c.exit_status {
            Some(s) => format!("exit {s}"),
            None if c.ended_at.is_some() => "ended".into(),
            None => "running".into(),
        };
        out.push(format!(
            "#{} [{status}] {} (in {})",
            c.seq, c.command, c.cwd
        ));
        if c.dropped_lines > 0 {
            out.push(format!("  ({} earlier line(s) dropped)", c.dropped_lines));
        }
        for l in c.lines.iter().flatten() {
            out.push(format!("  {l}"));
        }
        if let Some(m) = &c.output_missing {
            out.push(format!("  (no lines: {m})"));
        }
    }
    out.join("\n")
}
