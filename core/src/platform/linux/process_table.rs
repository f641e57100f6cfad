//! The process table, from Linux `/proc`: small typed readers of process
//! status lines, start times, PID namespaces, argv and parent chains.
//! Everything the broker knows about processes that tmux does not tell it
//! comes from here.
//!
//! [`stat`] gives the parent, the process group, the controlling terminal
//! and its foreground group, and the start time. Beside it: the boot id, the
//! PID namespace, `exe`, `cmdline`, [`ancestry`], and [`all`], one pass over
//! every process.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;

pub use crate::platform::ProcStat;

pub fn stat(pid: u32) -> io::Result<ProcStat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_stat(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unparsable /proc/{pid}/stat"),
        )
    })
}

/// Parses a stat line. `comm` may itself contain spaces and `)`, so the fields
/// after it are found from the *last* `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text[open + 1..close].to_string();
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    Some(ProcStat {
        pid,
        comm,
        state: rest.first()?.chars().next()?,
        ppid: rest.get(1)?.parse().ok()?,
        pgrp: rest.get(2)?.parse().ok()?,
        // The field is a signed int in the kernel's printf; a device number
        // above 2^31 shows negative, hence the two's-complement cast.
        tty_nr: rest.get(4)?.parse::<i64>().ok()? as u32 as u64,
        tpgid: rest.get(5)?.parse().ok()?,
        start_ticks: rest.get(19)?.parse().ok()?,
    })
}

pub fn clock_ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second().max(1)
}

/// Now, on the clock of [`ProcStat::start_ticks`]: clock ticks since boot
/// (`/proc/uptime`, in hundredths of a second).
pub fn now_ticks() -> io::Result<u64> {
    let text = fs::read_to_string("/proc/uptime")?;
    let up: f64 = text
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unreadable /proc/uptime"))?;
    Ok((up * clock_ticks_per_second() as f64) as u64)
}

/// Boot time in seconds since the epoch (`btime` in /proc/stat).
pub fn boot_time() -> io::Result<u64> {
    let text = fs::read_to_string("/proc/stat")?;
    text.lines()
        .find_map(|l| l.strip_prefix("btime ").and_then(|v| v.trim().parse().ok()))
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no btime in /proc/stat"))
}

/// Start time of a process in seconds since the epoch.
pub fn start_time_epoch(start_ticks: u64) -> io::Result<u64> {
    Ok(boot_time()? + start_ticks / clock_ticks_per_second())
}

pub fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Identity of a PID namespace: device and inode of `/proc/PID/ns/pid`.
pub fn pid_namespace(pid: Option<u32>) -> io::Result<(u64, u64)> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/ns/pid"),
        None => "/proc/self/ns/pid".to_string(),
    };
    let md = fs::metadata(path)?;
    Ok((md.dev(), md.ino()))
}

/// Where the process table is read from, as people know it (`doctor`).
pub const SOURCE: &str = "/proc";

/// The process table can be read: `/proc` is procfs (not a bind-mounted
/// copy of another namespace's).
pub fn readable() -> bool {
    const PROC_SUPER_MAGIC: i64 = 0x9fa0;
    // `f_type`'s integer type differs between architectures.
    #[allow(clippy::unnecessary_cast)]
    rustix::fs::statfs("/proc").is_ok_and(|fs| fs.f_type as i64 == PROC_SUPER_MAGIC)
}

/// Whether processes `a` and `b` run the same executable (`/proc/PID/exe`);
/// `None` when either cannot be read (gone, or not ours).
pub fn same_executable(a: u32, b: u32) -> Option<bool> {
    let exe = |pid: u32| fs::read_link(format!("/proc/{pid}/exe")).ok();
    Some(exe(a)? == exe(b)?)
}

/// The stat of every process that can be read now (one pass over `/proc`;
/// processes that exit meanwhile are left out).
pub fn all() -> io::Result<Vec<ProcStat>> {
    let mut out = Vec::new();
    for entry in fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Ok(st) = stat(pid) {
            out.push(st);
        }
    }
    Ok(out)
}

/// A process's arguments (`/proc/PID/cmdline`, NUL-separated), lossily
/// decoded; empty for a zombie or a kernel thread.
pub fn cmdline(pid: u32) -> io::Result<Vec<String>> {
    let raw = fs::read(format!("/proc/{pid}/cmdline"))?;
    Ok(raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect())
}

/// Whether process `pid` has the file at `path` open (any descriptor whose
/// file is the same device and inode; `/proc/PID/fd`). `run_command` asks
/// it of the pane's shell to learn whether the typed line ran at all.
pub fn holds_open(pid: u32, path: &std::path::Path) -> io::Result<bool> {
    let want = fs::metadata(path)?;
    for entry in fs::read_dir(format!("/proc/{pid}/fd"))? {
        let Ok(entry) = entry else { continue };
        // The link's target, followed: a descriptor closed meanwhile is skipped.
        if let Ok(m) = fs::metadata(entry.path()) {
            if m.dev() == want.dev() && m.ino() == want.ino() {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The executable a process runs (`/proc/PID/exe`), when it can be read.
pub fn exe(pid: u32) -> Option<std::path::PathBuf> {
    fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// `pid`, its parent, grandparent … up to (not including) pid 1, at most `limit` steps.
pub fn ancestry(pid: u32, limit: usize) -> Vec<u32> {
    let mut chain = Vec::new();
    let mut cur = pid;
    while cur > 1 && chain.len() < limit {
        chain.push(cur);
        match stat(cur) {
            Ok(st) => cur = st.ppid,
            Err(_) => break,
        }
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_open_sees_this_process_s_own_descriptors() {
        let dir = std::env::temp_dir().join(format!("tmcp-holds-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (held, other) = (dir.join("held"), dir.join("other"));
        fs::write(&other, b"").unwrap();
        let f = fs::File::create(&held).unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&held, &link).unwrap();
        let me = std::process::id();
        let seen = (
            holds_open(me, &held).unwrap(),
            holds_open(me, &link).unwrap(),
            holds_open(me, &other).unwrap(),
        );
        drop(f);
        let after = holds_open(me, &held).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(seen, (true, true, false));
        assert!(!after);
        assert!(holds_open(me, &dir.join("gone")).is_err());
    }

    #[test]
    fn same_executable_compares_exe_links() {
        let me = std::process::id();
        assert_eq!(same_executable(me, me), Some(true));
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        // Until it has exec'd, the child runs this test binary: wait for sleep.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while same_executable(child.id(), me) == Some(true) && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(same_executable(child.id(), me), Some(false));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(
            same_executable(child.id(), me),
            None,
            "a reaped process has no exe"
        );
    }

    #[test]
    fn parses_comm_with_parens_and_spaces() {
        let line = "4242 (my (odd) prog) S 17 4242 4242 34816 4242 4194304 1 2 3 4 5 6 7 8 20 0 1 0 987654 1000 200";
        let st = parse_stat(line).unwrap();
        assert_eq!(st.pid, 4242);
        assert_eq!(st.comm, "my (odd) prog");
        assert_eq!(st.state, 'S');
        assert_eq!(st.ppid, 17);
        assert_eq!(st.pgrp, 4242);
        assert_eq!(st.tty_nr, 34816);
        assert_eq!(st.tpgid, 4242);
        assert!(st.in_foreground());
        assert_eq!(st.start_ticks, 987654);
    }

    #[test]
    fn reads_own_stat_and_ancestry() {
        let me = std::process::id();
        let st = stat(me).unwrap();
        assert_eq!(st.pid, me);
        assert_eq!(st.ppid, std::os::unix::process::parent_id());
        let chain = ancestry(me, 64);
        assert_eq!(chain[0], me);
        assert_eq!(chain.get(1).copied(), Some(st.ppid).filter(|p| *p > 1));
    }

    #[test]
    fn scan_finds_self_with_its_arguments() {
        let me = std::process::id();
        assert!(all().unwrap().iter().any(|st| st.pid == me));
        let args = cmdline(me).unwrap();
        assert_eq!(args, std::env::args().collect::<Vec<_>>());
        assert_eq!(exe(me), std::env::current_exe().ok());
    }

    #[test]
    fn own_namespace_matches_self() {
        assert_eq!(
            pid_namespace(None).unwrap(),
            pid_namespace(Some(std::process::id())).unwrap()
        );
    }
}
