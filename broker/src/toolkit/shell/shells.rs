//! Which programs are shells: `run_command` types only into a POSIX one, and
//! `list_sessions` counts a pane as busy when its foreground program is not a
//! shell at all. One table, so the two never disagree.

/// The syntax of a shell a pane may be running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// `{ …; }`, `$?`, redirections, `.`: what `run_command` types.
    Posix,
    /// fish: `begin; …; end`, `$status`, `source` (which `run_command`
    /// types in its own spelling).
    Fish,
    /// A shell with other syntax (csh, nu, …).
    Other,
}

/// Names `pane_current_command` shows for a POSIX shell.
const POSIX: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "ksh93", "mksh", "ash", "busybox",
];
/// Shells with other syntax, refused by name.
const OTHER: &[&str] = &["csh", "tcsh", "nu", "xonsh", "elvish", "pwsh"];

/// The program's name in `command` (`pane_current_command`: a login shell
/// shows as `-bash`, a path may show in full) and its syntax if it is a shell.
pub fn kind(command: &str) -> (&str, Option<Syntax>) {
    let name = command.trim_start_matches('-');
    let name = name.rsplit('/').next().unwrap_or(name);
    let syntax = if POSIX.contains(&name) {
        Some(Syntax::Posix)
    } else if name == "fish" {
        Some(Syntax::Fish)
    } else if OTHER.contains(&name) {
        Some(Syntax::Other)
    } else {
        None
    };
    (name, syntax)
}

/// Whether `command` is a shell of any syntax (a pane at its prompt, or
/// running something the shell started in the background).
pub fn is_shell(command: &str) -> bool {
    kind(command).1.is_some()
}

/// Whether shell `name` reads its prompt's line with a line editor of its
/// own (readline, ZLE, fish's reader), which turns the terminal's cooked
/// mode off while it reads.
pub fn has_line_editor(name: &str) -> bool {
    matches!(name, "bash" | "zsh" | "fish")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login_shells_and_paths_are_shells_programs_are_not() {
        assert_eq!(kind("-bash"), ("bash", Some(Syntax::Posix)));
        assert_eq!(kind("/usr/bin/zsh"), ("zsh", Some(Syntax::Posix)));
        assert_eq!(kind("fish"), ("fish", Some(Syntax::Fish)));
        assert_eq!(kind("tcsh"), ("tcsh", Some(Syntax::Other)));
        assert!(!is_shell("vim") && !is_shell("python3") && is_shell("dash"));
    }
}
