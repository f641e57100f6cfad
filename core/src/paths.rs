//! Where things live: the tmux socket a command means, and the broker's private
//! runtime directory, socket, lock and log.
//!
//! The tmux socket is the one `-S PATH`, `-L NAME` or `$TMUX` names, else
//! tmux's default (`${TMUX_TMPDIR:-/tmp}/tmux-UID/default`).
//! [`user_tmux_sockets`] lists this user's sockets in that directory.
//!
//! A server's files are named from its generation ([`BrokerPaths`]):
//! `srv-<gen16>.sock`, `.lock` and `.log`, and the marks directory
//! `srv-<gen16>.sh/` that enrolled shells write to.
//!
//! The broker directory is the first usable of `$XDG_RUNTIME_DIR/tmux-mcp` (else
//! `/run/user/UID/tmux-mcp`), `${TMUX_TMPDIR:-/tmp}/tmux-mcp-UID`, then the
//! numbered `${TMUX_TMPDIR:-/tmp}/tmux-mcp-UID.1`, `.2`, … (and the same two in
//! `/tmp` when `TMUX_TMPDIR` is unusable). Usable means a real directory owned by
//! this user (made 0700) or a free name created so: a name someone else holds, a
//! symlink or a file is passed over, never followed or removed, so another local
//! user cannot stop the broker from starting. A relay started by an MCP client
//! with a minimal environment probes every directory of ours a broker may use, so
//! it finds a broker that tmux started with a richer one.

use crate::sys;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The tmux socket selected by `-S PATH`, `-L NAME`, `$TMUX`, or tmux's default.
pub fn tmux_socket(path: Option<&Path>, name: Option<&str>) -> Result<PathBuf, String> {
    Ok(explicit_tmux_socket(path, name)?.unwrap_or_else(default_tmux_socket))
}

/// The tmux socket that `-S PATH`, `-L NAME` or `$TMUX` names; `None` when none
/// of them says (then the caller may look further before tmux's default).
pub fn explicit_tmux_socket(
    path: Option<&Path>,
    name: Option<&str>,
) -> Result<Option<PathBuf>, String> {
    if let Some(p) = path {
        return Ok(Some(p.to_path_buf()));
    }
    if let Some(n) = name {
        if n.is_empty() || n.contains('/') || n == "." || n == ".." {
            return Err(format!(
                "invalid socket name {n:?}: it must be a plain file name"
            ));
        }
        return Ok(Some(tmux_socket_dir().join(n)));
    }
    if let Ok(tmux) = std::env::var("TMUX") {
        if let Some(sock) = tmux.split(',').next().filter(|s| !s.is_empty()) {
            return Ok(Some(PathBuf::from(sock)));
        }
    }
    Ok(None)
}

/// tmux's default server socket, `${TMUX_TMPDIR:-/tmp}/tmux-UID/default`.
pub fn default_tmux_socket() -> PathBuf {
    tmux_socket_dir().join("default")
}

/// The sockets in tmux's socket directory (`${TMUX_TMPDIR:-/tmp}/tmux-UID`)
/// that are this user's, sorted by name. Only looked at (lstat), never
/// connected to: a stale socket of a dead server is in the list too.
pub fn user_tmux_sockets() -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let dir = tmux_socket_dir();
    // tmux itself refuses a socket directory that is not ours; so do we.
    if dir_state(&dir, sys::current_uid()) != DirState::Ours {
        return Vec::new();
    }
    let Ok(rd) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| {
            fs::symlink_metadata(e.path())
                .is_ok_and(|m| m.file_type().is_socket() && m.uid() == sys::current_uid())
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

fn tmux_tmpdir() -> PathBuf {
    std::env::var_os("TMUX_TMPDIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// tmux's own directory for `-L` names: `${TMUX_TMPDIR:-/tmp}/tmux-UID`.
pub fn tmux_socket_dir() -> PathBuf {
    tmux_tmpdir().join(format!("tmux-{}", sys::current_uid()))
}

/// The environment the runtime directory is chosen from (a value, so the order
/// can be tested without touching the process environment).
#[derive(Debug, Clone)]
pub struct RuntimeEnv {
    pub uid: u32,
    /// `$XDG_RUNTIME_DIR`, when set, non-empty and a directory.
    pub xdg_runtime_dir: Option<PathBuf>,
    /// `/run/user/UID`, when it is a directory.
    pub run_user: Option<PathBuf>,
    /// `${TMUX_TMPDIR:-/tmp}`.
    pub tmux_tmpdir: PathBuf,
}

impl RuntimeEnv {
    pub fn current() -> RuntimeEnv {
        let uid = sys::current_uid();
        let xdg_runtime_dir = std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_dir());
        let run_user = Some(PathBuf::from(format!("/run/user/{uid}"))).filter(|p| p.is_dir());
        RuntimeEnv {
            uid,
            xdg_runtime_dir,
            run_user,
            tmux_tmpdir: tmux_tmpdir(),
        }
    }

    /// Where the broker looks, in order. `$XDG_RUNTIME_DIR` wins over
    /// `/run/user/UID` (its conventional value) when set, and `TMUX_TMPDIR`
    /// replaces `/tmp` as tmux's own socket directory does; `/tmp` comes back only
    /// as the last resort when `TMUX_TMPDIR` is unusable. The numbered names
    /// (`tmux-mcp-UID.1`, `.2`, …) are the fallback when someone else occupies a
    /// name: deterministic, so concurrent brokers and relays agree without
    /// talking, and unbounded, so no number of squatted names makes it fail.
    fn choice_stages(&self) -> Vec<Stage> {
        let mut out = Vec::new();
        match (&self.xdg_runtime_dir, &self.run_user) {
            (Some(x), _) => out.push(Stage::Fixed(x.join("tmux-mcp"))),
            (None, Some(r)) => out.push(Stage::Fixed(r.join("tmux-mcp"))),
            (None, None) => {}
        }
        let stem = format!("tmux-mcp-{}", self.uid);
        let mut bases = vec![self.tmux_tmpdir.clone()];
        if self.tmux_tmpdir != Path::new("/tmp") {
            bases.push(PathBuf::from("/tmp"));
        }
        for b in bases {
            out.push(Stage::Fixed(b.join(&stem)));
            out.push(Stage::Numbered(b, stem.clone()));
        }
        out
    }

    /// Every directory a broker of this user may be using, including ones a
    /// broker started with another environment (tmux's, not the MCP client's)
    /// chose: only those that are ours now (a real directory owned by our uid).
    pub fn search_dirs(&self) -> Vec<PathBuf> {
        let mut stages = self.choice_stages();
        let stem = format!("tmux-mcp-{}", self.uid);
        for extra in [
            self.xdg_runtime_dir.as_ref().map(|x| x.join("tmux-mcp")),
            self.run_user.as_ref().map(|r| r.join("tmux-mcp")),
        ]
        .into_iter()
        .flatten()
        {
            stages.push(Stage::Fixed(extra));
        }
        stages.push(Stage::Fixed(Path::new("/tmp").join(&stem)));
        stages.push(Stage::Numbered(PathBuf::from("/tmp"), stem));
        let mut out: Vec<PathBuf> = Vec::new();
        for st in stages {
            let found = match st {
                Stage::Fixed(p) => vec![p],
                Stage::Numbered(base, stem) => numbered_entries(&base, &stem),
            };
            for p in found {
                if !out.contains(&p) && dir_state(&p, self.uid) == DirState::Ours {
                    out.push(p);
                }
            }
        }
        out
    }

    /// Walks the choice order: the first candidate that is ours, or that is free
    /// and (with `create`) could be created as ours, is the runtime directory.
    /// Every refused candidate is reported with the reason. Without `create`
    /// nothing on disk changes (for `doctor`).
    pub fn plan(&self, create: bool) -> RuntimeDirPlan {
        let mut plan = RuntimeDirPlan::default();
        for st in self.choice_stages() {
            match st {
                Stage::Fixed(p) => {
                    if let Candidate::Use(dir) = self.try_candidate(&p, create, &mut plan) {
                        plan.chosen = Some(dir);
                        return plan;
                    }
                }
                Stage::Numbered(base, stem) => {
                    // Each taken name costs one lstat; the first free one is
                    // created (or shows that the base is unusable), so the walk
                    // always ends, however many names a squatter holds.
                    for n in 1u64.. {
                        match self.try_candidate(
                            &base.join(format!("{stem}.{n}")),
                            create,
                            &mut plan,
                        ) {
                            Candidate::Use(dir) => {
                                plan.chosen = Some(dir);
                                return plan;
                            }
                            Candidate::Refused => continue,
                            Candidate::BaseUnusable => break,
                        }
                    }
                }
            }
        }
        plan
    }

    /// Whether `p` is (or, with `create`, now is) a private directory of ours;
    /// records why not.
    fn try_candidate(&self, p: &Path, create: bool, plan: &mut RuntimeDirPlan) -> Candidate {
        for _ in 0..2 {
            match dir_state(p, self.uid) {
                DirState::Ours => {
                    if create {
                        if let Err(e) = make_private(p) {
                            plan.refuse(p, format!("cannot be made private (mode 0700): {e}"));
                            return Candidate::Refused;
                        }
                    }
                    return Candidate::Use(p.to_path_buf());
                }
                DirState::Refused(why) => {
                    plan.refuse(p, why);
                    return Candidate::Refused;
                }
                DirState::Absent if !create => {
                    if p.parent().is_some_and(Path::is_dir) {
                        return Candidate::Use(p.to_path_buf());
                    }
                    plan.refuse(p, "cannot be created: its parent is not a directory".into());
                    return Candidate::BaseUnusable;
                }
                DirState::Absent => {
                    match fs::DirBuilder::new().mode(0o700).recursive(false).create(p) {
                        // Look again at what is there now: the name may have been
                        // taken between the lstat and the mkdir.
                        Ok(()) => continue,
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                        Err(e) => {
                            // About the parent, not this name: every other name in
                            // the same base would fail alike.
                            plan.refuse(p, format!("cannot be created: {e}"));
                            return Candidate::BaseUnusable;
                        }
                    }
                }
            }
        }
        plan.refuse(p, "changed while it was being checked".into());
        Candidate::Refused
    }
}

enum Candidate {
    Use(PathBuf),
    Refused,
    BaseUnusable,
}

#[derive(Debug, Clone)]
enum Stage {
    Fixed(PathBuf),
    /// `base/stem.1`, `base/stem.2`, …
    Numbered(PathBuf, String),
}

/// The numbers `n` of the existing entries `base/stem.n`.
fn numbered_taken(base: &Path, stem: &str) -> std::collections::BTreeSet<u64> {
    let prefix = format!("{stem}.");
    let Ok(rd) = fs::read_dir(base) else {
        return Default::default();
    };
    rd.flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let rest = name.to_str()?.strip_prefix(&prefix)?.to_string();
            // Canonical decimal only, so `stem.01` is not a second name for 1.
            (!rest.starts_with('0') && rest.bytes().all(|b| b.is_ascii_digit()))
                .then(|| rest.parse::<u64>().ok())
                .flatten()
        })
        .collect()
}

fn numbered_entries(base: &Path, stem: &str) -> Vec<PathBuf> {
    numbered_taken(base, stem)
        .into_iter()
        .map(|n| base.join(format!("{stem}.{n}")))
        .collect()
}

/// The outcome of [`RuntimeEnv::plan`].
#[derive(Debug, Clone, Default)]
pub struct RuntimeDirPlan {
    /// The runtime directory; `None` when every candidate was refused.
    pub chosen: Option<PathBuf>,
    /// Candidates passed over, with the reason (the first [`MAX_REFUSALS_KEPT`]).
    pub refused: Vec<(PathBuf, String)>,
    /// Refusals beyond those kept.
    pub refused_more: usize,
}

/// Enough to show what happened, bounded however many names are squatted.
pub const MAX_REFUSALS_KEPT: usize = 16;

impl RuntimeDirPlan {
    fn refuse(&mut self, p: &Path, why: String) {
        if self.refused.len() < MAX_REFUSALS_KEPT {
            self.refused.push((p.to_path_buf(), why));
        } else {
            self.refused_more += 1;
        }
    }

    /// One line per refusal, for logs and error messages.
    pub fn refusals_text(&self) -> String {
        let mut parts: Vec<String> = self
            .refused
            .iter()
            .map(|(p, why)| format!("{} {why}", p.display()))
            .collect();
        if self.refused_more > 0 {
            parts.push(format!("and {} more", self.refused_more));
        }
        parts.join("; ")
    }
}

/// The broker's runtime directory, created 0700 if needed (see
/// [`RuntimeEnv::choice_stages`] for the order). The error lists every refusal.
pub fn choose_runtime_dir() -> Result<(PathBuf, RuntimeDirPlan), String> {
    let plan = RuntimeEnv::current().plan(true);
    match plan.chosen.clone() {
        Some(d) => Ok((d, plan)),
        None => Err(format!(
            "no usable runtime directory: {}",
            plan.refusals_text()
        )),
    }
}

/// Every directory of ours a broker may be listening in (see
/// [`RuntimeEnv::search_dirs`]).
pub fn runtime_dir_candidates() -> Vec<PathBuf> {
    RuntimeEnv::current().search_dirs()
}

/// What a candidate directory is right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirState {
    /// A real directory (not a symlink) owned by `uid`.
    Ours,
    /// Nothing by that name.
    Absent,
    /// Unusable, and why.
    Refused(String),
}

/// Looks at `dir` itself (`lstat`: a symlink is never followed, wherever it points).
pub fn dir_state(dir: &Path, uid: u32) -> DirState {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => DirState::Absent,
        Err(e) => DirState::Refused(format!("cannot be inspected: {e}")),
        Ok(md) if md.file_type().is_symlink() => DirState::Refused("is a symbolic link".into()),
        Ok(md) if !md.is_dir() => DirState::Refused("is not a directory".into()),
        Ok(md) if md.uid() != uid => DirState::Refused(format!(
            "is owned by uid {}, not by this user (uid {uid})",
            md.uid()
        )),
        Ok(_) => DirState::Ours,
    }
}

fn make_private(dir: &Path) -> io::Result<()> {
    let md = fs::symlink_metadata(dir)?;
    if md.mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// A private directory as it was when the broker took it (device and inode):
/// what tells it from one made later at the same path, by anyone, after it
/// was removed (a `/tmp` cleaner, an `rm -rf`). Checked before each write
/// into it, so nothing is ever written through a directory another user
/// made, and nothing is ever taken from one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirId {
    dev: u64,
    ino: u64,
}

impl DirId {
    /// `dir`'s identity if it is a real directory (not a symlink) of this
    /// user's that nobody else may enter (no group or other bits).
    pub fn of_private(dir: &Path) -> Result<DirId, String> {
        DirId::of_private_to(dir, sys::current_uid())
    }

    /// [`DirId::of_private`] for a directory that must be `uid`'s.
    pub fn of_private_to(dir: &Path, uid: u32) -> Result<DirId, String> {
        let md = fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if md.file_type().is_symlink() || !md.is_dir() {
            return Err(format!("{} is not a directory", dir.display()));
        }
        if md.uid() != uid {
            return Err(format!(
                "{} is owned by uid {}, not by this user (uid {uid})",
                dir.display(),
                md.uid()
            ));
        }
        if md.mode() & 0o077 != 0 {
            return Err(format!(
                "{} has mode {:o}: others may enter it",
                dir.display(),
                md.mode() & 0o7777
            ));
        }
        Ok(DirId {
            dev: md.dev(),
            ino: md.ino(),
        })
    }

    /// Whether `dir` is still this directory, and still private.
    pub fn check(&self, dir: &Path) -> Result<(), String> {
        match DirId::of_private(dir) {
            Ok(now) if now == *self => Ok(()),
            Ok(_) => Err(format!(
                "{} is not the directory the broker made: it was removed and made again",
                dir.display()
            )),
            Err(why) => Err(why),
        }
    }
}

/// The broker's files for one tmux server, named from its generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerPaths {
    pub dir: PathBuf,
    pub socket: PathBuf,
    pub lock: PathBuf,
    pub log: PathBuf,
    /// The directory enrolled shells write their marks to (`tmux-mcp
    /// shell-init`): one file per pane, named by its pane id. Per server
    /// instance, so it outlives a broker restart and never mixes two servers'
    /// panes of the same id.
    pub marks: PathBuf,
}

impl BrokerPaths {
    pub fn new(dir: &Path, generation: &str) -> Self {
        let stem = format!("srv-{}", &generation[..generation.len().min(16)]);
        BrokerPaths {
            dir: dir.to_path_buf(),
            socket: dir.join(format!("{stem}.sock")),
            lock: dir.join(format!("{stem}.lock")),
            log: dir.join(format!("{stem}.log")),
            marks: dir.join(format!("{stem}.sh")),
        }
    }

    /// Every place a broker for `generation` may be listening (directories of
    /// ours only: a socket in a directory someone else controls is never used).
    pub fn candidates(generation: &str) -> Vec<BrokerPaths> {
        runtime_dir_candidates()
            .iter()
            .map(|d| BrokerPaths::new(d, generation))
            .collect()
    }
}

/// Creates `dir` with mode 0700 if needed and checks that it is a real directory
/// owned by us that nobody else can enter.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new()
        .mode(0o700)
        .recursive(false)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    match dir_state(dir, sys::current_uid()) {
        DirState::Ours => make_private(dir),
        DirState::Absent => Err(io::Error::other(format!(
            "{} vanished while it was being created",
            dir.display()
        ))),
        DirState::Refused(why) => Err(io::Error::other(format!("{} {why}", dir.display()))),
    }
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
        assert_eq!(
            tmux_socket(Some(Path::new("/x/s")), Some("work")).unwrap(),
            PathBuf::from("/x/s")
        );
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

    /// Issue 6 item 10, at the level of the choice: squatted, symlinked and
    /// plain-file names are passed over with their reasons, the next numbered
    /// name is created 0700, a second choice agrees with the first, and the
    /// search finds it. (The end-to-end test in tests/e2e/relay.rs does the same
    /// through a real broker.)
    #[test]
    fn squatted_candidates_fall_through_to_a_numbered_private_dir() {
        let base = std::env::temp_dir().join(format!("tmux-mcp-plan-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(base.join("xdg")).unwrap();
        fs::create_dir_all(base.join("tt")).unwrap();
        let uid = sys::current_uid();
        let env = RuntimeEnv {
            uid,
            xdg_runtime_dir: Some(base.join("xdg")),
            run_user: None,
            tmux_tmpdir: base.join("tt"),
        };
        let stem = format!("tmux-mcp-{uid}");
        fs::write(base.join("xdg/tmux-mcp"), b"").unwrap(); // not a directory
        fs::create_dir(base.join("decoy")).unwrap();
        std::os::unix::fs::symlink(base.join("decoy"), base.join("tt").join(&stem)).unwrap();
        std::os::unix::fs::symlink(
            base.join("decoy"),
            base.join("tt").join(format!("{stem}.1")),
        )
        .unwrap();
        fs::write(base.join("tt").join(format!("{stem}.2")), b"").unwrap();

        let dry = env.plan(false);
        assert_eq!(dry.chosen, Some(base.join("tt").join(format!("{stem}.3"))));
        assert!(
            !base.join("tt").join(format!("{stem}.3")).exists(),
            "a dry plan created something"
        );

        let plan = env.plan(true);
        let want = base.join("tt").join(format!("{stem}.3"));
        assert_eq!(plan.chosen.as_ref(), Some(&want), "{plan:?}");
        let reasons: Vec<&str> = plan.refused.iter().map(|(_, w)| w.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "is not a directory",
                "is a symbolic link",
                "is a symbolic link",
                "is not a directory"
            ],
            "{plan:?}"
        );
        assert_eq!(fs::symlink_metadata(&want).unwrap().mode() & 0o777, 0o700);
        assert_eq!(
            env.plan(true).chosen,
            Some(want.clone()),
            "a second choice disagrees"
        );
        assert!(env.search_dirs().contains(&want));
        assert!(
            fs::read_dir(base.join("decoy")).unwrap().next().is_none(),
            "something was written through a symlink"
        );
        fs::remove_dir_all(&base).unwrap();
    }
}
