//! `list_servers` (read-only, on by default): every tmux server this user's
//! agent may see, each keyed by the name to call it by, with its socket,
//! state (a stale socket is `stale`, never an empty server), tmux version,
//! session and pane counts, whether a broker serves it, what started it where
//! its name tells (`claude-swarm-<pid>`), and which one is the agent's own.
//! Found and read by the engine's `servers` (hook-free, starting no tmux);
//! this module only shapes the lean record. Later steps of issue 52 name a
//! server by its `key` and add remote hosts (`host`).

use crate::session::Session;
use crate::toolkit::call::args::NoArgs;
use crate::toolkit::call::hosts;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeSet;
use tmux_mcp_core::wire::Scope;
use tmux_mcp_engine::servers::{self, State};

pub const SPEC: ToolSpec = ToolSpec::new(
    "list_servers",
    Annotations::read_only("List tmux servers"),
    input_of::<NoArgs>,
    schema_of::<Listing>,
    |c| c.run(|session, _: NoArgs| call(session)),
)
.description("All tmux servers; pass a key as any tool's `server` (listings: *).")
.details("List every tmux server this user's agent may see: the sockets in tmux's socket directory (${TMUX_TMPDIR:-/tmp}/tmux-UID, used only while it is this user's and private; a symlink is never followed, another user's socket never listed), the extra socket paths in the option @mcp-sockets (absolute paths separated by spaces) and the agent's own server. Each record: key (the -L name, or the path for an extra socket), socket, state (live; stale: a socket file no server listens on, never an empty server; busy: a server that took no connection within 100 ms), version, sessions and panes (a window linked into two sessions counts its panes once), unread (why a live server's version and counts are missing), broker (a broker serves it), own (the server this agent's broker serves; for a session-scoped agent its counts are those of its own sessions), startedBy (claude-swarm-PID: a Claude Code agent team of that pid, and whether it still runs). Absent host: this machine. Every tool takes an optional `server`, a key from here: the call is served by that server's own broker (started if none runs), read-only there unless that server's @mcp-safety says more (then the stricter of both), and the pane, window and session ids of its libtmux-family results come back qualified as KEY:ID (work:%3), which the tools take back with the same `server`; a stale or unknown server is refused with nothing sent. list_panes, list_sessions, search_panes and list_agents also take `server: \"*\"` (every server listed here) or a list of keys: one entry per server, {server, result} or {server, error}, each server's ids qualified by its key (the own server's too). Found by connecting to each socket, read with one list-commands through tmux's client protocol: starts no tmux, fires no tmux hook.")
.sample(|_| json!({}));

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Listing {
    servers: Vec<Listed>,
    /// A socket directory or extra path not used, and why; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<String>,
}

/// One server; what is at its default is left out.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Listed {
    /// The -L name, the socket's path for an extra socket, or ssh:HOST.
    key: String,
    /// Absent for a host that did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    socket: Option<String>,
    /// Absent: this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host: Option<String>,
    state: ListedState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sessions: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    panes: Option<u64>,
    /// Why version and counts are missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    unread: Option<String>,
    /// Absent: no broker serves it.
    #[serde(default, skip_serializing_if = "is_false")]
    broker: bool,
    /// The server this agent's broker serves; absent on the others.
    #[serde(default, skip_serializing_if = "is_false")]
    own: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    started_by: Option<StartedBy>,
    /// Why a host is offline or refused this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// When a host last answered this agent (seconds since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_answered: Option<u64>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ListedState {
    Live,
    Stale,
    Busy,
    // A host ssh could not reach (or whose relay did not start); one that
    // refused the key, or whose host key did not match (plain comments:
    // schemars makes a documented variant a oneOf branch of its own).
    Offline,
    AuthFailed,
}

/// A Claude Code agent team's server (`claude-swarm-PID`).
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StartedBy {
    /// `Claude Code agent team`.
    what: &'static str,
    pid: u32,
    /// The pid still runs (and started before the server).
    running: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

async fn call(session: &Session) -> Result<ToolOutput, ToolOutput> {
    let broker = &session.broker;
    let survey = servers::survey(&broker.registry, &broker.identity).await;
    let mut listed: Vec<Listed> = survey.servers.into_iter().map(listed).collect();
    if session.scope == Scope::Session {
        if let Some(own) = listed.iter_mut().find(|l| l.own) {
            cut_to_scope(session, own).await?;
        }
    }
    // Another machine's broker reaching this one for its agent does not
    // reach on to this one's hosts.
    if session.via.is_none() {
        listed.extend(hosts::survey(session).await.into_iter().map(host));
    }
    let mut lines = vec![format!("{} server(s)", listed.len())];
    lines.extend(listed.iter().map(text));
    lines.extend(survey.passed_over.iter().map(|s| format!("skipped: {s}")));
    Ok(ToolOutput::typed(
        &Listing {
            servers: listed,
            skipped: survey.passed_over,
        },
        lines.join("\n"),
    ))
}

/// A session-scoped agent's own server counted as it sees it: its sessions
/// and their panes only, as `list_sessions` counts them (session scope cuts
/// every record to the caller's sessions). Other servers are listed as they
/// are: no content of theirs is read.
async fn cut_to_scope(session: &Session, own: &mut Listed) -> Result<(), ToolOutput> {
    let snap = session.broker.registry.refresh().await.map_err(|e| {
        ToolOutput::libtmux_error(format!(
            "Could not read the server from tmux: {e}. Nothing was changed."
        ))
    })?;
    let visible: Vec<_> = session.visible(&snap).collect();
    let sessions: BTreeSet<&str> = visible
        .iter()
        .flat_map(|p| p.placements.iter().map(|pl| pl.session_id.as_str()))
        .collect();
    own.sessions = Some(sessions.len() as u64);
    own.panes = Some(visible.len() as u64);
    Ok(())
}

/// A host of `@mcp-hosts` as listed: live (the remote's own server's version
/// and counts), offline or auth_failed (the reason, and when it last
/// answered): never an empty server.
fn host(h: hosts::HostRecord) -> Listed {
    Listed {
        key: h.key,
        socket: h.socket,
        host: Some(h.host),
        state: match h.state {
            hosts::HostState::Live => ListedState::Live,
            hosts::HostState::Offline => ListedState::Offline,
            hosts::HostState::AuthFailed => ListedState::AuthFailed,
        },
        version: h.version,
        sessions: h.sessions,
        panes: h.panes,
        unread: None,
        broker: false,
        own: false,
        started_by: None,
        reason: h.reason,
        last_answered: h.last_answered,
    }
}

fn listed(s: servers::Server) -> Listed {
    Listed {
        reason: None,
        last_answered: None,
        key: s.key,
        socket: Some(s.socket.display().to_string()),
        host: None,
        state: match s.state {
            State::Live => ListedState::Live,
            State::Stale => ListedState::Stale,
            State::Busy => ListedState::Busy,
        },
        version: s.version,
        sessions: s.sessions,
        panes: s.panes,
        unread: s.unread,
        broker: s.broker,
        own: s.own,
        started_by: s.started_by.map(|st| StartedBy {
            what: "Claude Code agent team",
            pid: st.claude_swarm_pid,
            running: st.running,
        }),
    }
}

/// `work live tmux 3.5a, 2 session(s), 5 pane(s), broker [own] /tmp/tmux-1000/work`.
fn text(l: &Listed) -> String {
    let mut t = format!(
        "{} {}",
        l.key,
        match l.state {
            ListedState::Live => "live",
            ListedState::Stale => "stale (no server listens)",
            ListedState::Busy => "busy",
            ListedState::Offline => "offline",
            ListedState::AuthFailed => "auth_failed",
        }
    );
    if let Some(why) = &l.reason {
        t.push_str(&format!(" ({why})"));
    }
    if let Some(at) = l.last_answered {
        t.push_str(&format!(", last answered at {at} (epoch s)"));
    }
    if let (Some(v), Some(s), Some(p)) = (&l.version, l.sessions, l.panes) {
        t.push_str(&format!(" tmux {v}, {s} session(s), {p} pane(s)"));
    }
    if let Some(why) = &l.unread {
        t.push_str(&format!(" (unread: {why})"));
    }
    if l.broker {
        t.push_str(", broker");
    }
    if l.own {
        t.push_str(" [own]");
    }
    if let Some(st) = &l.started_by {
        let runs = if st.running { "running" } else { "gone" };
        t.push_str(&format!("; {} of pid {} ({runs})", st.what, st.pid));
    }
    if let Some(sock) = &l.socket {
        t.push_str(&format!(" {sock}"));
    }
    t
}
