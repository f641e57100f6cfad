//! A tmux client that speaks tmux's own client protocol over the server socket,
//! so a command costs one connect and a few messages instead of a fork+exec of
//! the `tmux` binary (about 2–7 ms on small machines).
//!
//! It sends tmux's own client's identify messages (protocol version 8: tmux 3.2
//! to at least 3.7c) and the command, and collects what the server writes to
//! streams 1 and 2 until `MSG_EXIT`. The exact sizes matter: tmux ≤ 3.5 aborts
//! the whole server on a malformed identify message, so every message sent is
//! one tmux's own client sends, byte for byte.
//!
//! Two of tmux's messages are left out: `MSG_IDENTIFY_STDIN` and
//! `MSG_IDENTIFY_STDOUT`, which pass the client's terminal descriptors. For a
//! client whose stdin is no terminal the server closes both when identify ends
//! (`tty_init` fails on a non-tty, and the output descriptor is closed with it),
//! so a server that never got them ends identify in the state it reaches for
//! tmux's own client run from a script (a test compares the two). Leaving them
//! out matters twice:
//!
//! - **One read per command.** A descriptor must ride its own `sendmsg`, and the
//!   kernel ends a `recvmsg` at each one, so the server needed three event-loop
//!   iterations to read what tmux's client sends; without them the identify
//!   messages and the command arrive in one write and one read. Each iteration
//!   polls every descriptor of the server (tmux sets `EVENT_NOEPOLL` on Linux),
//!   so on a server with 1,000 panes an iteration is most of a millisecond.
//! - **One framing.** tmux 3.6 updated its bundled imsg without bumping the
//!   protocol version: the header's `len u16, flags u16` became one `len u32`
//!   whose top bit marks a descriptor. Messages without a descriptor are
//!   byte-identical in both, and the server sends a command client none, so
//!   this client needs no per-version framing.
//!
//! A server that speaks another protocol answers `MSG_VERSION`; the caller then
//! falls back to the exec client.

use std::io;
use std::path::Path;
use std::time::Duration;

const PROTOCOL_VERSION: u32 = 8;
const HEADER: usize = 16;
/// imsg's limit on one message (header included).
const MAX_IMSG: usize = 16384;

const MSG_VERSION: u32 = 12;
const MSG_IDENTIFY_FLAGS: u32 = 100;
const MSG_IDENTIFY_TERM: u32 = 101;
const MSG_IDENTIFY_TTYNAME: u32 = 102;
const MSG_IDENTIFY_ENVIRON: u32 = 105;
const MSG_IDENTIFY_DONE: u32 = 106;
const MSG_IDENTIFY_CLIENTPID: u32 = 107;
const MSG_IDENTIFY_CWD: u32 = 108;
const MSG_IDENTIFY_FEATURES: u32 = 109;
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

/// One imsg: `type u32`, `len u16` (≤ 3.5: then `flags u16`, 0 without a
/// descriptor; ≥ 3.6: the high half of `len u32`, 0 for any length imsg
/// allows), `peerid u32` (the protocol version), `pid u32`.
fn message(buf: &mut Vec<u8>, kind: u32, data: &[u8]) {
    let len = HEADER + data.len();
    buf.extend_from_slice(&kind.to_le_bytes());
    buf.extend_from_slice(&(len as u32).to_le_bytes());
    buf.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    buf.extend_from_slice(&u32::MAX.to_le_bytes());
    buf.extend_from_slice(data);
}

fn cstr(s: &[u8]) -> Vec<u8> {
    let mut v = s.to_vec();
    v.push(0);
    v
}

/// Only `new-session` uses the client's environment (`update-environment`); for
/// every other command it is dead weight the server parses, so it is not sent.
fn needs_environment(args: &[&str]) -> bool {
    args.iter().any(|a| *a == "new-session" || *a == "new")
}

/// The identify sequence and the command, in tmux's own order, as one write.
fn handshake(args: &[&str]) -> Result<Vec<u8>, DirectError> {
    let mut packed = Vec::new();
    packed.extend_from_slice(&(args.len() as i32).to_le_bytes());
    for a in args {
        packed.extend_from_slice(a.as_bytes());
        packed.push(0);
    }
    if HEADER + packed.len() > MAX_IMSG {
        return Err(DirectError::TooLarge(HEADER + packed.len()));
    }
    // The process never changes directory, so it is asked once.
    static CWD: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let cwd = CWD.get_or_init(|| {
        std::env::current_dir()
            .map(|p| p.into_os_string().into_encoded_bytes())
            .unwrap_or_else(|_| b"/".to_vec())
    });

    let mut buf = Vec::with_capacity(512 + packed.len());
    // MSG_IDENTIFY_FLAGS is what tmux 3.2–3.4's client sends first (3.5 sends
    // LONGFLAGS twice instead); every server up to 3.7c accepts both.
    message(
        &mut buf,
        MSG_IDENTIFY_FLAGS,
        &(CLIENT_UTF8 as i32).to_le_bytes(),
    );
    message(&mut buf, MSG_IDENTIFY_LONGFLAGS, &CLIENT_UTF8.to_le_bytes());
    message(&mut buf, MSG_IDENTIFY_TERM, &cstr(b"xterm"));
    message(&mut buf, MSG_IDENTIFY_FEATURES, &0i32.to_le_bytes());
    message(&mut buf, MSG_IDENTIFY_TTYNAME, &cstr(b""));
    message(&mut buf, MSG_IDENTIFY_CWD, &cstr(cwd));
    message(
        &mut buf,
        MSG_IDENTIFY_CLIENTPID,
        &(std::process::id() as i32).to_le_bytes(),
    );
    if needs_environment(args) {
        for (k, v) in std::env::vars_os() {
            if k == "TMUX" || k == "TMUX_PANE" {
                continue;
            }
            let mut entry = k.into_encoded_bytes();
            entry.push(b'=');
            entry.extend_from_slice(v.as_encoded_bytes());
            let entry = cstr(&entry);
            if HEADER + entry.len() <= MAX_IMSG {
                message(&mut buf, MSG_IDENTIFY_ENVIRON, &entry);
            }
        }
    }
    message(&mut buf, MSG_IDENTIFY_DONE, &[]);
    message(&mut buf, MSG_COMMAND, &packed);
    Ok(buf)
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
        // The low 16 bits of the length are the length in both imsg headers
        // (see `message`); the server sends a command client no descriptor.
        let kind = u32::from_le_bytes(buf[off..off + 4].try_into().unwrap());
        let len = u16::from_le_bytes(buf[off + 4..off + 6].try_into().unwrap()) as usize;
        if !(HEADER..=MAX_IMSG).contains(&len) {
            return Err(DirectError::Io(io::Error::new(
                io::ErrorKind::InvalidData,
                "malformed tmux message",
            )));
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
    let int_at = |i: usize| {
        data.get(i..i + 4)
            .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
    };
    match kind {
        MSG_WRITE_OPEN => {
            let mut reply = Vec::new();
            let mut body = int_at(0).unwrap_or(1).to_le_bytes().to_vec();
            body.extend_from_slice(&0i32.to_le_bytes());
            message(&mut reply, MSG_WRITE_READY, &body);
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
            message(&mut reply, MSG_READ_DONE, &body);
            Step::Reply(reply)
        }
        MSG_EXIT => {
            out.status = int_at(0).unwrap_or(0);
            Step::Done(Ok(std::mem::replace(
                out,
                Output {
                    status: 0,
                    stdout: Vec::new(),
                    stderr: Vec::new(),
                },
            )))
        }
        MSG_EXITED | MSG_SHUTDOWN => Step::Done(Err(DirectError::Closed)),
        MSG_VERSION => Step::Done(Err(DirectError::Version)),
        _ => Step::Continue,
    }
}

/// Runs one tmux command on the server at `socket`, without blocking a thread:
/// connecting, the identify messages and the command, the replies — every
/// step is a tokio operation under one deadline, so a tmux server that is
/// stopped or stuck (its accept queue full, its socket unread) delays only the
/// calls that wait for it, never the runtime thread the rest of the broker
/// shares.
pub async fn run_async(
    socket: &Path,
    args: &[&str],
    timeout: Duration,
) -> Result<Output, DirectError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let hello = handshake(args)?;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut sock = tokio::time::timeout_at(deadline, connect(socket))
        .await
        .unwrap_or_else(|_| {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("tmux accepted no connection within {timeout:?} (the server is stopped or overloaded)"),
            ))
        })
        .map_err(|source| DirectError::Connect {
            path: socket.display().to_string(),
            source,
        })?;
    let work = async {
        sock.write_all(&hello).await?;
        let mut out = Output {
            status: -1,
            stdout: Vec::new(),
            stderr: Vec::new(),
        };
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
    tokio::time::timeout_at(deadline, work)
        .await
        .map_err(|_| DirectError::Timeout(timeout))?
}

/// A connection to tmux's socket ([`crate::sys::connect_unix`], backing off to
/// 50 ms), until the caller's deadline; nothing has reached tmux until it
/// succeeds.
async fn connect(socket: &Path) -> io::Result<tokio::net::UnixStream> {
    crate::sys::connect_unix(socket, Duration::from_millis(50)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds of the messages in `buf`, in order.
    fn kinds(buf: &[u8]) -> Vec<u32> {
        let mut v = Vec::new();
        let mut off = 0;
        while off < buf.len() {
            v.push(u32::from_le_bytes(buf[off..off + 4].try_into().unwrap()));
            off += u16::from_le_bytes(buf[off + 4..off + 6].try_into().unwrap()) as usize;
        }
        assert_eq!(off, buf.len(), "messages end at the buffer's end");
        v
    }

    #[test]
    fn message_header_is_both_imsg_layouts() {
        // ≤ 3.5: len u16 = 22, flags u16 = 0; ≥ 3.6: len u32 = 22. Same bytes.
        let mut b = Vec::new();
        message(&mut b, MSG_IDENTIFY_TERM, &cstr(b"xterm"));
        assert_eq!(
            &b[..16],
            &[0x65, 0, 0, 0, 22, 0, 0, 0, 8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(&b[16..], b"xterm\0");
    }

    #[test]
    fn handshake_is_one_write_without_descriptor_messages() {
        let hello = handshake(&["list-commands", "-F", "x"]).unwrap();
        assert_eq!(
            kinds(&hello),
            [
                MSG_IDENTIFY_FLAGS,
                MSG_IDENTIFY_LONGFLAGS,
                MSG_IDENTIFY_TERM,
                MSG_IDENTIFY_FEATURES,
                MSG_IDENTIFY_TTYNAME,
                MSG_IDENTIFY_CWD,
                MSG_IDENTIFY_CLIENTPID,
                MSG_IDENTIFY_DONE,
                MSG_COMMAND
            ]
        );
        let with_env = kinds(&handshake(&["new-session", "-d"]).unwrap());
        assert!(
            with_env.contains(&MSG_IDENTIFY_ENVIRON)
                || std::env::vars_os().all(|(k, _)| k == "TMUX" || k == "TMUX_PANE")
        );
        let big = "x".repeat(MAX_IMSG);
        assert!(matches!(
            handshake(&[big.as_str()]),
            Err(DirectError::TooLarge(_))
        ));
    }

    #[test]
    fn incoming_length_reads_either_header_and_rejects_nonsense() {
        let mut out = Output {
            status: -1,
            stdout: Vec::new(),
            stderr: Vec::new(),
        };
        let mut exit = Vec::new();
        message(&mut exit, MSG_EXIT, &3i32.to_le_bytes());
        let (_, done) = process(&mut exit.clone(), &mut out).unwrap();
        assert_eq!(done.unwrap().unwrap().status, 3);
        let mut short = exit.clone();
        short[4] = 4;
        assert!(process(&mut short, &mut out).is_err());
    }
}

/// These run against the `tmux` on PATH (the system's, or a version built by
/// `scripts/tmux-build` put first on PATH), through [`run_async`], the
/// function the broker uses.
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
            let dir = std::env::temp_dir().join(format!(
                "tmux-mcp-direct-{}-{}",
                std::process::id(),
                crate::sys::random_hex(4)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let sock = dir.join("sock");
            let st = Command::new("tmux")
                .arg("-S")
                .arg(&sock)
                .args([
                    "-f",
                    "/dev/null",
                    "new-session",
                    "-d",
                    "-x",
                    "80",
                    "-y",
                    "10",
                ])
                .status()
                .unwrap();
            assert!(st.success());
            Server { dir, sock }
        }
        fn exec(&self, args: &[&str]) -> Output {
            let o = Command::new("tmux")
                .arg("-S")
                .arg(&self.sock)
                .args(args)
                .env_remove("TMUX")
                .output()
                .unwrap();
            Output {
                status: o.status.code().unwrap(),
                stdout: o.stdout,
                stderr: o.stderr,
            }
        }
        fn version(&self) -> String {
            String::from_utf8(
                self.exec(&["list-commands", "-F", "#{version}", "list-commands"])
                    .stdout,
            )
            .unwrap()
            .trim()
            .to_string()
        }
        /// What the broker's start-up probe decides for this server.
        async fn probe(&self) {
            let tmux = Tmux::new(&self.sock);
            assert!(
                tmux.try_enable_direct().await,
                "the protocol client was refused by tmux {}",
                self.version()
            );
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = Command::new("tmux")
                .arg("-S")
                .arg(&self.sock)
                .arg("kill-server")
                .status();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// A client that passed no descriptors is in the state tmux's own command
    /// client (stdin not a terminal) ends identify in: no terminal, same flags.
    #[tokio::test]
    async fn the_server_sees_the_same_client_as_tmux_s_own() {
        let s = Server::start();
        s.probe().await;
        let args = ["display-message", "-p", "#{client_flags}|#{client_tty}|#{client_control_mode}|#{client_readonly}|#{client_session}|#{client_width}"];
        let o = Command::new("tmux")
            .arg("-u")
            .arg("-S")
            .arg(&s.sock)
            .args(args)
            .env_remove("TMUX")
            .output()
            .unwrap();
        let exec = Output {
            status: o.status.code().unwrap(),
            stdout: o.stdout,
            stderr: o.stderr,
        };
        assert_eq!(exec.status, 0, "{exec:?}");
        assert_eq!(
            run_async(&s.sock, &args, T).await.unwrap(),
            exec,
            "tmux {}",
            s.version()
        );
    }

    #[tokio::test]
    async fn same_answers_as_the_tmux_binary() {
        let s = Server::start();
        s.probe().await;
        for args in [
            vec![
                "list-commands",
                "-F",
                "#{pid} #{version} #{S:#{session_id} }",
                "list-commands",
            ],
            vec!["show-hooks", "-g", "after-capture-pane"],
            vec!["show-hooks", "-t", "nosuch", "after-capture-pane"],
        ] {
            assert_eq!(
                run_async(&s.sock, &args, T).await.unwrap(),
                s.exec(&args),
                "{args:?}"
            );
        }
        let err = run_async(&s.sock, &["show-hooks", "-t", "nosuch"], T)
            .await
            .unwrap();
        assert_eq!(err.status, 1);
        assert!(
            String::from_utf8_lossy(&err.stderr).contains("nosuch"),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn large_output_arrives_whole() {
        let s = Server::start();
        s.probe().await;
        // 4000 history lines of 60 characters: far more than one 16 KiB message.
        s.exec(&["set-option", "-g", "history-limit", "10000"]);
        let script = "for i in $(seq 1 4000); do printf '%060d\\n' $i; done; sleep 100";
        s.exec(&["new-window", "-d", "-n", "big", "sh", "-c", script]);
        let cap = ["capture-pane", "-p", "-t", ":big", "-S", "-", "-E", "-"];
        let deadline = Instant::now() + Duration::from_secs(10);
        while !String::from_utf8_lossy(&s.exec(&cap).stdout).contains("4000\n") {
            assert!(
                Instant::now() < deadline,
                "the pane never printed its lines"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let d = run_async(&s.sock, &cap, T).await.unwrap();
        assert_eq!(d, s.exec(&cap));
        assert!(d.stdout.len() > 64 * 1024, "{}", d.stdout.len());
    }
}
