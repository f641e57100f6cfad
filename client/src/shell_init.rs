//! `tmux-mcp shell-init bash|zsh|fish`: the snippet a person evals in their
//! shell's rc file, as `zoxide init` or `starship init` do, so the broker of
//! the tmux server the shell runs in learns what the shell runs (OSC 133's
//! marks: prompt shown, command started with its text, command ended with
//! its status; the working directory; timestamps).
//!
//! The snippet appends one line per mark to `srv-<gen16>.sh/<pane id>` in the
//! broker's private runtime directory, with builtins only: no fork at a
//! prompt, no tmux command (so no tmux hook fires), nothing printed. The
//! directory is the server instance's: the broker makes it when it starts
//! and removes it when the server exits, so the snippet is inert while no
//! broker runs and survives a broker restart. Outside tmux it is a comment.
//!
//! `tmux-mcp shell-init --check` says whether the shell it runs in is
//! enrolled (it reads the pane's file for its parent's pid).

use crate::locate::{self, ServerArgs};
use anyhow::bail;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tmux_mcp_core::paths::{self, BrokerPaths};

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    fn snippet(self) -> &'static str {
        match self {
            Shell::Bash => include_str!("shell/init.bash"),
            Shell::Zsh => include_str!("shell/init.zsh"),
            Shell::Fish => include_str!("shell/init.fish"),
        }
    }

    fn rc_line(self) -> &'static str {
        match self {
            Shell::Bash => "eval \"$(tmux-mcp shell-init bash)\"    # in ~/.bashrc",
            Shell::Zsh => "eval \"$(tmux-mcp shell-init zsh)\"     # in ~/.zshrc",
            Shell::Fish => "tmux-mcp shell-init fish | source     # in ~/.config/fish/config.fish",
        }
    }
}

/// The marks directory of the server `server` selects: the live broker's,
/// else the one a broker started now would use.
fn marks_dir(server: &ServerArgs) -> anyhow::Result<PathBuf> {
    let id = locate::server(server)?;
    if let Some(sock) = locate::find(&id) {
        if let Some(dir) = sock.parent() {
            return Ok(BrokerPaths::new(dir, &id.generation).marks);
        }
    }
    let (dir, _) = paths::choose_runtime_dir().map_err(anyhow::Error::msg)?;
    Ok(BrokerPaths::new(&dir, &id.generation).marks)
}

/// `dir` as one word every shell reads the same way (single quotes; the
/// runtime directory never holds a quote or a backslash, refused if it did).
fn quoted(dir: &Path) -> anyhow::Result<String> {
    let s = dir.to_str().unwrap_or_default();
    if s.is_empty() || s.contains(['\'', '\\', '\n']) {
        bail!("the runtime directory {dir:?} cannot be written in a shell snippet");
    }
    Ok(format!("'{s}'"))
}

pub fn init(server: &ServerArgs, shell: Shell) -> anyhow::Result<ExitCode> {
    if std::env::var_os("TMUX_PANE").is_none() {
        println!("# tmux-mcp shell-init: not in a tmux pane; nothing to enroll");
        return Ok(ExitCode::SUCCESS);
    }
    let dir = match marks_dir(server) {
        Ok(d) => d,
        Err(e) => {
            // Said where the person reads it, never a broken rc file.
            println!("# tmux-mcp shell-init: {e:#}; nothing to enroll");
            return Ok(ExitCode::SUCCESS);
        }
    };
    print!(
        "{}",
        printed(shell.snippet()).replace("@DIR@", &quoted(&dir)?)
    );
    Ok(ExitCode::SUCCESS)
}

/// The snippet as evaluated: without its comment lines, which a shell whose
/// `interactive_comments` is off (bash's `shopt -u`) would run as commands
/// in an `eval`; the snippets keep every comment on a line of its own.
fn printed(snippet: &str) -> String {
    let mut out = String::with_capacity(snippet.len());
    for line in snippet.lines().filter(|l| !l.trim_start().starts_with('#')) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Whether the shell this runs in (the parent process) is enrolled: a mark
/// of its pid in its pane's file.
pub fn check(server: &ServerArgs) -> anyhow::Result<ExitCode> {
    let Some(pane) = std::env::var_os("TMUX_PANE") else {
        println!("not enrolled: this shell is not in a tmux pane");
        return Ok(ExitCode::from(1));
    };
    let pane = pane.to_string_lossy().into_owned();
    let dir = marks_dir(server)?;
    let id = locate::server(server)?;
    let live = locate::find(&id).is_some();
    let shell_pid = tmux_mcp_core::sys::parent_pid();
    let marks = std::fs::read_to_string(dir.join(&pane)).unwrap_or_default();
    // This shell's marks (the third field is the writer's pid) and its name.
    let mine: Vec<&str> = marks
        .lines()
        .filter(|l| l.split('\t').nth(2).and_then(|p| p.parse::<u32>().ok()) == Some(shell_pid))
        .collect();
    let ours = mine.len();
    let name = mine
        .last()
        .and_then(|l| l.split('\t').nth(1))
        .unwrap_or_default();
    if ours > 0 {
        println!(
            "enrolled: {name} (pid {shell_pid}) in pane {pane} reports to {} ({ours} marks); broker {}",
            dir.display(),
            if live { "running" } else { "not running (marks wait for it)" }
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("not enrolled: no mark of this shell (pid {shell_pid}) in pane {pane}.");
    if !live {
        println!("No broker runs for this tmux server: load the plugin (or run `tmux-mcp start`).");
    }
    println!("Add the line for your shell to its rc file and start a new shell:");
    for s in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        println!("  {}", s.rc_line());
    }
    Ok(ExitCode::from(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No `#` starts a word in what is evaluated: a comment left in it
    /// would run as a command where interactive_comments is off.
    #[test]
    fn the_printed_snippets_hold_no_comment() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let text = printed(shell.snippet());
            for line in text.lines() {
                let word_start = line
                    .char_indices()
                    .any(|(i, c)| c == '#' && (i == 0 || line[..i].ends_with([' ', '\t'])));
                assert!(!word_start, "{shell:?}: {line:?}");
            }
            assert!(text.contains("__tmcp_take"), "{shell:?}");
        }
    }
}
