//! Portable POSIX helpers, safe (rustix): a non-blocking readability
//! probe, tokio registration (`async_fd`), the monotonic clock, the uid, a
//! file lock (`flock`), `access` ([`may_enter`]), signals (SIGTERM), the
//! peer's uid check, random ids. What is specific to one operating system is in
//! [`crate::platform`]. Each returns `io::Result` with the OS error intact so
//! callers can map `ESRCH`, `ENOSYS`, `EMFILE` … to their own typed errors.

use crate::platform::PeerCred;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

/// Whether `fd` is readable right now (for a pidfd: the process has exited).
/// `POLLERR`/`POLLNVAL` are errors, not "exited".
pub fn poll_readable_now(fd: &impl AsFd) -> io::Result<bool> {
    use rustix::event::{poll, PollFd, PollFlags};
    for _ in 0..2 {
        let mut fds = [PollFd::new(fd, PollFlags::IN)];
        match poll(&mut fds, Some(&rustix::time::Timespec::default())) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
        let revents = fds[0].revents();
        if revents.intersects(PollFlags::ERR | PollFlags::NVAL) {
            return Err(io::Error::other("poll reported POLLERR/POLLNVAL"));
        }
        return Ok(revents.intersects(PollFlags::IN | PollFlags::HUP));
    }
    Err(io::Error::from(io::ErrorKind::Interrupted))
}

/// Registers an exit descriptor ([`crate::platform::exit_fd`]) with tokio so
/// the process's exit can be awaited.
pub fn async_exit_fd(fd: OwnedFd) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    async_fd(fd, tokio::io::Interest::READABLE)
}

/// Registers an owned descriptor with tokio (the one place that does).
pub fn async_fd(
    fd: OwnedFd,
    interest: tokio::io::Interest,
) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    crate::platform::async_fd(fd, interest)
}

/// Whether process `pid` exists (signal 0: nothing is sent; a process of
/// another user answers EPERM, and exists).
pub fn pid_alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

/// This process's parent.
pub fn parent_pid() -> u32 {
    rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get() as u32)
}

/// Opens the FIFO at `path` for reading without blocking, and for writing
/// too (the second descriptor): while the caller holds that writer, reads
/// never see end of file, so the reader waits for data (not for a writer to
/// come) and ends when the caller says, not when the last writer closes.
pub fn open_fifo(path: &std::path::Path) -> io::Result<(OwnedFd, OwnedFd)> {
    use rustix::fs::{open, Mode, OFlags};
    let flags = OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let reader = open(path, OFlags::RDONLY | flags, Mode::empty())?;
    let writer = open(path, OFlags::WRONLY | flags, Mode::empty())?;
    Ok((reader, writer))
}

/// Reads what `fd` holds now into `buf` (a non-blocking descriptor:
/// `WouldBlock` when nothing is there; 0 at end of file).
pub fn read_now(fd: &impl AsFd, buf: &mut [u8]) -> io::Result<usize> {
    rustix::io::read(fd, buf).map_err(Into::into)
}

/// Seconds on the system's monotonic clock (CLOCK_MONOTONIC; epoch arbitrary).
pub fn monotonic_seconds() -> f64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

pub fn current_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Takes an exclusive `flock` on `file` without waiting: `Ok(false)` when
/// another process holds it.
pub fn try_lock_exclusive(file: &impl AsFd) -> io::Result<bool> {
    match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Whether this process may search (enter) directory `path`: `access(X_OK)`.
pub fn may_enter(path: &std::path::Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok()
}

/// A connection to the Unix socket at `path`. A non-blocking connect to a
/// Unix socket whose accept queue is full fails with `EAGAIN` (it never
/// waits), so it is retried, the pause doubling from 1 ms up to `max_pause`,
/// for as long as the caller waits (a timeout around it ends it).
pub async fn connect_unix(
    path: &std::path::Path,
    max_pause: std::time::Duration,
) -> io::Result<tokio::net::UnixStream> {
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match tokio::net::UnixStream::connect(path).await {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(max_pause);
            }
            r => return r,
        }
    }
}

/// Sends SIGTERM to `pid`.
pub fn terminate(pid: u32) -> io::Result<()> {
    send(pid, rustix::process::Signal::TERM)
}

/// Sends SIGURG to `pid`: every process ignores it unless it handles it
/// (an enrolled shell's snippet does: it says it is enrolled).
pub fn signal_urgent(pid: u32) -> io::Result<()> {
    send(pid, rustix::process::Signal::URG)
}

/// Sends SIGWINCH to `pid`: a shell at its prompt reads its terminal's size
/// again and redraws its line as it is (bash runs the traps pending then).
pub fn signal_resized(pid: u32) -> io::Result<()> {
    send(pid, rustix::process::Signal::WINCH)
}

/// Sends SIGKILL to `pid` (what a process that ignores SIGTERM gets).
pub fn kill_hard(pid: u32) -> io::Result<()> {
    send(pid, rustix::process::Signal::KILL)
}

/// Sends `signal` to `pid` (the four above).
fn send(pid: u32, signal: rustix::process::Signal) -> io::Result<()> {
    Ok(rustix::process::kill_process(process_id(pid)?, signal)?)
}

/// `pid` as the kernel's process id; no process has 0 or one beyond
/// `i32::MAX`, so those are `ESRCH`.
pub fn process_id(pid: u32) -> io::Result<rustix::process::Pid> {
    i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))
}

/// Decides whether a connecting peer may talk to the broker: same uid only.
pub fn check_peer(cred: &PeerCred, own_uid: u32) -> Result<(), String> {
    if cred.uid == own_uid {
        Ok(())
    } else {
        Err(format!(
            "peer uid {} is not the broker's uid {own_uid}",
            cred.uid
        ))
    }
}

/// Hex of `n` random bytes from the OS.
pub fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).expect("OS random source unavailable");
    hex(&buf)
}

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    #[test]
    fn peer_of_other_uid_is_refused_same_uid_accepted() {
        let me = current_uid();
        let other = PeerCred {
            pid: 1,
            uid: me.wrapping_add(1),
            gid: 0,
        };
        assert!(check_peer(&other, me)
            .unwrap_err()
            .contains("is not the broker's uid"));
        let (a, _b) = UnixStream::pair().unwrap();
        let cred = crate::platform::peer_cred(&a).unwrap();
        assert_eq!(cred.pid, std::process::id());
        assert!(check_peer(&cred, me).is_ok());
    }

    #[test]
    fn a_held_lock_is_refused_without_waiting() {
        let path = std::env::temp_dir().join(format!("tmux-mcp-lock-{}", random_hex(6)));
        let a = std::fs::File::create(&path).unwrap();
        let b = std::fs::File::open(&path).unwrap();
        assert!(try_lock_exclusive(&a).unwrap());
        assert!(
            !try_lock_exclusive(&b).unwrap(),
            "held by another open file"
        );
        drop(a);
        assert!(try_lock_exclusive(&b).unwrap(), "released with its holder");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn random_hex_is_lowercase_and_sized() {
        let h = random_hex(16);
        assert_eq!(h.len(), 32);
        assert!(h
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(h, random_hex(16));
    }
}
