//! Which coding-agent CLI a process runs, from its executable path and
//! arguments (never the pane title). Pure: the caller reads them from the
//! process table.
//!
//! A CLI is known by its command name, by a script or bundled binary inside
//! its package, or by `python -m aider`.

use std::path::Path;

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
    pub(super) fn npm_package(self) -> Option<&'static str> {
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
}
