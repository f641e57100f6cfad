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
use tmux_mcp_core::procfs;

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

/// The version of the CLI a process runs, from the `package.json` of its npm
/// package (found above its script or bundled binary), when there is one.
pub fn version_of(cli: Cli, exe: Option<&Path>, argv: &[String]) -> Option<String> {
    let package = cli.npm_package()?;
    let paths = exe
        .and_then(Path::to_str)
        .into_iter()
        .chain(argv.iter().skip(1).map(String::as_str).take(4));
    for path in paths {
        let Some(at) = path.find(&cli.package_dir()[1..]) else {
            continue;
        };
        let dir = Path::new(&path[..at + cli.package_dir().len() - 1]);
        let Ok(text) = std::fs::read_to_string(dir.join("package.json")) else {
            continue;
        };
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if json["name"] == package {
            return json["version"].as_str().map(str::to_string);
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
        procfs::stat(self.pid).is_ok_and(|st| st.start_ticks == self.start_ticks && st.state != 'Z')
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
    for st in procfs::all()? {
        let Some(pane) = by_device.get(&st.tty_nr) else {
            continue;
        };
        let Ok(argv) = procfs::cmdline(st.pid) else {
            continue;
        };
        let exe = procfs::exe(st.pid);
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// Regexes that must each match one visible line (any order); the first
    /// is the deciding line (the question, for an approval).
    pub lines: &'static [&'static str],
}

/// Every CLI's table, in the order rows are tried.
pub fn rules() -> &'static [Rule] {
    RULES
}

const RULES: &[Rule] = &[
    // Claude Code 2.1.332 (tests/python/agents/screens/claude-2.1.332/).
    Rule {
        cli: Cli::ClaudeCode,
        state: State::WaitingForApproval,
        checked: "2.1.332",
        what: "a permission dialog",
        lines: &[
            r"Do you want to (proceed|make this edit|create)",
            r"^\W*1\. Yes",
        ],
    },
    Rule {
        cli: Cli::ClaudeCode,
        state: State::Working,
        checked: "2.1.332",
        what: "the spinner line's interrupt hint",
        lines: &[r"esc to interrupt"],
    },
    Rule {
        cli: Cli::ClaudeCode,
        state: State::WaitingForInput,
        checked: "2.1.332",
        what: "the input box",
        lines: &[r"^\s*│?\s*>(\s|$)"],
    },
    // Codex CLI 0.171.0 (tests/python/agents/screens/codex-0.171.0/).
    Rule {
        cli: Cli::Codex,
        state: State::WaitingForApproval,
        checked: "0.171.0",
        what: "an approval request",
        lines: &[r"Would you like to (run the following command|make the following edits)"],
    },
    Rule {
        cli: Cli::Codex,
        state: State::Working,
        checked: "0.171.0",
        what: "the status line's interrupt hint",
        lines: &[r"esc to interrupt"],
    },
    Rule {
        cli: Cli::Codex,
        state: State::WaitingForInput,
        checked: "0.171.0",
        what: "the composer",
        lines: &[r"^\s*›\s"],
    },
    // Gemini CLI 0.61.0 (tests/python/agents/screens/gemini-0.61.0/).
    Rule {
        cli: Cli::Gemini,
        state: State::WaitingForApproval,
        checked: "0.61.0",
        what: "a tool confirmation",
        lines: &[r"Allow execution"],
    },
    Rule {
        cli: Cli::Gemini,
        state: State::Working,
        checked: "0.61.0",
        what: "the loading line's cancel hint",
        lines: &[r"\(esc to cancel"],
    },
    Rule {
        cli: Cli::Gemini,
        state: State::WaitingForInput,
        checked: "0.61.0",
        what: "the input prompt",
        lines: &[r"Type your message"],
    },
];

static COMPILED: LazyLock<Vec<Vec<regex::Regex>>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|r| {
            r.lines
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
    /// The row that decided it; `None` for `Unknown` and `Exited`.
    pub rule: Option<&'static Rule>,
    /// The screen lines that decided it (for an approval, the dialog block
    /// around the question), trimmed at the end.
    pub lines: Vec<String>,
    /// The question, for an approval.
    pub question: Option<String>,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        std::ptr::eq(self, other)
    }
}
impl Eq for Rule {}

/// A blank line, or one that only draws a box.
fn is_frame(line: &str) -> bool {
    line.chars()
        .all(|c| c.is_whitespace() || ('\u{2500}'..='\u{257f}').contains(&c))
}

/// The frame characters and spaces around a line's text.
fn unframed(line: &str) -> &str {
    line.trim_matches(|c: char| c.is_whitespace() || ('\u{2500}'..='\u{257f}').contains(&c))
}

/// Most lines an approval's block reports.
const BLOCK_MAX: usize = 16;

/// The state `screen` (the visible lines, top first) shows for `cli`.
pub fn classify(cli: Cli, screen: &[String]) -> Verdict {
    for (rule, regexes) in RULES.iter().zip(COMPILED.iter()) {
        if rule.cli != cli {
            continue;
        }
        let rows: Option<Vec<usize>> = regexes
            .iter()
            .map(|re| screen.iter().rposition(|l| re.is_match(l)))
            .collect();
        let Some(rows) = rows else { continue };
        let first = rows[0];
        let (lines, question) = if rule.state == State::WaitingForApproval {
            // The dialog: the lines around the question up to blank or frame
            // lines, and down to the last line the rule needed.
            let top = (0..first)
                .rev()
                .take_while(|&r| !is_frame(&screen[r]))
                .last()
                .unwrap_or(first);
            let top = (0..top)
                .rev()
                .take(BLOCK_MAX / 2)
                .take_while(|&r| !is_frame(&screen[r]) || r + 1 == top)
                .last()
                .unwrap_or(top);
            let bottom = rows.iter().copied().max().unwrap_or(first);
            let bottom = (bottom..screen.len())
                .take_while(|&r| !is_frame(&screen[r]))
                .last()
                .unwrap_or(bottom);
            let block = screen[top..=bottom]
                .iter()
                .filter(|l| !is_frame(l))
                .take(BLOCK_MAX)
                .map(|l| l.trim_end().to_string())
                .collect();
            (block, Some(unframed(&screen[first]).to_string()))
        } else {
            let mut rows = rows;
            rows.sort_unstable();
            rows.dedup();
            (
                rows.iter()
                    .map(|&r| screen[r].trim_end().to_string())
                    .collect(),
                None,
            )
        };
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
    fn no_matching_row_is_unknown() {
        let v = classify(Cli::ClaudeCode, &screen("$ ls\nfile\n$ "));
        assert_eq!(v.state, State::Unknown);
        assert!(v.rule.is_none() && v.lines.is_empty());
    }

    #[test]
    fn every_rule_compiles_and_names_its_version() {
        assert_eq!(COMPILED.len(), RULES.len());
        for r in RULES {
            assert!(!r.lines.is_empty() && !r.checked.is_empty(), "{}", r.what);
        }
    }
}
