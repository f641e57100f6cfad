//! The lines a libtmux-family read returns (docs/spec.md B.0 "row bounding"):
//! the result ceilings, how many rows fit before tmux is asked (a pane's rows
//! are bounded by lines and by bytes, so a huge pane never reaches the
//! broker), the tails kept after, and the decoding of `capture-pane -p` bytes.
//! Pure functions: every read tool of the family uses them, none owns them.
//!
//! The ceilings are [`MAX_RESULT_BYTES`] and [`MAX_RESULT_LINES`].
//! [`row_limit`], [`bounded_range`] and [`plan_grid`] say how many rows fit.
//! [`tail_lines`], [`tail_bytes`] and [`bound_text`] keep the tail.
//! [`decode_lines`] turns `capture-pane -p` bytes into lines.

/// Result ceiling in bytes for one tool result (docs/spec.md, decision 9).
pub const MAX_RESULT_BYTES: i64 = 1_000_000;
/// The configured line ceiling (`maxResultLines`, the reference default).
pub const MAX_RESULT_LINES: i64 = 200;
/// Bounds of any line request (`maxResultLines` is clamped to 1..=10,000).
pub const MAX_LINES_BOUND: i64 = 10_000;

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

/// UTF-8 with each invalid byte as the text `\xNN` (B.0's decoding of tmux's
/// bytes; `styles` decodes the text between escape sequences the same way).
pub fn decode_lossy(out: &[u8]) -> String {
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
    text
}

/// B.0 output decoding: [`decode_lossy`], split on LF, all trailing empty
/// lines removed.
pub fn decode_lines(out: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = decode_lossy(out).split('\n').map(str::to_string).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
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
        let r = |clamped, start, end| Range {
            clamped,
            start,
            end,
        };
        // Default call on a short pane: unchanged, flags omitted.
        assert_eq!(
            bounded_range(Some(50), None, None, 200),
            r(false, None, None)
        );
        // The B.1 example: h=50, L=200, start -1000 -> -150..49.
        assert_eq!(
            bounded_range(Some(50), Some(-1000), None, 200),
            r(true, Some(-150), Some(49))
        );
        // A tall pane's default capture is narrowed too.
        assert_eq!(
            bounded_range(Some(300), None, None, 200),
            r(true, Some(100), Some(299))
        );
        // Fits exactly: last - first = limit - 1.
        assert_eq!(
            bounded_range(Some(50), Some(-150), Some(49), 200),
            r(false, Some(-150), Some(49))
        );
        assert_eq!(
            bounded_range(Some(50), Some(-151), Some(49), 200),
            r(true, Some(-150), Some(49))
        );
        // Inverted ranges are left for tmux to swap.
        assert_eq!(
            bounded_range(Some(50), Some(10), Some(-5), 3),
            r(false, Some(10), Some(-5))
        );
        // Unknown height and end: reported as clamped with the planned bounds.
        assert_eq!(
            bounded_range(None, Some(-5), None, 200),
            r(true, Some(-5), Some(0))
        );
        assert_eq!(
            bounded_range(Some(0), None, None, 200),
            r(true, Some(0), Some(0))
        );
        // Extreme values do not overflow.
        let extreme = bounded_range(
            Some(50),
            Some(-9_007_199_254_740_991),
            Some(9_007_199_254_740_991),
            200,
        );
        assert_eq!(
            extreme,
            r(
                true,
                Some(9_007_199_254_740_991 - 199),
                Some(9_007_199_254_740_991)
            )
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
}
