//! `snapshot_pane` (libtmux family, docs/spec.md B.2): one pane's metadata view
//! and its bounded visible screen in one result. The metadata comes from the
//! hook-free table read and the content from a separate guarded capture: they
//! are not an atomic snapshot.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::pane_read;
use crate::toolkit::schemas::contracts;
use serde_json::{json, Value};
use std::cmp::Ordering;
use tmux_mcp_engine::lines::{
    bound_text, decode_lines, effective_result_lines, tail_bytes, BoundedText, MAX_RESULT_BYTES,
};
use tmux_mcp_engine::observe;
use tmux_mcp_engine::registry::{numeric_id, Pane};

pub const SPEC: ToolSpec = ToolSpec::new(
    "snapshot_pane",
    Annotations::read_only("Snapshot a pane"),
    contracts::snapshot_pane_input,
    contracts::snapshot_pane_output,
    |c| c.run(call),
)
.description("Read pane output; accepts no client-supplied executable input. Returned content may be sensitive or untrusted. Return bounded terminal content and pane metadata in one MCP response. The metadata and capture come from separate tmux requests and are not an atomic snapshot.")
.sample(|s| json!({"paneId": s.pane}));

/// Room kept for everything around the pane view in one result.
const RESERVE: i64 = 16_384;
/// Budget of the four projected metadata strings (737,712 with the 1 MB ceiling).
const STRING_BUDGET: i64 = (MAX_RESULT_BYTES - RESERVE) * 3 / 4;

// ---------------------------------------------------------------------------
// Pure pieces
// ---------------------------------------------------------------------------

/// `boundedStrings`: each pending string gets an equal share of what is left;
/// those that fit are kept whole and paid for; when none fits, each remaining
/// one is cut to the tail of its share. Returns the strings and omitted bytes.
pub fn bounded_strings(values: &[&str], budget: i64) -> (Vec<String>, usize) {
    let mut out: Vec<Option<String>> = vec![None; values.len()];
    let mut pending: Vec<usize> = (0..values.len()).collect();
    let mut budget = budget.max(0);
    let mut omitted = 0;
    while !pending.is_empty() {
        let share = budget / pending.len() as i64;
        let (fits, rest): (Vec<usize>, Vec<usize>) = pending
            .iter()
            .partition(|&&i| values[i].len() as i64 <= share);
        if fits.is_empty() {
            for i in rest {
                let (kept, dropped) = tail_bytes(values[i], share);
                out[i] = Some(kept.to_string());
                omitted += dropped;
            }
            break;
        }
        for i in fits {
            out[i] = Some(values[i].to_string());
            budget -= values[i].len() as i64;
        }
        pending = rest;
    }
    (
        out.into_iter().map(Option::unwrap_or_default).collect(),
        omitted,
    )
}

/// Compares ids like `$10` and `$9` by their number, then as text.
pub fn numeric_aware(a: &str, b: &str) -> Ordering {
    numeric_id(a).cmp(&numeric_id(b)).then_with(|| a.cmp(b))
}

/// The largest `k` in `0..=n` with `fits(k)`, assuming `fits` is monotone
/// (true up to some point); 0 when nothing fits.
pub fn largest_prefix(n: usize, fits: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// Whether a person is looking at `pane`, on a tmux without the client loop
/// (< 3.5): its window is the current window of a session with at least one
/// attached client, and the window is not zoomed or the pane is the active
/// (zoomed) one.
///
/// This is derived hook-free from the table (`window_active` per placement,
/// `session_attached`, `window_zoomed_flag`) rather than from `list-clients`,
/// whose after-hook the broker must not fire. A control-mode client attached to
/// a session cannot be told apart from a terminal client this way, so such a
/// session counts as attended (the reference skips control-mode clients). From
/// tmux 3.5 the clients themselves are asked (`clients::watchers_format`).
pub fn is_attended(pane: &Pane) -> bool {
    tmux_mcp_engine::clients::shown(pane, |pl| pl.session_attached > 0)
}

/// The `pane` object (B.2.1) and its one-line rendering.
pub fn pane_view(pane: &Pane, is_caller: bool, attended: bool) -> (Value, String) {
    let (strings, omitted_bytes) = bounded_strings(
        &[&pane.command, &pane.cwd, &pane.title, &pane.window_name],
        STRING_BUDGET,
    );
    let mut placements: Vec<(i64, String, String)> = pane
        .placements
        .iter()
        .map(|pl| {
            (
                pl.window_index,
                pl.session_id.clone(),
                pl.session_name.clone(),
            )
        })
        .collect();
    placements.sort_by(|a, b| numeric_aware(&a.1, &b.1).then(a.0.cmp(&b.0)));
    placements.dedup();
    let build = |k: usize| -> (Value, String) {
        let kept = &placements[..k];
        let omitted = placements.len() - k;
        let view = json!({
            "active": pane.active,
            "command": strings[0],
            "cwd": strings[1],
            "dead": pane.dead,
            "height": pane.height,
            "id": pane.id,
            "index": pane.index,
            "isAttended": attended,
            "isCallerPane": is_caller,
            "metadataComplete": omitted_bytes == 0,
            "omittedMetadataBytes": omitted_bytes,
            "omittedPlacements": omitted,
            "placements": kept.iter().map(|(index, sid, name)| json!({ "index": index, "sessionId": sid, "sessionName": name })).collect::<Vec<_>>(),
            "placementsComplete": omitted == 0,
            "title": strings[2],
            "width": pane.width,
            "windowId": pane.window_id,
            "windowName": strings[3],
        });
        let places: Vec<String> = kept
            .iter()
            .map(|(index, _, name)| format!("{name}:{index}"))
            .collect();
        let mut line = format!(
            "{} in {}",
            pane.id,
            if places.is_empty() {
                "-".to_string()
            } else {
                places.join(",")
            }
        );
        if omitted > 0 {
            line.push_str(&format!(" (+{omitted} more placements)"));
        }
        line.push_str(&format!(
            " {} {:?} {}x{} {} {}",
            pane.window_id, strings[3], pane.width, pane.height, strings[0], strings[1]
        ));
        for (flag, label) in [
            (pane.active, "active"),
            (pane.dead, "dead"),
            (is_caller, "caller"),
            (attended, "attended"),
        ] {
            if flag {
                line.push_str(&format!(" [{label}]"));
            }
        }
        (view, line)
    };
    let limit = (MAX_RESULT_BYTES - RESERVE) as usize;
    let k = largest_prefix(placements.len(), |k| {
        let (v, line) = build(k);
        v.to_string().len() <= limit && line.len() <= limit
    });
    build(k)
}

/// The bounded text with both notices (`renderBoundedText`).
fn render_bounded(b: &BoundedText, recovery: &str) -> String {
    let mut parts = Vec::new();
    if b.dropped_lines > 0 {
        parts.push(format!(
            "[{} earlier lines omitted; {recovery}]",
            b.dropped_lines
        ));
    }
    if b.omitted_bytes > 0 {
        parts.push(format!(
            "[{} earlier bytes omitted; {recovery}]",
            b.omitted_bytes
        ));
    }
    if !b.text.is_empty() {
        parts.push(b.text.clone());
    }
    parts.join("\n")
}

// ---------------------------------------------------------------------------
// The tool
// ---------------------------------------------------------------------------

/// The arguments. The published schema is the seed contract, byte for byte;
/// `Args` derives the same schema (a test checks), and unknown fields are
/// ignored as the contract allows them.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    /// Stable pane id, e.g. %1.
    #[schemars(regex(pattern = r"^%\d+$"))]
    pane_id: String,
    /// Keep at most this many lines, from the end. Defaults to the server
    /// limit.
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 9_007_199_254_740_991_i64))]
    max_lines: Option<i64>,
}

pub async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let id = args.pane_id.as_str();
    let pane = pane_read::pane(session, id, observe::Freshness::Fresh).await?;
    let limit = effective_result_lines(args.max_lines);
    // What the agent sees of the pane's placements is cut to its scope.
    let Some(seen) = session.scoped(&pane).map(std::borrow::Cow::into_owned) else {
        return Err(pane_read::observe_failure(
            id,
            &tmux_mcp_engine::observe::ObserveError::OutOfScope,
        ));
    };
    let (cursor_x, cursor_y, in_mode, scroll) = (
        pane.cursor_x,
        pane.cursor_y,
        pane.in_mode,
        pane.scroll_position,
    );
    // The whole visible screen, wrapped lines joined; no range bounding. From
    // tmux 3.5 the clients that show the pane are read in the same queue.
    let exact = tmux_mcp_engine::clients::readable(&session.broker.tmux_version()).is_ok();
    let (attended, lines) = if exact {
        let watchers = tmux_mcp_engine::clients::watchers_format(&pane.id, &pane.window_id);
        match observe::capture_range_after_format(
            &session.broker,
            pane,
            None,
            None,
            true,
            false,
            &watchers,
        )
        .await
        {
            // Only clients of sessions this agent may see count.
            Ok((_, ids, out)) => (
                ids.split_whitespace()
                    .any(|s| s.starts_with('$') && session.sees_session(s)),
                decode_lines(&out),
            ),
            Err(e) => return Err(pane_read::observe_failure(id, &e)),
        }
    } else {
        let attended = is_attended(&seen);
        let (_, out) = observe::capture_range(&session.broker, pane, None, None, true)
            .await
            .map_err(|e| pane_read::observe_failure(id, &e))?;
        (attended, decode_lines(&out))
    };
    let (view, line) = pane_view(&seen, session.is_caller(&seen.id), attended);
    let bounded = bound_text(&lines, limit, MAX_RESULT_BYTES);
    let text = format!(
        "{line} cursor {cursor_x},{cursor_y}{}\n{}",
        if in_mode != 0 { " [in mode]" } else { "" },
        render_bounded(&bounded, "use capture_pane with a narrower range")
    );
    let structured = json!({
        "content": bounded.text,
        "cursorX": cursor_x,
        "cursorY": cursor_y,
        "droppedLines": bounded.dropped_lines,
        "inMode": in_mode,
        "pane": view,
        "scrollPosition": scroll,
    });
    Ok(ToolOutput {
        structured: Some(structured),
        text,
        is_error: false,
        refusal: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_derive_the_contract() {
        let mut derived = crate::toolkit::schemas::derived::input_of::<Args>();
        derived["$schema"] = serde_json::json!("http://json-schema.org/draft-07/schema#");
        assert_eq!(derived, contracts::snapshot_pane_input());
    }

    #[test]
    fn string_budget_matches_the_spec() {
        assert_eq!(STRING_BUDGET, 737_712);
    }

    #[test]
    fn bounded_strings_share_the_budget() {
        // Everything fits.
        assert_eq!(
            bounded_strings(&["ab", "cde", "", "f"], 100),
            (vec!["ab".into(), "cde".into(), "".into(), "f".into()], 0)
        );
        // Short ones are paid first; the long one gets what is left.
        let long = "x".repeat(50);
        let (s, omitted) = bounded_strings(&[&long, "abc", "de", ""], 20);
        assert_eq!(
            s,
            vec![
                "x".repeat(15),
                "abc".to_string(),
                "de".to_string(),
                String::new()
            ]
        );
        assert_eq!(omitted, 35);
        // None fits: each cut to the tail of an equal share.
        let (s, omitted) = bounded_strings(&["abcdefgh", "12345678"], 8);
        assert_eq!(s, vec!["efgh".to_string(), "5678".to_string()]);
        assert_eq!(omitted, 8);
        // Tails never split a code point.
        let (s, omitted) = bounded_strings(&["ééé"], 3);
        assert_eq!((s, omitted), (vec!["é".to_string()], 4));
    }

    #[test]
    fn session_ids_sort_by_number() {
        let mut ids = vec!["$10", "$9", "$1", "$100"];
        ids.sort_by(|a, b| numeric_aware(a, b));
        assert_eq!(ids, ["$1", "$9", "$10", "$100"]);
    }

    fn pane(placements: &[(&str, &str, i64, bool, u64)]) -> Pane {
        use tmux_mcp_engine::registry::Placement;
        Pane {
            index: 1,
            window_name: "win".into(),
            window_panes: 2,
            active: false,
            width: 40,
            command: "zsh".into(),
            cwd: "/tmp".into(),
            title: "t".into(),
            tty: "/dev/pts/1".into(),
            placements: placements
                .iter()
                .map(|(sid, name, index, active, attached)| Placement {
                    session_id: sid.to_string(),
                    session_name: name.to_string(),
                    window_index: *index,
                    window_active: *active,
                    session_created: 0,
                    session_attached: *attached,
                    session_windows: 1,
                })
                .collect(),
            ..Pane::sample("%3", "@2")
        }
    }

    #[test]
    fn attended_needs_an_attached_session_showing_the_window() {
        assert!(!is_attended(&pane(&[("$1", "a", 0, true, 0)])), "no client");
        assert!(
            !is_attended(&pane(&[("$1", "a", 0, false, 1)])),
            "another window is current"
        );
        assert!(is_attended(&pane(&[
            ("$1", "a", 0, false, 1),
            ("$2", "b", 3, true, 2)
        ])));
        let mut zoomed = pane(&[("$1", "a", 0, true, 1)]);
        zoomed.window_zoomed = true;
        assert!(!is_attended(&zoomed), "hidden behind the zoomed pane");
        zoomed.active = true;
        assert!(is_attended(&zoomed));
    }

    #[test]
    fn pane_view_sorts_placements_and_bounds_strings() {
        let mut p = pane(&[
            ("$10", "ten", 1, false, 0),
            ("$2", "two", 5, false, 0),
            ("$2", "two", 4, false, 0),
        ]);
        let (v, line) = pane_view(&p, true, false);
        assert_eq!(
            v["placements"],
            json!([{"index": 4, "sessionId": "$2", "sessionName": "two"}, {"index": 5, "sessionId": "$2", "sessionName": "two"}, {"index": 1, "sessionId": "$10", "sessionName": "ten"}])
        );
        assert_eq!(
            (
                v["isCallerPane"].clone(),
                v["metadataComplete"].clone(),
                v["placementsComplete"].clone()
            ),
            (json!(true), json!(true), json!(true))
        );
        assert_eq!(
            line,
            "%3 in two:4,two:5,ten:1 @2 \"win\" 40x24 zsh /tmp [caller]"
        );
        // A huge cwd is cut to the tail of what the budget leaves it.
        p.cwd = "/".repeat(800_000);
        let (v, _) = pane_view(&p, false, false);
        let kept = v["cwd"].as_str().unwrap().len();
        assert_eq!(kept as i64, STRING_BUDGET - 3 - 1 - 3);
        assert_eq!(v["omittedMetadataBytes"], json!(800_000 - kept));
        assert_eq!(v["metadataComplete"], json!(false));
    }

    #[test]
    fn largest_prefix_finds_the_boundary() {
        assert_eq!(largest_prefix(10, |k| k <= 7), 7);
        assert_eq!(largest_prefix(10, |_| true), 10);
        assert_eq!(largest_prefix(10, |k| k == 0), 0);
        assert_eq!(largest_prefix(0, |_| true), 0);
    }
}
