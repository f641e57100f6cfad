//! Thin safe wrappers over the Linux syscalls the broker needs: peer credentials
//! (`SO_PEERCRED`, `SO_PEERPIDFD`), `pidfd_open`, and a non-blocking readability
//! probe. Each returns `io::Result` with the OS error intact so callers can map
//! `ESRCH`, `ENOSYS`, `EMFILE` … to their own typed errors.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `SO_PEERPIDFD` (Linux 6.5+); not every libc crate version names it.
const SO_PEERPIDFD: libc::c_int = 77;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    pub pid: u32,
    pub uid: u32,
    pub gid: u32,
}

pub fn peer_cred(fd: &impl AsRawFd) -> io::Result<PeerCred> {
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: cred/len are valid out-pointers of the right size for SO_PEERCRED.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(PeerCred {
        pid: cred.pid as u32,
        uid: cred.uid,
        gid: cred.gid,
    })
}

/// A pidfd for the socket's peer process, race-free (no pid reuse window).
pub fn peer_pidfd(fd: &impl AsRawFd) -> io::Result<OwnedFd> {
    let mut pidfd: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: pidfd/len are valid out-pointers for an int-sized option.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
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
    Ok(unsafe { OwnedFd::from_raw_fd(pidfd) })
}

pub fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a successful pidfd_open returns a descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Whether `fd` is readable right now (for a pidfd: the process has exited).
/// `POLLERR`/`POLLNVAL` are errors, not "exited".
pub fn poll_readable_now(fd: &impl AsRawFd) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    for _ in 0..2 {
        // SAFETY: pfd is a valid pollfd array of length 1.
        let rc = unsafe { libc::poll(&mut pfd, 1, 0) };
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if pfd.revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
            return Err(io::Error::other("poll reported POLLERR/POLLNVAL"));
        }
        return Ok(pfd.revents & (libc::POLLIN | libc::POLLHUP) != 0);
    }
    Err(io::Error::from(io::ErrorKind::Interrupted))
}

/// Registers a pidfd with tokio so its readability (process exit) can be awaited.
pub fn async_pidfd(fd: OwnedFd) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    async_fd(fd, tokio::io::Interest::READABLE)
}

/// Registers an owned descriptor with tokio (the one place that does).
pub fn async_fd(
    fd: OwnedFd,
    interest: tokio::io::Interest,
) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    // SAFETY: `fd` is an owned, open descriptor; the AsyncFd takes ownership and
    // keeps it open until it is dropped, which deregisters it first, and an
    // OwnedFd's raw descriptor never changes.
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, interest) }
        .map_err(|e| io::Error::other(e.to_string()))
}

/// Seconds on the system's monotonic clock (CLOCK_MONOTONIC; epoch arbitrary).
pub fn monotonic_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

pub fn current_uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
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

/// Hands freed heap back to the kernel after the retention store dropped a lot
/// (glibc keeps freed chunks in its arenas otherwise, so RSS would stay at its
/// peak long after the entries are gone).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
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
        let cred = peer_cred(&a).unwrap();
        assert_eq!(cred.pid, std::process::id());
        assert!(check_peer(&cred, me).is_ok());
    }

    #[test]
    fn pidfd_of_a_child_turns_readable_when_it_exits() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let fd = pidfd_open(child.id()).unwrap();
        assert!(!poll_readable_now(&fd).unwrap());
        child.wait().unwrap();
        assert!(poll_readable_now(&fd).unwrap());
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
