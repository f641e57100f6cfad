//! Finding the broker of a tmux server, and starting it through tmux when there
//! is none (`run-shell -b`, so the broker is a tmux job and dies with the server).
//! [`ServerArgs`] are the `-S`/`-L` flags the subcommands share.

use anyhow::{bail, Context};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tmux_mcp_core::paths::{self, BrokerPaths};
use tmux_mcp_core::server::{self, ServerIdentity};
use tmux_mcp_core::tmux::{format_literal, shell_quote, Tmux};
use tmux_mcp_core::wire::is_live;

/// Which tmux server: `-S PATH`, `-L NAME`, else `$TMUX`, else tmux's default.
#[derive(clap::Args, Debug, Clone)]
pub struct ServerArgs {
    /// tmux server socket path (as `tmux -S`).
    #[arg(
        short = 'S',
        long = "socket",
        value_name = "PATH",
        conflicts_with = "socket_name"
    )]
    pub socket: Option<PathBuf>,
    /// tmux server socket name (as `tmux -L`).
    #[arg(short = 'L', long = "socket-name", value_name = "NAME")]
    pub socket_name: Option<String>,
}

/// The tmux socket a command means: `-S`, `-L`, `$TMUX`; else the server in
/// one of whose panes this process runs (an MCP client such as Codex CLI
/// starts its servers with `TMUX` and `TMUX_PANE` removed, but the process
/// ancestry still leads to the pane's tmux server); else tmux's default.
pub fn tmux_socket(args: &ServerArgs) -> anyhow::Result<PathBuf> {
    if let Some(sock) =
        paths::explicit_tmux_socket(args.socket.as_deref(), args.socket_name.as_deref())
            .map_err(anyhow::Error::msg)?
    {
        return Ok(sock);
    }
    match server::ancestor_server(&paths::user_tmux_sockets(), std::process::id()) {
        Some(p) => Ok(p.identity.socket_path),
        None => Ok(paths::default_tmux_socket()),
    }
}

/// `args` with the socket chosen once, so that later look-ups (a relay
/// reconnecting after its broker died) mean the same server even when the
/// choice came from process ancestry.
pub fn pinned(args: &ServerArgs) -> anyhow::Result<ServerArgs> {
    Ok(ServerArgs {
        socket: Some(tmux_socket(args)?),
        socket_name: None,
    })
}

/// The live tmux server the arguments select.
pub fn server(args: &ServerArgs) -> anyhow::Result<ServerIdentity> {
    let sock = tmux_socket(args)?;
    // The cause first, then what to do; said once (main prints the chain).
    let probe = server::probe(&sock).map_err(|e| {
        anyhow::anyhow!(
            "{e}; start tmux (and the agent inside one of its panes), or pass -S PATH / -L NAME"
        )
    })?;
    Ok(probe.identity)
}

/// The socket of a live broker for `id`, if any: in a directory of ours, and
/// itself a socket of ours (never one someone else planted).
pub fn find(id: &ServerIdentity) -> Option<PathBuf> {
    BrokerPaths::candidates(&id.generation)
        .into_iter()
        .map(|p| p.socket)
        .find(|s| is_our_socket(s) && is_live(s))
}

fn is_our_socket(path: &std::path::Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.file_type().is_socket() && m.uid() == tmux_mcp_core::sys::current_uid())
}

/// A binary that ships beside this one (the build puts both in one directory),
/// else on PATH.
pub fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)))
        .filter(|p| p.is_file())
        .or_else(|| tmux_mcp_core::tmux::find_in_path(name))
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Makes sure the broker runs; returns the server and the broker socket.
pub fn ensure(args: &ServerArgs) -> anyhow::Result<(ServerIdentity, PathBuf)> {
    let id = server(args)?;
    if let Some(sock) = find(&id) {
        return Ok((id, sock));
    }
    let broker = sibling("tmux-mcp-broker");
    // Said at once, not as a broker that never comes up: nothing to start.
    if !broker.is_file() {
        let here = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(|d| d.display().to_string()))
            .unwrap_or_else(|| "?".into());
        bail!("the broker binary tmux-mcp-broker is missing: it is neither beside this tmux-mcp (in {here}) nor on PATH; install both commands together (they ship in one package), then try again");
    }
    let cmd = format!(
        "exec {} --socket {} </dev/null >/dev/null 2>&1",
        format_literal(&shell_quote(&broker.display().to_string())),
        // tmux expands this itself: the path exactly as the server knows it.
        "'#{socket_path}'"
    );
    Tmux::new(&id.socket_path)
        .run_blocking(&["run-shell", "-b", &cmd])
        .context("starting the broker with tmux run-shell -b")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Some(sock) = find(&id) {
            return Ok((id, sock));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Name a log only where one was written: the broker picks its directory
    // itself (see `paths`), and one that failed before that logged nothing.
    match BrokerPaths::candidates(&id.generation).into_iter().map(|p| p.log).find(|l| l.is_file()) {
        Some(log) => bail!("the broker did not come up within 10 s (binary {}); its log: {}", broker.display(), log.display()),
        None => bail!(
            "the broker did not come up within 10 s (binary {}) and wrote no log; run `{} --socket {} --log-stderr` to see why, and `tmux-mcp doctor`",
            broker.display(),
            shell_quote(&broker.display().to_string()),
            shell_quote(&id.socket_path.display().to_string())
        ),
    }
}
