//! A tmux client that speaks tmux's own client protocol over the server socket,
//! so a command costs one connect and a few messages instead of a fork+exec of
//! the `tmux` binary (about 2–7 ms on small machines).
//!
//! The server cannot tell this client from `tmux -S SOCKET COMMAND`: it sends the
//! same identify messages, in the same order and sizes, as tmux's own client
//! (protocol version 8: tmux 3.2 to at least 3.7c), passes /dev/null as stdin
//! and stdout, and collects what the server writes to streams 1 and 2 until
//! `MSG_EXIT`. The exact sizes matter: tmux ≤ 3.5 aborts the whole server on a
//! malformed identify message, so nothing here is sent that tmux's own client
//! would not send.
//!
//! The message header is imsg's, and tmux 3.6 updated its bundled imsg without
//! bumping the protocol version: see [`Framing`]. The caller (`Tmux`) finds the
//! server's framing at start-up by trying each against the exec client's answer.
//!
//! A server that speaks another protocol answers `MSG_VERSION`; the caller then
//! falls back to the exec client.

use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

const PROTOCOL_VERSION: u32 = 8;
const HEADER: usize = 16;
/// imsg's limit on one message (header included).
const MAX_IMSG: usize = 16384;
/// `IMSGF_HASFD` in the `flags` field of the 16-bit-length header.
const FLAG_HAS_FD: u16 = 1;
/// `IMSG_FD_MARK` in the length field of the 32-bit-length header.
const LEN_FD_MARK: u32 = 0x8000_0000;

/// How an imsg header says "length" and "a descriptor rides with this message".
///
/// Both headers are 16 bytes: `type u32`, then 4 bytes, then `peerid u32`
/// (the protocol version) and `pid u32`. tmux ≤ 3.5 bundles an imsg whose
/// middle 4 bytes are `len u16, flags u16` (flag 1 = fd attached); tmux ≥ 3.6
/// bundles OpenBSD's newer imsg, where they are one `len u32` whose top bit
/// marks the fd. Messages without a descriptor are byte-identical, so only
/// `MSG_IDENTIFY_STDIN`/`STDOUT` differ. A ≥ 3.6 server reads the old header as
/// an oversized length and drops the client; a ≤ 3.5 server reads the new one
/// as "no descriptor" and runs the command without the client's stdin/stdout
/// (the descriptors stay queued until the connection closes). The framing is
/// probed against the exec client, never guessed from a version string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// tmux 3.2–3.5: `len u16, flags u16`.
    Imsg16,
    /// tmux ≥ 3.6: `len u32`, fd mark in the top bit.
    Imsg32,
}

impl Framing {
    /// In the order the start-up probe tries them: the older framing first,
    /// because a ≥ 3.6 server rejects it outright, while a ≤ 3.5 server would
    /// half-accept the newer one; so the first framing that answers is the
    /// server's own.
    pub const PROBE_ORDER: [Framing; 2] = [Framing::Imsg16, Framing::Imsg32];
}

const MSG_VERSION: u32 = 12;
const MSG_IDENTIFY_FLAGS: u32 = 100;
const MSG_IDENTIFY_TERM: u32 = 101;
const MSG_IDENTIFY_TTYNAME: u32 = 102;
const MSG_IDENTIFY_STDIN: u32 = 104;
const MSG_IDENTIFY_ENVIRON: u32 = 105;
const MSG_IDENTIFY_DONE: u32 = 106;
const MSG_IDENTIFY_CLIENTPID: u32 = 107;
const MSG_IDENTIFY_CWD: u32 = 108;
const MSG_IDENTIFY_FEATURES: u32 = 109;
const MSG_IDENTIFY_STDOUT: u32 = 110;
const MSG_IDENTIFY_LONGFLAGS: u32 = 111;
const MSG_COMMAND: u32 = 200;
const MSG_EXIT: u32 = 203;
const MSG_EXITED: u32 = 204;
const MSG_SHUTDOWN: u32 = 210;
const MSG_READ_OPEN: u32 = 300;
const MSG_READ_DONE: u32 = 302;
const MSG_WRITE_OPEN: u32 = 303;
const MSG_WRITE: u32 = 304;
const MSG_WRITE_READY: u32 = 305;

/// `CLIENT_UTF8`, as `tmux -u` sets it.
const CLIENT_UTF8: u64 = 0x10000;

#[derive(Debug, thiserror::Error)]
pub enum DirectError {
    #[error("connect to {path}: {source}")]
    Connect { path: String, source: io::Error },
    #[error("i/o with the tmux server: {0}")]
    Io(#[from] io::Error),
    #[error("the tmux server speaks another client protocol")]
    Version,
    #[error("the command does not fit in one tmux message ({0} bytes)")]
    TooLarge(usize),
    #[error("the tmux server closed the connection before the command finished")]
    Closed,
    #[error("the command did not finish within {0:?}")]
    Timeout(Duration),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

fn message(buf: &mut Vec<u8>, framing: Framing, kind: u32, has_fd: bool, data: &[u8]) {
    let len = HEADER + data.len();
    buf.extend_from_slice(&kind.to_le_bytes());
    match framing {
        Framing::Imsg16 => {
            buf.extend_from_slice(&(len as u16).to_le_bytes());
            buf.extend_from_slice(&(if has_fd { FLAG_HAS_FD } else { 0 }).to_le_bytes());
        }
        Framing::Imsg32 => buf.extend_from_slice(&(len as u32 | if has_fd { LEN_FD_MARK } else { 0 }).to_le_bytes()),
    }
    buf.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    buf.extend_from_slice(&u32::MAX.to_le_bytes());
    buf.extend_from_slice(data);
}

fn cstr(s: &[u8]) -> Vec<u8> {
    let mut v = s.to_vec();
    v.push(0);
    v
}

/// Sends `buf` with `fd` attached (SCM_RIGHTS), like imsg does for a message
/// marked as carrying one.
fn send_with_fd(sock: &UnixStream, buf: &[u8], fd: &impl AsRawFd) -> io::Result<()> {
    let mut iov = libc::iovec { iov_base: buf.as_ptr() as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: msg points at a control buffer large enough for one int-sized cmsg.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg) as *mut libc::c_int, fd.as_raw_fd());
    }
    // SAFETY: all pointers in msg are valid for the duration of the call.
    let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != buf.len() {
        return Err(io::Error::new(io::ErrorKind::WriteZero, "short sendmsg"));
    }
    Ok(())
}

/// /dev/null for the client's stdin and stdout, opened once (SCM_RIGHTS hands
/// the server its own duplicate each time).
fn devnull() -> io::Result<&'static (std::fs::File, std::fs::File)> {
    static FDS: std::sync::OnceLock<(std::fs::File, std::fs::File)> = std::sync::OnceLock::new();
    if let Some(f) = FDS.get() {
        return Ok(f);
    }
    let pair = (std::fs::File::open("/dev/null")?, std::fs::OpenOptions::new().write(true).open("/dev/null")?);
    Ok(FDS.get_or_init(|| pair))
}

/// Only `new-session` uses the client's environment (`update-environment`); for
/// every other command it is dead weight the server parses, so it is not sent.
fn needs_environment(args: &[&str]) -> bool {
    args.iter().any(|a| *a == "new-session" || *a == "new")
}

/// The identify sequence and the command, in tmux's own order.
fn handshake(sock: &mut UnixStream, args: &[&str], framing: Framing) -> Result<(), DirectError> {
    let mut packed = Vec::new();
    packed.extend_from_slice(&(args.len() as i32).to_le_bytes());
    for a in args {
        packed.extend_from_slice(a.as_bytes());
        packed.push(0);
    }
    if HEADER + packed.len() > MAX_IMSG {
        return Err(DirectError::TooLarge(HEADER + packed.len()));
    }
    let (devnull_in, devnull_out) = devnull()?;
    let cwd = std::env::current_dir().map(|p| p.into_os_string().into_encoded_bytes()).unwrap_or_else(|_| b"/".to_vec());

    let msg = |buf: &mut Vec<u8>, kind: u32, has_fd: bool, data: &[u8]| message(buf, framing, kind, has_fd, data);
    // MSG_IDENTIFY_FLAGS is what tmux 3.2–3.4's client sends first (3.5 sends
    // LONGFLAGS twice instead); every server up to 3.7c accepts both.
    let mut first = Vec::new();
    msg(&mut first, MSG_IDENTIFY_FLAGS, false, &(CLIENT_UTF8 as i32).to_le_bytes());
    msg(&mut first, MSG_IDENTIFY_LONGFLAGS, false, &CLIENT_UTF8.to_le_bytes());
    msg(&mut first, MSG_IDENTIFY_TERM, false, &cstr(b"xterm"));
    msg(&mut first, MSG_IDENTIFY_FEATURES, false, &0i32.to_le_bytes());
    msg(&mut first, MSG_IDENTIFY_TTYNAME, false, &cstr(b""));
    msg(&mut first, MSG_IDENTIFY_CWD, false, &cstr(&cwd));
    msg(&mut first, MSG_IDENTIFY_STDIN, true, &[]);
    send_with_fd(sock, &first, devnull_in)?;

    let mut second = Vec::new();
    msg(&mut second, MSG_IDENTIFY_STDOUT, true, &[]);
    send_with_fd(sock, &second, devnull_out)?;

    let mut rest = Vec::new();
    msg(&mut rest, MSG_IDENTIFY_CLIENTPID, false, &(std::process::id() as i32).to_le_bytes());
    for (k, v) in std::env::vars_os().filter(|_| needs_environment(args)) {
        if k == "TMUX" || k == "TMUX_PANE" {
            continue;
        }
        let mut entry = k.into_encoded_bytes();
        entry.push(b'=');
        entry.extend_from_slice(v.as_encoded_bytes());
        let entry = cstr(&entry);
        if HEADER + entry.len() <= MAX_IMSG {
            msg(&mut rest, MSG_IDENTIFY_ENVIRON, false, &entry);
        }
    }
    msg(&mut rest, MSG_IDENTIFY_DONE, false, &[]);
    msg(&mut rest, MSG_COMMAND, false, &packed);
    sock.write_all(&rest)?;
    Ok(())
}

/// Replies to a server message, or the final outcome.
enum Step {
    Reply(Vec<u8>),
    Done(Result<Output, DirectError>),
    Continue,
}

/// Bytes to send back, and the outcome once the command finished.
type Progressed = (Vec<u8>, Option<Result<Output, DirectError>>);

/// Handles every complete message at the front of `buf`; returns what to send
/// and whether the command finished.
fn process(buf: &mut Vec<u8>, out: &mut Output, framing: Framing) -> Result<Progressed, DirectError> {
    let mut replies = Vec::new();
    let mut off = 0;
    let mut done = None;
    while done.is_none() && buf.len() - off >= HEADER {
        // The server sends the client no descriptors in command mode, so no
        // fd mark needs handling here beyond masking it out of the length.
        let kind = u32::from_le_bytes(buf[off..off + 4].try_into().unwrap());
        let len = match framing {
            Framing::Imsg16 => u16::from_le_bytes(buf[off + 4..off + 6].try_into().unwrap()) as usize,
            Framing::Imsg32 => (u32::from_le_bytes(buf[off + 4..off + 8].try_into().unwrap()) & !LEN_FD_MARK) as usize,
        };
        if !(HEADER..=MAX_IMSG).contains(&len) {
            return Err(DirectError::Io(io::Error::new(io::ErrorKind::InvalidData, "malformed tmux message")));
        }
        if buf.len() - off < len {
            break;
        }
        let data = &buf[off + HEADER..off + len];
        match handle(kind, data, out, framing) {
            Step::Reply(r) => replies.extend_from_slice(&r),
            Step::Done(r) => done = Some(r),
            Step::Continue => {}
        }
        off += len;
    }
    buf.drain(..off);
    Ok((replies, done))
}

fn handle(kind: u32, data: &[u8], out: &mut Output, framing: Framing) -> Step {
    let int_at = |i: usize| data.get(i..i + 4).map(|b| i32::from_le_bytes(b.try_into().unwrap()));
    match kind {
        MSG_WRITE_OPEN => {
            let mut reply = Vec::new();
            let mut body = int_at(0).unwrap_or(1).to_le_bytes().to_vec();
            body.extend_from_slice(&0i32.to_le_bytes());
            message(&mut reply, framing, MSG_WRITE_READY, false, &body);
            Step::Reply(reply)
        }
        MSG_WRITE => {
            let payload = data.get(4..).unwrap_or(&[]);
            match int_at(0) {
                Some(2) => out.stderr.extend_from_slice(payload),
                _ => out.stdout.extend_from_slice(payload),
            }
            Step::Continue
        }
        MSG_READ_OPEN => {
            // Nothing to read: answer "done, with an error" so the command fails cleanly.
            let mut reply = Vec::new();
            let mut body = int_at(0).unwrap_or(0).to_le_bytes().to_vec();
            body.extend_from_slice(&libc::EBADF.to_le_bytes());
            message(&mut reply, framing, MSG_READ_DONE, false, &body);
            Step::Reply(reply)
        }
        MSG_EXIT => {
            out.status = int_at(0).unwrap_or(0);
            Step::Done(Ok(std::mem::replace(out, Output { status: 0, stdout: Vec::new(), stderr: Vec::new() })))
        }
        MSG_EXITED | MSG_SHUTDOWN => Step::Done(Err(DirectError::Closed)),
        MSG_VERSION => Step::Done(Err(DirectError::Version)),
        _ => Step::Continue,
    }
}

/// Runs one tmux command on the server at `socket`, without blocking a thread:
/// the identify messages (a few hundred bytes, they fit the socket buffer) are
/// sent before the socket is handed to tokio. `framing` must be the server's
/// (see [`Framing`]); with the other one the server drops the connection.
pub async fn run_async(socket: &Path, args: &[&str], timeout: Duration, framing: Framing) -> Result<Output, DirectError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut std_sock = UnixStream::connect(socket).map_err(|source| DirectError::Connect { path: socket.display().to_string(), source })?;
    std_sock.set_write_timeout(Some(timeout))?;
    handshake(&mut std_sock, args, framing)?;
    std_sock.set_nonblocking(true)?;
    let mut sock = tokio::net::UnixStream::from_std(std_sock)?;
    let work = async {
        let mut out = Output { status: -1, stdout: Vec::new(), stderr: Vec::new() };
        let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let n = sock.read(&mut chunk).await?;
            if n == 0 {
                return Err(DirectError::Closed);
            }
            buf.extend_from_slice(&chunk[..n]);
            let (replies, done) = process(&mut buf, &mut out, framing)?;
            if !replies.is_empty() {
                sock.write_all(&replies).await?;
            }
            if let Some(r) = done {
                return r;
            }
        }
    };
    tokio::time::timeout(timeout, work).await.map_err(|_| DirectError::Timeout(timeout))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_header_layout_matches_imsg() {
        // tmux ≤ 3.5: len u16 = 16, flags u16 = IMSGF_HASFD.
        let mut b = Vec::new();
        message(&mut b, Framing::Imsg16, MSG_IDENTIFY_STDIN, true, &[]);
        assert_eq!(b, [0x68, 0, 0, 0, 0x10, 0, 1, 0, 8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        // tmux ≥ 3.6: len u32 = 16 | IMSG_FD_MARK.
        let mut b = Vec::new();
        message(&mut b, Framing::Imsg32, MSG_IDENTIFY_STDIN, true, &[]);
        assert_eq!(b, [0x68, 0, 0, 0, 0x10, 0, 0, 0x80, 8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        // Without a descriptor both framings write the same bytes.
        for framing in Framing::PROBE_ORDER {
            let mut b = Vec::new();
            message(&mut b, framing, MSG_IDENTIFY_TERM, false, &cstr(b"xterm"));
            assert_eq!(&b[..8], &[0x65, 0, 0, 0, 22, 0, 0, 0], "{framing:?}");
            assert_eq!(&b[16..], b"xterm\0");
        }
    }

    #[test]
    fn incoming_length_ignores_the_fd_mark_and_rejects_nonsense() {
        let mut out = Output { status: -1, stdout: Vec::new(), stderr: Vec::new() };
        let mut exit = Vec::new();
        message(&mut exit, Framing::Imsg32, MSG_EXIT, true, &3i32.to_le_bytes());
        let (_, done) = process(&mut exit.clone(), &mut out, Framing::Imsg32).unwrap();
        assert_eq!(done.unwrap().unwrap().status, 3);
        let mut short = exit.clone();
        short[4] = 4;
        assert!(process(&mut short, &mut out, Framing::Imsg32).is_err());
    }
}

/// These run against the `tmux` on PATH (the system's, or a version built by
/// `scripts/tmux-build` put first on PATH), through [`run_async`], the
/// function the broker uses, with the framing [`crate::tmux::Tmux`]'s start-up
/// probe picks.
#[cfg(test)]
mod real_tmux {
    use super::*;
    use crate::tmux::Tmux;
    use std::process::Command;
    use std::time::Instant;

    const T: Duration = Duration::from_secs(5);

    /// A private tmux server, killed by its socket on drop.
    struct Server {
        dir: std::path::PathBuf,
        sock: std::path::PathBuf,
    }

    impl Server {
        fn start() -> Server {
            let dir = std::env::temp_dir().join(format!("tmux-mcp-direct-{}-{}", std::process::id(), crate::sys::random_hex(4)));
            std::fs::create_dir_all(&dir).unwrap();
            let sock = dir.join("sock");
            let st = Command::new("tmux").arg("-S").arg(&sock).args(["-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "10"]).status().unwrap();
            assert!(st.success());
            Server { dir, sock }
        }
        fn exec(&self, args: &[&str]) -> Output {
            let o = Command::new("tmux").arg("-S").arg(&self.sock).args(args).env_remove("TMUX").output().unwrap();
            Output { status: o.status.code().unwrap(), stdout: o.stdout, stderr: o.stderr }
        }
        fn version(&self) -> String {
            String::from_utf8(self.exec(&["list-commands", "-F", "#{version}", "list-commands"]).stdout).unwrap().trim().to_string()
        }
        /// The framing the broker's probe settles on for this server.
        async fn probed_framing(&self) -> Framing {
            let tmux = Tmux::new(&self.sock);
            assert!(tmux.try_enable_direct().await, "the protocol client was refused by tmux {}", self.version());
            tmux.framing().expect("a framing after a successful probe")
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = Command::new("tmux").arg("-S").arg(&self.sock).arg("kill-server").status();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    #[tokio::test]
    async fn probe_picks_the_framing_of_the_servers_imsg() {
        let s = Server::start();
        let version = s.version();
        // 3.6 is the first release with OpenBSD's 32-bit-length imsg header.
        let expected = if crate::tmux::version_at_least(&version, 3, 6) { Framing::Imsg32 } else { Framing::Imsg16 };
        assert_eq!(s.probed_framing().await, expected, "tmux {version}");
        if expected == Framing::Imsg32 {
            // Why the probe may try Imsg16 first: a ≥ 3.6 server refuses it...
            let wrong = run_async(&s.sock, &["list-commands", "-F", "#{pid}", "list-commands"], T, Framing::Imsg16).await;
            assert!(wrong.is_err(), "tmux {version} accepted the Imsg16 framing: {wrong:?}");
            // ...and that refusal costs the server nothing: it still answers.
            assert_eq!(s.exec(&["has-session"]).status, 0);
        }
    }

    #[tokio::test]
    async fn same_answers_as_the_tmux_binary() {
        let s = Server::start();
        let framing = s.probed_framing().await;
        for args in [
            vec!["list-commands", "-F", "#{pid} #{version} #{S:#{session_id} }", "list-commands"],
            vec!["show-hooks", "-g", "after-capture-pane"],
            vec!["show-hooks", "-t", "nosuch", "after-capture-pane"],
        ] {
            assert_eq!(run_async(&s.sock, &args, T, framing).await.unwrap(), s.exec(&args), "{args:?}");
        }
        let err = run_async(&s.sock, &["show-hooks", "-t", "nosuch"], T, framing).await.unwrap();
        assert_eq!(err.status, 1);
        assert!(String::from_utf8_lossy(&err.stderr).contains("nosuch"), "{err:?}");
    }

    #[tokio::test]
    async fn large_output_arrives_whole() {
        let s = Server::start();
        let framing = s.probed_framing().await;
        // 4000 history lines of 60 characters: far more than one 16 KiB message.
        s.exec(&["set-option", "-g", "history-limit", "10000"]);
        let script = "for i in $(seq 1 4000); do printf '%060d\\n' $i; done; sleep 100";
        s.exec(&["new-window", "-d", "-n", "big", "sh", "-c", script]);
        let cap = ["capture-pane", "-p", "-t", ":big", "-S", "-", "-E", "-"];
        let deadline = Instant::now() + Duration::from_secs(10);
        while !String::from_utf8_lossy(&s.exec(&cap).stdout).contains("4000\n") {
            assert!(Instant::now() < deadline, "the pane never printed its lines");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let d = run_async(&s.sock, &cap, T, framing).await.unwrap();
        assert_eq!(d, s.exec(&cap));
        assert!(d.stdout.len() > 64 * 1024, "{}", d.stdout.len());
    }
}
