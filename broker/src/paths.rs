//! Where things live: the tmux socket a command means, and the broker's private
//! runtime directory, socket, lock and log.
//!
//! The broker directory is `$XDG_RUNTIME_DIR/tmux-mcp` when that exists, else
//! `/run/user/UID/tmux-mcp`, else `${TMUX_TMPDIR:-/tmp}/tmux-mcp-UID`. A relay
//! started by an MCP client with a minimal environment probes every candidate, so
//! it finds a broker that tmux started with a richer one.

use crate::sys;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The tmux socket selected by `-S PATH`, `-L NAME`, `$TMUX`, or tmux's default.
pub fn tmux_socket(path: Option<&Path>, name: Option<&str>) -> Result<PathBuf, String> {
    if let Some(p) = path {
        return Ok(p.to_path_buf());
    }
    if let Some(n) = name {
        if n.is_empty() || n.contains('/') || n == "." || n == ".." {
            return Err(format!("invalid socket name {n:?}: it must be a plain file name"));
        }
        return Ok(tmux_socket_dir().join(n));
    }
    if let Ok(tmux) = std::env::var("TMUX") {
        if let Some(sock) = tmux.split(',').next().filter(|s| !s.is_empty()) {
            return Ok(PathBuf::from(sock));
        }
    }
    Ok(tmux_socket_dir().join("default"))
}

fn tmux_tmpdir() -> PathBuf {
    std::env::var_os("TMUX_TMPDIR").filter(|v| !v.is_empty()).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// tmux's own directory for `-L` names: `${TMUX_TMPDIR:-/tmp}/tmux-UID`.
pub fn tmux_socket_dir() -> PathBuf {
    tmux_tmpdir().join(format!("tmux-{}", sys::current_uid()))
}

/// Candidate broker directories, most preferred first, without duplicates.
pub fn runtime_dir_candidates() -> Vec<PathBuf> {
    let uid = sys::current_uid();
    let mut out: Vec<PathBuf> = Vec::new();
    let mut push = |p: PathBuf| {
        if !out.contains(&p) {
            out.push(p)
        }
    };
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        if Path::new(&x).is_dir() {
            push(PathBuf::from(x).join("tmux-mcp"));
        }
    }
    let run_user = PathBuf::from(format!("/run/user/{uid}"));
    if run_user.is_dir() {
        push(run_user.join("tmux-mcp"));
    }
    push(tmux_tmpdir().join(format!("tmux-mcp-{uid}")));
    push(PathBuf::from(format!("/tmp/tmux-mcp-{uid}")));
    out
}

/// The broker's files for one tmux server, named from its generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerPaths {
    pub dir: PathBuf,
    pub socket: PathBuf,
    pub lock: PathBuf,
    pub log: PathBuf,
}

impl BrokerPaths {
    pub fn new(dir: &Path, generation: &str) -> Self {
        let stem = format!("srv-{}", &generation[..generation.len().min(16)]);
        BrokerPaths {
            dir: dir.to_path_buf(),
            socket: dir.join(format!("{stem}.sock")),
            lock: dir.join(format!("{stem}.lock")),
            log: dir.join(format!("{stem}.log")),
        }
    }

    /// Every place a broker for `generation` may be listening.
    pub fn candidates(generation: &str) -> Vec<BrokerPaths> {
        runtime_dir_candidates().iter().map(|d| BrokerPaths::new(d, generation)).collect()
    }
}

/// Creates `dir` with mode 0700 if needed and checks that it is a real directory
/// owned by us that nobody else can enter.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().mode(0o700).recursive(false).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let md = fs::symlink_metadata(dir)?;
    if !md.file_type().is_dir() {
        return Err(io::Error::other(format!("{} is not a directory", dir.display())));
    }
    if md.uid() != sys::current_uid() {
        return Err(io::Error::other(format!("{} is owned by uid {}, not by us", dir.display(), md.uid())));
    }
    if md.mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_name_rules() {
        assert!(tmux_socket(None, Some("a/b")).is_err());
        assert!(tmux_socket(None, Some("..")).is_err());
        let p = tmux_socket(None, Some("work")).unwrap();
        assert!(p.ends_with(format!("tmux-{}/work", sys::current_uid())));
        assert_eq!(tmux_socket(Some(Path::new("/x/s")), Some("work")).unwrap(), PathBuf::from("/x/s"));
    }

    #[test]
    fn broker_paths_are_named_from_generation() {
        let p = BrokerPaths::new(Path::new("/d"), "0123456789abcdef0123456789abcdef");
        assert_eq!(p.socket, PathBuf::from("/d/srv-0123456789abcdef.sock"));
        assert_eq!(p.lock, PathBuf::from("/d/srv-0123456789abcdef.lock"));
    }

    #[test]
    fn private_dir_is_0700_and_ours() {
        let base = std::env::temp_dir().join(format!("tmux-mcp-paths-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        ensure_private_dir(&base).unwrap();
        let md = fs::metadata(&base).unwrap();
        assert_eq!(md.mode() & 0o777, 0o700);
        fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&base).unwrap();
        assert_eq!(fs::metadata(&base).unwrap().mode() & 0o777, 0o700);
        fs::remove_dir_all(&base).unwrap();
    }
}
