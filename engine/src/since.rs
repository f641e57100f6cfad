//! The grid model of `capture_since` (docs/spec.md C.2): which of a pane's
//! rows are new since a cursor ([`SinceEntry`]), found again when history was
//! trimmed or cleared or the grid reflowed, and what was lost when it cannot
//! be ([`Lost`]). Every read is one guarded `capture-pane` that also expands
//! the pane's state in the same command queue
//! (`observe::capture_range_with_state`), so rows and state agree. It knows
//! nothing of MCP: the broker's `capture_since` spells its answers.

use crate::capture::{CursorEntry, SinceEntry};
use crate::lines::decode_lines;
use crate::observe::{self, ObserveError};
use crate::registry::Pane;
use crate::styles::{self, StyledRow};
use crate::Broker;
use std::hash::{Hash, Hasher};

/// Rows above the cursor's place kept (as hashes) to find it again.
pub const WINDOW: usize = 8;

/// Extra rows captured above the expected place: output that arrived since the
/// last known history size shifts it by that much.
const MARGIN: i64 = 32;

/// `-S` far enough back to mean "from the start of history" (tmux clamps).
const ALL_HISTORY: i64 = -(1 << 30);

const STATE: &str = "#{history_size} #{history_limit} #{cursor_y} #{pane_height} #{alternate_on} #{pane_pid} #{pane_dead}";

/// Why lines a cursor has not returned yet cannot be: the broker publishes
/// each as `missed.reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
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

pub fn row_hash(row: &str) -> u64 {
    // Fixed keys: a hash is compared only within this broker's lifetime.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    row.hash(&mut h);
    h.finish()
}

/// The pane's state, read in the capture's own queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    pub history_size: u64,
    pub history_limit: u64,
    pub cursor_y: u64,
    pub height: u64,
    pub alternate: bool,
    pub pid: u32,
    pub dead: bool,
}

pub fn parse_state(s: &str) -> Option<State> {
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
pub struct Grid {
    pub state: State,
    /// Absolute row of `rows[0]`.
    pub first: u64,
    /// The rows' text (what the grid logic compares) and, in a styled read,
    /// their runs.
    pub rows: Vec<StyledRow>,
}

impl Grid {
    pub fn hashes(&self, from: usize, to: usize) -> Vec<u64> {
        self.rows[from..to].iter().map(|r| row_hash(r)).collect()
    }

    /// Index in `rows` of absolute row `abs`, if captured.
    pub fn index(&self, abs: u64) -> Option<usize> {
        abs.checked_sub(self.first)
            .map(|i| i as usize)
            .filter(|i| *i <= self.rows.len())
    }

    pub fn cursor_abs(&self) -> u64 {
        self.state.history_size + self.state.cursor_y
    }

    /// Where `window` sits, searched over the whole capture: every start index.
    pub fn find(&self, window: &[u64]) -> Vec<usize> {
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
pub async fn read(
    broker: &Broker,
    pane: Pane,
    start: i64,
    styled: bool,
) -> Result<(Pane, Grid), ObserveError> {
    let (pane, state, out) =
        observe::capture_range_with_state(broker, pane, Some(start), None, false, styled, STATE)
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
pub struct Answer {
    pub lines: Vec<StyledRow>,
    pub lost: Option<Loss>,
    pub entry: SinceEntry,
    pub alternate: bool,
    pub dead: bool,
}

/// Everything from absolute row `frontier` on, minus the already returned
/// in-progress rows (`pending`) when unchanged; and the cursor entry after it.
pub fn delta(
    g: &Grid,
    frontier: u64,
    pending: &[u64],
    base: &SinceEntry,
    lost: Option<Loss>,
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
        lost,
        entry,
        alternate: false,
        dead: g.state.dead,
    }
}

/// What was lost, and why in words.
#[derive(Debug, Clone)]
pub struct Loss {
    pub reason: Lost,
    pub detail: String,
}

pub fn loss(reason: Lost, detail: impl Into<String>) -> Option<Loss> {
    Some(Loss {
        reason,
        detail: detail.into(),
    })
}

/// Why the place of a cursor could not be found, from the two states.
fn lost_reason(g: &Grid, old_history: u64) -> (Lost, String) {
    let s = &g.state;
    let step = (s.history_limit / 10).max(1);
    if s.history_limit == 0 || s.history_size + step >= s.history_limit {
        (Lost::HistoryTrimmed, format!("history-limit {} trimmed the oldest lines, including some not yet returned; every line the pane still holds is returned", s.history_limit))
    } else if s.history_size < old_history {
        (Lost::HistoryCleared, "the history was cleared (clear-history) after lines not yet returned had scrolled into it; every line the pane still holds is returned".to_string())
    } else {
        (Lost::Rewritten, "the last lines returned are no longer in the pane (screen cleared, resized or redrawn); every line the pane holds is returned".to_string())
    }
}

/// The answer for a cursor: find its place (directly where it should be, else
/// by searching the whole history), then the rows after it.
pub async fn since(
    broker: &Broker,
    mut pane: Pane,
    e: &SinceEntry,
    searched: bool,
    styled: bool,
) -> Result<Answer, ObserveError> {
    let w = e.window.len() as u64;
    let mut estimate = e.history_size;
    for _ in 0..3 {
        let start = e.frontier.saturating_sub(w) as i64 - estimate as i64 - MARGIN;
        let (p, g) = read(broker, pane, start.min(0), styled).await?;
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
    let (_, g) = read(broker, pane, ALL_HISTORY, styled).await?;
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
            return Ok(delta(&g, g.first, &[], e, loss(Lost::BaselineNotFound, "the screen at the key press is no longer in the pane; every line it holds is returned")));
        }
        let (reason, detail) = lost_reason(&g, e.history_size);
        return Ok(delta(&g, g.first, &[], e, loss(reason, detail)));
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
        [] if searched => Ok(delta(&g, g.first, &[], e, loss(Lost::BaselineNotFound, "the screen at the key press is no longer in the pane; every line it holds is returned"))),
        [] => {
            let (reason, detail) = lost_reason(&g, e.history_size);
            Ok(delta(&g, g.first, &[], e, loss(reason, detail)))
        }
        _ => Ok(delta(&g, g.first, &[], e, loss(Lost::Ambiguous, "the last lines returned occur more than once in the pane, so where they end is not certain; every line the pane holds is returned"))),
    }
}

/// A respawned pane (its earlier output is gone) and the alternate screen are
/// answered from the screen alone.
pub fn respawned_or_alternate(g: &Grid, e: &SinceEntry) -> Option<Answer> {
    let s = g.state;
    let screen_top = s.history_size;
    if s.pid != e.pid {
        let a = seed_answer(g, e, screen_top);
        return Some(Answer { lost: loss(Lost::Respawned, format!("the pane's process changed (pid {} -> {}): output of the old process not yet returned is lost; the screen of the new one is returned", e.pid, s.pid)), ..a });
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
            lost: None,
            entry,
            alternate: true,
            dead: s.dead,
        });
    }
    None
}

pub fn trim_blank_tail<R: Clone + std::ops::Deref<Target = str>>(rows: &[R]) -> Vec<R> {
    let last = rows
        .iter()
        .rposition(|x| !x.is_empty())
        .map_or(0, |i| i + 1);
    rows[..last].to_vec()
}

/// The visible screen as a first answer: its lines, and a cursor at the
/// terminal cursor's row.
pub fn seed_answer(g: &Grid, base: &SinceEntry, screen_top: u64) -> Answer {
    let mut a = delta(g, screen_top, &[], base, None);
    a.entry.pid = g.state.pid;
    a
}

/// Lines already captured at the key press (the screen), as the baseline of a
/// cursor that must find its place by searching.
pub fn from_handoff(h: &CursorEntry, pane: &Pane) -> SinceEntry {
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
    pub fn find_locates_a_window_anywhere() {
        let g = grid(5, 0, 0, &["p", "q", "r", "q", "r", "s"]);
        assert_eq!(g.find(&[row_hash("q"), row_hash("r")]), vec![1, 3]);
        assert_eq!(g.find(&[row_hash("r"), row_hash("s")]), vec![4]);
        assert!(g.find(&[]).is_empty());
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
