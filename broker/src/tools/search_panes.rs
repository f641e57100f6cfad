//! `search_panes` (libtmux family, SPEC-TOOLS B.4 with C.3's case and paging):
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

use super::capture_pane::{decode_lines, effective_result_lines};
use super::list_sessions;
use super::refs::PaneRef;
use super::typed::schema_of;
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::capture_batch::{self, Batched};
use crate::observe::{self, ObserveError};
use crate::registry::{numeric_id, Pane};
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const SPEC: ToolSpec = ToolSpec {
    name: "search_panes",
    family: Family::Libtmux,
    description: "Search the panes this agent may see (optionally one session) for a literal string or a regular expression (regex: true; matchCase: false for case-insensitive), over the visible screen plus scrollbackLines of history. Returns matching lines with pane reference, 1-based line number in the captured range, window and placements; at most maxMatchesPerPane per pane; paged with offset/limit. Panes whose capture would run an after-capture-pane hook are skipped and listed. Read-only.",
    annotations: Annotations::read_only("Search panes", true),
    seed_annotations: None,
    opt_in: false,
    input_schema,
    output_schema: schema_of::<Found>,
    run,
};

/// Panes searched at most per call (B.4).
const MAX_PANES: usize = 200;
/// Captures in flight at once (B.4).
const CONCURRENCY: usize = 8;

/// Panes captured per batch (one tmux round trip per message's worth of them).
const BATCH: usize = 32;
/// The matching budget of one call (B.4): UTF-8 bytes (each line costs its size + 1) and lines.
const MATCH_BYTES: usize = 256 * 1024;
const MATCH_LINES: usize = 20_000;
/// Bytes one page's matches may take, as JSON plus their text line: a result
/// carries both and stays under the family's 1,000,000-byte ceiling even when
/// a window linked into many sessions makes every match's placements long.
const PAGE_BYTES: usize = 900_000;
/// Compiled-regex size bound.
const REGEX_SIZE: usize = 1 << 20;

fn input_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["pattern"],
        "properties": {
            "pattern": { "type": "string", "minLength": 1, "maxLength": 65536, "description": "Text to find (literal unless regex is true)." },
            "regex": { "type": "boolean", "default": false, "description": "Treat pattern as a regular expression (Rust regex syntax, linear time)." },
            "matchCase": { "type": "boolean", "default": true, "description": "false: case-insensitive." },
            "session": { "type": "string", "minLength": 1, "maxLength": 256, "description": "Only panes of this session: its id ($1) or name." },
            "scrollbackLines": { "type": "integer", "minimum": 0, "maximum": 100000, "default": 0, "description": "History lines above the visible screen to search too (clamped to the result-line ceiling)." },
            "maxMatchesPerPane": { "type": "integer", "minimum": 1, "maximum": 10000, "default": 5 },
            "offset": { "type": "integer", "minimum": 0, "maximum": 2147483647, "default": 0, "description": "Matches to skip (paging; see nextOffset)." },
            "limit": { "type": "integer", "minimum": 1, "maximum": 1000, "default": 100, "description": "Matches per page." }
        }
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Args {
    pattern: String,
    #[serde(default)]
    regex: bool,
    #[serde(default = "yes")]
    match_case: bool,
    session: Option<String>,
    #[serde(default)]
    scrollback_lines: i64,
    #[serde(default = "five")]
    max_matches_per_pane: usize,
    #[serde(default)]
    offset: usize,
    #[serde(default = "hundred")]
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

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Found {
    matches: Vec<Match>,
    /// All matches found (before paging).
    total_matches: usize,
    offset: usize,
    limit: usize,
    /// The offset of the next page, when there is one.
    next_offset: Option<usize>,
    /// The page holds fewer than `limit` matches to stay within its byte bound.
    page_byte_clamped: bool,
    /// Panes captured and scanned (the last one perhaps only in part, when the
    /// matching budget ran out in it).
    panes_searched: usize,
    panes_matched: usize,
    /// Panes with more matching lines than maxMatchesPerPane (the rest dropped).
    #[schemars(inner(regex(pattern = r"^%[0-9]+$")))]
    panes_truncated: Vec<String>,
    /// Panes not captured because an after-capture-pane hook is set.
    panes_skipped: Vec<PaneProblem>,
    /// Panes whose capture failed (gone, tmux unreachable).
    panes_failed: Vec<PaneProblem>,
    /// More than 200 candidate panes: only the first 200 were searched.
    pane_limit_clamped: bool,
    effective_scrollback_lines: i64,
    scrollback_clamped: bool,
    /// The call's matching budget (256 KiB, 20,000 lines) ran out: later panes
    /// or lines were not searched.
    matching_clamped: bool,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Match {
    #[schemars(regex(pattern = r"^%[0-9]+$"))]
    pane_id: String,
    #[serde(rename = "ref")]
    reference: PaneRef,
    /// 1-based, within the pane's captured range (1 = its top line).
    line_number: usize,
    text: String,
    #[schemars(regex(pattern = r"^@[0-9]+$"))]
    window_id: String,
    window_name: String,
    placements: Vec<Placement>,
}

#[derive(Serialize, JsonSchema, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Placement {
    #[schemars(regex(pattern = r"^\$[0-9]+$"))]
    session_id: String,
    session_name: String,
    index: i64,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaneProblem {
    #[schemars(regex(pattern = r"^%[0-9]+$"))]
    pane_id: String,
    reason: String,
}

fn matcher(args: &Args) -> Result<regex::Regex, ToolOutput> {
    build_regex(&args.pattern, args.regex, !args.match_case, false).map_err(|e| ToolOutput::libtmux_error(format!("Argument pattern: not a valid regular expression: {e}. Nothing was sent to tmux.")))
}

/// A pattern as the family matches it (also wait_for_text's): literal unless
/// `regex`, linear-time, its program bounded by [`REGEX_SIZE`]; `multi_line`
/// makes `^`/`$` match at line ends of a multi-line text.
pub(super) fn build_regex(pattern: &str, regex: bool, case_insensitive: bool, multi_line: bool) -> Result<regex::Regex, regex::Error> {
    let source = if regex { pattern.to_string() } else { regex::escape(pattern) };
    regex::RegexBuilder::new(&source).case_insensitive(case_insensitive).multi_line(multi_line).size_limit(REGEX_SIZE).build()
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move {
        let args = match c.parse::<Args>() {
            Ok(a) => a,
            Err(e) => return e,
        };
        match search(c.session, args).await {
            Ok(o) | Err(o) => o,
        }
    })
}

async fn search(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let re = matcher(&args)?;
    let (snap, g) = list_sessions::graph(session).await?;
    let only = args.session.as_deref().map(|s| list_sessions::resolve_session(&g, "session", s)).transpose()?;
    // Candidates as this agent sees them (scope-cut placements), by (session, window index, pane index).
    let mut candidates: Vec<Pane> = session.visible(&snap).filter(|p| only.as_deref().is_none_or(|s| p.in_session(s))).map(|p| p.into_owned()).collect();
    let key = |p: &Pane| p.placements.first().map_or((u64::MAX, i64::MAX), |pl| (numeric_id(&pl.session_id), pl.window_index));
    candidates.sort_by_key(|p| (key(p), p.index, numeric_id(&p.id)));
    let pane_limit_clamped = candidates.len() > MAX_PANES;
    candidates.truncate(MAX_PANES);

    let ceiling = effective_result_lines(None);
    let scrollback = args.scrollback_lines.min(ceiling);
    let start = (scrollback > 0).then_some(-scrollback);

    let mut out = Found {
        matches: Vec::new(),
        total_matches: 0,
        offset: args.offset,
        limit: args.limit,
        next_offset: None,
        page_byte_clamped: false,
        panes_searched: 0,
        panes_matched: 0,
        panes_truncated: Vec::new(),
        panes_skipped: Vec::new(),
        panes_failed: Vec::new(),
        pane_limit_clamped,
        effective_scrollback_lines: scrollback,
        scrollback_clamped: scrollback != args.scrollback_lines,
        matching_clamped: false,
    };
    let mut budget = Budget { bytes: 0, lines: 0 };
    let mut all: Vec<Match> = Vec::new();
    // Capture in order, BATCH panes per tmux round trip (capture_batch), and
    // match each batch before the next is captured, so few panes are captured
    // once the budget has run out. Each capture reads the full (unscoped)
    // pane so the hook preflight covers every session linking its window; a
    // pane the batch could not take goes the single-pane way, CONCURRENCY at
    // a time.
    let scrollback_rows = u64::try_from(scrollback).unwrap_or(0);
    for chunk in candidates.chunks(BATCH) {
        let full: Vec<Pane> = chunk.iter().map(|p| snap.pane(&p.id).cloned().unwrap_or_else(|| p.clone())).collect();
        let batched = match session.broker.admission.capture().await {
            Ok(_place) => capture_batch::capture(&session.broker, &full, scrollback_rows).await,
            Err(_) => full.iter().map(|_| Batched::Alone).collect(),
        };
        let mut results: Vec<Option<Result<Vec<String>, ObserveError>>> = batched.into_iter().map(|b| match b {
            Batched::Rows(out) => Some(Ok(decode_lines(&out))),
            Batched::Alone => None,
        }).collect();
        let alone: Vec<usize> = (0..results.len()).filter(|&i| results[i].is_none()).collect();
        for group in alone.chunks(CONCURRENCY) {
            let mut set = tokio::task::JoinSet::new();
            for &i in group {
                let broker = session.broker.clone();
                let pane = full[i].clone();
                set.spawn(async move {
                    let r = match broker.admission.capture().await {
                        Err(refused) => Err(ObserveError::Transport { observed: false, why: format!("the broker is overloaded: {}", refused.0) }),
                        Ok(_place) => observe::capture_range(&broker, pane, start, None, false).await.map(|(_, out)| decode_lines(&out)),
                    };
                    (i, r)
                });
            }
            for (i, r) in set.join_all().await {
                results[i] = Some(r);
            }
        }
        for (i, result) in results.into_iter().enumerate() {
            let result = result.unwrap_or_else(|| Err(ObserveError::Transport { observed: false, why: "not captured".into() }));
            if !scan(session, &re, args.max_matches_per_pane, &chunk[i], result, &mut budget, &mut out, &mut all) {
                out.matching_clamped = true;
                break;
            }
        }
        if out.matching_clamped {
            break;
        }
    }
    out.total_matches = all.len();
    (out.matches, out.page_byte_clamped) = page(all, args.offset, args.limit, PAGE_BYTES);
    if args.offset + out.matches.len() < out.total_matches {
        out.next_offset = Some(args.offset + out.matches.len());
    }
    let text = summary(&out);
    Ok(ToolOutput::typed(&out, text))
}

/// Matches `offset..offset+limit`, fewer when they would pass `bound` bytes
/// (at least one always fits); whether the page was cut short.
fn page(all: Vec<Match>, offset: usize, limit: usize, bound: usize) -> (Vec<Match>, bool) {
    let mut out = Vec::new();
    let mut bytes = 0;
    for m in all.into_iter().skip(offset).take(limit) {
        bytes += serde_json::to_string(&m).map_or(0, |j| j.len()) + m.text.len() + 64;
        if bytes > bound && !out.is_empty() {
            return (out, true);
        }
        out.push(m);
    }
    (out, false)
}

/// What the call's matching has used of its budget.
struct Budget {
    bytes: usize,
    lines: usize,
}

/// Matches one pane's capture into `all` (or records why it has none);
/// `false` when the budget ran out in it.
#[allow(clippy::too_many_arguments)]
fn scan(session: &Session, re: &regex::Regex, per_pane: usize, pane: &Pane, result: Result<Vec<String>, ObserveError>, budget: &mut Budget, out: &mut Found, all: &mut Vec<Match>) -> bool {
    let lines = match result {
        Ok(l) => l,
        Err(ObserveError::Unsupported { why, .. }) => {
            out.panes_skipped.push(PaneProblem { pane_id: pane.id.clone(), reason: why });
            return true;
        }
        Err(e) => {
            out.panes_failed.push(PaneProblem { pane_id: pane.id.clone(), reason: e.why().to_string() });
            return true;
        }
    };
    out.panes_searched += 1;
    let mut found = 0;
    let mut within = true;
    for (n, line) in lines.iter().enumerate() {
        budget.bytes += line.len() + 1;
        budget.lines += 1;
        if budget.bytes > MATCH_BYTES || budget.lines > MATCH_LINES {
            within = false;
            break;
        }
        if !re.is_match(line) {
            continue;
        }
        if found == per_pane {
            out.panes_truncated.push(pane.id.clone());
            break;
        }
        found += 1;
        all.push(Match {
            pane_id: pane.id.clone(),
            reference: PaneRef::new(&pane.id, session.generation()),
            line_number: n + 1,
            text: line.clone(),
            window_id: pane.window_id.clone(),
            window_name: pane.window_name.clone(),
            placements: pane.placements.iter().map(|pl| Placement { session_id: pl.session_id.clone(), session_name: pl.session_name.clone(), index: pl.window_index }).collect(),
        });
    }
    if found > 0 {
        out.panes_matched += 1;
    }
    within
}

/// `%id sess:idx,… window:line  text` per match, then bracketed notices.
fn summary(f: &Found) -> String {
    let mut lines: Vec<String> = f
        .matches
        .iter()
        .map(|m| {
            let places: Vec<String> = m.placements.iter().map(|p| format!("{}:{}", p.session_name, p.index)).collect();
            format!("{} {} {}:{}  {}", m.pane_id, places.join(","), m.window_name, m.line_number, m.text)
        })
        .collect();
    lines.insert(0, format!("{} match(es) in {} of {} searched pane(s); showing {} from offset {}", f.total_matches, f.panes_matched, f.panes_searched, f.matches.len(), f.offset));
    if let Some(n) = f.next_offset {
        lines.push(format!("[more: call again with offset {n}]"));
    }
    if !f.panes_skipped.is_empty() {
        lines.push(format!("[skipped, an after-capture-pane hook is set: {}]", f.panes_skipped.iter().map(|p| p.pane_id.as_str()).collect::<Vec<_>>().join(", ")));
    }
    if !f.panes_failed.is_empty() {
        lines.push(format!("[failed: {}]", f.panes_failed.iter().map(|p| format!("{} ({})", p.pane_id, p.reason)).collect::<Vec<_>>().join(", ")));
    }
    for (flag, note) in [(!f.panes_truncated.is_empty(), "some panes had more matches than maxMatchesPerPane"), (f.pane_limit_clamped, "only the first 200 panes were searched"), (f.scrollback_clamped, "scrollbackLines was clamped"), (f.matching_clamped, "the matching budget ran out"), (f.page_byte_clamped, "this page was cut short to stay within its byte bound")] {
        if flag {
            lines.push(format!("[{note}]"));
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pattern: &str, regex: bool, match_case: bool) -> Args {
        serde_json::from_value(json!({ "pattern": pattern, "regex": regex, "matchCase": match_case })).unwrap()
    }

    #[test]
    fn pages_stop_at_their_byte_bound() {
        let m = |n: usize| Match { pane_id: "%1".into(), reference: PaneRef::new("%1", "g"), line_number: n, text: "x".repeat(100), window_id: "@1".into(), window_name: "w".into(), placements: Vec::new() };
        let all = || (1..=10).map(m).collect::<Vec<_>>();
        let one = serde_json::to_string(&m(1)).unwrap().len() + 100 + 64;
        let (p, cut) = page(all(), 2, 5, 3 * one + 10);
        assert_eq!((p.iter().map(|m| m.line_number).collect::<Vec<_>>(), cut), (vec![3, 4, 5], true));
        let (p, cut) = page(all(), 0, 4, 1_000_000);
        assert_eq!((p.len(), cut), (4, false));
        let (p, cut) = page(all(), 9, 5, 1);
        assert_eq!((p.len(), cut), (1, false), "one match always fits; the last page is not cut");
    }

    #[test]
    fn literal_regex_and_case() {
        assert!(matcher(&args("a.c", false, true)).unwrap().is_match("xa.cx"));
        assert!(!matcher(&args("a.c", false, true)).unwrap().is_match("abc"), "a literal dot is not a wildcard");
        assert!(matcher(&args("a.c", true, true)).unwrap().is_match("abc"));
        assert!(!matcher(&args("ABC", false, true)).unwrap().is_match("abc"));
        assert!(matcher(&args("ABC", false, false)).unwrap().is_match("xabcx"));
        let e = matcher(&args("(", true, true)).unwrap_err();
        assert!(e.is_error && e.text.starts_with("Argument pattern: not a valid regular expression"), "{}", e.text);
        let d: Args = serde_json::from_value(json!({ "pattern": "x" })).unwrap();
        assert_eq!((d.regex, d.match_case, d.max_matches_per_pane, d.offset, d.limit, d.scrollback_lines), (false, true, 5, 0, 100, 0));
    }
}
