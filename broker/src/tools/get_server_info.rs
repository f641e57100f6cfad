//! `get_server_info` (libtmux family): the bound tmux server (version, socket,
//! pid, start time, generation), this agent's session (caller pane, scope),
//! the broker, and the attached clients where they can be read without firing
//! a hook (`clients`: the `L:` format loop of tmux >= 3.5). On an older tmux
//! the result says they are unavailable, and why.

use crate::session::Session;
use crate::toolkit::call::args::NoArgs;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::records::attached::{clients, Clients};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

pub const SPEC: ToolSpec = ToolSpec::new(
    "get_server_info",
    Annotations::read_only("Get server info"),
    input_of::<NoArgs>,
    schema_of::<Info>,
    |c| c.run(|session, _: NoArgs| call(session)),
)
.description("This server, the agent's pane and scope, broker, clients.")
.details("Describe the tmux server this broker is bound to (tmux version, socket path, server pid and start time, generation), this agent's session (the caller's pane and sessions, scope), the broker (pid, how it reaches tmux), and the clients attached to the sessions the agent may see (tmux >= 3.5; on older tmux they cannot be read without firing a hook and are reported unavailable). What is at its default is left out: scope (server), callerPaneId and callerSessionIds (outside tmux), clients.attached (none). Read-only; fires no tmux hook.")
.sample(|_| json!({}))
.ids_in_text();

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Info {
    generation: String,
    tmux_version: String,
    socket_path: String,
    server_pid: u32,
    /// Seconds since the epoch, as tmux reports it (`#{start_time}`).
    server_start_time: u64,
    /// Absent: server; session: only the sessions of the caller's pane.
    #[serde(
        default = "crate::toolkit::records::graph::server_scope",
        skip_serializing_if = "crate::toolkit::records::graph::is_server_scope"
    )]
    #[schemars(with = "crate::toolkit::schemas::wire_schemas::Scope")]
    scope: tmux_mcp_core::wire::Scope,
    /// The caller's own pane; absent when the agent runs outside tmux.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    caller_pane_id: Option<String>,
    /// The sessions the caller's pane is in; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(regex(pattern = crate::toolkit::target::ids::SESSION_ID)))]
    caller_session_ids: Vec<String>,
    broker: BrokerInfo,
    clients: Clients,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BrokerInfo {
    pid: u32,
    /// How the broker reaches tmux and reads the pane table.
    access: String,
    sessions_open: u64,
}

async fn call(session: &Session) -> Result<ToolOutput, ToolOutput> {
    let broker = &session.broker;
    let snap = broker.registry.refresh().await.map_err(|e| {
        ToolOutput::libtmux_error(format!(
            "Could not read the server from tmux: {e}. Nothing was changed."
        ))
    })?;
    let id = &broker.identity;
    let clients = clients(session, &snap.server.version).await;
    let info = Info {
        generation: id.generation.clone(),
        tmux_version: snap.server.version.clone(),
        socket_path: id.socket_path.display().to_string(),
        server_pid: id.pid,
        server_start_time: snap.server.start_time,
        scope: session.scope,
        caller_pane_id: session.caller_pane.clone(),
        caller_session_ids: session.caller_sessions.clone(),
        broker: BrokerInfo {
            pid: std::process::id(),
            access: broker.registry.access(),
            sessions_open: session.daemon.sessions_open(),
        },
        clients,
    };
    let text = format!(
        "tmux {} on {} (pid {}), generation {}; scope {:?}, caller pane {}; broker pid {}; clients: {}",
        info.tmux_version,
        info.socket_path,
        info.server_pid,
        info.generation,
        info.scope,
        info.caller_pane_id.as_deref().unwrap_or("none"),
        info.broker.pid,
        if info.clients.available { format!("{} attached", info.clients.attached.len()) } else { format!("unavailable ({})", info.clients.unavailable_reason.as_deref().unwrap_or_default()) },
    );
    Ok(ToolOutput::typed(&info, text))
}
