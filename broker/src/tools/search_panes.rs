//! `search_panes` (libtmux family, docs/spec.md B.4 with C.3's case and paging):
//! find a literal or regular expression in the panes this agent may see.
//!
//! Each pane is read with the guarded, hook-refusing capture
//! (`observe::capture_range`): a pane whose capture would run an
//! `after-capture-pane` hook is skipped and reported, never captured. Panes
//! are captured 32 per batch in one tmux round trip (`capture_batch`, one
//! capture place); a pane the batch cannot take is captured alone, 8 at a time,
//! each holding a capture place (`admission`). Matching uses
//! the `regex` crate (linear time; a literal is an escaped pattern), so no
//! pattern can make the search run away; its compiled size is bounded too.
//! A call scans at most 256 KiB / 20,000 lines for 5 s (B.4's budget).
//!
//! The engine (`search_panes`, driven by a [`Plan`]) is shared with the Python
//! spelling (`search_panes_python`), which reads a `-S`/`-E` range with `-J`
//! and keeps each pane's last matches; the batch takes any range and `-J`.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::records::graph;
use crate::toolkit::records::search::{
    build_regex, page, problem_lines, search_panes, PaneProblem, Plan, MAX_PANES, PAGE_BYTES,
};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tmux_mcp_engine::lines::effective_result_lines;
use tmux_mcp_engine::registry::{numeric_id, Pane};

pub const SPEC: ToolSpec = ToolSpec::new(
    "search_panes",
    Annotations::read_only("Search panes"),
    input_of::<Args>,
    schema_of::<Found>,
    |c| c.run(search),
)
.description("Find text or a regex in pane screens and scrollback, paged.")
.details("Search the panes this agent may see (optionally one session) for a literal string or a regular expression (regex: true; matchCase: false for case-insensitive), over the visible screen plus scrollbackLines of history. Returns matching lines as {paneId, at (session:window.pane, one per session), lineNumber (1-based in the captured range), text}, the server's generation once; at most maxMatchesPerPane per pane (panesTruncated lists the panes with more); paged with offset/limit (nextOffset while more remain). Panes whose capture would run an after-capture-pane hook are skipped and listed (panesSkipped), failed captures too (panesFailed); flags and lists are present only when they say something. Read-only.")
.sample(|_| json!({"pattern": "x", "scrollbackLines": 5}))
.across_servers();

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    /// Literal unless regex is true.
    #[schemars(length(min = 1, max = 65536))]
    pattern: String,
    // Rust regex syntax (linear time).
    #[serde(default)]
    regex: bool,
    #[serde(default = "yes")]
    match_case: bool,
    session: Option<crate::toolkit::target::ids::SessionFilter>,
    /// History lines above the screen to search too.
    ///
    /// Clamped to the result-line ceiling.
    #[serde(default)]
    #[schemars(range(min = 0, max = 100_000))]
    scrollback_lines: i64,
    #[serde(default = "five")]
    #[schemars(range(min = 1, max = 10_000))]
    max_matches_per_pane: usize,
    /// Matches to skip (see nextOffset).
    #[serde(default)]
    #[schemars(range(max = 2_147_483_647))]
    offset: usize,
    #[serde(default = "hundred")]
    #[schemars(range(min = 1, max = 1000))]
    limit: usize,
}

fn yes() -> bool {
    true
}
fn five() -> usize {
    5
}
fn hundred() -> usize {
    100
}

/// What was found. What is at its default is left out (issue 49: Claude Code
/// and Codex give their model this JSON, not the text): a flag absent is
/// false, a list absent is empty, a count absent is 0.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Found {
    /// The server's generation (a pane reference is `{kind: "pane", id:
    /// paneId, generation}`).
    generation: String,
    matches: Vec<Match>,
    /// All matches found (before paging).
    total_matches: usize,
    /// Absent: 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    offset: usize,
    /// The offset of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "usize")]
    next_offset: Option<usize>,
    /// The page holds fewer than `limit` matches to stay within its byte bound.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    page_byte_clamped: bool,
    /// Panes captured and scanned (the last one perhaps only in part, when the
    /// matching budget ran out in it).
    panes_searched: usize,
    panes_matched: usize,
    /// Panes with more matching lines than maxMatchesPerPane (the rest dropped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(regex(pattern = crate::toolkit::target::ids::PANE_ID)))]
    panes_truncated: Vec<String>,
    /// Panes not captured because an after-capture-pane hook is set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    panes_skipped: Vec<PaneProblem>,
    /// Panes whose capture failed (gone, tmux unreachable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    panes_failed: Vec<PaneProblem>,
    /// More than 200 candidate panes: only the first 200 were searched.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pane_limit_clamped: bool,
    /// The history lines above the screen searched too (absent: none).
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    effective_scrollback_lines: i64,
    /// scrollbackLines was more than the line ceiling allows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    scrollback_clamped: bool,
    /// The call's matching budget (256 KiB, 20,000 lines, 5 s) ran out: later
    /// panes or lines were not searched.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    matching_clamped: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_zero_i64(n: &i64) -> bool {
    *n == 0
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Match {
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    pane_id: String,
    /// `session:window.pane`, one per session the pane is placed in.
    at: Vec<String>,
    /// 1-based, within the pane's captured range (1 = its top line).
    line_number: usize,
    text: String,
    /// For the text: the window's name and `session:index` places.
    #[serde(skip)]
    window_name: String,
    #[serde(skip)]
    places: Vec<String>,
}

fn matcher(args: &Args) -> Result<regex::Regex, ToolOutput> {
    build_regex(&args.pattern, args.regex, !args.match_case, false).map_err(|e| {
        ToolOutput::libtmux_error(format!(
            "Argument pattern: not a valid regular expression: {e}. Nothing was sent to tmux."
        ))
    })
}

async fn search(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let re = matcher(&args)?;
    let (snap, g) = graph::fresh(session).await?;
    let only = graph::session_filter(&g, args.session.as_deref())?;
    // Candidates as this agent sees them (scope-cut placements), by (session, window index, pane index).
    let mut candidates: Vec<Pane> = session
        .visible(&snap)
        .filter(|p| only.as_deref().is_none_or(|s| p.in_session(s)))
        .map(|p| p.into_owned())
        .collect();
    let key = |p: &Pane| {
        p.placements.first().map_or((u64::MAX, i64::MAX), |pl| {
            (numeric_id(&pl.session_id), pl.window_index)
        })
    };
    candidates.sort_by_key(|p| (key(p), p.index, numeric_id(&p.id)));
    let pane_limit_clamped = candidates.len() > MAX_PANES;
    candidates.truncate(MAX_PANES);

    let ceiling = effective_result_lines(None);
    let scrollback = args.scrollback_lines.min(ceiling);
    let plan = Plan {
        re: &re,
        start: (scrollback > 0).then_some(-scrollback),
        end: None,
        join: false,
        max_rows: None,
        per_pane: args.max_matches_per_pane,
        keep_last: false,
    };
    let searched = search_panes(session, &snap, &candidates, &plan).await;

    let mut all: Vec<Match> = Vec::new();
    let mut panes_truncated = Vec::new();
    for hit in &searched.hits {
        let pane = &hit.pane;
        if hit.more {
            panes_truncated.push(pane.id.clone());
        }
        for (n, text) in &hit.lines {
            all.push(Match {
                pane_id: pane.id.clone(),
                at: pane
                    .placements
                    .iter()
                    .map(|pl| format!("{}:{}.{}", pl.session_name, pl.window_index, pane.index))
                    .collect(),
                line_number: *n,
                text: text.clone(),
                window_name: pane.window_name.clone(),
                places: pane
                    .placements
                    .iter()
                    .map(|pl| format!("{}:{}", pl.session_name, pl.window_index))
                    .collect(),
            });
        }
    }
    let total_matches = all.len();
    let (matches, page_byte_clamped) =
        page(all, args.offset, args.limit, PAGE_BYTES, |m| m.text.len());
    let next_offset =
        (args.offset + matches.len() < total_matches).then_some(args.offset + matches.len());
    let out = Found {
        generation: session.generation().to_string(),
        matches,
        total_matches,
        offset: args.offset,
        next_offset,
        page_byte_clamped,
        panes_searched: searched.panes_searched,
        panes_matched: searched.hits.len(),
        panes_truncated,
        panes_skipped: searched.panes_skipped,
        panes_failed: searched.panes_failed,
        pane_limit_clamped,
        effective_scrollback_lines: scrollback,
        scrollback_clamped: scrollback != args.scrollback_lines,
        matching_clamped: searched.matching_clamped,
    };
    let text = summary(&out);
    Ok(ToolOutput::typed(&out, text))
}

/// `%id sess:idx,… window:line  text` per match, then bracketed notices.
fn summary(f: &Found) -> String {
    let mut lines: Vec<String> = f
        .matches
        .iter()
        .map(|m| {
            format!(
                "{} {} {}:{}  {}",
                m.pane_id,
                m.places.join(","),
                m.window_name,
                m.line_number,
                m.text
            )
        })
        .collect();
    lines.insert(
        0,
        format!(
            "{} match(es) in {} of {} searched pane(s); showing {} from offset {}",
            f.total_matches,
            f.panes_matched,
            f.panes_searched,
            f.matches.len(),
            f.offset
        ),
    );
    if let Some(n) = f.next_offset {
        lines.push(format!("[more: call again with offset {n}]"));
    }
    lines.extend(problem_lines(&f.panes_skipped, &f.panes_failed));
    for (flag, note) in [
        (
            !f.panes_truncated.is_empty(),
            "some panes had more matches than maxMatchesPerPane",
        ),
        (
            f.pane_limit_clamped,
            "only the first 200 panes were searched",
        ),
        (f.scrollback_clamped, "scrollbackLines was clamped"),
        (f.matching_clamped, "the matching budget ran out"),
        (
            f.page_byte_clamped,
            "this page was cut short to stay within its byte bound",
        ),
    ] {
        if flag {
            lines.push(format!("[{note}]"));
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(pattern: &str, regex: bool, match_case: bool) -> Args {
        serde_json::from_value(
            json!({ "pattern": pattern, "regex": regex, "matchCase": match_case }),
        )
        .unwrap()
    }

    #[test]
    fn pages_stop_at_their_byte_bound() {
        let m = |n: usize| Match {
            pane_id: "%1".into(),
            at: vec!["s:0.0".into()],
            line_number: n,
            text: "x".repeat(100),
            window_name: "w".into(),
            places: Vec::new(),
        };
        let all = || (1..=10).map(m).collect::<Vec<_>>();
        let one = serde_json::to_string(&m(1)).unwrap().len() + 100 + 64;
        let (p, cut) = page(all(), 2, 5, 3 * one + 10, |m| m.text.len());
        assert_eq!(
            (p.iter().map(|m| m.line_number).collect::<Vec<_>>(), cut),
            (vec![3, 4, 5], true)
        );
        let (p, cut) = page(all(), 0, 4, 1_000_000, |m| m.text.len());
        assert_eq!((p.len(), cut), (4, false));
        let (p, cut) = page(all(), 9, 5, 1, |m| m.text.len());
        assert_eq!(
            (p.len(), cut),
            (1, false),
            "one match always fits; the last page is not cut"
        );
    }
    #[test]
    fn literal_regex_and_case() {
        assert!(matcher(&args("a.c", false, true))
            .unwrap()
            .is_match("xa.cx"));
        assert!(
            !matcher(&args("a.c", false, true)).unwrap().is_match("abc"),
            "a literal dot is not a wildcard"
        );
        assert!(matcher(&args("a.c", true, true)).unwrap().is_match("abc"));
        assert!(!matcher(&args("ABC", false, true)).unwrap().is_match("abc"));
        assert!(matcher(&args("ABC", false, false))
            .unwrap()
            .is_match("xabcx"));
        let e = matcher(&args("(", true, true)).unwrap_err();
        assert!(
            e.is_error
                && e.text
                    .starts_with("Argument pattern: not a valid regular expression"),
            "{}",
            e.text
        );
        let d: Args = serde_json::from_value(json!({ "pattern": "x" })).unwrap();
        assert_eq!(
            (
                d.regex,
                d.match_case,
                d.max_matches_per_pane,
                d.offset,
                d.limit,
                d.scrollback_lines
            ),
            (false, true, 5, 0, 100, 0)
        );
    }
}
