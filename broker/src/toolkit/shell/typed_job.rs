//! A `run_command` job typed into a shell that is not enrolled: its
//! directory, the broker's own terminal its command writes to, and the one
//! task that watches it to its end (the line itself: [`crate::toolkit::shell::typed_line`]).
//!
//! The broker opens a pty of its own ([`Mirror`], `/dev/pts/K`), sized like
//! the pane, and links it from the job's directory (`DIR/t`): `test -t 1`
//! holds for programs, and for builtins but in fish, which buffers a
//! redirected block's builtins; colours and progress bars work. The broker
//! copies every byte to the pane's own terminal as it comes, so the person
//! watches the output live, and keeps the same bytes in the job's file
//! (`DIR/out`). The job's directory is 0700, in the broker's private runtime
//! directory (`srv-<gen16>.run-<id16>`), and goes with the job ([`JobDir`]
//! removes it when dropped): a line the shell recalls later fails its
//! redirection and runs nothing, and never names a terminal another process
//! may hold by then.
//!
//! The status comes in band after the output: an APC marker with a nonce of
//! this job, which the broker takes out of both copies. The script's release
//! read holds the shell's next prompt until the broker has put all output on
//! the pane, so the prompt never lands amid it. A job is done once its shell
//! is back at its prompt (the terminal's foreground again and, with a line
//! editor, in it; at most [`PROMPT_WAIT`] after the status), so a call right
//! after finds the shell ready, also where the prompt runs programs (git
//! prompts, starship). A line that never starts (the shell neither writes
//! nor opens the job's terminal within [`START_WAIT`]) ends the job as lost.
//!
//! Waiting is event-driven: the pty's readability, the pidfd of the pane's
//! process (a shell that exits never prints the marker: lost), and the
//! broker seeing the server go. Nothing polls tmux. One broker task per job
//! ([`collect`]) does this and is the only thing the broker starts; it ends
//! when the marker arrives, when the pane's shell or the server goes, or
//! after [`RUNNING_TTL`]. It removes the output file at once, and the
//! directory (with the link the shell still opens for its release) once the
//! shell has read the release.

use crate::jobs::{Finish, Output, RUNNING_TTL};
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::libtmux::wording;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tmux_mcp_engine::mirror::Mirror;
use tmux_mcp_engine::registry::Pane;
use tmux_mcp_engine::Broker;
use tokio::sync::watch;

/// A job's directory: removed, with everything in it, when this guard is
/// dropped. A refusal before the line is typed drops it at once; a typed job
/// hands it to its task ([`TypedJob`]), which drops it last.
pub struct JobDir(PathBuf);

impl JobDir {
    /// Makes job `id`'s directory, 0700, in the broker's runtime directory:
    /// only while that is the private one the broker made, since the
    /// directory holds what the shell sources.
    pub fn make(broker: &Broker, id: &str) -> Result<JobDir, ToolOutput> {
        if let Err(why) = broker.private_dir() {
            return Err(wording::action_error(
                &format!("The job's directory cannot be made: {why}. Nothing was typed."),
                Delivery::NotSent,
            ));
        }
        let dir = job_dir(broker, id);
        if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            return Err(wording::action_error(
                &format!(
                    "Could not make the job directory in the broker's runtime directory: {e}."
                ),
                Delivery::NotSent,
            ));
        }
        Ok(JobDir(dir))
    }

    /// The link to the job's terminal, which the typed line names.
    pub fn link(&self) -> PathBuf {
        self.0.join("t")
    }

    /// The file the command's output is kept in.
    fn out(&self) -> PathBuf {
        self.0.join("out")
    }

    /// Opens the terminal the command writes to, sized like `pane`, its link
    /// and the output file. It exists before the line is typed, so no output
    /// can be missed.
    pub fn open_terminal(&self, pane: &Pane) -> std::io::Result<(Mirror, std::fs::File)> {
        let m = Mirror::open(&pane.tty, clamp_u16(pane.width), clamp_u16(pane.height))?;
        std::os::unix::fs::symlink(m.path(), self.link())?;
        Ok((m, std::fs::File::create(self.out())?))
    }
}

impl Drop for JobDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A job's directory: `srv-<gen16>.run-<id>` next to this broker's socket in
/// the runtime directory (which brokers of other servers share), so whose it
/// is can be told from its name.
fn job_dir(broker: &Broker, id: &str) -> PathBuf {
    let stem = broker
        .paths
        .socket
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    // 64 bits of the job's id name it uniquely and keep the typed line short.
    let short = id.get(..16).unwrap_or(id);
    broker.paths.dir.join(format!("{stem}.run-{short}"))
}

/// The process in the foreground of `pane_pid`'s terminal: the shell at the
/// prompt (the pane's own process, or a shell started inside it).
pub fn foreground_pid(pane_pid: u32) -> Option<u32> {
    let st = tmux_mcp_core::platform::process_table::stat(pane_pid).ok()?;
    u32::try_from(st.tpgid).ok().filter(|&p| p > 0)
}

/// Why a job ended when the server went.
const SERVER_GONE: &str = "the tmux server exited (or the broker stopped)";

/// A pane size as a terminal size.
fn clamp_u16(n: u32) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// A typed job, as its task ([`collect`]) watches it for the end: the
/// terminal the command writes to, and the job's directory and the file its
/// output is kept in there.
pub struct TypedJob {
    pub dir: JobDir,
    pub mirror: Mirror,
    pub out: std::fs::File,
    /// The shell the line was typed into, watched for opening the terminal.
    pub shell_pid: Option<u32>,
    /// The pane's process and terminal, and whether its shell has a line
    /// editor: what tells that the shell is back at its prompt.
    pub pane_pid: u32,
    pub tty: String,
    pub editor: bool,
}

/// How long a job that has its status waits for its shell to be back at the
/// prompt before it is done anyway (a prompt that runs programs, as git
/// prompts and starship do, takes its time).
const PROMPT_WAIT: Duration = Duration::from_secs(3);

/// Waits (at most [`PROMPT_WAIT`]) until the shell is back at its prompt
/// after the end marker: the foreground of its terminal again (until then
/// fish's `cat | source`, the `head` of its script, or a program the prompt
/// runs hold it, and tmux names that program, or the pane's first word when
/// its group's leader has gone) and, for a shell with a line editor, in the
/// editor (the terminal out of cooked mode). So a job that is done leaves a
/// shell the next call finds at its prompt, as a person would.
async fn back_at_prompt(pane_pid: u32, shell_pid: Option<u32>, tty: &str, editor: bool) {
    let Some(shell_pid) = shell_pid else { return };
    let deadline = tokio::time::Instant::now() + PROMPT_WAIT;
    loop {
        let ready = foreground_pid(pane_pid) == Some(shell_pid)
            && !(editor && tmux_mcp_engine::mirror::canonical(tty).unwrap_or(false));
        if ready || tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// How long the typed line has to start (the shell opening the job's
/// terminal for the command's output, or any output) before the job ends as
/// never run.
const START_WAIT: Duration = Duration::from_secs(5);

/// Why a job ended when its line never ran.
const NEVER_RAN: &str = "the shell did not run the typed line: it never opened the job's terminal within 5 s (the line did not parse in the interactive shell, or its editor did not take it as a new command); the job's terminal is gone, so the line does nothing if it runs later";

/// Resolves when, [`START_WAIT`] after typing, the shell has neither written
/// output nor opened the job's terminal; pending for ever once it has (or
/// when the shell is unknown).
async fn never_started(shell_pid: Option<u32>, link: &Path, output: &AtomicBool) {
    let Some(pid) = shell_pid else {
        return std::future::pending().await;
    };
    let until = tokio::time::Instant::now() + START_WAIT;
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let opened = tmux_mcp_core::platform::process_table::holds_open(pid, link);
        if output.load(Ordering::Relaxed) || matches!(opened, Ok(true)) {
            return std::future::pending().await;
        }
        if tokio::time::Instant::now() >= until {
            return;
        }
    }
}

/// The output a job keeps: at most `lines` lines and `bytes` bytes, from the end.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub lines: usize,
    pub bytes: usize,
}

/// The job's one task: copies the command's output to the pane and the job's
/// file until the end marker comes, the pane's shell exits, the server goes,
/// or [`RUNNING_TTL`] passes (events only: nothing polls tmux); records the
/// result and removes the job directory.
pub async fn collect(
    broker: Arc<Broker>,
    job: TypedJob,
    identity: Option<Arc<tmux_mcp_core::process::ProcessIdentity>>,
    limits: Limits,
    started: Instant,
    tx: watch::Sender<Option<Finish>>,
) {
    let TypedJob {
        dir,
        mut mirror,
        out,
        shell_pid,
        pane_pid,
        tty,
        editor,
    } = job;
    let status = status(
        &broker,
        &mut mirror,
        out,
        identity.as_deref(),
        shell_pid,
        &dir,
    )
    .await;
    let elapsed = started.elapsed();
    if status.is_ok() {
        tokio::select! {
            _ = back_at_prompt(pane_pid, shell_pid, &tty, editor) => {}
            _ = broker.server_gone() => {}
        }
    }
    let finish = match status {
        Ok(status) => Finish::Done {
            status,
            output: kept(dir.out(), limits).await,
            elapsed,
        },
        Err(why) => Finish::Lost {
            why,
            elapsed: started.elapsed(),
        },
    };
    let done = matches!(finish, Finish::Done { .. });
    let _ = std::fs::remove_file(dir.out());
    tx.send_replace(Some(finish));
    if done {
        // The shell still opens the job's link after the marker (the
        // release `read`, fish's `head`): the link goes once it has read
        // its release (Mirror::close, at most ~2 s), or the server goes.
        tokio::select! {
            _ = mirror.close() => {}
            _ = broker.server_gone() => {}
        }
    }
    drop(dir);
}

/// The command's status, from the end marker on its terminal (every byte
/// before it copied to the pane and to `out`), or why none came: the pane's
/// shell exited, the server went, the line never started, or
/// [`RUNNING_TTL`] passed.
async fn status(
    broker: &Broker,
    mirror: &mut Mirror,
    mut out: std::fs::File,
    identity: Option<&tmux_mcp_core::process::ProcessIdentity>,
    shell_pid: Option<u32>,
    dir: &JobDir,
) -> Result<i32, String> {
    let deadline = tokio::time::Instant::now() + RUNNING_TTL;
    let output = AtomicBool::new(false);
    let link = dir.link();
    let run = mirror.run(|b| {
        output.store(true, Ordering::Relaxed);
        let _ = out.write_all(b);
    });
    tokio::pin!(run);
    let failed = |e: std::io::Error| format!("reading the command's terminal failed: {e}");
    tokio::select! {
        r = &mut run => r.map_err(failed),
        _ = async { match identity { Some(i) => i.wait_exit().await, None => std::future::pending().await } } => {
            // The shell may have printed the marker just before exiting;
            // a server that goes meanwhile still ends the job at once (the
            // broker exits right after, and the directory must go first).
            tokio::select! {
                r = tokio::time::timeout(Duration::from_millis(50), &mut run) => match r {
                    Ok(r) => r.map_err(failed),
                    Err(_) => Err("the pane's shell exited before the command's status came".into()),
                },
                _ = broker.server_gone() => Err(SERVER_GONE.into()),
            }
        }
        _ = broker.server_gone() => Err(SERVER_GONE.into()),
        _ = never_started(shell_pid, &link, &output) => Err(NEVER_RAN.into()),
        _ = tokio::time::sleep_until(deadline) => Err(format!("no status within {} s; the job was dropped", RUNNING_TTL.as_secs())),
    }
}

/// The output kept from the job's file (read off the runtime threads: the
/// file may be large), or a line saying why it could not be read.
async fn kept(path: PathBuf, limits: Limits) -> Output {
    let read = tokio::task::spawn_blocking(move || read_tail(&path, limits))
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
    read.unwrap_or_else(|e| Output {
        text: format!("(the output file could not be read: {e})"),
        total_bytes: 0,
        total_lines: 0,
        dropped_bytes: 0,
        dropped_lines: 0,
    })
}

/// The file's last lines within `limits`, and what was dropped before them.
fn read_tail(path: &Path, limits: Limits) -> std::io::Result<Output> {
    let mut f = std::fs::File::open(path)?;
    let total = f.metadata()?.len();
    // Count lines in one streaming pass (the file may be far larger than the tail).
    let mut newlines = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    let mut last = b'\n';
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        newlines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        last = buf[n - 1];
    }
    let total_lines = newlines + u64::from(total > 0 && last != b'\n');
    let start = total.saturating_sub(limits.bytes as u64);
    f.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail)?;
    Ok(cut_tail(tail, start > 0, total, total_lines, limits.lines))
}

/// Keeps whole lines of `tail` (its first, partial line dropped when the cut
/// fell inside it) and at most `max_lines` of them.
fn cut_tail(
    tail: Vec<u8>,
    cut_mid_file: bool,
    total: u64,
    total_lines: u64,
    max_lines: usize,
) -> Output {
    let mut from = 0;
    if cut_mid_file {
        if let Some(nl) = tail.iter().position(|&b| b == b'\n') {
            from = nl + 1;
        }
    }
    let body = &tail[from..];
    // Line starts from the end: keep the last max_lines lines.
    let ends_nl = body.last() == Some(&b'\n');
    let mut count = 0;
    let mut keep_from = 0;
    for (i, &b) in body.iter().enumerate().rev() {
        if b == b'\n' && !(ends_nl && i == body.len() - 1) {
            count += 1;
            if count == max_lines {
                keep_from = i + 1;
                break;
            }
        }
    }
    let kept = &body[keep_from..];
    let kept_lines = kept.iter().filter(|&&b| b == b'\n').count() as u64
        + u64::from(!kept.is_empty() && !ends_nl);
    Output {
        text: String::from_utf8_lossy(kept).into_owned(),
        total_bytes: total,
        total_lines,
        dropped_bytes: total - kept.len() as u64,
        dropped_lines: total_lines - kept_lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_whole_last_lines_and_counts_what_was_dropped() {
        let text: String = (1..=10).map(|i| format!("line{i}\n")).collect();
        let all = cut_tail(text.clone().into_bytes(), false, text.len() as u64, 10, 3);
        assert_eq!(all.text, "line8\nline9\nline10\n");
        assert_eq!(
            (all.dropped_lines, all.dropped_bytes),
            (7, (text.len() - all.text.len()) as u64)
        );
        // A byte cut inside a line drops that partial line too.
        let tail = text.as_bytes()[text.len() - 10..].to_vec();
        let o = cut_tail(tail, true, text.len() as u64, 10, 100);
        assert_eq!(o.text, "line10\n");
        assert_eq!(o.dropped_lines, 9);
        let o = cut_tail(b"no newline".to_vec(), false, 10, 1, 5);
        assert_eq!(
            (o.text.as_str(), o.dropped_lines, o.dropped_bytes),
            ("no newline", 0, 0)
        );
    }

    #[test]
    fn the_guard_removes_the_job_directory_with_what_is_in_it() {
        let path = std::env::temp_dir().join(format!("tmcp-jobdir-{}", std::process::id()));
        std::fs::create_dir(&path).unwrap();
        let dir = JobDir(path.clone());
        std::os::unix::fs::symlink("/dev/null", dir.link()).unwrap();
        std::fs::write(dir.out(), "output").unwrap();
        drop(dir);
        assert!(!path.exists());
    }
}
