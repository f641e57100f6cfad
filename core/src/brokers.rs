//! A tmux server's broker, from outside it: where it listens, and starting it
//! through tmux when none does (`run-shell -b`, so the broker is a job of that
//! server and dies with it). The `tmux-mcp` command's `attach` uses it for the
//! agent's own server, and a broker for another server an agent names
//! (`server` on a tool call, issue 52).

use crate::paths::BrokerPaths;
use crate::server::ServerIdentity;
use crate::tmux::{format_literal, shell_quote, Tmux};
use crate::wire::is_live;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a started broker has to come up.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// The socket of a live broker for `id`, if any: in a directory of ours, and
/// itself a socket of ours (never one someone else planted).
pub fn find(id: &ServerIdentity) -> Option<PathBuf> {
    BrokerPaths::candidates(&id.generation)
        .into_iter()
        .map(|p| p.socket)
        .find(|s| is_our_socket(s) && is_live(s))
}

fn is_our_socket(path: &Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.file_type().is_socket() && m.uid() == crate::sys::current_uid())
}

/// A binary that ships beside the running one (the build puts both in one
/// directory), else on PATH.
pub fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)))
        .filter(|p| p.is_file())
        .or_else(|| crate::tmux::find_in_path(name))
        .unwrap_or_else(|| PathBuf::from(name))
}

/// The broker of `id`, started with `run-shell -b` on that server when none
/// listens, waited for up to [`START_TIMEOUT`]. Blocking (the `tmux-mcp`
/// command: `tmux` is exec'd). `Err` says why, in words for a person (the
/// binary missing, tmux refusing, no broker in time, and where its log is).
pub fn ensure(id: &ServerIdentity) -> Result<PathBuf, String> {
    if let Some(sock) = find(id) {
        return Ok(sock);
    }
    let (broker, cmd) = start_command()?;
    Tmux::new(&id.socket_path)
        .run_blocking(&["run-shell", "-b", &cmd])
        .map_err(|e| format!("starting the broker with tmux run-shell -b: {e}"))?;
    let deadline = Instant::now() + START_TIMEOUT;
    while Instant::now() < deadline {
        if let Some(sock) = find(id) {
            return Ok(sock);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(no_broker(id, &broker))
}

/// [`ensure`] for a broker that calls another server's: `run-shell -b` goes
/// through tmux's client protocol in process, so a server of another tmux
/// version than the `tmux` on PATH is started too (exec'd `tmux` only when
/// the server speaks another protocol), and no thread blocks while waiting.
pub async fn ensure_async(id: &ServerIdentity) -> Result<PathBuf, String> {
    if let Some(sock) = find(id) {
        return Ok(sock);
    }
    let (broker, cmd) = start_command()?;
    let args = ["run-shell", "-b", cmd.as_str()];
    match crate::tmux::direct::run_async(&id.socket_path, &args, Duration::from_secs(5)).await {
        Ok(out) if out.status == 0 => {}
        Ok(out) => {
            return Err(format!(
                "tmux run-shell -b failed (exit {}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
        Err(crate::tmux::direct::DirectError::Version) => {
            let sock = id.socket_path.clone();
            let cmd = cmd.clone();
            tokio::task::spawn_blocking(move || {
                Tmux::new(&sock).run_blocking(&["run-shell", "-b", &cmd])
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("starting the broker with tmux run-shell -b: {e}"))?;
        }
        Err(e) => return Err(format!("starting the broker with tmux run-shell -b: {e}")),
    }
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    while tokio::time::Instant::now() < deadline {
        if let Some(sock) = find(id) {
            return Ok(sock);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err(no_broker(id, &broker))
}

/// The broker binary and the `run-shell -b` command that starts it as a job
/// of the server (tmux expands `#{socket_path}` itself: the path exactly as
/// the server knows it).
fn start_command() -> Result<(PathBuf, String), String> {
    let broker = sibling("tmux-mcp-broker");
    // Said at once, not as a broker that never comes up: nothing to start.
    if !broker.is_file() {
        let here = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(|d| d.display().to_string()))
            .unwrap_or_else(|| "?".into());
        return Err(format!("the broker binary tmux-mcp-broker is missing: it is neither beside this tmux-mcp (in {here}) nor on PATH; install both commands together (they ship in one package), then try again"));
    }
    let cmd = format!(
        "exec {} --socket {} </dev/null >/dev/null 2>&1",
        format_literal(&shell_quote(&broker.display().to_string())),
        "'#{socket_path}'"
    );
    Ok((broker, cmd))
}

/// Why no broker came up for `id`. A log is named only where one was
/// written: the broker picks its directory itself (see `paths`), and one
/// that failed before that logged nothing.
fn no_broker(id: &ServerIdentity, broker: &Path) -> String {
    match BrokerPaths::candidates(&id.generation)
        .into_iter()
        .map(|p| p.log)
        .find(|l| l.is_file())
    {
        Some(log) => format!(
            "the broker did not come up within 10 s (binary {}); its log: {}",
            broker.display(),
            log.display()
        ),
        None => format!(
            "the broker did not come up within 10 s (binary {}) and wrote no log; run `{} --socket {} --log-stderr` to see why, and `tmux-mcp doctor`",
            broker.display(),
            shell_quote(&broker.display().to_string()),
            shell_quote(&id.socket_path.display().to_string())
        ),
    }
}
