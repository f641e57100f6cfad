//! The POSIX calls both backends share that Rust cannot make safely: the
//! only `unsafe` of the workspace outside the backends (`tests/e2e/layers.rs`
//! `no_unsafe_outside_the_platform_seam`).

use std::io;
use std::os::fd::OwnedFd;

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

/// Puts SIGPIPE back to its default (the process ends quietly when its
/// reader goes), which Rust's runtime sets to ignored.
pub fn default_sigpipe() {
    // SAFETY: signal(2) with SIG_DFL has no memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
