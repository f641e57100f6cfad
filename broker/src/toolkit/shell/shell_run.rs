//! A command line run through a pane's enrolled shell (`tmux-mcp
//! shell-init`): nothing is typed but a private key chord; the shell's line
//! editor takes the command as if the person had typed it.
//!
//! The broker writes the command to `<pane id>.run` in the marks directory
//! and sends [`TAKE`]; the shell's binding reads the file, sets the person's
//! half-typed line aside (given back at the first prompt whose editor is
//! empty: by zsh's snippet itself, by bash's and fish's on [`GIVE`], see
//! [`give_back`]), puts the command in the editor, writes an `R` mark, and
//! presses accept-line (bash through its chord's macro, whose second key it
//! binds to accept-line only when it took a command; a snippet enrolled
//! before that gets [`ACCEPT`] from the broker after its `R`). The pane
//! shows the prompt, the command and its output; the command runs in
//! the shell itself, on the pane's terminal, so `$?`, `cd`, `test -t 1` and
//! builtins are as if typed; the snippet keeps the line out of history. The
//! status comes from the shell's `P` mark, the output from the rows the
//! broker keeps for the command (`tmux_mcp_engine::shell_watch`).
//!
//! Before the chord, [`shell_holds_terminal`] asks the kernel that the shell
//! holds the pane's terminal in its line editor. The binding refuses off its
//! primary prompt (an `R` mark with `refused:WHY`) and touches nothing.
//! While the shell's `K` mark says it still holds a line (the person typed
//! during the run), the give-back chord goes again after each later `P`.
//!
//! One run at a time per shell: a second waits for the first to end.

use crate::jobs::{Finish, Output};
use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::shell::enrolled::{self, ShellRecord, ShellState};
use crate::toolkit::typing::keystrokes;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tmux_mcp_engine::marks::{Command, Held, Taken};
use tmux_mcp_engine::registry::Pane;
use tmux_mcp_engine::Broker;

/// `ESC [ 9 4 0 0 ~`: take the command from the request file.
pub const TAKE: &str = "\x1b[9400~";
/// `ESC [ 9 4 0 1 ~`: accept-line (bash).
pub const ACCEPT: &str = "\x1b[9401~";
/// `ESC [ 9 4 0 2 ~`: give the person's line back (bash, fish).
pub const GIVE: &str = "\x1b[9402~";

/// How long the kernel may take to say the shell holds its terminal in its
/// line editor before a call is refused: a prompt's hooks and its PS1 run
/// first, and some take seconds (a git status in a large repository).
const HOLD_WAIT: Duration = Duration::from_secs(5);
/// How long the person's line waits for the shell to hold its terminal
/// again after a run.
const GIVE_WAIT: Duration = Duration::from_secs(3);
/// How long the line editor has to take the command.
const TAKE_WAIT: Duration = Duration::from_secs(2);
/// How long the rows of an ended command may take to be read.
const ROWS_WAIT: Duration = Duration::from_secs(3);

/// A run the shell took; held until it ends (one at a time per shell).
pub struct Run {
    pub id: String,
    pub pane: String,
    /// The pane's terminal (what the kernel is asked about).
    pub tty: String,
    pub shell: ShellRecord,
    pub taken: Taken,
    _turn: tokio::sync::OwnedMutexGuard<()>,
}

/// What the broker asks of the shell's binding.
pub enum Request<'a> {
    /// A command line, into the editor as if typed (`run_command`).
    Line(&'a str),
    /// A script run by `/bin/sh` from the binding, only when the editor is
    /// empty (`tmux_run`): `/bin/sh WRAPPER <OUT-and-ERR files>`.
    Script {
        wrapper: &'a std::path::Path,
        out: &'a std::path::Path,
        err: &'a std::path::Path,
    },
}

/// Why a run did not start; each family words it (its code, its envelope).
pub struct NotStarted {
    pub code: &'static str,
    pub message: String,
    pub delivery: Delivery,
}

fn not_started(code: &'static str, message: String, delivery: Delivery) -> NotStarted {
    NotStarted {
        code,
        message,
        delivery,
    }
}

fn chord(pane: &str, keys: &str) -> Vec<String> {
    let mut argv = vec![
        "send-keys".to_string(),
        "-H".into(),
        "-t".into(),
        pane.to_string(),
    ];
    argv.extend(keys.bytes().map(|b| format!("{b:02x}")));
    argv
}

/// What the kernel says of the pane's terminal, checked right before the
/// key chord is sent (the marks are evidence, never the proof):
/// [`enrolled::holds_terminal`] for the enrolled shell. `Err` says which
/// check failed.
pub fn shell_holds_terminal(id: &str, tty: &str, shell: &ShellRecord) -> Result<(), String> {
    enrolled::holds_terminal(id, tty, shell.pid, &shell.name)
}

/// Hands `request` to the enrolled shell of `pane` (waiting up to `turn`
/// for another run of that shell to end); returns once its line editor
/// took it. Nothing is sent unless [`shell_holds_terminal`] holds; the
/// shell's binding itself refuses (and leaves its editor as it was) unless
/// it reads at its primary prompt.
pub async fn start(
    session: &Session,
    pane: &Pane,
    request: Request<'_>,
    id: &str,
    turn: Duration,
) -> Result<Run, NotStarted> {
    let lock = session.broker.marks.run_lock(&pane.id);
    let Ok(guard) = tokio::time::timeout(turn, lock.lock_owned()).await else {
        return Err(not_started(
            "busy",
            format!("Pane {}'s shell is running another agent's command and did not finish within the wait.", pane.id),
            Delivery::NotSent,
        ));
    };
    let shell = at_prompt(session, pane)?;
    held_by_shell(session, pane, &shell).await?;
    let taken = hand_over(session, pane, request, id).await?;
    refused(&pane.id, &taken)?;
    if !taken.accepted && !taken.script {
        press_accept(session, pane, &shell).await?;
    }
    Ok(Run {
        id: id.to_string(),
        pane: pane.id.clone(),
        tty: pane.tty.clone(),
        shell,
        taken,
        _turn: guard,
    })
}

/// The pane's enrolled shell, when its marks say it is at its prompt and
/// the pane is in no mode (the chord would go to the mode).
fn at_prompt(session: &Session, pane: &Pane) -> Result<ShellRecord, NotStarted> {
    let id = &pane.id;
    let Some(shell) = enrolled::shell(session, id) else {
        return Err(not_started(
            "not_enrolled",
            format!("Pane {id}'s enrolled shell is gone."),
            Delivery::NotSent,
        ));
    };
    if shell.state != ShellState::Prompt {
        return Err(not_started(
            "busy",
            format!(
                "Pane {id}'s shell is running {:?}. Try again at its prompt.",
                shell.command.as_deref().unwrap_or_default()
            ),
            Delivery::NotSent,
        ));
    }
    if pane.in_mode != 0 {
        return Err(not_started(
            "not_at_prompt",
            format!("Pane {id} is in copy mode (or another mode): the key chord would go to the mode, not to its shell's line editor. Nothing was sent."),
            Delivery::NotSent,
        ));
    }
    Ok(shell)
}

/// The kernel's word that the shell holds its terminal in its line editor
/// (asked again for up to [`HOLD_WAIT`]: a shell just back from a command
/// runs its prompt's hooks, and their programs, before its editor reads);
/// and, for bash, no readline search open on the screen.
async fn held_by_shell(
    session: &Session,
    pane: &Pane,
    shell: &ShellRecord,
) -> Result<(), NotStarted> {
    let id = &pane.id;
    let until = Instant::now() + HOLD_WAIT;
    while let Err(why) = shell_holds_terminal(id, &pane.tty, shell) {
        if Instant::now() >= until {
            return Err(not_started(
                "not_at_prompt",
                format!(
                    "Pane {id}'s shell is not proven at its prompt within {} s: {why}. Nothing was sent.",
                    HOLD_WAIT.as_secs()
                ),
                Delivery::NotSent,
            ));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // bash runs no binding while readline's incremental search (C-r) is
    // open, and prints an error into the pane: the screen shows it.
    if shell.name == "bash" {
        let shown = crate::toolkit::shell::shell_line::read(session, pane).await;
        if shown.is_ok_and(|s| crate::toolkit::shell::shell_line::readline_search(&s.row)) {
            return Err(not_started(
                "not_at_prompt",
                format!("Pane {id}'s shell has a history search open in its line editor (C-r). Nothing was sent."),
                Delivery::NotSent,
            ));
        }
    }
    Ok(())
}

/// Writes the request file and sends [`TAKE`]; what the shell's binding
/// said of it (its `R` mark), within [`TAKE_WAIT`]. The file goes either way.
async fn hand_over(
    session: &Session,
    pane: &Pane,
    request: Request<'_>,
    id: &str,
) -> Result<Taken, NotStarted> {
    let (pane, marks) = (pane.id.as_str(), &session.broker.marks);
    let dir = marks.dir().map_err(|why| {
        not_started(
            "unavailable",
            format!("The request for the shell cannot be written: {why}. Nothing was sent."),
            Delivery::NotSent,
        )
    })?;
    let body = match request {
        Request::Line(command) => format!("{id}\n{command}"),
        Request::Script { wrapper, out, err } => format!(
            "{id} script\n{}\n{}\n{}",
            wrapper.display(),
            out.display(),
            err.display()
        ),
    };
    let request = dir.join(format!("{pane}.run"));
    let staged = dir.join(format!("{pane}.run.new"));
    let written = std::fs::write(&staged, body).and_then(|()| std::fs::rename(&staged, &request));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&staged);
        return Err(not_started(
            "unavailable",
            format!("Could not write the request for the shell: {e}."),
            Delivery::NotSent,
        ));
    }
    let mut changed = marks.changed();
    if let Err((_, f)) = keystrokes::deliver(session, &[chord(pane, TAKE)]).await {
        let _ = std::fs::remove_file(&request);
        return Err(not_started(
            f.code,
            format!("Sending the shell its key chord failed: {}", f.message),
            Delivery::NotSent,
        ));
    }
    let taken = async {
        loop {
            if let Some(t) = marks.taken(pane, id) {
                return t;
            }
            let _ = tokio::time::timeout(Duration::from_millis(100), changed.changed()).await;
        }
    };
    let taken = tokio::time::timeout(TAKE_WAIT, taken).await;
    let _ = std::fs::remove_file(&request);
    taken.map_err(|_| not_started(
        "editor_unavailable",
        format!("The shell in pane {pane} did not take the request within {} s: its line editor did not run the binding (a menu, a search or a program reading the terminal?). Only the 7-byte key chord ESC [9400~ was sent; the shell now ignores it.", TAKE_WAIT.as_secs()),
        Delivery::Observed,
    ))
}

/// The shell's binding refused the request (its editor left as it was), or
/// a script found the person's text in the editor.
fn refused(pane: &str, taken: &Taken) -> Result<(), NotStarted> {
    if let Some(why) = &taken.refused {
        let what = match why.as_str() {
            "continuation" => "its line editor reads a continuation line (a here-document, an open quote or an unfinished compound command the person is typing), not the primary prompt".to_string(),
            "prompt-unknown" => "it cannot tell which prompt its line editor reads at (PS2 was set after the shell-init line by something that runs at every prompt, or promptvars is off)".to_string(),
            "comments" => "the command holds `#`, which this shell (interactive_comments off) would not read as a comment, where the parse check did; the command would mean something else".to_string(),
            "pager" => "its completion pager is open".to_string(),
            "search" => "a history search is open in its line editor".to_string(),
            "mode" => "its line editor is in a vi visual (selection) or replace mode".to_string(),
            other => format!("it refused ({other})"),
        };
        return Err(not_started(
            if why == "comments" { "invalid_input" } else { "not_at_prompt" },
            format!("Pane {pane}'s shell refused the request: {what}. Nothing ran; only the 7-byte key chord ESC [9400~ was sent, which the shell's binding took and ignored, leaving the person's line as it was."),
            Delivery::Observed,
        ));
    }
    if taken.busy {
        return Err(not_started(
            "editor_busy",
            format!("The line editor of pane {pane}'s shell holds the person's text ({} characters); a script runs only in an empty editor. Nothing ran; only the 7-byte key chord ESC [9400~ was sent, which the shell took and ignored.", taken.kept),
            Delivery::Observed,
        ));
    }
    Ok(())
}

/// A snippet from before the take pressed accept-line itself: the broker
/// presses it, on the kernel's word too.
async fn press_accept(
    session: &Session,
    pane: &Pane,
    shell: &ShellRecord,
) -> Result<(), NotStarted> {
    if let Err(why) = shell_holds_terminal(&pane.id, &pane.tty, shell) {
        return Err(not_started(
            "not_at_prompt",
            format!("The shell took the command, but accept-line was not pressed: {why}; the command waits in its line editor."),
            Delivery::Observed,
        ));
    }
    if let Err((_, f)) = keystrokes::deliver(session, &[chord(&pane.id, ACCEPT)]).await {
        return Err(not_started(
            f.code,
            format!("The shell took the command, but pressing accept-line failed: {}; the command waits in its line editor.", f.message),
            Delivery::Observed,
        ));
    }
    Ok(())
}

/// How a script ended ([`wait_script`]).
pub enum ScriptEnd {
    /// `$?` of its `/bin/sh`.
    Status(i32),
    /// Still running at the deadline: its `/bin/sh` and every process
    /// under it were sent SIGTERM, and SIGKILL two seconds later if still
    /// there (`killed`).
    TimedOut {
        stopped: Option<i32>,
        killed: bool,
    },
    Lost(String),
}

/// How long a script's end mark may lag its `/bin/sh`'s exit before the end
/// counts as lost (the binding that writes it was interrupted).
const END_MARK_WAIT: Duration = Duration::from_millis(500);

/// Waits up to `timeout` for the script of `run` to end; at the deadline its
/// `/bin/sh` and every process under it get SIGTERM, and two more seconds
/// to end.
pub async fn wait_script(broker: &Broker, run: &Run, timeout: Duration) -> ScriptEnd {
    let marks = &broker.marks;
    let ended = |marks: &tmux_mcp_engine::marks::Marks| {
        marks
            .taken(&run.pane, &run.id)
            .filter(|t| t.done)
            .map(|t| t.status.unwrap_or(-1))
    };
    let until = |deadline: tokio::time::Instant| async move {
        let mut changed = marks.changed();
        let mut script_gone: Option<tokio::time::Instant> = None;
        loop {
            if let Some(s) = ended(marks) {
                return Ok(s);
            }
            if !shell_alive(run) {
                return Err("the pane's shell exited before the script ended".to_string());
            }
            // The script's /bin/sh is gone, yet its end never came: the
            // shell's binding that writes it was interrupted.
            let pid = marks.taken(&run.pane, &run.id).and_then(|t| t.script_pid);
            if pid.is_some_and(|p| !tmux_mcp_engine::marks::process_runs(p, None)) {
                let since = *script_gone.get_or_insert_with(tokio::time::Instant::now);
                if since.elapsed() > END_MARK_WAIT {
                    return Err("the script's /bin/sh ended, but the shell's binding never reported its status (it was interrupted: Ctrl-C or Ctrl-\\ in the pane?)".to_string());
                }
            }
            tokio::select! {
                _ = changed.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                _ = broker.server_gone() => return Err("the tmux server exited (or the broker stopped)".into()),
                _ = tokio::time::sleep_until(deadline) => return Err(String::new()),
            }
        }
    };
    match until(tokio::time::Instant::now() + timeout).await {
        Ok(s) => ScriptEnd::Status(s),
        Err(why) if !why.is_empty() => ScriptEnd::Lost(why),
        Err(_) => {
            // The inner /bin/sh says its pid as it starts: wait a moment for
            // it if it has not yet, then stop it and every process under it.
            let mut pid = None;
            for _ in 0..20 {
                pid = marks.taken(&run.pane, &run.id).and_then(|t| t.script_pid);
                if pid.is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            // Only a process under the run's shell: the pid comes from a
            // mark, which any program of the person's could have written.
            let under_shell = |p: u32| {
                tmux_mcp_core::platform::process_table::ancestry(p, 16).contains(&run.shell.pid)
            };
            let tree: Vec<u32> = pid
                .filter(|&p| under_shell(p))
                .map(|pid| std::iter::once(pid).chain(descendants(pid)).collect())
                .unwrap_or_default();
            for &p in &tree {
                let _ = tmux_mcp_core::sys::terminate(p);
            }
            let mut stopped = until(tokio::time::Instant::now() + Duration::from_secs(2))
                .await
                .ok();
            // A script that ignores SIGTERM would hold the shell's editor
            // (and the person's prompt) for ever.
            let mut killed = false;
            if stopped.is_none() {
                for &p in &tree {
                    killed |= tmux_mcp_core::sys::kill_hard(p).is_ok();
                }
                stopped = until(tokio::time::Instant::now() + Duration::from_secs(2))
                    .await
                    .ok();
            }
            ScriptEnd::TimedOut { stopped, killed }
        }
    }
}

/// Waits for the run's end: the shell back at its prompt (its status) and
/// the command's rows kept; lost when the shell exits or the server goes.
pub async fn finish(
    broker: Arc<Broker>,
    run: Run,
    lines: usize,
    bytes: usize,
    started: Instant,
    ttl: Duration,
) -> (Finish, Run) {
    let marks = &broker.marks;
    let mut changed = marks.changed();
    let deadline = tokio::time::Instant::now() + ttl;
    let mut ended_at: Option<tokio::time::Instant> = None;
    // The shell's P mark is evidence; the proof that the command ended is
    // the kernel's: the shell holds its terminal in its editor again (a mark
    // another program wrote while the command runs is not it). Once seen,
    // it stays proven (the person may start a command right after).
    let mut back = false;
    // When the end was first seen (on the clock of process start times).
    let mut end_seen: Option<u64> = None;
    let finish = loop {
        if let Some(t) = marks.taken(&run.pane, &run.id) {
            back =
                back || (t.done && shell_holds_terminal(&run.pane, &run.tty, &run.shell).is_ok());
            if t.done && !back && still_runs(&run, &mut end_seen) {
                // The terminal's foreground started before the end was
                // marked: the command runs on; the mark was not the shell's.
                tracing::info!(
                    "pane {}: an end mark for run {} while its command still runs: not taken",
                    run.pane,
                    run.id
                );
                marks.reopen(&run.pane, &run.id);
                end_seen = None;
                continue;
            }
            if back {
                let now = tokio::time::Instant::now();
                let since = *ended_at.get_or_insert(now);
                match t.seq.and_then(|s| marks.command(&run.pane, s)) {
                    Some(c) if c.output_done || now - since > ROWS_WAIT => {
                        break Finish::Done {
                            status: t.status.unwrap_or(-1),
                            output: output_of(&c, lines, bytes),
                            elapsed: started.elapsed(),
                        };
                    }
                    Some(_) => {}
                    None => {
                        break Finish::Lost {
                            why: format!(
                                "the shell did not run the line (it was back at its prompt with $? {} and never started a command: did the line parse?)",
                                t.status.map_or("unknown".into(), |s| s.to_string())
                            ),
                            elapsed: started.elapsed(),
                        };
                    }
                }
            }
        }
        if !shell_alive(&run) {
            break Finish::Lost {
                why: "the pane's shell exited before the command ended".into(),
                elapsed: started.elapsed(),
            };
        }
        // Marked ended but not yet back in its editor: its prompt draws.
        let tick = if back || !marks.taken(&run.pane, &run.id).is_some_and(|t| t.done) {
            Duration::from_millis(250)
        } else {
            Duration::from_millis(5)
        };
        tokio::select! {
            _ = changed.changed() => {}
            _ = tokio::time::sleep(tick) => {}
            _ = broker.server_gone() => break Finish::Lost {
                why: "the tmux server exited (or the broker stopped)".into(),
                elapsed: started.elapsed(),
            },
            _ = tokio::time::sleep_until(deadline) => break Finish::Lost {
                why: format!("no status within {} s", ttl.as_secs()),
                elapsed: started.elapsed(),
            },
        }
    };
    (finish, run)
}

/// Whether the terminal's foreground, not the run's shell, was already
/// running when the run's end mark was first seen (`end_seen`, set on the
/// first call): the command the mark said ended. A prompt's hooks start
/// their programs after the mark; start times are kept in clock ticks (10 ms
/// on Linux), hence the margin.
fn still_runs(run: &Run, end_seen: &mut Option<u64>) -> bool {
    use tmux_mcp_core::platform::process_table;
    let Ok(now) = process_table::now_ticks() else {
        return false;
    };
    let seen = *end_seen.get_or_insert(now);
    let margin = process_table::clock_ticks_per_second() / 20;
    let Ok(shell) = process_table::stat(run.shell.pid) else {
        return false;
    };
    if shell.tpgid <= 0 || shell.tpgid == shell.pgrp {
        return false;
    }
    process_table::stat(shell.tpgid as u32).is_ok_and(|fg| fg.start_ticks + margin < seen)
}

/// Whether the run's shell still runs (a zombie, or a later process given
/// its pid, is not it): its own process, not the pane's current record (a
/// command that starts a nested enrolled shell makes that one the pane's,
/// while the run's shell waits for it and still runs).
fn shell_alive(run: &Run) -> bool {
    process_runs_shell(&run.shell)
}

/// The processes under `pid` (children, theirs, …), from the process table.
fn descendants(pid: u32) -> Vec<u32> {
    let Ok(all) = tmux_mcp_core::platform::process_table::all() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut parents = vec![pid];
    while let Some(parent) = parents.pop() {
        for p in all.iter().filter(|p| p.ppid == parent && p.pid != pid) {
            if !out.contains(&p.pid) {
                out.push(p.pid);
                parents.push(p.pid);
            }
        }
    }
    out
}

/// Gives the person's set-aside lines back (bash, fish; zsh's snippet does
/// it itself, from its zle-line-init hook), each only into an empty editor
/// at the primary prompt: the shell's binding keeps the line set aside
/// otherwise. What the person typed during the run waits in the terminal
/// before the chord, so it reaches the editor first: it stays as typed,
/// never joined to the set-aside line, and the line comes back at a later
/// prompt, after the person's next line ([`keep_giving`]), as zsh's buffer
/// stack does.
///
/// Each chord, too, is sent only once the kernel says the shell holds its
/// terminal in its editor (a prompt's hooks may run a program first, which
/// would get the chord); not within [`GIVE_WAIT`], it is not sent (the line
/// stays set aside until the next prompt's try).
pub async fn give_back(broker: &Arc<Broker>, run: &Run) {
    if run.shell.name == "zsh" {
        return;
    }
    let said = broker.marks.held(&run.pane, run.shell.pid);
    match said.lines {
        // A snippet from before `K` (the new one says `K` as it sets a line
        // aside): its one line, given back once, no answer awaited.
        None if run.taken.kept > 0 => {
            give(broker, &run.pane, &run.tty, &run.shell, false).await;
            return;
        }
        None | Some(0) => return,
        Some(_) => {}
    }
    let answer = give(broker, &run.pane, &run.tty, &run.shell, true).await;
    if let Some(held) = answer.filter(|h| h.lines.is_some_and(|n| n > 0)) {
        tokio::spawn(keep_giving(
            broker.clone(),
            run.pane.clone(),
            run.tty.clone(),
            run.shell.clone(),
            held,
        ));
    }
}

/// One give-back chord, once the kernel says the shell holds its terminal;
/// with `answer`, what the shell holds after it, as it answered (`K`), or
/// `None` (not sent, or no answer).
async fn give(
    broker: &Broker,
    pane: &str,
    tty: &str,
    shell: &ShellRecord,
    answer: bool,
) -> Option<Held> {
    let marks = &broker.marks;
    let until = Instant::now() + GIVE_WAIT;
    while let Err(why) = shell_holds_terminal(pane, tty, shell) {
        if Instant::now() >= until {
            tracing::info!("the person's line was not given back in {pane}: {why}");
            return None;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let before = marks.held(pane, shell.pid).said;
    let mut changed = marks.changed();
    let argv = chord(pane, GIVE);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let _ = crate::toolkit::acting::tmux_command::run_command(broker, &argv).await;
    if !answer {
        return None;
    }
    let answer = async {
        loop {
            let now = marks.held(pane, shell.pid);
            if now.said > before {
                return now;
            }
            let _ = tokio::time::timeout(Duration::from_millis(100), changed.changed()).await;
        }
    };
    tokio::time::timeout(TAKE_WAIT, answer).await.ok()
}

/// The shell still holds a line set aside (the person's own was in the
/// editor): one more give-back chord after each later prompt it reports
/// (`P`: the person's next line ended, or an empty one), until it holds
/// none, the shell ends or the server goes. One per pane, holding no run's
/// turn but while it gives (a run's own give-back, at its end, comes first).
/// `seen`: the shell's answer to the last chord.
async fn keep_giving(
    broker: Arc<Broker>,
    pane: String,
    tty: String,
    shell: ShellRecord,
    mut seen: Held,
) {
    struct Claim(Arc<Broker>, String);
    impl Drop for Claim {
        fn drop(&mut self) {
            self.0.marks.release_giver(&self.1);
        }
    }
    if !broker.marks.claim_giver(&pane) {
        return;
    }
    let _claim = Claim(broker.clone(), pane.clone());
    let marks = &broker.marks;
    let mut changed = marks.changed();
    loop {
        let now = marks.held(&pane, shell.pid);
        if now.lines.unwrap_or(0) == 0 || !process_runs_shell(&shell) {
            return;
        }
        if now.prompts > seen.prompts {
            let lock = marks.run_lock(&pane);
            let _turn = lock.lock().await;
            let now = marks.held(&pane, shell.pid);
            // A run in between set a line aside or gave one back at its
            // own end: wait for the prompt after that.
            let run_between = now.said != seen.said;
            seen = now;
            if !run_between {
                if let Some(answer) = give(&broker, &pane, &tty, &shell, true).await {
                    seen = answer;
                }
            }
            continue;
        }
        tokio::select! {
            _ = changed.changed() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = broker.server_gone() => return,
        }
    }
}

fn process_runs_shell(shell: &ShellRecord) -> bool {
    tmux_mcp_engine::marks::process_runs(shell.pid, shell.start)
}

/// The command's rows as a job's output, its tail within the limits.
fn output_of(c: &Command, max_lines: usize, max_bytes: usize) -> Output {
    let Some(o) = &c.output else {
        return Output {
            text: format!(
                "(the rows it printed could not be read: {})",
                c.output_missing.as_deref().unwrap_or("not yet read")
            ),
            total_bytes: 0,
            total_lines: 0,
            dropped_bytes: 0,
            dropped_lines: 0,
        };
    };
    let total_lines = (o.dropped + o.lines.len()) as u64;
    // The last line without its newline when the command printed none.
    let total_bytes: u64 = o.lines.iter().map(|l| l.len() as u64 + 1).sum::<u64>()
        - u64::from(o.unterminated && !o.lines.is_empty());
    let mut kept: Vec<&str> = Vec::new();
    let mut size = 0;
    for l in o.lines.iter().rev() {
        if kept.len() == max_lines || size + l.len() + 1 > max_bytes {
            break;
        }
        size += l.len() + 1;
        kept.push(l);
    }
    kept.reverse();
    let mut text = kept.join("\n");
    if !kept.is_empty() && !o.unterminated {
        text.push('\n');
    }
    Output {
        dropped_bytes: total_bytes - text.len() as u64,
        dropped_lines: total_lines - kept.len() as u64,
        text,
        total_bytes,
        total_lines,
    }
}
