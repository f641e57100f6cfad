//! Other machines over SSH (issue 52 item 4). The person names hosts in the
//! own server's option `@mcp-hosts` (ssh destinations, as `ssh` takes them:
//! `devbox`, `me@build1`, a `Host` of `~/.ssh/config`); each is a server
//! keyed `ssh:HOST` (the remote's default tmux server, or whichever its
//! relay picks). A call naming it goes through one persistent `ssh -T -o
//! BatchMode=yes HOST tmux-mcp attach …` per agent and host
//! ([`crate::peers::Link::over_ssh`]), opened on the first call and reused:
//! OpenSSH decides users, keys, `ProxyJump` and `ControlMaster` from the
//! person's configuration; nothing listens here and nothing is forwarded.
//! `@mcp-ssh-command` replaces `ssh` (words separated by spaces, e.g. `ssh
//! -F ~/.ssh/agents.conf`), `@mcp-remote-attach` the remote command
//! (default `tmux-mcp attach`). The remote relay is told the agent's tier
//! and that it comes from elsewhere (`--via`), so the remote server gives it
//! the stricter of that tier and its own `@mcp-safety`, read-only while that
//! is unset, as a local server would.

use crate::peers::{Link, OpenError, OPEN_TIMEOUT};
use crate::session::Session;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tmux_mcp_core::tmux::shell_quote;

/// The prefix of a host's key.
pub const PREFIX: &str = "ssh:";

/// The own server's host options, read at each call (a change needs no
/// restart).
pub struct HostOptions {
    pub hosts: Vec<String>,
    pub ssh: Vec<String>,
    pub remote: String,
}

/// Reads `@mcp-hosts`, `@mcp-ssh-command` and `@mcp-remote-attach` (one
/// hook-free read).
pub async fn options(session: &Session) -> HostOptions {
    let text = session
        .broker
        .registry
        .expand_format("#{@mcp-hosts}\t#{@mcp-ssh-command}\t#{@mcp-remote-attach}")
        .await
        .unwrap_or_default();
    let mut f = text.trim_end_matches('\n').split('\t');
    let words = |s: Option<&str>| -> Vec<String> {
        s.unwrap_or_default()
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let hosts = words(f.next());
    let ssh = match words(f.next()) {
        w if w.is_empty() => vec!["ssh".to_string()],
        w => w,
    };
    let remote = match f.next().map(str::trim).unwrap_or_default() {
        "" => "tmux-mcp attach".to_string(),
        r => r.to_string(),
    };
    HostOptions { hosts, ssh, remote }
}

/// The host a key names (`ssh:HOST`), if it is a host key.
pub fn host_of(key: &str) -> Option<&str> {
    key.strip_prefix(PREFIX)
}

/// A host destination may not start like an ssh option, nor hold a space or
/// a control character (it is one argument of `ssh`).
pub fn plain_host(host: &str) -> bool {
    !host.is_empty()
        && !host.starts_with('-')
        && !host.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The remote command: the relay, told the agent's tier and toolset and
/// where it comes from.
fn remote_command(session: &Session, opts: &HostOptions) -> String {
    let mut cmd = format!(
        "{} --scope server --safety {} --toolset {} --via {}",
        opts.remote,
        session.safety.as_str(),
        session.toolset.as_str(),
        shell_quote(&session.broker.identity.socket_path.display().to_string()),
    );
    if session.confirm {
        cmd.push_str(" --confirm");
    }
    cmd
}

/// The agent's link to host `key`, opened over ssh when there is none.
pub async fn link(
    session: &Session,
    key: &str,
    host: &str,
    opts: &HostOptions,
) -> Result<Arc<Link>, OpenError> {
    let remote = remote_command(session, opts);
    let own = session.broker.identity.generation.clone();
    session
        .other_servers
        .host(key, || async {
            let open = async {
                let link = Link::over_ssh(&opts.ssh, host, &remote).await?;
                not_this_server(&link, &own).await?;
                Ok(link)
            };
            tokio::time::timeout(OPEN_TIMEOUT, open)
                .await
                .unwrap_or_else(|_| {
                    Err(OpenError::Offline(format!(
                        "no answer within {} s",
                        OPEN_TIMEOUT.as_secs()
                    )))
                })
        })
        .await
}

/// A host whose relay reaches this very server (ssh to this machine, the
/// remote command naming this server's socket) is refused: there the agent
/// would be nobody's caller, and its own pane unguarded. The server instance
/// is told by its generation (`get_server_info`), once per link.
async fn not_this_server(link: &Link, own: &str) -> Result<(), OpenError> {
    let params = json!({"name": "get_server_info", "arguments": {}});
    let info = link
        .request("tools/call", params, Duration::from_secs(10))
        .await
        .map_err(|f| {
            OpenError::Offline(format!("the remote server did not say who it is: {f:?}"))
        })?;
    match info["structuredContent"]["generation"].as_str() {
        Some(g) if g == own => Err(OpenError::Other(
            "it is this agent's own tmux server (the same generation): call it without server"
                .into(),
        )),
        _ => Ok(()),
    }
}

/// Whether a host answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostState {
    Live,
    /// ssh could not reach it, or its relay did not start.
    Offline,
    /// It refused the key, or its host key did not match.
    AuthFailed,
}

/// A host as `list_servers` lists it.
pub struct HostRecord {
    pub key: String,
    pub host: String,
    pub state: HostState,
    /// The remote server's socket, when it answered.
    pub socket: Option<String>,
    pub version: Option<String>,
    pub sessions: Option<u64>,
    pub panes: Option<u64>,
    /// Why it is offline or refused.
    pub reason: Option<String>,
    /// When it last answered this agent (seconds since the epoch).
    pub last_answered: Option<u64>,
}

/// Every host of `@mcp-hosts`, reached (or not) at once: the remote
/// `list_servers`' own record gives its version and counts.
pub async fn survey(session: &Session) -> Vec<HostRecord> {
    let opts = options(session).await;
    let looks = opts.hosts.iter().map(|h| look(session, h, &opts));
    futures::future::join_all(looks).await
}

async fn look(session: &Session, host: &str, opts: &HostOptions) -> HostRecord {
    let key = format!("{PREFIX}{host}");
    let mut r = HostRecord {
        key: key.clone(),
        host: host.to_string(),
        state: HostState::Offline,
        socket: None,
        version: None,
        sessions: None,
        panes: None,
        reason: None,
        last_answered: None,
    };
    let answer = match plain_host(host) {
        false => Err(OpenError::Other(
            "not a plain ssh destination (a leading -, a space or a control character)".into(),
        )),
        true => match link(session, &key, host, opts).await {
            Ok(l) => {
                let params = json!({"name": "list_servers", "arguments": {}});
                l.request("tools/call", params, Duration::from_secs(10))
                    .await
                    .map_err(|f| OpenError::Offline(format!("{f:?}")))
            }
            Err(e) => Err(e),
        },
    };
    match answer {
        Ok(result) => {
            session.other_servers.answered(&key);
            r.state = HostState::Live;
            let own = own_record(&result);
            r.socket = own["socket"].as_str().map(String::from);
            r.version = own["version"].as_str().map(String::from);
            r.sessions = own["sessions"].as_u64();
            r.panes = own["panes"].as_u64();
        }
        Err(e) => {
            session.other_servers.failed(&key, &e);
            if matches!(e, OpenError::AuthFailed(_)) {
                r.state = HostState::AuthFailed;
            }
            r.reason = Some(match e {
                OpenError::Offline(w) | OpenError::AuthFailed(w) => w,
                other => other.to_string(),
            });
        }
    }
    r.last_answered = session
        .other_servers
        .seen(&key)
        .last_answer
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs());
    r
}

/// The record a remote `list_servers` marks `own`.
fn own_record(result: &Value) -> Value {
    result["structuredContent"]["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["own"] == json!(true))
        .cloned()
        .unwrap_or(Value::Null)
}
