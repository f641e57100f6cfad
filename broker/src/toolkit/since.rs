//! The grid model of `capture_since` (docs/spec.md C.2), which both toolsets
//! spell: only the lines a pane shows that are new since a cursor.
//!
//! The cursor is a key into the retention store (a short hex32 string); the
//! entry ([`SinceEntry`]) holds where the returned lines end in the grid (the
//! terminal cursor's row), hashes of the few rows above it (to find that place
//! again when history was trimmed or the grid reflowed) and of the in-progress
//! rows already returned. Every read is one guarded `capture-pane` that also
//! expands the pane's state (history size, cursor row …) in the same tmux
//! command queue (`observe::capture_range_with_state`), so rows and state agree.
//!
//! What cannot be recovered is reported, never dropped in silence: history
//! trimmed by `history-limit` or `clear-history` past the last returned line,
//! a respawned process, a grid rewritten so the place is not found (or found
//! twice). The caps keep the tail and say what they dropped.
//!
//! The key binding's hand-off cursor (a `tmux_capture` tracking cursor) is
//! accepted too: its rows, the screen at the key press, are the baseline.
//!
//! `styles: true` reads the rows with `capture-pane -e` and returns their
//! colours and attributes as runs over `lines` (`tmux_mcp_engine::styles`).
//! The grid logic sees only the rows' text, which equals a plain read's, so a
//! cursor made by either kind of read continues with the other.

use super::read;
use super::read::observe_failure;
use super::spec::ToolOutput;
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};
use std::time::Duration;
use tmux_mcp_engine::capture::{CursorEntry, SinceEntry};
use tmux_mcp_engine::lines;
use tmux_mcp_engine::lines::decode_lines;
use tmux_mcp_engine::observe::{self, ObserveError};
use tmux_mcp_engine::registry::Pane;
use tmux_mcp_engine::retention::{Owner, Retained, View};
use tmux_mcp_engine::styles::{self, StyledRow};

const DEFAULT_LINES: u64 = 500;
const MAX_LINES: u64 = 10_000;
const DEFAULT_BYTES: u64 = 128_000;
const MAX_BYTES: u64 = lines::MAX_RESULT_BYTES as u64;
/// Rows above the cursor's place kept (as hashes) to find it again.
const WINDOW: usize = 8;
/// Extra rows captured above the expected place: output that arrived since the
/// last known history size shifts it by that much.
const MARGIN: i64 = 32;
/// `-S` far enough back to mean "from the start of history" (tmux clamps).
const ALL_HISTORY: i64 = -(1 << 30);
const STATE: &str = "#{history_size} #{history_limit} #{cursor_y} #{pane_height} #{alternate_on} #{pane_pid} #{pane_dead}";

// The arguments of `capture_since` (the default toolset's spelling); no doc
// comment: it would become the schema's description.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    pub pane_id: super::ids::PaneId,
    /// The last result's cursor, or a hand-off cursor; omit to start.
    ///
    /// The cursor of the previous capture_since result (22 characters), or
    /// the hand-off cursor prefix + A pastes (32 hex digits).
    #[schemars(regex(pattern = r"^([A-Za-z0-9_-]{22}|[0-9a-f]{32})$"))]
    pub cursor: Option<String>,
    /// Default 500.
    ///
    /// Clamped to 10000. Keep at most this many of the newest lines.
    #[schemars(range(min = 1))]
    pub max_lines: Option<u64>,
    /// Default 128000.
    ///
    /// Clamped to 1000000. Keep at most this many bytes of the newest lines.
    #[schemars(range(min = 1))]
    pub max_bytes: Option<u64>,
    /// With a cursor and nothing new: wait this long for output.
    ///
    /// Default 0; clamped to the request timeout.
    pub wait_ms: Option<u64>,
    /// Also return colours and attributes.
    ///
    /// As runs over the lines; off by default. Each run gives its line (an index into `lines`), `col`
    /// and `len` in characters, and what differs from plain text: `fg` and
    /// `bg` (`red`, `brightred`, `colour200`, `#0a141e`), `attrs` (`bold`,
    /// `dim`, `italics`, `underscore`, `reverse`, …) and `link` (an OSC 8
    /// hyperlink). maxBytes counts the runs too.
    pub styles: Option<bool>,
}

/// The pane a cursor of this broker belongs to (the Python spelling takes a
/// cursor without a pane).
pub fn pane_of_cursor(session: &Session, key: &str) -> Option<String> {
    match session.broker.retained.get(key, &session.view()).as_deref() {
        Some(Retained::Since(e)) => Some(e.pane_id.clone()),
        Some(Retained::Cursor(h)) => Some(h.pane_id.clone()),
        _ => None,
    }
}

/// The result. Fields that are usually empty are left out, so a delta of one
/// line stays small on the wire.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Out {
    pane_id: String,
    /// Pass this as `cursor` next time.
    cursor: String,
    /// The new lines, oldest first (trailing spaces trimmed by tmux).
    lines: Vec<String>,
    /// Present (true) when lines may have been lost since the cursor; `missed`
    /// says why. Absent: nothing was lost.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    lines_missed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    missed: Option<Missed>,
    /// A first call (no cursor): `lines` is the visible screen.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    seeded: bool,
    /// What the caps dropped from the start of the new lines (not recoverable:
    /// the cursor moves past them).
    #[serde(skip_serializing_if = "Option::is_none")]
    truncated: Option<Truncated>,
    /// The wait allowed (after clamping to the request timeout; 0 when no wait
    /// could be set up), when `waitMs` was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    wait_ms: Option<u64>,
    /// A full-screen program is on the alternate screen: `lines` is that whole screen.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    alternate_screen: bool,
    /// The pane's process has exited (the pane is kept by remain-on-exit).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pane_dead: bool,
    /// With `styles: true`: the styled runs of `lines`, in order; plain text
    /// has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    styles: Option<Vec<StyleRun>>,
}

/// `len` characters of `lines[line]` from character `col`, and how they look.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StyleRun {
    line: usize,
    col: usize,
    len: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    fg: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bg: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    attrs: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    link: Option<String>,
}

impl StyleRun {
    fn of(line: usize, r: &styles::Run) -> StyleRun {
        StyleRun {
            line,
            col: r.col,
            len: r.len,
            fg: r.style.fg.map(|c| c.name()),
            bg: r.style.bg.map(|c| c.name()),
            attrs: r.style.attributes(),
            link: r.style.link.clone(),
        }
    }

    /// The run as the text content lists it (clients that give their model
    /// only the text see the styles too): `LINE:COL+LEN` and tmux's style
    /// syntax, `1:0+4 fg=colour200,bold,underscore`, a link as `link=URL`.
    fn text(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        parts.extend(self.fg.as_ref().map(|c| format!("fg={c}")));
        parts.extend(self.bg.as_ref().map(|c| format!("bg={c}")));
        parts.extend(self.attrs.iter().map(|a| a.to_string()));
        parts.extend(self.link.as_ref().map(|l| format!("link={l}")));
        format!(
            "{}:{}+{} {}",
            self.line,
            self.col,
            self.len,
            parts.join(",")
        )
    }

    /// Its size in the result (what maxBytes counts).
    fn size(&self) -> usize {
        serde_json::to_string(self).map_or(0, |s| s.len() + 1)
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Reason {
    /// history-limit trimmed history past the last line returned.
    HistoryTrimmed,
    /// clear-history (or similar) removed lines not yet returned.
    HistoryCleared,
    /// The pane's process changed (respawn-pane): its earlier output is gone.
    Respawned,
    /// The last lines returned are no longer in the grid (screen cleared, resized).
    Rewritten,
    /// The last lines returned occur more than once: the place is not certain.
    Ambiguous,
    /// The hand-off's screen was not found in the pane any more.
    BaselineNotFound,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
struct Missed {
    reason: Reason,
    /// What happened, in words.
    detail: String,
}

#[derive(Serialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct Truncated {
    lines: usize,
    bytes: usize,
}

fn row_hash(row: &str) -> u64 {
    // Fixed keys: a hash is compared only within this broker's lifetime.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    row.hash(&mut h);
    h.finish()
}

/// The pane's state, read in the capture's own queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    history_size: u64,
    history_limit: u64,
    cursor_y: u64,
    height: u64,
    alternate: bool,
    pid: u32,
    dead: bool,
}

fn parse_state(s: &str) -> Option<State> {
    let f: Vec<u64> = s
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let [history_size, history_limit, cursor_y, height, alternate, pid, dead] = f[..] else {
        return None;
    };
    Some(State {
        history_size,
        history_limit,
        cursor_y,
        height,
        alternate: alternate == 1,
        pid: pid as u32,
        dead: dead == 1,
    })
}

/// Rows of one guarded capture, numbered in the grid.
struct Grid {
    state: State,
    /// Absolute row of `rows[0]`.
    first: u64,
    /// The rows' text (what the grid logic compares) and, in a styled read,
    /// their runs.
    rows: Vec<StyledRow>,
}

impl Grid {
    fn hashes(&self, from: usize, to: usize) -> Vec<u64> {
        self.rows[from..to].iter().map(|r| row_hash(r)).collect()
    }

    /// Index in `rows` of absolute row `abs`, if captured.
    fn index(&self, abs: u64) -> Option<usize> {
        abs.checked_sub(self.first)
            .map(|i| i as usize)
            .filter(|i| *i <= self.rows.len())
    }

    fn cursor_abs(&self) -> u64 {
        self.state.history_size + self.state.cursor_y
    }

    /// Where `window` sits, searched over the whole capture: every start index.
    fn find(&self, window: &[u64]) -> Vec<usize> {
        let hashes = self.hashes(0, self.rows.len());
        if window.is_empty() || window.len() > hashes.len() {
            return Vec::new();
        }
        (0..=hashes.len() - window.len())
            .filter(|&i| hashes[i..i + window.len()] == *window)
            .collect()
    }
}

/// One capture from tmux row `start` (relative: 0 is the screen's top,
/// negative reaches into history) to the bottom, with the state; `styled`:
/// with `-e`, the runs parsed out of the rows.
async fn read(
    session: &Session,
    pane: Pane,
    start: i64,
    styled: bool,
) -> Result<(Pane, Grid), ObserveError> {
    let (pane, state, out) = observe::capture_range_with_state(
        &session.broker,
        pane,
        Some(start),
        None,
        false,
        styled,
        STATE,
    )
    .await?;
    let state = parse_state(&state).ok_or_else(|| ObserveError::Transport {
        observed: true,
        why: format!("tmux gave an unreadable pane state {state:?}"),
    })?;
    let mut rows: Vec<StyledRow> = if styled {
        styles::parse(&out)
    } else {
        out.split(|b| *b == b'\n')
            .map(|r| StyledRow::plain(decode_lines(r).pop().unwrap_or_default()))
            .collect()
    };
    rows.pop(); // after the last LF
                // tmux clamps the start to the top of history.
    let first = (state.history_size as i64 + start).max(0) as u64;
    Ok((pane, Grid { state, first, rows }))
}

/// What one computation against a cursor gave.
struct Answer {
    lines: Vec<StyledRow>,
    missed: Option<Missed>,
    entry: SinceEntry,
    alternate: bool,
    dead: bool,
}

/// Everything from absolute row `frontier` on, minus the already returned
/// in-progress rows (`pending`) when unchanged; and the cursor entry after it.
fn delta(
    g: &Grid,
    frontier: u64,
    pending: &[u64],
    base: &SinceEntry,
    missed: Option<Missed>,
) -> Answer {
    let at = g.index(frontier).unwrap_or(g.rows.len());
    let r = &g.rows[at..];
    let hashes: Vec<u64> = r.iter().map(|x| row_hash(x)).collect();
    let drop = hashes
        .iter()
        .zip(pending)
        .take_while(|(a, b)| a == b)
        .count();
    // Rows above the terminal cursor are complete lines (blank ones too); from
    // the cursor down only up to the last non-blank row.
    let cursor = (g.cursor_abs().saturating_sub(frontier) as usize).min(r.len());
    let last = r.iter().rposition(|x| !x.is_empty()).map_or(0, |i| i + 1);
    let end = last.max(cursor);
    let lines = if drop < end {
        r[drop..end].to_vec()
    } else {
        Vec::new()
    };
    let new_frontier = frontier + cursor as u64;
    let fi = at + cursor;
    let entry = SinceEntry {
        frontier: new_frontier,
        window: g.hashes(fi.saturating_sub(WINDOW), fi),
        pending: hashes[cursor..end].to_vec(),
        history_size: g.state.history_size,
        alternate: None,
        ..base.clone()
    };
    Answer {
        lines,
        missed,
        entry,
        alternate: false,
        dead: g.state.dead,
    }
}

fn missed(reason: Reason, detail: impl Into<String>) -> Option<Missed> {
    Some(Missed {
        reason,
        detail: detail.into(),
    })
}

/// Why the place of a cursor could not be found, from the two states.
fn lost_reason(g: &Grid, old_history: u64) -> (Reason, String) {
    let s = &g.state;
    let step = (s.history_limit / 10).max(1);
    if s.history_limit == 0 || s.history_size + step >= s.history_limit {
        (Reason::HistoryTrimmed, format!("history-limit {} trimmed the oldest lines, including some not yet returned; every line the pane still holds is returned", s.history_limit))
    } else if s.history_size < old_history {
        (Reason::HistoryCleared, "the history was cleared (clear-history) after lines not yet returned had scrolled into it; every line the pane still holds is returned".to_string())
    } else {
        (Reason::Rewritten, "the last lines returned are no longer in the pane (screen cleared, resized or redrawn); every line the pane holds is returned".to_string())
    }
}

/// The answer for a cursor: find its place (directly where it should be, else
/// by searching the whole history), then the rows after it.
async fn since(
    session: &Session,
    mut pane: Pane,
    e: &SinceEntry,
    searched: bool,
    styled: bool,
) -> Result<Answer, ObserveError> {
    let w = e.window.len() as u64;
    let mut estimate = e.history_size;
    for _ in 0..3 {
        let start = e.frontier.saturating_sub(w) as i64 - estimate as i64 - MARGIN;
        let (p, g) = read(session, pane, start.min(0), styled).await?;
        pane = p;
        if let Some(a) = respawned_or_alternate(&g, e) {
            return Ok(a);
        }
        let s = g.state;
        let step = (s.history_limit / 10).max(1);
        let trim_risk = s.history_limit == 0 || s.history_size + step >= s.history_limit;
        let expected = e.frontier.saturating_sub(w);
        if !searched && !trim_risk && s.history_size >= e.history_size {
            match g.index(expected) {
                // Output arrived beyond the margin: read again from the new size.
                None if g.first > 0 => {
                    estimate = s.history_size;
                    continue;
                }
                Some(i)
                    if i + e.window.len() <= g.rows.len()
                        && g.hashes(i, i + e.window.len()) == e.window
                        && (w > 0 || expected >= g.first) =>
                {
                    return Ok(delta(&g, e.frontier, &e.pending, e, None));
                }
                _ => {}
            }
        }
        break;
    }
    // The grid moved (trimmed, cleared, reflowed): search the whole history.
    let (_, g) = read(session, pane, ALL_HISTORY, styled).await?;
    if let Some(a) = respawned_or_alternate(&g, e) {
        return Ok(a);
    }
    let s = g.state;
    let step = (s.history_limit / 10).max(1);
    let trim_risk = s.history_limit == 0 || s.history_size + step >= s.history_limit;
    if e.window.is_empty() {
        // Nothing above the place to find it by: it holds where nothing can
        // have moved it (no trim, no shrink), else the loss is reported.
        if !searched && !trim_risk && s.history_size >= e.history_size {
            return Ok(delta(&g, e.frontier, &e.pending, e, None));
        }
        if searched {
            if let [only] = g.find(&e.pending[..e.pending.len().min(1)])[..] {
                return Ok(delta(&g, g.first + only as u64, &e.pending, e, None));
            }
            return Ok(delta(&g, g.first, &[], e, missed(Reason::BaselineNotFound, "the screen at the key press is no longer in the pane; every line it holds is returned")));
        }
        let (reason, detail) = lost_reason(&g, e.history_size);
        return Ok(delta(&g, g.first, &[], e, missed(reason, detail)));
    }
    let mut found = g.find(&e.window);
    if found.len() > 1 && !searched {
        // Trimming moves rows up by whole steps of history-limit / 10.
        let expected = e.frontier.saturating_sub(w);
        found.retain(|&i| {
            let abs = g.first + i as u64;
            abs <= expected && (expected - abs).is_multiple_of(step)
        });
    }
    match found[..] {
        [i] => Ok(delta(&g, g.first + (i + e.window.len()) as u64, &e.pending, e, None)),
        [] if searched => Ok(delta(&g, g.first, &[], e, missed(Reason::BaselineNotFound, "the screen at the key press is no longer in the pane; every line it holds is returned"))),
        [] => {
            let (reason, detail) = lost_reason(&g, e.history_size);
            Ok(delta(&g, g.first, &[], e, missed(reason, detail)))
        }
        _ => Ok(delta(&g, g.first, &[], e, missed(Reason::Ambiguous, "the last lines returned occur more than once in the pane, so where they end is not certain; every line the pane holds is returned"))),
    }
}

/// A respawned pane (its earlier output is gone) and the alternate screen are
/// answered from the screen alone.
fn respawned_or_alternate(g: &Grid, e: &SinceEntry) -> Option<Answer> {
    let s = g.state;
    let screen_top = s.history_size;
    if s.pid != e.pid {
        let a = seed_answer(g, e, screen_top);
        return Some(Answer { missed: missed(Reason::Respawned, format!("the pane's process changed (pid {} -> {}): output of the old process not yet returned is lost; the screen of the new one is returned", e.pid, s.pid)), ..a });
    }
    if s.alternate {
        let i = g.index(screen_top).unwrap_or(g.rows.len());
        let screen = &g.rows[i..];
        let hash = row_hash(&screen.join("\n"));
        let lines = if e.alternate == Some(hash) {
            Vec::new()
        } else {
            trim_blank_tail(screen)
        };
        // Line tracking of the normal screen resumes when the program leaves.
        let entry = SinceEntry {
            alternate: Some(hash),
            ..e.clone()
        };
        return Some(Answer {
            lines,
            missed: None,
            entry,
            alternate: true,
            dead: s.dead,
        });
    }
    None
}

fn trim_blank_tail<R: Clone + std::ops::Deref<Target = str>>(rows: &[R]) -> Vec<R> {
    let last = rows
        .iter()
        .rposition(|x| !x.is_empty())
        .map_or(0, |i| i + 1);
    rows[..last].to_vec()
}

/// The visible screen as a first answer: its lines, and a cursor at the
/// terminal cursor's row.
fn seed_answer(g: &Grid, base: &SinceEntry, screen_top: u64) -> Answer {
    let mut a = delta(g, screen_top, &[], base, None);
    a.entry.pid = g.state.pid;
    a
}

/// Lines already captured at the key press (the screen), as the baseline of a
/// cursor that must find its place by searching.
fn from_handoff(h: &CursorEntry, pane: &Pane) -> SinceEntry {
    let raw = h.rows.raw();
    let rows: Vec<String> = raw
        .split(|b| *b == b'\n')
        .map(|r| decode_lines(r).pop().unwrap_or_default())
        .collect();
    let rows = trim_blank_tail(&rows);
    // The last non-blank row may be the line in progress (a prompt): it is
    // the baseline's pending row, the rows above locate it.
    let (window, pending) = match rows.split_last() {
        Some((last, above)) => (
            above[above.len().saturating_sub(WINDOW)..]
                .iter()
                .map(|r| row_hash(r))
                .collect(),
            vec![row_hash(last)],
        ),
        None => (Vec::new(), Vec::new()),
    };
    SinceEntry {
        pane_id: h.pane_id.clone(),
        pid: h.identity.pid,
        process_generation: Some(h.identity.generation.clone()),
        frontier: 0,
        window,
        pending,
        history_size: pane.history_size,
        alternate: None,
        handoff: true,
    }
}

/// The cursor's entry: a `capture_since` cursor, or the key binding's hand-off
/// (a `tmux_capture` tracking cursor; `searched`: its place is not known).
enum Base {
    Since(SinceEntry),
    Handoff(CursorEntry),
}

fn bad_cursor(why: &str) -> ToolOutput {
    read::fail(
        &format!("Invalid argument cursor: {why}. Nothing was sent to tmux."),
        Some("Omit cursor to start again (the result then holds a new cursor)."),
    )
}

pub async fn call(session: &Session, args: Args) -> ToolOutput {
    let broker = &session.broker;
    let id = &*args.pane_id;
    let styled = args.styles == Some(true);
    let caps = Caps {
        lines: args.max_lines.unwrap_or(DEFAULT_LINES).min(MAX_LINES) as usize,
        bytes: args.max_bytes.unwrap_or(DEFAULT_BYTES).min(MAX_BYTES) as usize,
        styled,
    };

    // The cursor first: an unknown one sends nothing to tmux.
    let base = match &args.cursor {
        None => None,
        Some(key) => match broker.retained.get(key, &session.view()).as_deref() {
            Some(Retained::Since(e)) if e.pane_id == id => Some(Base::Since(e.clone())),
            Some(Retained::Cursor(h)) if h.pane_id == id && h.generation == session.generation() => Some(Base::Handoff(h.clone())),
            Some(Retained::Since(e)) => return bad_cursor(&format!("it belongs to pane {}, not {id}", e.pane_id)),
            Some(Retained::Cursor(h)) if h.pane_id != id => return bad_cursor(&format!("it belongs to pane {}, not {id}", h.pane_id)),
            _ => return bad_cursor("no cursor of this broker has this value (unknown, expired after 600 s unused, or made before the broker restarted)"),
        },
    };
    let handoff = match &base {
        Some(Base::Since(e)) => e.handoff,
        Some(Base::Handoff(h)) => h.handoff,
        None => false,
    };
    // A handed-over pane is readable by any agent: the person consented for
    // this one pane; anything else is cut to the session's scope.
    let pane = if handoff {
        match observe::find_pane(broker, id, session.read_freshness()).await {
            Ok(p) => p,
            Err(e) => return observe_failure(id, &e),
        }
    } else {
        match read::resolve(session, id, session.read_freshness()).await {
            Ok(p) => p,
            Err(e) => return e,
        }
    };
    let (entry, searched) = match base {
        None => {
            let _place = match admitted(session).await {
                Ok(p) => p,
                Err(e) => return e,
            };
            let start = -(WINDOW as i64);
            let (_, g) = match read(session, pane, start, styled).await {
                Ok(r) => r,
                Err(e) => return observe_failure(id, &e),
            };
            let base = SinceEntry {
                pane_id: id.to_string(),
                pid: g.state.pid,
                process_generation: None,
                frontier: 0,
                window: Vec::new(),
                pending: Vec::new(),
                history_size: 0,
                alternate: None,
                handoff: false,
            };
            let mut a = match respawned_or_alternate(&g, &base) {
                Some(a) if g.state.alternate => a,
                _ => seed_answer(&g, &base, g.state.history_size),
            };
            a.entry.process_generation = process_generation(&session.broker, id, a.entry.pid);
            return finish(session, id, a, true, caps, None);
        }
        Some(Base::Since(e)) => (e, false),
        Some(Base::Handoff(h)) => (from_handoff(&h, &pane), true),
    };

    // A wait holds a wait place (capped like tmux_wait's), not a capture
    // place, and watches the terminal before the first read, so output between
    // that read and the wait is not missed. Without either, no wait happens
    // and the result says so (waitMs 0).
    let asked = args
        .wait_ms
        .map(|ms| ms.min((session.request_timeout_seconds * 1000.0) as u64));
    let waiting = match asked {
        Some(ms) if ms > 0 => match broker.admission.wait() {
            Ok(place) => broker.screen_events(&pane).await.ok().map(|w| (place, w)),
            Err(_) => None,
        },
        _ => None,
    };
    let wait = asked.map(|ms| if waiting.is_some() { ms } else { 0 });
    let watch = waiting.as_ref().map(|(_, w)| w);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(wait.unwrap_or(0));
    let mut answer = match since_admitted(session, &pane, &entry, searched, styled).await {
        Ok(a) => a,
        Err(e) => return e,
    };
    if let Some(w) = watch {
        // After a write, one more read once tmux has surely parsed it.
        let settle = Duration::from_millis(25);
        let mut recheck: Option<tokio::time::Instant> = None;
        while answer.lines.is_empty() && answer.missed.is_none() {
            let next = recheck.unwrap_or(deadline);
            tokio::select! {
                r = w.changed() => {
                    if r.is_err() {
                        break;
                    }
                    recheck = Some(tokio::time::Instant::now() + settle);
                }
                _ = tokio::time::sleep_until(next), if recheck.is_some() => recheck = None,
                _ = tokio::time::sleep_until(deadline) => break,
                _ = broker.server_gone() => break,
            }
            answer = match since_admitted(session, &pane, &entry, searched, styled).await {
                Ok(a) => a,
                Err(e) => return e,
            };
        }
    }
    // A respawn seen by the process backend although the pid is the same (a
    // pid reused by chance). The generation kept is only ever the one of the
    // pid this read saw, or none.
    let pg = process_generation(&session.broker, id, answer.entry.pid);
    if let (Some(old), Some(new)) = (&entry.process_generation, &pg) {
        if old != new && answer.missed.is_none() && answer.entry.pid == entry.pid {
            answer.missed = missed(Reason::Respawned, "the pane's process changed: output of the old process not yet returned may be lost");
        }
    }
    answer.entry.process_generation = pg;
    finish(session, id, answer, false, caps, wait)
}

/// A capture place (captures queue briefly, then are refused as overload).
async fn admitted(session: &Session) -> Result<tokio::sync::SemaphorePermit<'_>, ToolOutput> {
    session.broker.admission.capture().await.map_err(|refused| {
        read::fail(
            &format!("The broker is overloaded: {}.", refused.0),
            Some("Nothing was sent to tmux; retry shortly."),
        )
    })
}

/// [`since`] holding a capture place for its reads only.
async fn since_admitted(
    session: &Session,
    pane: &Pane,
    entry: &SinceEntry,
    searched: bool,
    styled: bool,
) -> Result<Answer, ToolOutput> {
    let _place = admitted(session).await?;
    since(session, pane.clone(), entry, searched, styled)
        .await
        .map_err(|e| observe_failure(&pane.id, &e))
}

/// The process generation the table holds for pane `id`, if tracked and the
/// table shows the process `pid` that the read saw (an older table would pair
/// the new pid with the old process).
fn process_generation(broker: &tmux_mcp_engine::Broker, id: &str, pid: u32) -> Option<String> {
    let snap = broker.registry.cached()?;
    let pane = snap.pane(id).filter(|p| p.pid == pid)?;
    match &pane.process {
        Ok(p) => Some(p.generation.clone()),
        Err(_) => None,
    }
}

/// A cursor: 128 random bits as 22 characters of URL-safe base64 (not the
/// 32 hex digits of other cursors: it appears twice in every result, and a
/// one-line delta is meant to cost little on the wire).
fn new_key() -> String {
    let mut buf = [0u8; 16];
    getrandom::fill(&mut buf).expect("OS random source unavailable");
    tmux_mcp_engine::capture::base64_encode(&buf)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_")
}

/// What a result may hold: `maxLines`, `maxBytes`, and whether styles are
/// asked for (their runs count against the bytes).
#[derive(Clone, Copy)]
struct Caps {
    lines: usize,
    bytes: usize,
    styled: bool,
}

/// A line's size against maxBytes: its text and LF, and its runs.
fn line_size(l: &StyledRow, styled: bool) -> usize {
    let runs = if styled {
        l.runs.iter().map(|r| StyleRun::of(0, r).size()).sum()
    } else {
        0
    };
    l.len() + 1 + runs
}

/// Tail-preserving caps: lines first, then bytes (whole lines from the start;
/// a single remaining line keeps its last bytes on a character boundary, and
/// its runs over them).
fn cap(mut lines: Vec<StyledRow>, caps: Caps) -> (Vec<StyledRow>, Option<Truncated>) {
    let mut t = Truncated { lines: 0, bytes: 0 };
    if lines.len() > caps.lines {
        let cut = lines.len() - caps.lines;
        t.lines = cut;
        t.bytes = lines[..cut].iter().map(|l| l.len() + 1).sum();
        lines.drain(..cut);
    }
    // The last line has no LF.
    let mut size: usize = lines
        .iter()
        .map(|l| line_size(l, caps.styled))
        .sum::<usize>()
        .saturating_sub(1);
    while size > caps.bytes && lines.len() > 1 {
        let l = lines.remove(0);
        size -= line_size(&l, caps.styled);
        t.lines += 1;
        t.bytes += l.len() + 1;
    }
    if size > caps.bytes {
        let runs = line_size(&lines[0], caps.styled) - lines[0].len() - 1;
        // The runs of what is kept are fewer; when they alone are over, half
        // the bytes still go to the text.
        let room = if runs < caps.bytes {
            caps.bytes - runs
        } else {
            caps.bytes / 2
        };
        let (kept, omitted) = lines::tail_bytes(&lines[0], room as i64);
        t.bytes += omitted;
        lines[0] = lines[0].tail(kept);
    }
    (lines, (t.lines > 0 || t.bytes > 0).then_some(t))
}

fn finish(
    session: &Session,
    id: &str,
    a: Answer,
    seeded: bool,
    caps: Caps,
    wait: Option<u64>,
) -> ToolOutput {
    let key = new_key();
    let handoff = a.entry.handoff;
    // A hand-off chain stays readable by every agent, as its first cursor was.
    let owner = Owner {
        agent: Some(session.id),
        view: if handoff {
            View::Anyone
        } else {
            session.view()
        },
    };
    if session
        .broker
        .retained
        .insert(key.clone(), Retained::Since(a.entry), owner)
        .is_err()
    {
        return read::fail("The cursor could not be kept (retention budget).", None);
    }
    let (lines, truncated) = cap(a.lines, caps);
    let mut text = String::new();
    if let Some(m) = &a.missed {
        text.push_str(&format!("[lines missed on {id}: {}]\n", m.detail));
    }
    if let Some(t) = truncated {
        text.push_str(&format!(
            "[{} earlier lines ({} bytes) dropped by maxLines/maxBytes]\n",
            t.lines, t.bytes
        ));
    }
    if a.alternate && !lines.is_empty() {
        text.push_str("[full-screen program: the whole screen]\n");
    }
    for l in &lines {
        text.push_str(l);
        text.push('\n');
    }
    let styles: Option<Vec<StyleRun>> = caps.styled.then(|| {
        lines
            .iter()
            .enumerate()
            .flat_map(|(i, l)| l.runs.iter().map(move |r| StyleRun::of(i, r)))
            .collect()
    });
    match styles.as_deref() {
        Some([]) if !lines.is_empty() => text.push_str("[styles: none, all plain text]\n"),
        Some(runs) if !runs.is_empty() => {
            text.push_str("[styles, as line:col+len style]\n");
            for r in runs {
                text.push_str(&r.text());
                text.push('\n');
            }
        }
        _ => {}
    }
    text.push_str(&match (seeded, lines.is_empty()) {
        (true, _) => format!("[watching {id}; next: cursor {key}]"),
        (false, true) => format!("[nothing new on {id}; cursor {key}]"),
        (false, false) => format!("[cursor {key}]"),
    });
    let out = Out {
        pane_id: id.to_string(),
        cursor: key,
        lines: lines.into_iter().map(|l| l.text).collect(),
        lines_missed: a.missed.is_some(),
        missed: a.missed,
        seeded,
        truncated,
        wait_ms: wait,
        alternate_screen: a.alternate,
        pane_dead: a.dead,
        styles,
    };
    ToolOutput::typed(&out, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(history_size: u64, cursor_y: u64, first: u64, rows: &[&str]) -> Grid {
        let state = State {
            history_size,
            history_limit: 2000,
            cursor_y,
            height: 10,
            alternate: false,
            pid: 1,
            dead: false,
        };
        Grid {
            state,
            first,
            rows: rows
                .iter()
                .map(|r| StyledRow::plain(r.to_string()))
                .collect(),
        }
    }

    fn texts(a: &Answer) -> Vec<&str> {
        a.lines.iter().map(|l| l.text.as_str()).collect()
    }

    fn entry() -> SinceEntry {
        SinceEntry {
            pane_id: "%1".into(),
            pid: 1,
            process_generation: None,
            frontier: 0,
            window: vec![],
            pending: vec![],
            history_size: 0,
            alternate: None,
            handoff: false,
        }
    }

    #[test]
    fn delta_returns_complete_lines_and_the_line_in_progress_once() {
        // Screen: a, b, "$ " (cursor on row 2), blank rows below.
        let g = grid(0, 2, 0, &["a", "b", "$ ", "", ""]);
        let a = delta(&g, 0, &[], &entry(), None);
        assert_eq!(texts(&a), ["a", "b", "$ "]);
        assert_eq!(a.entry.frontier, 2);
        assert_eq!(a.entry.window, vec![row_hash("a"), row_hash("b")]);
        assert_eq!(a.entry.pending, vec![row_hash("$ ")]);
        // Unchanged: nothing new.
        let b = delta(&g, 2, &a.entry.pending, &a.entry, None);
        assert!(b.lines.is_empty(), "{:?}", b.lines);
        // The prompt line got a command and output followed.
        let g = grid(0, 4, 0, &["a", "b", "$ ls", "x", "$ ", ""]);
        let c = delta(&g, 2, &a.entry.pending, &a.entry, None);
        assert_eq!(texts(&c), ["$ ls", "x", "$ "]);
    }

    #[test]
    fn blank_lines_above_the_cursor_are_lines() {
        let g = grid(0, 3, 0, &["a", "", "", "", ""]);
        assert_eq!(texts(&delta(&g, 0, &[], &entry(), None)), ["a", "", ""]);
    }

    #[test]
    fn find_locates_a_window_anywhere() {
        let g = grid(5, 0, 0, &["p", "q", "r", "q", "r", "s"]);
        assert_eq!(g.find(&[row_hash("q"), row_hash("r")]), vec![1, 3]);
        assert_eq!(g.find(&[row_hash("r"), row_hash("s")]), vec![4]);
        assert!(g.find(&[]).is_empty());
    }

    #[test]
    fn caps_keep_the_tail_and_count_what_they_drop() {
        let v = |xs: &[&str]| {
            xs.iter()
                .map(|s| StyledRow::plain(s.to_string()))
                .collect::<Vec<_>>()
        };
        let caps = |lines, bytes| Caps {
            lines,
            bytes,
            styled: false,
        };
        assert_eq!(
            cap(v(&["a", "b", "c"]), caps(2, 100)),
            (v(&["b", "c"]), Some(Truncated { lines: 1, bytes: 2 }))
        );
        assert_eq!(
            cap(v(&["aaaa", "bb", "cc"]), caps(10, 5)),
            (v(&["bb", "cc"]), Some(Truncated { lines: 1, bytes: 5 }))
        );
        assert_eq!(
            cap(v(&["abcdef"]), caps(10, 3)),
            (v(&["def"]), Some(Truncated { lines: 0, bytes: 3 }))
        );
        assert_eq!(cap(v(&["a"]), caps(10, 3)), (v(&["a"]), None));
    }

    #[test]
    fn styled_runs_count_against_max_bytes_and_follow_a_cut_line() {
        let rows = styles::parse(b"old\n\x1b[31mred\x1b[0m tail");
        let run = StyleRun::of(0, &rows[1].runs[0]).size();
        assert_eq!(run, r#"{"line":0,"col":0,"len":3,"fg":"red"}"#.len() + 1);
        let styled = Caps {
            lines: 10,
            bytes: 8 + run,
            styled: true,
        };
        // Both texts fit 12 bytes, not with the run: the older line goes.
        let (kept, t) = cap(rows.clone(), styled);
        assert_eq!(kept, rows[1..]);
        assert_eq!(t, Some(Truncated { lines: 1, bytes: 4 }));
        // Plain, the same bytes keep both lines.
        let plain = Caps {
            styled: false,
            ..styled
        };
        assert_eq!(cap(rows.clone(), plain).0.len(), 2);
        // One line cut to its tail keeps the runs over what is left.
        let (kept, _) = cap(
            rows[1..].to_vec(),
            Caps {
                bytes: 6 + run,
                ..styled
            },
        );
        assert_eq!(kept[0].text, "d tail");
        assert_eq!(kept[0].runs.len(), 1);
        assert_eq!((kept[0].runs[0].col, kept[0].runs[0].len), (0, 1));
    }

    #[test]
    fn state_parses_or_refuses() {
        assert_eq!(
            parse_state("12 2000 3 24 0 4242 0"),
            Some(State {
                history_size: 12,
                history_limit: 2000,
                cursor_y: 3,
                height: 24,
                alternate: false,
                pid: 4242,
                dead: false
            })
        );
        assert_eq!(parse_state(""), None);
        assert_eq!(parse_state("1 2 x 4 0 5 0"), None);
    }
}
