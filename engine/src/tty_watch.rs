//! Output events of a pane without polling and without attaching to tmux:
//! the platform's [`Watch`] on the pane's terminal (Linux: inotify on
//! `/dev/pts/N`; every `write(2)` a pane program makes to its terminal is an
//! `IN_MODIFY` on that inode). tmux never
//! learns that we watch, no hook runs and no client appears in `list-clients`.
//!
//! The event comes when the program writes, which can be a moment before tmux
//! has parsed the bytes into its grid; callers re-read once more shortly after
//! the last event. Echo done by the kernel's line discipline (a program reading in
//! cooked mode) is not a write by the program and raises no event.
//!
//! macOS has no such event: [`TtyWatch::new`] answers `Unsupported` there,
//! and `activity::ScreenEvents` runs on the safety net alone.
//!
//! [`TtyWatch::terminals`] watches terminals coming and going instead (Linux:
//! `IN_CREATE` and `IN_DELETE` on `/dev/pts`), for `changes`. A watch's
//! descriptor is closed on a blocking thread: closing an inotify descriptor
//! waits for the kernel's grace period (5–20 ms measured), and a wait must
//! not spend that before it answers.

use std::io;
use tmux_mcp_core::platform::{self, Watch, WatchFor};

pub struct TtyWatch(Watch);

impl TtyWatch {
    pub fn new(tty: &str) -> io::Result<TtyWatch> {
        Ok(TtyWatch(Watch::new(tty, WatchFor::Writes)?))
    }

    /// Terminals appearing and going (in `/dev/pts` on Linux): a new pane is
    /// a new terminal, a pane gone closes its one.
    pub fn terminals() -> io::Result<TtyWatch> {
        Ok(TtyWatch(Watch::new(
            platform::TERMINALS_DIR,
            WatchFor::EntriesComingAndGoing,
        )?))
    }

    /// Waits for the next write(s) to the terminal; several pending events count
    /// as one.
    pub async fn changed(&self) -> io::Result<()> {
        self.0.changed().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    #[cfg_attr(
        target_os = "macos",
        ignore = "macOS reports no writes to a terminal: platform::Watch answers Unsupported"
    )]
    async fn a_write_to_a_pty_is_an_event() {
        // A pty of our own stands in for a pane's terminal.
        let pty = tmux_mcp_core::platform::open_pty().unwrap();
        let watch = TtyWatch::new(&pty.path).unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(100), watch.changed())
                .await
                .is_err(),
            "no event before a write"
        );
        rustix::io::write(&pty.slave, b"x\n").unwrap();
        tokio::time::timeout(Duration::from_secs(2), watch.changed())
            .await
            .expect("event after a write")
            .unwrap();
    }
}
