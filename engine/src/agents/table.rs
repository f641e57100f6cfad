//! The rule tables: one per CLI, each row a state, the screen lines that
//! must all be present and the CLI version it was checked against. Data:
//! `classify` reads them.
//!
//! A row may also ask for more: its deciding line at the bottom, given
//! lines right above that line, lines that must be absent, or the
//! terminal's activity. A dialog's frame bounds the lines it reports.

use super::identify::Cli;

/// What an agent is doing, as its screen shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Working,
    WaitingForInput,
    WaitingForApproval,
    Exited,
    Unknown,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Working => "working",
            State::WaitingForInput => "waiting_for_input",
            State::WaitingForApproval => "waiting_for_approval",
            State::Exited => "exited",
            State::Unknown => "unknown",
        }
    }
}

/// One row of a CLI's table.
#[derive(Debug)]
pub struct Rule {
    pub cli: Cli,
    pub state: State,
    /// The CLI version whose real screens this row was checked against.
    pub checked: &'static str,
    /// What the row recognises, in a few words.
    pub what: &'static str,
    /// Regexes that must each match a visible line (the last one that does);
    /// the first is the deciding line (the question, for an approval).
    pub lines: &'static [&'static str],
    /// The first regex must match the last line that is not blank (a prompt
    /// waiting at the bottom, not one left in the transcript).
    pub last: bool,
    /// What the terminal must be doing: a screen that looks the same while an
    /// answer streams in and after it needs the writes to tell.
    pub activity: Activity,
    /// A dialog's edges: the lines reported run from the nearest line above
    /// the question that matches the first regex, down to the nearest line
    /// at or below the last needed line that matches the second (without
    /// them, from the first needed line to the last).
    pub frame: Option<(&'static str, &'static str)>,
    /// Regexes the lines right above the deciding line must match, nearest
    /// first (a box told from another only by what stands over its line).
    pub above: &'static [&'static str],
    /// Regexes no visible line may match (a screen told from another by
    /// what it does not show yet).
    pub absent: &'static [&'static str],
}

impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        std::ptr::eq(self, other)
    }
}
impl Eq for Rule {}

/// A row with no bottom or frame condition.
const fn row(
    cli: Cli,
    state: State,
    checked: &'static str,
    what: &'static str,
    lines: &'static [&'static str],
) -> Rule {
    Rule {
        cli,
        state,
        checked,
        what,
        lines,
        last: false,
        activity: Activity::Any,
        frame: None,
        above: &[],
        absent: &[],
    }
}

/// A row's condition on the pane's terminal being written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    Any,
    /// Written to within the last [`QUIET`].
    Writing,
    /// Nothing written for [`QUIET`].
    Quiet,
}

/// How long a terminal must go unwritten to count as quiet. TUIs animate a
/// spinner several times a second while they work and write nothing while
/// they wait; an answer streams in far more often than this.
pub const QUIET: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether any row of `cli`'s table looks at the terminal's activity (then
/// the caller measures it before `classify`).
pub fn needs_activity(cli: Cli) -> bool {
    RULES
        .iter()
        .any(|r| r.cli == cli && r.activity != Activity::Any)
}

/// Every CLI's table, in the order rows are tried.
pub fn rules() -> &'static [Rule] {
    RULES
}

use Cli::{Aider, ClaudeCode, Codex, Gemini, Opencode};
use State::{WaitingForApproval, WaitingForInput, Working};

/// Each row was checked against the screens in
/// `tests/python/agents/screens/<cli>-<version>/` (captured from the real
/// TUI at 120x40 against the fake model) and by the tests that run the CLIs.
#[rustfmt::skip]
pub(super) const RULES: &[Rule] = &[
    // Claude Code: a dialog replaces the input box; the hint line under the
    // box says "esc to interrupt" while a turn runs (also while the answer
    // streams in), "? for shortcuts" when it waits.
    Rule {
        frame: Some((r"^─{10,}$", r"Esc to cancel")),
        ..row(ClaudeCode, WaitingForApproval, "2.1.332", "a permission dialog",
            &[r"^\s*Do you want to proceed\?", r"^\s*❯ 1\. Yes", r"Esc to cancel"])
    },
    row(ClaudeCode, Working, "2.1.332", "the hint line's \"esc to interrupt\"", &[r"· esc to interrupt"]),
    row(ClaudeCode, WaitingForInput, "2.1.332", "the hint line's \"? for shortcuts\"", &[r"· \? for shortcuts"]),
    // Codex CLI: the approval request replaces the composer; "Working (…
    // esc to interrupt)" above the composer while it thinks or runs a tool;
    // while an answer streams in, the screen is the idle one (the shortcuts
    // hint under the composer) and only the writes tell the two apart.
    Rule {
        frame: Some((r"^\s*Would you like to", r"Press enter to confirm")),
        ..row(Codex, WaitingForApproval, "0.171.0", "an approval request",
            &[r"^\s*Would you like to run the following command\?", r"Press enter to confirm or esc to cancel"])
    },
    row(Codex, Working, "0.171.0", "the status line's \"esc to interrupt\"", &[r"^\S Working \(.*esc to interrupt\)"]),
    // Just started: the header and the empty composer, no answer yet. Codex
    // redraws for about 1.5 s at start on small panes; that is not an answer
    // streaming in (an answer's first line is `• …`; one long enough to push
    // that line off the screen has pushed the header off too).
    Rule {
        absent: &[r"^• "],
        ..row(Codex, WaitingForInput, "0.171.0", "the start screen: the header, the shortcuts hint, no answer yet", &[r"^\s*>_ OpenAI Codex \(v", r"\? for shortcuts"])
    },
    Rule {
        activity: Activity::Writing,
        ..row(Codex, Working, "0.171.0", "an answer streaming in (the terminal is being written)", &[r"\? for shortcuts"])
    },
    Rule {
        activity: Activity::Quiet,
        ..row(Codex, WaitingForInput, "0.171.0", "the shortcuts hint, nothing written for 1 s", &[r"\? for shortcuts"])
    },
    // Gemini CLI: a boxed confirmation; the loading line "(esc to cancel, Ns)";
    // the input prompt's placeholder when it is empty.
    Rule {
        frame: Some((r"^╭", r"^╰")),
        ..row(Gemini, WaitingForApproval, "0.61.0", "a tool confirmation box",
            &[r"^│ Allow execution of ", r"^│ \W*1\. Allow once"])
    },
    row(Gemini, Working, "0.61.0", "the loading line's \"esc to cancel\"", &[r"\(esc to cancel, "]),
    row(Gemini, WaitingForInput, "0.61.0", "the empty input prompt", &[r"^ >\s+Type your message"]),
    // aider: "Waiting for MODEL" with a spinner until the answer streams;
    // its prompt (`> `, or the edit format's, `diff> `) on the last line
    // when it waits.
    // A question with its (Y)es/(N)o choices on the last line; the command
    // it asks about is shown above it, under the answer's token count.
    Rule {
        last: true,
        frame: Some((r"^Tokens: ", r"\[(Yes|No)\]:\s*$")),
        ..row(Aider, WaitingForApproval, "0.86.2", "a (Y)es/(N)o question on the last line",
            &[r"\? \(Y\)es/\(N\)o.*\[(Yes|No)\]:\s*$"])
    },
    row(Aider, Working, "0.86.2", "the \"Waiting for\" spinner", &[r"Waiting for \S+$"]),
    Rule {
        last: true,
        ..row(Aider, WaitingForInput, "0.86.2", "the empty prompt on the last line", &[r"^[a-z-]*>\s*$"])
    },
    // While the answer streams in there is no indicator: the writes tell.
    Rule {
        activity: Activity::Writing,
        ..row(Aider, Working, "0.86.2", "an answer streaming in after a prompt (the terminal is being written)", &[r"^[a-z-]*> \S"])
    },
    // opencode: a permission request replaces the input box; the footer
    // under the box says "esc interrupt" while a turn runs. An empty box
    // shows a placeholder on the home view only; in a session it is three
    // bare `┃` lines over the agent line, where a draft would stand (a
    // draft is the only difference, so the rows above decide).
    Rule {
        frame: Some((r"△ Permission required$", r"enter confirm$")),
        ..row(Opencode, WaitingForApproval, "1.18.33", "a permission request",
            &[r"^\s*┃\s+△ Permission required$", r"^\s*┃\s+Allow once\s+Allow always\s+Reject(\s|$)"])
    },
    row(Opencode, Working, "1.18.33", "the footer's \"esc interrupt\"", &[r"^\s+\S+\s+esc (again to )?interrupt(\s|$)"]),
    row(Opencode, WaitingForInput, "1.18.33", "the home view's empty box (its placeholder)",
        &[r"^\s*┃  Ask anything… ", r"\sctrl\+p commands$"]),
    Rule {
        above: &[r"^\s*┃$", r"^\s*┃$", r"^\s*┃$", r"^[^┃]*$"],
        ..row(Opencode, WaitingForInput, "1.18.33", "a session's empty box (three bare ┃ lines over the agent line) and the idle footer",
            &[r"^\s*┃  \S+ · ", r"^\s+[~/]\S*\s.*\sctrl\+p commands$"])
    },
];

#[cfg(test)]
mod tests {
    use super::super::classify::classify;
    use super::*;
    use std::collections::HashMap;
    use std::path::Path;

    fn screen(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    /// The state each captured screen was taken in, from its file name.
    fn expected(name: &str) -> Option<State> {
        let stem = name.strip_suffix(".txt")?;
        let kind = stem.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-');
        match kind {
            "idle-start" | "idle-after-answer" | "idle-start-from-shell" => Some(WaitingForInput),
            "working" | "working-tool" => Some(Working),
            "approval" => Some(WaitingForApproval),
            _ => None,
        }
    }

    /// opencode's session box with a draft in it differs from the empty one
    /// only above the agent line: a draft must not read as waiting for input
    /// (a prompt pasted but not yet submitted is not an idle agent).
    #[test]
    fn an_opencode_draft_is_not_an_empty_box() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/python/agents/screens/opencode-1.18.33");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return; // a source package holds no screens
        };
        let mut drafts = 0;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(e.path()).unwrap();
            let v = classify(Opencode, &screen(&text), Some(false));
            if name.starts_with("draft-") && !name.starts_with("draft-cleared") {
                drafts += 1;
                assert_eq!(v.state, State::Unknown, "{name}: {v:?}");
            } else if name.starts_with("draft-cleared") {
                assert_eq!(v.state, WaitingForInput, "{name}: {v:?}");
            }
        }
        assert!(drafts >= 2, "the draft screens are there ({drafts})");
    }

    #[test]
    fn every_captured_screen_reads_as_the_state_it_was_taken_in() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/python/agents/screens");
        let mut checked = HashMap::new();
        for (cli, dir) in [
            (ClaudeCode, "claude-2.1.332"),
            (Codex, "codex-0.171.0"),
            (Gemini, "gemini-0.61.0"),
            (Aider, "aider-0.86.2"),
            (Opencode, "opencode-1.18.33"),
        ] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue; // a source package holds no screens
            };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(want) = expected(&name) else {
                    continue;
                };
                let text = std::fs::read_to_string(e.path()).unwrap();
                // A TUI writes while it works (a spinner, the answer
                // streaming in) and nothing while it waits.
                let v = classify(cli, &screen(&text), Some(want == Working));
                assert_eq!(v.state, want, "{dir}/{name}: {v:?}");
                let rule = v.rule.unwrap();
                assert_eq!(Some(rule.checked), dir.split('-').nth(1));
                assert!(!v.lines.is_empty(), "{dir}/{name}");
                for l in &v.lines {
                    assert!(
                        text.contains(l.as_str()),
                        "{dir}/{name}: {l:?} is not on the screen"
                    );
                }
                if want == WaitingForApproval {
                    let q = v.question.as_deref().unwrap();
                    // opencode titles its request instead of asking.
                    assert!(
                        q.contains('?') || q.ends_with("Permission required"),
                        "{dir}/{name}: question {q:?}"
                    );
                    // The dialog whole: the question and what it asks about.
                    assert!(v.lines.len() >= 2, "{dir}/{name}: {:?}", v.lines);
                }
                *checked.entry((cli, want)).or_insert(0) += 1;
            }
        }
        if root.is_dir() {
            for cli in [ClaudeCode, Codex, Gemini, Aider] {
                for state in [WaitingForInput, Working, WaitingForApproval] {
                    assert!(
                        checked.contains_key(&(cli, state)),
                        "no {cli:?} screen of {state:?}"
                    );
                }
            }
        }
    }
}
