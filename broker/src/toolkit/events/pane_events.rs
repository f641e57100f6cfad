//! The events of one pane during one wait ([`PaneEvents`]), without polling:
//! what `tmux_wait`, `wait_for_text`, `wait_for_idle` and `wait_for_agent`
//! share, each deciding what an event means. [`Watched`] is the libtmux
//! family's wait over them.
//!
//! The events: output (with re-reads 4 and 25 ms after it, since tmux may
//! parse the bytes a moment after the write), the process's exit, an idle
//! period, the deadline, the server going. Progress goes out once a second.

use crate::session::Session;
use crate::toolkit::call::spec::{Progress, ToolOutput};
use crate::toolkit::libtmux::pane_read;
use crate::toolkit::libtmux::wording;
use schemars::JsonSchema;
use serde::Serialize;
use std::time::{Duration, Instant};
use tmux_mcp_engine::activity::{Change, ScreenEvents};
use tmux_mcp_engine::admission::Refused;
use tmux_mcp_engine::lines;
use tmux_mcp_engine::observe;
use tmux_mcp_engine::registry::Pane;

/// When the screen is read again after the last output event: tmux may parse
/// the bytes a moment after the program wrote them (the event comes at the
/// write), sooner or later depending on load, so a short re-read catches the
/// usual case and a later one the slow case.
const SETTLE: [Duration; 2] = [Duration::from_millis(4), Duration::from_millis(25)];

/// What woke a wait ([`PaneEvents::next`]).
#[derive(Debug)]
pub enum Event {
    /// The pane wrote to its terminal: read the screen again.
    Output,
    /// A settle re-read after output is due.
    Settled,
    /// Nothing was written for the idle period.
    Idle,
    /// The deadline passed.
    Timeout,
    /// The watched process exited (pidfd).
    Exited,
    /// The tmux server exited (or the broker is stopping).
    ServerGone,
    WatchFailed(std::io::Error),
}

/// The events of one pane during one wait, without polling: writes to its
/// terminal (inotify, [`ScreenEvents`]) with the settle re-reads after them, its
/// process exiting (pidfd), the server going, an optional quiet period, and
/// the deadline, an enrolled shell's command ending in the pane (a re-read);
/// progress notifications go out once a second meanwhile when
/// the client asked. Shared by `tmux_wait`, `wait_for_text` and `wait_for_idle`,
/// which decide what each event means. Holds the wait's admission place.
pub struct PaneEvents<'a> {
    broker: &'a tmux_mcp_engine::Broker,
    _place: tokio::sync::SemaphorePermit<'a>,
    id: String,
    watch: Option<ScreenEvents>,
    exit: Option<std::sync::Arc<tmux_mcp_core::process::ProcessIdentity>>,
    started: std::time::Instant,
    timeout: Duration,
    deadline: tokio::time::Instant,
    idle: Option<Duration>,
    last_output: tokio::time::Instant,
    settle: Option<tokio::time::Instant>,
    tick: tokio::time::Interval,
    progress: Option<Progress>,
    events: u64,
    /// Writes to the terminal among the events, and when the last came.
    writes: u64,
    last_write: tokio::time::Instant,
    /// Command ends of enrolled shells (`tmux-mcp shell-init`): one in this
    /// pane is a re-read at once, before the prompt's own write is seen.
    ends: tokio::sync::watch::Receiver<(u64, String)>,
}

impl<'a> PaneEvents<'a> {
    /// A wait on pane `id` that began at `started` and ends `timeout` later.
    pub fn new(
        broker: &'a tmux_mcp_engine::Broker,
        place: tokio::sync::SemaphorePermit<'a>,
        id: &str,
        started: std::time::Instant,
        timeout: Duration,
        progress: Option<Progress>,
    ) -> PaneEvents<'a> {
        let now = tokio::time::Instant::now();
        let deadline = tokio::time::Instant::from_std(started) + timeout;
        let second = Duration::from_secs(1);
        PaneEvents {
            broker,
            _place: place,
            id: id.to_string(),
            watch: None,
            exit: None,
            started,
            timeout,
            deadline,
            idle: None,
            last_output: now,
            settle: None,
            tick: tokio::time::interval_at(now + second, second),
            progress,
            events: 0,
            writes: 0,
            last_write: now,
            ends: broker.marks.ends(),
        }
    }

    /// Also wake on output to the pane's terminal.
    pub fn watching(mut self, watch: ScreenEvents) -> Self {
        self.watch = Some(watch);
        self
    }

    /// Also wake when this process exits.
    pub fn exit_of(
        mut self,
        identity: std::sync::Arc<tmux_mcp_core::process::ProcessIdentity>,
    ) -> Self {
        self.exit = Some(identity);
        self
    }

    /// Also wake when nothing was written for `quiet` (from now, or the last output).
    pub fn idle(mut self, quiet: Duration) -> Self {
        self.idle = Some(quiet);
        self
    }

    /// Changes the quiet period (`None`: no idle events). An idle event
    /// comes again after every `next` until the period is changed or output
    /// comes, so a wait that goes on after one turns it off here.
    pub fn set_idle(&mut self, quiet: Option<Duration>) {
        self.idle = quiet;
    }

    pub async fn next(&mut self) -> Event {
        loop {
            let far = self.deadline + Duration::from_secs(3600);
            let idle_at = self.idle.map_or(far, |d| self.last_output + d);
            tokio::select! {
                _ = async { self.exit.as_ref().expect("guarded").wait_exit().await }, if self.exit.is_some() => return Event::Exited,
                r = async { self.watch.as_ref().expect("guarded").next_change().await }, if self.watch.is_some() => {
                    let change = match r {
                        Ok(c) => c,
                        Err(e) => return Event::WatchFailed(e),
                    };
                    self.events += 1;
                    self.last_output = tokio::time::Instant::now();
                    if change == Change::Written {
                        self.writes += 1;
                        self.last_write = self.last_output;
                    }
                    self.settle = Some(self.last_output + SETTLE[0]);
                    return Event::Output;
                }
                _ = tokio::time::sleep_until(self.settle.unwrap_or(far)), if self.settle.is_some() => {
                    // The next re-read after the last output, if any is left.
                    let now = tokio::time::Instant::now();
                    self.settle = SETTLE.iter().map(|d| self.last_output + *d).find(|t| *t > now);
                    return Event::Settled;
                }
                Ok(()) = self.ends.changed() => {
                    if self.ends.borrow_and_update().1 == self.id {
                        return Event::Settled;
                    }
                }
                _ = tokio::time::sleep_until(idle_at), if self.idle.is_some() => return Event::Idle,
                _ = tokio::time::sleep_until(self.deadline) => return Event::Timeout,
                _ = self.broker.server_gone() => return Event::ServerGone,
                _ = self.tick.tick() => {
                    if let Some(p) = &self.progress {
                        let waited = self.started.elapsed().as_secs_f64();
                        let total = self.timeout.as_secs_f64();
                        p.report(waited.min(total), Some(total), &format!("waiting on {} for {waited:.0} s", self.id)).await;
                    }
                }
            }
        }
    }

    /// Since the wait began.
    pub fn waited(&self) -> Duration {
        self.started.elapsed()
    }

    /// Since the last output (or since this wait started watching).
    pub fn quiet(&self) -> Duration {
        self.last_output.elapsed()
    }

    /// Output events (bursts of writes to the terminal) seen.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Events that were writes by the pane's programs (not the safety net's
    /// readings, whose first one always tells).
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// Since the last write to the terminal (or since this wait started).
    pub fn quiet_writes(&self) -> Duration {
        self.last_write.elapsed()
    }
}

/// How long a wait took and the timeout it used (shared with wait_for_idle).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClockReport {
    pub waited_ms: u64,
    pub timeout_ms: u64,
    /// Present (true) when the timeoutMs asked for was cut to the request
    /// timeout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timeout_clamped: bool,
    /// Output events (bursts of writes to the pane's terminal) seen; absent: 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub output_events: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ClockReport {
    /// The timeout as a wait's text answer says it ran out: `within N ms`,
    /// and how to raise it when it was clamped.
    pub fn within(&self) -> String {
        let clamped = if self.timeout_clamped {
            " (timeoutMs clamped to the request timeout; `set -g @mcp-request-timeout SECONDS` raises it)"
        } else {
            ""
        };
        format!("within {} ms{clamped}", self.timeout_ms)
    }
}

/// A libtmux-family wait on one pane: the shared [`PaneEvents`] plus the pane
/// (for its guarded captures) and the timeout as the family reports it.
pub struct Watched<'a> {
    pub ev: PaneEvents<'a>,
    pub pane: Pane,
    timeout_ms: u64,
    clamped: bool,
}

impl<'a> Watched<'a> {
    /// Resolves pane `id` (fresh read: existence, generation, scope), then
    /// [`Watched::on`] it.
    pub async fn start(
        session: &'a Session,
        id: &str,
        generation: Option<&str>,
        asked_ms: Option<u64>,
        idle: Option<f64>,
        progress: Option<Progress>,
    ) -> Result<Watched<'a>, ToolOutput> {
        let started = Instant::now();
        let target = wording::target(session, id, generation).await?;
        let pane = target.panes[0].clone();
        Watched::on(session, pane, started, asked_ms, idle, progress).await
    }

    /// A wait on `pane`, already resolved by the caller, that began at
    /// `started`: takes a wait place and starts watching its terminal;
    /// `asked_ms` is clamped to the request timeout.
    pub async fn on(
        session: &'a Session,
        pane: Pane,
        started: Instant,
        asked_ms: Option<u64>,
        idle: Option<f64>,
        progress: Option<Progress>,
    ) -> Result<Watched<'a>, ToolOutput> {
        let broker: &'a tmux_mcp_engine::Broker = &session.broker;
        let (asked, timeout_ms) = session.wait_ms(asked_ms);
        let id = pane.id.clone();
        if pane.dead {
            return Err(wording::action_error(
                &format!("Pane {id} is dead (its program exited); nothing will write to it."),
                crate::toolkit::acting::tmux_command::Delivery::NotSent,
            ));
        }
        // A wait holds its place for its whole timeout, so the number running
        // at once is capped (admission), like tmux_wait's.
        let place = broker.admission.wait().map_err(|r: Refused| {
            ToolOutput::libtmux_error(format!("{}. Nothing was sent to tmux.", r.0))
        })?;
        let watch = session.broker.screen_events(&pane).await.map_err(|e| {
            ToolOutput::libtmux_error(format!(
                "Cannot watch pane {id}'s terminal {}: {e}. Nothing was sent to tmux.",
                pane.tty
            ))
        })?;
        let mut ev = PaneEvents::new(
            broker,
            place,
            &id,
            started,
            Duration::from_millis(timeout_ms),
            progress,
        )
        .watching(watch);
        if let Some(quiet) = idle {
            ev = ev.idle(Duration::from_secs_f64(quiet));
        }
        Ok(Watched {
            ev,
            pane,
            timeout_ms,
            clamped: timeout_ms < asked,
        })
    }

    /// The next event; the ones that end the wait with an error come as `Err`.
    pub async fn next(&mut self) -> Result<Event, ToolOutput> {
        match self.ev.next().await {
            Event::WatchFailed(e) => Err(ToolOutput::libtmux_error(format!(
                "Watching pane {}'s terminal failed: {e}.",
                self.pane.id
            ))),
            Event::ServerGone => Err(ToolOutput::libtmux_error(format!(
                "The tmux server exited (or the broker stopped) while waiting on {}.",
                self.pane.id
            ))),
            e => Ok(e),
        }
    }

    pub fn report(&self) -> ClockReport {
        ClockReport {
            waited_ms: self.ev.waited().as_millis() as u64,
            timeout_ms: self.timeout_ms,
            timeout_clamped: self.clamped,
            output_events: self.ev.events(),
        }
    }

    /// One guarded, hook-refusing capture of the visible screen, as lines.
    pub async fn screen(&mut self, session: &Session) -> Result<Vec<String>, ToolOutput> {
        match observe::capture_range(&session.broker, self.pane.clone(), None, None, false).await {
            Ok((pane, out)) => {
                self.pane = pane;
                Ok(lines::decode_lines(&out))
            }
            Err(e) => Err(pane_read::observe_failure(&self.pane.id, &e)),
        }
    }
}
