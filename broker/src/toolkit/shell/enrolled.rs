//! A pane's enrolled shell (`tmux-mcp shell-init`) as the tools report it:
//! which shell, whether it is at its prompt or running a command (which one,
//! since when), its directory and its last `$?`. Read from what the shell
//! wrote (`tmux_mcp_engine::marks`), never by asking tmux or the shell.

use crate::session::Session;
use schemars::JsonSchema;
use serde::Serialize;
use tmux_mcp_core::platform::process_table;
use tmux_mcp_engine::marks::PaneShell;
use tmux_mcp_engine::registry::Pane;

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

/// How long a shell asked whether it is enrolled has to say so.
/// (An answer takes a few ms: the trap's write, the marks watch; one that
/// comes later only means the typed path was taken, as before asking.)
const ASK_WAIT: std::time::Duration = std::time::Duration::from_millis(150);

/// The enrolled shell of `pane`; when none is known, the shell holding the
/// pane's terminal at its line editor is asked, once per shell process.
///
/// A shell writes its marks only while the broker's marks directory exists:
/// one that started before this broker (`@mcp-autostart off`, or the broker
/// still starting when the shell's rc ran) says nothing until its next
/// prompt. Asking sends signals, never bytes: SIGURG, which every process
/// ignores unless it handles it (the snippet answers with its `I` mark), and
/// to bash SIGWINCH too (readline runs a pending trap only when a signal of
/// its own wakes it and bash traps it, as the snippet does; bash redraws its
/// line as it is, as after any resize). Only a bash, zsh
/// or fish that the kernel says is in the foreground of the pane's terminal
/// and out of cooked mode is asked.
pub async fn shell_or_ask(session: &Session, pane: &Pane) -> Option<ShellRecord> {
    if let Some(s) = shell(session, &pane.id) {
        return Some(s);
    }
    let marks = &session.broker.marks;
    marks.dir().ok()?;
    let pid = foreground_shell(pane)?;
    let st = process_table::stat(pid).ok()?;
    if !marks.ask_once(pid, st.start_ticks) {
        return None;
    }
    let mut changed = marks.changed();
    tmux_mcp_core::sys::signal_urgent(pid).ok()?;
    if st.comm == "bash" {
        tmux_mcp_core::sys::signal_resized(pid).ok()?;
    }
    let deadline = tokio::time::Instant::now() + ASK_WAIT;
    loop {
        if let Some(s) = shell(session, &pane.id).filter(|s| s.pid == pid) {
            return Some(s);
        }
        match tokio::time::timeout_at(deadline, changed.changed()).await {
            Ok(Ok(())) => {}
            _ => return None,
        }
    }
}

/// The bash, zsh or fish that leads the foreground process group of the
/// pane's terminal, reading in its line editor (the terminal out of cooked
/// mode).
fn foreground_shell(pane: &Pane) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let pid = crate::toolkit::shell::typed_job::foreground_pid(pane.pid)?;
    let st = process_table::stat(pid).ok()?;
    let device = std::fs::metadata(&pane.tty).ok()?.rdev();
    let leads = u32::try_from(st.pgrp).ok() == Some(pid) && st.tpgid == st.pgrp;
    let on_pane = st.tty_nr != 0 && st.tty_nr == device;
    let editor = matches!(tmux_mcp_engine::mirror::canonical(&pane.tty), Ok(false));
    (matches!(st.comm.as_str(), "bash" | "zsh" | "fish") && leads && on_pane && editor)
        .then_some(pid)
}
