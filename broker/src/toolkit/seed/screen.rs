//! The seed family's screen state, shared by `tmux_capture` and `tmux_wait`:
//! a capture's bounds as both take them, the snapshot-mode state object of
//! the `tmux_capture` contract and its schema, and the envelope of an
//! observation failure.

use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::output::RefusalKind;
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::schemas::contracts;
use crate::toolkit::seed::envelope;
use crate::toolkit::target::references::PaneRef;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tmux_mcp_core::sys;
use tmux_mcp_engine::capture::{Rows, Scope};
use tmux_mcp_engine::observe::ObserveError;

/// The envelope for an observation failure; the fixed message is followed by
/// the specific reason (never the input payload).
pub fn observe_error(e: &ObserveError) -> ToolOutput {
    // What an observation that failed had sent: nothing, unless tmux ran it.
    let sent = |observed: bool, then: Delivery| if observed { then } else { Delivery::NotSent };
    let (code, delivery) = match e {
        ObserveError::StaleTarget { observed, .. } => {
            ("stale_target", sent(*observed, Delivery::Observed))
        }
        ObserveError::HookSet { observed, .. } | ObserveError::Unsupported { observed, .. } => {
            ("unsupported", sent(*observed, Delivery::Observed))
        }
        ObserveError::Transport { observed, .. } => {
            ("transport_error", sent(*observed, Delivery::PossiblySent))
        }
        ObserveError::OutOfScope => {
            return envelope::policy_denied(&format!(
                "Refused: {}. Nothing was sent to tmux.",
                e.why()
            ))
            .refused(RefusalKind::OutOfScope)
        }
    };
    let out = envelope::error(code, e.why(), delivery);
    if e.is_hook_refusal() {
        out.refused(RefusalKind::CaptureHook)
    } else {
        out
    }
}

/// A capture's bounds as tmux_capture and tmux_wait take them; an absent one
/// is its default ([`Scope::default`]).
#[derive(Default, Deserialize, JsonSchema)]
pub struct ScopeArgs {
    #[schemars(range(min = 1, max = 1000))]
    max_lines: Option<usize>,
    #[schemars(range(min = 1, max = 262144))]
    max_bytes: Option<usize>,
    #[schemars(range(max = 1000))]
    history_lines: Option<usize>,
}

impl ScopeArgs {
    pub fn scope(&self) -> Scope {
        let d = Scope::default();
        Scope {
            max_lines: self.max_lines.unwrap_or(d.max_lines),
            max_bytes: self.max_bytes.unwrap_or(d.max_bytes),
            history_lines: self.history_lines.unwrap_or(d.history_lines),
        }
    }
}

pub fn scope_json(s: &Scope) -> Value {
    json!({ "max_lines": s.max_lines, "max_bytes": s.max_bytes, "history_lines": s.history_lines })
}

/// The snapshot-mode state object of the contract (without `next_cursor`).
pub fn snapshot_data(
    target: &PaneRef,
    capture_id: &str,
    process_generation: Option<&str>,
    rows: &Rows,
    scope: &Scope,
    started: f64,
) -> Value {
    json!({
        "mode": "snapshot",
        "target": target,
        "capture_id": capture_id,
        "process_generation": process_generation,
        "rows": rows.rows,
        "encoding": rows.encoding.as_str(),
        "row_count": rows.rows.len(),
        "bytes": rows.bytes,
        "truncated": rows.truncated,
        "history_continuity": "unknown",
        "interval": { "clock": "monotonic_seconds", "started": started, "finished": sys::monotonic_seconds() },
        "scope": scope_json(scope),
    })
}

/// The JSON Schema of that state object, taken from the published contract.
pub fn snapshot_data_schema() -> Value {
    contracts::tmux_capture_output()["oneOf"][0]["properties"]["data"]["oneOf"][0].clone()
}
