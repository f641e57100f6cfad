//! `tmux_capture` (seed family): the exact published contract over the capture
//! core. A snapshot returns bounded rows; `track: true` binds the capture to the
//! pane's process and returns `next_cursor`; `{target, cursor}` returns the exact
//! row splice since that capture.

use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::schemas::contracts;
use crate::toolkit::seed::envelope;
use crate::toolkit::seed::screen::{observe_error, scope_json, snapshot_data, ScopeArgs};
use crate::toolkit::target::references::PaneRef;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tmux_mcp_core::limits;
use tmux_mcp_core::sys;
use tmux_mcp_engine::capture::{self, CursorEntry, Rows};
use tmux_mcp_engine::observe::{self, ObserveError};
use tmux_mcp_engine::retention::{Owner, View};
use tmux_mcp_engine::Broker;

pub const SPEC: ToolSpec = ToolSpec::new(
    "tmux_capture",
    Annotations::read_only("Capture pane rows"),
    contracts::tmux_capture_input,
    contracts::tmux_capture_output,
    |c| c.run(call),
)
.seed()
.description("Read exact-pane screen/history rows preserving LF. Defaults: 200 lines, 65536 bytes, zero history lines, track=false. Limits: 1000 lines/history, 262144 bytes. UTF-8 or base64; truncation is separate from unknown history continuity. Tracked process cursors require tmux>=3.3a and a native process identity backend: Linux peer pidfds with matching PID namespaces, or Darwin kqueue process observation. Continuation returns an exact state row splice, not a live-output journal. Refuses capture after-hooks.")
.listed(crate::toolkit::call::spec::Listed::OptIn)
.sample(|s| json!({"target": json!({"kind": "pane", "id": s.pane, "generation": s.generation})}));

fn stale_cursor(why: &str) -> ToolOutput {
    envelope::error("stale_cursor", why, Delivery::NotSent)
}

/// The arguments, as the contract shapes them: a snapshot (optionally
/// tracked) or a continuation from a cursor. The contract is the published
/// schema, byte-exact; `Args` decodes what it has checked, and a test keeps the
/// two accepting the same inputs.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum Args {
    Continue(Continuation),
    Snapshot(SnapshotArgs),
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Continuation {
    target: PaneRef,
    #[schemars(regex(pattern = r"^[a-f0-9]{32}$"), length(max = 32))]
    cursor: String,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
struct SnapshotArgs {
    target: PaneRef,
    #[serde(default)]
    track: bool,
    #[serde(flatten)]
    scope: ScopeArgs,
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let broker = &session.broker;
    let started = sys::monotonic_seconds();
    let _place = broker.admission.capture().await.map_err(|refused| {
        envelope::error(
            "capacity",
            &format!("The broker is overloaded: {}.", refused.0),
            Delivery::NotSent,
        )
    })?;
    Ok(match args {
        Args::Continue(c) => continue_from(session, &c.target, &c.cursor, started).await,
        Args::Snapshot(s) => snapshot(session, &s, started).await,
    })
}

/// `{target, cursor}`: the row splice since the capture that made `cursor`.
async fn continue_from(
    session: &Session,
    target: &PaneRef,
    cursor: &str,
    started: f64,
) -> ToolOutput {
    let broker = &session.broker;
    let (id, generation) = (target.id.as_str(), target.generation.as_str());
    let retained = broker.retained.get(cursor, &session.view());
    let Some(tmux_mcp_engine::retention::Retained::Cursor(entry)) = retained.as_deref() else {
        return stale_cursor("No retained capture has this cursor.");
    };
    if entry.pane_id != id || entry.generation != generation {
        return stale_cursor("The cursor belongs to another target.");
    }
    let pane = match observe::resolve(broker, generation, id, session.read_freshness()).await {
        Ok(p) => p,
        Err(e @ (ObserveError::Unsupported { .. } | ObserveError::HookSet { .. })) => {
            return observe_error(&e)
        }
        Err(e) => return stale_cursor(e.why()),
    };
    if !entry.handoff && !session.can_see(&pane) {
        return observe_error(&ObserveError::OutOfScope);
    }
    if !entry.identity.matches(pane.pid) {
        return stale_cursor(
            "The pane's process changed (exited or respawned) since the cursor was made.",
        );
    }
    let cur = match observe::capture(broker, pane, &entry.scope, Some(entry.identity.clone())).await
    {
        Ok(c) => c,
        Err(e @ (ObserveError::Unsupported { .. } | ObserveError::HookSet { .. })) => {
            return observe_error(&e)
        }
        Err(e) => return stale_cursor(e.why()),
    };
    let splice = capture::diff(
        &entry.rows.rows,
        entry.rows.encoding,
        &cur.rows.rows,
        cur.rows.encoding,
    );
    let key = sys::random_hex(16);
    let data = json!({
        "mode": "delta",
        "target": target,
        "capture_id": key,
        "base_capture_id": cursor,
        "process_generation": entry.identity.generation,
        "encoding": cur.rows.encoding.as_str(),
        "row_count": cur.rows.rows.len(),
        "bytes": cur.rows.bytes,
        "truncated": cur.rows.truncated,
        "history_continuity": "unknown",
        "interval": { "clock": "monotonic_seconds", "started": started, "finished": sys::monotonic_seconds() },
        "scope": scope_json(&entry.scope),
        "reset": splice.reset,
        "splice": { "start": splice.start, "delete": splice.delete, "rows": splice.rows },
        "next_cursor": key,
    });
    let text = delta_text(id, &key, &splice, cur.rows.encoding);
    let new_entry = CursorEntry {
        pane_id: id.to_string(),
        generation: generation.to_string(),
        rows: cur.rows,
        scope: entry.scope,
        identity: entry.identity.clone(),
        handoff: entry.handoff,
    };
    // A hand-off chain stays readable by every agent, as its first cursor was.
    let owner = Owner {
        agent: Some(session.id),
        view: if entry.handoff {
            View::Anyone
        } else {
            session.view()
        },
    };
    finish(broker, data, text, Some((key, new_entry, owner)))
}

/// A snapshot, bound to the pane's process when `track` is asked.
async fn snapshot(session: &Session, args: &SnapshotArgs, started: f64) -> ToolOutput {
    let broker = &session.broker;
    let target = &args.target;
    let (id, generation) = (target.id.as_str(), target.generation.as_str());
    let scope = args.scope.scope();
    let track = args.track;
    let resolved = if track {
        observe::resolve_tracked(broker, generation, id, session.read_freshness())
            .await
            .map(|(p, i)| (p, Some(i)))
    } else {
        observe::resolve(broker, generation, id, session.read_freshness())
            .await
            .map(|p| (p, None))
    };
    let (pane, identity) = match resolved {
        Ok(r) => r,
        Err(e) => return observe_error(&e),
    };
    if !session.can_see(&pane) {
        return observe_error(&ObserveError::OutOfScope);
    }
    let cur = match observe::capture(broker, pane, &scope, identity).await {
        Ok(c) => c,
        Err(e) => return observe_error(&e),
    };
    let key = sys::random_hex(16);
    let mut data = snapshot_data(
        target,
        &key,
        cur.identity.as_ref().map(|i| i.generation.as_str()),
        &cur.rows,
        &scope,
        started,
    );
    let retain = cur.identity.map(|identity| {
        data["next_cursor"] = json!(key);
        (
            key.clone(),
            CursorEntry {
                pane_id: id.to_string(),
                generation: generation.to_string(),
                rows: cur.rows.clone(),
                scope,
                identity,
                handoff: false,
            },
            session.owner(),
        )
    });
    let text = snapshot_text(id, retain.as_ref().map(|(k, _, _)| k.as_str()), &cur.rows);
    finish(broker, data, text, retain)
}

/// Checks the response size, then retains the cursor entry (nothing is retained
/// for a response that is too large).
fn finish(
    broker: &Broker,
    data: Value,
    text: String,
    retain: Option<(String, CursorEntry, Owner)>,
) -> ToolOutput {
    let out = envelope::ok("tmux_capture", data);
    let size = out
        .structured
        .as_ref()
        .map(|v| v.to_string().len())
        .unwrap_or(0)
        + text.len();
    if size as u64 > limits::MAX_RESPONSE_BYTES {
        return envelope::error(
            "capacity",
            &format!(
                "The response would exceed {} bytes; ask for fewer lines or bytes.",
                limits::MAX_RESPONSE_BYTES
            ),
            Delivery::Observed,
        );
    }
    if let Some((key, entry, owner)) = retain {
        if broker
            .retained
            .insert(
                key,
                tmux_mcp_engine::retention::Retained::Cursor(entry),
                owner,
            )
            .is_err()
        {
            return envelope::error(
                "capacity",
                "The capture is larger than the retention budget.",
                Delivery::Observed,
            );
        }
    }
    ToolOutput { text, ..out }
}

/// Decision 7: what most clients show the model — a header line, then the rows.
pub fn snapshot_text(pane: &str, cursor: Option<&str>, rows: &Rows) -> String {
    let mut head = format!(
        "tmux_capture {pane}: {} rows, {} bytes, {}",
        rows.rows.len(),
        rows.bytes,
        rows.encoding.as_str()
    );
    if rows.truncated {
        head.push_str(", truncated (older rows dropped)");
    }
    if let Some(c) = cursor {
        head.push_str(&format!(", next_cursor {c}"));
    }
    format!("{head}\n{}", printable(rows))
}

fn delta_text(pane: &str, cursor: &str, s: &capture::Splice, enc: capture::Encoding) -> String {
    let head = format!(
        "tmux_capture {pane} delta: at row {} delete {} insert {}{}; next_cursor {cursor}",
        s.start,
        s.delete,
        s.rows.len(),
        if s.reset {
            " (reset: nothing in common)"
        } else {
            ""
        }
    );
    let inserted = Rows {
        rows: s.rows.clone(),
        encoding: enc,
        bytes: 0,
        truncated: false,
    };
    format!("{head}\n{}", printable(&inserted))
}

fn printable(rows: &Rows) -> String {
    String::from_utf8_lossy(&rows.raw()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract is what is published and enforced; `Args` must take the
    /// same inputs, or a valid call would fail to decode (or an invalid one
    /// decode).
    #[test]
    fn args_accept_what_the_contract_accepts() {
        let contract = jsonschema::validator_for(&contracts::tmux_capture_input()).unwrap();
        let derived =
            jsonschema::validator_for(&serde_json::to_value(schemars::schema_for!(Args)).unwrap())
                .unwrap();
        let t = json!({ "kind": "pane", "id": "%1", "generation": "g" });
        let cursor = "0123456789abcdef0123456789abcdef";
        let cases = [
            json!({ "target": t }),
            json!({ "target": t, "track": true, "max_lines": 1, "max_bytes": 262144, "history_lines": 0 }),
            json!({ "target": t, "max_lines": 1000, "history_lines": 1000 }),
            json!({ "target": t, "cursor": cursor }),
            json!({ "target": t, "cursor": cursor, "track": true }),
            json!({ "target": t, "cursor": cursor, "max_lines": 5 }),
            json!({ "target": t, "cursor": "xyz" }),
            json!({ "target": t, "max_lines": 0 }),
            json!({ "target": t, "max_lines": 1001 }),
            json!({ "target": t, "max_bytes": 262145 }),
            json!({ "target": t, "history_lines": -1 }),
            json!({ "target": t, "track": "yes" }),
            json!({ "target": t, "other": 1 }),
            json!({ "target": { "kind": "window", "id": "@1", "generation": "g" } }),
            json!({ "target": { "kind": "pane", "id": "%1", "generation": "" } }),
            json!({ "cursor": cursor }),
            json!({}),
        ];
        for args in cases {
            let ok = contract.is_valid(&args);
            assert_eq!(derived.is_valid(&args), ok, "{args}");
            if ok {
                let decoded = serde_json::from_value::<Args>(args.clone()).unwrap();
                match decoded {
                    Args::Continue(c) => assert_eq!(c.cursor, args["cursor"], "{args}"),
                    Args::Snapshot(s) => {
                        assert!(args.get("cursor").is_none(), "{args}");
                        assert_eq!(s.track, args["track"] == true);
                        let scope = s.scope.scope();
                        let d = tmux_mcp_engine::capture::Scope::default();
                        let want = |k: &str, def: usize| {
                            args.get(k)
                                .and_then(Value::as_u64)
                                .map_or(def, |v| v as usize)
                        };
                        assert_eq!(scope.max_lines, want("max_lines", d.max_lines));
                        assert_eq!(scope.max_bytes, want("max_bytes", d.max_bytes));
                        assert_eq!(scope.history_lines, want("history_lines", d.history_lines));
                    }
                }
            }
        }
    }
}
