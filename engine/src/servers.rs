//! Every tmux server this user's agent may see (`list_servers`), read
//! without firing a hook and without starting tmux.
//!
//! The sockets come from core's `sockets`: tmux's socket directory, the extra
//! paths in the agent's own server's `@mcp-sockets` option, and the agent's
//! own server. Each is knocked on (a bare connect, ~100 ms); a stale socket
//! is listed as stale, never as an empty server.
//!
//! A live server is then read with one command, the one the broker reads its
//! own pane table with: `list-commands -F FORMAT list-commands`. tmux runs an
//! `after-<name>` hook only for a command flagged `CMD_AFTERHOOK` *and* named
//! by a hook option, and `after-list-commands` is no hook option in any tmux
//! (3.5a and 3.7c flag the command, but `options-table.c` declares no such
//! hook, so `set-hook` refuses it); it cannot fail either, so `command-error`
//! does not run. The format is expanded in tmux's own queue: the version, a
//! mark per session (`#{S:…}`) and every pane id (`#{S:#{W:#{P:…}}}`; a
//! window linked into two sessions counts its panes once). Another server is
//! read through tmux's client protocol in process (`tmux::direct`), never by
//! running the `tmux` binary: `list-commands` starts a server when none runs,
//! and the socket may have gone stale since the knock. The agent's own server
//! is read through its registry, as every read of the broker is.

use std::path::{Path, PathBuf};
use std::time::Duration;
use tmux_mcp_core::paths::BrokerPaths;
use tmux_mcp_core::platform::process_table;
use tmux_mcp_core::server::ServerIdentity;
use tmux_mcp_core::sockets::{self, Candidate, Knock, KNOCK_TIMEOUT};
use tmux_mcp_core::sys;
use tmux_mcp_core::tmux::direct;

use crate::registry::Registry;

/// How long the read of another server may take (it is one small command).
pub const READ_TIMEOUT: Duration = Duration::from_millis(500);

/// The one hook-free read of a server: `version|ss…|%0 %1 …|@mcp-sockets`
/// (the option last: it is free text, and only the own server's is used).
/// No comma: a comma inside a loop's format separates its two branches.
pub const FORMAT: &str = "#{version}|#{S:s}|#{S:#{W:#{P:#{pane_id} }}}|#{@mcp-sockets}";

/// What one server is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// A tmux server owns the socket.
    Live,
    /// Nobody listens: a server died and left its socket file.
    Stale,
    /// A server holds the socket but took no connection within the knock's
    /// deadline (stopped, or overloaded).
    Busy,
}

/// What started a server, where its socket's name tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Starter {
    /// Claude Code's agent team (`claude-swarm-<pid>`): its leader's pid.
    pub claude_swarm_pid: u32,
    /// Whether that pid still runs, and started no later than the server
    /// (a later process with the reused pid is not the leader).
    pub running: bool,
}

/// One server as listed.
#[derive(Debug, Clone)]
pub struct Server {
    pub key: String,
    pub socket: PathBuf,
    pub state: State,
    pub version: Option<String>,
    pub sessions: Option<u64>,
    pub panes: Option<u64>,
    /// Why a live server's version and counts are absent.
    pub unread: Option<String>,
    /// A broker of this user's serves it.
    pub broker: bool,
    /// The server this broker serves (the agent's own).
    pub own: bool,
    pub started_by: Option<Starter>,
}

/// The listing, and what was passed over (a refused socket directory or
/// extra path), in words.
#[derive(Debug, Clone, Default)]
pub struct Survey {
    pub servers: Vec<Server>,
    pub passed_over: Vec<String>,
}

/// What [`FORMAT`] expanded to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Read {
    version: String,
    sessions: u64,
    panes: u64,
    extra_sockets: Vec<String>,
}

fn parse(text: &str) -> Option<Read> {
    let line = text.lines().next()?;
    let mut f = line.splitn(4, '|');
    let version = f.next()?.to_string();
    let sessions = f.next()?.len() as u64;
    let ids: std::collections::BTreeSet<&str> = f.next()?.split_whitespace().collect();
    let extra_sockets = f
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect();
    (!version.is_empty()).then_some(Read {
        version,
        sessions,
        panes: ids.len() as u64,
        extra_sockets,
    })
}

/// Every server this user may see: the socket directory's, then the extra
/// paths', then the own server if neither holds it. Each knocked on and read
/// at once (one task per server), so the call takes about its slowest read.
pub async fn survey(registry: &Registry, own: &ServerIdentity) -> Survey {
    let mut passed_over = Vec::new();
    let own_read = match registry.expand_format(FORMAT).await {
        Ok(text) => parse(&text).ok_or_else(|| format!("unexpected answer {text:?}")),
        Err(e) => Err(e.to_string()),
    };
    let mut candidates = match sockets::in_socket_dir() {
        Ok(c) => c,
        Err(why) => {
            passed_over.push(why);
            Vec::new()
        }
    };
    for path in own_read.iter().flat_map(|r| &r.extra_sockets) {
        match sockets::extra(path) {
            Ok(c) => candidates.push(c),
            Err(why) => passed_over.push(format!("@mcp-sockets {why}")),
        }
    }
    if !candidates
        .iter()
        .any(|c| same_file(&c.path, &own.socket_path))
    {
        let path = own.socket_path.clone();
        let key = path.display().to_string();
        candidates.push(Candidate { key, path });
    }
    dedupe(&mut candidates);
    let mut tasks = tokio::task::JoinSet::new();
    for (i, c) in candidates.into_iter().enumerate() {
        let own = own.clone();
        let own_read = own_read.clone();
        tasks.spawn(async move { (i, look(c, own, own_read).await) });
    }
    let mut found: Vec<(usize, Option<Server>)> = tasks.join_all().await;
    found.sort_by_key(|(i, _)| *i);
    Survey {
        servers: found.into_iter().filter_map(|(_, s)| s).collect(),
        passed_over,
    }
}

/// Whether `a` and `b` name the same file (the own server's path is
/// canonical; a candidate's may not be).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b || std::fs::canonicalize(a).is_ok_and(|a| a == b)
}

/// One entry per socket file: an extra path that is also in the socket
/// directory keeps the directory's name as its key.
fn dedupe(candidates: &mut Vec<Candidate>) {
    let mut seen: Vec<PathBuf> = Vec::new();
    candidates.retain(|c| {
        let real = std::fs::canonicalize(&c.path).unwrap_or_else(|_| c.path.clone());
        if seen.contains(&real) {
            return false;
        }
        seen.push(real);
        true
    });
}

/// One server: knocked on, then read; `None` for a server of another user.
async fn look(c: Candidate, own: ServerIdentity, own_read: Result<Read, String>) -> Option<Server> {
    let knock = sockets::knock(&c.path, KNOCK_TIMEOUT).await;
    let mut s = Server {
        started_by: None,
        key: c.key,
        socket: c.path,
        state: State::Stale,
        version: None,
        sessions: None,
        panes: None,
        unread: None,
        broker: false,
        own: false,
    };
    let id = match knock {
        Knock::Foreign => return None,
        Knock::Stale(_) => None,
        Knock::Busy => {
            s.state = State::Busy;
            s.unread = Some(format!(
                "it took no connection within {} ms (stopped or overloaded)",
                KNOCK_TIMEOUT.as_millis()
            ));
            None
        }
        Knock::Live(id) => Some(id),
    };
    s.started_by = starter(&s.socket, id.as_deref());
    let Some(id) = id else { return Some(s) };
    s.state = State::Live;
    // The same server instance the broker serves, not a later one on its
    // socket.
    s.own = id.generation == own.generation;
    let read = if s.own {
        s.broker = true;
        own_read
    } else {
        s.broker = broker_serves(&id.generation).await;
        read_other(&s.socket).await
    };
    match read {
        Ok(r) => {
            s.version = Some(r.version);
            s.sessions = Some(r.sessions);
            s.panes = Some(r.panes);
        }
        Err(why) => s.unread = Some(why),
    }
    Some(s)
}

/// Whether a broker listens for the server of `generation` in one of this
/// user's runtime directories (its socket is named from the generation).
async fn broker_serves(generation: &str) -> bool {
    for p in BrokerPaths::candidates(generation) {
        if sockets::listening(&p.socket, KNOCK_TIMEOUT).await {
            return true;
        }
    }
    false
}

/// [`FORMAT`] read from another server through the protocol client.
async fn read_other(socket: &Path) -> Result<Read, String> {
    match direct::run_async(socket, &["list-commands", "-F", FORMAT, "list-commands"], READ_TIMEOUT).await {
        Ok(out) if out.status == 0 => {
            let text = String::from_utf8_lossy(&out.stdout);
            parse(&text).ok_or_else(|| format!("unexpected answer {text:?}"))
        }
        Ok(out) => Err(format!(
            "list-commands failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(direct::DirectError::Version) => Err("it speaks another tmux client protocol (the tmux binary is not run against it: that could start a server)".into()),
        Err(direct::DirectError::Timeout(t)) => Err(format!("it did not answer within {} ms", t.as_millis())),
        Err(e) => Err(e.to_string()),
    }
}

/// What started the server on `socket`, where its name tells: a Claude Code
/// agent team's `claude-swarm-<pid>`.
fn starter(socket: &Path, server: Option<&ServerIdentity>) -> Option<Starter> {
    let name = socket.file_name()?.to_str()?;
    let pid = sockets::claude_swarm_pid(name)?;
    let started_before = match (server, process_table::stat(pid)) {
        (Some(s), Ok(st)) => st.start_ticks <= s.start_ticks,
        _ => true,
    };
    Some(Starter {
        claude_swarm_pid: pid,
        running: sys::pid_alive(pid) && started_before,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_counts_sessions_and_each_pane_once() {
        let r = parse("3.5a|ss|%0 %1 %1 %2 |/a/s /b/t\n").unwrap();
        assert_eq!(
            r,
            Read {
                version: "3.5a".into(),
                sessions: 2,
                panes: 3,
                extra_sockets: vec!["/a/s".into(), "/b/t".into()],
            }
        );
        let empty = parse("3.3a|||").unwrap();
        assert_eq!((empty.sessions, empty.panes), (0, 0));
        assert!(empty.extra_sockets.is_empty());
        assert_eq!(parse(""), None);
        assert_eq!(parse("|s|%0 |"), None, "no version: not a read");
    }
}
