//! The Darwin backend's decisions, as pure functions of what the kernel
//! answered: compiled on every OS, so that their unit tests run on Linux too
//! (the syscalls around them, in `mod.rs` and `process_table.rs`, stay thin
//! and build only for macOS).
#![cfg_attr(not(target_os = "macos"), allow(dead_code))]
// The device-number helpers (`major`, `minor`, `terminal_name`) are used by
// the tests, here and on a Mac (a pty's `st_rdev` names its `/dev/ttysNNN`):
// they pin down the device numbers that `tty_nr` is compared with.

/// Darwin's `NODEV`: `e_tdev` of a process without a controlling terminal.
pub const NO_DEVICE: u32 = u32::MAX;

/// The major number of pty slaves (`/dev/ttysNNN`) in XNU (`tty_ptmx.c`).
#[allow(dead_code)]
pub const PTY_SLAVE_MAJOR: u32 = 16;

/// `major()` of a Darwin `dev_t`: its top byte.
#[allow(dead_code)]
pub fn major(dev: u32) -> u32 {
    (dev >> 24) & 0xff
}

/// `minor()` of a Darwin `dev_t`: its low 24 bits.
#[allow(dead_code)]
pub fn minor(dev: u32) -> u32 {
    dev & 0x00ff_ffff
}

/// The controlling terminal as the process table keeps it (`tty_nr`, which
/// callers compare with the `st_rdev` of a pane's terminal): `e_tdev`, or 0
/// without a terminal (Darwin says `NODEV`, Linux says 0).
pub fn tty_nr(e_tdev: u32) -> u64 {
    if e_tdev == NO_DEVICE {
        0
    } else {
        u64::from(e_tdev)
    }
}

/// The name under `/dev` of a pty slave's device number (`ttys%03d`, as XNU's
/// `PTSD_TEMPLATE` names it); `None` for another device or no device.
#[allow(dead_code)]
pub fn terminal_name(dev: u64) -> Option<String> {
    let dev = u32::try_from(dev).ok()?;
    if dev == NO_DEVICE || major(dev) != PTY_SLAVE_MAJOR {
        return None;
    }
    Some(format!("ttys{:03}", minor(dev)))
}

/// A process's start time as the process table keeps it (`start_ticks`):
/// microseconds since the epoch, from `proc_bsdinfo`'s `pbi_start_tvsec` and
/// `pbi_start_tvusec`. The kernel records it once at fork, so it is a fixed
/// property of the process, and pid + start time name one process.
pub fn start_ticks(tvsec: u64, tvusec: u64) -> u64 {
    tvsec
        .saturating_mul(TICKS_PER_SECOND)
        .saturating_add(tvusec)
}

/// `start_ticks` per second (microseconds).
pub const TICKS_PER_SECOND: u64 = 1_000_000;

/// Seconds since the epoch of a `start_ticks`.
pub fn start_time_epoch(start_ticks: u64) -> u64 {
    start_ticks / TICKS_PER_SECOND
}

/// A process as the kernel names it across time: its pid and its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub pid: u32,
    pub start_ticks: u64,
}

/// Whether an identity read before arming a watch and one read after it are
/// the same process: same pid and same start time (a pid reused in between
/// starts later). A process gone at either read (`None`) is not confirmed.
pub fn same_process(before: Option<Identity>, after: Option<Identity>) -> bool {
    matches!((before, after), (Some(a), Some(b)) if a == b)
}

/// `proc_bsdinfo`'s `pbi_status` (`SIDL` 1, `SRUN` 2, `SSLEEP` 3, `SSTOP` 4,
/// `SZOMB` 5) as Linux's one-letter state.
pub fn state_letter(pbi_status: u32) -> char {
    match pbi_status {
        1 | 2 => 'R',
        3 => 'S',
        4 => 'T',
        5 => 'Z',
        _ => '?',
    }
}

/// A NUL-terminated C string in a fixed buffer, lossily decoded (the bytes
/// before the first NUL, the whole buffer without one).
pub fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// The argv in a `sysctl(KERN_PROCARGS2)` buffer: `argc` (a native-endian
/// `int`), the executable's path, NUL padding, then `argc` NUL-terminated
/// arguments, then the environment (not read). `None` when the buffer is
/// shorter than it says (a process that rewrote its own argument area may
/// leave fewer strings than `argc`: the ones present are kept).
pub fn parse_procargs2(buf: &[u8]) -> Option<Vec<String>> {
    let argc_bytes: [u8; 4] = buf.get(..4)?.try_into().ok()?;
    let argc = usize::try_from(i32::from_ne_bytes(argc_bytes)).ok()?;
    let rest = &buf[4..];
    // The executable path, then its NUL padding.
    let path_end = rest.iter().position(|b| *b == 0)?;
    let mut i = path_end;
    while rest.get(i) == Some(&0) {
        i += 1;
    }
    let mut args = Vec::with_capacity(argc.min(4096));
    while args.len() < argc && i < rest.len() {
        let len = rest[i..]
            .iter()
            .position(|b| *b == 0)
            .unwrap_or(rest.len() - i);
        args.push(String::from_utf8_lossy(&rest[i..i + len]).into_owned());
        i += len + 1;
    }
    Some(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `KERN_PROCARGS2` buffer as the kernel lays it out.
    fn procargs(argc: i32, exec: &str, pad: usize, args: &[&str], env: &[&str]) -> Vec<u8> {
        let mut b = argc.to_ne_bytes().to_vec();
        b.extend_from_slice(exec.as_bytes());
        b.extend(std::iter::repeat_n(0u8, 1 + pad));
        for a in args.iter().chain(env) {
            b.extend_from_slice(a.as_bytes());
            b.push(0);
        }
        b
    }

    #[test]
    fn procargs2_gives_argv_without_the_path_or_the_environment() {
        let b = procargs(
            3,
            "/opt/homebrew/bin/node",
            7,
            &[
                "node",
                "/usr/local/lib/node_modules/@openai/codex/bin/codex.js",
                "",
            ],
            &["HOME=/Users/a", "TERM=xterm"],
        );
        assert_eq!(
            parse_procargs2(&b).unwrap(),
            [
                "node",
                "/usr/local/lib/node_modules/@openai/codex/bin/codex.js",
                ""
            ]
        );
        // No padding at all, and an argument that is not UTF-8.
        let mut b = procargs(2, "/bin/sh", 0, &["sh"], &[]);
        b.extend_from_slice(b"-c\xff\0");
        assert_eq!(parse_procargs2(&b).unwrap(), ["sh", "-c\u{fffd}"]);
    }

    #[test]
    fn procargs2_keeps_what_a_short_buffer_holds_and_refuses_garbage() {
        // argc says 3, the buffer holds 2 (the last unterminated).
        let mut b = procargs(3, "/bin/zsh", 2, &["-zsh"], &[]);
        b.extend_from_slice(b"tail");
        assert_eq!(parse_procargs2(&b).unwrap(), ["-zsh", "tail"]);
        assert_eq!(parse_procargs2(&[1, 0]), None, "shorter than argc");
        assert_eq!(parse_procargs2(&procargs(-1, "/x", 0, &[], &[])), None);
        let no_nul = [1, 0, 0, 0, b'/', b'x'];
        assert_eq!(parse_procargs2(&no_nul), None, "an unterminated path");
        assert_eq!(
            parse_procargs2(&procargs(0, "/bin/sh", 3, &[], &["A=1"])).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_pty_slave_device_is_named_as_dev_names_it() {
        // makedev(16, 3): /dev/ttys003.
        let dev = (16u32 << 24) | 3;
        assert_eq!(major(dev), 16);
        assert_eq!(minor(dev), 3);
        assert_eq!(terminal_name(u64::from(dev)).as_deref(), Some("ttys003"));
        assert_eq!(
            terminal_name(u64::from((16u32 << 24) | 1234)).as_deref(),
            Some("ttys1234")
        );
        // The master side (ptc, major 15), the console (0, 0), no device.
        assert_eq!(terminal_name(u64::from((15u32 << 24) | 3)), None);
        assert_eq!(terminal_name(0), None);
        assert_eq!(terminal_name(u64::from(NO_DEVICE)), None);
        assert_eq!(terminal_name(1 << 40), None);
    }

    #[test]
    fn no_controlling_terminal_is_zero_as_on_linux() {
        assert_eq!(tty_nr(NO_DEVICE), 0);
        assert_eq!(tty_nr((16 << 24) | 7), (16 << 24) | 7);
    }

    #[test]
    fn start_time_is_microseconds_since_the_epoch() {
        let t = start_ticks(1_764_990_000, 123_456);
        assert_eq!(t, 1_764_990_000_123_456);
        assert_eq!(start_time_epoch(t), 1_764_990_000);
        // A process started a microsecond later is another start time.
        assert_ne!(start_ticks(1_764_990_000, 123_457), t);
        assert_eq!(start_ticks(u64::MAX, 1), u64::MAX, "saturates");
    }

    #[test]
    fn the_same_process_is_the_same_pid_started_at_the_same_time() {
        let a = Identity {
            pid: 4242,
            start_ticks: 10,
        };
        assert!(same_process(Some(a), Some(a)));
        let reused = Identity {
            start_ticks: 11,
            ..a
        };
        assert!(!same_process(Some(a), Some(reused)), "pid reused");
        let other = Identity { pid: 4243, ..a };
        assert!(!same_process(Some(a), Some(other)));
        assert!(!same_process(Some(a), None), "gone after arming");
        assert!(!same_process(None, Some(a)));
    }

    #[test]
    fn states_and_c_strings() {
        assert_eq!(
            [1, 2, 3, 4, 5, 9].map(state_letter),
            ['R', 'R', 'S', 'T', 'Z', '?']
        );
        assert_eq!(c_string(b"tmux\0\0junk"), "tmux");
        assert_eq!(c_string(b"full"), "full");
        assert_eq!(c_string(b""), "");
    }
}
