//! Which agent CLI runs on which pane's terminal: one pass over the process
//! table (reading each candidate's package for its version), and the agent
//! last seen per pane.
//!
//! A candidate is a process whose controlling terminal is a pane's. Per
//! pane, the oldest in the terminal's foreground group wins, else the
//! oldest. [`Seen`] keeps the agent last found per pane, so one that is gone
//! reads `exited`.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use tmux_mcp_core::platform::process_table;

use super::identify::{identify, Cli};
use super::package::version_of;

/// An agent CLI process found on a pane's terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub cli: Cli,
    pub pid: u32,
    pub start_ticks: u64,
    /// In the terminal's foreground process group (what the screen shows).
    pub foreground: bool,
    pub version: Option<String>,
}

impl Found {
    /// Whether the process is still the one that was found.
    pub fn alive(&self) -> bool {
        process_table::stat(self.pid)
            .is_ok_and(|st| tmux_mcp_core::process::runs_as(&st, Some(self.start_ticks)))
    }
}

/// The agent CLI of each terminal in `ttys` (device paths such as
/// `/dev/pts/3`, keyed by the caller's pane id), in one pass over `/proc`.
/// Of several matching processes (a launcher and the CLI it started), the
/// oldest in the foreground process group is taken, else the oldest.
pub fn find_in_terminals<'a>(
    ttys: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> std::io::Result<HashMap<String, Found>> {
    let mut by_device: HashMap<u64, &str> = HashMap::new();
    for (pane, tty) in ttys {
        // st_rdev and /proc's tty_nr encode a device number the same way.
        if let Ok(md) = std::fs::metadata(tty) {
            by_device.insert(md.rdev(), pane);
        }
    }
    let mut found: HashMap<String, Found> = HashMap::new();
    if by_device.is_empty() {
        return Ok(found);
    }
    for st in process_table::all()? {
        let Some(pane) = by_device.get(&st.tty_nr) else {
            continue;
        };
        let Ok(argv) = process_table::cmdline(st.pid) else {
            continue;
        };
        let exe = process_table::exe(st.pid);
        let Some(cli) = identify(exe.as_deref(), &argv) else {
            continue;
        };
        let candidate = Found {
            cli,
            pid: st.pid,
            start_ticks: st.start_ticks,
            foreground: st.in_foreground(),
            version: None,
        };
        let better = |old: &Found| {
            (
                candidate.foreground,
                std::cmp::Reverse(candidate.start_ticks),
            ) > (old.foreground, std::cmp::Reverse(old.start_ticks))
        };
        if found.get(*pane).is_none_or(better) {
            let version = version_of(cli, exe.as_deref(), &argv);
            found.insert(
                pane.to_string(),
                Found {
                    version,
                    ..candidate
                },
            );
        }
    }
    Ok(found)
}

/// The agent last found in each pane, kept until the pane closes or runs
/// another agent: a pane whose agent is gone shows that it exited.
#[derive(Default)]
pub struct Seen(std::sync::Mutex<HashMap<String, Found>>);

impl Seen {
    /// Records what one scan found. `scanned` are the panes looked at, with
    /// whether each is still live; `panes` are every pane of the server (the
    /// others are forgotten). Returns, for each scanned pane without a running
    /// agent, the agent seen there before: it exited.
    pub fn update<'a>(
        &self,
        scanned: impl IntoIterator<Item = &'a str>,
        found: &HashMap<String, Found>,
        panes: &std::collections::HashSet<&str>,
    ) -> HashMap<String, Found> {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        seen.retain(|pane, _| panes.contains(pane.as_str()));
        let mut exited = HashMap::new();
        for pane in scanned {
            match found.get(pane) {
                Some(f) => {
                    seen.insert(pane.to_string(), f.clone());
                }
                None => {
                    if let Some(old) = seen.get(pane) {
                        exited.insert(pane.to_string(), old.clone());
                    }
                }
            }
        }
        exited
    }
}
