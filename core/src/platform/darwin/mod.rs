//! The macOS backend of [`crate::platform`]: kqueue (`EVFILT_PROC`
//! `NOTE_EXIT` as the exit descriptor, `EVFILT_VNODE` on the terminals
//! directory), `getpeereid` and `LOCAL_PEERPID`, `posix_openpt`, libproc and
//! `sysctl` (`process_table`). Safe wrappers (rustix) wherever one exists;
//! the `unsafe` left is `kevent` (rustix marks it unsafe), `getpeereid`,
//! `getsockopt(LOCAL_PEERPID)`, libproc and `sysctl`, and libmalloc's
//! `malloc_zone_pressure_relief`. The decisions on what the kernel answers
//! are pure functions in [`rules`], tested on Linux as well.
//!
//! What has no equivalent: a terminal's writes cannot be watched (no inotify,
//! and `EVFILT_VNODE` reports no writes on a tty device node), so
//! `Watch::new(tty, WatchFor::Writes)` answers `Unsupported` and the callers
//! fall back to tmux's own state (the activity net's reads); no PID
//! namespaces (a constant); `TIOCGPTPEER` (the slave is opened by its path).

pub mod process_table;
pub(crate) mod rules;

use super::{PeerCred, Pty};
use rustix::event::kqueue::{self, Event, EventFilter, EventFlags, ProcessEvents, VnodeEvents};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::unix::AsyncFd;

/// Where the terminals of panes appear and go (`/dev/ttysNNN`).
pub const TERMINALS_DIR: &str = "/dev";

/// The process-identity backend, by its published name.
pub const IDENTITY_BACKEND: super::IdentityBackend = super::IdentityBackend::DarwinKqueue;

/// `kevent` with a change list and no wait.
fn kevent_register(kq: &OwnedFd, changes: &[Event]) -> io::Result<()> {
    let mut out: Vec<Event> = Vec::new();
    // SAFETY: the events name a pid, a timer or a descriptor (the watched
    // directory) that the caller keeps open as long as the kqueue.
    unsafe { kqueue::kevent(kq, changes, &mut out, Some(Duration::ZERO)) }?;
    Ok(())
}

/// A kqueue holding `EVFILT_PROC` `NOTE_EXIT` for `pid`: readable once the
/// process has exited (a kqueue is readable while an event is pending). The
/// pid is the caller's to confirm (start time before and after, as
/// `process::Backend::acquire` does).
pub fn exit_fd(pid: u32) -> io::Result<OwnedFd> {
    let pid = crate::sys::process_id(pid)?;
    let kq = kqueue::kqueue()?;
    let ev = Event::new(
        EventFilter::Proc {
            pid,
            flags: ProcessEvents::EXIT,
        },
        EventFlags::ADD,
        std::ptr::null_mut(),
    );
    kevent_register(&kq, &[ev])?;
    Ok(kq)
}

/// `getsockopt(SOL_LOCAL, LOCAL_PEERPID)`: the pid of a unix socket's peer.
fn peer_pid(socket: &impl AsRawFd) -> io::Result<u32> {
    let mut pid: libc::pid_t = 0;
    let mut len = std::mem::size_of::<libc::pid_t>() as libc::socklen_t;
    // SAFETY: pid/len are valid out-pointers for a pid_t-sized option.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_LOCAL,
            libc::LOCAL_PEERPID,
            (&mut pid as *mut libc::pid_t).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))
}

/// The peer's pid (`LOCAL_PEERPID`), uid and gid (`getpeereid`).
pub fn peer_cred(socket: &impl AsRawFd) -> io::Result<PeerCred> {
    let (mut uid, mut gid): (libc::uid_t, libc::gid_t) = (0, 0);
    // SAFETY: uid/gid are valid out-pointers.
    if unsafe { libc::getpeereid(socket.as_raw_fd(), &mut uid, &mut gid) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(PeerCred {
        pid: peer_pid(socket)?,
        uid,
        gid,
    })
}

/// An exit descriptor for the socket's peer: `LOCAL_PEERPID`, then
/// [`exit_fd`]. The pid is confirmed as the peer's after arming: the peer
/// holds its end of the socket while it lives, so a socket not hung up after
/// the kqueue was armed, with the same start time before and after, means
/// the armed pid was the peer's (not a reuse).
pub fn peer_exit_fd(socket: &(impl AsRawFd + AsFd)) -> io::Result<OwnedFd> {
    let pid = peer_pid(socket)?;
    let identity = |pid| {
        process_table::stat(pid).ok().map(|st| rules::Identity {
            pid,
            start_ticks: st.start_ticks,
        })
    };
    let before = identity(pid);
    let fd = exit_fd(pid)?;
    let after = identity(pid);
    let hung_up = {
        use rustix::event::{poll, PollFd, PollFlags};
        let mut fds = [PollFd::new(socket, PollFlags::empty())];
        poll(&mut fds, Some(&rustix::time::Timespec::default()))?;
        fds[0].revents().intersects(PollFlags::HUP | PollFlags::ERR)
    };
    if hung_up || !rules::same_process(before, after) {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(fd)
}

/// Signal names by number (1–31), as macOS numbers them (`<sys/signal.h>`).
pub const SIGNAL_NAMES: [&str; 31] = [
    "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "EMT", "FPE", "KILL", "BUS", "SEGV", "SYS",
    "PIPE", "ALRM", "TERM", "URG", "STOP", "TSTP", "CONT", "CHLD", "TTIN", "TTOU", "IO", "XCPU",
    "XFSZ", "VTALRM", "PROF", "WINCH", "INFO", "USR1", "USR2",
];

/// What a [`Watch`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFor {
    /// Every write to the file. On macOS there is no such event for a tty
    /// device node: `Watch::new` answers `Unsupported`.
    Writes,
    /// Entries created in or deleted from a directory.
    EntriesComingAndGoing,
}

/// How often an [`WatchFor::EntriesComingAndGoing`] watch reports a change
/// whether or not the directory said so: devfs creates and removes
/// `/dev/ttysNNN` from inside the kernel, and whether that raises
/// `NOTE_WRITE` on `/dev` is not documented, so a timer in the same kqueue is
/// the backstop (a pane appearing or going is seen within this, plus the
/// caller's settle time, at worst).
pub const ENTRIES_BACKSTOP: Duration = Duration::from_secs(1);

/// A kqueue watching a directory (`EVFILT_VNODE` `NOTE_WRITE`/`NOTE_LINK`
/// on it, plus the [`ENTRIES_BACKSTOP`] timer), awaited through tokio.
pub struct Watch {
    kq: AsyncFd<OwnedFd>,
    /// The watched directory, open as long as the kqueue names it.
    _dir: OwnedFd,
}

impl Watch {
    /// Must run inside a tokio runtime.
    pub fn new(path: &str, what: WatchFor) -> io::Result<Watch> {
        if what == WatchFor::Writes {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "macOS reports no writes to a terminal's device node",
            ));
        }
        use rustix::fs::{Mode, OFlags};
        let dir = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let kq = kqueue::kqueue()?;
        let vnode = Event::new(
            EventFilter::Vnode {
                vnode: dir.as_raw_fd(),
                flags: VnodeEvents::WRITE | VnodeEvents::LINK,
            },
            EventFlags::ADD | EventFlags::CLEAR,
            std::ptr::null_mut(),
        );
        let timer = Event::new(
            EventFilter::Timer {
                ident: 1,
                timer: Some(ENTRIES_BACKSTOP),
            },
            EventFlags::ADD,
            std::ptr::null_mut(),
        );
        kevent_register(&kq, &[vnode, timer])?;
        let kq = crate::sys::async_fd(kq, tokio::io::Interest::READABLE)?;
        Ok(Watch { kq, _dir: dir })
    }

    /// Waits for the next event(s); several pending events count as one.
    pub async fn changed(&self) -> io::Result<()> {
        loop {
            let mut guard = self.kq.readable().await?;
            let any = drain(self.kq.get_ref())?;
            guard.clear_ready();
            if any {
                return Ok(());
            }
        }
    }
}

/// Takes every pending event: whether there was at least one.
fn drain(kq: &OwnedFd) -> io::Result<bool> {
    let mut any = false;
    loop {
        let mut out: Vec<Event> = Vec::with_capacity(16);
        // SAFETY: no change list; see `kevent_register` for the descriptors.
        match unsafe { kqueue::kevent(kq, &[], &mut out, Some(Duration::ZERO)) } {
            Ok(_) if !out.is_empty() => any = true,
            Ok(_) => return Ok(any),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A new pty (`posix_openpt`, `grantpt`, `unlockpt`, `ptsname`); macOS has
/// no `TIOCGPTPEER`, so the slave is opened by its path, right after
/// `unlockpt` (the path exists only while this master holds it).
pub fn open_pty() -> io::Result<Pty> {
    use rustix::fs::{Mode, OFlags};
    use rustix::pty::OpenptFlags;
    let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY)?;
    rustix::io::fcntl_setfd(&master, rustix::io::FdFlags::CLOEXEC)?;
    rustix::pty::grantpt(&master)?;
    rustix::pty::unlockpt(&master)?;
    let path = rustix::pty::ptsname(&master, Vec::new())?
        .into_string()
        .map_err(|_| io::Error::other("the pty's name is not UTF-8"))?;
    let slave = rustix::fs::open(
        path.as_str(),
        OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok(Pty {
        master,
        slave,
        path,
    })
}

/// Makes a FIFO (named pipe) at `path`, readable and writable by its owner
/// only (`mkfifo(3)`; rustix has no `mkfifoat` for Apple targets).
pub fn mkfifo(path: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The working directory of process `pid` (`proc_pidinfo`
/// `PROC_PIDVNODEPATHINFO`, `pvi_cdir`).
pub fn cwd_of(pid: u32) -> io::Result<PathBuf> {
    let pid = libc::c_int::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    let mut info = std::mem::MaybeUninit::<libc::proc_vnodepathinfo>::zeroed();
    let size = std::mem::size_of::<libc::proc_vnodepathinfo>() as libc::c_int;
    // SAFETY: `info` is `size` writable bytes.
    let n = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDVNODEPATHINFO,
            0,
            info.as_mut_ptr().cast(),
            size,
        )
    };
    if n < size {
        let e = io::Error::last_os_error();
        return Err(if n <= 0 && e.raw_os_error().is_some_and(|c| c != 0) {
            e
        } else {
            io::Error::from_raw_os_error(libc::ESRCH)
        });
    }
    // SAFETY: zeroed plain C data, filled by the kernel.
    let info = unsafe { info.assume_init() };
    let bytes: Vec<u8> = info
        .pvi_cdir
        .vip_path
        .iter()
        .flatten()
        .map(|c| *c as u8)
        .collect();
    let path = rules::c_string(&bytes);
    if path.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    Ok(PathBuf::from(path))
}

extern "C" {
    /// libmalloc (`malloc/malloc.h`, macOS 10.7+): returns free pages of a
    /// zone (every zone when `zone` is null) to the kernel.
    fn malloc_zone_pressure_relief(zone: *mut libc::c_void, goal: libc::size_t) -> libc::size_t;
}

/// Hands freed heap back to the kernel after the retention store dropped a
/// lot (`malloc_zone_pressure_relief` of every zone).
pub fn release_free_memory() {
    // SAFETY: null means every zone, goal 0 as much as possible; libmalloc
    // only walks its own free lists.
    unsafe {
        malloc_zone_pressure_relief(std::ptr::null_mut(), 0);
    }
}

/// Tests that need a Mac: run by the public repository's macOS workflow
/// (`.github/workflows/macos.yml`), not here.
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
        assert!(peer_exit_fd(&a).is_ok());
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

    #[tokio::test]
    async fn a_pty_is_named_as_its_device_and_its_writes_are_unsupported() {
        use std::os::unix::fs::MetadataExt;
        let pty = open_pty().unwrap();
        assert!(pty.path.starts_with("/dev/ttys"), "{}", pty.path);
        let rdev = std::fs::metadata(&pty.path).unwrap().rdev();
        assert_eq!(
            rules::terminal_name(rdev).map(|n| format!("/dev/{n}")),
            Some(pty.path.clone())
        );
        let err = Watch::new(&pty.path, WatchFor::Writes).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::Unsupported);
        rustix::io::write(&pty.slave, b"x\n").unwrap();
    }

    /// The watch reports within the backstop whatever devfs does; whether
    /// devfs itself signalled the new terminal (an event well before the
    /// timer) is printed, to learn what the documentation does not say.
    #[tokio::test]
    async fn the_terminals_watch_reports_a_new_pty_within_the_backstop() {
        let w = Watch::new(TERMINALS_DIR, WatchFor::EntriesComingAndGoing).unwrap();
        // The timer's first tick may be pending already: start after one.
        tokio::time::timeout(ENTRIES_BACKSTOP * 3, w.changed())
            .await
            .expect("the backstop ticks")
            .unwrap();
        let t0 = std::time::Instant::now();
        let _pty = open_pty().unwrap();
        tokio::time::timeout(ENTRIES_BACKSTOP * 3, w.changed())
            .await
            .expect("an event within the backstop")
            .unwrap();
        eprintln!(
            "terminals watch: an event {:?} after a new pty ({})",
            t0.elapsed(),
            if t0.elapsed() < ENTRIES_BACKSTOP / 4 {
                "devfs signalled it, or the timer happened to tick"
            } else {
                "the timer"
            }
        );
    }

    #[test]
    fn cwd_of_this_process_is_its_working_directory() {
        assert_eq!(
            std::fs::canonicalize(cwd_of(std::process::id()).unwrap()).unwrap(),
            std::fs::canonicalize(std::env::current_dir().unwrap()).unwrap()
        );
        release_free_memory();
    }
}
