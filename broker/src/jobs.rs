//! The broker's job table: the `run_command` jobs of every session, by id.
//!
//! One table per broker, owned by the daemon and held by each `Session`
//! (not a process-wide static), bounded per agent and in all. `run_command`
//! fills it and `get_job` reads it; this module is only the table and its
//! rules, so the session can hold it without depending on the tools.
//!
//! Jobs live in broker memory, owned like retained cursors (readable by
//! sessions whose view covers the maker's), at most [`MAX_JOBS_PER_AGENT`]
//! running or uncollected per agent and [`MAX_JOBS`] in all (collected ones
//! make room first), each keeping at most `maxOutputBytes` (≤ 256 KiB) of
//! output tail and its command (≤ 16 KiB), so at most about 35 MiB. A
//! running job is awaited at most [`RUNNING_TTL`]; a finished job stays
//! readable [`DONE_TTL`]. The cap is checked before typing ([`admit`]) and
//! the job recorded after, so calls racing each other can pass it by the
//! number running at once.

use schemars::JsonSchema;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tmux_mcp_engine::retention::Owner;
use tokio::sync::watch;

/// Jobs one agent may hold (running or finished and not yet expired).
pub const MAX_JOBS_PER_AGENT: usize = 16;
/// Jobs the broker holds in all.
pub const MAX_JOBS: usize = 128;
/// How long a job's status is awaited before the job is dropped.
pub const RUNNING_TTL: Duration = Duration::from_secs(3600);
/// How long a finished job is kept for `get_job`.
pub const DONE_TTL: Duration = Duration::from_secs(tmux_mcp_core::limits::CAPTURE_TTL_SECONDS);
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// The status has not come yet (collect later with get_job).
    Running,
    /// The command finished: exitStatus and output are set.
    Done,
    /// The pane's shell or the tmux server went away before the status came.
    Lost,
}

/// The output tail kept, and what was dropped before it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Output {
    /// The kept tail (UTF-8; invalid bytes replaced).
    pub text: String,
    /// Bytes and lines the command wrote in all.
    pub total_bytes: u64,
    pub total_lines: u64,
    /// Bytes and whole lines dropped from the start to keep the tail bounded.
    pub dropped_bytes: u64,
    pub dropped_lines: u64,
}

/// What a finished job left.
#[derive(Debug, Clone)]
pub enum Finish {
    Done {
        status: i32,
        output: Output,
        elapsed: Duration,
    },
    Lost {
        why: String,
        elapsed: Duration,
    },
}

/// One `run_command` job: who started it, where, and how it ended.
pub struct Job {
    pub owner: Owner,
    pub generation: String,
    pub pane: String,
    pub command: String,
    pub started: Instant,
    pub finish: watch::Receiver<Option<Finish>>,
    pub finished_at: Option<Instant>,
    /// The call that started it was cancelled: nobody holds the id.
    pub orphaned: bool,
    /// `get_job` has returned its result: it no longer counts against its
    /// agent's jobs, and it is the first to go when the table is full.
    pub collected: bool,
}

impl Job {
    /// A job started now-ish (at `started`) whose end comes through `finish`.
    pub fn new(
        owner: Owner,
        generation: &str,
        pane: &str,
        command: &str,
        started: Instant,
        finish: watch::Receiver<Option<Finish>>,
    ) -> Job {
        Job {
            owner,
            generation: generation.to_string(),
            pane: pane.to_string(),
            command: command.to_string(),
            started,
            finish,
            finished_at: None,
            orphaned: false,
            collected: false,
        }
    }
}

/// The broker's jobs, by id: one table shared by every session of the broker
/// (a job is visible to any session whose view covers its owner's), owned by
/// the daemon and reached through `Session::jobs`, like every other store.
#[derive(Default)]
pub struct Jobs(Mutex<HashMap<String, Job>>);

impl Jobs {
    pub fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Job>> {
        // A panic while the table is held leaves it consistent (every update
        // is one insert, remove or field write), so a poisoned lock is usable.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Drops finished jobs past [`DONE_TTL`] (and orphans as soon as they finish).
pub fn prune(table: &mut HashMap<String, Job>) {
    let now = Instant::now();
    for job in table.values_mut() {
        if job.finished_at.is_none() && job.finish.borrow().is_some() {
            job.finished_at = Some(now);
        }
    }
    table.retain(|_, j| match j.finished_at {
        Some(at) => !j.orphaned && now.duration_since(at) < DONE_TTL,
        None => true,
    });
}

/// Makes room for one more job of `agent`, or says why there is none: the
/// agent holds at most [`MAX_JOBS_PER_AGENT`] uncollected jobs; at
/// [`MAX_JOBS`] in all, collected jobs go first, oldest first.
pub fn admit(table: &mut HashMap<String, Job>, agent: Option<u64>) -> Result<(), String> {
    prune(table);
    let mine = table
        .values()
        .filter(|j| j.owner.agent == agent && !j.collected)
        .count();
    if mine >= MAX_JOBS_PER_AGENT {
        return Err(format!("Too many jobs: this agent holds {mine} running or uncollected jobs (at most {MAX_JOBS_PER_AGENT}); collect finished ones with get_job, or wait for running ones to end."));
    }
    while table.len() >= MAX_JOBS {
        let oldest = table
            .iter()
            .filter(|(_, j)| j.collected)
            .min_by_key(|(_, j)| j.finished_at)
            .map(|(k, _)| k.clone());
        match oldest {
            Some(k) => {
                table.remove(&k);
            }
            None => return Err(format!("Too many jobs: the broker holds {MAX_JOBS} running or uncollected jobs; retry when some have been collected.")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(agent: u64, finished: bool, collected: bool) -> Job {
        let finish = finished.then(|| Finish::Lost {
            why: String::new(),
            elapsed: Duration::ZERO,
        });
        let (_tx, rx) = watch::channel(finish);
        Job {
            owner: Owner {
                agent: Some(agent),
                view: tmux_mcp_engine::retention::View::Server,
            },
            generation: "g".into(),
            pane: "%1".into(),
            command: "true".into(),
            started: Instant::now(),
            finish: rx,
            finished_at: None,
            orphaned: false,
            collected,
        }
    }

    #[test]
    fn jobs_are_capped_per_agent_until_collected_and_collected_ones_make_room() {
        let mut t: HashMap<String, Job> = (0..MAX_JOBS_PER_AGENT)
            .map(|i| (format!("a{i}"), job(1, true, false)))
            .collect();
        assert!(admit(&mut t, Some(1)).unwrap_err().contains("at most 16"));
        assert!(
            admit(&mut t, Some(2)).is_ok(),
            "another agent's jobs do not count"
        );
        t.get_mut("a0").unwrap().collected = true;
        assert!(
            admit(&mut t, Some(1)).is_ok(),
            "a collected job no longer counts"
        );
        // A full table: collected jobs are dropped to make room, never others.
        t.extend((0..MAX_JOBS).map(|i| (format!("b{i}"), job(3 + i as u64, false, false))));
        assert!(admit(&mut t, Some(999))
            .unwrap_err()
            .contains("broker holds"));
        let mut t: HashMap<String, Job> = (0..MAX_JOBS)
            .map(|i| (format!("c{i}"), job(i as u64, true, i < 3)))
            .collect();
        assert!(admit(&mut t, Some(999)).is_ok());
        assert_eq!(t.len(), MAX_JOBS - 1);
        assert_eq!(t.values().filter(|j| j.collected).count(), 2);
    }
}
