//! `capture_since` (libtmux family, docs/spec.md C.2's grid model): only the
//! lines a pane shows that are new since the cursor. Grid-based, not a stream:
//! the rows are the pane's history and screen as tmux renders them, so a
//! program that redraws (progress bars, TUIs) reads as it looks.
//!
//! The cursor is retained. Its place is found again by row hashes (engine
//! `since`), and the answer says what history-limit, clear-history or a
//! respawn took.

use crate::toolkit::call::spec::{Annotations, Call, CallFuture, ToolSpec};
use crate::toolkit::events::lines_since::{call, Args, Out};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use serde_json::json;

pub const SPEC: ToolSpec = ToolSpec::new(
    "capture_since",
    Annotations::read_only("Capture new pane lines since a cursor"),
    input_of::<Args>,
    schema_of::<Out>,
    run,
)
.description("A pane's new lines since cursor (none: screen and a cursor); lost lines reported.")
.details("Read only the lines a pane (paneId %N) shows that are new since `cursor`: grid-based (history and screen as tmux renders them, so redrawing programs are not jumbled). Call without cursor to start: returns the visible screen and a cursor; pass that cursor next time for just the new lines and a new cursor (cursors are not consumed; they last 600 s after last use). Also accepts the hand-off cursor that prefix + A pastes (what changed since the key press). Lines that cannot be recovered are reported (linesMissed, missed.reason: history_trimmed by history-limit, history_cleared, respawned, rewritten, ambiguous, baseline_not_found), never dropped silently. While a full-screen program uses the alternate screen, the whole screen is returned when it changed. Caps keep the tail and report what they dropped: maxLines default 500 (at most 10000), maxBytes default 128000 (at most 1000000); larger values are clamped. waitMs (default 0): with a cursor and nothing new, wait up to that long for output (terminal writes; typed echo within 250 ms), clamped to the request timeout (limits.request_timeout_seconds, default 5 s); the wait used is reported as waitMs. Read-only; fires no tmux hook; refused while an after-capture-pane hook is set.")
.sample(|s| json!({"paneId": s.pane}));

fn run(c: Call<'_>) -> CallFuture<'_> {
    c.run(call)
}
