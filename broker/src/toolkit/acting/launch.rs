//! How every creation is spelled and starts its pane's program, in both
//! families (`tmux_create`; `create_session`, `create_window`,
//! `split_window`, `build_workspace`, `respawn_pane`): the one builder of a
//! creation's argv ([`Create::argv`]); the directory asked for, checked
//! before anything is sent; the `-c`/`-e`/`--` tail; the `-P -F` that makes
//! tmux print the new ids with the pane's pid and start directory, and what
//! that tells.
//!
//! [`resolve_cwd`] takes a relative directory as the agent's: its relay's
//! working directory (`platform::cwd_of`). [`Program`] and [`program_tail`]
//! spell the tail. [`print_format`] and [`printed_pid`] are the `-P -F`.
//! [`started_elsewhere`] says when tmux started the pane in another
//! directory.

use crate::session::Session;
use crate::toolkit::acting::tmux_command::{self, Delivery};
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::libtmux::action;
use crate::toolkit::libtmux::wording;
use crate::toolkit::schemas::patterns;
use crate::toolkit::target::references::{self, Kind};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use tmux_mcp_core::tmux::quote;

/// `cwd` made absolute (relative to the relay's working directory) and checked:
/// an existing directory this host can enter. The error is the reason, for
/// each family to word.
pub fn resolve_cwd(session: &Session, cwd: &str) -> Result<PathBuf, &'static str> {
    const MISSING: &str = "must be an existing, accessible directory";
    let path = Path::new(cwd);
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        let base = tmux_mcp_core::platform::cwd_of(session.peer_pid).map_err(|_| {
            "is relative and the agent's working directory cannot be read; give an absolute path"
        })?;
        base.join(path)
    };
    let path = std::fs::canonicalize(&path).map_err(|_| MISSING)?;
    if !path.is_dir() {
        return Err(MISSING);
    }
    if path.as_os_str().as_bytes().contains(&0) {
        return Err("must not contain NUL");
    }
    if !tmux_mcp_core::sys::may_enter(&path) {
        return Err(MISSING);
    }
    if path.to_str().is_none() {
        return Err("must be valid UTF-8");
    }
    Ok(path)
}

/// What a new pane runs.
pub enum Program<'a> {
    /// Executed directly, never through a shell.
    Argv(&'a [&'a str]),
    /// A command line the caller explicitly asked tmux to give to its shell.
    Shell(&'a str),
    /// tmux's `default-command` (the user's shell).
    Default,
}

/// Whether `program` (an `argv[0]`) names an executable file: a path as it
/// is (relative to `cwd` when known), a bare name on `path_var` (the pane's
/// own `PATH` when its environment sets one, else the broker's, which tmux
/// gave it), so a pane is never created to fail at once with "No such file".
/// The reason when it does not.
pub fn find_program(
    program: &str,
    path_var: Option<&str>,
    cwd: Option<&Path>,
) -> Result<(), String> {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = Path::new(program);
        let full = match (p.is_absolute(), cwd) {
            (true, _) => p.to_path_buf(),
            (false, Some(dir)) => dir.join(p),
            // Relative to a directory tmux chooses: left to tmux.
            (false, None) => return Ok(()),
        };
        return if executable(&full) {
            Ok(())
        } else {
            Err(format!("{program:?} is not an executable file"))
        };
    }
    let from_env = std::env::var("PATH").unwrap_or_default();
    let path_var = path_var.unwrap_or(&from_env);
    if path_var
        .split(':')
        .filter(|d| !d.is_empty())
        .any(|d| executable(&Path::new(d).join(program)))
    {
        Ok(())
    } else {
        Err(format!("{program:?} is not found on PATH ({path_var})"))
    }
}

/// The schema of a program's environment (`NAME: value`, as tmux `-e` takes
/// it), for every tool that starts one.
pub fn env_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object", "maxProperties": 128,
        "propertyNames": { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "maxLength": 256 },
        "additionalProperties": { "type": "string", "pattern": patterns::NO_NUL }
    })
}

/// The tail shared by `new-session`, `new-window`, `split-window` and
/// `respawn-pane`: `-c cwd`, `-e K=V` per variable, then the program after
/// `--`. A one-element argv runs as `/usr/bin/env -- argv0`, since tmux hands
/// a single argument to `$SHELL -c`; a shell line is that single argument.
pub fn program_tail<'a>(
    cwd: Option<&Path>,
    env: impl IntoIterator<Item = (&'a str, &'a str)>,
    program: Program<'_>,
) -> Vec<String> {
    let mut cmd: Vec<String> = Vec::new();
    if let Some(p) = cwd {
        cmd.extend([
            "-c".into(),
            quote::format_arg(p.to_str().unwrap_or_default()),
        ]);
    }
    for (k, v) in env {
        cmd.extend(["-e".into(), quote::literal_arg(&format!("{k}={v}"))]);
    }
    match program {
        Program::Argv(argv) => {
            cmd.push("--".into());
            if argv.len() == 1 {
                cmd.extend(["/usr/bin/env".into(), "--".into()]);
            }
            cmd.extend(argv.iter().map(|a| quote::literal_arg(a)));
        }
        Program::Shell(line) => cmd.extend(["--".into(), quote::literal_arg(line)]),
        Program::Default => {}
    }
    cmd
}

/// What a creation makes, and where: the head of its argv. Names are
/// format-expanded by tmux, so they go through `quote::format_arg`.
pub enum Create {
    /// `new-session -d`: a detached session with its first window and pane.
    Session {
        name: Option<String>,
        window_name: Option<String>,
        width: Option<i64>,
        height: Option<i64>,
    },
    /// `new-window -t SESSION:[INDEX]`, in the background unless `select`.
    Window {
        session: String,
        index: Option<i64>,
        name: Option<String>,
        select: bool,
    },
    /// `split-window -t PANE`, the new pane on `side` of it (tmux's default
    /// when `None`), `size` its `-l` (cells, or `N%`), in the background
    /// unless `select`.
    Split {
        pane: String,
        side: Option<Side>,
        size: Option<String>,
        select: bool,
    },
}

/// Where a split puts the new pane beside the one it splits.
#[derive(Debug, Clone, Copy)]
pub enum Side {
    Right,
    Left,
    Below,
    Above,
}

impl Create {
    /// What tmux creates: the kinds of the ids it can print, in order.
    pub fn made(&self) -> &'static [Kind] {
        match self {
            Create::Session { .. } => &[Kind::Session, Kind::Window, Kind::Pane],
            Create::Window { .. } | Create::Split { .. } => &[Kind::Window, Kind::Pane],
        }
    }

    /// The creation's argv, the one builder of it: the head, `-P -F` printing
    /// the new ids of `expected` ([`print_format`]), then `tail` (the
    /// program's, [`program_tail`]).
    pub fn argv(&self, expected: &[Kind], tail: impl IntoIterator<Item = String>) -> Vec<String> {
        let mut cmd: Vec<String> = Vec::new();
        // Names are format-expanded by tmux.
        let quoted = |n: &Option<String>| n.as_deref().map(quote::format_arg);
        match self {
            Create::Session {
                name,
                window_name,
                width,
                height,
            } => {
                cmd.extend(["new-session".into(), "-d".into()]);
                cmd.extend(flagged("-s", quoted(name)));
                cmd.extend(flagged("-n", quoted(window_name)));
                cmd.extend(flagged("-x", width.map(|x| x.to_string())));
                cmd.extend(flagged("-y", height.map(|y| y.to_string())));
            }
            Create::Window {
                session,
                index,
                name,
                select,
            } => {
                cmd.extend(head("new-window", *select));
                let at = match index {
                    Some(i) => format!("{session}:{i}"),
                    None => format!("{session}:"),
                };
                cmd.extend(["-t".into(), at]);
                cmd.extend(flagged("-n", quoted(name)));
            }
            Create::Split {
                pane,
                side,
                size,
                select,
            } => {
                cmd.extend(head("split-window", *select));
                if let Some(side) = side {
                    // tmux's -h splits side by side, -v one above the other;
                    // -b puts the new pane before (left of or above) the split one.
                    let (axis, before) = match side {
                        Side::Right => ("-h", false),
                        Side::Left => ("-h", true),
                        Side::Below => ("-v", false),
                        Side::Above => ("-v", true),
                    };
                    cmd.push(axis.into());
                    if before {
                        cmd.push("-b".into());
                    }
                }
                cmd.extend(["-t".into(), pane.clone()]);
                cmd.extend(flagged("-l", size.clone()));
            }
        }
        cmd.extend(["-P".into(), "-F".into(), print_format(expected)]);
        cmd.extend(tail);
        cmd
    }
}

/// A creation's command, `-d` (in the background) unless `select`.
fn head(command: &str, select: bool) -> Vec<String> {
    let mut head = vec![command.to_string()];
    if !select {
        head.push("-d".into());
    }
    head
}

/// `flag value`, when there is a value.
fn flagged(flag: &str, value: Option<String>) -> impl Iterator<Item = String> {
    value.map(|v| [flag.to_string(), v]).into_iter().flatten()
}

/// The `-F` of a creation's `-P`: the new ids of `expected`, space separated;
/// then, on a line of its own, the new pane's pid and the directory tmux
/// started it in (`pane_start_path`: the `-c` as tmux expanded it, also when
/// that directory could not be entered and the pane started elsewhere).
pub fn print_format(expected: &[references::Kind]) -> String {
    let ids: Vec<&str> = expected
        .iter()
        .map(|k| match k {
            references::Kind::Session => "#{session_id}",
            references::Kind::Window => "#{window_id}",
            _ => "#{pane_id}",
        })
        .collect();
    format!("{}\n#{{pane_pid}} #{{pane_start_path}}", ids.join(" "))
}

/// The new pane's pid and start directory from what [`print_format`] printed.
fn printed_pane(printed: &str) -> (Option<u32>, &str) {
    let second = printed
        .split_once('\n')
        .map_or("", |(_, rest)| rest.trim_end_matches('\n'));
    let (pid, path) = second.split_once(' ').unwrap_or((second, ""));
    (pid.parse().ok(), path)
}

/// The new pane's pid, from what [`print_format`] printed.
pub fn printed_pid(printed: &str) -> Option<u32> {
    printed_pane(printed).0
}

/// Why the pane tmux started is not in the directory asked for, if it is not.
pub fn started_elsewhere(asked: Option<&Path>, printed: &str, pane: &str) -> Option<String> {
    let asked = asked?.to_str()?;
    let (_, started) = printed_pane(printed);
    (started != asked).then(|| format!("tmux created pane {pane} but started it in {started:?}, not in the directory asked for ({asked:?})"))
}

/// Runs a creation whose `-F` is [`print_format`]`(expected)`; the
/// new ids and the new pane's pid. A pane tmux started elsewhere than `cwd`
/// is an error (it exists).
pub async fn spawn(
    session: &Session,
    cmd: &[String],
    expected: &[Kind],
    cwd: Option<&std::path::Path>,
) -> Result<(Vec<String>, Option<u32>), ToolOutput> {
    let argv: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let printed = action::run(session, &argv).await?;
    let ids = printed_ids(&printed, expected)?;
    if let Some(why) = started_elsewhere(cwd, &printed, ids.last().map_or("", String::as_str)) {
        tmux_command::refresh_after(&session.broker).await;
        return Err(wording::action_error(
            &format!("{why}; close it or use it as it is."),
            Delivery::Observed,
        ));
    }
    Ok((ids, printed_pid(&printed)))
}

/// The ids on the first line tmux printed for `-P -F`
/// [`print_format`]`(expected)`, space separated, when they are exactly one
/// of each expected kind in order: the one parser of what a creation prints
/// (each family words its own error when it is not).
pub fn parse_printed_ids<'a>(printed: &'a str, expected: &[Kind]) -> Option<Vec<&'a str>> {
    let ids: Vec<&str> = printed
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    (ids.len() == expected.len()
        && ids
            .iter()
            .zip(expected)
            .all(|(id, k)| Kind::of_id(id) == Some(*k)))
    .then_some(ids)
}

/// The ids tmux printed for `-P -F` (space separated), each of the expected
/// kind; else an error saying tmux did act.
pub fn printed_ids(printed: &str, expected: &[Kind]) -> Result<Vec<String>, ToolOutput> {
    if let Some(ids) = parse_printed_ids(printed, expected) {
        return Ok(ids.into_iter().map(str::to_string).collect());
    }
    Err(wording::action_error(&format!("tmux reported success but printed no recognisable ids ({:?}); what it created may exist. Call list_panes.", printed.trim()), Delivery::Observed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_found_as_a_path_or_on_path() {
        assert_eq!(
            find_program("sh", Some("/nowhere:/bin:/usr/bin"), None),
            Ok(())
        );
        assert!(find_program("sh", Some("/nowhere"), None)
            .unwrap_err()
            .contains("not found on PATH"));
        assert_eq!(find_program("/bin/sh", None, None), Ok(()));
        assert!(find_program("/no/such/program", None, None).is_err());
        // A directory and a file that is not executable are not programs.
        assert!(find_program("/tmp", None, None).is_err());
        let plain = std::env::temp_dir().join(format!("tmcp-not-a-program-{}", std::process::id()));
        std::fs::write(&plain, b"data").unwrap();
        let refused = find_program(&plain.to_string_lossy(), None, None);
        std::fs::remove_file(&plain).unwrap();
        assert!(refused.is_err());
        assert_eq!(find_program("bin/sh", None, Some(Path::new("/"))), Ok(()));
        assert_eq!(find_program("./x", None, None), Ok(()));
    }

    /// `c`'s argv up to its `-P -F`, checked to end in `-P -F` with the
    /// print format of `expected`, then `tail`.
    fn head(c: &Create, expected: &[Kind], tail: &[&str]) -> Vec<String> {
        let argv = c.argv(expected, tail.iter().map(|s| s.to_string()));
        let mut end = vec!["-P".to_string(), "-F".into(), print_format(expected)];
        end.extend(tail.iter().map(|s| s.to_string()));
        assert!(argv.ends_with(&end), "{argv:?}");
        argv[..argv.len() - end.len()].to_vec()
    }

    #[test]
    fn each_creation_is_spelled_as_tmux_takes_it() {
        let tail = ["--", "sleep", "9"];
        let session = Create::Session {
            name: Some("s".into()),
            window_name: Some("w".into()),
            width: Some(80),
            height: Some(24),
        };
        assert_eq!(
            head(&session, session.made(), &tail),
            [
                "new-session",
                "-d",
                "-s",
                "s",
                "-n",
                "w",
                "-x",
                "80",
                "-y",
                "24"
            ]
        );
        let bare = Create::Session {
            name: None,
            window_name: None,
            width: None,
            height: None,
        };
        assert_eq!(head(&bare, bare.made(), &[]), ["new-session", "-d"]);
        let window = |index, select| Create::Window {
            session: "$1".into(),
            index,
            name: Some("w".into()),
            select,
        };
        let w = window(Some(3), false);
        assert_eq!(
            head(&w, w.made(), &tail),
            ["new-window", "-d", "-t", "$1:3", "-n", "w"]
        );
        let w = window(None, true);
        assert_eq!(
            head(&w, w.made(), &[]),
            ["new-window", "-t", "$1:", "-n", "w"]
        );
        let split = |side, size: Option<&str>, select| Create::Split {
            pane: "%2".into(),
            side,
            size: size.map(str::to_string),
            select,
        };
        let s = split(Some(Side::Left), Some("30%"), false);
        assert_eq!(
            head(&s, &[Kind::Pane], &[]),
            ["split-window", "-d", "-h", "-b", "-t", "%2", "-l", "30%"]
        );
        let s = split(Some(Side::Below), None, true);
        assert_eq!(head(&s, s.made(), &[]), ["split-window", "-v", "-t", "%2"]);
        let s = split(None, None, false);
        assert_eq!(head(&s, s.made(), &[]), ["split-window", "-d", "-t", "%2"]);
        // Names are format-expanded by tmux: `#` is doubled.
        let hashed = Create::Window {
            session: "$1".into(),
            index: None,
            name: Some("a#b".into()),
            select: true,
        };
        assert_eq!(hashed.argv(&[], [])[4], quote::format_arg("a#b"));
    }
}
