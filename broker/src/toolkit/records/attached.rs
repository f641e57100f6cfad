//! The clients attached to the sessions a session may see, as the records
//! `get_server_info` and `tmux_snapshot` give them, read hook-free.

use crate::session::Session;
use schemars::JsonSchema;
use serde::Serialize;

/// The attached clients, or why they cannot be read hook-free.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Clients {
    pub available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Clients attached to a session this agent may see; absent when none
    /// (or unavailable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attached: Vec<ClientRecord>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientRecord {
    pub name: String,
    pub tty: String,
    pub pid: u32,
    pub termname: String,
    /// `null` when tmux reports no size (a control client that set none).
    pub width: Option<u32>,
    pub height: Option<u32>,
    #[schemars(regex(pattern = crate::toolkit::target::ids::SESSION_ID))]
    pub session_id: String,
    pub session_name: String,
    pub readonly: bool,
    pub control_mode: bool,
}

impl From<tmux_mcp_engine::clients::Client> for ClientRecord {
    fn from(c: tmux_mcp_engine::clients::Client) -> Self {
        ClientRecord {
            name: c.name,
            tty: c.tty,
            pid: c.pid,
            termname: c.termname,
            width: c.width,
            height: c.height,
            session_id: c.session_id,
            session_name: c.session_name,
            readonly: c.readonly,
            control_mode: c.control_mode,
        }
    }
}

/// The clients attached to a session `session` may see, read hook-free
/// (the `L:` format loop of tmux >= 3.5), or why they cannot be.
pub async fn clients(session: &Session, version: &str) -> Clients {
    match tmux_mcp_engine::clients::read(&session.broker.registry, version).await {
        Ok(all) => {
            let attached = all
                .into_iter()
                .filter(|c| session.sees_session(&c.session_id))
                .map(ClientRecord::from)
                .collect();
            Clients {
                available: true,
                unavailable_reason: None,
                attached,
            }
        }
        Err(tmux_mcp_engine::clients::Unavailable(why)) => Clients {
            available: false,
            unavailable_reason: Some(why),
            attached: Vec::new(),
        },
    }
}
