//! The tmux sockets this user may see, and a knock on each (`list_servers`):
//! found and probed without starting tmux and without running a tmux command.
//!
//! The candidates are the sockets in tmux's own socket directory
//! (`${TMUX_TMPDIR:-/tmp}/tmux-UID`, [`paths::tmux_socket_dir`]), each keyed
//! by its file name (the `-L` name), and the extra socket paths a person
//! configured, each keyed by its absolute path (so a key never collides with
//! a name, which has no `/`). The directory is used only while it is a real
//! directory (never a symlink) owned by this user that neither group nor
//! others may enter; tmux refuses one that others may enter, and makes its
//! own 0700. An entry is a candidate only if `lstat` says it is a socket
//! owned by this user: a symlink is never followed, and another user's socket
//! is never listed.
//!
//! [`knock`] connects (non-blocking, under a deadline of its own, ~100 ms):
//! a refused connect is a stale socket (no server behind the file), never an
//! empty server; an accepted one gives the server's identity from the peer
//! credentials (`server::identity_of`). A connection that is only opened and
//! closed is not a tmux command, so it runs no hook; tmux drops such a client
//! without a word. Nothing here can start a server: a `connect` never does
//! (exec of the `tmux` binary could: most of its commands, `list-commands`
//! too, start a server on a stale socket).

use crate::paths;
use crate::server::{self, ServerIdentity};
use crate::sys;
use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a knock waits for a connect to complete (a server whose accept
/// queue is full answers `EAGAIN` at once; the knock retries until then).
pub const KNOCK_TIMEOUT: Duration = Duration::from_millis(100);

/// A socket to look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The name to call it by: its file name in the socket directory, else
    /// its absolute path.
    pub key: String,
    pub path: PathBuf,
}

/// What a knock found.
#[derive(Debug)]
pub enum Knock {
    /// A server owns the socket.
    Live(Box<ServerIdentity>),
    /// Nothing listens: the connect was refused (a server that died left its
    /// file) or the file has gone.
    Stale(String),
    /// The connect did not complete within the deadline: a server is there
    /// but takes no new connection now (stopped, or its accept queue full).
    Busy,
    /// The server runs as another user: never listed.
    Foreign,
}

/// The sockets in tmux's socket directory that are this user's, by name;
/// `Err` says why the directory is not used.
pub fn in_socket_dir() -> Result<Vec<Candidate>, String> {
    socket_dir_entries(&paths::tmux_socket_dir(), sys::current_uid())
}

/// [`in_socket_dir`] for directory `dir` and user `uid`.
pub fn socket_dir_entries(dir: &Path, uid: u32) -> Result<Vec<Candidate>, String> {
    private_dir(dir, uid)?;
    let rd = fs::read_dir(dir).map_err(|e| format!("{} cannot be read: {e}", dir.display()))?;
    let mut out: Vec<Candidate> = rd
        .flatten()
        .filter_map(|e| {
            let key = e.file_name().into_string().ok()?;
            let path = e.path();
            own_socket(&path, uid).ok()?;
            Some(Candidate { key, path })
        })
        .collect();
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

/// The socket of `-L` name `name` in tmux's socket directory, checked as
/// [`in_socket_dir`] checks each entry (the directory private, the entry
/// itself a socket of this user's); `Err` says why not. A name is one path
/// component: `.`, `..` and anything with `/` are refused before any file
/// is looked at.
pub fn named(name: &str) -> Result<Candidate, String> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err("a socket name is one file name (no /, not . or ..)".into());
    }
    let dir = paths::tmux_socket_dir();
    let uid = sys::current_uid();
    private_dir(&dir, uid)?;
    let path = dir.join(name);
    if fs::symlink_metadata(&path).is_err_and(|e| e.kind() == io::ErrorKind::NotFound) {
        return Err(format!("no socket {name} in {}", dir.display()));
    }
    own_socket(&path, uid).map_err(|why| format!("{}: {why}", path.display()))?;
    Ok(Candidate {
        key: name.to_string(),
        path,
    })
}

/// Whether `dir` is a real directory of `uid` that neither group nor others
/// may enter (`lstat`: a symlink is refused, wherever it points).
fn private_dir(dir: &Path, uid: u32) -> Result<(), String> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(format!(
            "{} does not exist (no server has used it)",
            dir.display()
        )),
        Err(e) => Err(format!("{} cannot be inspected: {e}", dir.display())),
        Ok(_) => crate::paths::DirId::of_private_to(dir, uid).map(|_| ()),
    }
}

/// Whether `path` itself (`lstat`) is a socket owned by `uid`.
fn own_socket(path: &Path, uid: u32) -> Result<(), String> {
    let md = fs::symlink_metadata(path).map_err(|e| format!("{e}"))?;
    if !md.file_type().is_socket() {
        return Err(if md.file_type().is_symlink() {
            "is a symbolic link".into()
        } else {
            "is not a socket".into()
        });
    }
    if md.uid() != uid {
        return Err("is another user's".into());
    }
    Ok(())
}

/// A configured extra socket path as a candidate keyed by itself: an
/// absolute path to a socket of this user's (`lstat`, as in the socket
/// directory); `Err` says why not.
pub fn extra(path: &str) -> Result<Candidate, String> {
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(format!("{path}: not an absolute path"));
    }
    own_socket(p, sys::current_uid()).map_err(|why| format!("{path}: {why}"))?;
    Ok(Candidate {
        key: path.to_string(),
        path: p.to_path_buf(),
    })
}

/// The key `list_servers` gives the server whose socket is `socket` (a
/// server identity's path, canonical): its file name when it lies in tmux's
/// socket directory (its `-L` name), else the path itself. One function for
/// every place that names a server to an agent (`list_servers`' own server,
/// the hand-off line of `tmux-mcp cursor`), so the key one prints is the key
/// the other takes.
pub fn key_of(socket: &Path) -> String {
    key_in(socket, &paths::tmux_socket_dir())
}

/// [`key_of`] with tmux's socket directory `dir` (compared canonical: a
/// server's identity carries its canonical path).
pub fn key_in(socket: &Path, dir: &Path) -> String {
    let in_dir = socket
        .parent()
        .is_some_and(|d| fs::canonicalize(dir).is_ok_and(|t| t == d));
    match socket.file_name().and_then(|n| n.to_str()) {
        Some(name) if in_dir => name.to_string(),
        _ => socket.display().to_string(),
    }
}

/// The pid in a Claude Code agent team's socket name, `claude-swarm-<pid>`
/// (the name its leader gives the server it starts for teammates outside
/// tmux).
pub fn claude_swarm_pid(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("claude-swarm-")?;
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Connects to `path` (a tmux server's socket) within `timeout` and closes
/// the connection; no byte is sent.
pub async fn knock(path: &Path, timeout: Duration) -> Knock {
    let stream = match connect(path, timeout).await {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::TimedOut => return Knock::Busy,
        Err(e) => return Knock::Stale(e.to_string()),
    };
    let Ok(stream) = stream.into_std() else {
        return Knock::Busy;
    };
    let canonical = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    match crate::platform::peer_cred(&stream) {
        Ok(c) if c.uid != sys::current_uid() => return Knock::Foreign,
        Ok(_) => {}
        Err(e) => return Knock::Stale(e.to_string()),
    }
    match server::identity_of(&stream, canonical) {
        Ok(id) => Knock::Live(Box::new(id)),
        // The server exited between the connect and the process table read.
        Err(e) => Knock::Stale(e.to_string()),
    }
}

/// Whether something listens on `path` (a broker's socket): a connect within
/// `timeout`, dropped at once; a full accept queue counts as listening.
pub async fn listening(path: &Path, timeout: Duration) -> bool {
    match connect(path, timeout).await {
        Ok(_) => true,
        Err(e) => e.kind() == io::ErrorKind::TimedOut,
    }
}

/// A non-blocking connect, retried on `EAGAIN` (a full accept queue; a
/// Unix socket connect never waits) until `timeout`, then `TimedOut`.
async fn connect(path: &Path, timeout: Duration) -> io::Result<tokio::net::UnixStream> {
    let attempt = sys::connect_unix(path, Duration::from_millis(20));
    tokio::time::timeout(timeout, attempt)
        .await
        .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "no connection")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixListener;

    fn scratch(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tmux-mcp-{label}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    #[test]
    fn only_own_sockets_are_candidates_never_a_symlink_or_a_file() {
        let dir = scratch("sockdir");
        let _a = UnixListener::bind(dir.join("work")).unwrap();
        drop(UnixListener::bind(dir.join("stale")).unwrap());
        fs::write(dir.join("file"), "x").unwrap();
        std::os::unix::fs::symlink(dir.join("work"), dir.join("link")).unwrap();
        let found = socket_dir_entries(&dir, sys::current_uid()).unwrap();
        let keys: Vec<&str> = found.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["stale", "work"]);
        assert!(
            socket_dir_entries(&dir, sys::current_uid() + 1).is_err(),
            "a directory of another uid is refused"
        );
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o750)).unwrap();
        let err = socket_dir_entries(&dir, sys::current_uid()).unwrap_err();
        assert!(err.contains("others may enter"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_extra_path_must_be_an_absolute_path_to_an_own_socket() {
        let dir = scratch("extra");
        let sock = dir.join("s");
        let _l = UnixListener::bind(&sock).unwrap();
        std::os::unix::fs::symlink(&sock, dir.join("l")).unwrap();
        let s = sock.to_str().unwrap();
        assert_eq!(extra(s).unwrap().key, s);
        assert!(extra("relative/s").unwrap_err().contains("absolute"));
        let link = dir.join("l");
        assert!(extra(link.to_str().unwrap())
            .unwrap_err()
            .contains("symbolic link"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_key_is_the_name_in_the_socket_directory_else_the_path() {
        let dir = scratch("keys");
        let sock = fs::canonicalize(&dir).unwrap().join("work");
        assert_eq!(key_in(&sock, &dir), "work");
        let elsewhere = Path::new("/run/ci/tmux.sock");
        assert_eq!(key_in(elsewhere, &dir), "/run/ci/tmux.sock");
        // A directory that does not exist holds no socket.
        assert_eq!(
            key_in(&sock, &dir.join("nosuch")),
            sock.display().to_string()
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_claude_swarm_name_gives_its_pid() {
        assert_eq!(claude_swarm_pid("claude-swarm-4242"), Some(4242));
        for no in [
            "claude-swarm-",
            "claude-swarm-04",
            "claude-swarm-1x",
            "default",
            "claude-swarm-99999999999",
        ] {
            assert_eq!(claude_swarm_pid(no), None, "{no}");
        }
    }

    #[tokio::test]
    async fn a_refused_connect_is_stale_and_a_listener_is_live() {
        let dir = scratch("knock");
        let live = dir.join("live");
        let _l = UnixListener::bind(&live).unwrap();
        let stale = dir.join("stale");
        drop(UnixListener::bind(&stale).unwrap());
        match knock(&live, KNOCK_TIMEOUT).await {
            Knock::Live(id) => assert_eq!(id.pid, std::process::id()),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            knock(&stale, KNOCK_TIMEOUT).await,
            Knock::Stale(_)
        ));
        assert!(listening(&live, KNOCK_TIMEOUT).await);
        assert!(!listening(&stale, KNOCK_TIMEOUT).await);
        fs::remove_dir_all(&dir).unwrap();
    }
}
