//! Follows what enrolled shells write ([`crate::marks`]) as they write it:
//! the platform's watch on the marks directory (Linux: inotify; every mark
//! is a write in it), else a look every 250 ms (macOS, where writes to a
//! file in a directory raise no event on the directory). For each command
//! it keeps what the command printed, from the grid: where its output starts
//! (the row after its command line, found from the cursor when it started)
//! and the rows to the cursor when its shell was back at the prompt.
//!
//! Reading rows is a guarded capture like any read: with an
//! `after-capture-pane` hook set the broker captures nothing and says so.
//!
//! Output starts below the command line the shell echoed: the nearest row
//! above the cursor that ends with the command's last line; else, when the
//! grid has fewer rows than at its last read (a `clear` ran before the line
//! was read), the first row after the clear; else the cursor's row. It reads no pane table of its own: it uses the registry's
//! last one. It forgets a pane that is gone from that table once its shell
//! has exited.

use crate::marks::{Command, Output, Start};
use crate::registry::Pane;
use crate::since;
use crate::state::Broker;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tmux_mcp_core::platform::{Watch, WatchFor};

/// Rows of one command's output read at most (its last ones).
const MAX_ROWS: u64 = 5_000;

/// Runs until the broker goes. It reads no pane table of its own (a table
/// read is a tmux command): a pane's marks go when the pane is not in the
/// last table read and its shell has exited.
pub async fn follow(broker: Weak<Broker>, dir: PathBuf) {
    let watch = dir
        .to_str()
        .and_then(|d| Watch::new(d, WatchFor::Writes).ok());
    // Where each pane's grid was when the broker last read it for a command.
    let mut seen: HashMap<String, Seen> = HashMap::new();
    loop {
        match &watch {
            Some(w) => {
                let _ = w.changed().await;
            }
            None => tokio::time::sleep(Duration::from_millis(250)).await,
        }
        let Some(b) = broker.upgrade() else { return };
        let table = b.registry.cached();
        for pane in b.marks.files() {
            // Which terminal is the pane's, before its marks are read.
            if let Some(p) = table.as_ref().and_then(|t| t.pane(&pane)) {
                use std::os::unix::fs::MetadataExt;
                if let Ok(m) = std::fs::metadata(&p.tty) {
                    b.marks.set_tty(&pane, m.rdev());
                }
            }
            b.marks.read(&pane);
            let changed = b.marks.take_pending(&pane);
            for seq in changed.started {
                started(&b, &pane, seq, &mut seen).await;
            }
            for seq in changed.ended {
                ended(&b, &pane, seq, &mut seen).await;
            }
            let listed = table.as_ref().is_none_or(|t| t.pane(&pane).is_some());
            if !listed && b.marks.shell(&pane).is_none() {
                b.marks.forget(&pane);
                seen.remove(&pane);
            }
        }
    }
}

fn pane_of(b: &Broker, id: &str) -> Option<Pane> {
    b.registry.cached()?.pane(id).cloned()
}

/// Where a pane's grid was at a read: rows only ever add up, so a grid
/// with fewer rows of history, or its cursor higher, was cleared since.
#[derive(Debug, Clone, Copy)]
struct Seen {
    history_size: u64,
    cursor: u64,
}

impl Seen {
    fn of(state: &since::State) -> Seen {
        Seen {
            history_size: state.history_size,
            cursor: state.history_size + state.cursor_y,
        }
    }
}

/// Finds the row the command's output starts at: below the command line the
/// shell echoed, the nearest row above the cursor ending with the command's
/// last line; else, when the grid was cleared since the pane was last read
/// (a `clear` that ran before the broker read the line), the first row
/// after the clear; else the cursor's row.
async fn started(b: &Arc<Broker>, id: &str, seq: u64, seen: &mut HashMap<String, Seen>) {
    let (Some(pane), Some(cmd)) = (pane_of(b, id), b.marks.command(id, seq)) else {
        return;
    };
    // The mark can come before tmux has read the shell's last drawing of
    // the command line: a grid without it is read again, a few times.
    let mut first_cursor = None;
    let mut last = None;
    for _ in 0..START_READS {
        let Ok((_, grid)) = since::read(b, pane.clone(), 0, false).await else {
            break;
        };
        let cursor = grid.cursor_abs();
        if let Some(row) = start_row(&grid, cursor, &cmd) {
            let prompt = prompt_tail(&grid, row, &cmd);
            b.marks
                .set_start_row(id, seq, row, Start::BelowLine(prompt));
            seen.insert(id.to_string(), Seen::of(&grid.state));
            return;
        }
        first_cursor.get_or_insert(cursor);
        last = Some(grid.state);
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let (Some(cursor), Some(now)) = (first_cursor, last) else {
        return;
    };
    let start = match seen.get(id).and_then(|before| cleared_since(before, &now)) {
        Some(row) => (row, Start::Cleared),
        None => (cursor, Start::Cursor),
    };
    b.marks.set_start_row(id, seq, start.0, start.1);
    seen.insert(id.to_string(), Seen::of(&now));
}

/// The first row after a clear, when `now` shows the grid was cleared since
/// `before`. Rows only add up: a command's line is drawn at or below the
/// cursor of the last read, and accepting it moves the cursor down a row.
/// So a history shorter than before (`clear` empties it: the rows start
/// again at 0), or the cursor no lower than before (the screen alone
/// cleared: its top), tell a clear. `None` when the grid grew as it does
/// without one, when the history is full (its rows no longer add up), or
/// on the alternate screen (a full-screen program's rows are not output).
fn cleared_since(before: &Seen, now: &since::State) -> Option<u64> {
    if now.alternate {
        return None;
    }
    if now.history_size < before.history_size {
        return Some(0);
    }
    let full = now.history_limit > 0 && now.history_size >= now.history_limit;
    (!full && Seen::of(now).cursor <= before.cursor).then_some(now.history_size)
}

/// What the prompt's row showed before a one-line command that did not wrap
/// (`$ ` of `$ printf abc`); `None` otherwise.
fn prompt_tail(grid: &since::Grid, row: u64, cmd: &Command) -> Option<String> {
    let text = cmd.text.trim_end();
    if text.is_empty() || text.contains('\n') {
        return None;
    }
    let i = grid.index(row.checked_sub(1)?)?;
    let shown = grid.rows.get(i)?.trim_end();
    let before = shown.strip_suffix(text)?;
    // A wrapped command's last row holds only its tail; its prompt is rows
    // above: not told here.
    (!before.trim().is_empty()).then(|| before.to_string())
}

/// How often the grid is read for a command's line before its output is
/// taken to start at the cursor.
const START_READS: usize = 4;

/// The row after the command line the shell drew (the nearest above the
/// cursor ending with the command's last line, wrapped rows joined); `None`
/// when no row shows it.
fn start_row(grid: &since::Grid, cursor: u64, cmd: &Command) -> Option<u64> {
    let last = cmd.text.lines().last().unwrap_or_default().trim_end();
    if last.is_empty() {
        return Some(cursor);
    }
    let at = grid.index(cursor)?;
    (0..=at.min(grid.rows.len().saturating_sub(1)))
        .rev()
        .find(|&i| ends_with_line(grid, i, last))
        .map(|i| grid.first + i as u64 + 1)
}

/// Whether row `i`, with the rows before it that it continues (a command
/// line wider than the pane wraps onto several), ends with `last`. Compared
/// without blanks: a captured row loses the spaces it ends with, so a line
/// wrapped at a space joins without it.
fn ends_with_line(grid: &since::Grid, i: usize, last: &str) -> bool {
    let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let last = squeeze(last);
    let mut shown = squeeze(&grid.rows[i]);
    // The line's last row holds its end: the whole line, or (wrapped) only
    // its tail; a blank row below it is not it.
    if shown.is_empty() || !(shown.ends_with(&last) || last.ends_with(shown.as_str())) {
        return false;
    }
    let mut j = i;
    loop {
        if shown.ends_with(&last) {
            return true;
        }
        if j == 0 || shown.len() > last.len() + 4096 {
            return false;
        }
        j -= 1;
        shown.insert_str(0, &squeeze(&grid.rows[j]));
    }
}

async fn ended(b: &Arc<Broker>, id: &str, seq: u64, seen: &mut HashMap<String, Seen>) {
    let (Some(pane), Some(cmd)) = (pane_of(b, id), b.marks.command(id, seq)) else {
        return;
    };
    let Some(start) = cmd.start_row else {
        b.marks.set_output(
            id,
            seq,
            Err("the broker did not see where the command's output started".into()),
        );
        return;
    };
    // Whose mark ends output without a newline (fish's): the pane's shell.
    let shell = b.marks.shell(id).map(|s| s.shell.name).unwrap_or_default();
    let mut out = read_rows(b, &pane, start, &cmd, &shell).await;
    // Output without a final newline has the prompt drawn after it on the
    // cursor's row; the grid can be read before the shell drew it: read
    // again, a few times, while the cursor's row holds something else.
    for _ in 0..END_READS {
        if !matches!(&out, Ok((_, Tail::Unsettled, _))) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(3)).await;
        out = read_rows(b, &pane, start, &cmd, &shell).await;
    }
    if let Ok((_, _, now)) = &out {
        seen.insert(id.to_string(), *now);
    }
    b.marks.set_output(id, seq, out.map(|(o, _, _)| o));
}

/// How often an ended command's rows are read again while the prompt after
/// it is not drawn yet.
const END_READS: usize = 4;

/// What the cursor's row held when the rows were read.
#[derive(Debug, PartialEq)]
enum Tail {
    /// Nothing, the prompt alone, or output the prompt was drawn after.
    Settled,
    /// Something that does not end with the prompt seen before the command.
    Unsettled,
}

/// The rows from `start` to the cursor (the last [`MAX_ROWS`]), and where
/// the grid was.
async fn read_rows(
    b: &Arc<Broker>,
    pane: &Pane,
    start: u64,
    cmd: &Command,
    shell: &str,
) -> Result<(Output, Tail, Seen), String> {
    // The state first: where the cursor is now, to read no more than needed.
    let (_, now) = since::read(b, pane.clone(), 0, false)
        .await
        .map_err(|e| e.why().to_string())?;
    let s = &now.state;
    let seen = Seen::of(s);
    let cursor = now.cursor_abs();
    let floor = cursor.saturating_sub(MAX_ROWS);
    let full = s.history_limit > 0 && s.history_size >= s.history_limit;
    // The command's line, once in the history, stays there unless the
    // history is cleared (`clear` sends E3): the row above the output is
    // read too, to see that it still shows the line.
    let above = start
        .checked_sub(1)
        .filter(|&r| cmd.line_above && !full && r >= floor && r < s.history_size);
    let from = start.max(floor);
    let read_from = above.unwrap_or(from).min(from);
    let rel = read_from as i64 - s.history_size as i64;
    let (_, mut g) = since::read(b, pane.clone(), rel, false)
        .await
        .map_err(|e| e.why().to_string())?;
    let last = cmd.text.lines().last().unwrap_or_default().trim_end();
    let gone = above.is_some_and(|r| {
        !g.index(r)
            .is_some_and(|i| i < g.rows.len() && ends_with_line(&g, i, last))
    });
    if cursor < start || gone {
        // Cleared while it ran: what the pane still holds is after the clear.
        if read_from > floor {
            let rel = floor as i64 - s.history_size as i64;
            g = since::read(b, pane.clone(), rel, false)
                .await
                .map_err(|e| e.why().to_string())?
                .1;
        }
        let mut out = rows(&g, floor, floor, cursor, cmd, shell);
        out.0.note = Some(CLEARED.to_string());
        return Ok((out.0, out.1, seen));
    }
    let mut out = rows(&g, start, from, cursor, cmd, shell);
    if cmd.cleared_at_start {
        out.0.note = Some(CLEARED.to_string());
    }
    if shell == "zsh" && !out.0.unterminated {
        let o = &mut out.0;
        let row = from + o.lines.len() as u64;
        if let Some(last) = o.lines.last_mut() {
            if last.ends_with(['%', '#']) && zsh_mark(b, pane, row - 1, s.history_size).await {
                last.pop();
                o.unterminated = true;
            }
        }
    }
    Ok((out.0, out.1, seen))
}

/// The note of rows read after a clear.
const CLEARED: &str = "the pane's screen and history were cleared while the command ran (`clear`): these are the rows printed after that";

/// Whether the last character of row `abs` is zsh's `PROMPT_SP` mark: its
/// default `PROMPT_EOL_MARK` (`%`, `#` as root) is drawn in standout
/// (reverse), which output that ends with `%` is not.
async fn zsh_mark(b: &Arc<Broker>, pane: &Pane, abs: u64, history_size: u64) -> bool {
    let rel = abs as i64 - history_size as i64;
    let Ok((_, g)) = since::read(b, pane.clone(), rel, true).await else {
        return false;
    };
    let Some(row) = g.rows.first() else {
        return false;
    };
    let Some(col) = row.text.trim_end().chars().count().checked_sub(1) else {
        return false;
    };
    row.runs
        .iter()
        .find(|r| r.col <= col && col < r.col + r.len)
        .is_some_and(|r| r.style.attributes().contains(&"reverse"))
}

fn rows(
    g: &since::Grid,
    start: u64,
    from: u64,
    cursor: u64,
    cmd: &Command,
    shell: &str,
) -> (Output, Tail) {
    let mut note = None;
    let s = &g.state;
    if s.history_limit > 0 && s.history_size >= s.history_limit {
        note = Some("the pane's history was full (history-limit): its oldest rows went, so these rows may begin later than the output did".to_string());
    }
    let (a, z) = (
        g.index(from).unwrap_or(0),
        g.index(cursor).unwrap_or(g.rows.len()),
    );
    let mut lines: Vec<String> = g.rows[a.min(g.rows.len())..z.min(g.rows.len())]
        .iter()
        .map(|r| r.trim_end().to_string())
        .collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let mut unterminated = false;
    let mut tail = Tail::Settled;
    // The cursor's row: empty, or the prompt; or output without a final
    // newline with the prompt drawn after it (bash). Before the prompt is
    // drawn it holds the output alone: unsettled, read again.
    let at = g.rows.get(z).map(|r| r.trim_end()).unwrap_or_default();
    if z >= a && !at.is_empty() {
        match cmd.prompt_tail.as_deref().map(str::trim_end) {
            Some(p) if at == p => {}
            Some(p) if at.ends_with(p) => {
                lines.push(at[..at.len() - p.len()].to_string());
                unterminated = true;
            }
            Some(_) => tail = Tail::Unsettled,
            None => {}
        }
    }
    // zsh (PROMPT_SP) and fish end output without a final newline with a
    // mark of their own, then start the prompt on a new row.
    if !unterminated {
        if let Some(l) = lines.last_mut() {
            if let Some(cut) = end_mark(shell, l) {
                l.truncate(cut);
                unterminated = true;
            }
        }
    }
    let out = Output {
        lines,
        dropped: (from - start) as usize,
        note,
        unterminated,
    };
    (out, tail)
}

/// Where the shell's own end-of-output mark starts on the last row, if it
/// ends with one: fish's `⏎`; zsh's default `PROMPT_EOL_MARK` (`%`, `#` as
/// root) is not told from text that ends the same way, so only fish's.
fn end_mark(shell: &str, row: &str) -> Option<usize> {
    (shell == "fish")
        .then(|| row.strip_suffix('⏎').map(str::len))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(history_size: u64, cursor_y: u64) -> since::State {
        since::State {
            history_size,
            history_limit: 2000,
            cursor_y,
            height: 50,
            alternate: false,
            pid: 1,
            dead: false,
        }
    }

    fn seen(history_size: u64, cursor_y: u64) -> Seen {
        Seen::of(&state(history_size, cursor_y))
    }

    #[test]
    fn a_grid_that_grew_was_not_cleared() {
        // A command's line accepted: the cursor a row lower, or the screen
        // scrolled into the history.
        assert_eq!(cleared_since(&seen(0, 5), &state(0, 6)), None);
        assert_eq!(cleared_since(&seen(10, 49), &state(11, 49)), None);
    }

    #[test]
    fn a_shorter_history_is_a_clear_and_its_rows_start_again_at_0() {
        assert_eq!(cleared_since(&seen(300, 49), &state(0, 1)), Some(0));
        // Cleared, then output scrolled some rows into it again.
        assert_eq!(cleared_since(&seen(300, 49), &state(12, 49)), Some(0));
    }

    #[test]
    fn a_cursor_no_lower_than_before_is_a_clear_of_the_screen() {
        // `clear; echo x` at a prompt on row 1: the cursor is back on row 1.
        assert_eq!(cleared_since(&seen(0, 1), &state(0, 1)), Some(0));
        // The screen alone cleared, the history kept: its top.
        assert_eq!(cleared_since(&seen(40, 30), &state(40, 2)), Some(40));
    }

    #[test]
    fn a_full_history_or_the_alternate_screen_tells_nothing() {
        let mut full = state(2000, 49);
        assert_eq!(cleared_since(&seen(2000, 49), &full), None);
        full.history_size = 0;
        assert_eq!(cleared_since(&seen(2000, 49), &full), Some(0));
        let mut alternate = state(0, 0);
        alternate.alternate = true;
        assert_eq!(cleared_since(&seen(0, 30), &alternate), None);
    }
}
