//! `run_command` (libtmux family, mutating): a command line run by the shell
//! at the prompt of a pane, with its real exit status and its output.
//!
//! Design: the broker opens a pty of its own ([`Mirror`], `/dev/pts/K`),
//! links it from the job's directory (`DIR/t`), queues a one-line script in
//! its input (see [`script`]), proves the shell's line empty
//! ([`shell_line`]: never typed into a line the person started), and types
//! one line into the shell,
//!
//! ```text
//!  { CMD; } >DIR/t 2>&1; . DIR/t
//! ```
//!
//! (the group closes on a line of its own when CMD could swallow `; }`).
//! After the command the shell sources the pty: the script prints the end
//! marker with `$?`, in bash takes the typed line out of history, waits for
//! the broker's release and returns the status, so `$?` is the command's;
//! none of it is shown in the pane. The link goes with the job: the line
//! recalled later fails its redirection and runs nothing, and never names a
//! terminal another process may hold by then.
//!
//! The command writes to that pty, a terminal sized like the pane (`test -t 1`
//! holds for programs, and for builtins but in fish, which buffers a
//! redirected block's builtins; colours and progress bars work); the broker
//! copies every byte to the pane's own terminal as it comes, so the person
//! watches the output live, and keeps the same bytes in the job's file (the
//! job's 0700 directory in the broker's private runtime directory,
//! `srv-<gen16>.run-<id16>`). The status comes in band after the output: an APC
//! marker with a nonce of this job, which the broker takes out of both copies
//! (the nonce is never on the screen and the typed line holds no marker, so
//! the result is echo-proof). The script's `read` holds the shell's next
//! prompt until the broker has put all output on the pane, so the prompt
//! never lands amid it. `{ …; }` runs in the shell itself, so `cd` and
//! `export` persist as if the person had typed them; closing the group on a
//! line of its own lets CMD end in `&` or a comment. In bash the line is taken out of
//! history; elsewhere the leading space keeps it out where
//! `HIST_IGNORE_SPACE` (zsh) is set.
//!
//! A job is done once its shell is back at its prompt (the terminal's
//! foreground again and, with a line editor, in it; at most
//! [`PROMPT_WAIT`] after the status), so a call right after finds the shell
//! ready, also where the prompt runs programs (git prompts, starship).
//!
//! Before typing, the shell's own parse of the line (`-n`) refuses a line it
//! would reject; a line that still never starts (the shell neither writes
//! nor opens the job's terminal within [`START_WAIT`]) ends the job as lost.
//!
//! Waiting is event-driven: the pty's readability, the pidfd of the pane's
//! process (a shell that exits never prints the marker: `lost`), and the
//! broker seeing the server go. Nothing polls tmux. One broker task per job
//! does this and is the only thing the broker starts; it ends when the marker
//! arrives, when the pane's shell or the server goes, or after [`RUNNING_TTL`],
//! and removes the output file at once and the directory (with the link the
//! shell still opens for its release) once the shell has read the release.
//!
//! The typed command runs in the person's shell and keeps running whatever
//! happens to the call: a blocking call that reaches its timeout returns the
//! job (`state: running`, `jobId`) to collect with `get_job`; a call the client
//! cancels leaves the job to finish, after which it is dropped with its files
//! (nobody holds its id). Jobs live in broker memory, owned like retained
//! cursors (readable by sessions whose view covers the maker's), at most
//! [`crate::jobs::MAX_JOBS_PER_AGENT`] running or uncollected per agent and [`crate::jobs::MAX_JOBS`] in
//! all (collected ones make room first), each keeping at most
//! `maxOutputBytes` (≤ 256 KiB) of output tail and its command (≤ 16 KiB), so
//! at most about 35 MiB; a finished job stays readable [`DONE_TTL`]. The cap
//! is checked before typing and the job recorded after, so calls racing each
//! other can pass it by the number running at once.
//!
//! In fish the same is spelled `begin; CMD; end >PTY 2>&1; cat PTY | source`
//! (fish sources only regular files), with `$status` and an external `head`
//! for the release.
//!
//! Refused with nothing sent: a pane whose foreground program is not a shell
//! run_command types for (sh, bash, zsh, dash, ksh, mksh, ash, busybox, fish;
//! csh and others have other syntax and are refused by name), a pane in copy mode or on the alternate
//! screen, a dead pane, the agent's own pane without `--allow-self`, a line
//! that is not proven empty (the probe's keys taken back), a line that does
//! not parse.

use crate::jobs::{admit, prune, Finish, Job, JobState, Jobs, Output};
use crate::session::Session;
use crate::toolkit::act;
use crate::toolkit::enrolled::{self, ShellRecord};
use crate::toolkit::envelope::Delivery;
use crate::toolkit::ids::{Generation, PaneId};
use crate::toolkit::job::{for_run_command, lookup, summary, view, JobView};
use crate::toolkit::shell_line;
use crate::toolkit::shell_run;
use crate::toolkit::shells::{self, Syntax};
use crate::toolkit::spec::{
    reporting, Annotations, Call, CallFuture, Progress, ToolOutput, ToolSpec,
};
use crate::toolkit::typed::schema_of;
use crate::toolkit::typing::{self, Input};
use serde::Deserialize;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tmux_mcp_engine::mirror::Mirror;
use tmux_mcp_engine::registry::Pane;
use tmux_mcp_engine::tty_watch::TtyWatch;
use tmux_mcp_engine::Broker;
use tokio::sync::watch;

pub const SPEC: ToolSpec = ToolSpec::new(
    "run_command",
    Annotations::mutating("Run a command in a pane's shell", false),
    crate::toolkit::typed::input_of::<Args>,
    schema_of::<JobView>,
    run,
)
.description("Run a shell command line in a pane's shell (at its prompt); returns the exit status and output, never read from the screen.")
.details("Run a shell command line in a pane's shell (the pane must be at a sh/bash/zsh/dash/ksh/ash/fish prompt, not in copy mode or a full-screen program) and return its real exit status and output (stdout and stderr together; the tail is kept, at most maxLines/maxOutputBytes, and what was dropped is reported). The command writes to a terminal of the broker's sized like the pane (test -t 1 holds; colours kept as written) whose every byte is shown live in the pane and kept for the result; the status comes after the output through the same terminal, never from the screen, so the shell's echo cannot be mistaken for the result. The command runs in the person's shell (cd/export persist). timeoutMs is clamped to the request timeout (reported); on timeout, or with detach:true, the result is a running job to collect with get_job. The result: state, exitStatus, output {text; totalBytes, totalLines, droppedBytes, droppedLines only when something was dropped} and elapsedMs (not the pane or the command line given); jobId (for get_job) with detach:true, or while the job is still running, with the wait used, timeoutMs and timeoutClamped (when true). The command keeps running in the shell whatever happens to the call (timeout, detach, cancellation). Refused (nothing typed) for csh and other non-POSIX shells but fish, panes busy with another program, dead panes. Mutating tier; the agent's own pane needs --allow-self.");

/// How long a job's status is awaited before the job is dropped.
pub const RUNNING_TTL: Duration = Duration::from_secs(3600);
const MAX_OUTPUT_BYTES: usize = 262_144;
const DEFAULT_OUTPUT_BYTES: usize = 65_536;
const DEFAULT_LINES: usize = 1000;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
    generation: Option<Generation>,
    /// Newlines allowed, no other control character (write \t as $'\t').
    ///
    /// The shell's line editor would act on a control character: Tab
    /// completes, CR submits.
    #[schemars(
        length(min = 1, max = 16384),
        regex(pattern = crate::toolkit::refs::NO_CONTROL_BUT_LF)
    )]
    command: String,
    // Capped at the request timeout (the result says so).
    #[schemars(range(min = 1, max = 3_600_000))]
    timeout_ms: Option<u64>,
    /// Return at once with a jobId for get_job.
    #[serde(default)]
    detach: bool,
    /// Kept from the end (default 1000).
    #[schemars(range(min = 1, max = 100_000))]
    max_lines: Option<usize>,
    /// Kept from the end (default 65536).
    #[schemars(range(min = 1, max = MAX_OUTPUT_BYTES))]
    max_output_bytes: Option<usize>,
}

/// Marks the job orphaned when the blocking call is dropped before answering.
struct CancelGuard<'a>(&'a Jobs, Option<String>);

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.1.take() {
            if let Some(j) = self.0.lock().get_mut(&id) {
                j.orphaned = true;
            }
        }
    }
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    let progress = c.progress.clone();
    c.run(move |session, args| call(session, args, progress))
}

async fn call(
    session: &Session,
    args: Args,
    progress: Option<Progress>,
) -> Result<ToolOutput, ToolOutput> {
    let broker = &session.broker;
    let asked_ms = args
        .timeout_ms
        .unwrap_or((session.request_timeout_seconds * 1000.0) as u64);
    let cap_ms = (session.request_timeout_seconds * 1000.0) as u64;
    let timeout_ms = asked_ms.min(cap_ms);
    let target = act::typing_target(session, &args.pane_id, args.generation.as_deref()).await?;
    let pane = target.panes[0].clone();
    // An enrolled shell is asked, not typed into (a run of another
    // agent's in it is waited for, so this comes before the checks of
    // what the pane shows).
    if let Some(sh) = enrolled::shell(session, &pane.id) {
        return Ok(enrolled_run(
            session,
            &pane,
            sh,
            &args,
            timeout_ms,
            asked_ms,
            progress.as_ref(),
        )
        .await);
    }
    let (shell, syntax) = match shell_of(&pane.command) {
        Ok(s) => s,
        Err(why) => {
            return Err(act::error(
                &format!(
                    "Pane {} is not at a shell prompt run_command can type into: {why}",
                    pane.id
                ),
                Delivery::NotSent,
            ))
        }
    };
    if pane.in_mode != 0 {
        return Err(act::error(&format!("Pane {} is in copy mode (or another mode); the typed line would not reach its shell.", pane.id), Delivery::NotSent));
    }
    if act::pane_flags(session, &pane.id, &["#{alternate_on}"]).await?[0] != Some(false) {
        return Err(act::error(&format!("Pane {} shows the alternate screen (a full-screen program); it is not at a shell prompt.", pane.id), Delivery::NotSent));
    }
    let owner = session.owner();
    let id = tmux_mcp_core::sys::random_hex(16);
    if let Err(why) = admit(&mut session.jobs.lock(), owner.agent) {
        return Err(act::error(&why, Delivery::NotSent));
    }
    // The job's directory holds what the shell sources: never made in a
    // runtime directory someone made again after the broker's went.
    if let Err(why) = broker.private_dir() {
        return Err(act::error(
            &format!("The job's directory cannot be made: {why}. Nothing was typed."),
            Delivery::NotSent,
        ));
    }
    let dir = job_dir(broker, &id);
    if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        return Err(act::error(
            &format!("Could not make the job directory in the broker's runtime directory: {e}."),
            Delivery::NotSent,
        ));
    }
    // The terminal the command writes to exists before the line is typed,
    // so no output can be missed. The line names it through a link in the
    // job's directory, which goes with the job: a line the shell recalls
    // later names a path that no longer exists (its redirection fails, so
    // nothing runs), never a terminal someone else may hold by then.
    let opened =
        Mirror::open(&pane.tty, clamp_u16(pane.width), clamp_u16(pane.height)).and_then(|m| {
            std::os::unix::fs::symlink(m.path(), dir.join("t"))?;
            Ok((m, std::fs::File::create(dir.join("out"))?))
        });
    let (mirror, out) = match opened {
        Ok(o) => o,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(act::error(
                &format!("Could not open the terminal the command's output is shown through ({e}); nothing was typed."),
                Delivery::NotSent,
            ));
        }
    };
    let link = dir.join("t");
    let link_word = shell_path(&link.to_string_lossy(), syntax);
    if let Err(e) = mirror.preload(&script(&mirror.marker_format(), &link_word, shell, syntax)) {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(act::error(
            &format!("Could not prepare the terminal the command's output is shown through ({e}); nothing was typed."),
            Delivery::NotSent,
        ));
    }
    let line = typed_line(&args.command, &link_word, syntax);
    // The shell in the foreground of the pane's terminal (the pane's own
    // process, or a shell started inside it).
    let shell_pid = foreground_pid(pane.pid);
    if let Some(why) = syntax_error(shell_pid, syntax, &line).await {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(act::error(
            &format!("The command does not parse in the pane's shell ({shell}): {why}. Nothing was typed into pane {}.", pane.id),
            Delivery::NotSent,
        ));
    }
    if shell == "zsh" && zsh_has_comment(shell_pid, &args.command).await {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(act::error(
            &format!("The command holds a comment (`# …`), which an interactive zsh runs as words unless its INTERACTIVE_COMMENTS option is set (off by default), where the parse check reads a comment: pane {}'s shell could mean something else. Remove the comment, or enroll the shell (tmux-mcp shell-init zsh), which tells its options.", pane.id),
            Delivery::NotSent,
        ));
    }
    // The line must be empty: proven by the probe, whose space is the
    // typed line's first character.
    let spaced = match prove_empty(session, &pane, shell).await {
        Ok(spaced) => spaced,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
    };
    let rest = if spaced {
        line.strip_prefix(' ').unwrap_or(&line)
    } else {
        &line
    };
    let mut commands = typing::commands(&pane.id, Input::Text(rest));
    commands.push(vec![
        "send-keys".into(),
        "-t".into(),
        pane.id.clone(),
        "Enter".into(),
    ]);
    let started = Instant::now();
    if let Err((_, f)) = typing::deliver(session, &commands).await {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(act::error(&format!("Typing the command line failed part way (the pane's shell received its first space and perhaps more): {}", f.message.trim_end_matches(" Nothing was sent.")), Delivery::Observed));
    }
    let (tx, rx) = watch::channel(None);
    let limits = args.limits();
    let identity = pane.process.as_ref().ok().cloned();
    let (pane_pid, tty) = (pane.pid, pane.tty.clone());
    let editor = shells::has_line_editor(shell);
    let (broker, jobs) = (broker.clone(), session.jobs.clone());
    tokio::spawn(async move {
        let ended = Ended {
            dir,
            mirror,
            out,
            shell_pid,
            pane_pid,
            tty,
            editor,
        };
        collect(broker, ended, identity, limits, started, tx).await;
        prune(&mut jobs.lock());
    });
    let job = Job::new(
        owner,
        session.generation(),
        &pane.id,
        &args.command,
        started,
        rx,
    );
    Ok(answer(
        session,
        &id,
        job,
        args.detach,
        timeout_ms,
        asked_ms,
        progress.as_ref(),
    )
    .await)
}

/// `run_command` in an enrolled shell ([`shell_run`]): the shell's line
/// editor takes the command as if typed; only a key chord is sent.
async fn enrolled_run(
    session: &Session,
    pane: &Pane,
    sh: ShellRecord,
    args: &Args,
    timeout_ms: u64,
    asked_ms: u64,
    progress: Option<&Progress>,
) -> ToolOutput {
    if pane.in_mode != 0 {
        return act::error(&format!("Pane {} is in copy mode (or another mode); its shell's line editor would not get the key chord.", pane.id), Delivery::NotSent);
    }
    if let Some(syntax) = shells::kind(&sh.name).1 {
        if let Some(why) = syntax_error(Some(sh.pid), syntax, &args.command).await {
            return act::error(
                &format!(
                    "The command does not parse in the pane's shell ({}): {why}.",
                    sh.name
                ),
                Delivery::NotSent,
            );
        }
    }
    let owner = session.owner();
    if let Err(why) = admit(&mut session.jobs.lock(), owner.agent) {
        return act::error(&why, Delivery::NotSent);
    }
    let id = tmux_mcp_core::sys::random_hex(16);
    let run = match shell_run::start(
        session,
        pane,
        shell_run::Request::Line(&args.command),
        &id,
        Duration::from_millis(timeout_ms),
    )
    .await
    {
        Ok(r) => r,
        // act::error says itself whether anything was sent.
        Err(e) => return act::error(e.message.trim_end_matches(" Nothing was sent."), e.delivery),
    };
    let started = Instant::now();
    let (tx, rx) = watch::channel(None);
    let Limits { lines, bytes } = args.limits();
    let (broker, jobs) = (session.broker.clone(), session.jobs.clone());
    tokio::spawn(async move {
        let (finish, run) =
            shell_run::finish(broker.clone(), run, lines, bytes, started, RUNNING_TTL).await;
        // The person's line is back before the agent hears of the end.
        shell_run::give_back(&broker, &run).await;
        tx.send_replace(Some(finish));
        prune(&mut jobs.lock());
    });
    let job = Job::new(
        owner,
        session.generation(),
        &pane.id,
        &args.command,
        started,
        rx,
    );
    answer(
        session,
        &id,
        job,
        args.detach,
        timeout_ms,
        asked_ms,
        progress,
    )
    .await
}

/// Records the job, then answers: at once with `detach`, else when it
/// finishes or the wait ends (a running job to collect with get_job). While
/// it waits, `progress` (the call's `progressToken`) hears every second how
/// long, as the waits' progress does.
async fn answer(
    session: &Session,
    id: &str,
    job: Job,
    detach: bool,
    timeout_ms: u64,
    asked_ms: u64,
    progress: Option<&Progress>,
) -> ToolOutput {
    let id = id.to_string();
    session.jobs.lock().insert(id.clone(), job);
    if detach {
        // detach asked for a job to collect: its id, whatever its state.
        return match lookup(session, &id).map(for_run_command) {
            Some(mut v) => {
                v.job_id = Some(id.clone());
                ToolOutput::typed(&v, summary(&v))
            }
            None => act::error(
                &format!("Job {id} vanished right after it was started."),
                Delivery::Observed,
            ),
        };
    }
    wait_job(session, &id, timeout_ms, asked_ms, progress).await
}

/// Waits for job `id` of this session to finish, at most `timeout_ms`
/// (reporting progress meanwhile), then answers with it: finished (and
/// collected: it leaves the table), or still running (to collect with
/// get_job). `asked_ms` is what the caller asked for, when it was clamped.
pub async fn wait_job(
    session: &Session,
    id: &str,
    timeout_ms: u64,
    asked_ms: u64,
    progress: Option<&Progress>,
) -> ToolOutput {
    let id = id.to_string();
    let Some(rx) = session.jobs.lock().get(&id).map(|j| j.finish.clone()) else {
        return act::error(
            &format!("No job {id} for this session."),
            Delivery::Observed,
        );
    };
    let mut guard = CancelGuard(&session.jobs, Some(id.clone()));
    let mut rx = rx;
    let waiting = async {
        let _ = tokio::time::timeout(
            Duration::from_millis(timeout_ms),
            rx.wait_for(Option::is_some),
        )
        .await;
    };
    let total = timeout_ms as f64 / 1000.0;
    reporting(progress, total, &format!("job {id} running"), waiting).await;
    guard.1 = None;
    let v = {
        let mut table = session.jobs.lock();
        let Some(job) = table.get(&id) else {
            return act::error("The job vanished.", Delivery::Observed);
        };
        let v = view(job, &id);
        // A blocking call that got the result has collected the job.
        if v.state != JobState::Running {
            table.remove(&id);
        }
        v
    };
    let mut v = for_run_command(v);
    // The wait matters when it ran out: the job is still running.
    if v.state == JobState::Running {
        v.timeout_ms = Some(timeout_ms);
        v.timeout_clamped = timeout_ms < asked_ms;
    }
    let mut text = summary(&v);
    if timeout_ms < asked_ms && v.state == JobState::Running {
        text.push_str(&format!(" (timeoutMs {asked_ms} was clamped to the request timeout {timeout_ms} ms; `set -g @mcp-request-timeout SECONDS` raises it)"));
    }
    ToolOutput::typed(&v, text)
}

use std::os::unix::fs::DirBuilderExt;

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

/// The shell `command` (`pane_current_command`) names, if this tool can type
/// into it; the error says why not.
fn shell_of(command: &str) -> Result<(&str, Syntax), String> {
    match shells::kind(command) {
        (name, Some(Syntax::Other)) => Err(format!("its shell is {name}, whose syntax run_command does not type; it supports sh, bash, zsh, dash, ksh, ash and fish (use send_keys there).")),
        (name, Some(syntax)) => Ok((name, syntax)),
        (_, None) => Err(format!("its foreground program is {command:?}, not a shell (sh, bash, zsh, dash, ksh, ash, fish); wait until it ends, or use send_keys.")),
    }
}

/// The line typed into the shell (see the module doc): the command in a
/// group whose output goes to the broker's pty, then the shell reads
/// [`script`] from that pty (`. PTY`; fish sources only regular files, so
/// `cat PTY | source`, which also reads it whole). One line when nothing in
/// CMD could swallow the group's end (a comment, a trailing `&`, `;`, `|` or
/// `\`, several lines); else the group closes on a line of its own.
fn typed_line(command: &str, tty: &str, syntax: Syntax) -> String {
    let tail = command.trim_end();
    let one_line = !command.contains(['\n', '#'])
        && !tail.is_empty()
        && !tail.ends_with(['&', ';', '|', '\\']);
    let close = if one_line { "; " } else { "\n" };
    match syntax {
        Syntax::Fish => format!(" begin; {command}{close}end >{tty} 2>&1; cat {tty} | source"),
        _ => format!(" {{ {command}{close}}} >{tty} 2>&1; . {tty}"),
    }
}

/// What the shell reads from the pty after the command (never shown in the
/// pane): the end marker with the status, in bash the deletion of the typed
/// line from history (`history -d -1`, bash 5.0+, silent where history is
/// off or older; after the command, so only a command that adds history
/// itself could lose its line), the wait for the broker's release, and last
/// the command's status given back (`return` from the sourced script), so
/// `$?` at the next prompt is the command's, as if the person had typed it.
/// fish has read the script whole through `cat`, so one external read waits
/// (its own `read` would open its line editor on a terminal).
/// `marker` is the printf format of the job's end marker, `tty` the
/// terminal's path as a shell word.
fn script(marker: &str, tty: &str, shell: &str, syntax: Syntax) -> String {
    if syntax == Syntax::Fish {
        return format!(
            "set -l {STATUS_VAR} $status; printf '{marker}' ${STATUS_VAR} >{tty}; head -n 1 <{tty} >/dev/null; return ${STATUS_VAR}"
        );
    }
    let forget = if shell == "bash" {
        " history -d -1 2>/dev/null;"
    } else {
        ""
    };
    format!(
        "{STATUS_VAR}=$?; printf '{marker}' \"${STATUS_VAR}\" >{tty};{forget} {}; eval \"unset {STATUS_VAR}; return ${STATUS_VAR}\"",
        tmux_mcp_engine::mirror::release_read(tty)
    )
}

/// The variable the script keeps the status in until it returns it (unset
/// again before the prompt; fish's is local to the sourced script).
const STATUS_VAR: &str = "__tmux_mcp_status";

/// `path` as one word of the shell's syntax: as it is when it holds nothing
/// a shell would split or expand, else single-quoted.
fn shell_path(path: &str, syntax: Syntax) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c);
    if !path.is_empty() && path.chars().all(plain) {
        return path.to_string();
    }
    match syntax {
        Syntax::Fish => format!("'{}'", path.replace('\\', "\\\\").replace('\'', "\\'")),
        _ => tmux_mcp_core::tmux::quote::shell_quote(path),
    }
}

/// The process in the foreground of `pane_pid`'s terminal: the shell at the
/// prompt (the pane's own process, or a shell started inside it).
fn foreground_pid(pane_pid: u32) -> Option<u32> {
    let st = tmux_mcp_core::platform::process_table::stat(pane_pid).ok()?;
    u32::try_from(st.tpgid).ok().filter(|&p| p > 0)
}

/// The shell's own parse of the whole typed line (`-n`: read, never run),
/// with the pane's shell's executable: its message when it does not parse,
/// so a line the shell would reject is never typed. `None` when it parses,
/// and when the check cannot be made (the shell's executable unknown, a
/// shell without `-n` here, no answer within a second); the typed line is
/// then watched for ever starting instead (see [`collect`]).
async fn syntax_error(shell_pid: Option<u32>, syntax: Syntax, line: &str) -> Option<String> {
    let exe = tmux_mcp_core::platform::process_table::exe(shell_pid?)?;
    let name = exe.file_name()?.to_string_lossy().into_owned();
    let args: &[&str] = match (name.as_str(), syntax) {
        (_, Syntax::Fish) => &["--no-config", "-n", "-c"],
        // bash-completion turns extglob on in most interactive shells; it
        // only makes more lines parse.
        ("bash", _) => &["-O", "extglob", "-n", "-c"],
        ("zsh", _) => &["-f", "-n", "-c"],
        ("dash" | "sh" | "ksh" | "ksh93" | "mksh" | "ash", _) => &["-n", "-c"],
        _ => return None,
    };
    let child = tokio::process::Command::new(&exe)
        .args(args)
        .arg(line)
        .env_remove("BASH_ENV")
        .env_remove("ENV")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let out = tokio::time::timeout(Duration::from_secs(1), child.wait_with_output())
        .await
        .ok()?
        .ok()?;
    if out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let why: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .collect();
    Some(if why.is_empty() {
        format!("{name} -n exited with {}", out.status)
    } else {
        why.join(" / ")
    })
}

/// Whether zsh's lexer finds a comment in `command` (its words with
/// comments kept and with them dropped differ), asked of the pane's own zsh
/// executable; a `#` is a comment only where a word starts. `true` when it
/// cannot be asked (refused rather than guessed).
async fn zsh_has_comment(shell_pid: Option<u32>, command: &str) -> bool {
    if !command.contains('#') {
        return false;
    }
    let Some(exe) = shell_pid.and_then(tmux_mcp_core::platform::process_table::exe) else {
        return true;
    };
    let child = tokio::process::Command::new(&exe)
        .args(["-f", "-c", "(( ${#${(Z+c+)1}} != ${#${(Z+C+)1}} ))", "zsh"])
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .status();
    match tokio::time::timeout(Duration::from_secs(1), child).await {
        Ok(Ok(status)) => status.code() != Some(1),
        _ => true,
    }
}

/// The probe's wait for the shell's echo; how often it looks where the
/// terminal's writes cannot be watched; how long the terminal must stay
/// unwritten for the echo to count as whole.
const PROBE_WAIT: Duration = Duration::from_millis(1500);
const PROBE_EVERY: Duration = Duration::from_millis(10);
/// How long a line that fails the emptiness check is read again before it
/// is refused: the prompt may still be being made (fish runs its prompt's
/// programs while it holds the terminal in its editor's mode, so a done job
/// cannot wait for them).
const PROMPT_DRAW_WAIT: Duration = Duration::from_millis(1000);
const PROBE_QUIET: Duration = Duration::from_millis(4);

/// The cursor row once the echo of what was just sent has settled, or `None`
/// when nothing moved within [`PROBE_WAIT`]. With `watch` (the pane's
/// terminal, watched since before the keys were sent) it reads the screen
/// after the shell has written and then stayed quiet for [`PROBE_QUIET`]
/// (the probe costs a few milliseconds, not a polling interval); without it
/// (no such watch on this platform) it reads every [`PROBE_EVERY`] until two
/// reads agree.
async fn settled(
    session: &Session,
    pane: &Pane,
    before: &shell_line::Seen,
    watch: Option<&TtyWatch>,
) -> Result<Option<shell_line::Seen>, String> {
    let until = tokio::time::Instant::now() + PROBE_WAIT;
    let Some(watch) = watch else {
        let mut last: Option<shell_line::Seen> = None;
        while tokio::time::Instant::now() < until {
            tokio::time::sleep(PROBE_EVERY).await;
            let now = shell_line::read(session, pane).await?;
            if now == *before {
                continue;
            }
            if last.as_ref() == Some(&now) {
                return Ok(Some(now));
            }
            last = Some(now);
        }
        return Ok(last);
    };
    loop {
        // A write, then quiet: the shell has drawn what it will draw.
        if tokio::time::timeout_at(until, watch.changed())
            .await
            .is_err()
        {
            let now = shell_line::read(session, pane).await?;
            return Ok((now != *before).then_some(now));
        }
        while tokio::time::Instant::now() < until
            && tokio::time::timeout(PROBE_QUIET, watch.changed())
                .await
                .is_ok()
        {}
        // tmux reads the terminal a moment after the shell wrote it.
        for _ in 0..5 {
            let now = shell_line::read(session, pane).await?;
            if now != *before {
                return Ok(Some(now));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        if tokio::time::Instant::now() >= until {
            return Ok(None);
        }
    }
}

/// Proves the pane's command line empty (see [`shell_line`]): refused with
/// nothing sent when the screen shows a continuation or no prompt, or when a
/// shell with a line editor is not in it; a shell without one (cooked mode)
/// needs its cursor right after a prompt; else the probe (`C-a`, space: the
/// typed line's first character) is sent and judged, and taken back when the
/// line holds text. `Ok(true)` when the probe typed the leading space.
async fn prove_empty(session: &Session, pane: &Pane, shell: &str) -> Result<bool, ToolOutput> {
    let id = &pane.id;
    let cooked = tmux_mcp_engine::mirror::canonical(&pane.tty).map_err(|e| {
        act::error(&format!("Pane {id}'s terminal could not be read to tell whether its shell is at its prompt ({e}); nothing was typed."), Delivery::NotSent)
    })?;
    if cooked && shells::has_line_editor(shell) {
        return Err(act::error(&format!("Pane {id}'s {shell} is not in its line editor (its terminal is in cooked mode: it is running something that reads a line itself, such as `read`), so it is not at a prompt. Nothing was typed."), Delivery::NotSent));
    }
    let read = || async {
        shell_line::read(session, pane).await.map_err(|why| {
            act::error(&format!("Pane {id} could not be read to prove its command line empty ({why}); nothing was typed."), Delivery::NotSent)
        })
    };
    let check = if cooked {
        shell_line::precheck_cooked
    } else {
        shell_line::precheck
    };
    // A shell just back at its prompt may not have drawn it yet (fish draws
    // it after it holds its terminal again, and tmux reads the drawing a
    // moment later): a line that fails the check is read again for a moment
    // before it is refused.
    let mut before = read().await?;
    let until = tokio::time::Instant::now() + PROMPT_DRAW_WAIT;
    while let Err(why) = check(&before) {
        if tokio::time::Instant::now() >= until {
            return Err(act::error(&format!("Pane {id}'s command line cannot be proven empty: {why}. Nothing was typed; the line must be empty (finish or clear it), or type with send_keys."), Delivery::NotSent));
        }
        tokio::time::sleep(PROBE_EVERY).await;
        before = read().await?;
    }
    if cooked {
        return Ok(false);
    }
    // Watched before the keys go, so the echo's write cannot be missed.
    let watch = TtyWatch::new(&pane.tty).ok();
    // C-a as a key, the space as text: the commands every typing tool sends.
    let probe = [
        typing::commands(id, Input::Keys(&["C-a".to_string()])),
        typing::commands(id, Input::Text(" ")),
    ]
    .concat();
    if let Err((landed, f)) = typing::deliver(session, &probe).await {
        let delivery = if landed == 0 {
            f.delivery
        } else {
            Delivery::Observed
        };
        return Err(act::error(
            &format!(
                "Sending the probe keys (C-a, a space) to pane {id} failed: {}",
                f.message.trim_end_matches(" Nothing was sent.")
            ),
            delivery,
        ));
    }
    let after = settled(session, pane, &before, watch.as_ref()).await;
    let verdict = match &after {
        Ok(Some(after)) => shell_line::judge(&before, after),
        _ => shell_line::Probe::Unclear,
    };
    if verdict == shell_line::Probe::Empty {
        return Ok(true);
    }
    let undo: Vec<String> = verdict.undo().iter().map(|k| k.to_string()).collect();
    let undone = typing::deliver(session, &typing::commands(id, Input::Keys(&undo)))
        .await
        .is_ok();
    let now = match settled(
        session,
        pane,
        after
            .as_ref()
            .ok()
            .and_then(Option::as_ref)
            .unwrap_or(&before),
        watch.as_ref(),
    )
    .await
    {
        Ok(Some(s)) => s.row,
        _ => shell_line::read(session, pane)
            .await
            .map(|s| s.row)
            .unwrap_or_default(),
    };
    let taken_back = if undone {
        format!(
            "the probe keys (C-a, a space) were taken back with {}",
            undo.join(" ")
        )
    } else {
        "taking the probe keys (C-a, a space) back failed".to_string()
    };
    let why = match verdict {
        shell_line::Probe::Typed => format!("it holds text the person typed; {taken_back}, so the line is as it was, its cursor at its start (the row reads {now:?})"),
        shell_line::Probe::SelfInserted => format!("its line editor inserted C-a as text (a vi insert keymap; run_command proves an empty line with the emacs keys the shells start with); {taken_back} (the row reads {now:?}). Switch the shell to emacs keys (set -o emacs, bindkey -e) or type with send_keys"),
        _ => format!("the shell did not show the probe as an empty line would (it may be busy, or drawing); {taken_back} (the row reads {now:?})"),
    };
    Err(act::error(
        &format!("Pane {id}'s command line is not proven empty: {why}. The command was not typed."),
        Delivery::Observed,
    ))
}

/// Why a job ended when the server went.
const SERVER_GONE: &str = "the tmux server exited (or the broker stopped)";

/// A pane size as a terminal size.
fn clamp_u16(n: u32) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// What the job's task watches for the end: the terminal the command writes
/// to, and the job's directory and the file its output is kept in there.
struct Ended {
    dir: PathBuf,
    mirror: Mirror,
    out: std::fs::File,
    /// The shell the line was typed into, watched for opening the terminal.
    shell_pid: Option<u32>,
    /// The pane's process and terminal, and whether its shell has a line
    /// editor: what tells that the shell is back at its prompt.
    pane_pid: u32,
    tty: String,
    editor: bool,
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

#[derive(Debug, Clone, Copy)]
struct Limits {
    lines: usize,
    bytes: usize,
}

impl Args {
    /// The output kept: maxLines and maxOutputBytes, or their defaults.
    fn limits(&self) -> Limits {
        Limits {
            lines: self.max_lines.unwrap_or(DEFAULT_LINES),
            bytes: self
                .max_output_bytes
                .unwrap_or(DEFAULT_OUTPUT_BYTES)
                .min(MAX_OUTPUT_BYTES),
        }
    }
}

/// The job's one task: copies the command's output to the pane and the job's
/// file until the end marker comes, the pane's shell exits, the server goes,
/// or [`RUNNING_TTL`] passes (events only: nothing polls tmux); records the
/// result and removes the job directory.
async fn collect(
    broker: Arc<Broker>,
    ended: Ended,
    identity: Option<Arc<tmux_mcp_core::process::ProcessIdentity>>,
    limits: Limits,
    started: Instant,
    tx: watch::Sender<Option<Finish>>,
) {
    let Ended {
        dir,
        mut mirror,
        mut out,
        shell_pid,
        pane_pid,
        tty,
        editor,
    } = ended;
    let deadline = tokio::time::Instant::now() + RUNNING_TTL;
    let output = AtomicBool::new(false);
    let link = dir.join("t");
    let status = {
        let run = mirror.run(|b| {
            output.store(true, Ordering::Relaxed);
            let _ = out.write_all(b);
        });
        tokio::pin!(run);
        let failed = |e: std::io::Error| format!("reading the command's terminal failed: {e}");
        tokio::select! {
            r = &mut run => r.map_err(failed),
            _ = async { match &identity { Some(i) => i.wait_exit().await, None => std::future::pending().await } } => {
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
    };
    drop(out);
    let elapsed = started.elapsed();
    if status.is_ok() {
        tokio::select! {
            _ = back_at_prompt(pane_pid, shell_pid, &tty, editor) => {}
            _ = broker.server_gone() => {}
        }
    }
    let finish = match status {
        Ok(status) => {
            // The file may be large: counting its lines must not hold a runtime thread.
            let path = dir.join("out");
            let read = tokio::task::spawn_blocking(move || read_tail(&path, limits))
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
            let output = read.unwrap_or_else(|e| Output {
                text: format!("(the output file could not be read: {e})"),
                total_bytes: 0,
                total_lines: 0,
                dropped_bytes: 0,
                dropped_lines: 0,
            });
            Finish::Done {
                status,
                output,
                elapsed,
            }
        }
        Err(why) => Finish::Lost {
            why,
            elapsed: started.elapsed(),
        },
    };
    let done = matches!(finish, Finish::Done { .. });
    let _ = std::fs::remove_file(dir.join("out"));
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
    let _ = std::fs::remove_dir_all(&dir);
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
    fn the_script_gives_the_status_back_and_leaves_no_variable() {
        // Each shell sources the script as the typed line does, after a
        // command that failed with 7; the release read is fed by stdin.
        let dir = std::env::temp_dir().join(format!("tmcp-script-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = dir.join("t");
        let tw = t.to_string_lossy().into_owned();
        for (shell, syntax) in [
            ("bash", Syntax::Posix),
            ("dash", Syntax::Posix),
            ("zsh", Syntax::Posix),
            ("fish", Syntax::Fish),
        ] {
            assert!(
                std::process::Command::new(shell)
                    .arg("-c")
                    .arg("true")
                    .status()
                    .is_ok(),
                "this test needs {shell} installed (see the README's test requirements)"
            );
            // A regular file stands in for the terminal: the marker goes there
            // and the release line is read from it.
            std::fs::write(&t, "release\n").unwrap();
            let script_path = dir.join("s");
            std::fs::write(&script_path, script("M%d", &tw, shell, syntax)).unwrap();
            let sp = script_path.to_string_lossy();
            let line = if syntax == Syntax::Fish {
                format!("begin; false; sh -c 'exit 7'; end; source {sp}; echo \"st=$status v=$__tmux_mcp_status\"")
            } else {
                format!(
                    "{{ sh -c 'exit 7'; }}; . {sp}; echo \"st=$? v=${{__tmux_mcp_status-unset}}\""
                )
            };
            let out = std::process::Command::new(shell)
                .arg("-c")
                .arg(&line)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let want = if syntax == Syntax::Fish {
                "st=7 v="
            } else {
                "st=7 v=unset"
            };
            assert_eq!(
                text.trim(),
                want,
                "{shell}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_is_one_word_in_each_syntax() {
        assert_eq!(
            shell_path("/run/user/0/tmux-mcp/srv-ab.run-cd/t", Syntax::Posix),
            "/run/user/0/tmux-mcp/srv-ab.run-cd/t"
        );
        assert_eq!(
            shell_path("/tmp/a b/it's", Syntax::Posix),
            "'/tmp/a b/it'\\''s'"
        );
        assert_eq!(
            shell_path("/tmp/a b/it's\\x", Syntax::Fish),
            "'/tmp/a b/it\\'s\\\\x'"
        );
    }

    #[test]
    fn shells_are_recognised_and_others_refused_by_name() {
        assert!(
            shell_of("bash") == Ok(("bash", Syntax::Posix))
                && shell_of("-zsh") == Ok(("zsh", Syntax::Posix))
                && shell_of("/bin/sh") == Ok(("sh", Syntax::Posix))
                && shell_of("fish") == Ok(("fish", Syntax::Fish))
        );
        assert!(shell_of("tcsh").unwrap_err().contains("tcsh"));
        assert!(shell_of("python3").unwrap_err().contains("not a shell"));
    }

    #[test]
    fn the_typed_line_is_one_group_to_the_terminal_and_parses_after_comments_and_ampersands() {
        assert_eq!(
            typed_line("ls | head -3", "/dev/pts/9", Syntax::Posix),
            " { ls | head -3; } >/dev/pts/9 2>&1; . /dev/pts/9"
        );
        assert_eq!(
            typed_line("echo hi # c", "/dev/pts/9", Syntax::Posix),
            " { echo hi # c\n} >/dev/pts/9 2>&1; . /dev/pts/9"
        );
        let cmds = [
            "echo hi # c",
            "sleep 1 &",
            "cd /tmp; export X=1",
            "cd /tmp;",
            "if true; then echo y; fi",
            "echo a |\ncat",
            "echo a \\\n b",
        ];
        for cmd in cmds {
            for shell in ["sh", "bash"] {
                let line = typed_line(cmd, "/dev/null", Syntax::Posix);
                let ok = std::process::Command::new(shell)
                    .args(["-n", "-c", &line])
                    .status()
                    .map(|s| s.success());
                assert!(!matches!(ok, Ok(false)), "{shell} rejects {line:?}");
            }
        }
        let marker = "\\33_ab12;%d\\33\\\\";
        let s = script(marker, "/r/t", "bash", Syntax::Posix);
        assert_eq!(
            s,
            "__tmux_mcp_status=$?; printf '\\33_ab12;%d\\33\\\\' \"$__tmux_mcp_status\" >/r/t; history -d -1 2>/dev/null; read -r _ </r/t || read -r _ </r/t; eval \"unset __tmux_mcp_status; return $__tmux_mcp_status\""
        );
        assert!(!script(marker, "/dev/pts/9", "dash", Syntax::Posix).contains("history"));
    }
}
