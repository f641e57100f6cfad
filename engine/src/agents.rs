//! Coding-agent CLIs in panes: which CLI a process runs (from its executable
//! and arguments, never the pane title), and which state its screen shows.
//!
//! A state comes from one rule table per CLI ([`rules`]): each row names the
//! state, the screen lines that must all be present (regexes, each matched
//! against one visible line), and the CLI version it was checked against
//! (screens captured from the real TUI, kept in
//! `tests/python/agents/screens/`). Rows are tried in order, so the dialogs
//! that cover the input box come first; when no row matches, the state is
//! [`State::Unknown`], never a guess. Pure: the scan of `/proc` is
//! [`find_in_terminals`], the screen is read by the caller.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::LazyLock;
use tmux_mcp_core::platform::process_table;

/// A coding-agent CLI we recognise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cli {
    ClaudeCode,
    Codex,
    Gemini,
    Aider,
    Opencode,
}

impl Cli {
    pub const ALL: [Cli; 5] = [
        Cli::ClaudeCode,
        Cli::Codex,
        Cli::Gemini,
        Cli::Aider,
        Cli::Opencode,
    ];

    /// The name tools report.
    pub fn name(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "claude-code",
            Cli::Codex => "codex",
            Cli::Gemini => "gemini",
            Cli::Aider => "aider",
            Cli::Opencode => "opencode",
        }
    }

    /// The command people type for it (an executable's or a script's name).
    fn command(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "claude",
            Cli::Codex => "codex",
            Cli::Gemini => "gemini",
            Cli::Aider => "aider",
            Cli::Opencode => "opencode",
        }
    }

    /// The package directory a script or a bundled binary of it lives in.
    fn package_dir(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "/@anthropic-ai/claude-code/",
            Cli::Codex => "/@openai/codex/",
            Cli::Gemini => "/@google/gemini-cli/",
            Cli::Aider => "/site-packages/aider/",
            Cli::Opencode => "/opencode-ai/",
        }
    }

    /// The npm package whose `package.json` carries its version.
    fn npm_package(self) -> Option<&'static str> {
        match self {
            Cli::ClaudeCode => Some("@anthropic-ai/claude-code"),
            Cli::Codex => Some("@openai/codex"),
            Cli::Gemini => Some("@google/gemini-cli"),
            Cli::Aider => None,
            Cli::Opencode => Some("opencode-ai"),
        }
    }
}

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Executables that run a script named by their first non-option argument.
fn is_interpreter(name: &str) -> bool {
    matches!(name, "node" | "nodejs" | "bun" | "deno")
        || name
            .strip_prefix("python")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// The CLI a process runs, from its executable and argv: the command's own
/// name (`claude`, `codex`, …, also as a symlinked launcher), a script or a
/// bundled binary inside the CLI's package, or `python -m aider`.
pub fn identify(exe: Option<&Path>, argv: &[String]) -> Option<Cli> {
    let exe = exe.and_then(Path::to_str).unwrap_or_default();
    let argv0 = argv.first().map(String::as_str).unwrap_or_default();
    let by_name = |name: &str| Cli::ALL.into_iter().find(|c| c.command() == name);
    let in_package = |path: &str| {
        Cli::ALL
            .into_iter()
            .find(|c| path.contains(c.package_dir()))
    };
    // Claude Code's native build runs as `…/claude/versions/<version>`.
    if exe.contains("/claude/versions/") {
        return Some(Cli::ClaudeCode);
    }
    if let Some(cli) = by_name(basename(argv0))
        .or_else(|| by_name(basename(exe)))
        .or_else(|| in_package(exe))
    {
        return Some(cli);
    }
    if !(is_interpreter(basename(exe)) || is_interpreter(basename(argv0))) {
        return None;
    }
    let mut rest = argv.iter().skip(1).map(String::as_str);
    while let Some(arg) = rest.next() {
        if arg == "-m" {
            return rest.next().and_then(by_name);
        }
        if arg.starts_with('-') {
            continue;
        }
        return by_name(basename(arg))
            .or_else(|| by_name(basename(arg).trim_end_matches(".js")))
            .or_else(|| in_package(arg));
    }
    None
}

/// The version of the CLI a process runs: from the `package.json` of its npm
/// package (or of the platform package its native binary comes in, e.g.
/// `@openai/codex-linux-x64`), found above its executable or script with
/// symlinks resolved; for aider, from its `aider_chat-V.dist-info` in the
/// virtualenv its script is in.
pub fn version_of(cli: Cli, exe: Option<&Path>, argv: &[String]) -> Option<String> {
    let paths = exe
        .map(Path::to_path_buf)
        .into_iter()
        .chain(argv.iter().take(4).map(std::path::PathBuf::from))
        .filter_map(|p| std::fs::canonicalize(p).ok());
    for path in paths {
        for dir in path.ancestors().skip(1).take(6) {
            let found = match cli.npm_package() {
                Some(package) => npm_version(dir, package),
                None => dist_info_version(dir, "aider_chat"),
            };
            if found.is_some() {
                return found;
            }
        }
    }
    None
}

/// `dir/package.json`'s version when it is `package`'s (or a platform
/// package of it), without a platform suffix (`0.171.0-linux-x64`).
fn npm_version(dir: &Path, package: &str) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    let name = json["name"].as_str()?;
    if name != package
        && !name
            .strip_prefix(package)
            .is_some_and(|r| r.starts_with('-'))
    {
        return None;
    }
    let version = json["version"].as_str()?;
    let platform = ["-linux", "-darwin", "-win32"];
    let cut = platform.iter().filter_map(|p| version.find(p)).min();
    Some(version[..cut.unwrap_or(version.len())].to_string())
}

/// The version of Python distribution `dist` installed in virtualenv `dir`.
fn dist_info_version(dir: &Path, dist: &str) -> Option<String> {
    let prefix = format!("{dist}-");
    for lib in std::fs::read_dir(dir.join("lib")).ok()?.flatten() {
        let Ok(entries) = std::fs::read_dir(lib.path().join("site-packages")) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if let Some(v) = name
                .strip_prefix(&prefix)
                .and_then(|r| r.strip_suffix(".dist-info"))
            {
                return Some(v.to_string());
            }
        }
    }
    None
}

/// An agent CLI process found on a pane's terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub cli: Cli,
    pub pid: u32,
    pub start_ticks: u64,
    /// In the terminal's foreground process group (what the screen shows).
    pub foreground: bool,
    pub version: Option<String>,
}

impl Found {
    /// Whether the process is still the one that was found.
    pub fn alive(&self) -> bool {
        process_table::stat(self.pid)
            .is_ok_and(|st| tmux_mcp_core::process::runs_as(&st, Some(self.start_ticks)))
    }
}

/// The agent CLI of each terminal in `ttys` (device paths such as
/// `/dev/pts/3`, keyed by the caller's pane id), in one pass over `/proc`.
/// Of several matching processes (a launcher and the CLI it started), the
/// oldest in the foreground process group is taken, else the oldest.
pub fn find_in_terminals<'a>(
    ttys: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> std::io::Result<HashMap<String, Found>> {
    let mut by_device: HashMap<u64, &str> = HashMap::new();
    for (pane, tty) in ttys {
        // st_rdev and /proc's tty_nr encode a device number the same way.
        if let Ok(md) = std::fs::metadata(tty) {
            by_device.insert(md.rdev(), pane);
        }
    }
    let mut found: HashMap<String, Found> = HashMap::new();
    if by_device.is_empty() {
        return Ok(found);
    }
    for st in process_table::all()? {
        let Some(pane) = by_device.get(&st.tty_nr) else {
            continue;
        };
        let Ok(argv) = process_table::cmdline(st.pid) else {
            continue;
        };
        let exe = process_table::exe(st.pid);
        let Some(cli) = identify(exe.as_deref(), &argv) else {
            continue;
        };
        let candidate = Found {
            cli,
            pid: st.pid,
            start_ticks: st.start_ticks,
            foreground: st.in_foreground(),
            version: None,
        };
        let better = |old: &Found| {
            (
                candidate.foreground,
                std::cmp::Reverse(candidate.start_ticks),
            ) > (old.foreground, std::cmp::Reverse(old.start_ticks))
        };
        if found.get(*pane).is_none_or(better) {
            let version = version_of(cli, exe.as_deref(), &argv);
            found.insert(
                pane.to_string(),
                Found {
                    version,
                    ..candidate
                },
            );
        }
    }
    Ok(found)
}

/// The agent last found in each pane, kept until the pane closes or runs
/// another agent: a pane whose agent is gone shows that it exited.
#[derive(Default)]
pub struct Seen(std::sync::Mutex<HashMap<String, Found>>);

impl Seen {
    /// Records what one scan found. `scanned` are the panes looked at, with
    /// whether each is still live; `panes` are every pane of the server (the
    /// others are forgotten). Returns, for each scanned pane without a running
    /// agent, the agent seen there before: it exited.
    pub fn update<'a>(
        &self,
        scanned: impl IntoIterator<Item = &'a str>,
        found: &HashMap<String, Found>,
        panes: &std::collections::HashSet<&str>,
    ) -> HashMap<String, Found> {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        seen.retain(|pane, _| panes.contains(pane.as_str()));
        let mut exited = HashMap::new();
        for pane in scanned {
            match found.get(pane) {
                Some(f) => {
                    seen.insert(pane.to_string(), f.clone());
                }
                None => {
                    if let Some(old) = seen.get(pane) {
                        exited.insert(pane.to_string(), old.clone());
                    }
                }
            }
        }
        exited
    }
}

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
/// the caller measures it before [`classify`]).
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
const RULES: &[Rule] = &[
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
            (rule.state == WaitingForApproval).then(|| unframed(&screen[first]).to_string());
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
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn identifies_by_command_script_and_module() {
        let node = Some(Path::new("/usr/bin/node"));
        assert_eq!(identify(None, &argv("claude")), Some(Cli::ClaudeCode));
        assert_eq!(
            identify(
                node,
                &argv("node /usr/lib/node_modules/@anthropic-ai/claude-code/cli.js")
            ),
            Some(Cli::ClaudeCode)
        );
        assert_eq!(
            identify(node, &argv("node --no-warnings /home/u/.npm/bin/gemini")),
            Some(Cli::Gemini)
        );
        assert_eq!(
            identify(
                Some(Path::new(
                    "/x/node_modules/@openai/codex/vendor/x86_64/codex/codex-x86_64"
                )),
                &argv("/x/node_modules/@openai/codex/vendor/x86_64/codex/codex-x86_64")
            ),
            Some(Cli::Codex)
        );
        assert_eq!(
            identify(
                Some(Path::new("/usr/bin/python3.11")),
                &argv("python3 -m aider --model x")
            ),
            Some(Cli::Aider)
        );
        assert_eq!(
            identify(
                Some(Path::new("/home/u/.local/share/claude/versions/2.1.3")),
                &argv("claude")
            ),
            Some(Cli::ClaudeCode)
        );
        // Arguments of other programs are not commands.
        assert_eq!(
            identify(Some(Path::new("/usr/bin/vim")), &argv("vim claude")),
            None
        );
        assert_eq!(identify(node, &argv("node server.js codex")), None);
        assert_eq!(
            identify(
                Some(Path::new("/usr/bin/python3")),
                &argv("python3 -c print")
            ),
            None
        );
        assert_eq!(identify(None, &[]), None);
    }

    #[test]
    fn reads_the_version_from_the_package() {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("node_modules/@google/gemini-cli");
        std::fs::create_dir_all(pkg.join("dist")).unwrap();
        std::fs::write(
            pkg.join("package.json"),
            r#"{"name": "@google/gemini-cli", "version": "0.61.0"}"#,
        )
        .unwrap();
        std::fs::write(pkg.join("dist/index.js"), "").unwrap();
        let script = pkg.join("dist/index.js").display().to_string();
        let args = vec!["node".to_string(), script];
        assert_eq!(
            identify(Some(Path::new("/usr/bin/node")), &args),
            Some(Cli::Gemini)
        );
        assert_eq!(
            version_of(Cli::Gemini, Some(Path::new("/usr/bin/node")), &args).as_deref(),
            Some("0.61.0")
        );
        assert_eq!(version_of(Cli::Aider, None, &args), None);
    }

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
