//! `tmux_run` (seed family, opt-in, docs/spec.md A.8): an authored POSIX
//! script run in a pane's enrolled shell (`tmux-mcp shell-init`), only when
//! its line editor is idle and empty, with stdout and stderr apart, the
//! exit status or signal, and the authorization it ran under.
//!
//! The broker writes the script and a wrapper to the marks directory and
//! hands the shell a request through its private key chord
//! ([`shell_run`]); the shell's binding refuses when the person has text in
//! the editor, else runs `/bin/sh WRAPPER </dev/null >OUT 2>ERR` from the
//! binding itself (so nothing appears on the pane and nothing enters
//! history) and writes the status as a mark. The wrapper runs an inner
//! `/bin/sh` that says its pid (so a script past the timeout can be
//! stopped) and sources the script. OUT and ERR are FIFOs the broker reads
//! while the script runs ([`Pipe`]), at most `max_output_bytes` + 1 bytes
//! each: only the captured streams are limited, never the files the script
//! writes (a `ulimit -f` would cut those too). The script inherits the
//! shell's environment and working directory.
//!
//! Output over `max_output_bytes` is the error `capacity` (`observed`: the
//! script ran), never a truncated success. A script still running at the
//! deadline gets SIGTERM, with every process under it, and is the error
//! `deadline` (`observed`). A status of 129–192 is reported as the
//! signal 1–64 (a shell cannot tell a death by that signal from `exit`
//! with that number). The files go when the call ends.

use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::{reporting, Annotations, Listed, Progress, ToolOutput, ToolSpec};
use crate::toolkit::schemas::derived::{data_schema_of, input_of, Observed};
use crate::toolkit::schemas::patterns::NO_NUL;
use crate::toolkit::seed::envelope;
use crate::toolkit::seed::mutation;
use crate::toolkit::shell::enrolled::{self, HOW_TO_ENROLL};
use crate::toolkit::shell::shell_run::{self, Request, ScriptEnd};
use crate::toolkit::target::references;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tmux_mcp_core::sys;

pub const SPEC: ToolSpec = ToolSpec::new(
    "tmux_run",
    Annotations::destructive("Run a script in an enrolled shell"),
    input_schema,
    output_schema,
    |c| c.run_with_progress(call),
)
.seed()
.listed(Listed::OptIn)
.description("Run an authored POSIX script in a pane's enrolled shell (idle, empty editor): stdout, stderr, exit status.")
.details("Run an authored POSIX script (/bin/sh) in the shell of one pane that its person enrolled with tmux-mcp shell-init (bash, zsh or fish), only while its line editor is idle and empty (else editor_busy, nothing run). The script inherits the shell's environment and working directory, reads /dev/null, shows nothing on the pane and leaves no history entry. Returns completion (exited + exit_status, or signaled + signal), stdout and stderr apart ({encoding, data, bytes, truncated:false}; over max_output_bytes is the error capacity, never a truncated success), and the authorization it ran under (run_id, script_digest, server_generation, pane_id, enrollment_generation, process_generation). timeout_ms is clamped to the request timeout; a script still running then gets SIGTERM (with its child processes) and the error deadline. Opt-in; the agent's own pane needs --allow-self.");

const MAX_OUTPUT: usize = 262_144;
const DEFAULT_OUTPUT: usize = 65_536;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    target: references::PaneRef,
    /// The script, run by /bin/sh.
    #[schemars(length(min = 1, max = 65536), regex(pattern = NO_NUL))]
    script: String,
    /// Clamped to the request timeout.
    #[schemars(range(min = 1, max = 3_600_000))]
    timeout_ms: Option<u64>,
    /// Per stream; more is the error capacity (default 65536).
    #[schemars(range(min = 1, max = 262_144))]
    max_output_bytes: Option<usize>,
}

fn input_schema() -> Value {
    input_of::<Args>()
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Encoding {
    #[serde(rename = "utf-8")]
    Utf8,
    Base64,
}

crate::constant!(NotTruncated, false);

/// One output stream, whole.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Stream {
    encoding: Encoding,
    data: String,
    bytes: u64,
    truncated: NotTruncated,
}

/// How the script ended.
#[derive(Serialize, JsonSchema)]
#[serde(tag = "state", rename_all = "lowercase", deny_unknown_fields)]
enum Completion {
    Exited {
        exit_status: i32,
    },
    Signaled {
        /// The signal's number (its name where known: `signal_name`).
        signal: i32,
        #[serde(skip_serializing_if = "Option::is_none")]
        signal_name: Option<String>,
    },
}

/// What the run was authorized as.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Authorization {
    run_id: String,
    /// `sha256:` and the hex digest of the script's bytes.
    script_digest: String,
    server_generation: String,
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    pane_id: String,
    /// The enrolled shell instance (hash of pane, shell pid and name).
    enrollment_generation: String,
    /// The shell process's generation when it is the pane's own process.
    process_generation: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Ran {
    target: references::PaneRef,
    delivery: Observed,
    completion: Completion,
    stdout: Stream,
    stderr: Stream,
    authorization: Authorization,
}

fn output_schema() -> Value {
    mutation::output_schema(data_schema_of::<Ran>())
}

/// The run's files in the marks directory; removed when dropped, the
/// FIFOs' paths before their readers close, so a shell that has not opened
/// one yet finds no path (and fails) rather than a FIFO without a reader (on
/// which its open would wait for ever).
struct Files {
    script: PathBuf,
    wrapper: PathBuf,
    out: PathBuf,
    err: PathBuf,
    pipes: Option<(Pipe, Pipe)>,
}

impl Drop for Files {
    fn drop(&mut self) {
        for p in [&self.script, &self.wrapper, &self.out, &self.err] {
            let _ = std::fs::remove_file(p);
        }
        drop(self.pipes.take());
    }
}

/// One of the script's streams, read through a FIFO while the script runs:
/// at most `max` + 1 bytes; past `max` the read end closes, so the writer
/// gets SIGPIPE and the call is the error `capacity`. Only the captured
/// streams are limited, never the files the script writes.
struct Pipe {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<(Vec<u8>, bool)>,
}

impl Pipe {
    fn open(path: &Path, max: usize) -> std::io::Result<Pipe> {
        tmux_mcp_core::platform::mkfifo(path)?;
        let (reader, writer) = sys::open_fifo(path)?;
        let fd = sys::async_fd(reader, tokio::io::Interest::READABLE)?;
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            // Held so that no read sees end of file before the script ends.
            let _writer = writer;
            let mut kept = Vec::new();
            let mut chunk = vec![0u8; 16 << 10];
            let mut take = |kept: &mut Vec<u8>| loop {
                match sys::read_now(fd.get_ref(), &mut chunk) {
                    Ok(0) => return true,
                    Ok(n) => {
                        kept.extend_from_slice(&chunk[..n]);
                        if kept.len() > max {
                            return true;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return e.kind() != std::io::ErrorKind::WouldBlock,
                }
            };
            loop {
                tokio::select! {
                    ready = fd.readable() => {
                        let Ok(mut guard) = ready else { break };
                        guard.clear_ready();
                        if take(&mut kept) {
                            break;
                        }
                    }
                    // The script ended (or the call did): what is left.
                    _ = &mut stopped => {
                        take(&mut kept);
                        break;
                    }
                }
            }
            let over = kept.len() > max;
            kept.truncate(max + 1);
            (kept, over)
        });
        Ok(Pipe {
            stop: Some(stop),
            task,
        })
    }

    /// What the script wrote to it, and whether that was over the limit.
    async fn finish(&mut self) -> (Vec<u8>, bool) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.unwrap_or_default()
    }
}

fn quoted(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

fn files(dir: &Path, pane: &str, id: &str, script: &str, max: usize) -> std::io::Result<Files> {
    let mut f = Files {
        script: dir.join(format!("{pane}.{id}.script")),
        wrapper: dir.join(format!("{pane}.{id}.sh")),
        out: dir.join(format!("{pane}.{id}.out")),
        err: dir.join(format!("{pane}.{id}.err")),
        pipes: None,
    };
    std::fs::write(&f.script, script)?;
    // The script runs in an inner /bin/sh that says its pid (the one a
    // timeout stops): the outer one, the shell's child, always exits
    // normally, since bash puts its terminal back in cooked mode after a
    // child of a key binding dies by a signal. `set --` hides the
    // arguments from the script. The outer one exits (130, 131) after a
    // Ctrl-C or Ctrl-\\ the person sends to the pane has stopped the script,
    // rather than die of it, for the same reason: the binding then reports
    // the status (the inner one's signal) at once.
    std::fs::write(
        &f.wrapper,
        format!(
            "trap 'exit 130' INT; trap 'exit 131' QUIT\n/bin/sh -c '__tmcp_s=$1; printf \"S\\tsh\\t%s\\t\\t\\t\\t%s\\n\" \"$$\" \"$2\" >>\"$3\"; set --; . \"$__tmcp_s\"' sh {script} '{id}' {marks}\nexit $?\n",
            marks = quoted(&dir.join(pane)),
            script = quoted(&f.script),
        ),
    )?;
    f.pipes = Some((Pipe::open(&f.out, max)?, Pipe::open(&f.err, max)?));
    Ok(f)
}

fn stream(bytes: Vec<u8>) -> Stream {
    let n = bytes.len() as u64;
    match String::from_utf8(bytes) {
        Ok(data) => Stream {
            encoding: Encoding::Utf8,
            data,
            bytes: n,
            truncated: NotTruncated,
        },
        Err(e) => Stream {
            encoding: Encoding::Base64,
            data: tmux_mcp_engine::capture::base64_encode(e.as_bytes()),
            bytes: n,
            truncated: NotTruncated,
        },
    }
}

/// The SHA-256 of `bytes`, in hex.
fn sha256_hex(bytes: &[u8]) -> String {
    sys::hex(&Sha256::digest(bytes))
}

fn completion(status: i32) -> Completion {
    if (129..=192).contains(&status) {
        let signal = status - 128;
        Completion::Signaled {
            signal,
            signal_name: tmux_mcp_core::platform::SIGNAL_NAMES
                .get(signal as usize - 1)
                .map(|n| format!("SIG{n}")),
        }
    } else {
        Completion::Exited {
            exit_status: status,
        }
    }
}

async fn call(
    session: &Session,
    args: Args,
    progress: Option<Progress>,
) -> Result<ToolOutput, ToolOutput> {
    let (pane, shell) = enrolled_target(session, &args).await?;
    let dir = session.broker.marks.dir().map_err(|why| {
        envelope::error(
            "unsupported",
            &format!("The script cannot be written for the shell: {why}. Nothing was sent."),
            Delivery::NotSent,
        )
    })?;
    let max = args
        .max_output_bytes
        .unwrap_or(DEFAULT_OUTPUT)
        .min(MAX_OUTPUT);
    let (_, timeout_ms) = session.wait_ms(args.timeout_ms);
    let id = sys::random_hex(16);
    let files = files(&dir, &pane.id, &id, &args.script, max).map_err(|e| {
        envelope::error(
            "transport_error",
            &format!("Could not write the script for the shell: {e}. Nothing was sent."),
            Delivery::NotSent,
        )
    })?;
    let started = std::time::Instant::now();
    let run = shell_run::start(
        session,
        &pane,
        Request::Script {
            wrapper: &files.wrapper,
            out: &files.out,
            err: &files.err,
        },
        &id,
        Duration::from_millis(timeout_ms),
    )
    .await
    .map_err(not_started)?;
    let left = Duration::from_millis(timeout_ms).saturating_sub(started.elapsed());
    let waiting = shell_run::wait_script(&session.broker, &run, left);
    let total = timeout_ms as f64 / 1000.0;
    let status = exit_status(
        reporting(progress.as_ref(), total, "script running", waiting).await,
        timeout_ms,
    )?;
    let mut files = files;
    let Some((out_pipe, err_pipe)) = files.pipes.as_mut() else {
        return Err(envelope::error(
            "observation_lost",
            "The script's output was not read.",
            Delivery::Observed,
        ));
    };
    let ((out, out_over), (err, err_over)) = tokio::join!(out_pipe.finish(), err_pipe.finish());
    if out_over || err_over {
        return Err(envelope::error(
            "capacity",
            &format!(
                "The script wrote more than max_output_bytes ({max}) to {}: the broker stopped reading there, so its writer got SIGPIPE (status {status}). It ran; nothing of its output is returned.",
                if out_over { "stdout" } else { "stderr" }
            ),
            Delivery::Observed,
        ));
    }
    let generation = session.generation().to_string();
    let authorization = authorization(&pane, &shell, id, &args.script, &generation);
    drop(run);
    Ok(envelope::ok(
        "tmux_run",
        &Ran {
            target: references::PaneRef::new(&pane.id, &generation),
            delivery: Observed,
            completion: completion(status),
            stdout: stream(out),
            stderr: stream(err),
            authorization,
        },
    ))
}

/// The one pane of `target`, alive and with an enrolled shell (the only
/// place a script runs), and that shell; the caller's own pane needs
/// `--allow-self`. Nothing is sent when it is refused.
async fn enrolled_target(
    session: &Session,
    args: &Args,
) -> Result<(tmux_mcp_engine::registry::Pane, enrolled::ShellRecord), ToolOutput> {
    let target = mutation::target(session, args.target.parts()).await?;
    if target.holds_caller(session) && !session.allow_self {
        return Err(mutation::self_denied("Running a script in"));
    }
    let pane = target.panes[0].clone();
    if pane.dead {
        return Err(envelope::error("stale_target", &format!("Pane {} is dead (its program exited and remain-on-exit keeps it). Nothing was sent.", pane.id), Delivery::NotSent));
    }
    let Some(shell) = enrolled::shell_or_ask(session, &pane).await else {
        return Err(envelope::error(
            "unsupported",
            &format!(
                "Pane {} has no enrolled shell; tmux_run runs only in one. To {HOW_TO_ENROLL}. Nothing was sent.",
                pane.id
            ),
            Delivery::NotSent,
        ));
    };
    Ok((pane, shell))
}

/// The seed family's error for a run the shell did not take: what the
/// person's shell refused is `policy_denied`, a shell that cannot take runs
/// `unsupported`.
fn not_started(e: shell_run::NotStarted) -> ToolOutput {
    let code = match e.code {
        "editor_busy" | "busy" | "editor_unavailable" | "not_enrolled" | "not_at_prompt" => {
            "policy_denied"
        }
        "unavailable" => "unsupported",
        c => c,
    };
    envelope::error(code, &e.message, e.delivery)
}

/// The script's exit status, or the error for a script that outlived the
/// deadline (stopped, and how) or whose end was not seen.
fn exit_status(end: ScriptEnd, timeout_ms: u64) -> Result<i32, ToolOutput> {
    match end {
        ScriptEnd::Status(s) => Ok(s),
        ScriptEnd::TimedOut { stopped, killed } => Err(envelope::error(
            "deadline",
            &format!(
                "The script was still running after {timeout_ms} ms; its /bin/sh and every process under it were sent SIGTERM{} ({}).",
                if killed { ", and SIGKILL 2 s later" } else { "" },
                match stopped {
                    Some(s) => format!("it ended with status {s}"),
                    None => "it had not ended 2 s after the last signal: the pane's shell may still wait for it".to_string(),
                }
            ),
            Delivery::Observed,
        )),
        ScriptEnd::Lost(why) => Err(envelope::error(
            "observation_lost",
            &format!("The script's end was not seen: {why}."),
            Delivery::Observed,
        )),
    }
}

/// What the script ran under, for whoever audits it: the run, the script's
/// digest, the server, the pane, its enrolled shell (as a digest of the
/// enrollment) and its process, when that process is the shell.
fn authorization(
    pane: &tmux_mcp_engine::registry::Pane,
    shell: &enrolled::ShellRecord,
    run_id: String,
    script: &str,
    generation: &str,
) -> Authorization {
    let process_generation = pane
        .process
        .as_ref()
        .ok()
        .filter(|p| p.pid == shell.pid)
        .map(|p| p.generation.clone());
    Authorization {
        run_id,
        script_digest: format!("sha256:{}", sha256_hex(script.as_bytes())),
        enrollment_generation: sha256_hex(
            format!(
                "tmux-mcp enrollment v1\0{generation}\0{}\0{}\0{}\0",
                pane.id, shell.pid, shell.name
            )
            .as_bytes(),
        )[..32]
            .to_string(),
        server_generation: generation.to_string(),
        pane_id: pane.id.clone(),
        process_generation,
    }
}
