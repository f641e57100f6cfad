//! `tmux_wait` (seed family): wait, without polling, until a pane's screen
//! contains literal text or its process exits.
//!
//! Process exit is the pidfd of the pane process turning readable. Screen
//! changes are writes to the pane's terminal (`tty_watch`, inotify): after each
//! burst of writes the broker re-reads the rows (a guarded, hook-refusing capture)
//! and again 4 and 25 ms later, because tmux may parse the bytes a moment after
//! the program wrote them. These events are [`PaneEvents`], which the libtmux
//! family's waits (`wait_for_text`, `wait_for_idle`) use too. Progress
//! notifications go out once a second while waiting when the client sent a
//! `progressToken`; cancellation drops the wait and everything it holds. The server exiting ends a wait with
//! `observation_lost` (delivery `observed`: the broker saw it happen).

use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::{Annotations, Progress, ToolOutput, ToolSpec};
use crate::toolkit::events::pane_events::{Event, PaneEvents};
use crate::toolkit::schemas::derived::{data_schema_of, input_of, Unobserved};
use crate::toolkit::seed::envelope;
use crate::toolkit::seed::screen::{observe_error, snapshot_data, snapshot_data_schema, ScopeArgs};
use crate::toolkit::target::references::PaneRef;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::Value;
use std::time::Duration;
use tmux_mcp_core::limits;
use tmux_mcp_core::sys;
use tmux_mcp_engine::capture::Rows;
use tmux_mcp_engine::observe::{self, ObserveError};

pub const SPEC: ToolSpec = ToolSpec::new(
    "tmux_wait",
    Annotations::read_only("Wait for pane text or process exit"),
    input_schema,
    output_schema,
    |c| c.run_with_progress(call),
)
.seed()
.description("Wait until a pane's screen contains text or its process exits; returns the capture or the exit.")
.details("Wait event-driven (tty inotify; typed echo within 250 ms) until an exact pane's screen contains literal text (byte substring across rows) or its tracked process exits. Requires tmux>=3.3 and the Linux pidfd process identity; the pane's process must be alive when the wait starts. timeout 0<t<=60 s (default 5); the deadline is min(timeout, limits.request_timeout_seconds of tmux_capabilities). Returns the matching capture, or the exit observation (exit status is never inferred). Refuses capture after-hooks. Sends progress notifications while waiting when a progressToken is given.")
.listed(crate::toolkit::call::spec::Listed::OptIn)
.sample(|s| json!({"target": json!({"kind": "pane", "id": s.pane, "generation": s.generation}), "condition": {"type": "screen_contains", "text": "$"}, "timeout": 0.5}));

const MAX_WAIT_SECONDS: f64 = 60.0;

/// The arguments: one pane, the condition, how long, and the bounds of the
/// capture that decides a text condition.
#[derive(Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
struct Args {
    target: PaneRef,
    condition: Condition,
    #[schemars(extend("exclusiveMinimum" = 0), range(max = MAX_WAIT_SECONDS))]
    timeout: Option<f64>,
    #[serde(flatten)]
    scope: ScopeArgs,
}

#[derive(Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Condition {
    ScreenContains {
        #[schemars(length(min = 1, max = 4096))]
        text: String,
    },
    ProcessExit,
}

fn input_schema() -> Value {
    input_of::<Args>()
}

crate::constant!(ScreenContains, "screen_contains");
crate::constant!(ProcessExit, "process_exit");

/// What a wait answers, by condition (the output schema is derived from it).
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
enum Waited {
    Text(TextSeen),
    Exit(Exited),
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TextSeen {
    target: PaneRef,
    condition: ScreenContains,
    /// The capture that contains the text: tmux_capture's snapshot data.
    #[schemars(schema_with = "capture_schema")]
    capture: Value,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Exited {
    target: PaneRef,
    condition: ProcessExit,
    process_generation: String,
    /// Monotonic seconds when the exit was seen.
    observed_at: f64,
    exit_status: Unobserved,
}

/// The `data` of tmux_capture's snapshot branch, from its published contract.
fn capture_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::Schema::try_from(snapshot_data_schema())
        .expect("the contract's snapshot data is a schema object")
}

fn output_schema() -> Value {
    envelope::output_schema(data_schema_of::<Waited>())
}

/// Byte-substring match across rows (a match may span row boundaries).
fn contains(rows: &Rows, needle: &[u8]) -> bool {
    let raw = rows.raw();
    raw.windows(needle.len()).any(|w| w == needle)
}

async fn call(
    session: &Session,
    args: Args,
    progress: Option<Progress>,
) -> Result<ToolOutput, ToolOutput> {
    let broker = &session.broker;
    let started = sys::monotonic_seconds();
    let begun = std::time::Instant::now();
    let place = broker.admission.wait().map_err(|refused| {
        envelope::error("capacity", &format!("{}.", refused.0), Delivery::NotSent)
    })?;
    let pane_ref = args.target;
    let (id, generation) = (pane_ref.id.as_str(), pane_ref.generation.as_str());
    // A.4: the deadline is min(request_timeout_seconds, timeout).
    let asked = args
        .timeout
        .unwrap_or(limits::REQUEST_TIMEOUT_SECONDS as f64);
    let timeout = asked.min(session.request_timeout_seconds);
    let scope = args.scope.scope();
    let text = match &args.condition {
        Condition::ScreenContains { text } => Some(text.as_bytes().to_vec()),
        Condition::ProcessExit => None,
    };

    let (pane, identity) =
        observe::resolve_tracked(broker, generation, id, session.read_freshness())
            .await
            .map_err(|e| observe_error(&e))?;
    if !session.can_see(&pane) {
        return Err(observe_error(&ObserveError::OutOfScope));
    }
    // Watch the terminal before the first read, so output written between
    // that read and the watch cannot go unnoticed.
    let watch = match &text {
        Some(_) => Some(watch_terminal(broker, &pane).await?),
        None => None,
    };
    // Both conditions start with one guarded read (so a capture hook refuses both).
    let first = observe::capture(broker, pane.clone(), &scope, Some(identity.clone()))
        .await
        .map_err(|e| observe_error(&e))?;
    let matched = |rows: &Rows| -> Option<ToolOutput> {
        let needle = text.as_ref()?;
        contains(rows, needle)
            .then(|| text_seen(&pane_ref, &identity.generation, rows, &scope, started))
    };
    if let Some(done) = matched(&first.rows) {
        return Ok(done);
    }
    let mut ev = PaneEvents::new(
        broker,
        place,
        id,
        begun,
        Duration::from_secs_f64(timeout),
        progress,
    )
    .exit_of(identity.clone());
    if let Some(w) = watch {
        ev = ev.watching(w);
    }
    loop {
        match ev.next().await {
            Event::Exited => {
                if text.is_some() {
                    return Err(failed(
                        broker,
                        id,
                        ObserveError::StaleTarget {
                            observed: true,
                            why: format!("the process of pane {id} exited while waiting for text"),
                        },
                    )
                    .await);
                }
                return Ok(exit_seen(&pane_ref, &identity.generation));
            }
            Event::WatchFailed(e) => {
                return Err(observe_error(&ObserveError::Transport {
                    observed: true,
                    why: format!("terminal watch failed: {e}"),
                }))
            }
            Event::Output | Event::Settled => {
                match read(broker, id, generation, &scope, &identity).await {
                    Ok(rows) => {
                        if let Some(done) = matched(&rows) {
                            return Ok(done);
                        }
                    }
                    Err(e) => return Err(failed(broker, id, e).await),
                }
            }
            Event::ServerGone => return Err(observation_lost(id)),
            Event::Idle | Event::Timeout => return Err(deadline(timeout, asked)),
        }
    }
}

/// The pane's terminal writes, watched for a text condition (a process exit
/// needs no watch).
async fn watch_terminal(
    broker: &tmux_mcp_engine::Broker,
    pane: &tmux_mcp_engine::registry::Pane,
) -> Result<tmux_mcp_engine::activity::ScreenEvents, ToolOutput> {
    broker.screen_events(pane).await.map_err(|e| {
        observe_error(&ObserveError::Unsupported {
            observed: true,
            why: format!("cannot watch the pane's terminal {}: {e}", pane.tty),
        })
    })
}

/// The answer when the screen holds the text: the capture that holds it
/// (its snapshot, as tmux_capture's) and its rows as text.
fn text_seen(
    pane_ref: &PaneRef,
    process_generation: &str,
    rows: &Rows,
    scope: &tmux_mcp_engine::capture::Scope,
    started: f64,
) -> ToolOutput {
    let key = sys::random_hex(16);
    let capture = snapshot_data(
        pane_ref,
        &key,
        Some(process_generation),
        rows,
        scope,
        started,
    );
    let mut out = envelope::ok(
        "tmux_wait",
        &Waited::Text(TextSeen {
            target: pane_ref.clone(),
            condition: ScreenContains,
            capture,
        }),
    );
    out.text = format!(
        "tmux_wait {}: the screen contains the text\n{}",
        pane_ref.id,
        String::from_utf8_lossy(&rows.raw())
    );
    out
}

/// The answer when the pane's process exited: when it was seen, never an
/// exit status (the broker cannot observe one).
fn exit_seen(pane_ref: &PaneRef, process_generation: &str) -> ToolOutput {
    let data = Waited::Exit(Exited {
        target: pane_ref.clone(),
        condition: ProcessExit,
        process_generation: process_generation.to_string(),
        observed_at: sys::monotonic_seconds(),
        exit_status: Unobserved,
    });
    let mut out = envelope::ok("tmux_wait", &data);
    out.text = format!(
        "tmux_wait {}: the pane's process exited (exit status not observed)",
        pane_ref.id
    );
    out
}

/// The error when the condition did not hold in time, saying how to wait
/// longer when the request timeout cut the `asked` time short.
fn deadline(timeout: f64, asked: f64) -> ToolOutput {
    let clamp = if timeout < asked {
        format!(" (the request timeout; {asked} s was asked — see limits.request_timeout_seconds in tmux_capabilities; `set -g @mcp-request-timeout SECONDS` raises it)")
    } else {
        String::new()
    };
    envelope::error(
        "deadline",
        &format!("The condition did not hold within {timeout} s{clamp}."),
        Delivery::Observed,
    )
}

/// A failure during the wait. Killing the server also ends its pane processes
/// and makes reads fail, a moment before the broker sees the server go: tell
/// the two apart before answering.
async fn failed(broker: &tmux_mcp_engine::Broker, id: &str, e: ObserveError) -> ToolOutput {
    if tokio::time::timeout(Duration::from_millis(150), broker.server_gone())
        .await
        .is_ok()
    {
        return observation_lost(id);
    }
    // The wait had started (its first read succeeded): the pane or its process
    // going away since is something the broker observed (A.4), even when the
    // read that noticed it sent nothing that could have an effect.
    let e = match e {
        ObserveError::StaleTarget { why, .. } => ObserveError::StaleTarget {
            observed: true,
            why,
        },
        other => other,
    };
    observe_error(&e)
}

fn observation_lost(id: &str) -> ToolOutput {
    envelope::error(
        "observation_lost",
        &format!("The tmux server exited (or the broker was stopped) while waiting on {id}."),
        Delivery::Observed,
    )
}

/// A fresh guarded read of the pane (the cache entry may be stale; `capture`
/// retries with a fresh table when its guard fails).
async fn read(
    broker: &tmux_mcp_engine::Broker,
    id: &str,
    generation: &str,
    scope: &tmux_mcp_engine::capture::Scope,
    identity: &std::sync::Arc<tmux_mcp_core::process::ProcessIdentity>,
) -> Result<Rows, ObserveError> {
    let pane = observe::resolve(broker, generation, id, observe::Freshness::Cached).await?;
    observe::capture(broker, pane, scope, Some(identity.clone()))
        .await
        .map(|c| c.rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_derived_schema_takes_one_condition_and_decodes_it() {
        let v = jsonschema::validator_for(&input_schema()).unwrap();
        let t = json!({ "kind": "pane", "id": "%1", "generation": "g" });
        let text = json!({ "target": t, "condition": { "type": "screen_contains", "text": "$ " },
                           "timeout": 0.5, "max_lines": 10 });
        let exit = json!({ "target": t, "condition": { "type": "process_exit" }, "timeout": 60 });
        assert!(v.is_valid(&text) && v.is_valid(&exit));
        let a = serde_json::from_value::<Args>(text).unwrap();
        assert!(matches!(a.condition, Condition::ScreenContains { ref text } if text == "$ "));
        assert_eq!((a.timeout, a.scope.scope().max_lines), (Some(0.5), 10));
        let a = serde_json::from_value::<Args>(exit).unwrap();
        assert!(matches!(a.condition, Condition::ProcessExit));
        for bad in [
            json!({ "target": t, "condition": { "type": "screen_contains" } }),
            json!({ "target": t, "condition": { "type": "screen_contains", "text": "" } }),
            json!({ "target": t, "condition": { "type": "process_exit", "text": "a" } }),
            json!({ "target": t, "condition": { "type": "idle" } }),
            json!({ "target": t }),
            json!({ "condition": { "type": "process_exit" } }),
            json!({ "target": t, "condition": { "type": "process_exit" }, "timeout": 0 }),
            json!({ "target": t, "condition": { "type": "process_exit" }, "timeout": 61 }),
            json!({ "target": t, "condition": { "type": "process_exit" }, "max_bytes": 0 }),
            json!({ "target": t, "condition": { "type": "process_exit" }, "history_lines": 1001 }),
            json!({ "target": t, "condition": { "type": "process_exit" }, "track": true }),
        ] {
            assert!(!v.is_valid(&bad), "accepted {bad}");
        }
    }
}
