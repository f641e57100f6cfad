//! Output events of a pane without polling and without attaching to tmux:
//! inotify on the pane's terminal (`/dev/pts/N`). Every `write(2)` a pane
//! program makes to its terminal is an `IN_MODIFY` on that inode. tmux never
//! learns that we watch, no hook runs and no client appears in `list-clients`.
//!
//! The event comes when the program writes, which can be a moment before tmux
//! has parsed the bytes into its grid; callers re-read once more shortly after
//! the last event. Echo done by the kernel's line discipline (a program reading in
//! cooked mode) is not a write by the program and raises no event.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use tokio::io::unix::AsyncFd;

pub struct TtyWatch {
    /// `None` only while dropping.
    fd: Option<AsyncFd<OwnedFd>>,
}

/// Closing an inotify descriptor waits for the kernel's fsnotify grace period
/// (`synchronize_srcu`), measured at 5–20 ms: a wait that has its answer must
/// not spend that before answering. The descriptor leaves the reactor at once
/// and is closed on a blocking thread.
impl Drop for TtyWatch {
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

impl TtyWatch {
    pub fn new(tty: &str) -> io::Result<TtyWatch> {
        TtyWatch::with_mask(tty, libc::IN_MODIFY)
    }

    /// Terminals appearing and going in `dir` (`/dev/pts`): a new pane is a new
    /// `/dev/pts/N`, a pane gone closes its one.
    pub fn terminals_in(dir: &str) -> io::Result<TtyWatch> {
        Self::with_mask(dir, libc::IN_CREATE | libc::IN_DELETE)
    }

    /// The same watch on any path for the inotify events in `mask` (e.g. a
    /// directory's `IN_CLOSE_WRITE`: a file in it was written and closed).
    pub fn with_mask(tty: &str, mask: u32) -> io::Result<TtyWatch> {
        // SAFETY: plain syscall; the returned descriptor is owned below.
        let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let path = std::ffi::CString::new(tty)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "tty path has a NUL"))?;
        // SAFETY: valid descriptor and NUL-terminated path.
        if unsafe { libc::inotify_add_watch(fd.as_raw_fd(), path.as_ptr(), mask) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = tmux_mcp_core::sys::async_fd(fd, tokio::io::Interest::READABLE)?;
        Ok(TtyWatch { fd: Some(fd) })
    }

    /// Waits for the next write(s) to the terminal; several pending events count
    /// as one.
    pub async fn changed(&self) -> io::Result<()> {
        let fd = self.fd.as_ref().expect("present until dropped");
        loop {
            let mut guard = fd.readable().await?;
            let mut buf = [0u8; 4096];
            // SAFETY: buf is a valid writable buffer of its length.
            let n =
                unsafe { libc::read(fd.get_ref().as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                // Drain whatever else is queued.
                while unsafe {
                    libc::read(fd.get_ref().as_raw_fd(), buf.as_mut_ptr().cast(), buf.len())
                } > 0
                {}
                guard.clear_ready();
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::WouldBlock {
                guard.clear_ready();
                continue;
            }
            return Err(err);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_write_to_a_pty_is_an_event() {
        // A pty of our own stands in for a pane's terminal.
        let mut master = 0;
        let mut slave = 0;
        // SAFETY: out-pointers are valid; name/termios/winsize may be null.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0);
        // SAFETY: slave is a valid descriptor.
        let name = unsafe { std::ffi::CStr::from_ptr(libc::ttyname(slave)) }
            .to_str()
            .unwrap()
            .to_string();
        let watch = TtyWatch::new(&name).unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(100), watch.changed())
                .await
                .is_err(),
            "no event before a write"
        );
        // SAFETY: writing a small buffer to a valid descriptor.
        unsafe { libc::write(slave, b"x\n".as_ptr().cast(), 2) };
        tokio::time::timeout(Duration::from_secs(2), watch.changed())
            .await
            .expect("event after a write")
            .unwrap();
        unsafe {
            libc::close(master);
            libc::close(slave);
        }
    }
}
