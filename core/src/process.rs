//! Process identity of pane processes, on the platform's exit descriptor
//! (Linux: a pidfd; macOS: a kqueue).
//!
//! `pane_id` survives `respawn-pane`, but the process behind it does not; a
//! tracked cursor must not silently carry over to the new process. So for every
//! live pane process the broker opens a pidfd and mints a random 128-bit
//! `process_generation`. The pidfd turning readable is the exit signal (no
//! polling of tmux); a new pid, or the same pid with another start time, is a new
//! process and gets a new generation.
//!
//! Before trusting a pid the broker checks that it, the tmux server and the pane
//! process share one PID namespace, that the process is a child of the tmux server
//! (tmux forks pane processes itself), and that its start time did not change
//! across `pidfd_open` (the pid was not recycled in between).
//!
//! [`Backend::detect`] checks once per broker that identities can be had
//! (the process table readable, one PID namespace, an exit descriptor);
//! [`Backend::acquire`] opens one and starts its exit watcher.

use crate::platform::{self, process_table};
use crate::sys;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use tokio::sync::{oneshot, watch};

#[derive(Debug)]
pub struct ProcessIdentity {
    pub pid: u32,
    pub start_ticks: u64,
    pub generation: String,
    exited: AtomicBool,
    exit_tx: watch::Sender<bool>,
    /// Dropping the identity stops its watcher task.
    _stop: oneshot::Sender<()>,
}

impl ProcessIdentity {
    pub fn exited(&self) -> bool {
        self.exited.load(Ordering::Acquire)
    }

    /// Resolves when the process exits (immediately if it already has).
    pub async fn wait_exit(&self) {
        let mut rx = self.exit_tx.subscribe();
        let _ = rx.wait_for(|e| *e).await;
    }

    fn mark_exited(&self) {
        self.exited.store(true, Ordering::Release);
        self.exit_tx.send_replace(true);
    }

    /// True when this identity still describes `pid` as it runs now.
    pub fn matches(&self, pid: u32) -> bool {
        self.pid == pid && !self.exited()
    }
}

/// Whether `st` (a fresh read of a pid) is the process that had that pid
/// when `start_ticks` was read, still running: a zombie (killed, not yet
/// reaped by its parent; `kill(pid, 0)` takes it for alive) is not, nor is a
/// later process given the same pid. `None`: the start was never read.
pub fn runs_as(st: &process_table::ProcStat, start_ticks: Option<u64>) -> bool {
    !matches!(st.state, 'Z' | 'X') && start_ticks.is_none_or(|t| t == st.start_ticks)
}

/// Why a pane has no process identity. Shown by `tmux-mcp doctor`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error("pane is dead (remain-on-exit)")]
    PaneDead,
    #[error("process {0} no longer exists")]
    Gone(u32),
    #[error("process {pid} is not a child of the tmux server {server} (parent {parent})")]
    NotChild { pid: u32, server: u32, parent: u32 },
    #[error("process {0} changed while it was being opened")]
    Raced(u32),
    #[error("different PID namespace: {0}")]
    Namespace(String),
    #[error("/proc is not procfs")]
    NoProcfs,
    #[error("pidfd unavailable: {0}")]
    NoPidfd(String),
    #[error("out of file descriptors: {0}")]
    Capacity(String),
    /// A listing's read placed the pane without reading its process.
    #[error("the pane's process was not read")]
    NotRead,
}

/// Facts checked once per broker: our PID namespace equals the server's.
#[derive(Debug, Clone)]
pub struct Backend {
    pub server_pid: u32,
    pub namespace: (u64, u64),
    /// `None` when the backend works, else why it does not.
    pub unavailable: Option<IdentityError>,
}

impl Backend {
    pub fn detect(server_pid: u32) -> Backend {
        let own = process_table::pid_namespace(None);
        let unavailable = if !process_table::readable() {
            Some(IdentityError::NoProcfs)
        } else {
            match (&own, process_table::pid_namespace(Some(server_pid))) {
                (Ok(a), Ok(b)) if *a == b => None,
                (Ok(_), Ok(_)) => Some(IdentityError::Namespace(
                    "the broker and the tmux server are in different PID namespaces".into(),
                )),
                (Err(e), _) => Some(IdentityError::Namespace(e.to_string())),
                (_, Err(e)) => Some(IdentityError::Namespace(e.to_string())),
            }
        };
        let unavailable = unavailable.or_else(|| match platform::exit_fd(std::process::id()) {
            Ok(_) => None,
            Err(e) => Some(IdentityError::NoPidfd(e.to_string())),
        });
        Backend {
            server_pid,
            namespace: own.unwrap_or((0, 0)),
            unavailable,
        }
    }

    /// Opens an identity for a pane process and starts watching it.
    /// Must run inside a tokio runtime.
    pub fn acquire(&self, pid: u32) -> Result<Arc<ProcessIdentity>, IdentityError> {
        if let Some(e) = &self.unavailable {
            return Err(e.clone());
        }
        let before = process_table::stat(pid).map_err(|_| IdentityError::Gone(pid))?;
        if before.ppid != self.server_pid {
            return Err(IdentityError::NotChild {
                pid,
                server: self.server_pid,
                parent: before.ppid,
            });
        }
        let ns = process_table::pid_namespace(Some(pid)).map_err(|_| IdentityError::Gone(pid))?;
        if ns != self.namespace {
            return Err(IdentityError::Namespace(format!(
                "process {pid} is in another PID namespace"
            )));
        }
        let fd = platform::exit_fd(pid).map_err(|e| match e.raw_os_error() {
            Some(libc::ESRCH) => IdentityError::Gone(pid),
            Some(libc::EMFILE) | Some(libc::ENFILE) => IdentityError::Capacity(e.to_string()),
            _ => IdentityError::NoPidfd(e.to_string()),
        })?;
        let after = process_table::stat(pid).map_err(|_| IdentityError::Gone(pid))?;
        if after.start_ticks != before.start_ticks {
            return Err(IdentityError::Raced(pid));
        }
        if sys::poll_readable_now(&fd).unwrap_or(true) {
            return Err(IdentityError::Gone(pid));
        }
        let (stop_tx, stop_rx) = oneshot::channel();
        let (exit_tx, _) = watch::channel(false);
        let ident = Arc::new(ProcessIdentity {
            pid,
            start_ticks: before.start_ticks,
            generation: sys::random_hex(16),
            exited: AtomicBool::new(false),
            exit_tx,
            _stop: stop_tx,
        });
        watch_exit(fd, Arc::downgrade(&ident), stop_rx)
            .map_err(|e| IdentityError::NoPidfd(e.to_string()))?;
        Ok(ident)
    }
}

/// Marks the identity exited when the pidfd turns readable; ends early when the
/// identity is dropped.
fn watch_exit(
    fd: OwnedFd,
    ident: Weak<ProcessIdentity>,
    stop: oneshot::Receiver<()>,
) -> std::io::Result<()> {
    let afd = sys::async_exit_fd(fd)?;
    tokio::spawn(async move {
        tokio::select! {
            r = afd.readable() => {
                if r.is_ok() {
                    if let Some(id) = ident.upgrade() {
                        id.mark_exited();
                    }
                }
            }
            _ = stop => {}
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn child_of_ours_is_tracked_and_its_exit_is_seen() {
        // We stand in for the tmux server: the child's parent is us.
        let backend = Backend::detect(std::process::id());
        assert!(backend.unavailable.is_none(), "{:?}", backend.unavailable);
        let mut child = tokio::process::Command::new("sleep")
            .arg("0.3")
            .spawn()
            .unwrap();
        let pid = child.id().unwrap();
        let a = backend.acquire(pid).unwrap();
        assert_eq!(a.generation.len(), 32);
        assert!(!a.exited());
        let b = backend.acquire(pid).unwrap();
        assert_ne!(
            a.generation, b.generation,
            "each acquisition mints a new generation"
        );
        child.wait().await.unwrap();
        tokio::time::timeout(Duration::from_secs(2), a.wait_exit())
            .await
            .expect("exit seen");
        assert!(a.exited());
    }

    #[tokio::test]
    async fn a_process_that_is_not_our_child_is_refused() {
        let backend = Backend::detect(std::process::id());
        let err = backend.acquire(1).unwrap_err();
        assert!(
            matches!(
                err,
                IdentityError::NotChild { .. }
                    | IdentityError::Gone(_)
                    | IdentityError::Namespace(_)
            ),
            "{err:?}"
        );
    }
}
