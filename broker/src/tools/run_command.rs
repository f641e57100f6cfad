//! `run_command` (libtmux family, mutating): a command line run by the shell
//! at the prompt of a pane, with its real exit status and its output.
//!
//! This module is the tool's flow: the target, the checks that refuse with
//! nothing sent, the job recorded, the answer. An enrolled shell (`tmux-mcp
//! shell-init`) is asked through its line editor ([`shell_run`]: only a key
//! chord is sent). Into any other shell the command is typed: the job's
//! directory and terminal are made ([`typed_job::JobDir`], removed on every
//! refusal by its guard), the line spelled and parsed by the shell
//! ([`typed_line`]), the command line proven empty
//! ([`shell_line::prove_empty`]), one line typed, and one task per job waits
//! for its end ([`typed_job::collect`]). Each of those modules' docs says
//! its part of the path.
//!
//! The typed command runs in the person's shell and keeps running whatever
//! happens to the call: a blocking call that reaches its timeout returns the
//! job (`state: running`, `jobId`) to collect with `get_job`; a call the
//! client cancels leaves the job to finish, after which it is dropped with
//! its files (nobody holds its id). The job table and its bounds:
//! [`crate::jobs`].
//!
//! Refused with nothing sent: a pane whose foreground program is not a shell
//! run_command types for (sh, bash, zsh, dash, ksh, mksh, ash, busybox, fish;
//! csh and others have other syntax and are refused by name), a pane in copy
//! mode or on the alternate screen, a dead pane, the agent's own pane without
//! `--allow-self`, a line that is not proven empty (the probe's keys taken
//! back), a line that does not parse.

use crate::jobs::{admit, prune, Finish, Job, JobState, Jobs, RUNNING_TTL};
use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::{reporting, Annotations, Progress, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::action;
use crate::toolkit::libtmux::wording;
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::shell::enrolled::{self, ShellRecord};
use crate::toolkit::shell::job::{for_run_command, lookup, summary, view, JobView};
use crate::toolkit::shell::shell_line;
use crate::toolkit::shell::shell_run;
use crate::toolkit::shell::shells::{self, Syntax};
use crate::toolkit::shell::typed_job::{self, JobDir, Limits, TypedJob};
use crate::toolkit::shell::typed_line;
use crate::toolkit::target::ids::{Generation, PaneId};
use crate::toolkit::typing::keystrokes::{self, Input};
use serde::Deserialize;
use std::future::Future;
use std::time::{Duration, Instant};
use tmux_mcp_engine::registry::Pane;
use tmux_mcp_engine::retention::Owner;
use tokio::sync::watch;

pub const SPEC: ToolSpec = ToolSpec::new(
    "run_command",
    Annotations::mutating("Run a command in a pane's shell", false),
    input_of::<Args>,
    schema_of::<JobView>,
    |c| c.run_with_progress(call),
)
.description("Run a shell command line in a pane's shell (at its prompt); returns the exit status and output, never read from the screen.")
.details("Run a shell command line in a pane's shell (the pane must be at a sh/bash/zsh/dash/ksh/ash/fish prompt, not in copy mode or a full-screen program) and return its real exit status and output (stdout and stderr together; the tail is kept, at most maxLines/maxOutputBytes, and what was dropped is reported). The command writes to a terminal of the broker's sized like the pane (test -t 1 holds; colours kept as written) whose every byte is shown live in the pane and kept for the result; the status comes after the output through the same terminal, never from the screen, so the shell's echo cannot be mistaken for the result. The command runs in the person's shell (cd/export persist). timeoutMs is clamped to the request timeout (reported); on timeout, or with detach:true, the result is a running job to collect with get_job. The result: state, exitStatus, output {text; totalBytes, totalLines, droppedBytes, droppedLines only when something was dropped} and elapsedMs (not the pane or the command line given); jobId (for get_job) with detach:true, or while the job is still running, with the wait used, timeoutMs and timeoutClamped (when true). The command keeps running in the shell whatever happens to the call (timeout, detach, cancellation). Refused (nothing typed) for csh and other non-POSIX shells but fish, panes busy with another program, dead panes. Mutating tier; the agent's own pane needs --allow-self.");

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
        regex(pattern = crate::toolkit::schemas::patterns::NO_CONTROL_BUT_LF)
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

async fn call(
    session: &Session,
    args: Args,
    progress: Option<Progress>,
) -> Result<ToolOutput, ToolOutput> {
    let (asked_ms, timeout_ms) = session.wait_ms(args.timeout_ms);
    let target = action::typing_target(session, &args.pane_id, args.generation.as_deref()).await?;
    let pane = target.panes[0].clone();
    // An enrolled shell is asked, not typed into (a run of another
    // agent's in it is waited for, so this comes before the checks of
    // what the pane shows).
    let (owner, id, at, finish) = match enrolled::shell_or_ask(session, &pane).await {
        Some(sh) => enrolled_run(session, &pane, sh, &args, timeout_ms).await?,
        None => typed(session, &pane, &args).await?,
    };
    let job = Job::new(
        owner,
        session.generation(),
        &pane.id,
        &args.command,
        at,
        finish,
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

/// `run_command` typed into a shell that is not enrolled: the checks of what
/// the pane shows, then [`typed_run`].
async fn typed(session: &Session, pane: &Pane, args: &Args) -> Result<Running, ToolOutput> {
    let (shell, syntax) = typed_line::shell_of(&pane.command).map_err(|why| {
        wording::action_error(
            &format!(
                "Pane {} is not at a shell prompt run_command can type into: {why}",
                pane.id
            ),
            Delivery::NotSent,
        )
    })?;
    if pane.in_mode != 0 {
        return Err(wording::action_error(&format!("Pane {} is in copy mode (or another mode); the typed line would not reach its shell.", pane.id), Delivery::NotSent));
    }
    if action::pane_flags(session, &pane.id, &["#{alternate_on}"]).await?[0] != Some(false) {
        return Err(wording::action_error(&format!("Pane {} shows the alternate screen (a full-screen program); it is not at a shell prompt.", pane.id), Delivery::NotSent));
    }
    let admitted = admitted(session)?;
    typed_run(session, pane, (shell, syntax), args, admitted).await
}

/// A job that runs: who runs it, its id, when it started, and where its end
/// comes.
type Running = (Owner, String, Instant, watch::Receiver<Option<Finish>>);

/// A new job of this session's agent admitted ([`admit`]: within its cap):
/// its owner and id.
fn admitted(session: &Session) -> Result<(Owner, String), ToolOutput> {
    let owner = session.owner();
    if let Err(why) = admit(&mut session.jobs.lock(), owner.agent) {
        return Err(wording::action_error(&why, Delivery::NotSent));
    }
    Ok((owner, tmux_mcp_core::sys::random_hex(16)))
}

/// `run_command` typed into a shell that is not enrolled: the job's
/// directory and terminal, the line checked by the shell, the command line
/// proven empty, then the line typed and the job's task started. Every
/// refusal leaves nothing behind: the directory goes with its guard.
async fn typed_run(
    session: &Session,
    pane: &Pane,
    (shell, syntax): (&str, Syntax),
    args: &Args,
    (owner, id): (Owner, String),
) -> Result<Running, ToolOutput> {
    let dir = JobDir::make(&session.broker, &id)?;
    // The line names the terminal through a link in the job's directory,
    // which goes with the job: a line the shell recalls later names a path
    // that no longer exists (its redirection fails, so nothing runs), never
    // a terminal someone else may hold by then.
    let (mirror, out) = dir.open_terminal(pane).map_err(|e| {
        wording::action_error(
            &format!("Could not open the terminal the command's output is shown through ({e}); nothing was typed."),
            Delivery::NotSent,
        )
    })?;
    let link_word = typed_line::shell_path(&dir.link().to_string_lossy(), syntax);
    let script = typed_line::script(&mirror.marker_format(), &link_word, shell, syntax);
    mirror.preload(&script).map_err(|e| {
        wording::action_error(
            &format!("Could not prepare the terminal the command's output is shown through ({e}); nothing was typed."),
            Delivery::NotSent,
        )
    })?;
    let line = typed_line::line(&args.command, &link_word, syntax);
    // The shell in the foreground of the pane's terminal (the pane's own
    // process, or a shell started inside it).
    let shell_pid = typed_job::foreground_pid(pane.pid);
    if let Some(why) = typed_line::syntax_error(shell_pid, syntax, &line).await {
        return Err(wording::action_error(
            &format!("The command does not parse in the pane's shell ({shell}): {why}. Nothing was typed into pane {}.", pane.id),
            Delivery::NotSent,
        ));
    }
    if shell == "zsh" && typed_line::zsh_has_comment(shell_pid, &args.command).await {
        return Err(wording::action_error(
            &format!("The command holds a comment (`# …`), which an interactive zsh runs as words unless its INTERACTIVE_COMMENTS option is set (off by default), where the parse check reads a comment: pane {}'s shell could mean something else. Remove the comment, or enroll the shell (tmux-mcp shell-init zsh), which tells its options.", pane.id),
            Delivery::NotSent,
        ));
    }
    // The line must be empty: proven by the probe, whose space is the
    // typed line's first character.
    let spaced = shell_line::prove_empty(session, pane, shell).await?;
    let rest = if spaced {
        line.strip_prefix(' ').unwrap_or(&line)
    } else {
        &line
    };
    let mut commands = keystrokes::commands(&pane.id, Input::Text(rest));
    commands.push(vec![
        "send-keys".into(),
        "-t".into(),
        pane.id.clone(),
        "Enter".into(),
    ]);
    let started = Instant::now();
    if let Err((_, f)) = keystrokes::deliver(session, &commands).await {
        return Err(wording::action_error(&format!("Typing the command line failed part way (the pane's shell received its first space and perhaps more): {}", f.message.trim_end_matches(" Nothing was sent.")), Delivery::Observed));
    }
    let (tx, rx) = watch::channel(None);
    let job = TypedJob {
        dir,
        mirror,
        out,
        shell_pid,
        pane_pid: pane.pid,
        tty: pane.tty.clone(),
        editor: shells::has_line_editor(shell),
    };
    let identity = pane.process.as_ref().ok().cloned();
    let limits = args.limits();
    let broker = session.broker.clone();
    in_background(session, async move {
        typed_job::collect(broker, job, identity, limits, started, tx).await;
    });
    Ok((owner, id, started, rx))
}

/// `run_command` in an enrolled shell ([`shell_run`]): the shell's line
/// editor takes the command as if typed; only a key chord is sent.
async fn enrolled_run(
    session: &Session,
    pane: &Pane,
    sh: ShellRecord,
    args: &Args,
    timeout_ms: u64,
) -> Result<Running, ToolOutput> {
    if pane.in_mode != 0 {
        return Err(wording::action_error(&format!("Pane {} is in copy mode (or another mode); its shell's line editor would not get the key chord.", pane.id), Delivery::NotSent));
    }
    if let Some(syntax) = shells::kind(&sh.name).1 {
        if let Some(why) = typed_line::syntax_error(Some(sh.pid), syntax, &args.command).await {
            return Err(wording::action_error(
                &format!(
                    "The command does not parse in the pane's shell ({}): {why}.",
                    sh.name
                ),
                Delivery::NotSent,
            ));
        }
    }
    let (owner, id) = admitted(session)?;
    let run = shell_run::start(
        session,
        pane,
        shell_run::Request::Line(&args.command),
        &id,
        Duration::from_millis(timeout_ms),
    )
    .await
    // wording::action_error says itself whether anything was sent.
    .map_err(|e| {
        wording::action_error(e.message.trim_end_matches(" Nothing was sent."), e.delivery)
    })?;
    let started = Instant::now();
    let (tx, rx) = watch::channel(None);
    let Limits { lines, bytes } = args.limits();
    let broker = session.broker.clone();
    in_background(session, async move {
        let (finish, run) =
            shell_run::finish(broker.clone(), run, lines, bytes, started, RUNNING_TTL).await;
        // The person's line is back before the agent hears of the end.
        shell_run::give_back(&broker, &run).await;
        tx.send_replace(Some(finish));
    });
    Ok((owner, id, started, rx))
}

/// Runs a job's task (which sends its end) in the background, then prunes
/// the job table.
fn in_background(session: &Session, task: impl Future<Output = ()> + Send + 'static) {
    let jobs = session.jobs.clone();
    tokio::spawn(async move {
        task.await;
        prune(&mut jobs.lock());
    });
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
            None => wording::action_error(
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
        return wording::action_error(
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
            return wording::action_error("The job vanished.", Delivery::Observed);
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
