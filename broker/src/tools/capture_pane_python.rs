//! `capture_pane` as tmux-python/libtmux-mcp spells it (`--toolset python`,
//! docs/spec.md C.1, seed 004): snake_case arguments, the pane found from
//! `pane_id`, else `window_id`, else `session_id` / `session_name` / the first
//! session (its first window, that window's first pane); `capture-pane -p` with
//! `-S`/`-E` only when given; trailing empty lines removed; more than
//! `max_lines` (default 500, `null` for no limit) keeps the last ones under a
//! `[... truncated K lines ...]` header. The result is one string
//! (`{"result": …}`, as FastMCP wraps a string).
//!
//! The read is ours, not the reference's: the same guarded, hook-refusing
//! `capture-pane` as every capture (`observe::capture_range`), and only panes
//! this session may see. Where the reference has quirks, we do not copy them:
//! `max_lines` <= 0 is an input error (C.1 quirks).

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::pane_read;
use crate::toolkit::libtmux::python::{
    check_socket, nullable, positive_limit, selected_pane, PaneSelector,
};
use crate::toolkit::schemas::derived::schema_of;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::OnceLock;
use tmux_mcp_engine::lines::decode_lines;
use tmux_mcp_engine::observe;

pub const SPEC: ToolSpec = ToolSpec::new(
    "capture_pane",
    Annotations::read_only("Capture pane"),
    input_schema,
    schema_of::<Captured>,
    |c| c.run(call),
)
.description("Capture the visible contents of a tmux pane (terminal scrollback).\n\nUse for tmux pane output — ‘capture the build log’, ‘what did the server print’ — not editor file contents. The tool for reading what is displayed in a terminal; use search_panes to search across multiple panes at once.\n\nOutput is tail-preserved: when the capture exceeds max_lines the oldest lines are dropped and the returned string is prefixed with a single [... truncated K lines ...] header line so the agent can tell truncation occurred and re-request with a narrower start/end window or a larger max_lines if needed. Pass max_lines=None to disable truncation entirely.");

/// The seed's default `max_lines` (`CAPTURE_DEFAULT_MAX_LINES`).
const DEFAULT_MAX_LINES: i64 = 500;

/// The reference's middleware cuts results above this many bytes, keeping the tail.
const MAX_RESULT_BYTES: usize = 1_000_000;

fn input_schema() -> Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| {
        serde_json::from_str(include_str!(
            "../../contracts/capture_pane.python.input.json"
        ))
        .expect("contract parses")
    })
    .clone()
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Captured {
    /// The captured lines joined with LF, after the truncation header if any.
    result: String,
}

/// The arguments (the contract has checked them).
#[derive(Deserialize)]
struct Args {
    #[serde(flatten)]
    pane: PaneSelector,
    start: Option<i64>,
    end: Option<i64>,
    #[serde(default = "default_max_lines", deserialize_with = "nullable")]
    max_lines: Option<i64>,
}

fn default_max_lines() -> Option<i64> {
    Some(DEFAULT_MAX_LINES)
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let max_lines = positive_limit("capture_pane", "max_lines", args.max_lines)?;
    check_socket(session, &args.pane.server)?;
    let pane = selected_pane(session, &args.pane).await?;
    let id = pane.id.clone();
    let (_, out) = observe::capture_range(&session.broker, pane, args.start, args.end, false)
        .await
        .map_err(|e| pane_read::observe_failure(&id, &e))?;
    let lines = decode_lines(&out);
    let text = match max_lines {
        Some(m) if lines.len() as i64 > m => {
            let keep = m as usize;
            format!(
                "[... truncated {} lines ...]\n{}",
                lines.len() - keep,
                lines[lines.len() - keep..].join("\n")
            )
        }
        _ => lines.join("\n"),
    };
    let text = limit_bytes(text);
    Ok(ToolOutput::typed(
        &Captured {
            result: text.clone(),
        },
        text,
    ))
}

/// The reference's result limiter: above [`MAX_RESULT_BYTES`], keep the tail
/// (whole characters) under a `[... truncated N bytes ...]` line.
fn limit_bytes(text: String) -> String {
    if text.len() <= MAX_RESULT_BYTES {
        return text;
    }
    let mut cut = text.len() - MAX_RESULT_BYTES;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    format!("[... truncated {cut} bytes ...]\n{}", &text[cut..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Absent is the contract's default, `null` is too for a selector but is
    /// "no limit" for max_lines; every contract property has a field.
    #[test]
    fn args_decode_nulls_as_the_contract_means_them() {
        let decode = |v: Value| crate::toolkit::call::args::decode::<Args>(&v).unwrap();
        let a = decode(json!({}));
        assert_eq!(
            (a.max_lines, a.start, a.end),
            (Some(DEFAULT_MAX_LINES), None, None)
        );
        assert!(!a.pane.targeted() && a.pane.server.socket_name.is_none());
        let a = decode(json!({ "max_lines": null, "pane_id": null, "start": -100.0, "end": 5 }));
        assert_eq!((a.max_lines, a.start, a.end), (None, Some(-100), Some(5)));
        assert!(!a.pane.targeted());
        let a = decode(json!({ "session_name": "w", "socket_name": "s", "max_lines": 3 }));
        assert_eq!(a.max_lines, Some(3));
        assert_eq!(
            (
                a.pane.session_name.as_deref(),
                a.pane.server.socket_name.as_deref()
            ),
            (Some("w"), Some("s"))
        );
        assert!(a.pane.targeted());
        assert!(positive_limit("capture_pane", "max_lines", Some(0)).is_err());
        assert_eq!(
            positive_limit("capture_pane", "max_lines", None).ok(),
            Some(None)
        );
        // Each property the contract names is decoded (a value of the wrong
        // type for a known field fails; an unknown field would be ignored).
        crate::toolkit::call::args::assert_every_property_decoded::<Args>(
            &input_schema(),
            json!({}),
        );
    }

    #[test]
    fn the_byte_limiter_keeps_the_tail_in_whole_characters() {
        assert_eq!(limit_bytes("abc".into()), "abc");
        let text = "é".repeat(MAX_RESULT_BYTES); // 2 bytes each
        let out = limit_bytes(text.clone());
        let (head, tail) = out.split_once('\n').unwrap();
        assert_eq!(
            head,
            format!("[... truncated {} bytes ...]", MAX_RESULT_BYTES)
        );
        assert_eq!(tail.len(), MAX_RESULT_BYTES);
        assert!(text.ends_with(tail));
    }
}
