//! A terminal of the broker's own whose output is shown in a pane and kept.
//!
//! `run_command` points a command's stdout and stderr at the slave side of a
//! pty the broker opens (its path, `/dev/pts/N`, is public and short). The
//! broker copies everything written there to the pane's own terminal, so the
//! person watches the output live as if they had run the command themselves,
//! and keeps the same bytes for the agent. The command still writes to a
//! terminal (`test -t 1` holds, colours and progress bars work), sized like
//! the pane. The slave's output processing is off, so the kept bytes are
//! exactly what the program wrote; the pane's terminal adds its own `\r`
//! before `\n` on the way to tmux, as it does for anything written there.
//!
//! The command's end comes in band: after the command the shell sources the
//! slave itself (`. /dev/pts/N`), reading a script the broker queued there
//! ([`Mirror::preload`]), so what the pane shows of the wrapper is that short
//! path. The script prints a marker, `ESC _ <nonce> ; <status> ESC \`, an
//! APC string with a nonce of this job that is never on the screen, which
//! [`Scan`] takes out of both copies; then it reads a line from the slave,
//! which the broker writes once the output is on the pane (see
//! [`Mirror::run`]). The release is a line and an end of file. The script
//! reads at most twice ([`release_read`]): a shell that runs a sourced file
//! line by line reads the preloaded end of file first. The broker holds a slave descriptor itself, so the
//! master never reads a hang-up between the shell's opens of the slave; when
//! the broker goes, so does the master, and the shell's `read` ends.
//!
//! Architecture invariant: nothing here types into a pane or talks to tmux;
//! it writes to the pane's terminal only what the command wrote to its own.

use rustix::fs::{Mode, OFlags};
use std::io;
use std::os::fd::OwnedFd;
use tmux_mcp_core::sys::async_fd;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// The longest marker body accepted after the prefix (`;` and `$?`'s digits).
const MAX_STATUS_DIGITS: usize = 11;

/// The pty, and the pane terminal its output is copied to.
pub struct Mirror {
    master: AsyncFd<OwnedFd>,
    /// Kept open so the master never reads a hang-up while the shell
    /// reopens the slave; dropped with the mirror.
    slave: OwnedFd,
    /// The pane's terminal; `None` once it failed (the pane went), after
    /// which output is still kept.
    pane: Option<AsyncFd<OwnedFd>>,
    path: String,
    /// This job's end-marker nonce.
    nonce: String,
}

impl Mirror {
    /// Opens a pty sized `cols`×`rows` whose output goes to the terminal at
    /// `pane_tty`. Fails (with nothing written anywhere) when either cannot
    /// be opened.
    pub fn open(pane_tty: &str, cols: u16, rows: u16) -> io::Result<Mirror> {
        let tmux_mcp_core::platform::Pty {
            master,
            slave,
            path,
        } = tmux_mcp_core::platform::open_pty()?;
        // Exact bytes: no `\n` -> `\r\n` (the pane's terminal does that);
        // the release line (see `run`) is not echoed back as output.
        let mut t = rustix::termios::tcgetattr(&slave)?;
        t.output_modes.remove(rustix::termios::OutputModes::OPOST);
        t.local_modes.remove(rustix::termios::LocalModes::ECHO);
        rustix::termios::tcsetattr(&slave, rustix::termios::OptionalActions::Now, &t)?;
        rustix::termios::tcsetwinsize(
            &master,
            rustix::termios::Winsize {
                ws_row: rows,
                ws_col: cols,
                ws_xpixel: 0,
                ws_ypixel: 0,
            },
        )?;
        rustix::io::ioctl_fionbio(&master, true)?;
        let pane = rustix::fs::open(
            pane_tty,
            OFlags::WRONLY | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Mirror {
            master: async_fd(master, Interest::READABLE)?,
            slave,
            pane: Some(async_fd(pane, Interest::WRITABLE)?),
            path,
            nonce: tmux_mcp_core::sys::random_hex(4),
        })
    }

    /// The slave's path, for the shell's redirections.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The `printf` format that prints this job's end marker with the
    /// status, for the script.
    pub fn marker_format(&self) -> String {
        marker_format(&self.nonce)
    }

    /// Queues `script` (one line) and an end of file in the pty's input, for
    /// the shell to read with `. PTY` once the command is done: so the end
    /// marker, the release `read` and anything else the line needs stay off
    /// the pane. Shells that read a sourced file whole before running it
    /// (bash) stop at this end of file; shells that run it line by line
    /// (dash, zsh) leave it for the script's first `read`, which is why the
    /// script reads twice at most (see [`release_read`]).
    pub fn preload(&self, script: &str) -> io::Result<()> {
        if script.contains('\n') || script.len() > 1024 {
            return Err(io::Error::other("the script must be one short line"));
        }
        let mut line = script.as_bytes().to_vec();
        line.extend_from_slice(b"\n\x04");
        // The input queue is empty and far larger than one short line.
        match rustix::io::write(self.master.get_ref(), &line) {
            Ok(n) if n == line.len() => Ok(()),
            Ok(_) => Err(io::Error::other("the pty took part of the script")),
            Err(e) => Err(e.into()),
        }
    }

    /// Copies output to the pane and hands it to `keep` until the end marker
    /// comes; returns the status it carries. Then it releases the
    /// shell, which waits (`read` from the slave) until everything before the
    /// marker is on the pane's terminal, so its next prompt comes after the
    /// output and never amid it.
    pub async fn run(&mut self, mut keep: impl FnMut(&[u8])) -> io::Result<i32> {
        let mut scan = Scan::new(&self.nonce);
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = self.read(&mut buf).await?;
            let step = scan.feed(&buf[..n]);
            if !step.pass.is_empty() {
                keep(&step.pass);
                self.show(&step.pass).await;
            }
            if let Some(status) = step.status {
                // The line the shell's `read` waits for, and the end of file
                // a line-by-line shell's `.` then reads. Two bytes in a queue
                // nothing else writes to never block.
                let _ = rustix::io::write(self.master.get_ref(), b"\n\x04");
                return Ok(status);
            }
        }
    }

    /// Closes the pty once the shell has read its release (closing it while
    /// the shell still reads fails that read with an I/O error the shell
    /// prints in the pane). The release reaches the terminal's input queue a
    /// moment after it is written, so first wait for it to be there (or
    /// already taken), then for the line to be read, then a short grace for
    /// the end of file after it, which the queue does not count; at most two
    /// seconds in all. Looks only at the pty's own input queue.
    pub async fn close(self) {
        use std::time::Duration;
        let queued = || rustix::io::ioctl_fionread(&self.slave).unwrap_or(0);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        let arrived = tokio::time::Instant::now() + Duration::from_millis(20);
        while queued() == 0 && tokio::time::Instant::now() < arrived {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        while queued() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep_until(
            deadline.min(tokio::time::Instant::now() + Duration::from_millis(250)),
        )
        .await;
    }

    async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut guard = self.master.readable().await?;
            match guard
                .try_io(|fd| rustix::io::read(fd.get_ref(), &mut *buf).map_err(io::Error::from))
            {
                Ok(r) => return r,
                Err(_would_block) => continue,
            }
        }
    }

    /// Writes to the pane's terminal, waiting while it is full (as the
    /// command would on the pane's own terminal). A pane whose terminal
    /// fails (it closed) is shown nothing more.
    async fn show(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let Some(pane) = &self.pane else { return };
            let r = match pane.writable().await {
                Ok(mut guard) => match guard
                    .try_io(|fd| rustix::io::write(fd.get_ref(), bytes).map_err(io::Error::from))
                {
                    Ok(r) => r,
                    Err(_would_block) => continue,
                },
                Err(e) => Err(e),
            };
            match r {
                Ok(n) if n > 0 => bytes = &bytes[n..],
                Ok(_) => self.pane = None,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => self.pane = None,
            }
        }
    }
}

/// What one chunk of output yields: the bytes that are output, and the
/// status once the marker has come.
#[derive(Debug, Default, PartialEq)]
pub struct Step {
    pub pass: Vec<u8>,
    pub status: Option<i32>,
}

/// Finds the end marker in a byte stream split anywhere (sans-IO), holding
/// back only what may be the start of it.
pub struct Scan {
    prefix: Vec<u8>,
    held: Vec<u8>,
}

impl Scan {
    pub fn new(nonce: &str) -> Scan {
        Scan {
            prefix: marker_prefix(nonce),
            held: Vec::new(),
        }
    }

    pub fn feed(&mut self, input: &[u8]) -> Step {
        let mut data = std::mem::take(&mut self.held);
        data.extend_from_slice(input);
        let mut pass = Vec::with_capacity(data.len());
        let mut at = 0;
        while at < data.len() {
            let rest = &data[at..];
            match find(rest, &self.prefix) {
                Some(i) => {
                    pass.extend_from_slice(&rest[..i]);
                    let body = &rest[i + self.prefix.len()..];
                    match status_of(body) {
                        Body::Status(status) => {
                            return Step {
                                pass,
                                status: Some(status),
                            }
                        }
                        Body::Incomplete => {
                            self.held = rest[i..].to_vec();
                            return Step { pass, status: None };
                        }
                        // Not our marker after all: it is output.
                        Body::NotAMarker => {
                            pass.extend_from_slice(&self.prefix);
                            at += i + self.prefix.len();
                        }
                    }
                }
                None => {
                    let keep = partial_prefix(rest, &self.prefix);
                    pass.extend_from_slice(&rest[..rest.len() - keep]);
                    self.held = rest[rest.len() - keep..].to_vec();
                    return Step { pass, status: None };
                }
            }
        }
        Step { pass, status: None }
    }
}

/// `ESC _ <nonce> ;`: what the shell prints before `$?`.
fn marker_prefix(nonce: &str) -> Vec<u8> {
    let mut p = b"\x1b_".to_vec();
    p.extend_from_slice(nonce.as_bytes());
    p.push(b';');
    p
}

/// The `printf` format that prints the marker of `nonce` with `$?`.
fn marker_format(nonce: &str) -> String {
    format!("\\33_{nonce};%d\\33\\\\")
}

/// Whether the terminal at `tty` is in canonical (cooked) mode: the kernel,
/// not a line editor, holds what is typed until Enter. A line editor (bash's
/// readline, zsh's ZLE, fish) turns canonical mode off while it reads a
/// line, so a shell of theirs in cooked mode is not at its prompt (it runs a
/// builtin such as `read`), and a shell without an editor (dash) always is.
pub fn canonical(tty: &str) -> io::Result<bool> {
    let fd = rustix::fs::open(
        tty,
        OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let t = rustix::termios::tcgetattr(&fd)?;
    Ok(t.local_modes.contains(rustix::termios::LocalModes::ICANON))
}

/// The script's wait for the release line on `tty`: a shell that runs a
/// sourced file line by line reads the preloaded end of file first, so it
/// reads once more; never more than twice, so a lost broker (whose pty then
/// reads end of file at once) cannot make it loop.
pub fn release_read(tty: &str) -> String {
    format!("read -r _ <{tty} || read -r _ <{tty}")
}

enum Body {
    Status(i32),
    Incomplete,
    NotAMarker,
}

/// Reads `<digits> ESC \` from the start of `body`.
fn status_of(body: &[u8]) -> Body {
    let digits = body
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'-')
        .count();
    if digits > MAX_STATUS_DIGITS {
        return Body::NotAMarker;
    }
    let tail = &body[digits..];
    if tail.len() < 2 {
        return if tail.is_empty() || tail[0] == 0x1b {
            Body::Incomplete
        } else {
            Body::NotAMarker
        };
    }
    if &tail[..2] != b"\x1b\\" {
        return Body::NotAMarker;
    }
    std::str::from_utf8(&body[..digits])
        .ok()
        .and_then(|d| d.parse().ok())
        .map_or(Body::NotAMarker, Body::Status)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The length of the longest end of `data` that begins `prefix`.
fn partial_prefix(data: &[u8], prefix: &[u8]) -> usize {
    (1..prefix.len().min(data.len() + 1))
        .rev()
        .find(|&k| data[data.len() - k..] == prefix[..k])
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(nonce: &str, status: &str) -> Vec<u8> {
        let mut m = marker_prefix(nonce);
        m.extend_from_slice(status.as_bytes());
        m.extend_from_slice(b"\x1b\\");
        m
    }

    #[test]
    fn the_marker_ends_the_output_and_carries_the_status() {
        let mut s = Scan::new("ab12");
        let mut input = b"hello\nworld\n".to_vec();
        input.extend(marker("ab12", "3"));
        assert_eq!(
            s.feed(&input),
            Step {
                pass: b"hello\nworld\n".to_vec(),
                status: Some(3)
            }
        );
    }

    #[test]
    fn a_marker_split_at_every_byte_is_found_and_never_shown() {
        let mut input = b"out\x1b[1mbold\x1b_notours;1\x1b\\".to_vec();
        input.extend(marker("n0nce", "127"));
        for cut in 0..input.len() {
            let mut s = Scan::new("n0nce");
            let a = s.feed(&input[..cut]);
            assert_eq!(a.status, None, "cut {cut}");
            let b = s.feed(&input[cut..]);
            let mut pass = a.pass;
            pass.extend(b.pass);
            assert_eq!(pass, b"out\x1b[1mbold\x1b_notours;1\x1b\\", "cut {cut}");
            assert_eq!(b.status, Some(127), "cut {cut}");
        }
    }

    #[test]
    fn the_typed_line_echo_and_lookalikes_are_output() {
        // What the shell's echo of the typed line shows is the printf
        // format, not the marker; a wrong nonce or body is output too.
        let mut s = Scan::new("abc");
        let echo = format!("printf '{}' $?\n", marker_format("abc"));
        let mut input = echo.clone().into_bytes();
        input.extend_from_slice(b"\x1b_abc;x\x1b\\\x1b_abd;0\x1b\\");
        let step = s.feed(&input);
        assert_eq!(step.status, None);
        let mut want = echo.into_bytes();
        want.extend_from_slice(b"\x1b_abc;x\x1b\\\x1b_abd;0\x1b\\");
        assert_eq!(step.pass, want);
    }

    #[test]
    fn printf_of_the_format_prints_the_marker() {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("false; printf '{}' $?", marker_format("f00d")))
            .output()
            .unwrap();
        assert_eq!(out.stdout, marker("f00d", "1"));
    }

    /// `sh -c LINE` with the mirror's path for `{p}` and the marker's
    /// format for `{f}`; returns the status the mirror read, what it kept,
    /// what reached the pane, and what the shell wrote after the release.
    async fn through_a_mirror(shell: &str, line: &str) -> (i32, Vec<u8>, Vec<u8>, Vec<u8>) {
        // A pty of our own stands in for the pane's terminal.
        let pane = tmux_mcp_core::platform::open_pty().unwrap();
        let mut m = Mirror::open(&pane.path, 80, 24).unwrap();
        let p = m.path().to_string();
        m.preload(&format!(
            "printf '{}' $? >{p}; {}",
            m.marker_format(),
            release_read(&p)
        ))
        .unwrap();
        let mut child = std::process::Command::new(shell)
            .arg("-c")
            .arg(line.replace("{p}", &p))
            .spawn()
            .unwrap();
        let mut kept = Vec::new();
        let status = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            m.run(|b| kept.extend_from_slice(b)),
        )
        .await
        .unwrap_or_else(|_| panic!("{shell}: the marker never came"))
        .unwrap();
        // One read of the pane's master may return part of what is there
        // (under load the terminal layer hands it over in pieces): read until
        // every kept byte has come, each `\n` as the `\r\n` the terminal makes.
        let want = kept.len() + kept.iter().filter(|&&b| b == b'\n').count();
        let master = pane.master.try_clone().unwrap();
        let reading = tokio::task::spawn_blocking(move || {
            let mut seen = Vec::new();
            while seen.len() < want {
                let mut buf = [0u8; 256];
                match rustix::io::read(&master, &mut buf) {
                    Ok(n) if n > 0 => seen.extend_from_slice(&buf[..n]),
                    _ => break,
                }
            }
            seen
        });
        let seen = tokio::time::timeout(std::time::Duration::from_secs(10), reading)
            .await
            .unwrap_or_else(|_| panic!("{shell}: the pane's terminal never showed it all"))
            .unwrap();
        // The shell was released: what it prints next comes through.
        let mut after = Scan::new("other");
        let mut got = Vec::new();
        while !got.ends_with(b"released\n") {
            let mut buf = [0u8; 64];
            let n = tokio::time::timeout(std::time::Duration::from_secs(10), m.read(&mut buf))
                .await
                .unwrap_or_else(|_| panic!("{shell} was never released"))
                .unwrap();
            got.extend(after.feed(&buf[..n]).pass);
        }
        assert!(child.wait().unwrap().success(), "{shell} failed");
        (status, kept, seen, got)
    }

    #[tokio::test]
    async fn output_is_copied_to_the_pane_terminal_and_kept_exactly_and_the_sourced_script_ends_it()
    {
        // bash reads a sourced file whole first, dash line by line: both
        // must see the status, be released, and go on.
        for shell in ["bash", "dash"] {
            let (status, kept, seen, after) = through_a_mirror(
                shell,
                "{ test -t 1 && echo tty; printf 'a\\nb'; (exit 7); } >{p} 2>&1; . {p}; echo released >{p}",
            )
            .await;
            assert_eq!(status, 7, "{shell}");
            assert_eq!(kept, b"tty\na\nb", "{shell}");
            // The pane's terminal turned `\n` into `\r\n` as it does for anything.
            assert_eq!(seen, b"tty\r\na\r\nb", "{shell}");
            assert_eq!(after, b"released\n", "{shell}");
        }
    }
}
