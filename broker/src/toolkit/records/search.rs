//! Searching panes' text: the family's pattern language ([`build_regex`]),
//! the hook-free batched capture and matching of many panes within one
//! call's budget ([`search_panes`]), and paging what was found by size.
//! Spelled by `search_panes` (both toolsets) and, for its patterns, by
//! `wait_for_text`.

use crate::session::Session;
use schemars::JsonSchema;
use serde::Serialize;
use tmux_mcp_engine::capture_batch::{self, Batched};
use tmux_mcp_engine::lines;
use tmux_mcp_engine::lines::decode_lines;
use tmux_mcp_engine::observe::{self, ObserveError};
use tmux_mcp_engine::registry::{Pane, Snapshot};

/// Panes searched at most per call (B.4).
pub const MAX_PANES: usize = 200;
/// Captures in flight at once (B.4).
const CONCURRENCY: usize = 8;

/// Panes captured per batch (one tmux round trip per message's worth of them).
const BATCH: usize = 32;
/// The matching budget of one call (B.4): UTF-8 bytes (each line costs its
/// size + 1), lines, and time (checked before each pane is scanned).
pub const MATCH_BYTES: usize = 256 * 1024;
pub const MATCH_LINES: usize = 20_000;
pub const MATCH_TIME: std::time::Duration = std::time::Duration::from_secs(5);
/// Bytes one page's matches may take, as JSON plus their text line: a result
/// carries both and stays under the family's 1,000,000-byte ceiling even when
/// a window linked into many sessions makes every match's placements long.
pub const PAGE_BYTES: usize = 900_000;
/// Compiled-regex size bound.
const REGEX_SIZE: usize = 1 << 20;

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PaneProblem {
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    pub pane_id: String,
    pub reason: String,
}

/// A text answer's lines for the panes a search passed over: the ones
/// skipped (an after-capture-pane hook is set) and the ones whose read failed,
/// each line only when there are any.
pub fn problem_lines(skipped: &[PaneProblem], failed: &[PaneProblem]) -> Vec<String> {
    let mut lines = Vec::new();
    if !skipped.is_empty() {
        let ids: Vec<&str> = skipped.iter().map(|p| p.pane_id.as_str()).collect();
        lines.push(format!(
            "[skipped, an after-capture-pane hook is set: {}]",
            ids.join(", ")
        ));
    }
    if !failed.is_empty() {
        let why: Vec<String> = failed
            .iter()
            .map(|p| format!("{} ({})", p.pane_id, p.reason))
            .collect();
        lines.push(format!("[failed: {}]", why.join(", ")));
    }
    lines
}

/// A pattern as the family matches it (also wait_for_text's): literal unless
/// `regex`, linear-time, its program bounded by [`REGEX_SIZE`]; `multi_line`
/// makes `^`/`$` match at line ends of a multi-line text.
pub fn build_regex(
    pattern: &str,
    regex: bool,
    case_insensitive: bool,
    multi_line: bool,
) -> Result<regex::Regex, regex::Error> {
    let source = if regex {
        pattern.to_string()
    } else {
        regex::escape(pattern)
    };
    regex::RegexBuilder::new(&source)
        .case_insensitive(case_insensitive)
        .multi_line(multi_line)
        .size_limit(REGEX_SIZE)
        .build()
}

/// Items `offset..offset+limit`, fewer when they would pass `bound` bytes
/// (each costs its JSON, `text_len` for its line in the result text, and 64);
/// at least one always fits. Also whether the page was cut short.
pub fn page<T: Serialize>(
    all: Vec<T>,
    offset: usize,
    limit: usize,
    bound: usize,
    text_len: impl Fn(&T) -> usize,
) -> (Vec<T>, bool) {
    let mut out = Vec::new();
    let mut bytes = 0;
    for m in all.into_iter().skip(offset).take(limit) {
        bytes += serde_json::to_string(&m).map_or(0, |j| j.len()) + text_len(&m) + 64;
        if bytes > bound && !out.is_empty() {
            return (out, true);
        }
        out.push(m);
    }
    (out, false)
}

// ---------------------------------------------------------------------------
// The search engine, shared by both spellings (this one and
// `search_panes_python`): capture the candidates hook-free, match, and keep
// each pane's first or last N matching lines within the call's budget.
// ---------------------------------------------------------------------------

/// What to capture of each candidate and what to keep of its matches.
pub struct Plan<'a> {
    pub re: &'a regex::Regex,
    /// `capture-pane -S` / `-E` (tmux's scale: 0 is the top visible row,
    /// negative reaches into history); `None` omits the flag.
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// `-J`: wrapped rows joined into one line (trailing spaces kept).
    pub join: bool,
    /// A pane's range is cut to its last `max_rows` rows (reported per pane).
    pub max_rows: Option<i64>,
    /// Matching lines kept per pane.
    pub per_pane: usize,
    /// Keep the last `per_pane` matching lines (the pane is scanned from the
    /// bottom) rather than the first.
    pub keep_last: bool,
}

impl Plan<'_> {
    /// The `-S`/`-E` of `pane`, cut to its last `max_rows` rows; whether it was cut.
    fn range_of(&self, pane: &Pane) -> (Option<i64>, Option<i64>, bool) {
        let Some(max) = self.max_rows else {
            return (self.start, self.end, false);
        };
        // What tmux makes of the range (clamped to the history and the screen,
        // swapped when reversed), to tell whether it holds more than `max` rows.
        let (h, hs) = (
            i64::from(pane.height),
            i64::try_from(pane.history_size).unwrap_or(i64::MAX),
        );
        let clamp = |v: i64| v.clamp(-hs, (h - 1).max(0));
        let (mut s, mut e) = (self.start.map(clamp), self.end.map(clamp));
        if let (Some(a), Some(b)) = (s, e) {
            if b < a {
                (s, e) = (Some(b), Some(a));
            }
        }
        let r = lines::bounded_range(Some(h), s, e, max);
        if r.clamped {
            (r.start, r.end, true)
        } else {
            (self.start, self.end, false)
        }
    }
}

/// One pane with matching lines.
pub struct PaneHits {
    /// The candidate as this agent sees it (scope-cut placements).
    pub pane: Pane,
    /// (1-based line number within the pane's capture, text), top to bottom.
    pub lines: Vec<(usize, String)>,
    /// More lines matched than `per_pane` (the rest dropped).
    pub more: bool,
}

/// What a search found, candidates in the order given (`default()`:
/// nothing yet).
#[derive(Default)]
pub struct Searched {
    /// Panes with at least one matching line.
    pub hits: Vec<PaneHits>,
    /// Panes captured and scanned (the last one perhaps only in part).
    pub panes_searched: usize,
    pub panes_skipped: Vec<PaneProblem>,
    pub panes_failed: Vec<PaneProblem>,
    /// Panes whose range was cut to `max_rows`.
    pub ranges_clamped: Vec<String>,
    /// The call's budget (bytes, lines, time) ran out: later panes or lines
    /// were not searched.
    pub matching_clamped: bool,
}

/// Captures `candidates` (in order) hook-free and matches them, BATCH panes
/// per tmux round trip where `capture_batch` can take them (after one hook
/// preflight for the whole call), and matches each
/// batch before the next is captured, so few panes are captured once the
/// budget has run out. Each capture reads the full (unscoped) pane from
/// `snap`, so the hook preflight covers every session linking its window; a
/// pane the batch could not take goes the single-pane way (guarded,
/// hook-refusing `observe::capture_range`), CONCURRENCY at a time.
pub async fn search_panes(
    session: &Session,
    snap: &Snapshot,
    candidates: &[Pane],
    plan: &Plan<'_>,
) -> Searched {
    let mut out = Searched::default();
    let mut budget = Budget {
        bytes: 0,
        lines: 0,
        deadline: std::time::Instant::now() + MATCH_TIME,
    };
    let full_of = |chunk: &[Pane]| -> Vec<Pane> {
        chunk
            .iter()
            .map(|p| snap.pane(&p.id).cloned().unwrap_or_else(|| p.clone()))
            .collect()
    };
    // One hook preflight for every batch of the call.
    let clear = capture_batch::preflight(&session.broker, &full_of(candidates)).await;
    'chunks: for chunk in candidates.chunks(BATCH) {
        if budget.timed_out() {
            out.matching_clamped = true;
            break;
        }
        let full = full_of(chunk);
        let ranges: Vec<(Option<i64>, Option<i64>, bool)> =
            full.iter().map(|p| plan.range_of(p)).collect();
        out.ranges_clamped.extend(
            full.iter()
                .zip(&ranges)
                .filter(|(_, r)| r.2)
                .map(|(p, _)| p.id.clone()),
        );
        let results = capture_chunk(session, clear.as_ref(), &full, &ranges, plan.join).await;
        for (i, result) in results.into_iter().enumerate() {
            let result = result.unwrap_or_else(|| {
                Err(ObserveError::Transport {
                    observed: false,
                    why: "not captured".into(),
                })
            });
            if !scan(plan, &chunk[i], result, &mut budget, &mut out) {
                out.matching_clamped = true;
                break 'chunks;
            }
        }
    }
    out
}

/// One chunk's captures, as lines, in the chunk's order: in one tmux round
/// trip where the batch can take them (the hook preflight passed and a
/// capture place is free), else each the single-pane way, CONCURRENCY at a
/// time. `None`: not captured (the scan reports it).
async fn capture_chunk(
    session: &Session,
    clear: Option<&capture_batch::HooksClear>,
    full: &[Pane],
    ranges: &[(Option<i64>, Option<i64>, bool)],
    join: bool,
) -> Vec<Option<Result<Vec<String>, ObserveError>>> {
    let requests: Vec<capture_batch::Request> = full
        .iter()
        .zip(ranges)
        .map(|(pane, &(start, end, _))| capture_batch::Request {
            pane,
            start,
            end,
            join,
        })
        .collect();
    let batched = match clear {
        Some(clear) => match session.broker.admission.capture().await {
            Ok(_place) => capture_batch::capture(&session.broker, clear, &requests).await,
            Err(_) => full.iter().map(|_| Batched::Alone).collect(),
        },
        None => full.iter().map(|_| Batched::Alone).collect(),
    };
    let mut results: Vec<Option<Result<Vec<String>, ObserveError>>> = batched
        .into_iter()
        .map(|b| match b {
            Batched::Rows(out) => Some(Ok(decode_lines(&out))),
            Batched::Alone => None,
        })
        .collect();
    let alone: Vec<usize> = (0..results.len())
        .filter(|&i| results[i].is_none())
        .collect();
    for group in alone.chunks(CONCURRENCY) {
        let mut set = tokio::task::JoinSet::new();
        for &i in group {
            let broker = session.broker.clone();
            let pane = full[i].clone();
            let (start, end, _) = ranges[i];
            set.spawn(async move {
                let r = match broker.admission.capture().await {
                    Err(refused) => Err(ObserveError::Transport {
                        observed: false,
                        why: format!("the broker is overloaded: {}", refused.0),
                    }),
                    Ok(_place) => observe::capture_range(&broker, pane, start, end, join)
                        .await
                        .map(|(_, out)| decode_lines(&out)),
                };
                (i, r)
            });
        }
        for (i, r) in set.join_all().await {
            results[i] = Some(r);
        }
    }
    results
}

/// What the call's matching has used of its budget, and when its time is up.
struct Budget {
    bytes: usize,
    lines: usize,
    deadline: std::time::Instant,
}

impl Budget {
    fn timed_out(&self) -> bool {
        std::time::Instant::now() >= self.deadline
    }
}

/// Matches one pane's capture into `out` (or records why it has none);
/// `false` when the budget ran out in it (or before it).
fn scan(
    plan: &Plan<'_>,
    pane: &Pane,
    result: Result<Vec<String>, ObserveError>,
    budget: &mut Budget,
    out: &mut Searched,
) -> bool {
    let lines = match result {
        Ok(l) => l,
        Err(ObserveError::HookSet { why, .. }) => {
            out.panes_skipped.push(PaneProblem {
                pane_id: pane.id.clone(),
                reason: why,
            });
            return true;
        }
        Err(e) => {
            out.panes_failed.push(PaneProblem {
                pane_id: pane.id.clone(),
                reason: e.why().to_string(),
            });
            return true;
        }
    };
    if budget.timed_out() {
        return false;
    }
    out.panes_searched += 1;
    let mut found: Vec<(usize, String)> = Vec::new();
    let mut more = false;
    let mut within = true;
    // From the bottom when the last matches are kept, so a pane cut short by
    // the budget still yields its last ones.
    let order: Box<dyn Iterator<Item = (usize, &String)>> = if plan.keep_last {
        Box::new(lines.iter().enumerate().rev())
    } else {
        Box::new(lines.iter().enumerate())
    };
    for (n, line) in order {
        budget.bytes += line.len() + 1;
        budget.lines += 1;
        if budget.bytes > MATCH_BYTES || budget.lines > MATCH_LINES {
            within = false;
            break;
        }
        if !plan.re.is_match(line) {
            continue;
        }
        if found.len() == plan.per_pane {
            more = true;
            break;
        }
        found.push((n + 1, line.clone()));
    }
    if plan.keep_last {
        found.reverse();
    }
    if !found.is_empty() {
        out.hits.push(PaneHits {
            pane: pane.clone(),
            lines: found,
            more,
        });
    }
    within
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pane(height: u32, history: u64) -> Pane {
        Pane {
            window_height: height,
            height,
            history_size: history,
            ..Pane::sample("%1", "@1")
        }
    }

    fn plan(re: &regex::Regex, per_pane: usize, keep_last: bool) -> Plan<'_> {
        Plan {
            re,
            start: None,
            end: None,
            join: false,
            max_rows: None,
            per_pane,
            keep_last,
        }
    }

    fn budget(secs: u64) -> Budget {
        Budget {
            bytes: 0,
            lines: 0,
            deadline: std::time::Instant::now() + std::time::Duration::from_secs(secs),
        }
    }

    /// One scan of a 10-row pane with a budget that lasts it: what it
    /// found, and the budget after.
    fn scanned(re: &regex::Regex, per_pane: usize, keep_last: bool) -> (Searched, Budget) {
        let lines = ["hit 1", "miss", "hit 2", "hit 3", "hit 4", "miss"].map(String::from);
        let (mut out, mut b) = (Searched::default(), budget(60));
        let p = plan(re, per_pane, keep_last);
        assert!(scan(&p, &pane(10, 0), Ok(lines.to_vec()), &mut b, &mut out));
        (out, b)
    }

    /// The first pane's lines kept (row, text) and whether it had more.
    fn kept(out: &Searched) -> (Vec<(usize, &str)>, bool) {
        let hit = &out.hits[0];
        let lines = hit.lines.iter().map(|(r, l)| (*r, l.as_str())).collect();
        (lines, hit.more)
    }

    #[test]
    fn a_pane_keeps_its_first_or_its_last_matches() {
        let re = build_regex("hit", false, true, false).unwrap();
        let (out, b) = scanned(&re, 2, false);
        assert_eq!(kept(&out), (vec![(1, "hit 1"), (3, "hit 2")], true));
        assert_eq!(
            b.lines, 4,
            "the first spelling stops at the match over its cap"
        );
        let (out, _) = scanned(&re, 2, true);
        assert_eq!(
            kept(&out),
            (vec![(4, "hit 3"), (5, "hit 4")], true),
            "the last two, top to bottom"
        );
        let (out, _) = scanned(&re, 4, true);
        assert_eq!(
            (kept(&out).0.len(), kept(&out).1, out.panes_searched),
            (4, false, 1)
        );
        let none = build_regex("zzz", false, true, false).unwrap();
        let (out, _) = scanned(&none, 4, true);
        assert!(out.hits.is_empty() && out.panes_searched == 1);
    }

    #[test]
    fn the_budget_stops_a_scan_by_lines_and_by_time() {
        let re = build_regex("x", false, true, false).unwrap();
        let (mut out, mut b) = (Searched::default(), budget(60));
        b.lines = MATCH_LINES - 2;
        let lines = Ok(["a", "b", "x", "x"].map(String::from).to_vec());
        assert!(
            !scan(&plan(&re, 10, true), &pane(10, 0), lines, &mut b, &mut out),
            "the budget ran out in this pane"
        );
        assert_eq!(
            out.hits[0].lines,
            vec![(3, "x".to_string()), (4, "x".to_string())],
            "scanned from the bottom: its last lines"
        );
        let (mut out, mut b) = (Searched::default(), budget(0));
        assert!(
            !scan(
                &plan(&re, 10, true),
                &pane(10, 0),
                Ok(vec!["x".into()]),
                &mut b,
                &mut out
            ),
            "out of time before the pane"
        );
        assert_eq!((out.panes_searched, out.hits.len()), (0, 0));
    }

    #[test]
    fn a_range_is_cut_to_its_last_rows_as_tmux_would_read_it() {
        let re = build_regex("x", false, true, false).unwrap();
        let mut p = plan(&re, 1, true);
        p.max_rows = Some(100);
        // The visible screen (20 rows) and a deep start that tmux clamps to the history (50 lines): both fit.
        assert_eq!(p.range_of(&pane(20, 50)), (None, None, false));
        p.start = Some(-1_000_000);
        assert_eq!(
            p.range_of(&pane(20, 50)),
            (Some(-1_000_000), None, false),
            "sent as asked; tmux clamps it"
        );
        // 500 lines of history: the last 100 rows of -500..19.
        assert_eq!(p.range_of(&pane(20, 500)), (Some(-80), Some(19), true));
        // An end past the screen or a reversed range is read as tmux reads it.
        p.end = Some(30_000);
        assert_eq!(p.range_of(&pane(20, 500)), (Some(-80), Some(19), true));
        (p.start, p.end) = (Some(5), Some(-400));
        assert_eq!(p.range_of(&pane(20, 500)), (Some(-94), Some(5), true));
    }
}
