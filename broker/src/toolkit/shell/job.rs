//! A `run_command` job as the tools report it (`run_command` when it
//! answers, `get_job` later): read from the broker's job store
//! (`crate::jobs`), scoped like retained cursors.

use crate::jobs::{prune, Finish, Job, JobState, Output};
use crate::session::Session;
use schemars::JsonSchema;
use serde::Serialize;

/// A job as `run_command` and `get_job` report it: what the model needs and
/// nothing at its default (absent fields say so in their descriptions).
/// `run_command` leaves out the pane and the command line its caller gave.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobView {
    /// The id get_job collects it by: while running, and from run_command
    /// with detach (absent otherwise: nothing left to collect).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// The job's pane (get_job; run_command's caller named it).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    pub pane_id: Option<String>,
    /// The command line (get_job; run_command's caller gave it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub state: JobState,
    /// `$?` of the command line, when done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputView>,
    /// Why the job was lost, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_reason: Option<String>,
    /// Milliseconds since the line was typed (to the status, when done).
    pub elapsed_ms: u64,
    /// The wait this call used, when the job was still running at its end
    /// (run_command without detach).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Present (true) when that wait was timeoutMs cut to the request timeout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timeout_clamped: bool,
    /// The pane, for the text (always known; published as paneId by get_job).
    #[serde(skip)]
    #[schemars(skip)]
    pub pane: String,
    /// The job's id, for the text (published as jobId while running).
    #[serde(skip)]
    #[schemars(skip)]
    pub id: String,
}

/// The output tail kept, and what was dropped before it: the counts only
/// when something was dropped.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutputView {
    /// The kept tail (UTF-8; invalid bytes replaced).
    pub text: String,
    /// Bytes and lines the command wrote in all; absent when nothing was
    /// dropped (the text is all of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<u64>,
    /// Bytes and whole lines dropped from the start to keep the tail
    /// bounded; absent: 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_bytes: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_lines: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl From<Output> for OutputView {
    fn from(o: Output) -> Self {
        let dropped = o.dropped_bytes > 0 || o.dropped_lines > 0;
        OutputView {
            text: o.text,
            total_bytes: dropped.then_some(o.total_bytes),
            total_lines: dropped.then_some(o.total_lines),
            dropped_bytes: o.dropped_bytes,
            dropped_lines: o.dropped_lines,
        }
    }
}

/// `job` as `get_job` reports it (run_command leaves out paneId and command).
pub fn view(job: &Job, id: &str) -> JobView {
    let finish = job.finish.borrow().clone();
    let (state, exit_status, output, lost_reason, elapsed) = match finish {
        None => (JobState::Running, None, None, None, job.started.elapsed()),
        Some(Finish::Done {
            status,
            output,
            elapsed,
        }) => (
            JobState::Done,
            Some(status),
            Some(output.into()),
            None,
            elapsed,
        ),
        Some(Finish::Lost { why, elapsed }) => (JobState::Lost, None, None, Some(why), elapsed),
    };
    JobView {
        job_id: (state == JobState::Running).then(|| id.to_string()),
        pane_id: Some(job.pane.clone()),
        command: Some(job.command.clone()),
        state,
        exit_status,
        output,
        lost_reason,
        elapsed_ms: elapsed.as_millis() as u64,
        timeout_ms: None,
        timeout_clamped: false,
        pane: job.pane.clone(),
        id: id.to_string(),
    }
}

/// `v` as run_command answers it: without the pane and the command line
/// its caller gave.
pub fn for_run_command(mut v: JobView) -> JobView {
    v.pane_id = None;
    v.command = None;
    v
}

/// The job `id` as `session` may see it (`get_job`): unknown, expired and
/// other views' jobs are all "no such job".
pub fn lookup(session: &Session, id: &str) -> Option<JobView> {
    let mut table = session.jobs.lock();
    prune(&mut table);
    let job = table
        .get_mut(id)
        .filter(|j| j.generation == session.generation() && session.view().covers(&j.owner.view))?;
    let v = view(job, id);
    if v.state != JobState::Running {
        job.collected = true;
    }
    Some(v)
}

/// A finished job's text for the model.
pub fn summary(v: &JobView) -> String {
    match v.state {
        JobState::Running => format!(
            "job {} on {} is still running after {} ms; collect it with get_job",
            v.id, v.pane, v.elapsed_ms
        ),
        JobState::Lost => format!(
            "job {} on {} was lost: {}",
            v.id,
            v.pane,
            v.lost_reason.as_deref().unwrap_or_default()
        ),
        JobState::Done => {
            let o = v.output.as_ref();
            let dropped = o
                .filter(|o| o.dropped_bytes > 0)
                .map(|o| {
                    format!(
                        " [{} earlier line(s), {} byte(s) dropped]",
                        o.dropped_lines, o.dropped_bytes
                    )
                })
                .unwrap_or_default();
            format!(
                "exit status {}{dropped}\n{}",
                v.exit_status.unwrap_or_default(),
                o.map_or("", |o| o.text.as_str())
            )
        }
    }
}
