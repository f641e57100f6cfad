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

use crate::marks::{Command, Output};
use crate::registry::Pane;
use crate::since;
use crate::state::Broker;
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
            b.marks.read(&pane);
            let changed = b.marks.take_pending(&pane);
            for seq in changed.started {
                started(&b, &pane, seq).await;
            }
            for seq in changed.ended {
                ended(&b, &pane, seq).await;
            }
            let listed = table.as_ref().is_none_or(|t| t.pane(&pane).is_some());
            if !listed && b.marks.shell(&pane).is_none() {
                b.marks.forget(&pane);
            }
        }
    }
}

fn pane_of(b: &Broker, id: &str) -> Option<Pane> {
    b.registry.cached()?.pane(id).cloned()
}

/// Finds the row the command's output starts at: below the command line the
/// shell echoed, the nearest row above the cursor ending with the command's
/// last line; else the cursor's row.
async fn started(b: &Arc<Broker>, id: &str, seq: u64) {
    let (Some(pane), Some(cmd)) = (pane_of(b, id), b.marks.command(id, seq)) else {
        return;
    };
    // The mark can come before tmux has read the shell's last drawing of
    // the command line: a grid without it is read again, a few times.
    let mut first_cursor = None;
    for _ in 0..START_READS {
        let Ok((_, grid)) = since::read(b, pane.clone(), 0, false).await else {
            break;
        };
        let cursor = grid.cursor_abs();
        if let Some(row) = start_row(&grid, cursor, &cmd) {
            b.marks.set_start_row(id, seq, row);
            return;
        }
        first_cursor.get_or_insert(cursor);
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    if let Some(cursor) = first_cursor {
        b.marks.set_start_row(id, seq, cursor);
    }
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
/// line wider than the pane wraps onto several), ends with `last`.
fn ends_with_line(grid: &since::Grid, i: usize, last: &str) -> bool {
    let mut shown = grid.rows[i].trim_end().to_string();
    // The line's last row holds its end: the whole line, or (wrapped) only
    // its tail; a blank row below it is not it.
    if shown.is_empty() || !(shown.ends_with(last) || last.ends_with(shown.as_str())) {
        return false;
    }
    let mut j = i;
    loop {
        if shown.ends_with(last) {
            return true;
        }
        if j == 0 || shown.len() > last.len() + 4096 {
            return false;
        }
        j -= 1;
        shown.insert_str(0, &grid.rows[j]);
    }
}

async fn ended(b: &Arc<Broker>, id: &str, seq: u64) {
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
    let out = read_rows(b, &pane, start).await;
    b.marks.set_output(id, seq, out);
}

/// The rows from `start` to the cursor (the last [`MAX_ROWS`]).
async fn read_rows(b: &Arc<Broker>, pane: &Pane, start: u64) -> Result<Output, String> {
    // The state first: where the cursor is now, to read no more than needed.
    match since::read(b, pane.clone(), 0, false).await {
        Ok((_, now)) => {
            let cursor = now.cursor_abs();
            let from = start.max(cursor.saturating_sub(MAX_ROWS));
            let rel = from as i64 - now.state.history_size as i64;
            match since::read(b, pane.clone(), rel, false).await {
                Ok((_, g)) => Ok(rows(&g, start, from, cursor)),
                Err(e) => Err(e.why().to_string()),
            }
        }
        Err(e) => Err(e.why().to_string()),
    }
}

fn rows(g: &since::Grid, start: u64, from: u64, cursor: u64) -> Output {
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
    Output {
        lines,
        dropped: (from - start) as usize,
        note,
    }
}
