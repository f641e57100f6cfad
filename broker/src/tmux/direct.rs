//! A tmux client that speaks tmux's own client protocol over the server socket,
//! so a command costs one connect and a few messages instead of a fork+exec of
//! the `tmux` binary (about 2–7 ms on small machines).
//!
//! The server cannot tell this client from `tmux -S SOCKET COMMAND`: it sends the
//! same identify messages, in the same order and sizes, as tmux's own client
//! (protocol version 8: tmux 3.2–3.5), passes /dev/null as stdin and stdout, and
//! collects what the server writes to streams 1 and 2 until `MSG_EXIT`. The exact
//! sizes matter: the server aborts on a malformed identify message, so nothing
//! here is sent that tmux's own client would not send.
//!
//! A server that speaks another protocol answers `MSG_VERSION`; the caller then
//! falls back to the exec client.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

const PROTOCOL_VERSION: u32 = 8;
const HEADER: usize = 16;
/// imsg's limit on one message (header included).
const MAX_IMSG: usize = 16384;
const FLAG_HAS_FD: u16 = 1;

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

fn message(buf: &mut Vec<u8>, kind: u32, flags: u16, data: &[u8]) {
    let len = (HEADER + data.len()) as u16;
    buf.extend_from_slice(&kind.to_le_bytes());
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(&flags.to_le_bytes());
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
/// flagged `HAS_FD`.
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
fn handshake(sock: &mut UnixStream, args: &[&str]) -> Result<(), DirectError> {
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

    let mut first = Vec::new();
    message(&mut first, MSG_IDENTIFY_FLAGS, 0, &(CLIENT_UTF8 as i32).to_le_bytes());
    message(&mut first, MSG_IDENTIFY_LONGFLAGS, 0, &CLIENT_UTF8.to_le_bytes());
    message(&mut first, MSG_IDENTIFY_TERM, 0, &cstr(b"xterm"));
    message(&mut first, MSG_IDENTIFY_FEATURES, 0, &0i32.to_le_bytes());
    message(&mut first, MSG_IDENTIFY_TTYNAME, 0, &cstr(b""));
    message(&mut first, MSG_IDENTIFY_CWD, 0, &cstr(&cwd));
    message(&mut first, MSG_IDENTIFY_STDIN, FLAG_HAS_FD, &[]);
    send_with_fd(sock, &first, devnull_in)?;

    let mut second = Vec::new();
    message(&mut second, MSG_IDENTIFY_STDOUT, FLAG_HAS_FD, &[]);
    send_with_fd(sock, &second, devnull_out)?;

    let mut rest = Vec::new();
    message(&mut rest, MSG_IDENTIFY_CLIENTPID, 0, &(std::process::id() as i32).to_le_bytes());
    for (k, v) in std::env::vars_os().filter(|_| needs_environment(args)) {
        if k == "TMUX" || k == "TMUX_PANE" {
            continue;
        }
        let mut entry = k.into_encoded_bytes();
        entry.push(b'=');
        entry.extend_from_slice(v.as_encoded_bytes());
        let entry = cstr(&entry);
        if HEADER + entry.len() <= MAX_IMSG {
            message(&mut rest, MSG_IDENTIFY_ENVIRON, 0, &entry);
        }
    }
    message(&mut rest, MSG_IDENTIFY_DONE, 0, &[]);
    message(&mut rest, MSG_COMMAND, 0, &packed);
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
fn process(buf: &mut Vec<u8>, out: &mut Output) -> Result<Progressed, DirectError> {
    let mut replies = Vec::new();
    let mut off = 0;
    let mut done = None;
    while done.is_none() && buf.len() - off >= HEADER {
        let kind = u32::from_le_bytes(buf[off..off + 4].try_into().unwrap());
        let len = u16::from_le_bytes(buf[off + 4..off + 6].try_into().unwrap()) as usize;
        if len < HEADER {
            return Err(DirectError::Io(io::Error::new(io::ErrorKind::InvalidData, "malformed tmux message")));
        }
        if buf.len() - off < len {
            break;
        }
        let data = &buf[off + HEADER..off + len];
        match handle(kind, data, out) {
            Step::Reply(r) => replies.extend_from_slice(&r),
            Step::Done(r) => done = Some(r),
            Step::Continue => {}
        }
        off += len;
    }
    buf.drain(..off);
    Ok((replies, done))
}

fn handle(kind: u32, data: &[u8], out: &mut Output) -> Step {
    let int_at = |i: usize| data.get(i..i + 4).map(|b| i32::from_le_bytes(b.try_into().unwrap()));
    match kind {
        MSG_WRITE_OPEN => {
            let mut reply = Vec::new();
            let mut body = int_at(0).unwrap_or(1).to_le_bytes().to_vec();
            body.extend_from_slice(&0i32.to_le_bytes());
            message(&mut reply, MSG_WRITE_READY, 0, &body);
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
            message(&mut reply, MSG_READ_DONE, 0, &body);
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
/// sent before the socket is handed to tokio.
pub async fn run_async(socket: &Path, args: &[&str], timeout: Duration) -> Result<Output, DirectError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut std_sock = UnixStream::connect(socket).map_err(|source| DirectError::Connect { path: socket.display().to_string(), source })?;
    std_sock.set_write_timeout(Some(timeout))?;
    handshake(&mut std_sock, args)?;
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
            let (replies, done) = process(&mut buf, &mut out)?;
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

/// Runs one tmux command on the server at `socket` (blocking).
pub fn run(socket: &Path, args: &[&str], timeout: Duration) -> Result<Output, DirectError> {
    let deadline = Instant::now() + timeout;
    let mut sock = UnixStream::connect(socket).map_err(|source| DirectError::Connect { path: socket.display().to_string(), source })?;
    sock.set_write_timeout(Some(timeout))?;
    handshake(&mut sock, args)?;

    let mut out = Output { status: -1, stdout: Vec::new(), stderr: Vec::new() };
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let (replies, done) = process(&mut buf, &mut out)?;
        if !replies.is_empty() {
            sock.write_all(&replies)?;
        }
        if let Some(r) = done {
            return r;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(DirectError::Timeout(timeout));
        }
        sock.set_read_timeout(Some(left))?;
        match sock.read(&mut chunk) {
            Ok(0) => return Err(DirectError::Closed),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => return Err(DirectError::Timeout(timeout)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_header_layout_matches_imsg() {
        let mut b = Vec::new();
        message(&mut b, MSG_IDENTIFY_STDIN, FLAG_HAS_FD, &[]);
        assert_eq!(b, [0x68, 0, 0, 0, 0x10, 0, 1, 0, 8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        let mut b = Vec::new();
        message(&mut b, MSG_IDENTIFY_TERM, 0, &cstr(b"xterm"));
        assert_eq!(&b[..8], &[0x65, 0, 0, 0, 22, 0, 0, 0]);
        assert_eq!(&b[16..], b"xterm\0");
    }
}

#[cfg(test)]
mod real_tmux {
    use super::*;
    use std::process::Command;

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
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = Command::new("tmux").arg("-S").arg(&self.sock).arg("kill-server").status();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    #[test]
    fn same_answers_as_the_tmux_binary() {
        let s = Server::start();
        let t = Duration::from_secs(5);
        for args in [
            vec!["list-commands", "-F", "#{pid} #{version} #{S:#{session_id} }", "list-commands"],
            vec!["show-hooks", "-g", "after-capture-pane"],
            vec!["show-hooks", "-t", "nosuch", "after-capture-pane"],
        ] {
            assert_eq!(run(&s.sock, &args, t).unwrap(), s.exec(&args), "{args:?}");
        }
        let err = run(&s.sock, &["show-hooks", "-t", "nosuch"], t).unwrap();
        assert_eq!(err.status, 1);
        assert!(String::from_utf8_lossy(&err.stderr).contains("nosuch"), "{err:?}");
    }

    #[test]
    fn large_output_arrives_whole() {
        let s = Server::start();
        // 4000 history lines of 60 characters: far more than one 16 KiB message.
        s.exec(&["set-option", "-g", "history-limit", "10000"]);
        let script = "for i in $(seq 1 4000); do printf '%060d\\n' $i; done; sleep 100";
        s.exec(&["new-window", "-d", "-n", "big", "sh", "-c", script]);
        let cap = ["capture-pane", "-p", "-t", ":big", "-S", "-", "-E", "-"];
        let deadline = Instant::now() + Duration::from_secs(10);
        while !String::from_utf8_lossy(&s.exec(&cap).stdout).contains("4000\n") {
            assert!(Instant::now() < deadline, "the pane never printed its lines");
            std::thread::sleep(Duration::from_millis(50));
        }
        let d = run(&s.sock, &cap, Duration::from_secs(5)).unwrap();
        assert_eq!(d, s.exec(&cap));
        assert!(d.stdout.len() > 64 * 1024, "{}", d.stdout.len());
    }
}
