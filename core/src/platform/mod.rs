//! The platform seam: every call specific to one operating system is behind
//! this module, and only here (`tests/e2e/layers.rs` checks that no
//! `cfg(target_os)` and no Linux-only call appears outside `core/src/platform/`).
//! Linux is the one backend today; ARCHITECTURE.md "Platform seam" plans the
//! macOS one against this same interface.
//!
//! The interface, each item as a second backend would provide it:
//! - [`exit_fd`] / [`peer_exit_fd`]: a descriptor that turns readable when a
//!   process exits (Linux: a pidfd; macOS: a kqueue holding `EVFILT_PROC`
//!   `NOTE_EXIT`), for a pid or for a unix socket's peer;
//! - [`peer_cred`]: a unix socket peer's pid, uid and gid;
//! - [`Watch`]: events of a file or directory without reading it (a
//!   terminal's writes, terminals coming and going in [`TERMINALS_DIR`]),
//!   awaited through tokio; a backend may answer `Unsupported`, and the callers then fall
//!   back to tmux's own state;
//! - [`open_pty`]: a pty pair of the broker's own, the slave opened without
//!   a path lookup where the kernel allows it;
//! - [`process_table`]: parent, process group, controlling terminal, start
//!   time, argv, executable, boot id and PID namespace of a process;
//! - [`cwd_of`], [`release_free_memory`].
//!
//! Portable POSIX (sockets, `flock`, `poll`, signals, termios) is not here:
//! it is in `sys` and the callers.

#[cfg(target_os = "linux")]
mod linux;

#[cfg(target_os = "linux")]
pub use linux::{
    cwd_of, exit_fd, open_pty, peer_cred, peer_exit_fd, process_table, release_free_memory, Pty,
    Watch, WatchFor, TERMINALS_DIR,
};

#[cfg(not(target_os = "linux"))]
compile_error!(
    "tmux-mcp has a Linux backend only; ARCHITECTURE.md \"Platform seam\" plans the macOS one"
);

/// A unix socket peer's credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    pub pid: u32,
    pub uid: u32,
    pub gid: u32,
}
