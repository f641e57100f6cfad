//! Which tmux server a command means, and its broker (found, or started through
//! tmux: core `brokers`).
//! [`ServerArgs`] are the `-S`/`-L` flags the subcommands share.

use std::path::PathBuf;
use tmux_mcp_core::paths;
use tmux_mcp_core::server::{self, ServerIdentity};

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

pub use tmux_mcp_core::brokers::{find, sibling};

/// Makes sure the broker runs; returns the server and the broker socket.
pub fn ensure(args: &ServerArgs) -> anyhow::Result<(ServerIdentity, PathBuf)> {
    let id = server(args)?;
    let sock = tmux_mcp_core::brokers::ensure(&id).map_err(anyhow::Error::msg)?;
    Ok((id, sock))
}
