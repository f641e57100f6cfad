//! The line `run_command` types into a shell that is not enrolled, and the
//! script that shell then sources: their spelling in each shell syntax, the
//! quoting of the one path they name, and the shell's own verdict on the line
//! before anything is typed.
//!
//! The line runs the command in a group whose output goes to the broker's own
//! pty, reached through a link in the job's directory (`DIR/t`,
//! [`crate::toolkit::shell::typed_job::JobDir`]), then sources that pty:
//!
//! ```text
//!  { CMD; } >DIR/t 2>&1; . DIR/t
//! ```
//!
//! The group closes on a line of its own when CMD could swallow `; }`, so
//! CMD may end in `&` or a comment. `{ …; }` runs in the shell itself, so
//! `cd` and `export` persist as if the person had typed them. fish spells
//! it `begin; CMD; end >DIR/t 2>&1; cat DIR/t | source` (fish sources only
//! regular files), with `$status` and an external `head` for the release.
//!
//! The script ([`script`]) is queued in the pty's input before the line is
//! typed. After the command it prints the end marker with `$?`, in bash
//! takes the typed line out of history, waits for the broker's release and
//! returns the status, so `$?` is the command's; none of it is shown in the
//! pane. The marker's nonce is only in the script, never in the typed line,
//! so the shell's echo cannot be mistaken for the result. In bash the line
//! leaves history that way; elsewhere its leading space keeps it out where
//! `HIST_IGNORE_SPACE` (zsh) is set.
//!
//! Before typing, the shell's own parse of the line ([`syntax_error`]: `-n`)
//! refuses a line it would reject, and [`zsh_has_comment`] a comment zsh
//! would read as words. [`shell_of`] names the shells the line is spelled for.

use crate::toolkit::shell::shells::{self, Syntax};
use std::time::Duration;

/// The shell `command` (`pane_current_command`) names, if run_command can type
/// into it; the error says why not.
pub fn shell_of(command: &str) -> Result<(&str, Syntax), String> {
    match shells::kind(command) {
        (name, Some(Syntax::Other)) => Err(format!("its shell is {name}, whose syntax run_command does not type; it supports sh, bash, zsh, dash, ksh, ash and fish (use send_keys there).")),
        (name, Some(syntax)) => Ok((name, syntax)),
        (_, None) => Err(format!("its foreground program is {command:?}, not a shell (sh, bash, zsh, dash, ksh, ash, fish); wait until it ends, or use send_keys.")),
    }
}

/// The line typed into the shell (see the module doc): the command in a
/// group whose output goes to the broker's pty, then the shell reads
/// [`script`] from that pty (`. PTY`; fish sources only regular files, so
/// `cat PTY | source`, which also reads it whole). One line when nothing in
/// CMD could swallow the group's end (a comment, a trailing `&`, `;`, `|` or
/// `\`, several lines); else the group closes on a line of its own.
pub fn line(command: &str, tty: &str, syntax: Syntax) -> String {
    let tail = command.trim_end();
    let one_line = !command.contains(['\n', '#'])
        && !tail.is_empty()
        && !tail.ends_with(['&', ';', '|', '\\']);
    let close = if one_line { "; " } else { "\n" };
    match syntax {
        Syntax::Fish => format!(" begin; {command}{close}end >{tty} 2>&1; cat {tty} | source"),
        _ => format!(" {{ {command}{close}}} >{tty} 2>&1; . {tty}"),
    }
}

/// What the shell reads from the pty after the command (never shown in the
/// pane): the end marker with the status, in bash the deletion of the typed
/// line from history (`history -d -1`, bash 5.0+, silent where history is
/// off or older; after the command, so only a command that adds history
/// itself could lose its line), the wait for the broker's release, and last
/// the command's status given back (`return` from the sourced script), so
/// `$?` at the next prompt is the command's, as if the person had typed it.
/// fish has read the script whole through `cat`, so one external read waits
/// (its own `read` would open its line editor on a terminal).
/// `marker` is the printf format of the job's end marker, `tty` the
/// terminal's path as a shell word.
pub fn script(marker: &str, tty: &str, shell: &str, syntax: Syntax) -> String {
    if syntax == Syntax::Fish {
        return format!(
            "set -l {STATUS_VAR} $status; printf '{marker}' ${STATUS_VAR} >{tty}; head -n 1 <{tty} >/dev/null; return ${STATUS_VAR}"
        );
    }
    let forget = if shell == "bash" {
        " history -d -1 2>/dev/null;"
    } else {
        ""
    };
    format!(
        "{STATUS_VAR}=$?; printf '{marker}' \"${STATUS_VAR}\" >{tty};{forget} {}; eval \"unset {STATUS_VAR}; return ${STATUS_VAR}\"",
        tmux_mcp_engine::mirror::release_read(tty)
    )
}

/// The variable the script keeps the status in until it returns it (unset
/// again before the prompt; fish's is local to the sourced script).
const STATUS_VAR: &str = "__tmux_mcp_status";

/// `path` as one word of the shell's syntax: as it is when it holds nothing
/// a shell would split or expand, else single-quoted.
pub fn shell_path(path: &str, syntax: Syntax) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c);
    if !path.is_empty() && path.chars().all(plain) {
        return path.to_string();
    }
    match syntax {
        Syntax::Fish => format!("'{}'", path.replace('\\', "\\\\").replace('\'', "\\'")),
        _ => tmux_mcp_core::tmux::quote::shell_quote(path),
    }
}

/// The shell's own parse of the whole typed line (`-n`: read, never run),
/// with the pane's shell's executable: its message when it does not parse,
/// so a line the shell would reject is never typed. `None` when it parses,
/// and when the check cannot be made (the shell's executable unknown, a
/// shell without `-n` here, no answer within a second); the typed line is
/// then watched for ever starting instead (see [`crate::toolkit::shell::typed_job::collect`]).
pub async fn syntax_error(shell_pid: Option<u32>, syntax: Syntax, line: &str) -> Option<String> {
    let exe = tmux_mcp_core::platform::process_table::exe(shell_pid?)?;
    let name = exe.file_name()?.to_string_lossy().into_owned();
    let args: &[&str] = match (name.as_str(), syntax) {
        (_, Syntax::Fish) => &["--no-config", "-n", "-c"],
        // bash-completion turns extglob on in most interactive shells; it
        // only makes more lines parse.
        ("bash", _) => &["-O", "extglob", "-n", "-c"],
        ("zsh", _) => &["-f", "-n", "-c"],
        ("dash" | "sh" | "ksh" | "ksh93" | "mksh" | "ash", _) => &["-n", "-c"],
        _ => return None,
    };
    let child = tokio::process::Command::new(&exe)
        .args(args)
        .arg(line)
        .env_remove("BASH_ENV")
        .env_remove("ENV")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let out = tokio::time::timeout(Duration::from_secs(1), child.wait_with_output())
        .await
        .ok()?
        .ok()?;
    if out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let why: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .collect();
    Some(if why.is_empty() {
        format!("{name} -n exited with {}", out.status)
    } else {
        why.join(" / ")
    })
}

/// Whether zsh's lexer finds a comment in `command` (its words with
/// comments kept and with them dropped differ), asked of the pane's own zsh
/// executable; a `#` is a comment only where a word starts. `true` when it
/// cannot be asked (refused rather than guessed).
pub async fn zsh_has_comment(shell_pid: Option<u32>, command: &str) -> bool {
    if !command.contains('#') {
        return false;
    }
    let Some(exe) = shell_pid.and_then(tmux_mcp_core::platform::process_table::exe) else {
        return true;
    };
    let child = tokio::process::Command::new(&exe)
        .args(["-f", "-c", "(( ${#${(Z+c+)1}} != ${#${(Z+C+)1}} ))", "zsh"])
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .status();
    match tokio::time::timeout(Duration::from_secs(1), child).await {
        Ok(Ok(status)) => status.code() != Some(1),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_gives_the_status_back_and_leaves_no_variable() {
        // Each shell sources the script as the typed line does, after a
        // command that failed with 7; the release read is fed by stdin.
        let dir = std::env::temp_dir().join(format!("tmcp-script-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = dir.join("t");
        let tw = t.to_string_lossy().into_owned();
        for (shell, syntax) in [
            ("bash", Syntax::Posix),
            ("dash", Syntax::Posix),
            ("zsh", Syntax::Posix),
            ("fish", Syntax::Fish),
        ] {
            assert!(
                std::process::Command::new(shell)
                    .arg("-c")
                    .arg("true")
                    .status()
                    .is_ok(),
                "this test needs {shell} installed (see the README's test requirements)"
            );
            // A regular file stands in for the terminal: the marker goes there
            // and the release line is read from it.
            std::fs::write(&t, "release\n").unwrap();
            let script_path = dir.join("s");
            std::fs::write(&script_path, script("M%d", &tw, shell, syntax)).unwrap();
            let sp = script_path.to_string_lossy();
            let line = if syntax == Syntax::Fish {
                format!("begin; false; sh -c 'exit 7'; end; source {sp}; echo \"st=$status v=$__tmux_mcp_status\"")
            } else {
                format!(
                    "{{ sh -c 'exit 7'; }}; . {sp}; echo \"st=$? v=${{__tmux_mcp_status-unset}}\""
                )
            };
            let out = std::process::Command::new(shell)
                .arg("-c")
                .arg(&line)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let want = if syntax == Syntax::Fish {
                "st=7 v="
            } else {
                "st=7 v=unset"
            };
            assert_eq!(
                text.trim(),
                want,
                "{shell}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_is_one_word_in_each_syntax() {
        assert_eq!(
            shell_path("/run/user/0/tmux-mcp/srv-ab.run-cd/t", Syntax::Posix),
            "/run/user/0/tmux-mcp/srv-ab.run-cd/t"
        );
        assert_eq!(
            shell_path("/tmp/a b/it's", Syntax::Posix),
            "'/tmp/a b/it'\\''s'"
        );
        assert_eq!(
            shell_path("/tmp/a b/it's\\x", Syntax::Fish),
            "'/tmp/a b/it\\'s\\\\x'"
        );
    }

    #[test]
    fn shells_are_recognised_and_others_refused_by_name() {
        assert!(
            shell_of("bash") == Ok(("bash", Syntax::Posix))
                && shell_of("-zsh") == Ok(("zsh", Syntax::Posix))
                && shell_of("/bin/sh") == Ok(("sh", Syntax::Posix))
                && shell_of("fish") == Ok(("fish", Syntax::Fish))
        );
        assert!(shell_of("tcsh").unwrap_err().contains("tcsh"));
        assert!(shell_of("python3").unwrap_err().contains("not a shell"));
    }

    #[test]
    fn the_typed_line_is_one_group_to_the_terminal_and_parses_after_comments_and_ampersands() {
        assert_eq!(
            line("ls | head -3", "/dev/pts/9", Syntax::Posix),
            " { ls | head -3; } >/dev/pts/9 2>&1; . /dev/pts/9"
        );
        assert_eq!(
            line("echo hi # c", "/dev/pts/9", Syntax::Posix),
            " { echo hi # c\n} >/dev/pts/9 2>&1; . /dev/pts/9"
        );
        let cmds = [
            "echo hi # c",
            "sleep 1 &",
            "cd /tmp; export X=1",
            "cd /tmp;",
            "if true; then echo y; fi",
            "echo a |\ncat",
            "echo a \\\n b",
        ];
        for cmd in cmds {
            for shell in ["sh", "bash"] {
                let line = line(cmd, "/dev/null", Syntax::Posix);
                let ok = std::process::Command::new(shell)
                    .args(["-n", "-c", &line])
                    .status()
                    .map(|s| s.success());
                assert!(!matches!(ok, Ok(false)), "{shell} rejects {line:?}");
            }
        }
        let marker = "\\33_ab12;%d\\33\\\\";
        let s = script(marker, "/r/t", "bash", Syntax::Posix);
        assert_eq!(
            s,
            "__tmux_mcp_status=$?; printf '\\33_ab12;%d\\33\\\\' \"$__tmux_mcp_status\" >/r/t; history -d -1 2>/dev/null; read -r _ </r/t || read -r _ </r/t; eval \"unset __tmux_mcp_status; return $__tmux_mcp_status\""
        );
        assert!(!script(marker, "/dev/pts/9", "dash", Syntax::Posix).contains("history"));
    }
}
