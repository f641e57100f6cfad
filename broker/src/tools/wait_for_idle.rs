//! `wait_for_idle` (libtmux family, read-only): wait until a pane wrote nothing
//! to its terminal for `idleSeconds`, or the timeout, reporting which.
//!
//! Quiet is measured on the pane's terminal with inotify (every `write(2)` of
//! its programs is an event; see `tty_watch`), from the moment the call starts,
//! through the same events as `wait_for_text` (`toolkit::events::pane_events::Watched` over its `PaneEvents`). It reads no pane
//! content and sends tmux nothing but the fresh table read that resolves the
//! pane. Echo by the kernel of typed input (a program reading in cooked mode)
//! is not a write by the program and does not count as output.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, Progress, ToolOutput, ToolSpec};
use crate::toolkit::events::pane_events::{ClockReport, Event, Watched};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::{Generation, PaneId};
use crate::toolkit::target::references::PaneRef;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const SPEC: ToolSpec = ToolSpec::new(
    "wait_for_idle",
    Annotations::read_only("Wait for a pane to go quiet"),
    input_of::<Args>,
    schema_of::<Idle>,
    |c| c.run_with_progress(call),
)
.description("Wait until a pane writes nothing for idleSeconds (default 1).")
.details("Wait, event-driven (tty inotify; typed echo, which no program writes, within 250 ms), until a pane's programs wrote nothing to its terminal for idleSeconds (default 1; outcome idle), or timeoutMs (outcome timeout; clamped to the request timeout, reported). Quiet counts from the call's start. Reads no pane content; types nothing. Sends progress notifications when a progressToken is given.")
.sample(|s| json!({"paneId": s.pane, "idleSeconds": 0.2, "timeoutMs": 500}));

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
    generation: Option<Generation>,
    /// Seconds of quiet needed.
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 3600))]
    idle_seconds: Option<f64>,
    // Capped at the request timeout (the result says so).
    #[schemars(range(min = 1, max = 3_600_000))]
    timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Idle,
    Timeout,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Idle {
    pane: PaneRef,
    outcome: Outcome,
    idle_seconds: f64,
    /// Milliseconds since the pane last wrote (or since the call started).
    quiet_ms: u64,
    #[serde(flatten)]
    clock: ClockReport,
}

async fn call(
    session: &Session,
    args: Args,
    progress: Option<Progress>,
) -> Result<ToolOutput, ToolOutput> {
    let idle = args.idle_seconds.unwrap_or(1.0);
    let mut ev = Watched::start(
        session,
        &args.pane_id,
        args.generation.as_deref(),
        args.timeout_ms,
        Some(idle),
        progress,
    )
    .await?;
    let outcome = loop {
        match ev.next().await? {
            Event::Idle => break Outcome::Idle,
            Event::Timeout => break Outcome::Timeout,
            _ => continue,
        }
    };
    let out = Idle {
        pane: PaneRef::new(&ev.pane.id, session.generation()),
        outcome,
        idle_seconds: idle,
        quiet_ms: ev.ev.quiet().as_millis() as u64,
        clock: ev.report(),
    };
    let text = match outcome {
        Outcome::Idle => format!(
            "{} was quiet for {idle} s (waited {} ms)",
            ev.pane.id, out.clock.waited_ms
        ),
        Outcome::Timeout => format!(
            "{} did not stay quiet for {idle} s {}",
            ev.pane.id,
            out.clock.within()
        ),
    };
    Ok(ToolOutput::typed(&out, text))
}
