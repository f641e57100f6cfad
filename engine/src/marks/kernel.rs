//! What the kernel says of the processes behind the marks, and the broker's
//! clock: the [`Facts`] the store hands to `log::apply`, and whether a
//! shell (or any process the broker started) still runs.

use super::log::{Facts, Proc, Shell};
use std::time::{SystemTime, UNIX_EPOCH};
use tmux_mcp_core::platform::process_table;

/// The real [`Facts`]: the process table and the clock.
pub struct Kernel;

impl Facts for Kernel {
    fn process(&self, pid: u32) -> Option<Proc> {
        process_table::stat(pid).ok().map(|st| Proc {
            tty: st.tty_nr,
            start: st.start_ticks,
        })
    }

    fn runs(&self, shell: &Shell) -> bool {
        shell.alive()
    }

    fn now(&self) -> f64 {
        now()
    }
}

/// Seconds since the epoch.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Shell {
    /// Whether the shell that wrote the marks still runs: its pid names a
    /// process that is not a zombie (killed, not yet reaped by its parent)
    /// and that started when the shell did. Where the process table cannot
    /// be read, whether the pid exists.
    pub fn alive(&self) -> bool {
        process_runs(self.pid, self.start)
    }
}

/// Whether `pid` is still the process that started at `start` (clock
/// ticks; `None`: never read) and runs: not a zombie, not a later process
/// given the pid. Where the process table cannot be read, whether the pid
/// exists.
pub fn process_runs(pid: u32, start: Option<u64>) -> bool {
    match process_table::stat(pid) {
        Ok(st) => tmux_mcp_core::process::runs_as(&st, start),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => pid_alive(pid),
        Err(_) => false,
    }
}

/// Whether process `pid` exists (signal 0: nothing is sent).
pub fn pid_alive(pid: u32) -> bool {
    tmux_mcp_core::sys::pid_alive(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_is_alive_while_its_own_process_runs_unreaped_or_not() {
        let shell_of = |pid: u32, start: Option<u64>| Shell {
            name: "zsh".into(),
            version: String::new(),
            pid,
            start,
        };
        let mut running = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = running.id();
        let start = process_table::stat(pid).unwrap().start_ticks;
        assert!(shell_of(pid, Some(start)).alive(), "a running shell");
        assert!(
            shell_of(pid, None).alive(),
            "one first seen without its start"
        );
        assert!(
            !shell_of(pid, Some(start + 1)).alive(),
            "another process that has the pid now"
        );
        // Killed and not yet reaped: a zombie is not a running shell (kill(pid, 0) says it exists).
        running.kill().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        // (macOS's table may not list a zombie at all: that reads as gone.)
        while matches!(process_table::stat(pid).map(|st| st.state), Ok(c) if c != 'Z') {
            assert!(
                std::time::Instant::now() < deadline,
                "the child never became a zombie"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(pid_alive(pid), "kill(pid, 0) takes the zombie for alive");
        assert!(!shell_of(pid, Some(start)).alive(), "a zombie");
        running.wait().unwrap();
        assert!(!shell_of(pid, Some(start)).alive(), "reaped");
    }

    #[test]
    fn the_kernel_reads_this_process_s_terminal_and_start() {
        let me = std::process::id();
        let st = process_table::stat(me).unwrap();
        assert_eq!(
            Kernel.process(me),
            Some(Proc {
                tty: st.tty_nr,
                start: st.start_ticks
            })
        );
        assert!(Kernel.now() > 1.0e9);
    }
}
