//! `capture_since` as tmux-python/libtmux-mcp spells it (`--toolset python`,
//! docs/spec.md C.2): snake_case arguments, the pane found as the Python
//! `capture_pane` finds it (or from the cursor alone), `max_lines` (500) and
//! `max_bytes` (128,000) with `null` for the largest the broker allows, and the
//! reference's result fields (`lines`, `lines_missed`, `truncated`,
//! `truncated_lines`, `truncated_bytes`, `elapsed_seconds`). The reading is the
//! default `capture_since`'s (grid-based, a retained cursor, losses reported
//! with a reason): this module only translates.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::events::lines_since::{self as capture_since, pane_of_cursor};
use crate::toolkit::libtmux::python::{
    check_socket, nullable, positive_limit, selected_pane, PaneSelector,
};
use crate::toolkit::schemas::derived::{nullable_input_of, schema_of};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const SPEC: ToolSpec = ToolSpec::new(
    "capture_since",
    Annotations::read_only("Capture since"),
    nullable_input_of::<Args>,
    schema_of::<Since>,
    |c| c.run(call),
)
.description("Return only the lines a tmux pane shows that are new since `cursor` (omit it to start: the visible screen and a cursor). Pane: pane_id, else window_id, else session_id / session_name / the first session (its first window's first pane), or the pane of the cursor alone. Lines that could not be recovered (history-limit, clear-history, a respawn) are reported with lines_missed: true, never silently dropped. max_lines (default 500) and max_bytes (default 128000) keep the newest lines; null asks for the broker's largest (10000 lines, 1000000 bytes). Read-only; fires no tmux hook.");

const DEFAULT_MAX_LINES: i64 = 500;
const DEFAULT_MAX_BYTES: i64 = 128_000;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Since {
    pane_id: String,
    cursor: String,
    /// The new lines, oldest first.
    lines: Vec<String>,
    /// Seconds this call took, to the millisecond.
    elapsed_seconds: f64,
    /// Lines may have been lost since the cursor (see `missed_reason`).
    lines_missed: bool,
    /// Why, when `lines_missed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    missed_reason: Option<String>,
    truncated: bool,
    truncated_lines: u64,
    truncated_bytes: u64,
}

/// The arguments; the published schema is derived from them.
#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The cursor of the previous call; omit to start.
    #[serde(default)]
    cursor: Option<String>,
    #[serde(flatten)]
    pane: PaneSelector,
    /// Most lines to return (the newest); null: the broker's largest.
    #[serde(default = "default_max_lines", deserialize_with = "nullable")]
    max_lines: Option<i64>,
    /// Most bytes to return (the newest lines); null: the broker's largest.
    #[serde(default = "default_max_bytes", deserialize_with = "nullable")]
    max_bytes: Option<i64>,
}

fn default_max_lines() -> Option<i64> {
    Some(DEFAULT_MAX_LINES)
}

fn default_max_bytes() -> Option<i64> {
    Some(DEFAULT_MAX_BYTES)
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let started = std::time::Instant::now();
    let max_lines = positive_limit("capture_since", "max_lines", args.max_lines)?;
    let max_bytes = positive_limit("capture_since", "max_bytes", args.max_bytes)?;
    check_socket(session, &args.pane.server)?;
    let cursor = args.cursor;
    let pane_id = match (&cursor, args.pane.targeted()) {
        (Some(c), false) => match pane_of_cursor(session, c) {
            Some(p) => p,
            None => return Err(ToolOutput::libtmux_error("invalid capture_since cursor: no cursor of this broker has this value (unknown, expired, or made before the broker restarted); omit it to start again. Nothing was sent to tmux.".to_string())),
        },
        _ => selected_pane(session, &args.pane).await?.id,
    };
    let unlimited = |v: Option<i64>| v.map_or(u64::MAX, |n| n as u64);
    let out = capture_since::call(
        session,
        capture_since::Args {
            pane_id: crate::toolkit::target::ids::PaneId(pane_id.clone()),
            cursor,
            max_lines: Some(unlimited(max_lines)),
            max_bytes: Some(unlimited(max_bytes)),
            wait_ms: None,
            styles: None,
        },
    )
    .await?;
    let Some(s) = out.structured.as_ref().filter(|_| !out.is_error) else {
        return Err(out);
    };
    let since = Since {
        pane_id,
        cursor: s["cursor"].as_str().unwrap_or_default().to_string(),
        lines: s["lines"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| l.as_str().map(str::to_string))
            .collect(),
        elapsed_seconds: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        lines_missed: s["linesMissed"] == json!(true),
        missed_reason: s["missed"]["reason"].as_str().map(str::to_string),
        truncated: s.get("truncated").is_some(),
        truncated_lines: s["truncated"]["lines"].as_u64().unwrap_or(0),
        truncated_bytes: s["truncated"]["bytes"].as_u64().unwrap_or(0),
    };
    Ok(ToolOutput::typed(&since, out.text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn args_decode_every_property_and_null_limits_as_no_limit() {
        let decode = |v: Value| crate::toolkit::call::args::decode::<Args>(&v).unwrap();
        let a = decode(json!({}));
        assert_eq!(
            (a.max_lines, a.max_bytes),
            (Some(DEFAULT_MAX_LINES), Some(DEFAULT_MAX_BYTES))
        );
        assert!(a.cursor.is_none() && !a.pane.targeted());
        let a =
            decode(json!({ "max_lines": null, "max_bytes": 10, "cursor": "c", "window_id": "@1" }));
        assert_eq!(
            (a.max_lines, a.max_bytes, a.cursor.as_deref()),
            (None, Some(10), Some("c"))
        );
        assert!(a.pane.targeted());
        crate::toolkit::call::args::assert_every_property_decoded::<Args>(
            &nullable_input_of::<Args>(),
            json!({}),
        );
    }
}
