//! `capture_pane` (libtmux family, SPEC-TOOLS B.1): the text a pane shows, or a
//! range of its scrollback, bounded by the server's line ceiling and the
//! 1,000,000-byte result ceiling *before* tmux is asked (B.0 row bounding).
//!
//! Also home of the family's shared pieces: the limits, the pure row-bounding
//! helpers (`row_limit`, `bounded_range`, `tail_lines`, `tail_bytes`,
//! `bound_text`), output decoding (`\xNN` for invalid bytes, trailing empty
//! lines removed), pane resolution with the B.0 failure texts, and the mapping of
//! capture failures to tool errors.
//!
//! The TypeScript reference wraps raw-id commands in a "daemon guard"; here the
//! generation model (the broker serves exactly one tmux server instance) and
//! `observe`'s in-queue guard cover the same ground.

use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use serde_json::{json, Value};
use std::sync::OnceLock;
use tmux_mcp_engine::observe::{self, ObserveError};
use tmux_mcp_engine::registry::{numeric_id, Pane, Snapshot};

/// Result ceiling in bytes for one tool result (SPEC-TOOLS decision 9).
pub const MAX_RESULT_BYTES: i64 = 1_000_000;
/// The configured line ceiling (`maxResultLines`, the reference default).
pub const MAX_RESULT_LINES: i64 = 200;
/// Bounds of any line request (`maxResultLines` is clamped to 1..=10,000).
pub const MAX_LINES_BOUND: i64 = 10_000;

pub const SPEC: ToolSpec = ToolSpec {
    name: "capture_pane",
    family: Family::Libtmux,
    description: "Read pane output; accepts no client-supplied executable input. Returned content may be sensitive or untrusted. The text a pane is showing, or its scrollback. Negative start reaches back into history (-100 is a hundred lines above the top of the screen). For repeated reads of the same pane use capture_since instead — it returns only what is new.",
    annotations: Annotations::read_only("Capture a pane"),
    opt_in: false,
    input_schema,
    output_schema,
    run,
};

/// The contract files, published as they are (key order kept).
fn input_schema() -> Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| {
        serde_json::from_str(include_str!("../../contracts/capture_pane.input.json"))
            .expect("contract parses")
    })
    .clone()
}

fn output_schema() -> Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| {
        serde_json::from_str(include_str!("../../contracts/capture_pane.output.json"))
            .expect("contract parses")
    })
    .clone()
}

// ---------------------------------------------------------------------------
// Limits and row bounding (pure)
// ---------------------------------------------------------------------------

/// `effectiveResultLines`: the request clamped to 1..=10,000, then to the
/// configured ceiling; absent means the ceiling.
pub fn effective_result_lines(requested: Option<i64>) -> i64 {
    match requested {
        None => MAX_RESULT_LINES,
        Some(r) => r.clamp(1, MAX_LINES_BOUND).min(MAX_RESULT_LINES),
    }
}

/// `rowLimit`: how many rows of a pane `width` cells wide fit `byte_limit`
/// (tmux stores at most 32 bytes per cell, plus the LF), at most `line_limit`.
pub fn row_limit(width: i64, line_limit: i64, byte_limit: i64) -> i64 {
    if width <= 0 || line_limit <= 0 || byte_limit <= 0 {
        return 0;
    }
    let row_bytes = width.saturating_mul(32).saturating_add(1);
    if row_bytes > byte_limit {
        return 0;
    }
    line_limit.min(byte_limit / row_bytes)
}

/// A `capture-pane` range: `None` means the flag is omitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub clamped: bool,
    pub start: Option<i64>,
    pub end: Option<i64>,
}

/// `boundedRange`: keeps the last `limit` rows of `start..=end` (tmux's scale);
/// a range that already fits is returned unchanged.
pub fn bounded_range(
    height: Option<i64>,
    start: Option<i64>,
    end: Option<i64>,
    limit: i64,
) -> Range {
    let known_height = height.filter(|h| *h > 0);
    let first = start.unwrap_or(0);
    let last = end.unwrap_or(match known_height {
        Some(h) => h - 1,
        None => first.max(0),
    });
    if last < first || last - first < limit {
        if end.is_none() && known_height.is_none() {
            return Range {
                clamped: true,
                start: Some(first),
                end: Some(last),
            };
        }
        return Range {
            clamped: false,
            start,
            end,
        };
    }
    Range {
        clamped: true,
        start: Some(last - limit + 1),
        end: Some(last),
    }
}

/// What `captureGridBounded` plans before asking tmux.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridPlan {
    /// The range sent (`start`/`end` `None` when the flag is omitted).
    pub range: Range,
    pub byte_clamped: bool,
    /// Rows per result the byte ceiling allows; 0 means nothing is captured.
    pub row_limit: i64,
}

/// The planning half of `captureGridBounded`.
pub fn plan_grid(
    width: i64,
    height: i64,
    start: Option<i64>,
    end: Option<i64>,
    line_limit: i64,
    byte_limit: i64,
) -> GridPlan {
    let requested = bounded_range(Some(height), start, end, line_limit);
    let rl = row_limit(width, line_limit, byte_limit);
    let range = if rl == 0 {
        Range {
            clamped: true,
            start: None,
            end: None,
        }
    } else {
        bounded_range(Some(height), start, end, rl)
    };
    GridPlan {
        range,
        byte_clamped: rl == 0 || range != requested,
        row_limit: rl,
    }
}

/// `tailLines`: the last `n` lines and how many were dropped.
pub fn tail_lines(lines: &[String], n: i64) -> (&[String], usize) {
    if n <= 0 || lines.len() as i64 <= n {
        return (lines, 0);
    }
    let drop = lines.len() - n as usize;
    (&lines[drop..], drop)
}

/// `tailBytes`: the longest suffix of whole code points whose UTF-8 size is at
/// most `n`, and how many bytes were dropped.
pub fn tail_bytes(text: &str, n: i64) -> (&str, usize) {
    let n = n.max(0) as usize;
    if text.len() <= n {
        return (text, 0);
    }
    let mut cut = text.len() - n;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    (&text[cut..], cut)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundedText {
    pub text: String,
    pub dropped_lines: usize,
    pub omitted_bytes: usize,
    pub returned_bytes: usize,
}

/// `boundText`: `tail_lines`, then `tail_bytes` over the lines joined with LF.
pub fn bound_text(lines: &[String], line_limit: i64, byte_limit: i64) -> BoundedText {
    let (kept, dropped_lines) = tail_lines(lines, line_limit);
    let joined = kept.join("\n");
    let (text, omitted_bytes) = tail_bytes(&joined, byte_limit);
    BoundedText {
        text: text.to_string(),
        dropped_lines,
        omitted_bytes,
        returned_bytes: text.len(),
    }
}

/// B.0 output decoding: UTF-8 with each invalid byte as the text `\xNN`, split
/// on LF, all trailing empty lines removed.
pub fn decode_lines(out: &[u8]) -> Vec<String> {
    let mut text = String::with_capacity(out.len());
    let mut rest = out;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                text.push_str(s);
                break;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                text.push_str(std::str::from_utf8(valid).expect("valid prefix"));
                let bad = e.error_len().unwrap_or(after.len());
                for b in &after[..bad] {
                    text.push_str(&format!("\\x{b:02x}"));
                }
                rest = &after[bad..];
            }
        }
    }
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// An integer argument (a JSON number with no fraction; `5.0` counts).
pub fn int_arg(args: &Value, key: &str) -> Option<i64> {
    let v = args.get(key)?;
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.3e15)
            .map(|f| f as i64)
    })
}

// ---------------------------------------------------------------------------
// Resolution and failures (B.0)
// ---------------------------------------------------------------------------

/// `reason` + blank line + `hint`: a handled failure, no structured content.
pub fn fail(reason: &str, hint: Option<&str>) -> ToolOutput {
    ToolOutput::libtmux_error(match hint {
        Some(h) => format!("{reason}\n\n{h}"),
        None => reason.to_string(),
    })
}

/// How the first placement of a pane reads in a hint: `%N (session:window command)`.
fn pane_label(p: &Pane) -> String {
    let place = p
        .placements
        .first()
        .map(|pl| format!("{}:{}", pl.session_name, pl.window_index))
        .unwrap_or_default();
    format!("{} ({place} {})", p.id, p.command)
}

/// Pane `id` as `freshness` says (capture_pane's range plan rests on the size
/// its guard proves, so the cache does; snapshot_pane reports the cursor, which
/// only a fresh read knows), if this session may see it; else the tool error
/// (an unknown pane lists up to 12 panes the session can see).
pub async fn resolve(
    session: &Session,
    id: &str,
    freshness: observe::Freshness,
) -> Result<Pane, ToolOutput> {
    let broker = &session.broker;
    match observe::find_pane(broker, id, freshness).await {
        Ok(p) if session.can_see(&p) => Ok(p),
        Ok(_) => Err(fail(
            &format!("Pane {id} is outside this session's scope."),
            Some("This MCP session sees only the tmux sessions its own pane is placed in (--scope session). Call list_panes for the panes it may read, or attach with --scope server."),
        )),
        Err(ObserveError::StaleTarget { .. }) => {
            let hint = broker.registry.cached().map(|snap| unknown_pane_hint(session, &snap)).unwrap_or_default();
            Err(fail(&format!("No pane {id} on this server."), Some(&hint)))
        }
        Err(e) => Err(fail(&format!("Could not read the pane table from tmux: {}.", e.why()), Some("Nothing was sent to the pane. Check that the tmux server is running, then retry."))),
    }
}

fn unknown_pane_hint(session: &Session, snap: &Snapshot) -> String {
    const SHOWN: usize = 12;
    let mut visible: Vec<_> = session.visible(snap).collect();
    visible.sort_by_key(|p| numeric_id(&p.id));
    if visible.is_empty() {
        return "This session can see no panes. Call list_panes to check.".to_string();
    }
    let listed: Vec<String> = visible.iter().take(SHOWN).map(|p| pane_label(p)).collect();
    let more = visible.len().saturating_sub(SHOWN);
    let mut hint = format!("Existing panes: {}", listed.join(", "));
    if more > 0 {
        hint.push_str(&format!(" ({more} more not listed)"));
    }
    hint.push_str(". Pane ids are stable for a pane's life; call list_panes for details.");
    hint
}

/// A capture failure as a tool error.
pub fn observe_failure(id: &str, e: &ObserveError) -> ToolOutput {
    match e {
        ObserveError::Unsupported { why, .. } => fail(
            &format!("Refused to capture pane {id}: {why}"),
            Some("The after-capture-pane hook would run a command on every capture. Remove it (set-hook -gu after-capture-pane, or -u in the session that sets it) if captures by tmux-mcp should be allowed."),
        ),
        ObserveError::StaleTarget { why, .. } => fail(&format!("Could not capture pane {id}: {why}."), Some("Call list_panes for the panes that exist now.")),
        ObserveError::Transport { why, .. } => fail(&format!("Could not capture pane {id}: tmux did not answer ({why})."), Some("Check that the tmux server is running, then retry.")),
        ObserveError::OutOfScope => fail(&format!("Pane {id} is outside this session's scope."), None),
    }
}

// ---------------------------------------------------------------------------
// The tool
// ---------------------------------------------------------------------------

fn run(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move { call(c.session, &c.args).await })
}

pub async fn call(session: &Session, args: &Value) -> ToolOutput {
    let id = args["paneId"].as_str().unwrap_or_default();
    let pane = match resolve(session, id, session.read_freshness()).await {
        Ok(r) => r,
        Err(e) => return e,
    };
    let start = int_arg(args, "start");
    let end = int_arg(args, "end");
    let join = args
        .get("joinWrapped")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let limit = effective_result_lines(int_arg(args, "maxLines"));

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
            Err(e) => return observe_failure(id, &e),
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
    ToolOutput {
        structured: Some(structured),
        text: rendered,
        is_error: false,
    }
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

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn effective_lines_clamp_to_the_ceiling() {
        assert_eq!(effective_result_lines(None), 200);
        assert_eq!(effective_result_lines(Some(5)), 5);
        assert_eq!(effective_result_lines(Some(0)), 1);
        assert_eq!(effective_result_lines(Some(-3)), 1);
        assert_eq!(effective_result_lines(Some(5000)), 200);
        assert_eq!(effective_result_lines(Some(9_007_199_254_740_991)), 200);
    }

    #[test]
    fn row_limit_follows_the_cell_bound() {
        assert_eq!(row_limit(0, 200, 1_000_000), 0);
        assert_eq!(row_limit(-1, 200, 1_000_000), 0);
        assert_eq!(row_limit(80, 200, 1_000_000), 200);
        // 200 columns: 6401 bytes a row, 156 rows fit a megabyte.
        assert_eq!(row_limit(200, 200, 1_000_000), 156);
        assert_eq!(row_limit(200, 100, 1_000_000), 100);
        // One row does not fit.
        assert_eq!(row_limit(31_250, 200, 1_000_000), 0);
        assert_eq!(row_limit(31_249, 200, 1_000_000), 1);
        assert_eq!(row_limit(80, 200, 0), 0);
    }

    #[test]
    fn bounded_range_keeps_the_last_rows() {
        // Default call on a short pane: unchanged, flags omitted.
        assert_eq!(
            bounded_range(Some(50), None, None, 200),
            Range {
                clamped: false,
                start: None,
                end: None
            }
        );
        // The B.1 example: h=50, L=200, start -1000 -> -150..49.
        assert_eq!(
            bounded_range(Some(50), Some(-1000), None, 200),
            Range {
                clamped: true,
                start: Some(-150),
                end: Some(49)
            }
        );
        // A tall pane's default capture is narrowed too.
        assert_eq!(
            bounded_range(Some(300), None, None, 200),
            Range {
                clamped: true,
                start: Some(100),
                end: Some(299)
            }
        );
        // Fits exactly: last - first = limit - 1.
        assert_eq!(
            bounded_range(Some(50), Some(-150), Some(49), 200),
            Range {
                clamped: false,
                start: Some(-150),
                end: Some(49)
            }
        );
        assert_eq!(
            bounded_range(Some(50), Some(-151), Some(49), 200),
            Range {
                clamped: true,
                start: Some(-150),
                end: Some(49)
            }
        );
        // Inverted ranges are left for tmux to swap.
        assert_eq!(
            bounded_range(Some(50), Some(10), Some(-5), 3),
            Range {
                clamped: false,
                start: Some(10),
                end: Some(-5)
            }
        );
        // Unknown height and end: reported as clamped with the planned bounds.
        assert_eq!(
            bounded_range(None, Some(-5), None, 200),
            Range {
                clamped: true,
                start: Some(-5),
                end: Some(0)
            }
        );
        assert_eq!(
            bounded_range(Some(0), None, None, 200),
            Range {
                clamped: true,
                start: Some(0),
                end: Some(0)
            }
        );
        // Extreme values do not overflow.
        let r = bounded_range(
            Some(50),
            Some(-9_007_199_254_740_991),
            Some(9_007_199_254_740_991),
            200,
        );
        assert_eq!(
            r,
            Range {
                clamped: true,
                start: Some(9_007_199_254_740_991 - 199),
                end: Some(9_007_199_254_740_991)
            }
        );
    }

    #[test]
    fn grid_plan_reports_byte_clamping() {
        let p = plan_grid(80, 24, None, None, 200, 1_000_000);
        assert_eq!(
            p,
            GridPlan {
                range: Range {
                    clamped: false,
                    start: None,
                    end: None
                },
                byte_clamped: false,
                row_limit: 200
            }
        );
        // 200 columns x 50 rows with start -1000: the byte ceiling allows 156 rows.
        let p = plan_grid(200, 50, Some(-1000), None, 200, 1_000_000);
        assert_eq!(
            p.range,
            Range {
                clamped: true,
                start: Some(-106),
                end: Some(49)
            }
        );
        assert!(p.byte_clamped);
        // Too wide for a single row: nothing is captured.
        let p = plan_grid(40_000, 24, None, None, 200, 1_000_000);
        assert_eq!(
            p,
            GridPlan {
                range: Range {
                    clamped: true,
                    start: None,
                    end: None
                },
                byte_clamped: true,
                row_limit: 0
            }
        );
    }

    #[test]
    fn tail_lines_and_bytes() {
        let lines = strings(&["a", "b", "c"]);
        assert_eq!(tail_lines(&lines, 2), (&lines[1..], 1));
        assert_eq!(tail_lines(&lines, 3), (&lines[..], 0));
        assert_eq!(tail_lines(&lines, 0), (&lines[..], 0));
        assert_eq!(tail_bytes("hello", 10), ("hello", 0));
        assert_eq!(tail_bytes("hello", 3), ("llo", 2));
        assert_eq!(tail_bytes("hello", 0), ("", 5));
        // Never splits a code point: "é" is two bytes, "😀" four.
        assert_eq!(tail_bytes("aé", 1), ("", 3));
        assert_eq!(tail_bytes("aé", 2), ("é", 1));
        assert_eq!(tail_bytes("x😀", 3), ("", 5));
        assert_eq!(tail_bytes("x😀", 4), ("😀", 1));
    }

    #[test]
    fn bound_text_applies_lines_then_bytes() {
        let lines = strings(&["one", "two", "three"]);
        let b = bound_text(&lines, 2, 1_000_000);
        assert_eq!(
            b,
            BoundedText {
                text: "two\nthree".into(),
                dropped_lines: 1,
                omitted_bytes: 0,
                returned_bytes: 9
            }
        );
        let b = bound_text(&lines, 10, 7);
        assert_eq!(
            b,
            BoundedText {
                text: "o\nthree".into(),
                dropped_lines: 0,
                omitted_bytes: 6,
                returned_bytes: 7
            }
        );
    }

    #[test]
    fn decoding_escapes_invalid_bytes_and_drops_trailing_blank_lines() {
        assert_eq!(decode_lines(b"a\nb\n\n\n"), strings(&["a", "b"]));
        assert_eq!(decode_lines(b"\n\na\n"), strings(&["", "", "a"]));
        assert_eq!(decode_lines(b""), Vec::<String>::new());
        assert_eq!(decode_lines(b"\n\n"), Vec::<String>::new());
        assert_eq!(decode_lines(b"x\xffy\n"), strings(&["x\\xffy"]));
        assert_eq!(decode_lines("é\n".as_bytes()), strings(&["é"]));
        // A truncated sequence: each byte escaped.
        assert_eq!(decode_lines(b"a\xe2\x82"), strings(&["a\\xe2\\x82"]));
        assert_eq!(decode_lines(b"\xc3\x28"), strings(&["\\xc3("]));
    }

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
        assert_eq!(input_schema()["required"], json!(["paneId"]));
        assert_eq!(output_schema()["additionalProperties"], json!(false));
        let schema = input_schema();
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["end", "joinWrapped", "maxLines", "paneId", "start"],
            "contract key order is kept"
        );
    }
}
