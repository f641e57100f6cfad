//! Which tmux server this is: socket path + server pid + server start time + boot
//! id, and the *generation* string derived from them.
//!
//! The generation is a hash, not a random number, so references stay valid across a
//! broker restart for the same tmux server, while a restarted server on the same
//! socket (new pid, new start time) gets a different one and old references are
//! refused as `stale_target`.
//!
//! The pid comes from the peer credentials of a connection to tmux's own socket
//! (`platform::peer_cred`: `SO_PEERCRED` on Linux): no tmux command runs (so no
//! user hook fires), and the answer is the process that really owns the socket.
//! The same connection gives the server's exit descriptor where the kernel has
//! one (`peer_exit_fd`: `SO_PEERPIDFD`). The start time and the boot id come
//! from the process table.
//!
//! [`ancestor_server`] finds the server a process runs under from its
//! ancestry, for a process that has no `$TMUX`.

use crate::platform::{self, process_table};
use crate::sys;
use sha2::{Digest, Sha256};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerIdentity {
    pub socket_path: PathBuf,
    pub pid: u32,
    pub start_ticks: u64,
    /// Seconds since the epoch (btime + start ticks / CLK_TCK).
    pub start_time: u64,
    pub boot_id: String,
    pub generation: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("no tmux server is listening on {path}: {source}")]
    NoServer { path: PathBuf, source: io::Error },
    #[error("cannot identify the tmux server on {path}: {source}")]
    Identify { path: PathBuf, source: io::Error },
}

/// A live tmux server found on its socket, with a pidfd when the kernel gives one.
pub struct Probe {
    pub identity: ServerIdentity,
    /// `SO_PEERPIDFD` of the server: turns readable when it exits.
    pub pidfd: Option<OwnedFd>,
}

pub fn probe(socket: &Path) -> Result<Probe, ServerError> {
    let path = std::fs::canonicalize(socket).unwrap_or_else(|_| socket.to_path_buf());
    let stream = UnixStream::connect(&path).map_err(|source| ServerError::NoServer {
        path: path.clone(),
        source,
    })?;
    let pidfd = platform::peer_exit_fd(&stream).ok();
    let identity = identity_of(&stream, path)?;
    Ok(Probe { identity, pidfd })
}

/// The identity of the server at the other end of `stream`, a connection
/// already made to its socket `path` (canonical): its pid from the peer
/// credentials, its start time and the boot id from the process table. No
/// tmux command runs.
pub fn identity_of(stream: &UnixStream, path: PathBuf) -> Result<ServerIdentity, ServerError> {
    let ident_err = |source| ServerError::Identify {
        path: path.clone(),
        source,
    };
    let cred = platform::peer_cred(stream).map_err(ident_err)?;
    let st = process_table::stat(cred.pid).map_err(ident_err)?;
    let start_time = process_table::start_time_epoch(st.start_ticks).map_err(ident_err)?;
    let boot_id = process_table::boot_id();
    let generation = generation_of(&path, cred.pid, st.start_ticks, &boot_id);
    Ok(ServerIdentity {
        socket_path: path,
        pid: cred.pid,
        start_ticks: st.start_ticks,
        start_time,
        boot_id,
        generation,
    })
}

/// Of the live tmux servers listening on `sockets`, the one that `pid` runs
/// under: a pane's process is a child of its tmux server, so the server is an
/// ancestor of everything started in that pane. The nearest ancestor wins (a
/// server started from inside another server's pane is closer). Each socket is
/// only connected to (`SO_PEERCRED`), so no tmux command runs and no hook fires;
/// a socket nobody listens on is skipped.
pub fn ancestor_server(sockets: &[PathBuf], pid: u32) -> Option<Probe> {
    let chain = process_table::ancestry(pid, 256);
    sockets
        .iter()
        .filter_map(|s| probe(s).ok())
        .filter_map(|p| {
            chain
                .iter()
                .position(|a| *a == p.identity.pid)
                .map(|depth| (depth, p))
        })
        .min_by_key(|(depth, _)| *depth)
        .map(|(_, p)| p)
}

/// 32 lowercase hex characters, stable for one server instance.
pub fn generation_of(socket: &Path, pid: u32, start_ticks: u64, boot_id: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"tmux-mcp generation v1\0");
    h.update(socket.as_os_str().as_encoded_bytes());
    h.update(format!("\0{pid}\0{start_ticks}\0{boot_id}").as_bytes());
    sys::hex(&h.finalize()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_changes_with_each_part_and_is_hex32() {
        let base = generation_of(Path::new("/tmp/s"), 10, 100, "b");
        assert_eq!(base.len(), 32);
        assert_eq!(base, generation_of(Path::new("/tmp/s"), 10, 100, "b"));
        assert_ne!(base, generation_of(Path::new("/tmp/t"), 10, 100, "b"));
        assert_ne!(base, generation_of(Path::new("/tmp/s"), 11, 100, "b"));
        assert_ne!(base, generation_of(Path::new("/tmp/s"), 10, 101, "b"));
        assert_ne!(base, generation_of(Path::new("/tmp/s"), 10, 100, "c"));
    }

    /// A listener of this process stands in for a tmux server: it is an
    /// ancestor (depth 0) of this process but not of its parent, and a socket
    /// nobody listens on is passed over.
    #[test]
    fn ancestor_server_is_the_listener_this_process_runs_under() {
        let dir = std::env::temp_dir().join(format!("tmux-mcp-anc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let stale = dir.join("a-stale");
        drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
        let live = dir.join("b-live");
        let _l = std::os::unix::net::UnixListener::bind(&live).unwrap();
        let socks = vec![stale, live.clone()];
        let found =
            ancestor_server(&socks, std::process::id()).expect("the live listener is found");
        assert_eq!(found.identity.pid, std::process::id());
        assert_eq!(
            found.identity.socket_path,
            std::fs::canonicalize(&live).unwrap()
        );
        assert!(
            ancestor_server(&socks, std::os::unix::process::parent_id()).is_none(),
            "a child's server is not its parent's"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn no_server_is_a_clear_error() {
        let err = probe(Path::new("/nonexistent/tmux-mcp-test/sock"))
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("no tmux server is listening"),
            "{err}"
        );
    }
}
