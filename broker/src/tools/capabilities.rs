//! `tmux_capabilities`: what this broker is, which server it is bound to, which
//! tools this session may use, and the limits and guarantees it keeps.

use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::args::NoArgs;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::schemas::derived::{data_schema_of, input_of};
use crate::toolkit::seed::envelope;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use serde_json::Value;
use std::collections::BTreeMap;
use tmux_mcp_core::limits;
use tmux_mcp_engine::observe::HookCheck;

pub const SPEC: ToolSpec = ToolSpec::new(
    "tmux_capabilities",
    Annotations::read_only("tmux capabilities"),
    input_of::<NoArgs>,
    output_schema,
    |c| c.run(|session, _: NoArgs| call(session)),
)
.seed()
.description("Versions, generation, tools, limits; tool references: tmux://tool/{name}.")
.details("Describe this tmux-mcp broker: the bound tmux server (generation, pid, start time, version), the tools enabled for this session, limits, the process-identity backend, and how captures treat after-capture-pane hooks. Read-only; starts nothing.")
.sample(|_| json!({}));

crate::constant!(Local, "local");
crate::constant!(BoundedRows, "bounded_rows");
crate::constant!(Unknown, "unknown");

/// What `tmux_capabilities` answers (the output schema is derived from it).
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Capabilities {
    endpoint: Local,
    server_identity: ServerIdentity,
    enabled_tools: Vec<String>,
    /// The highest tool tier this session may use (attach --safety, @mcp-safety); tools named by --enable-tool are enabled whatever their tier.
    #[schemars(with = "crate::toolkit::schemas::wire_schemas::Tier")]
    safety: tmux_mcp_core::wire::Tier,
    /// The JSON Schema of `tmux_snapshot`'s `where` criteria.
    #[schemars(schema_with = "any_object")]
    criteria_schema: Value,
    /// Published limits, by name (counts, bytes, seconds).
    limits: BTreeMap<String, serde_json::Number>,
    owns_daemon: bool,
    resource_subscriptions: bool,
    observation: Observation,
    broker: BrokerInfo,
    process_identity: ProcessIdentityInfo,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ServerIdentity {
    #[schemars(regex(pattern = r"^[a-f0-9]{32}$"))]
    generation: String,
    pid: u32,
    start_time: u64,
    tmux_version: String,
    socket_path: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ProcessCursor {
    Conditional,
    Unsupported,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Observation {
    screen: BoundedRows,
    history_continuity: Unknown,
    process_cursor: ProcessCursor,
    requirements: Vec<String>,
    wait_conditions: Vec<String>,
    hook_check: String,
    /// `in_queue` (tmux >= 3.5: no gap between check and capture) or `preflight`.
    hook_check_mode: HookCheckMode,
    /// How attached clients are read: `format_loop` (tmux >= 3.5, the
    /// hook-free `#{L:…}` loop: `tmux_snapshot` client records, an exact
    /// `isAttended`) or `unavailable` (no client records; `isAttended` from the
    /// sessions' attached counts, control-mode clients included).
    clients: ClientsMode,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ClientsMode {
    FormatLoop,
    Unavailable,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum HookCheckMode {
    InQueue,
    Preflight,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BrokerInfo {
    pid: u32,
    #[schemars(with = "crate::toolkit::schemas::wire_schemas::Scope")]
    scope: tmux_mcp_core::wire::Scope,
    caller_pane: Option<String>,
    sessions_open: u64,
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProcessIdentityInfo {
    /// `linux-pidfd` or `darwin-kqueue`: the backend this build has.
    #[schemars(with = "crate::toolkit::schemas::wire_schemas::IdentityBackend")]
    backend: tmux_mcp_core::platform::IdentityBackend,
    available: bool,
    reason: Option<String>,
}

fn any_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "object" })
}

fn output_schema() -> Value {
    envelope::output_schema(data_schema_of::<Capabilities>())
}

async fn call(session: &Session) -> Result<ToolOutput, ToolOutput> {
    let broker = &session.broker;
    let snap = broker.registry.refresh().await.map_err(|e| {
        tracing::warn!("capabilities refresh failed: {e}");
        envelope::error("transport_error", "", Delivery::Observed)
    })?;
    let id = &broker.identity;
    let backend = &broker.registry.backend;
    let tracking_ok = backend.unavailable.is_none()
        && tmux_mcp_core::tmux::version_at_least(&snap.server.version, 3, 3);
    let check = HookCheck::for_version(&snap.server.version);
    let mut requirements = vec![
        "tmux >= 3.3",
        tmux_mcp_core::platform::IDENTITY_BACKEND.requirement(),
        "live pane process",
        "empty effective capture hook",
    ];
    if check == HookCheck::Preflight {
        requirements.push("stable capture-hook configuration on tmux < 3.5");
    }
    let limits = match limits::as_json(session.request_timeout_seconds) {
        Value::Object(m) => m
            .into_iter()
            .filter_map(|(k, v)| match v {
                Value::Number(n) => Some((k, n)),
                _ => None,
            })
            .collect(),
        _ => BTreeMap::new(),
    };
    let data = Capabilities {
        endpoint: Local,
        server_identity: ServerIdentity {
            generation: id.generation.clone(),
            pid: id.pid,
            start_time: id.start_time,
            tmux_version: snap.server.version.clone(),
            socket_path: id.socket_path.display().to_string(),
        },
        enabled_tools: super::enabled_in_catalog_order(&session.enabled).into_iter().map(String::from).collect(),
        safety: session.safety,
        criteria_schema: crate::toolkit::records::criteria::schema(),
        limits,
        owns_daemon: true,
        resource_subscriptions: true,
        observation: Observation {
            screen: BoundedRows,
            history_continuity: Unknown,
            process_cursor: if tracking_ok { ProcessCursor::Conditional } else { ProcessCursor::Unsupported },
            requirements: requirements.into_iter().map(String::from).collect(),
            wait_conditions: vec!["screen_contains".into(), "process_exit".into()],
            hook_check: match check {
                HookCheck::InQueue => "after-capture-pane is checked inside each capture's own tmux command queue (one if-shell -F per session linking the pane's window, the capture in its innermost branch): one round trip, no gap between check and capture",
                HookCheck::Preflight => "after-capture-pane is checked with show-hooks (global and every session linking the pane's window) immediately before each capture; on tmux < 3.5 (3.3a included) a hook set in the gap between that check and the capture cannot be excluded",
            }
            .into(),
            hook_check_mode: match check {
                HookCheck::InQueue => HookCheckMode::InQueue,
                HookCheck::Preflight => HookCheckMode::Preflight,
            },
            clients: if tmux_mcp_engine::clients::readable(&snap.server.version).is_ok() { ClientsMode::FormatLoop } else { ClientsMode::Unavailable },
        },
        broker: BrokerInfo { pid: std::process::id(), scope: session.scope, caller_pane: session.caller_pane.clone(), sessions_open: session.daemon.sessions_open() },
        process_identity: ProcessIdentityInfo { backend: tmux_mcp_core::platform::IDENTITY_BACKEND, available: backend.unavailable.is_none(), reason: backend.unavailable.as_ref().map(|e| e.to_string()) },
    };
    Ok(envelope::ok("tmux_capabilities", &data))
}
