//! `search_panes` as tmux-python/libtmux-mcp spells it (`--toolset python`,
//! docs/spec.md C.3): snake_case arguments, a literal (or `regex`) pattern,
//! case-insensitive unless `match_case`, one session by `session_id` or
//! `session_name`, the capture range `content_start`/`content_end` (tmux's
//! `-S`/`-E`) read with `-J` (wrapped lines joined), the last
//! `max_matched_lines_per_pane` (50) matching lines of each pane, and the
//! matched panes sorted by pane id and paged with `offset` / `limit` (500;
//! `null`: no cap). The result is the reference's: `matches[]` of
//! PaneContentMatch records, `truncated`, `truncated_panes` (matched panes
//! after the page), `total_panes_matched`, `offset`, `limit`.
//!
//! The mechanism is ours, not the reference's: the search is the default
//! `search_panes`'s engine (`toolkit::records::search::search_panes`: guarded,
//! hook-refusing captures, the agent's scope, the matching budget of bytes,
//! lines and time, at most 200 panes); this module picks the candidates and
//! translates. The reference's "fast path" (`list-panes -f '#{C/i:PATTERN}'`)
//! is not taken: a pattern never reaches a tmux format. The `-J` captures go
//! 32 panes per tmux round trip like the default's (`capture_batch`). Pane geometry, which the pane
//! table does not carry, is read for the page's panes with one hook-free
//! format expansion (`Registry::expand_format`).

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::python::{check_socket, nullable, ServerArg};
use crate::toolkit::records::graph;
use crate::toolkit::records::search::{
    self, build_regex, page, problem_lines, PaneHits, Plan, Searched, MATCH_LINES, MAX_PANES,
    PAGE_BYTES,
};
use crate::toolkit::schemas::derived::{nullable_input_of, schema_of};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tmux_mcp_engine::registry::{numeric_id, Pane};

pub const SPEC: ToolSpec = ToolSpec::new(
    "search_panes",
    Annotations::read_only("Search panes"),
    nullable_input_of::<Args>,
    schema_of::<Found>,
    |c| c.run(call),
)
.description("Search the content of the tmux panes this agent may see (optionally one session: session_id, else session_name) for a pattern: literal unless regex is true (Rust regex syntax: no look-around or back-references), case-insensitive unless match_case is true. Reads the visible screen, or the content_start..content_end range (tmux capture-pane -S/-E: 0 is the top visible line, negative numbers reach into history), with wrapped lines joined. Each matching pane is returned with its geometry, window, session and its last max_matched_lines_per_pane (default 50) matching lines; panes are sorted by pane id and paged with offset and limit (default 500, null for no cap); truncated_panes lists the matched panes after this page. truncated is true when anything was left out. Panes whose capture would run an after-capture-pane hook are skipped and named in the text. Read-only; fires no tmux hook.");

const DEFAULT_PER_PANE: i64 = 50;
const DEFAULT_LIMIT: i64 = 500;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Found {
    /// The matched panes of this page, by pane id.
    matches: Vec<PaneContentMatch>,
    /// Something was left out: lines over a pane's cap, panes after this page,
    /// or a bound of the search (see the text).
    truncated: bool,
    /// The matched panes after this page (call again with a larger offset).
    #[schemars(inner(regex(pattern = crate::toolkit::target::ids::PANE_ID)))]
    truncated_panes: Vec<String>,
    /// Matched panes in all (before paging).
    total_panes_matched: usize,
    offset: usize,
    /// `null`: no cap.
    limit: Option<usize>,
}

/// A pane whose content matched (the reference's PaneContentMatch).
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PaneContentMatch {
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    pane_id: String,
    /// Left edge column, 0-based and window-relative (`null`: the pane was gone when its geometry was read).
    pane_left: Option<i64>,
    pane_top: Option<i64>,
    /// Right edge column (inclusive).
    pane_right: Option<i64>,
    /// Bottom edge row (inclusive).
    pane_bottom: Option<i64>,
    pane_at_left: Option<bool>,
    pane_at_right: Option<bool>,
    pane_at_top: Option<bool>,
    pane_at_bottom: Option<bool>,
    pane_tty: String,
    pane_current_command: String,
    pane_current_path: String,
    #[schemars(regex(pattern = crate::toolkit::target::ids::WINDOW_ID))]
    window_id: String,
    window_name: String,
    /// The session searched, else the pane's first session this agent sees.
    #[schemars(regex(pattern = crate::toolkit::target::ids::SESSION_ID))]
    session_id: String,
    session_name: String,
    /// The last matching lines, top to bottom.
    matched_lines: Vec<String>,
    /// Whether this is the agent's own pane; `null` when the agent runs in no
    /// pane of this tmux server.
    is_caller: Option<bool>,
}

/// `pane_left … pane_at_bottom` of one pane.
type Geometry = ([i64; 4], [bool; 4]);

const GEOMETRY: [&str; 8] = [
    "pane_left",
    "pane_top",
    "pane_right",
    "pane_bottom",
    "pane_at_left",
    "pane_at_right",
    "pane_at_top",
    "pane_at_bottom",
];

/// The arguments; the published schema is derived from them. Absent means
/// the default.
#[derive(Deserialize, JsonSchema)]
struct Args {
    /// Text to search for in pane content (literal unless regex is true).
    #[schemars(length(min = 1, max = 65536))]
    pattern: String,
    /// Treat pattern as a regular expression (Rust regex syntax, linear time).
    #[serde(default)]
    regex: bool,
    /// Only the panes of this session (by name).
    #[serde(default)]
    session_name: Option<String>,
    /// Only the panes of this session (e.g. '$1'); wins over session_name.
    #[serde(default)]
    #[schemars(regex(pattern = crate::toolkit::target::ids::SESSION_ID))]
    session_id: Option<String>,
    /// true: case-sensitive.
    #[serde(default)]
    match_case: bool,
    /// First line of the range searched (capture-pane -S); negative reaches
    /// into history. null: the top of the visible screen.
    ///
    /// tmux reads -S/-E as INT_MIN..SHRT_MAX (a value outside is silently the
    /// top of the screen), hence the bounds.
    #[serde(default)]
    #[schemars(range(min = -2_147_483_648, max = 32767))]
    content_start: Option<i64>,
    /// Last line of the range searched (capture-pane -E). null: the bottom of
    /// the visible screen.
    #[serde(default)]
    #[schemars(range(min = -2_147_483_648, max = 32767))]
    content_end: Option<i64>,
    /// Matching lines kept per pane: the last ones.
    #[serde(default = "default_per_pane", rename = "max_matched_lines_per_pane")]
    #[schemars(range(min = 1, max = 10000))]
    per_pane: usize,
    /// Matched panes per page; null: no cap.
    #[serde(default = "default_limit", deserialize_with = "nullable")]
    #[schemars(range(min = 1))]
    limit: Option<usize>,
    /// Matched panes to skip (paging).
    #[serde(default)]
    #[schemars(range(max = 2_147_483_647))]
    offset: usize,
    #[serde(flatten)]
    server: ServerArg,
}

fn default_per_pane() -> usize {
    DEFAULT_PER_PANE as usize
}

fn default_limit() -> Option<usize> {
    Some(DEFAULT_LIMIT as usize)
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    // Checked before anything reaches tmux.
    let re = build_regex(&args.pattern, args.regex, !args.match_case, false).map_err(|e| {
        ToolOutput::libtmux_error(format!(
            "Invalid regex pattern: {e}. Nothing was sent to tmux."
        ))
    })?;
    check_socket(session, &args.server)?;
    let (snap, g) = graph::fresh(session).await?;
    let only = match (args.session_id.as_deref(), args.session_name.as_deref()) {
        (Some(id), _) => Some(graph::resolve_session(&g, "session_id", id)?),
        (None, Some(name)) => Some(graph::resolve_session(&g, "session_name", name)?),
        (None, None) => None,
    };
    // Candidates as this agent sees them (scope-cut placements), by pane id.
    let mut candidates: Vec<Pane> = session
        .visible(&snap)
        .filter(|p| only.as_deref().is_none_or(|s| p.in_session(s)))
        .map(|p| p.into_owned())
        .collect();
    candidates.sort_by_key(|p| numeric_id(&p.id));
    let pane_limit_clamped = candidates.len() > MAX_PANES;
    candidates.truncate(MAX_PANES);

    let plan = Plan {
        re: &re,
        start: args.content_start,
        end: args.content_end,
        join: true,
        max_rows: Some(MATCH_LINES as i64),
        per_pane: args.per_pane,
        keep_last: true,
    };
    let searched = search::search_panes(session, &snap, &candidates, &plan).await;
    if searched.panes_searched == 0 && !candidates.is_empty() {
        return Err(nothing_searched(&searched));
    }

    let total = searched.hits.len();
    let per_pane_cut: Vec<String> = searched
        .hits
        .iter()
        .filter(|h| h.more)
        .map(|h| h.pane.id.clone())
        .collect();
    let records: Vec<PaneContentMatch> = searched
        .hits
        .iter()
        .map(|h| record(session, only.as_deref(), h))
        .collect();
    let (mut matches, page_byte_clamped) = page(
        records,
        args.offset,
        args.limit.unwrap_or(usize::MAX),
        PAGE_BYTES,
        |m| m.matched_lines.iter().map(|l| l.len() + 3).sum::<usize>() + 100,
    );
    let shown_to = args.offset.saturating_add(matches.len());
    let truncated_panes: Vec<String> = searched
        .hits
        .iter()
        .skip(shown_to)
        .map(|h| h.pane.id.clone())
        .collect();
    let geometry_failed = fill_geometry(session, &mut matches).await;
    let bounded = pane_limit_clamped
        || searched.matching_clamped
        || !searched.ranges_clamped.is_empty()
        || !searched.panes_skipped.is_empty()
        || !searched.panes_failed.is_empty();
    let found = Found {
        truncated: !per_pane_cut.is_empty() || !truncated_panes.is_empty() || bounded,
        matches,
        truncated_panes,
        total_panes_matched: total,
        offset: args.offset,
        limit: args.limit,
    };
    let notes = Notes {
        args: &args,
        searched: &searched,
        per_pane_cut,
        pane_limit_clamped,
        page_byte_clamped,
        geometry_failed,
    };
    let text = summary(&found, &notes);
    Ok(ToolOutput::typed(&found, text))
}

/// The error when candidates there were but none could be searched: each
/// one's reason, or the time budget. An empty result would read as "no
/// match".
fn nothing_searched(searched: &Searched) -> ToolOutput {
    let why: Vec<String> = searched
        .panes_skipped
        .iter()
        .chain(&searched.panes_failed)
        .map(|p| format!("{} ({})", p.pane_id, p.reason))
        .collect();
    ToolOutput::libtmux_error(format!(
        "No pane could be searched: {}.",
        if why.is_empty() {
            "the search's time budget ran out".to_string()
        } else {
            why.join("; ")
        }
    ))
}

/// The page's panes' geometry, read now (the pane table does not carry it)
/// and filled into their records; why it could not be read, if it could not
/// (the records keep null geometry then).
async fn fill_geometry(session: &Session, matches: &mut [PaneContentMatch]) -> Option<String> {
    match geometry(session, matches).await {
        Ok(found) => {
            for m in matches {
                if let Some(([l, t, r, b], [al, ar, at, ab])) = found.get(&m.pane_id).copied() {
                    (m.pane_left, m.pane_top, m.pane_right, m.pane_bottom) =
                        (Some(l), Some(t), Some(r), Some(b));
                    (
                        m.pane_at_left,
                        m.pane_at_right,
                        m.pane_at_top,
                        m.pane_at_bottom,
                    ) = (Some(al), Some(ar), Some(at), Some(ab));
                }
            }
            None
        }
        Err(e) => Some(e),
    }
}

/// The PaneContentMatch of one pane (geometry filled in later, for the page only).
fn record(session: &Session, only: Option<&str>, h: &PaneHits) -> PaneContentMatch {
    let p = &h.pane;
    let place = p
        .placements
        .iter()
        .find(|pl| only.is_none_or(|s| pl.session_id == s))
        .or(p.placements.first());
    PaneContentMatch {
        pane_id: p.id.clone(),
        pane_left: None,
        pane_top: None,
        pane_right: None,
        pane_bottom: None,
        pane_at_left: None,
        pane_at_right: None,
        pane_at_top: None,
        pane_at_bottom: None,
        pane_tty: p.tty.clone(),
        pane_current_command: p.command.clone(),
        pane_current_path: p.cwd.clone(),
        window_id: p.window_id.clone(),
        window_name: p.window_name.clone(),
        session_id: place.map(|pl| pl.session_id.clone()).unwrap_or_default(),
        session_name: place.map(|pl| pl.session_name.clone()).unwrap_or_default(),
        matched_lines: h.lines.iter().map(|(_, l)| l.clone()).collect(),
        is_caller: session.caller_pane.as_ref().map(|c| *c == p.id),
    }
}

/// The geometry of the page's panes, by pane id, in one hook-free read: a
/// `#{S:#{W:#{P:…}}}` loop of numbers and flags only (no free text, so tmux
/// 3.4–3.5's escaping of command output cannot touch it). A pane gone since
/// its capture is absent (its fields stay `null`).
async fn geometry(
    session: &Session,
    matches: &[PaneContentMatch],
) -> Result<HashMap<String, Geometry>, String> {
    if matches.is_empty() {
        return Ok(HashMap::new());
    }
    let fields: Vec<String> = std::iter::once("pane_id")
        .chain(GEOMETRY)
        .map(|f| format!("#{{{f}}}"))
        .collect();
    let format = format!("#{{S:#{{W:#{{P:{}/}}}}}}", fields.join(" "));
    let text = session
        .broker
        .registry
        .expand_format(&format)
        .await
        .map_err(|e| e.to_string())?;
    Ok(parse_geometry(&text))
}

fn parse_geometry(text: &str) -> HashMap<String, Geometry> {
    let mut out = HashMap::new();
    for record in text.trim_end().split('/') {
        let f: Vec<&str> = record.split_whitespace().collect();
        let [id, rest @ ..] = f.as_slice() else {
            continue;
        };
        let nums: Option<Vec<i64>> = rest
            .get(..4)
            .map(|n| n.iter().map(|v| v.parse().ok()).collect())
            .unwrap_or(None);
        let flags: Option<Vec<bool>> = rest
            .get(4..8)
            .filter(|_| rest.len() == 8)
            .map(|n| {
                n.iter()
                    .map(|v| matches!(*v, "1" | "0").then_some(*v == "1"))
                    .collect()
            })
            .unwrap_or(None);
        if let (Some(n), Some(b)) = (nums, flags) {
            out.insert(
                id.to_string(),
                ([n[0], n[1], n[2], n[3]], [b[0], b[1], b[2], b[3]]),
            );
        }
    }
    out
}

/// What the text says beside the matches.
struct Notes<'a> {
    args: &'a Args,
    searched: &'a Searched,
    per_pane_cut: Vec<String>,
    pane_limit_clamped: bool,
    page_byte_clamped: bool,
    geometry_failed: Option<String>,
}

/// A header, each matched pane with its lines, then bracketed notices for
/// everything that was left out or bounded.
fn summary(f: &Found, n: &Notes<'_>) -> String {
    let s = n.searched;
    let mut lines = vec![format!(
        "{} pane(s) matched of {} searched; showing {} from offset {}",
        f.total_panes_matched,
        s.panes_searched,
        f.matches.len(),
        f.offset
    )];
    for m in &f.matches {
        lines.push(format!(
            "{} {}:{} ({}) — {} line(s)",
            m.pane_id,
            m.session_name,
            m.window_id,
            m.window_name,
            m.matched_lines.len()
        ));
        lines.extend(m.matched_lines.iter().map(|l| format!("  {l}")));
    }
    let list = |v: &[String]| v.join(", ");
    if let Some(first) = f.truncated_panes.first() {
        lines.push(format!(
            "[{} more matched pane(s) from {first}: call again with offset {}]",
            f.truncated_panes.len(),
            f.offset + f.matches.len()
        ));
    }
    if !n.per_pane_cut.is_empty() {
        lines.push(format!(
            "[more than {} matching lines, the last ones kept: {}]",
            n.args.per_pane,
            list(&n.per_pane_cut)
        ));
    }
    lines.extend(problem_lines(&s.panes_skipped, &s.panes_failed));
    if !s.ranges_clamped.is_empty() {
        lines.push(format!(
            "[range cut to its last {MATCH_LINES} rows: {}]",
            list(&s.ranges_clamped)
        ));
    }
    if n.pane_limit_clamped {
        lines.push(format!(
            "[only the first {MAX_PANES} panes (by id) were searched]"
        ));
    }
    if s.matching_clamped {
        lines.push("[the search's budget (256 KiB or 20,000 lines scanned, or 5 s) ran out: later panes, or earlier lines of the last pane, were not searched]".to_string());
    }
    if n.page_byte_clamped {
        lines.push("[this page was cut short to stay within its byte bound]".to_string());
    }
    if let Some(e) = &n.geometry_failed {
        lines.push(format!("[pane geometry could not be read: {e}]"));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn geometry_is_parsed_per_pane_and_partial_records_are_dropped() {
        let g = parse_geometry(
            "%0 0 0 39 23 1 0 1 1/%3 40 0 79 23 0 1 1 1/%0 0 0 39 23 1 0 1 1/%5 1 2 3/\n",
        );
        assert_eq!(
            g.get("%0"),
            Some(&([0, 0, 39, 23], [true, false, true, true]))
        );
        assert_eq!(
            g.get("%3"),
            Some(&([40, 0, 79, 23], [false, true, true, true]))
        );
        assert!(
            !g.contains_key("%5"),
            "a record without every field is not trusted"
        );
        assert!(parse_geometry("%1 a 0 0 0 1 1 1 1/%2 0 0 0 0 1 1 1 x/").is_empty());
    }

    #[test]
    fn defaults_and_null_limit() {
        let (a, b) = (
            json!({ "pattern": "x" }),
            json!({ "pattern": "x", "limit": null, "content_start": -10, "max_matched_lines_per_pane": 2.0 }),
        );
        let d: Args = crate::toolkit::call::args::decode(&a).unwrap();
        assert_eq!(
            (
                d.regex,
                d.match_case,
                d.per_pane,
                d.limit,
                d.offset,
                d.content_start,
                d.content_end
            ),
            (false, false, 50, Some(500), 0, None, None)
        );
        let n: Args = crate::toolkit::call::args::decode(&b).unwrap();
        assert_eq!((n.limit, n.content_start, n.per_pane), (None, Some(-10), 2));
        crate::toolkit::call::args::assert_every_property_decoded::<Args>(
            &nullable_input_of::<Args>(),
            json!({ "pattern": "x" }),
        );
    }
}
