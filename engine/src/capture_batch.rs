//! Many panes captured in one tmux round trip (for reads across panes, such as
//! `search_panes`): on tmux >= 3.5 each pane's commands check its
//! `after-capture-pane` hook inside the queue, as single captures do; before,
//! one `show-hooks` preflight over the global table and every session involved
//! (`preflight`, once per call however many batches follow). Then one command list per tmux message holding, for each pane, `if-shell -F
//! -t %N GUARD 'list-commands -F "MARK" capture-pane ; capture-pane -p -t %N
//! [-J] [-S s] [-E e] ; list-commands -F "MARK end" capture-pane'`
//! (`list-commands` runs no hook).
//!
//! The guard proves, in tmux's queue, what the hook preflight relies on: the
//! pane is the one meant and its window is linked into exactly the sessions
//! the preflight checked. A pane whose guard holds prints its start marker, its
//! rows and its end marker; a pane whose guard fails prints nothing. Each
//! marker names the pane and a nonce drawn for this call and sent only to tmux
//! (in a protocol message of the in-process client; with `--exec-only` it is
//! in the tmux client's argv for the length of the call, where a program of the
//! same user could read it), and a captured row is the text of the pane's grid
//! at that instant: no row can equal a marker, so the output is split at markers
//! with any range and `-J`. Anything that does not add up — a pane that failed
//! its guard, a marker that is not there, output left over — is left to the
//! single-pane path (`observe::capture_range`), which re-reads the table,
//! retries and reports exactly (including a hook set: refused, never captured).
//!
//! tmux < 3.5 cannot check hooks inside the queue: as for single captures, a
//! hook set in the gap between the preflight and the captures cannot be
//! excluded there.

use crate::observe::{self, HookCheck};
use crate::registry::{session_ids, Pane};
use crate::Broker;
use tmux_mcp_core::tmux::COMMAND_ARG_BYTES;

const HOOK: &str = "after-capture-pane";

fn marker(nonce: &str, pane: &str) -> String {
    format!("tmux-mcp-batch {nonce} {pane}")
}

/// What one pane of the batch gave.
pub enum Batched {
    /// tmux's stdout of `capture-pane -p` for this pane, as asked.
    Rows(Vec<u8>),
    /// Not captured here; read it with the single-pane path.
    Alone,
}

/// One pane to capture and how (`capture-pane`'s `-S`, `-E`, `-J`).
pub struct Request<'a> {
    pub pane: &'a Pane,
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub join: bool,
}

/// Proof that no `after-capture-pane` hook can run for the panes it was made
/// for. On tmux >= 3.5 each pane's commands check the hook themselves, inside
/// the queue (as single captures do, `observe::guarded_argv`): no preflight,
/// no gap. Before 3.5, one `show-hooks` preflight for every session linking
/// the panes: a caller that captures them in several batches asks once, since
/// every batch after the first would widen the gap in which a hook set
/// meanwhile cannot be excluded, by one round trip each.
pub struct HooksClear {
    check: HookCheck,
    /// The sessions the preflight asked (empty in the queue's case).
    sessions: Vec<String>,
}

/// The hook proof for `panes`; `None` when a preflight found a hook set (the
/// single-pane path then says which panes it concerns) or tmux could not say.
pub async fn preflight<'a>(
    broker: &Broker,
    panes: impl IntoIterator<Item = &'a Pane>,
) -> Option<HooksClear> {
    let check = HookCheck::for_version(&broker.tmux_version());
    if check == HookCheck::InQueue {
        return Some(HooksClear {
            check,
            sessions: Vec::new(),
        });
    }
    let sessions = session_ids(panes);
    matches!(
        broker.registry.hook_is_set(HOOK, &sessions).await,
        Ok(false)
    )
    .then_some(HooksClear { check, sessions })
}

/// Captures each request's pane. Without an error of its own: whatever the
/// batch could not do is `Alone`, and so is a pane linked into a session a
/// preflight did not check, or (in the queue) a pane whose hook is set.
pub async fn capture(
    broker: &Broker,
    clear: &HooksClear,
    requests: &[Request<'_>],
) -> Vec<Batched> {
    let mut out: Vec<Batched> = requests.iter().map(|_| Batched::Alone).collect();
    let checked = |p: &Pane| {
        clear.check == HookCheck::InQueue
            || p.placements
                .iter()
                .all(|pl| clear.sessions.binary_search(&pl.session_id).is_ok())
    };
    let nonce = tmux_mcp_core::sys::random_hex(8);
    let plans: Vec<(usize, Vec<String>)> = requests
        .iter()
        .enumerate()
        .filter(|(_, r)| checked(r.pane))
        .filter_map(|(i, r)| plan(r, clear.check, &nonce).map(|args| (i, args)))
        .collect();
    let mut chunk: Vec<&(usize, Vec<String>)> = Vec::new();
    let mut used = 0;
    for item in &plans {
        let n: usize = item.1.iter().map(|a| a.len() + 1).sum::<usize>() + 2; // and the ";"
        if used + n > COMMAND_ARG_BYTES && !chunk.is_empty() {
            run_chunk(broker, &chunk, requests, &nonce, &mut out).await;
            chunk.clear();
            used = 0;
        }
        used += n;
        chunk.push(item);
    }
    if !chunk.is_empty() {
        run_chunk(broker, &chunk, requests, &nonce, &mut out).await;
    }
    out
}

/// The `if-shell` of one request (behind the in-queue hook check on tmux >=
/// 3.5); `None` for a pane the batch does not take (no placement: gone).
fn plan(r: &Request<'_>, check: HookCheck, nonce: &str) -> Option<Vec<String>> {
    let p = r.pane;
    if p.placements.is_empty() {
        return None;
    }
    let (sessions, guard) = observe::pane_guard(p, check);
    let mark = marker(nonce, &p.id);
    // The capture is aimed through the first checked session, whose context
    // the guard was expanded in (see `observe::pane_guard`).
    let mut capture = format!(
        "capture-pane -p -t {}",
        observe::capture_target(sessions[0], &p.id)
    );
    for f in observe::capture_flags(r.start, r.end, r.join, false) {
        capture.push(' ');
        capture.push_str(&f);
    }
    let command = format!("list-commands -F \"{mark}\" capture-pane ; {capture} ; list-commands -F \"{mark} end\" capture-pane");
    Some(observe::guarded_argv(
        check, &sessions, &p.id, &guard, &command,
    ))
}

async fn run_chunk(
    broker: &Broker,
    chunk: &[&(usize, Vec<String>)],
    requests: &[Request<'_>],
    nonce: &str,
    out: &mut [Batched],
) {
    let mut argv: Vec<&str> = Vec::new();
    for (n, (_, args)) in chunk.iter().enumerate() {
        if n > 0 {
            argv.push(";");
        }
        argv.extend(args.iter().map(String::as_str));
    }
    let Ok(result) = broker.registry.tmux_output(&argv).await else {
        return;
    };
    if result.status != 0 {
        return;
    }
    let expected: Vec<(usize, String)> = chunk
        .iter()
        .map(|(i, _)| (*i, marker(nonce, &requests[*i].pane.id)))
        .collect();
    for (i, rows) in split(&result.stdout, &expected, observe::hook_marker()) {
        out[i] = Batched::Rows(rows);
    }
}

/// Splits the chunk's stdout: each pane in order either printed nothing (its
/// guard failed), the in-queue check's `hook` line (a hook is set: not
/// captured), or its start marker, its rows and its end marker. The panes
/// found, with their rows; nothing when the output does not add up.
fn split(stdout: &[u8], expected: &[(usize, String)], hook: &str) -> Vec<(usize, Vec<u8>)> {
    let mut lines = stdout.split_inclusive(|b| *b == b'\n').peekable();
    let mut found = Vec::new();
    let hook = format!("{hook}\n");
    for (i, marker) in expected {
        let (start, end) = (format!("{marker}\n"), format!("{marker} end\n"));
        if lines.peek().is_some_and(|l| *l == hook.as_bytes()) {
            lines.next();
            continue; // refused in the queue; the single-pane path reports it
        }
        if lines.peek().is_none_or(|l| *l != start.as_bytes()) {
            continue; // this pane's guard failed: it printed nothing
        }
        lines.next();
        let mut buf = Vec::new();
        loop {
            match lines.next() {
                Some(l) if l == end.as_bytes() => break,
                Some(l) if l.ends_with(b"\n") => buf.extend_from_slice(l),
                _ => return Vec::new(), // no end marker: trust none of it
            }
        }
        found.push((*i, buf));
    }
    if lines.next().is_some() {
        return Vec::new(); // more than the markers account for
    }
    found
}

#[cfg(test)]
mod tests {
    use super::split;

    fn e(i: usize) -> (usize, String) {
        (i, format!("M {i}"))
    }

    #[test]
    fn output_is_split_at_each_panes_own_markers() {
        // Pane 0: two rows, one of which looks like pane 2's start marker
        // (a nonce-less look-alike); pane 1 failed its guard (printed nothing);
        // pane 2: one row.
        let out = b"M 0\nM 2\nx\nM 0 end\nM 2\ny\nM 2 end\n";
        let got = split(out, &[e(0), e(1), e(2)], "H");
        assert_eq!(got, vec![(0, b"M 2\nx\n".to_vec()), (2, b"y\n".to_vec())]);
        // No rows at all (an empty range) is a capture too.
        assert_eq!(
            split(b"M 1\nM 1 end\n", &[e(0), e(1)], "H"),
            vec![(1, Vec::new())]
        );
        // A pane refused in the queue (its hook line), then one captured.
        assert_eq!(
            split(b"H\nM 1\ny\nM 1 end\n", &[e(0), e(1)], "H"),
            vec![(1, b"y\n".to_vec())]
        );
        // A missing end marker, output left over, or rows with no marker: nothing is trusted.
        assert!(split(b"M 0\nx\n", &[e(0)], "H").is_empty());
        assert!(split(b"M 0\nx\nM 0 end\nz\n", &[e(0)], "H").is_empty());
        assert!(split(b"row\n", &[e(0)], "H").is_empty());
        assert!(
            split(b"M 0\nx", &[e(0)], "H").is_empty(),
            "an unended last line"
        );
    }
}
