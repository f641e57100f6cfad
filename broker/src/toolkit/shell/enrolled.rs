//! A pane's enrolled shell (`tmux-mcp shell-init`) as the tools report it:
//! which shell, whether it is at its prompt or running a command (which one,
//! since when), its directory and its last `$?`. Read from what the shell
//! wrote (`tmux_mcp_engine::marks`), never by asking tmux or the shell.

use crate::session::Session;
use schemars::JsonSchema;
use serde::Serialize;
use tmux_mcp_engine::marks::PaneShell;

/// How to enroll, for the errors of tools that need an enrolled shell.
pub const HOW_TO_ENROLL: &str = "enroll its shell: add `eval \"$(tmux-mcp shell-init bash)\"` (or zsh) to ~/.bashrc or ~/.zshrc, or `tmux-mcp shell-init fish | source` to fish's config.fish, and start a new shell in the pane; `tmux-mcp shell-init --check` in the pane says whether it is enrolled";

#[derive(Debug, Clone, Copy, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ShellState {
    /// At its prompt (its editor may hold what the person is typing).
    Prompt,
    /// Running `command`.
    Running,
}

/// The pane's enrolled shell.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShellRecord {
    /// bash, zsh or fish.
    pub name: String,
    pub pid: u32,
    pub state: ShellState,
    /// Unix time (seconds) since which it is at its prompt or runs `command`.
    pub since: f64,
    /// The command line running (state running).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// $? of its last command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_status: Option<i32>,
    pub cwd: String,
    /// Its process's start time (clock ticks), with `pid` what tells it
    /// from a later process given the same pid; not published.
    #[serde(skip)]
    #[schemars(skip)]
    pub start: Option<u64>,
}

impl ShellRecord {
    pub fn of(s: PaneShell) -> ShellRecord {
        ShellRecord {
            name: s.shell.name,
            pid: s.shell.pid,
            start: s.shell.start,
            state: if s.running.is_some() {
                ShellState::Running
            } else {
                ShellState::Prompt
            },
            since: s.since,
            command: s.running.map(|c| c.text),
            last_status: s.last_status,
            cwd: s.cwd,
        }
    }
}

/// The enrolled shell of pane `id`, if it has a live one.
pub fn shell(session: &Session, id: &str) -> Option<ShellRecord> {
    session.broker.marks.shell(id).map(ShellRecord::of)
}
