//! Running tmux commands against one server.
//!
//! Every command is a separate tmux client: either the in-process protocol
//! client (`direct`, sub-millisecond) or, where that is unavailable, a fork+exec
//! of `tmux -S SOCKET …`. Which commands the broker may run is its callers'
//! policy: reads use only commands tmux runs no `after-*` hook for (`feed`,
//! `hooks`), because tmux runs the user's `after-<command>` hooks after
//! `list-panes`, `display-message`, `show-options` and friends.

pub mod direct;
pub mod quote;
mod version;
pub use quote::{format_literal, shell_quote};
pub use version::version_at_least;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use direct::Output;

/// How commands reach the server.
#[derive(Debug, Clone)]
pub struct Tmux {
    pub bin: PathBuf,
    pub socket: PathBuf,
    /// Whether the start-up probe chose the in-process protocol client; else
    /// every command is an exec.
    direct: Arc<AtomicBool>,
}

#[derive(Debug, thiserror::Error)]
pub enum TmuxError {
    #[error("could not start {bin}: {source}")]
    Spawn { bin: String, source: std::io::Error },
    #[error("tmux {command} failed (exit {status:?}): {stderr}")]
    Failed {
        command: String,
        status: Option<i32>,
        stderr: String,
    },
    #[error("tmux {command} did not finish within {timeout:?}")]
    Timeout { command: String, timeout: Duration },
    #[error("tmux {command}: {source}")]
    Direct {
        command: String,
        source: direct::DirectError,
    },
}

impl TmuxError {
    /// Whether the command may have reached the server (for `delivery`).
    pub fn possibly_sent(&self) -> bool {
        !matches!(
            self,
            TmuxError::Spawn { .. }
                | TmuxError::Direct {
                    source: direct::DirectError::Connect { .. }
                        | direct::DirectError::TooLarge(_)
                        | direct::DirectError::Version,
                    ..
                }
        )
    }
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// How many commands tmux runs from `args` at top level: it splits a command
/// list given as arguments at each argument that ends in an unescaped `;`
/// (see [`quote::literal_arg`]). Commands an `if-shell` runs are not counted.
pub fn command_count(args: &[&str]) -> usize {
    let mut count = 0;
    let mut open = false;
    for a in args {
        let ends_list = a.ends_with(';') && !a.ends_with("\\;");
        let word = if ends_list { &a[..a.len() - 1] } else { a };
        if !word.is_empty() || !ends_list {
            open = true;
        }
        if ends_list && open {
            count += 1;
            open = false;
        }
    }
    count + usize::from(open)
}

/// Bytes of arguments one tmux command (list) may carry in one message of
/// tmux's client protocol: its largest message (16,384 bytes) less the header
/// (16) and the argument count (4); each argument takes its length plus a NUL.
pub const COMMAND_ARG_BYTES: usize = 16_384 - 16 - 4;

impl Tmux {
    pub fn new(socket: &Path) -> Self {
        Tmux {
            bin: find_tmux(),
            socket: socket.to_path_buf(),
            direct: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A client of the server at `socket` whose process is `pid` (the
    /// broker's own): exec'd as the server's own executable when
    /// `TMUX_MCP_TMUX` is unset and it can be read, so a server of another
    /// tmux version than the `tmux` on PATH (one the person started with
    /// another binary, or an agent's call named) is spoken to by a client of
    /// its own version: a tmux client and server must speak one protocol.
    pub fn for_server(socket: &Path, pid: u32) -> Self {
        let own = std::env::var_os("TMUX_MCP_TMUX").is_none_or(|v| v.is_empty());
        let exe = own
            .then(|| crate::platform::process_table::exe(pid))
            .flatten()
            .filter(|p| p.is_file());
        Tmux {
            bin: exe.unwrap_or_else(find_tmux),
            ..Tmux::new(socket)
        }
    }

    pub fn uses_direct(&self) -> bool {
        self.direct.load(Ordering::Relaxed)
    }

    /// Switches to the protocol client if it gives the same answer as the exec
    /// client for a harmless, hook-free command. Returns whether it did.
    pub async fn try_enable_direct(&self) -> bool {
        let args = ["list-commands", "-F", "#{pid} #{version}", "list-commands"];
        let exec = self.exec(&args, DEFAULT_TIMEOUT).await;
        let direct = match exec.as_ref() {
            Ok(e) if e.status == 0 => {
                Some(direct::run_async(&self.socket, &args, DEFAULT_TIMEOUT).await)
            }
            _ => None,
        };
        let same = matches!((&exec, &direct), (Ok(e), Some(Ok(d))) if d == e);
        if same {
            tracing::info!("tmux protocol client used");
        } else {
            tracing::info!(
                "tmux protocol client not used (exec {:?}; direct {:?})",
                exec.as_ref().map(|o| o.status),
                direct.map(|d| d.map(|o| o.status))
            );
        }
        self.direct.store(same, Ordering::Relaxed);
        same
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(&self.bin);
        cmd.arg("-S").arg(&self.socket).args(args);
        // The client must talk to *our* socket only, whatever the caller's env says.
        cmd.env_remove("TMUX").stdin(Stdio::null());
        cmd
    }

    async fn exec(&self, args: &[&str], timeout: Duration) -> Result<Output, TmuxError> {
        let name = args.first().copied().unwrap_or("").to_string();
        let mut cmd = tokio::process::Command::from(self.command(args));
        cmd.kill_on_drop(true);
        match tokio::time::timeout(timeout, cmd.output()).await {
            Err(_) => Err(TmuxError::Timeout {
                command: name,
                timeout,
            }),
            Ok(Err(source)) => Err(TmuxError::Spawn {
                bin: self.bin.display().to_string(),
                source,
            }),
            Ok(Ok(out)) => Ok(exec_output(out)),
        }
    }

    /// Runs one command and returns its exit status and both streams.
    pub async fn output(&self, args: &[&str], timeout: Duration) -> Result<Output, TmuxError> {
        if !self.uses_direct() {
            return self.exec(args, timeout).await;
        }
        let name = args.first().copied().unwrap_or("").to_string();
        match direct::run_async(&self.socket, args, timeout).await {
            // Too large for one message: tmux's own client cannot send it either
            // through this path, but exec passes argv without that limit.
            Err(direct::DirectError::TooLarge(_)) => self.exec(args, timeout).await,
            Err(source) => Err(TmuxError::Direct {
                command: name,
                source,
            }),
            Ok(out) => Ok(out),
        }
    }

    /// Runs one tmux command; returns stdout on success.
    pub async fn run(&self, args: &[&str], timeout: Duration) -> Result<String, TmuxError> {
        let name = args.first().copied().unwrap_or("").to_string();
        finish(name, self.output(args, timeout).await?)
    }

    /// Blocking variant for the plugin's helpers, `doctor` and the relay's
    /// broker start (always exec: they run once, outside any runtime, and the
    /// protocol client is only ever verified inside the broker).
    pub fn run_blocking(&self, args: &[&str]) -> Result<String, TmuxError> {
        let name = args.first().copied().unwrap_or("").to_string();
        let out = self
            .command(args)
            .output()
            .map_err(|source| TmuxError::Spawn {
                bin: self.bin.display().to_string(),
                source,
            })?;
        finish(name, exec_output(out))
    }
}

fn exec_output(out: std::process::Output) -> Output {
    Output {
        status: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: out.stderr,
    }
}

fn finish(command: String, out: Output) -> Result<String, TmuxError> {
    if out.status == 0 {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(TmuxError::Failed {
            command,
            status: Some(out.status),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// The tmux binary: `$TMUX_MCP_TMUX`, else `tmux` on PATH, else the usual places
/// (an MCP client may start us with a very small PATH).
pub fn find_tmux() -> PathBuf {
    if let Some(p) = std::env::var_os("TMUX_MCP_TMUX").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    find_in_path("tmux")
        .or_else(|| {
            [
                "/usr/bin/tmux",
                "/usr/local/bin/tmux",
                "/opt/homebrew/bin/tmux",
                "/bin/tmux",
            ]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from("tmux"))
}

pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::command_count;

    #[test]
    fn command_count_splits_where_tmux_does() {
        assert_eq!(
            command_count(&["list-commands", "-F", "x", "list-commands"]),
            1
        );
        assert_eq!(
            command_count(&[
                "show-hooks",
                "-g",
                ";",
                "capture-pane",
                "-p",
                ";",
                "display",
                "x"
            ]),
            3
        );
        // A final `;` on a word ends the command; `\;` is a literal semicolon.
        assert_eq!(command_count(&["send-keys", "-l", "x;", "display", "y"]), 2);
        assert_eq!(command_count(&["send-keys", "-l", "x\\;"]), 1);
        // An if-shell's commands are strings to tmux at this level.
        assert_eq!(
            command_count(&["if-shell", "-F", "1", "capture-pane -p ; display x"]),
            1
        );
        assert_eq!(command_count(&[";", "has-session", ";"]), 1);
        assert_eq!(command_count(&[]), 0);
    }
}
