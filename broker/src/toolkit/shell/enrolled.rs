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
    // Cheap checks first: a typed run into a shell without the snippet
    // comes here on every call, the shell asked once already.
    let marks = &session.broker.marks;
    let pid = crate::toolkit::shell::typed_job::foreground_pid(pane.pid)?;
    let st = process_table::stat(pid).ok()?;
    let is_shell = matches!(st.comm.as_str(), "bash" | "zsh" | "fish");
    if !is_shell || marks.asked(pid, st.start_ticks) || marks.dir().is_err() {
        return None;
    }
    holds_terminal(&pane.id, &pane.tty, pid, &st.comm).ok()?;
    marks.ask_once(pid, st.start_ticks);
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

/// What the kernel says of the pane's terminal: process `pid` (the shell
/// `name`) has it as its controlling terminal, its process group is the
/// terminal's foreground (not `vim`, `cat` or an editor it started, whatever
/// its marks say), and the terminal is out of cooked mode (a line editor
/// reads, not `read` or a here-document read by a shell without one). `Err`
/// says which failed. The proof before a chord, and before a shell is asked.
pub fn holds_terminal(id: &str, tty: &str, pid: u32, name: &str) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let st = process_table::stat(pid).map_err(|e| {
        format!(
            "the enrolled {} (pid {}) could not be read ({e})",
            name, pid
        )
    })?;
    let device = std::fs::metadata(tty)
        .map_err(|e| format!("pane {id}'s terminal {tty} could not be read ({e})"))?;
    if st.tty_nr == 0 || st.tty_nr != device.rdev() {
        return Err(format!(
            "the enrolled {} (pid {}) is not on pane {id}'s terminal {} (a shell of another pane that inherited TMUX_PANE={id}?)",
            name, pid, tty
        ));
    }
    if st.tpgid != st.pgrp || u32::try_from(st.pgrp).ok() != Some(pid) {
        let holder = u32::try_from(st.tpgid)
            .ok()
            .and_then(|p| process_table::stat(p).ok())
            .map_or_else(
                || format!("process group {}", st.tpgid),
                |p| format!("{:?} (pid {})", p.comm, p.pid),
            );
        return Err(format!(
            "the foreground of pane {id}'s terminal is {holder}, not its enrolled {} (pid {})",
            name, pid
        ));
    }
    match tmux_mcp_engine::mirror::canonical(tty) {
        Ok(false) => Ok(()),
        Ok(true) => Err(format!(
            "pane {id}'s terminal is in cooked mode: its {} is not reading in its line editor (its prompt is still being drawn, PS1 or a prompt hook still running; or a builtin such as `read` has it)",
            name
        )),
        Err(e) => Err(format!("pane {id}'s terminal mode could not be read ({e})")),
    }
}
