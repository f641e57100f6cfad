//! The platform seam: every call specific to one operating system is behind
//! this module, and only here (`tests/e2e/layers.rs` checks that no
//! `cfg(target_os)` and no Linux-only call appears outside `core/src/platform/`).
//! Two backends: `linux/` and `darwin/` (macOS); ARCHITECTURE.md "Platform
//! seam" names the call behind each item in both.
//!
//! The interface, each item as each backend provides it:
//! - [`exit_fd`] / [`peer_exit_fd`]: a descriptor that turns readable when a
//!   process exits (Linux: a pidfd; macOS: a kqueue holding `EVFILT_PROC`
//!   `NOTE_EXIT`), for a pid or for a unix socket's peer;
//! - [`peer_cred`]: a unix socket peer's pid, uid and gid;
//! - [`Watch`]: events of a file or directory without reading it (a
//!   terminal's writes, terminals coming and going in [`TERMINALS_DIR`]),
//!   awaited through tokio; a backend may answer `Unsupported` (macOS does for
//!   a terminal's writes), and the callers then fall back to tmux's own state;
//! - [`open_pty`]: a pty pair of the broker's own, the slave opened without
//!   a path lookup where the kernel allows it;
//! - [`process_table`]: parent, process group, controlling terminal, start
//!   time, argv, executable, boot id and PID namespace of a process;
//! - [`cwd_of`], [`release_free_memory`]; [`IDENTITY_BACKEND`], the
//!   process-identity backend by its published name.
//!
//! Portable POSIX (sockets, `flock`, `poll`, signals, termios) is not here:
//! it is in `sys` and the callers, safe (rustix); the few POSIX calls that
//! need `unsafe` are in `posix` ([`async_fd`], [`default_sigpipe`]), the only
//! `unsafe` outside the backends.

mod posix;
pub use posix::{async_fd, default_sigpipe};

#[cfg(target_os = "linux")]
mod linux;

#[cfg(target_os = "linux")]
pub use linux::{
    cwd_of, exit_fd, mkfifo, open_pty, peer_cred, peer_exit_fd, process_table, release_free_memory,
    Watch, WatchFor, IDENTITY_BACKEND, SIGNAL_NAMES, TERMINALS_DIR,
};

#[cfg(target_os = "macos")]
mod darwin;

#[cfg(target_os = "macos")]
pub use darwin::{
    cwd_of, exit_fd, mkfifo, open_pty, peer_cred, peer_exit_fd, process_table, release_free_memory,
    Watch, WatchFor, IDENTITY_BACKEND, SIGNAL_NAMES, TERMINALS_DIR,
};

/// A pty pair of [`open_pty`]: the master, the slave and the slave's path.
pub struct Pty {
    pub master: std::os::fd::OwnedFd,
    pub slave: std::os::fd::OwnedFd,
    pub path: String,
}

/// The fields of a process [`process_table`] reads, the same in both
/// backends (Linux: `/proc/PID/stat`; macOS: `proc_pidinfo(PROC_PIDTBSDINFO)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: u32,
    pub comm: String,
    pub state: char,
    pub ppid: u32,
    /// Process group.
    pub pgrp: i32,
    /// Controlling terminal, equal to `st_rdev` of the terminal's device
    /// file (Linux: field 7 of stat; macOS: `e_tdev`); 0 without one.
    pub tty_nr: u64,
    /// Foreground process group of the controlling terminal (Linux: field
    /// 8; macOS: `e_tpgid`).
    pub tpgid: i32,
    /// Start time (Linux: clock ticks since boot, field 22; macOS:
    /// microseconds since the epoch; see `process_table`'s
    /// `clock_ticks_per_second`); with the pid it names one process.
    pub start_ticks: u64,
}

impl ProcStat {
    /// Whether the process is in its terminal's foreground process group.
    pub fn in_foreground(&self) -> bool {
        self.tty_nr != 0 && self.tpgid == self.pgrp
    }
}

/// The Darwin backend's decisions are pure functions: built on every OS in
/// tests, so that Linux runs their unit tests too.
#[cfg(all(test, not(target_os = "macos")))]
#[path = "darwin/rules.rs"]
mod darwin_rules;

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
compile_error!(
    "tmux-mcp has a Linux and a macOS backend only; ARCHITECTURE.md \"Platform seam\" says what another needs"
);

/// A process-identity backend, by the name `tmux_capabilities` publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum IdentityBackend {
    // Linux: pidfds, one PID namespace.
    #[serde(rename = "linux-pidfd")]
    LinuxPidfd,
    // macOS: kqueue `EVFILT_PROC`, identity by pid and start time.
    #[serde(rename = "darwin-kqueue")]
    DarwinKqueue,
}

impl IdentityBackend {
    /// What tracking a pane's process needs of this backend, as
    /// `tmux_capabilities` lists it in `observation.requirements`.
    pub fn requirement(self) -> &'static str {
        match self {
            IdentityBackend::LinuxPidfd => {
                "Linux pidfd backend: broker, tmux server and pane process in one PID namespace"
            }
            IdentityBackend::DarwinKqueue => {
                "Darwin kqueue backend: EVFILT_PROC exit events, pane process identified by pid and start time (proc_pidinfo)"
            }
        }
    }

    /// The call that makes an exit descriptor (`tmux-mcp doctor`).
    pub fn exit_call(self) -> &'static str {
        match self {
            IdentityBackend::LinuxPidfd => "pidfd_open",
            IdentityBackend::DarwinKqueue => "kqueue EVFILT_PROC",
        }
    }

    /// The call that makes a socket peer's exit descriptor (`doctor`).
    pub fn peer_exit_call(self) -> &'static str {
        match self {
            IdentityBackend::LinuxPidfd => "SO_PEERPIDFD",
            IdentityBackend::DarwinKqueue => "LOCAL_PEERPID",
        }
    }
}

/// A unix socket peer's credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    pub pid: u32,
    pub uid: u32,
    pub gid: u32,
}
