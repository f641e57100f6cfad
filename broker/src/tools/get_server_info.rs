//! `get_server_info` (libtmux family): the bound tmux server (version, socket,
//! pid, start time, generation), this agent's session (caller pane, scope),
//! the broker, and the attached clients where they can be read without firing
//! a hook: `list-clients` runs `after-list-clients`, so clients are read by
//! format expansion with the `L:` client loop, which tmux has from 3.5 on. On
//! an older tmux the result says they are unavailable, and why.

use super::typed::schema_of;
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::feed::{field, RS, US};
use crate::session::Session;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};

pub const SPEC: ToolSpec = ToolSpec {
    name: "get_server_info",
    family: Family::Libtmux,
    description: "Describe the tmux server this broker is bound to (tmux version, socket path, server pid and start time, generation), this agent's session (the caller's pane and sessions, scope), the broker (pid, how it reaches tmux), and the clients attached to the sessions the agent may see (tmux >= 3.5; on older tmux they cannot be read without firing a hook and are reported unavailable). Read-only; fires no tmux hook.",
    annotations: Annotations::read_only("Get server info", true),
    seed_annotations: None,
    opt_in: false,
    input_schema,
    output_schema: schema_of::<Info>,
    run,
};

fn input_schema() -> Value {
    json!({ "type": "object", "additionalProperties": false, "properties": {} })
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Info {
    generation: String,
    tmux_version: String,
    socket_path: String,
    server_pid: u32,
    /// Seconds since the epoch, as tmux reports it (`#{start_time}`).
    server_start_time: u64,
    scope: crate::wire::Scope,
    #[schemars(regex(pattern = r"^%[0-9]+$"))]
    caller_pane_id: Option<String>,
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

/// The attached clients, or why they cannot be read hook-free.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Clients {
    available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    unavailable_reason: Option<String>,
    /// Clients attached to a session this agent may see (empty when unavailable).
    attached: Vec<ClientRecord>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClientRecord {
    name: String,
    tty: String,
    pid: u32,
    termname: String,
    /// `null` when tmux reports no size (a control client that set none).
    width: Option<u32>,
    height: Option<u32>,
    #[schemars(regex(pattern = r"^\$[0-9]+$"))]
    session_id: String,
    session_name: String,
    readonly: bool,
    control_mode: bool,
}

/// Per-client fields of the `L:` loop, in order; `true` marks free text.
const CLIENT_FIELDS: &[(&str, bool)] = &[
    ("client_name", true),
    ("client_tty", true),
    ("client_pid", false),
    ("client_termname", true),
    ("client_width", false),
    ("client_height", false),
    ("session_id", false),
    ("client_session", true),
    ("client_readonly", false),
    ("client_control_mode", false),
];

/// Only clients attached to a session are expanded (`#{?client_session,…,}`):
/// tmux 3.5a dereferences a NULL name, tty or terminal of a client that is still
/// connecting (a command client mid-handshake, e.g. another agent's read) and
/// the server crashes; 3.7c does not. Measured: 3 of 3 unguarded runs of 400
/// expansions beside 400 connecting clients killed a 3.5a server, 0 guarded.
fn clients_format() -> String {
    let row: Vec<String> = CLIENT_FIELDS.iter().map(|(f, t)| field(f, *t)).collect();
    format!("#{{L:#{{?client_session,{}{RS},}}}}", row.join(&US.to_string()))
}

pub(super) use crate::feed::unvis_separators;

/// The rows `clients_format` expanded to; command clients (no session, like
/// the broker's own connection) are not attached and left out.
fn parse_clients(text: &str) -> Result<Vec<ClientRecord>, String> {
    let mut out = Vec::new();
    for rec in text.strip_suffix('\n').unwrap_or(text).split(RS).filter(|r| !r.is_empty()) {
        let f: Vec<&str> = rec.split(US).collect();
        if f.len() != CLIENT_FIELDS.len() {
            return Err(format!("a client row has {} fields, expected {}", f.len(), CLIENT_FIELDS.len()));
        }
        if f[6].is_empty() {
            continue;
        }
        let num = |i: usize| f[i].parse::<u32>().map_err(|_| format!("client field {} is not a number: {:?}", CLIENT_FIELDS[i].0, f[i]));
        out.push(ClientRecord {
            name: f[0].to_string(),
            tty: f[1].to_string(),
            pid: num(2)?,
            termname: f[3].to_string(),
            width: if f[4].is_empty() { None } else { Some(num(4)?) },
            height: if f[5].is_empty() { None } else { Some(num(5)?) },
            session_id: f[6].to_string(),
            session_name: f[7].to_string(),
            readonly: f[8] == "1",
            control_mode: f[9] == "1",
        });
    }
    Ok(out)
}

async fn clients(session: &Session, version: &str) -> Clients {
    let unavailable = |why: String| Clients { available: false, unavailable_reason: Some(why), attached: Vec::new() };
    if !crate::tmux::version_at_least(version, 3, 5) {
        return unavailable(format!(
            "tmux {version} has no client loop in formats (L:, tmux >= 3.5), and list-clients would run the after-list-clients hook; tmux-mcp does not guess"
        ));
    }
    let expanded = session.broker.registry.expand_format(&clients_format()).await;
    match expanded.map_err(|e| e.to_string()).and_then(|t| parse_clients(&unvis_separators(version, &t))) {
        Ok(mut all) => {
            all.retain(|c| session.scope == crate::wire::Scope::Server || session.caller_sessions.contains(&c.session_id));
            Clients { available: true, unavailable_reason: None, attached: all }
        }
        Err(e) => unavailable(format!("reading the clients failed: {e}")),
    }
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move {
        let session = c.session;
        let broker = &session.broker;
        let snap = match broker.registry.refresh().await {
            Ok(s) => s,
            Err(e) => return ToolOutput::libtmux_error(format!("Could not read the server from tmux: {e}. Nothing was changed.")),
        };
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
            broker: BrokerInfo { pid: std::process::id(), access: broker.registry.access(), sessions_open: broker.sessions_open() },
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
        ToolOutput::typed(&info, text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_rows_parse_and_command_clients_are_left_out() {
        let row = |sid: &str| ["/dev/pts/4", "/dev/pts/4", "77", "xterm", "80", "24", sid, "main", "0", "1"].join(&US.to_string());
        let text = format!("{}{RS}{}{RS}\n", row("$0"), row(""));
        let c = parse_clients(&text).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].pid, c[0].session_id.as_str(), c[0].control_mode, c[0].readonly), (77, "$0", true, false));
        assert!(parse_clients(&format!("a{US}b{RS}")).is_err());
        assert!(clients_format().starts_with("#{L:#{?client_session,#{s/"), "{}", clients_format());
        let escaped = format!("{}{RS}", row("$1")).replace(US, "\\037").replace(RS, "\\036");
        assert_eq!(parse_clients(&unvis_separators("3.5a", &escaped)).unwrap().len(), 1);
        assert!(parse_clients(&unvis_separators("3.7c", &escaped)).is_err(), "3.6+ prints the bytes as they are");
    }
}
