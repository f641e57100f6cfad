//! Many panes captured in one tmux round trip (for reads across panes, such as
//! `search_panes`): one `show-hooks` preflight over the global table and every
//! session involved (`preflight`, once per call however many batches follow),
//! then one command list per tmux message holding, for each
//! pane, `if-shell -F -t %N GUARD 'list-commands -F "MARK" capture-pane ;
//! capture-pane -p -t %N -S -K'` (`list-commands` runs no hook; MARK names the
//! pane and a nonce of this call).
//!
//! The guard proves, in tmux's queue, what the parse relies on: the pane is
//! the one meant, its linking sessions are the ones checked, its height and
//! width are the table's, and it still has at least K lines of history. So a
//! pane whose guard holds prints its own marker line and then exactly K +
//! height rows; a pane whose guard fails prints nothing. The output is read
//! marker by marker with those counts: a row is never taken for a marker (the
//! counts say where markers are) and a pane cannot print another's marker (the
//! nonce is new each call). Anything that does not add up — a pane that failed
//! its guard, a marker that is not there, output left over — is left
//! to the single-pane path (`observe::capture_range`), which re-reads the table,
//! retries and reports exactly (including a hook set: refused, never captured).
//!
//! tmux 3.3a cannot check hooks inside the queue: as for single captures, a hook
//! set in the gap between the preflight and the captures cannot be excluded.

use crate::engine::Broker;
use crate::hooks;
use crate::registry::Pane;
use crate::tmux::quote::format_operand;
use crate::tmux::COMMAND_ARG_BYTES;

const HOOK: &str = "after-capture-pane";

fn marker(nonce: &str, pane: &str) -> String {
    format!("tmux-mcp-batch {nonce} {pane}")
}

/// What one pane of the batch gave.
pub enum Batched {
    /// tmux's stdout of `capture-pane -p -S -K` for this pane (K + height rows).
    Rows(Vec<u8>),
    /// Not captured here; read it with the single-pane path.
    Alone,
}

/// Proof, from one `show-hooks` preflight, that `after-capture-pane` was set
/// neither globally nor in any session linking the panes it was made for.
/// A caller that captures those panes in several batches asks once: every
/// batch after the first widens the gap in which a hook set meanwhile cannot
/// be excluded (tmux < 3.5 has no in-queue check), by one round trip each.
pub struct HooksClear {
    sessions: Vec<String>,
}

/// The preflight for `panes`; `None` when a hook is set (the single-pane path
/// then says which panes it concerns) or tmux could not say.
pub async fn preflight(broker: &Broker, panes: &[Pane]) -> Option<HooksClear> {
    let mut sessions: Vec<String> = panes.iter().flat_map(|p| p.placements.iter().map(|pl| pl.session_id.clone())).collect();
    sessions.sort();
    sessions.dedup();
    matches!(hooks::is_set(&broker.registry, HOOK, &sessions).await, Ok(false)).then_some(HooksClear { sessions })
}

/// Captures each pane of `panes` with up to `scrollback` lines of history (as
/// `capture-pane -S -scrollback`, clamped to what the pane holds). Without
/// an error of its own: whatever the batch could not do is `Alone`, and so is
/// a pane linked into a session `clear` did not check.
pub async fn capture(broker: &Broker, clear: &HooksClear, panes: &[Pane], scrollback: u64) -> Vec<Batched> {
    let mut out: Vec<Batched> = panes.iter().map(|_| Batched::Alone).collect();
    let checked = |p: &&Pane| p.placements.iter().all(|pl| clear.sessions.binary_search(&pl.session_id).is_ok());
    if panes.is_empty() || !panes.iter().all(|p| checked(&p)) {
        return out;
    }
    let nonce = crate::sys::random_hex(8);
    let plans: Vec<(usize, Vec<String>, usize)> = panes.iter().enumerate().filter_map(|(i, p)| plan(p, scrollback, &nonce).map(|(args, rows)| (i, args, rows))).collect();
    let mut chunk: Vec<&(usize, Vec<String>, usize)> = Vec::new();
    let mut used = 0;
    for item in &plans {
        let n: usize = item.1.iter().map(|a| a.len() + 1).sum::<usize>() + 2; // and the ";"
        if used + n > COMMAND_ARG_BYTES && !chunk.is_empty() {
            run_chunk(broker, &chunk, panes, &nonce, &mut out).await;
            chunk.clear();
            used = 0;
        }
        used += n;
        chunk.push(item);
    }
    if !chunk.is_empty() {
        run_chunk(broker, &chunk, panes, &nonce, &mut out).await;
    }
    out
}

/// The `if-shell` of one pane and the rows it prints when its guard holds;
/// `None` for a pane the batch does not take (no placement: gone).
fn plan(p: &Pane, scrollback: u64, nonce: &str) -> Option<(Vec<String>, usize)> {
    if p.placements.is_empty() {
        return None;
    }
    let k = scrollback.min(p.history_size);
    let mut guard = format!("#{{==:#{{pane_id}},{}}}", format_operand(&p.id));
    for (field, value) in [("window_linked_sessions", p.placements.len() as u64), ("pane_width", p.width as u64), ("pane_height", p.height as u64)] {
        guard = format!("#{{&&:{guard},#{{==:#{{{field}}},{value}}}}}");
    }
    guard = format!("#{{&&:{guard},#{{e|>=:#{{history_size}},{k}}}}}");
    let start = if k == 0 { "0".to_string() } else { format!("-{k}") };
    let command = format!("list-commands -F \"{}\" capture-pane ; capture-pane -p -t {} -S {start}", marker(nonce, &p.id), p.id);
    Some((vec!["if-shell".into(), "-F".into(), "-t".into(), p.id.clone(), guard, command], k as usize + p.height as usize))
}

async fn run_chunk(broker: &Broker, chunk: &[&(usize, Vec<String>, usize)], panes: &[Pane], nonce: &str, out: &mut [Batched]) {
    let mut argv: Vec<&str> = Vec::new();
    for (n, (_, args, _)) in chunk.iter().enumerate() {
        if n > 0 {
            argv.push(";");
        }
        argv.extend(args.iter().map(String::as_str));
    }
    let Ok(result) = broker.registry.tmux_output(&argv).await else { return };
    if result.status != 0 {
        return;
    }
    let expected: Vec<(usize, String, usize)> = chunk.iter().map(|(i, _, rows)| (*i, marker(nonce, &panes[*i].id), *rows)).collect();
    for (i, rows) in split(&result.stdout, &expected) {
        out[i] = Batched::Rows(rows);
    }
}

/// Splits the chunk's stdout: each pane in order either printed nothing (its
/// guard failed) or its marker and exactly `rows` lines. The panes found, with
/// their rows; nothing when the output does not add up.
fn split(stdout: &[u8], expected: &[(usize, String, usize)]) -> Vec<(usize, Vec<u8>)> {
    let mut lines = stdout.split_inclusive(|b| *b == b'\n').peekable();
    let mut found = Vec::new();
    for (i, marker, rows) in expected {
        let (i, rows) = (*i, *rows);
        let marker = format!("{marker}\n");
        if lines.peek().is_none_or(|l| *l != marker.as_bytes()) {
            continue; // this pane's guard failed: it printed nothing
        }
        lines.next();
        let mut buf = Vec::new();
        for _ in 0..rows {
            match lines.next() {
                Some(l) if l.ends_with(b"\n") => buf.extend_from_slice(l),
                _ => return Vec::new(),
            }
        }
        found.push((i, buf));
    }
    if lines.next().is_some() {
        return Vec::new(); // more than the counts say: trust none of it
    }
    found
}

#[cfg(test)]
mod tests {
    use super::split;

    fn e(i: usize, rows: usize) -> (usize, String, usize) {
        (i, format!("M {i}"), rows)
    }

    #[test]
    fn output_is_split_by_markers_and_counts_never_by_content() {
        // Pane 0: 2 rows, one of which looks like pane 2's marker; pane 1
        // failed its guard (printed nothing); pane 2: 1 row.
        let out = b"M 0\nM 2\nx\nM 2\ny\n";
        let got = split(out, &[e(0, 2), e(1, 3), e(2, 1)]);
        assert_eq!(got, vec![(0, b"M 2\nx\n".to_vec()), (2, b"y\n".to_vec())]);
        // A failed pane before one with the same row count: no mix-up.
        assert_eq!(split(b"M 1\na\nb\n", &[e(0, 2), e(1, 2)]), vec![(1, b"a\nb\n".to_vec())]);
        // Too few rows, or too many: nothing is trusted.
        assert!(split(b"M 0\nx\n", &[e(0, 2)]).is_empty());
        assert!(split(b"M 0\nx\nz\n", &[e(0, 1)]).is_empty());
        assert!(split(b"row\n", &[e(0, 1)]).is_empty());
    }
}
