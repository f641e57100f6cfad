//! Running tmux commands against one server.
//!
//! Every command here is a separate `tmux -S SOCKET …` client. Which commands
//! the broker may run is a policy decision made by its callers: reads go through
//! `run-shell` (see `feed`), because tmux runs the user's `after-<command>`
//! hooks after `list-panes`, `display-message`, `show-options` and friends, but
//! not after `run-shell` or `show-hooks`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Tmux {
    pub bin: PathBuf,
    pub socket: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum TmuxError {
    #[error("could not start {bin}: {source}")]
    Spawn { bin: String, source: std::io::Error },
    #[error("tmux {command} failed (exit {status:?}): {stderr}")]
    Failed { command: String, status: Option<i32>, stderr: String },
    #[error("tmux {command} did not finish within {timeout:?}")]
    Timeout { command: String, timeout: Duration },
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

impl Tmux {
    pub fn new(socket: &Path) -> Self {
        Tmux { bin: find_tmux(), socket: socket.to_path_buf() }
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(&self.bin);
        cmd.arg("-S").arg(&self.socket).args(args);
        // The client must talk to *our* socket only, whatever the caller's env says.
        cmd.env_remove("TMUX").stdin(Stdio::null());
        cmd
    }

    /// Runs one tmux command; returns stdout on success.
    pub async fn run(&self, args: &[&str], timeout: Duration) -> Result<String, TmuxError> {
        let name = args.first().copied().unwrap_or("").to_string();
        let mut cmd = tokio::process::Command::from(self.command(args));
        cmd.kill_on_drop(true);
        let fut = cmd.output();
        let out = match tokio::time::timeout(timeout, fut).await {
            Err(_) => return Err(TmuxError::Timeout { command: name, timeout }),
            Ok(Err(source)) => return Err(TmuxError::Spawn { bin: self.bin.display().to_string(), source }),
            Ok(Ok(out)) => out,
        };
        finish(name, out)
    }

    /// Blocking variant for the helpers and the relay.
    pub fn run_blocking(&self, args: &[&str]) -> Result<String, TmuxError> {
        let name = args.first().copied().unwrap_or("").to_string();
        let out = self.command(args).output().map_err(|source| TmuxError::Spawn { bin: self.bin.display().to_string(), source })?;
        finish(name, out)
    }
}

fn finish(command: String, out: std::process::Output) -> Result<String, TmuxError> {
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(TmuxError::Failed { command, status: out.status.code(), stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() })
    }
}

/// The tmux binary: `$TMUX_MCP_TMUX`, else `tmux` on PATH, else the usual places
/// (an MCP client may start us with a very small PATH).
pub fn find_tmux() -> PathBuf {
    if let Some(p) = std::env::var_os("TMUX_MCP_TMUX").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    find_in_path("tmux")
        .or_else(|| ["/usr/bin/tmux", "/usr/local/bin/tmux", "/opt/homebrew/bin/tmux", "/bin/tmux"].iter().map(PathBuf::from).find(|p| p.is_file()))
        .unwrap_or_else(|| PathBuf::from("tmux"))
}

pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Quotes `s` as one POSIX shell word.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Escapes `#` so tmux's format expansion leaves `s` as it is.
pub fn format_literal(s: &str) -> String {
    s.replace('#', "##")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("a'b"), "'a'\\''b'");
        assert_eq!(format_literal("/x/#S/y"), "/x/##S/y");
    }
}
