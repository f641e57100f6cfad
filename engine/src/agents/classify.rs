//! Which state a screen shows: the first row of the CLI's table that
//! matches it, else `unknown`. Pure: the screen and the terminal's activity
//! are read by the caller.

use std::sync::LazyLock;

use super::identify::Cli;
use super::table::{Activity, Rule, State, RULES};

/// Each row's `lines`, `above` and `frame` regexes, compiled, in that order.
static COMPILED: LazyLock<Vec<Vec<regex::Regex>>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|r| {
            r.lines
                .iter()
                .chain(r.above)
                .chain(r.frame.iter().flat_map(|(a, b)| [a, b]))
                .map(|p| regex::Regex::new(p).expect("a rule's pattern is a valid regex"))
                .collect()
        })
        .collect()
});

/// Each row's `absent` regexes, compiled.
static ABSENT: LazyLock<Vec<Vec<regex::Regex>>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|r| {
            r.absent
                .iter()
                .map(|p| regex::Regex::new(p).expect("a rule's pattern is a valid regex"))
                .collect()
        })
        .collect()
});

/// What a screen showed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub state: State,
    /// The row that decided it; `None` for `Unknown`.
    pub rule: Option<&'static Rule>,
    /// The screen lines that decided it (a dialog whole), without the box
    /// drawing around their text.
    pub lines: Vec<String>,
    /// The question, for an approval.
    pub question: Option<String>,
}

fn is_box_drawing(c: char) -> bool {
    ('\u{2500}'..='\u{259f}').contains(&c)
}

/// A blank line, or one that only draws a box or a rule.
fn is_frame(line: &str) -> bool {
    line.chars().all(|c| c.is_whitespace() || is_box_drawing(c))
}

/// A line's text without the frame characters and spaces around it.
fn unframed(line: &str) -> &str {
    line.trim_matches(|c: char| c.is_whitespace() || is_box_drawing(c))
}

/// Most lines a verdict reports.
const LINES_MAX: usize = 16;

/// Where `rule` matches `screen` (and the terminal's activity, when known):
/// the rows of its lines, or `None`.
fn matches(
    rule: &Rule,
    regexes: &[regex::Regex],
    screen: &[String],
    writing: Option<bool>,
) -> Option<Vec<usize>> {
    match (rule.activity, writing) {
        (Activity::Any, _) | (Activity::Writing, Some(true)) | (Activity::Quiet, Some(false)) => {}
        _ => return None,
    }
    let rows: Vec<usize> = regexes[..rule.lines.len()]
        .iter()
        .map(|re| screen.iter().rposition(|l| re.is_match(l)))
        .collect::<Option<_>>()?;
    if rule.last {
        let bottom = screen.iter().rposition(|l| !l.trim().is_empty())?;
        if rows[0] != bottom {
            return None;
        }
    }
    let above = &regexes[rule.lines.len()..rule.lines.len() + rule.above.len()];
    for (k, re) in above.iter().enumerate() {
        let row = rows[0].checked_sub(k + 1)?;
        if !re.is_match(&screen[row]) {
            return None;
        }
    }
    Some(rows)
}

/// The state `screen` (the visible lines, top first) shows for `cli`;
/// `writing` is whether its terminal was written to within [`QUIET`] (`None`:
/// not known, and the rows that need it do not match).
pub fn classify(cli: Cli, screen: &[String], writing: Option<bool>) -> Verdict {
    for ((rule, regexes), absent) in RULES.iter().zip(COMPILED.iter()).zip(ABSENT.iter()) {
        if rule.cli != cli {
            continue;
        }
        let Some(rows) = matches(rule, regexes, screen, writing) else {
            continue;
        };
        if absent
            .iter()
            .any(|re| screen.iter().any(|l| re.is_match(l)))
        {
            continue;
        }
        let first = rows[0];
        let last = rows.iter().copied().max().unwrap_or(first);
        let (top, bottom) = match &regexes[rule.lines.len() + rule.above.len()..] {
            [top, bottom] => (
                (0..first)
                    .rev()
                    .find(|&r| top.is_match(&screen[r]))
                    .unwrap_or(first),
                (last..screen.len())
                    .find(|&r| bottom.is_match(&screen[r]))
                    .unwrap_or(last),
            ),
            _ => (first.min(last), last),
        };
        let lines = if rule.frame.is_some() {
            screen[top..=bottom]
                .iter()
                .filter(|l| !is_frame(l))
                .take(LINES_MAX)
                .map(|l| unframed(l).to_string())
                .collect()
        } else {
            let mut rows = rows;
            rows.sort_unstable();
            rows.dedup();
            rows.iter()
                .take(LINES_MAX)
                .map(|&r| screen[r].trim().to_string())
                .collect()
        };
        let question =
            (rule.state == State::WaitingForApproval).then(|| unframed(&screen[first]).to_string());
        return Verdict {
            state: rule.state,
            rule: Some(rule),
            lines,
            question,
        };
    }
    Verdict {
        state: State::Unknown,
        rule: None,
        lines: Vec::new(),
        question: None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::identify::Cli::{Aider, ClaudeCode, Codex, Gemini};
    use super::super::table::needs_activity;
    use super::super::table::State::{WaitingForApproval, WaitingForInput, Working};
    use super::*;

    fn screen(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    #[test]
    fn rows_that_need_the_writes_do_not_match_without_them() {
        let idle = screen("› Ask Codex to do anything\n  ← for agents · ? for shortcuts\n");
        assert_eq!(classify(Codex, &idle, Some(false)).state, WaitingForInput);
        assert_eq!(classify(Codex, &idle, Some(true)).state, Working);
        assert_eq!(classify(Codex, &idle, None).state, State::Unknown);
        // The start screen is idle while Codex redraws it (issue 38 item 6);
        // with an answer on it, writes are an answer streaming in.
        let start = ">_ OpenAI Codex (v0.171.0)\n   ~/work\n\n› Ask Codex to do anything\n  ← for agents · ? for shortcuts\n";
        assert_eq!(
            classify(Codex, &screen(start), Some(true)).state,
            WaitingForInput
        );
        assert_eq!(classify(Codex, &screen(start), None).state, WaitingForInput);
        let streaming = ">_ OpenAI Codex (v0.171.0)\n› Say hello\n• Hello from\n› Ask Codex to do anything\n  ? for shortcuts\n";
        assert_eq!(
            classify(Codex, &screen(streaming), Some(true)).state,
            Working
        );
        assert!(needs_activity(Codex) && !needs_activity(ClaudeCode));
    }

    #[test]
    fn no_matching_row_is_unknown() {
        let v = classify(Cli::ClaudeCode, &screen("$ ls\nfile\n$ "), None);
        assert_eq!(v.state, State::Unknown);
        assert!(v.rule.is_none() && v.lines.is_empty());
    }

    #[test]
    fn a_dialog_is_reported_whole_without_its_frame() {
        let text = "\
● earlier answer
╭────────────────────╮
│ ? Shell  echo hi   │
│ Allow execution of [Shell]?  │
│                    │
│ ● 1. Allow once    │
│   2. No            │
╰────────────────────╯
";
        let v = classify(Gemini, &screen(text), None);
        assert_eq!(v.state, WaitingForApproval);
        assert_eq!(v.question.as_deref(), Some("Allow execution of [Shell]?"));
        assert_eq!(
            v.lines,
            [
                "? Shell  echo hi",
                "Allow execution of [Shell]?",
                "● 1. Allow once",
                "2. No"
            ]
        );
        // The prompt must be the last line for aider's input row.
        let v = classify(
            Aider,
            &screen("diff>\nHello\ndiff> fix it\n     ░█    Waiting for openai/x\n"),
            None,
        );
        assert_eq!(v.state, Working);
        assert_eq!(
            classify(Aider, &screen("diff>\nsome output\n"), None).state,
            State::Unknown
        );
        assert_eq!(
            classify(Aider, &screen("out\ndiff> \n\n"), None).state,
            WaitingForInput
        );
    }

    #[test]
    fn every_rule_compiles_and_names_its_version() {
        assert_eq!(COMPILED.len(), RULES.len());
        for r in RULES {
            assert!(!r.lines.is_empty() && !r.checked.is_empty(), "{}", r.what);
        }
    }
}
