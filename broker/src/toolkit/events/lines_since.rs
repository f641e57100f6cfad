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

use crate::session::Session;
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::libtmux::pane_read::{self, observe_failure};
use crate::toolkit::libtmux::wording;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tmux_mcp_engine::capture::{CursorEntry, SinceEntry};
use tmux_mcp_engine::lines;
use tmux_mcp_engine::observe;
use tmux_mcp_engine::registry::Pane;
use tmux_mcp_engine::retention::{Owner, Retained, View};
use tmux_mcp_engine::since::{
    from_handoff, loss, read, respawned_or_alternate, seed_answer, since, Answer, Lost, WINDOW,
};
use tmux_mcp_engine::styles::{self, StyledRow};

const DEFAULT_LINES: u64 = 500;
const MAX_LINES: u64 = 10_000;
const DEFAULT_BYTES: u64 = 128_000;
const MAX_BYTES: u64 = lines::MAX_RESULT_BYTES as u64;

// The arguments of `capture_since` (the default toolset's spelling); no doc
// comment: it would become the schema's description.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    pub pane_id: crate::toolkit::target::ids::PaneId,
    /// The last result's cursor, or a hand-off cursor; omit to start.
    ///
    /// The cursor of the previous capture_since result (22 characters), or
    /// the hand-off cursor prefix + A pastes (32 hex digits).
    #[schemars(regex(pattern = r"^([A-Za-z0-9_-]{22}|[0-9a-f]{32})$"))]
    pub cursor: Option<String>,
    // Keep at most this many of the newest lines; clamped to 10000 (the
    // tool's details say so; the schema's default says the rest).
    #[schemars(range(min = 1), extend("default" = 500))]
    pub max_lines: Option<u64>,
    // Keep at most this many bytes of the newest lines; clamped to 1000000.
    #[schemars(range(min = 1), extend("default" = 128000))]
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
/// line stays small on the wire; the pane is the one the call named (a
/// cursor of another pane is refused), so it is not restated (issue 49).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Out {
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

/// The engine's reason, as published.
impl From<Lost> for Reason {
    fn from(l: Lost) -> Reason {
        match l {
            Lost::HistoryTrimmed => Reason::HistoryTrimmed,
            Lost::HistoryCleared => Reason::HistoryCleared,
            Lost::Respawned => Reason::Respawned,
            Lost::Rewritten => Reason::Rewritten,
            Lost::Ambiguous => Reason::Ambiguous,
            Lost::BaselineNotFound => Reason::BaselineNotFound,
        }
    }
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

/// The cursor's entry: a `capture_since` cursor, or the key binding's hand-off
/// (a `tmux_capture` tracking cursor; `searched`: its place is not known).
enum Base {
    Since(SinceEntry),
    Handoff(CursorEntry),
}

fn bad_cursor(why: &str) -> ToolOutput {
    wording::read_error(
        &format!("Invalid argument cursor: {why}. Nothing was sent to tmux."),
        Some("Omit cursor to start again (the result then holds a new cursor)."),
    )
}

pub async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
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
        Some(key) => Some(base_of(session, key, id)?),
    };
    let handoff = match &base {
        Some(Base::Since(e)) => e.handoff,
        Some(Base::Handoff(h)) => h.handoff,
        None => false,
    };
    // A handed-over pane is readable by any agent: the person consented for
    // this one pane; anything else is cut to the session's scope.
    let pane = if handoff {
        observe::find_pane(broker, id, session.read_freshness())
            .await
            .map_err(|e| observe_failure(id, &e))?
    } else {
        pane_read::pane(session, id, session.read_freshness()).await?
    };
    let (entry, searched) = match base {
        None => return first_read(session, id, pane, caps).await,
        Some(Base::Since(e)) => (e, false),
        Some(Base::Handoff(h)) => (from_handoff(&h, &pane), true),
    };

    // A wait holds a wait place (capped like tmux_wait's), not a capture
    // place, and watches the terminal before the first read, so output between
    // that read and the wait is not missed. Without either, no wait happens
    // and the result says so (waitMs 0).
    let asked = args.wait_ms.map(|ms| ms.min(session.request_timeout_ms()));
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
    let mut answer = since_admitted(session, &pane, &entry, searched, styled).await?;
    if let Some(w) = watch {
        // After a write, one more read once tmux has surely parsed it.
        let settle = Duration::from_millis(25);
        let mut recheck: Option<tokio::time::Instant> = None;
        while answer.lines.is_empty() && answer.lost.is_none() {
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
            answer = since_admitted(session, &pane, &entry, searched, styled).await?;
        }
    }
    // A respawn seen by the process backend although the pid is the same (a
    // pid reused by chance). The generation kept is only ever the one of the
    // pid this read saw, or none.
    let pg = process_generation(&session.broker, id, answer.entry.pid);
    if let (Some(old), Some(new)) = (&entry.process_generation, &pg) {
        if old != new && answer.lost.is_none() && answer.entry.pid == entry.pid {
            answer.lost = loss(Lost::Respawned, "the pane's process changed: output of the old process not yet returned may be lost");
        }
    }
    answer.entry.process_generation = pg;
    Ok(finish(session, id, answer, false, caps, wait))
}

/// The entry cursor `key` names for pane `id`: a `capture_since` cursor, or
/// the key binding's hand-off of this server; else why it is refused
/// (nothing sent to tmux).
fn base_of(session: &Session, key: &str, id: &str) -> Result<Base, ToolOutput> {
    match session.broker.retained.get(key, &session.view()).as_deref() {
        Some(Retained::Since(e)) if e.pane_id == id => Ok(Base::Since(e.clone())),
        Some(Retained::Cursor(h)) if h.pane_id == id && h.generation == session.generation() => Ok(Base::Handoff(h.clone())),
        Some(Retained::Since(e)) => Err(bad_cursor(&format!("it belongs to pane {}, not {id}", e.pane_id))),
        Some(Retained::Cursor(h)) if h.pane_id != id => Err(bad_cursor(&format!("it belongs to pane {}, not {id}", h.pane_id))),
        _ => Err(bad_cursor("no cursor of this broker has this value (unknown, expired after 600 s unused, or made before the broker restarted)")),
    }
}

/// A call without a cursor: the lines the pane shows now (its alternate
/// screen, or the last rows of its grid), and the first cursor. No wait:
/// there is nothing to be new since.
async fn first_read(
    session: &Session,
    id: &str,
    pane: Pane,
    caps: Caps,
) -> Result<ToolOutput, ToolOutput> {
    let _place = admitted(session).await?;
    let start = -(WINDOW as i64);
    let (_, g) = read(&session.broker, pane, start, caps.styled)
        .await
        .map_err(|e| observe_failure(id, &e))?;
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
    Ok(finish(session, id, a, true, caps, None))
}

/// A capture place (captures queue briefly, then are refused as overload).
async fn admitted(session: &Session) -> Result<tokio::sync::SemaphorePermit<'_>, ToolOutput> {
    session.broker.admission.capture().await.map_err(|refused| {
        wording::read_error(
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
    since(&session.broker, pane.clone(), entry, searched, styled)
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
        return wording::read_error("The cursor could not be kept (retention budget).", None);
    }
    let (lines, truncated) = cap(a.lines, caps);
    let mut text = String::new();
    let missed = a.lost.map(|l| Missed {
        reason: l.reason.into(),
        detail: l.detail,
    });
    if let Some(m) = &missed {
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
        cursor: key,
        lines: lines.into_iter().map(|l| l.text).collect(),
        lines_missed: missed.is_some(),
        missed,
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
}
