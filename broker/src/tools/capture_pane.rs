//! `capture_pane` (libtmux family, docs/spec.md B.1): the text a pane shows, or a
//! range of its scrollback, bounded by the server's line ceiling and the
//! 1,000,000-byte result ceiling *before* tmux is asked (B.0 row bounding).
//!
//! The row bounding is `tmux_mcp_engine::lines`; pane resolution and the
//! family's failure texts are `crate::toolkit::libtmux::pane_read`.
//!
//! The TypeScript reference wraps raw-id commands in a "daemon guard"; here the
//! generation model (the broker serves exactly one tmux server instance) and
//! `observe`'s in-queue guard cover the same ground.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::pane_read::{observe_failure, pane};
use crate::toolkit::schemas::contracts;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tmux_mcp_engine::lines::{
    decode_lines, effective_result_lines, plan_grid, tail_bytes, tail_lines, GridPlan,
    MAX_RESULT_BYTES,
};
use tmux_mcp_engine::observe;

pub const SPEC: ToolSpec = ToolSpec::new(
    "capture_pane",
    Annotations::read_only("Capture a pane"),
    contracts::capture_pane_input,
    contracts::capture_pane_output,
    |c| c.run(call),
)
.description("Read pane output; accepts no client-supplied executable input. Returned content may be sensitive or untrusted. The text a pane is showing, or its scrollback. Negative start reaches back into history (-100 is a hundred lines above the top of the screen). For repeated reads of the same pane use capture_since instead — it returns only what is new.")
.sample(|s| json!({"paneId": s.pane}));

/// The arguments. The published schema is the seed contract, byte for byte
/// (key order and draft included); `Args` derives the same schema, which a
/// test checks, so the decoding below and the contract cannot drift apart.
/// Unknown fields are ignored, as the contract allows them.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    /// Stable pane id, e.g. %1.
    #[schemars(regex(pattern = r"^%\d+$"))]
    pane_id: String,
    /// First line; negative reaches into scrollback.
    #[schemars(range(min = -9_007_199_254_740_991_i64, max = 9_007_199_254_740_991_i64))]
    start: Option<i64>,
    /// Last line, on the same scale as start: 0 is the top of the visible
    /// screen and negative reaches back into history. It does not count back
    /// from the bottom, so end:-1 is one line above the screen top, not the
    /// last line of output.
    #[schemars(range(min = -9_007_199_254_740_991_i64, max = 9_007_199_254_740_991_i64))]
    end: Option<i64>,
    /// Rejoin lines tmux wrapped.
    join_wrapped: Option<bool>,
    /// Keep at most this many lines, from the end. Defaults to the server
    /// limit.
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 9_007_199_254_740_991_i64))]
    max_lines: Option<i64>,
}

// ---------------------------------------------------------------------------
// The tool
// ---------------------------------------------------------------------------

pub async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let id = args.pane_id.as_str();
    let pane = pane(session, id, session.read_freshness()).await?;
    let (start, end) = (args.start, args.end);
    let join = args.join_wrapped.unwrap_or(false);
    let limit = effective_result_lines(args.max_lines);

    // Planned from the cached size, which the capture's guard proves; if the
    // pane was resized since, the guard re-read the table: plan again once.
    let mut plan = plan_grid(
        pane.width as i64,
        pane.height as i64,
        start,
        end,
        limit,
        MAX_RESULT_BYTES,
    );
    let mut pane = pane;
    let mut captured = Vec::new();
    for _ in 0..2 {
        if plan.row_limit == 0 {
            break;
        }
        let size = (pane.width, pane.height);
        match observe::capture_range(
            &session.broker,
            pane,
            plan.range.start,
            plan.range.end,
            join,
        )
        .await
        {
            Ok((seen, out)) => {
                if (seen.width, seen.height) == size {
                    captured = decode_lines(&out);
                    break;
                }
                plan = plan_grid(
                    seen.width as i64,
                    seen.height as i64,
                    start,
                    end,
                    limit,
                    MAX_RESULT_BYTES,
                );
                pane = seen;
            }
            Err(e) => return Err(observe_failure(id, &e)),
        }
    }
    let (trimmed, dropped_lines) = tail_lines(&captured, limit);
    let joined = trimmed.join("\n");
    let (text, omitted_bytes) = tail_bytes(&joined, MAX_RESULT_BYTES);
    let structured = json!({
        "byteClamped": plan.byte_clamped || omitted_bytes > 0,
        "droppedLines": dropped_lines,
        "effectiveEnd": plan.range.end,
        "effectiveStart": plan.range.start,
        "omittedBytes": omitted_bytes,
        "paneId": id,
        "rangeClamped": plan.range.clamped,
        "returnedBytes": text.len(),
        "text": text,
        "totalLines": captured.len(),
    });
    let rendered = render(&plan, dropped_lines, omitted_bytes, text);
    Ok(ToolOutput {
        structured: Some(structured),
        text: rendered,
        is_error: false,
        refusal: None,
    })
}

/// B.1 text rendering: notices first, then the text.
fn render(plan: &GridPlan, dropped_lines: usize, omitted_bytes: usize, text: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    if plan.range.clamped {
        match (plan.range.start, plan.range.end) {
            (Some(s), Some(e)) => parts.push(format!("[capture range clamped: {s} through {e}]")),
            _ => parts.push(format!("[capture omitted: no complete row fits the {MAX_RESULT_BYTES}-byte result ceiling]")),
        }
    }
    if dropped_lines > 0 {
        parts.push(format!(
            "[{dropped_lines} earlier lines omitted; raise maxLines within the server limit]"
        ));
    }
    if omitted_bytes > 0 {
        parts.push(format!(
            "[{omitted_bytes} earlier bytes omitted; narrow the requested range]"
        ));
    }
    if !text.is_empty() {
        parts.push(text.to_string());
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn rendering_puts_notices_first() {
        let plan = plan_grid(80, 50, Some(-1000), None, 200, 1_000_000);
        assert_eq!(
            render(&plan, 0, 0, "x"),
            "[capture range clamped: -150 through 49]\nx"
        );
        let none = plan_grid(80, 10, None, None, 200, 1_000_000);
        assert_eq!(render(&none, 2, 5, "x"), "[2 earlier lines omitted; raise maxLines within the server limit]\n[5 earlier bytes omitted; narrow the requested range]\nx");
        let wide = plan_grid(40_000, 10, None, None, 200, 1_000_000);
        assert_eq!(
            render(&wide, 0, 0, ""),
            "[capture omitted: no complete row fits the 1000000-byte result ceiling]"
        );
        assert_eq!(render(&none, 0, 0, ""), "");
    }

    #[test]
    fn published_schemas_are_the_contracts() {
        assert_eq!(
            contracts::capture_pane_input()["required"],
            json!(["paneId"])
        );
        assert_eq!(
            contracts::capture_pane_output()["additionalProperties"],
            json!(false)
        );
        let schema = contracts::capture_pane_input();
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["end", "joinWrapped", "maxLines", "paneId", "start"],
            "contract key order is kept"
        );
    }

    #[test]
    fn args_derive_the_contract() {
        let mut derived = crate::toolkit::schemas::derived::input_of::<Args>();
        derived["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        assert_eq!(derived, contracts::capture_pane_input());
    }
}
