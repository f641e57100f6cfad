//! Whether a shell's command line is empty, before `run_command` types into it.
//!
//! An unenrolled shell does not tell anyone what its line editor holds, and a
//! person may have started a line (`ls -l `, or `git commit -m 'wip` followed
//! by Enter, which leaves the shell waiting for the rest at a continuation
//! prompt). Typing a command there would run the person's text with ours, or
//! bury ours inside their quote. So the line is proven empty first, from the
//! screen and one probe keystroke pair, and `run_command` refuses otherwise:
//!
//! 1. [`precheck`], nothing sent: a row with no prompt at the cursor (blank,
//!    as on the second line of fish's multi-line buffer) or a continuation
//!    prompt (`> `, zsh's `quote> `, `cmdsubst dquote> `) is refused.
//! 2. The probe: `C-a` then a space, which is also the first character of
//!    the typed line (the leading space that keeps it out of history). In
//!    the emacs keymap every supported shell starts with (bash, zsh, fish,
//!    dash has no editor) `C-a` moves to the start of the line; so the space
//!    lands right where the cursor was, with the row unchanged, only when the
//!    line was empty ([`judge`]): text left of the cursor makes the cursor
//!    jump back, text right of it shifts along.
//! 3. Anything else is taken back ([`Probe::undo`]) and refused: the space
//!    is deleted (the person's text stays, the cursor at its start), or, in a
//!    vi insert keymap where `C-a` inserts itself, both characters.
//!
//! The decisions ([`precheck`], [`judge`]) are pure functions of what the
//! screen showed; [`prove_empty`] reads the screen, sends the probe and takes
//! it back. An enrolled shell says what its editor holds and is never probed
//! (`shell_run`); for every other shell this is the conservative rule: a
//! line that cannot be proven empty is never typed into.

use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::libtmux::wording;
use crate::toolkit::shell::shells;
use crate::toolkit::typing::keystrokes::{self, Input};
use std::time::Duration;
use tmux_mcp_engine::registry::Pane;
use tmux_mcp_engine::tty_watch::TtyWatch;

/// The cursor and the row it is on, as a capture shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub cx: u32,
    pub cy: u32,
    /// The cursor's row, right-trimmed (a capture trims trailing blanks).
    pub row: String,
}

impl Seen {
    /// The cursor position and row from a capture of the visible screen
    /// (`rows`, one per screen row) and `"#{cursor_x} #{cursor_y}"`.
    pub fn parse(state: &str, rows: &[u8]) -> Option<Seen> {
        let mut it = state.split_whitespace();
        let cx = it.next()?.parse().ok()?;
        let cy: u32 = it.next()?.parse().ok()?;
        let text = String::from_utf8_lossy(rows);
        let row = text.split('\n').nth(cy as usize).unwrap_or("");
        Some(Seen {
            cx,
            cy,
            row: row.trim_end().to_string(),
        })
    }

    /// The text left of the cursor (by characters: exact for the ASCII
    /// prompts the continuation rule looks for).
    fn left(&self) -> String {
        let mut left: String = self.row.chars().take(self.cx as usize).collect();
        // The capture trimmed the blanks the cursor sits after.
        let shown = left.chars().count();
        left.extend(std::iter::repeat_n(
            ' ',
            (self.cx as usize).saturating_sub(shown),
        ));
        left
    }
}

/// Reads the cursor and its row on a guarded, hook-checked capture.
pub async fn read(session: &Session, pane: &Pane) -> Result<Seen, String> {
    let (_, state, rows) = tmux_mcp_engine::observe::capture_range_with_state(
        &session.broker,
        pane.clone(),
        None,
        None,
        false,
        false,
        "#{cursor_x} #{cursor_y}",
    )
    .await
    .map_err(|e| e.why().to_string())?;
    Seen::parse(&state, &rows).ok_or_else(|| format!("unreadable cursor {state:?}"))
}

/// Whether the row shows readline's incremental search prompt
/// (`(reverse-i-search)`…': `, failed or forward): bash runs no `bind -x`
/// binding while it is open, and prints an error into the pane instead.
pub fn readline_search(row: &str) -> bool {
    let row = row.trim_start();
    [
        "(reverse-i-search)`",
        "(i-search)`",
        "(failed reverse-i-search)`",
        "(failed i-search)`",
    ]
    .iter()
    .any(|p| row.starts_with(p))
}

/// Why the line is refused before anything is sent, or `Ok`.
pub fn precheck(seen: &Seen) -> Result<(), String> {
    let left = seen.left();
    let left = left.trim_end();
    if left.trim().is_empty() {
        return Err("no prompt is shown left of its cursor (the shell may be in the middle of a multi-line command, or printing)".into());
    }
    if is_continuation(left) {
        return Err(format!(
            "its shell shows a continuation prompt ({left:?}): it is waiting for the rest of a command the person started"
        ));
    }
    Ok(())
}

/// For a shell without a line editor (the kernel's cooked mode: dash, sh),
/// where no key moves the cursor and the probe cannot see text left of it:
/// the cursor must follow a prompt's last character and a space (`$ `, `# `,
/// `% `, `> `), so a started line (`ls -l `, `ls`) is refused. Stricter than
/// [`precheck`], which it includes.
pub fn precheck_cooked(seen: &Seen) -> Result<(), String> {
    precheck(seen)?;
    let left = seen.left();
    let prompt_end = left
        .strip_suffix(' ')
        .and_then(|l| l.chars().last())
        .is_some_and(|c| "$#%>".contains(c));
    if !prompt_end {
        return Err(format!(
            "its shell has no line editor, and the text left of the cursor ({:?}) does not end in a prompt ($, #, % or > and a space): the person may have started a line",
            left.trim_start()
        ));
    }
    Ok(())
}

/// A continuation prompt: bash's and dash's default `PS2` (`> `), zsh's
/// (`%_> `: the open constructs, `quote> `, `cmdsubst dquote> `), and the
/// ones prompt frameworks set (starship's `∙ `, `... `, `.. `). An
/// unenrolled shell's `PS2` can be anything: enrolled shells prove which
/// prompt they read at; here the screen is all there is.
fn is_continuation(left: &str) -> bool {
    let left = left.trim();
    if left == "∙" || (left.len() >= 2 && left.chars().all(|c| c == '.' || c == '·')) {
        return true;
    }
    let Some(words) = left.strip_suffix('>') else {
        return false;
    };
    words.is_empty()
        || words
            .split(' ')
            .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()))
}

/// What the probe (`C-a`, space) showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The space landed where the cursor was and nothing else moved: the
    /// line was empty; it now holds the typed line's leading space.
    Empty,
    /// The line holds text: `C-a` moved the cursor back, or the space pushed
    /// text right of the cursor along.
    Typed,
    /// `C-a` inserted itself (shown `^A`, a vi insert keymap) before the space.
    SelfInserted,
    /// Nothing moved within the probe's wait, or something else happened.
    Unclear,
}

/// Judges the probe from the screen before it and after it settled.
pub fn judge(before: &Seen, after: &Seen) -> Probe {
    if after.cy != before.cy {
        return Probe::Unclear;
    }
    if after.cx == before.cx + 1 && after.row == before.row {
        return Probe::Empty;
    }
    let at = |from: u32, s: &str| {
        after
            .row
            .chars()
            .skip(from as usize)
            .collect::<String>()
            .starts_with(s)
    };
    if after.cx == before.cx + 3 && at(before.cx, "^A") {
        return Probe::SelfInserted;
    }
    if after.cx <= before.cx || (after.cx == before.cx + 1 && after.row != before.row) {
        return Probe::Typed;
    }
    Probe::Unclear
}

impl Probe {
    /// The keys that take the probe back.
    pub fn undo(&self) -> &'static [&'static str] {
        match self {
            Probe::Empty => &[],
            // The space, inserted at the cursor (wherever C-a put it).
            Probe::Typed | Probe::Unclear => &["BSpace"],
            Probe::SelfInserted => &["BSpace", "BSpace"],
        }
    }
}

/// The probe's wait for the shell's echo; how often it looks where the
/// terminal's writes cannot be watched; how long the terminal must stay
/// unwritten for the echo to count as whole.
const PROBE_WAIT: Duration = Duration::from_millis(1500);
const PROBE_EVERY: Duration = Duration::from_millis(10);
/// How long a line that fails the emptiness check is read again before it
/// is refused: the prompt may still be being made (fish runs its prompt's
/// programs while it holds the terminal in its editor's mode, so a done job
/// cannot wait for them).
const PROMPT_DRAW_WAIT: Duration = Duration::from_millis(1000);
const PROBE_QUIET: Duration = Duration::from_millis(4);

/// The cursor row once the echo of what was just sent has settled, or `None`
/// when nothing moved within [`PROBE_WAIT`]. With `watch` (the pane's
/// terminal, watched since before the keys were sent) it reads the screen
/// after the shell has written and then stayed quiet for [`PROBE_QUIET`]
/// (the probe costs a few milliseconds, not a polling interval); without it
/// (no such watch on this platform) it reads every [`PROBE_EVERY`] until two
/// reads agree.
async fn settled(
    session: &Session,
    pane: &Pane,
    before: &Seen,
    watch: Option<&TtyWatch>,
) -> Result<Option<Seen>, String> {
    let until = tokio::time::Instant::now() + PROBE_WAIT;
    let Some(watch) = watch else {
        let mut last: Option<Seen> = None;
        while tokio::time::Instant::now() < until {
            tokio::time::sleep(PROBE_EVERY).await;
            let now = read(session, pane).await?;
            if now == *before {
                continue;
            }
            if last.as_ref() == Some(&now) {
                return Ok(Some(now));
            }
            last = Some(now);
        }
        return Ok(last);
    };
    loop {
        // A write, then quiet: the shell has drawn what it will draw.
        if tokio::time::timeout_at(until, watch.changed())
            .await
            .is_err()
        {
            let now = read(session, pane).await?;
            return Ok((now != *before).then_some(now));
        }
        while tokio::time::Instant::now() < until
            && tokio::time::timeout(PROBE_QUIET, watch.changed())
                .await
                .is_ok()
        {}
        // tmux reads the terminal a moment after the shell wrote it.
        for _ in 0..5 {
            let now = read(session, pane).await?;
            if now != *before {
                return Ok(Some(now));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        if tokio::time::Instant::now() >= until {
            return Ok(None);
        }
    }
}

/// Proves the pane's command line empty (see the module doc): refused with
/// nothing sent when the screen shows a continuation or no prompt, or when a
/// shell with a line editor is not in it; a shell without one (cooked mode)
/// needs its cursor right after a prompt; else the probe (`C-a`, space: the
/// typed line's first character) is sent and judged, and taken back when the
/// line holds text. `Ok(true)` when the probe typed the leading space.
pub async fn prove_empty(session: &Session, pane: &Pane, shell: &str) -> Result<bool, ToolOutput> {
    let id = &pane.id;
    let cooked = tmux_mcp_engine::mirror::canonical(&pane.tty).map_err(|e| {
        wording::action_error(&format!("Pane {id}'s terminal could not be read to tell whether its shell is at its prompt ({e}); nothing was typed."), Delivery::NotSent)
    })?;
    if cooked && shells::has_line_editor(shell) {
        return Err(wording::action_error(&format!("Pane {id}'s {shell} is not in its line editor (its terminal is in cooked mode: it is running something that reads a line itself, such as `read`), so it is not at a prompt. Nothing was typed."), Delivery::NotSent));
    }
    let before = at_prompt(session, pane, cooked).await?;
    if cooked {
        return Ok(false);
    }
    // Watched before the keys go, so the echo's write cannot be missed.
    let watch = TtyWatch::new(&pane.tty).ok();
    // C-a as a key, the space as text: the commands every typing tool sends.
    let probe = [
        keystrokes::commands(id, Input::Keys(&["C-a".to_string()])),
        keystrokes::commands(id, Input::Text(" ")),
    ]
    .concat();
    if let Err((landed, f)) = keystrokes::deliver(session, &probe).await {
        let delivery = if landed == 0 {
            f.delivery
        } else {
            Delivery::Observed
        };
        return Err(wording::action_error(
            &format!(
                "Sending the probe keys (C-a, a space) to pane {id} failed: {}",
                f.message.trim_end_matches(" Nothing was sent.")
            ),
            delivery,
        ));
    }
    let after = settled(session, pane, &before, watch.as_ref()).await;
    let verdict = match &after {
        Ok(Some(after)) => judge(&before, after),
        _ => Probe::Unclear,
    };
    if verdict == Probe::Empty {
        return Ok(true);
    }
    let shown = after.as_ref().ok().and_then(Option::as_ref);
    Err(take_back(
        session,
        pane,
        verdict,
        shown.unwrap_or(&before),
        watch.as_ref(),
    )
    .await)
}

/// The cursor's row once the screen shows the line at a prompt, nothing
/// sent ([`precheck`], or [`precheck_cooked`] for a shell in cooked mode).
/// A shell just back at its prompt may not have drawn it yet (fish draws it
/// after it holds its terminal again, and tmux reads the drawing a moment
/// later): a line that fails the check is read again for
/// [`PROMPT_DRAW_WAIT`] before it is refused.
async fn at_prompt(session: &Session, pane: &Pane, cooked: bool) -> Result<Seen, ToolOutput> {
    let id = &pane.id;
    let look = || async {
        read(session, pane).await.map_err(|why| {
            wording::action_error(&format!("Pane {id} could not be read to prove its command line empty ({why}); nothing was typed."), Delivery::NotSent)
        })
    };
    let check = if cooked { precheck_cooked } else { precheck };
    let mut before = look().await?;
    let until = tokio::time::Instant::now() + PROMPT_DRAW_WAIT;
    while let Err(why) = check(&before) {
        if tokio::time::Instant::now() >= until {
            return Err(wording::action_error(&format!("Pane {id}'s command line cannot be proven empty: {why}. Nothing was typed; the line must be empty (finish or clear it), or type with send_keys."), Delivery::NotSent));
        }
        tokio::time::sleep(PROBE_EVERY).await;
        before = look().await?;
    }
    Ok(before)
}

/// Takes the probe back from a line it did not prove empty (`verdict`;
/// `shown` is the screen after the probe, or before it when none settled)
/// and says why nothing was typed, and what the row reads now.
async fn take_back(
    session: &Session,
    pane: &Pane,
    verdict: Probe,
    shown: &Seen,
    watch: Option<&TtyWatch>,
) -> ToolOutput {
    let id = &pane.id;
    let undo: Vec<String> = verdict.undo().iter().map(|k| k.to_string()).collect();
    let undone = keystrokes::deliver(session, &keystrokes::commands(id, Input::Keys(&undo)))
        .await
        .is_ok();
    let now = match settled(session, pane, shown, watch).await {
        Ok(Some(s)) => s.row,
        _ => read(session, pane).await.map(|s| s.row).unwrap_or_default(),
    };
    let taken_back = if undone {
        format!(
            "the probe keys (C-a, a space) were taken back with {}",
            undo.join(" ")
        )
    } else {
        "taking the probe keys (C-a, a space) back failed".to_string()
    };
    let why = match verdict {
        Probe::Typed => format!("it holds text the person typed; {taken_back}, so the line is as it was, its cursor at its start (the row reads {now:?})"),
        Probe::SelfInserted => format!("its line editor inserted C-a as text (a vi insert keymap; run_command proves an empty line with the emacs keys the shells start with); {taken_back} (the row reads {now:?}). Switch the shell to emacs keys (set -o emacs, bindkey -e) or type with send_keys"),
        _ => format!("the shell did not show the probe as an empty line would (it may be busy, or drawing); {taken_back} (the row reads {now:?})"),
    };
    wording::action_error(
        &format!("Pane {id}'s command line is not proven empty: {why}. The command was not typed."),
        Delivery::Observed,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(cx: u32, row: &str) -> Seen {
        Seen {
            cx,
            cy: 3,
            row: row.into(),
        }
    }

    #[test]
    fn a_capture_gives_the_cursor_row() {
        let s = Seen::parse("2 1", b"first\n$ \nthird\n").unwrap();
        assert_eq!(
            s,
            Seen {
                cx: 2,
                cy: 1,
                row: "$".into()
            }
        );
        assert_eq!(Seen::parse("x 1", b""), None);
    }

    #[test]
    fn prompts_pass_continuations_and_blank_rows_do_not() {
        for ok in [
            "$ ",
            "root@vm:~# ",
            "~> ",
            "user@host ~/src> ",
            ">>> ",
            "❯ ",
        ] {
            let s = seen(ok.chars().count() as u32, ok.trim_end());
            assert_eq!(precheck(&s), Ok(()), "{ok:?}");
        }
        for bad in [
            "> ",
            "quote> ",
            "cmdsubst dquote> ",
            "",
            "   ",
            "∙ ",
            "... ",
            ".. ",
        ] {
            let s = seen(bad.chars().count() as u32, bad.trim_end());
            assert!(precheck(&s).is_err(), "{bad:?}");
        }
        // A zsh right prompt beyond the cursor does not hide the continuation.
        let s = seen(7, "dquote>                 [10:31]");
        assert!(precheck(&s).is_err());
    }

    #[test]
    fn a_cooked_line_must_end_in_a_prompt() {
        for ok in ["$ ", "root@vm:~# ", "% "] {
            let s = seen(ok.chars().count() as u32, ok.trim_end());
            assert_eq!(precheck_cooked(&s), Ok(()), "{ok:?}");
        }
        for bad in ["$ ls -l ", "$ ls", "$", "> "] {
            let s = seen(bad.chars().count() as u32, bad.trim_end());
            assert!(precheck_cooked(&s).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_probe_proves_only_an_empty_line() {
        let before = seen(2, "$");
        assert_eq!(judge(&before, &seen(3, "$")), Probe::Empty);
        // A right prompt stays put while the space goes in.
        let rp = seen(2, "$                [10:31]");
        assert_eq!(
            judge(&rp, &seen(3, "$                [10:31]")),
            Probe::Empty
        );
        // `ls -l ` typed: C-a jumps to its start, the space goes there.
        let typed = seen(8, "$ ls -l");
        assert_eq!(judge(&typed, &seen(3, "$  ls -l")), Probe::Typed);
        // Text right of the cursor (the person pressed C-a) is pushed along.
        let right = seen(2, "$ ls");
        assert_eq!(judge(&right, &seen(3, "$  ls")), Probe::Typed);
        // A vi insert keymap inserts C-a itself.
        assert_eq!(judge(&before, &seen(5, "$ ^A")), Probe::SelfInserted);
        // Nothing moved, or the row changed under the cursor.
        assert_eq!(judge(&before, &before), Probe::Typed);
        let mut moved = seen(3, "$");
        moved.cy = 4;
        assert_eq!(judge(&before, &moved), Probe::Unclear);
        assert_eq!(judge(&before, &seen(9, "$ something")), Probe::Unclear);
        assert_eq!(Probe::SelfInserted.undo(), ["BSpace", "BSpace"]);
        assert!(Probe::Empty.undo().is_empty());
    }
}
