//! The Linux backend of [`crate::platform`]: pidfds, `SO_PEERCRED` and
//! `SO_PEERPIDFD`, inotify, `TIOCGPTPEER`, `/proc`. Safe wrappers (rustix)
//! wherever one exists; the `unsafe` left is `SO_PEERPIDFD` (rustix has no
//! wrapper for it) and glibc's `malloc_trim`.
//!
//! `exit_fd` is a pidfd; `peer_cred` is `SO_PEERCRED`; `peer_exit_fd` is
//! `SO_PEERPIDFD`. A [`Watch`] is an inotify instance awaited through tokio.
//! Its descriptor is closed on a blocking thread: closing it waits for the
//! kernel's fsnotify grace period. `open_pty` opens the slave with
//! `TIOCGPTPEER`. `release_free_memory` is `malloc_trim`. `TERMINALS_DIR` is
//! `/dev/pts`.

pub mod process_table;

use super::{PeerCred, Pty};
use rustix::fs::inotify;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use tokio::io::unix::AsyncFd;

/// Where the terminals of panes appear and go (one `N` per pty).
pub const TERMINALS_DIR: &str = "/dev/pts";

/// The process-identity backend, by its published name.
pub const IDENTITY_BACKEND: super::IdentityBackend = super::IdentityBackend::LinuxPidfd;

/// Signal names by number (1–31), as Linux numbers them.
pub const SIGNAL_NAMES: [&str; 31] = [
    "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2",
    "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG",
    "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS",
];

/// `SO_PEERPIDFD` (Linux 6.5+); not every libc crate version names it.
const SO_PEERPIDFD: libc::c_int = 77;

pub fn peer_cred(socket: &impl AsFd) -> io::Result<PeerCred> {
    let cred = rustix::net::sockopt::socket_peercred(socket)?;
    Ok(PeerCred {
        pid: cred.pid.as_raw_nonzero().get() as u32,
        uid: cred.uid.as_raw(),
        gid: cred.gid.as_raw(),
    })
}

/// A pidfd for the socket's peer process, race-free (no pid reuse window).
pub fn peer_exit_fd(socket: &impl AsRawFd) -> io::Result<OwnedFd> {
    let mut pidfd: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: pidfd/len are valid out-pointers for an int-sized option.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_PEERPIDFD,
            (&mut pidfd as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a fresh descriptor that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) })
}

/// A pidfd of `pid`: readable once the process has exited.
pub fn exit_fd(pid: u32) -> io::Result<OwnedFd> {
    Ok(rustix::process::pidfd_open(
        crate::sys::process_id(pid)?,
        rustix::process::PidfdFlags::empty(),
    )?)
}

/// What a [`Watch`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFor {
    /// Every write to the file (a terminal: every `write(2)` a pane program
    /// makes to it is an `IN_MODIFY` on its inode).
    Writes,
    /// Entries created in or deleted from a directory.
    EntriesComingAndGoing,
}

/// An inotify instance watching one path, awaited through tokio.
pub struct Watch {
    /// `None` only while dropping.
    fd: Option<AsyncFd<OwnedFd>>,
}

/// Closing an inotify descriptor waits for the kernel's fsnotify grace period
/// (`synchronize_srcu`), measured at 5–20 ms: a wait that has its answer must
/// not spend that before answering. The descriptor leaves the reactor at once
/// and is closed on a blocking thread.
impl Drop for Watch {
    fn drop(&mut self) {
        let Some(afd) = self.fd.take() else { return };
        let fd = afd.into_inner();
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn_blocking(move || drop(fd));
            }
            Err(_) => drop(fd),
        }
    }
}

impl Watch {
    /// Must run inside a tokio runtime.
    pub fn new(path: &str, what: WatchFor) -> io::Result<Watch> {
        let fd = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC)?;
        let mask = match what {
            WatchFor::Writes => inotify::WatchFlags::MODIFY,
            WatchFor::EntriesComingAndGoing => {
                inotify::WatchFlags::CREATE | inotify::WatchFlags::DELETE
            }
        };
        inotify::add_watch(&fd, path, mask)?;
        let fd = crate::sys::async_fd(fd, tokio::io::Interest::READABLE)?;
        Ok(Watch { fd: Some(fd) })
    }

    /// Waits for the next event(s); several pending events count as one.
    pub async fn changed(&self) -> io::Result<()> {
        let fd = self.fd.as_ref().expect("present until dropped");
        loop {
            let mut guard = fd.readable().await?;
            let any = drain(fd.get_ref())?;
            guard.clear_ready();
            if any {
                return Ok(());
            }
        }
    }
}

/// Reads every pending event: whether there was at least one.
fn drain(fd: &OwnedFd) -> io::Result<bool> {
    let mut buf = [0u8; 4096];
    let mut any = false;
    loop {
        match rustix::io::read(fd, &mut buf) {
            Ok(n) if n > 0 => any = true,
            Ok(_) | Err(rustix::io::Errno::AGAIN) => return Ok(any),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A new pty; the slave is opened from the master (`TIOCGPTPEER`), so no
/// other process can take its path in between.
pub fn open_pty() -> io::Result<Pty> {
    use rustix::pty::OpenptFlags;
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let master = rustix::pty::openpt(flags)?;
    rustix::pty::grantpt(&master)?;
    rustix::pty::unlockpt(&master)?;
    let path = rustix::pty::ptsname(&master, Vec::new())?
        .into_string()
        .map_err(|_| io::Error::other("the pty's name is not UTF-8"))?;
    let slave = rustix::pty::ioctl_tiocgptpeer(&master, flags)?;
    Ok(Pty {
        master,
        slave,
        path,
    })
}

/// The working directory of process `pid`.
/// Makes a FIFO (named pipe) at `path`, readable and writable by its owner
/// only (`mkfifo(3)`).
pub fn mkfifo(path: &std::path::Path) -> io::Result<()> {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .map_err(Into::into)
}

pub fn cwd_of(pid: u32) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd"))
}

/// Hands freed heap back to the kernel after the retention store dropped a lot
/// (glibc keeps freed chunks in its arenas otherwise, so RSS would stay at its
/// peak long after the entries are gone).
pub fn release_free_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    #[test]
    fn peer_cred_names_this_process() {
        let (a, _b) = UnixStream::pair().unwrap();
        let cred = peer_cred(&a).unwrap();
        assert_eq!(cred.pid, std::process::id());
        assert_eq!(cred.uid, crate::sys::current_uid());
    }

    #[test]
    fn exit_fd_of_a_child_turns_readable_when_it_exits() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let fd = exit_fd(child.id()).unwrap();
        assert!(!crate::sys::poll_readable_now(&fd).unwrap());
        child.wait().unwrap();
        assert!(crate::sys::poll_readable_now(&fd).unwrap());
        assert!(exit_fd(0).is_err() && exit_fd(u32::MAX).is_err());
    }

    fn drained(w: &Watch) -> bool {
        drain(w.fd.as_ref().unwrap().get_ref()).unwrap()
    }

    #[tokio::test]
    async fn a_pty_write_is_a_watch_event_and_draining_empties_it() {
        let pty = open_pty().unwrap();
        let w = Watch::new(&pty.path, WatchFor::Writes).unwrap();
        assert!(!drained(&w), "no event before a write");
        rustix::io::write(&pty.slave, b"x\n").unwrap();
        assert!(drained(&w), "an event after a write");
        assert!(!drained(&w), "drained");
        rustix::io::write(&pty.slave, b"y\n").unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(2), w.changed())
            .await
            .expect("changed() sees a write")
            .unwrap();
    }

    #[tokio::test]
    async fn a_directory_watch_sees_entries_come_and_go() {
        let dir =
            std::env::temp_dir().join(format!("tmux-mcp-watch-{}", crate::sys::random_hex(6)));
        std::fs::create_dir(&dir).unwrap();
        let entries = Watch::new(dir.to_str().unwrap(), WatchFor::EntriesComingAndGoing).unwrap();
        assert!(!drained(&entries));
        std::fs::write(dir.join("f"), b"1").unwrap();
        assert!(drained(&entries), "created");
        std::fs::write(dir.join("f"), b"2").unwrap();
        assert!(
            !drained(&entries),
            "a write is not an entry coming or going"
        );
        std::fs::remove_file(dir.join("f")).unwrap();
        assert!(drained(&entries), "deleted");
        std::fs::remove_dir(&dir).unwrap();
    }
}
