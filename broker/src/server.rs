//! Which tmux server this is: socket path + server pid + server start time + boot
//! id, and the *generation* string derived from them.
//!
//! The generation is a hash, not a random number, so references stay valid across a
//! broker restart for the same tmux server, while a restarted server on the same
//! socket (new pid, new start time) gets a different one and old references are
//! refused as `stale_target`.
//!
//! The pid comes from `SO_PEERCRED` on a connection to tmux's own socket: no tmux
//! command runs (so no user hook fires), and the answer is the process that really
//! owns the socket.

use crate::{procfs, sys};
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
    let stream = UnixStream::connect(&path).map_err(|source| ServerError::NoServer { path: path.clone(), source })?;
    let ident_err = |source| ServerError::Identify { path: path.clone(), source };
    let cred = sys::peer_cred(&stream).map_err(ident_err)?;
    let pidfd = sys::peer_pidfd(&stream).ok();
    drop(stream);
    let st = procfs::stat(cred.pid).map_err(ident_err)?;
    let start_time = procfs::start_time_epoch(st.start_ticks).map_err(ident_err)?;
    let boot_id = procfs::boot_id();
    let generation = generation_of(&path, cred.pid, st.start_ticks, &boot_id);
    Ok(Probe { identity: ServerIdentity { socket_path: path, pid: cred.pid, start_ticks: st.start_ticks, start_time, boot_id, generation }, pidfd })
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

    #[test]
    fn no_server_is_a_clear_error() {
        let err = probe(Path::new("/nonexistent/tmux-mcp-test/sock")).err().unwrap();
        assert!(err.to_string().contains("no tmux server is listening"), "{err}");
    }
}
