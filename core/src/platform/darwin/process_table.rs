//! The process table on macOS, from libproc and `sysctl`: the same readers as
//! Linux's `/proc` one, with the same types. `proc_pidinfo(PROC_PIDTBSDINFO)`
//! gives parent, process group, controlling terminal (`e_tdev`), its
//! foreground group (`e_tpgid`) and the start time; `sysctl(KERN_PROCARGS2)`
//! the argv; `proc_pidpath` the executable; `proc_listallpids` every pid.
//! The decisions on what they answer are in [`super::rules`]. A process of
//! another user cannot be read (`EPERM`), as under `/proc` with `hidepid`:
//! [`all`] leaves it out.

use super::rules;
use std::ffi::{c_int, c_void};
use std::io;
use std::mem::{size_of, MaybeUninit};

pub use crate::platform::ProcStat;

fn pid_arg(pid: u32) -> io::Result<c_int> {
    c_int::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))
}

/// `proc_pidinfo(pid, flavor, 0, &mut T)`, which must fill all of `T`.
fn pidinfo<T>(pid: u32, flavor: c_int) -> io::Result<T> {
    let pid = pid_arg(pid)?;
    let mut out = MaybeUninit::<T>::zeroed();
    let size = size_of::<T>() as c_int;
    // SAFETY: the buffer is `size` writable bytes; the kernel writes at most that.
    let n = unsafe { libc::proc_pidinfo(pid, flavor, 0, out.as_mut_ptr().cast(), size) };
    if n <= 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(0) | None => io::Error::from_raw_os_error(libc::ESRCH),
            _ => e,
        });
    }
    if n < size {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("proc_pidinfo({pid}, {flavor}) answered {n} of {size} bytes"),
        ));
    }
    // SAFETY: zero-initialised plain C data, then filled by the kernel.
    Ok(unsafe { out.assume_init() })
}

pub fn stat(pid: u32) -> io::Result<ProcStat> {
    let info: libc::proc_bsdinfo = pidinfo(pid, libc::PROC_PIDTBSDINFO)?;
    let name = rules::c_string(&info.pbi_name.map(|c| c as u8));
    let comm = if name.is_empty() {
        rules::c_string(&info.pbi_comm.map(|c| c as u8))
    } else {
        name
    };
    Ok(ProcStat {
        pid: info.pbi_pid,
        comm,
        state: rules::state_letter(info.pbi_status),
        ppid: info.pbi_ppid,
        pgrp: info.pbi_pgid as i32,
        tty_nr: rules::tty_nr(info.e_tdev),
        tpgid: info.e_tpgid as i32,
        start_ticks: rules::start_ticks(info.pbi_start_tvsec, info.pbi_start_tvusec),
    })
}

/// `start_ticks` per second: the start time is kept in microseconds.
pub fn clock_ticks_per_second() -> u64 {
    rules::TICKS_PER_SECOND
}

/// Now, on the clock of [`ProcStat::start_ticks`]: microseconds since the
/// epoch.
pub fn now_ticks() -> io::Result<u64> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(io::Error::other)?;
    Ok(now.as_micros() as u64)
}

/// Start time of a process in seconds since the epoch.
pub fn start_time_epoch(start_ticks: u64) -> io::Result<u64> {
    Ok(rules::start_time_epoch(start_ticks))
}

/// `sysctlbyname(name)` into a buffer of at most `cap` bytes.
fn sysctl_bytes(name: &std::ffi::CStr, cap: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; cap];
    let mut len = cap;
    // SAFETY: `buf` has `len` writable bytes; the kernel sets `len` to what it wrote.
    let rc = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(len);
    Ok(buf)
}

/// This boot's identity: `kern.bootsessionuuid` (a UUID drawn at each boot),
/// else the boot time (`kern.boottime`, seconds.microseconds).
pub fn boot_id() -> String {
    if let Ok(b) = sysctl_bytes(c"kern.bootsessionuuid", 64) {
        let id = rules::c_string(&b);
        if !id.is_empty() {
            return id;
        }
    }
    match sysctl_bytes(c"kern.boottime", size_of::<libc::timeval>()) {
        Ok(b) if b.len() >= 16 => {
            let sec = i64::from_ne_bytes(b[..8].try_into().unwrap_or_default());
            let usec = i32::from_ne_bytes(b[8..12].try_into().unwrap_or_default());
            format!("{sec}.{usec:06}")
        }
        _ => String::new(),
    }
}

/// macOS has no PID namespaces: every process shares the one there is. A
/// process that cannot be read is an error, as on Linux.
pub fn pid_namespace(pid: Option<u32>) -> io::Result<(u64, u64)> {
    if let Some(pid) = pid {
        stat(pid)?;
    }
    Ok((0, 0))
}

/// Where the process table is read from, as people know it (`doctor`).
pub const SOURCE: &str = "libproc";

/// The process table can be read: libproc lists processes.
pub fn readable() -> bool {
    // SAFETY: a null buffer asks only for the size.
    unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) > 0 }
}

/// Whether processes `a` and `b` run the same executable; `None` when either
/// cannot be read.
pub fn same_executable(a: u32, b: u32) -> Option<bool> {
    Some(exe(a)? == exe(b)?)
}

/// Every pid there is now (`proc_listallpids`).
fn all_pids() -> io::Result<Vec<c_int>> {
    // SAFETY: a null buffer asks only for the count.
    let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    if count <= 0 {
        return Err(io::Error::last_os_error());
    }
    // Room for processes started meanwhile.
    let mut pids = vec![0 as c_int; count as usize + 64];
    let bytes = (pids.len() * size_of::<c_int>()) as c_int;
    // SAFETY: `pids` has `bytes` writable bytes.
    let n = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast::<c_void>(), bytes) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    pids.truncate(n as usize);
    Ok(pids)
}

/// The stat of every process that can be read now (one pass; processes that
/// exit meanwhile, and other users' processes, are left out).
pub fn all() -> io::Result<Vec<ProcStat>> {
    Ok(all_pids()?
        .into_iter()
        .filter(|p| *p > 0)
        .filter_map(|p| stat(p as u32).ok())
        .collect())
}

/// The raw `sysctl(KERN_PROCARGS2)` buffer of `pid`.
fn procargs2(pid: u32) -> io::Result<Vec<u8>> {
    let pid = pid_arg(pid)?;
    let argmax = sysctl_bytes(c"kern.argmax", size_of::<c_int>())
        .ok()
        .and_then(|b| Some(c_int::from_ne_bytes(b.get(..4)?.try_into().ok()?)))
        .filter(|n| *n > 0)
        .unwrap_or(1 << 20) as usize;
    let mut buf = vec![0u8; argmax];
    let mut len = argmax;
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
    // SAFETY: `mib` names 3 levels; `buf` has `len` writable bytes.
    let rc = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            mib.len() as libc::c_uint,
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(len);
    Ok(buf)
}

/// A process's arguments (`KERN_PROCARGS2`), lossily decoded, empty ones
/// left out as Linux's `/proc/PID/cmdline` reader does.
pub fn cmdline(pid: u32) -> io::Result<Vec<String>> {
    let buf = procargs2(pid)?;
    let args = rules::parse_procargs2(&buf).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unparsable KERN_PROCARGS2 of {pid}"),
        )
    })?;
    Ok(args.into_iter().filter(|a| !a.is_empty()).collect())
}

/// The executable a process runs (`proc_pidpath`), when it can be read.
pub fn exe(pid: u32) -> Option<std::path::PathBuf> {
    let pid = pid_arg(pid).ok()?;
    let mut buf = vec![0u8; libc::PROC_PIDPATHINFO_MAXSIZE as usize];
    // SAFETY: `buf` has that many writable bytes.
    let n = unsafe { libc::proc_pidpath(pid, buf.as_mut_ptr().cast(), buf.len() as u32) };
    if n <= 0 {
        return None;
    }
    buf.truncate(n as usize);
    use std::os::unix::ffi::OsStringExt;
    Some(std::ffi::OsString::from_vec(buf).into())
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

/// `PROC_PIDFDVNODEPATHINFO` (`sys/proc_info.h`; not in the libc crate).
const PROC_PIDFDVNODEPATHINFO: c_int = 2;

/// `struct proc_fileinfo` (`sys/proc_info.h`).
#[repr(C)]
struct ProcFileinfo {
    fi_openflags: u32,
    fi_status: u32,
    fi_offset: libc::off_t,
    fi_type: i32,
    fi_guardflags: u32,
}

/// `struct vnode_fdinfowithpath` (`sys/proc_info.h`).
#[repr(C)]
struct VnodeFdinfoWithPath {
    pfi: ProcFileinfo,
    pvip: libc::vnode_info_path,
}

/// Whether process `pid` has `path` open, compared by device and inode
/// (`PROC_PIDLISTFDS`, then `proc_pidfdinfo(PROC_PIDFDVNODEPATHINFO)` of
/// each vnode descriptor).
pub fn holds_open(pid: u32, path: &std::path::Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(path)?;
    let want = (md.dev(), md.ino());
    let cpid = pid_arg(pid)?;
    // SAFETY: a null buffer asks only for the size in bytes.
    let bytes =
        unsafe { libc::proc_pidinfo(cpid, libc::PROC_PIDLISTFDS, 0, std::ptr::null_mut(), 0) };
    if bytes <= 0 {
        return Err(io::Error::last_os_error());
    }
    let room = bytes as usize / size_of::<libc::proc_fdinfo>() + 16;
    let mut fds: Vec<libc::proc_fdinfo> = Vec::with_capacity(room);
    let cap = (room * size_of::<libc::proc_fdinfo>()) as c_int;
    // SAFETY: `fds` has room for `cap` bytes; the kernel says how many it wrote.
    let n =
        unsafe { libc::proc_pidinfo(cpid, libc::PROC_PIDLISTFDS, 0, fds.as_mut_ptr().cast(), cap) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel filled `n` bytes of whole `proc_fdinfo` records.
    unsafe { fds.set_len(n as usize / size_of::<libc::proc_fdinfo>()) };
    for fd in fds
        .iter()
        .filter(|f| f.proc_fdtype == libc::PROX_FDTYPE_VNODE as u32)
    {
        let mut info = MaybeUninit::<VnodeFdinfoWithPath>::zeroed();
        let size = size_of::<VnodeFdinfoWithPath>() as c_int;
        // SAFETY: `info` is `size` writable bytes.
        let got = unsafe {
            libc::proc_pidfdinfo(
                cpid,
                fd.proc_fd,
                PROC_PIDFDVNODEPATHINFO,
                info.as_mut_ptr().cast(),
                size,
            )
        };
        if got < size {
            continue; // closed meanwhile
        }
        // SAFETY: zeroed plain C data, filled by the kernel.
        let info = unsafe { info.assume_init() };
        let st = &info.pvip.vip_vi.vi_stat;
        if (u64::from(st.vst_dev), st.vst_ino) == want {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_stat_ancestry_and_arguments() {
        let me = std::process::id();
        let st = stat(me).unwrap();
        assert_eq!(st.pid, me);
        assert_eq!(st.ppid, std::os::unix::process::parent_id());
        assert!(st.start_ticks > 0);
        assert_eq!(stat(me).unwrap().start_ticks, st.start_ticks, "fixed");
        let chain = ancestry(me, 64);
        assert_eq!(chain[0], me);
        assert!(all().unwrap().iter().any(|s| s.pid == me));
        assert_eq!(cmdline(me).unwrap(), std::env::args().collect::<Vec<_>>());
        assert_eq!(
            exe(me).map(|p| std::fs::canonicalize(p).unwrap()),
            std::env::current_exe()
                .ok()
                .map(|p| std::fs::canonicalize(p).unwrap())
        );
        assert_eq!(same_executable(me, me), Some(true));
        assert!(readable());
        assert_eq!(
            pid_namespace(None).unwrap(),
            pid_namespace(Some(me)).unwrap()
        );
        assert!(!boot_id().is_empty());
    }

    #[test]
    fn a_reaped_child_is_gone() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert_eq!(stat(pid).unwrap().ppid, std::process::id());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(stat(pid).is_err());
        assert_eq!(exe(pid), None);
    }

    #[test]
    fn holds_open_sees_an_open_file_by_device_and_inode() {
        let dir = std::env::temp_dir().join(format!("tmux-mcp-holds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(&a, b"a").unwrap();
        std::fs::write(&b, b"b").unwrap();
        let f = std::fs::File::open(&a).unwrap();
        assert!(holds_open(std::process::id(), &a).unwrap());
        assert!(!holds_open(std::process::id(), &b).unwrap());
        drop(f);
        assert!(!holds_open(std::process::id(), &a).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
