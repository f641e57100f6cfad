//! A `run_command` job as the tools report it (`run_command` when it
//! answers, `get_job` later): read from the broker's job store
//! (`crate::jobs`), scoped like retained cursors.

use super::refs::PaneRef;
use crate::jobs::{prune, Finish, Job, JobState, Output};
use crate::session::Session;
use schemars::JsonSchema;
use serde::Serialize;

/// A job as `run_command` and `get_job` report it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobView {
    pub job_id: String,
    pub pane: PaneRef,
    pub command: String,
    pub state: JobState,
    /// `$?` of the command line, when done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Output>,
    /// Why the job was lost, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_reason: Option<String>,
    /// Milliseconds since the line was typed (to the status, when done).
    pub elapsed_ms: u64,
    /// The wait this call used (run_command without detach only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Whether timeoutMs was cut to the request timeout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_clamped: Option<bool>,
}

/// `job` as `run_command` and `get_job` report it.
pub fn view(job: &Job, id: &str) -> JobView {
    let finish = job.finish.borrow().clone();
    let (state, exit_status, output, lost_reason, elapsed) = match finish {
        None => (JobState::Running, None, None, None, job.started.elapsed()),
        Some(Finish::Done {
            status,
            output,
            elapsed,
        }) => (JobState::Done, Some(status), Some(output), None, elapsed),
        Some(Finish::Lost { why, elapsed }) => (JobState::Lost, None, None, Some(why), elapsed),
    };
    JobView {
        job_id: id.to_string(),
        pane: PaneRef::new(&job.pane, &job.generation),
        command: job.command.clone(),
        state,
        exit_status,
        output,
        lost_reason,
        elapsed_ms: elapsed.as_millis() as u64,
        timeout_ms: None,
        timeout_clamped: None,
    }
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
            v.job_id, v.pane.id, v.elapsed_ms
        ),
        JobState::Lost => format!(
            "job {} on {} was lost: {}",
            v.job_id,
            v.pane.id,
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
