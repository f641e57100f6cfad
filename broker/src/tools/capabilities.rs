//! `tmux_capabilities`: what this broker is, which server it is bound to, which
//! tools this session may use, and the limits and guarantees it keeps.

use super::envelope::{self, Delivery};
use super::{Family, ToolOutput, Annotations, Call, CallFuture, ToolSpec};
use crate::limits;
use crate::observe::HookCheck;
use crate::session::Session;
use serde_json::{json, Value};

pub const SPEC: ToolSpec = ToolSpec {
    name: "tmux_capabilities",
    family: Family::Seed,
    description: "Describe this tmux-mcp broker: the bound tmux server (generation, pid, start time, version), the tools enabled for this session, limits, the process-identity backend, and how captures treat after-capture-pane hooks. Read-only; starts nothing.",
    annotations: Annotations::read_only("tmux capabilities", true),
    seed_annotations: None,
    opt_in: false,
    input_schema,
    output_schema,
    run,
};


fn input_schema() -> Value {
    json!({ "type": "object", "additionalProperties": false, "properties": {} })
}

fn output_schema() -> Value {
    let int = json!({ "type": "integer", "minimum": 0 });
    envelope::output_schema(json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["endpoint", "server_identity", "enabled_tools", "safety", "criteria_schema", "limits", "owns_daemon", "resource_subscriptions", "observation", "broker", "process_identity"],
        "properties": {
            "endpoint": { "type": "string" },
            "server_identity": {
                "type": "object",
                "additionalProperties": false,
                "required": ["generation", "pid", "start_time", "tmux_version", "socket_path"],
                "properties": {
                    "generation": { "type": "string", "pattern": "^[a-f0-9]{32}$" },
                    "pid": int, "start_time": int,
                    "tmux_version": { "type": "string" },
                    "socket_path": { "type": "string" }
                }
            },
            "enabled_tools": { "type": "array", "items": { "type": "string" } },
            "safety": { "enum": ["readonly", "mutating", "destructive"], "description": "The highest tool tier this session may use (attach --safety, @mcp-safety); tools named by --enable-tool are enabled whatever their tier." },
            "criteria_schema": { "type": "object" },
            "limits": { "type": "object", "additionalProperties": { "type": "number", "minimum": 0 } },
            "owns_daemon": { "type": "boolean" },
            "resource_subscriptions": { "type": "boolean" },
            "observation": {
                "type": "object",
                "additionalProperties": false,
                "required": ["screen", "history_continuity", "process_cursor", "requirements", "wait_conditions", "hook_check", "hook_check_mode"],
                "properties": {
                    "screen": { "const": "bounded_rows" },
                    "history_continuity": { "const": "unknown" },
                    "process_cursor": { "enum": ["conditional", "unsupported"] },
                    "requirements": { "type": "array", "items": { "type": "string" } },
                    "wait_conditions": { "type": "array", "items": { "type": "string" } },
                    "hook_check": { "type": "string" },
                    "hook_check_mode": { "enum": ["in_queue", "preflight"], "description": "in_queue (tmux >= 3.5): the after-capture-pane check runs inside the capture's own tmux command queue, one round trip, no gap before the capture. preflight (older tmux): show-hooks right before the capture; a hook set in between cannot be excluded." }
                }
            },
            "broker": {
                "type": "object",
                "additionalProperties": false,
                "required": ["pid", "scope", "caller_pane", "sessions_open"],
                "properties": {
                    "pid": int,
                    "scope": { "enum": ["session", "server"] },
                    "caller_pane": { "type": ["string", "null"] },
                    "sessions_open": int
                }
            },
            "process_identity": {
                "type": "object",
                "additionalProperties": false,
                "required": ["backend", "available", "reason"],
                "properties": {
                    "backend": { "const": "linux-pidfd" },
                    "available": { "type": "boolean" },
                    "reason": { "type": ["string", "null"] }
                }
            }
        }
    }))
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move { call(c.session).await })
}

pub async fn call(session: &Session) -> ToolOutput {
    let broker = &session.broker;
    let snap = match broker.registry.refresh().await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("capabilities refresh failed: {e}");
            return envelope::error("transport_error", "The operation could not establish its requested result.", Delivery::Observed);
        }
    };
    let id = &broker.identity;
    let backend = &broker.registry.backend;
    let tracking_ok = backend.unavailable.is_none() && crate::tmux::version_at_least(&snap.server.version, 3, 3);
    let check = HookCheck::for_version(&snap.server.version);
    let mut requirements = vec![
        "tmux >= 3.3",
        "Linux pidfd backend: broker, tmux server and pane process in one PID namespace",
        "live pane process",
        "empty effective capture hook",
    ];
    if check == HookCheck::Preflight {
        requirements.push("stable capture-hook configuration on tmux < 3.5");
    }
    let data = json!({
        "endpoint": "local",
        "server_identity": {
            "generation": id.generation,
            "pid": id.pid,
            "start_time": id.start_time,
            "tmux_version": snap.server.version,
            "socket_path": id.socket_path.display().to_string(),
        },
        "enabled_tools": super::enabled_in_catalog_order(&session.enabled),
        "safety": session.safety.as_str(),
        "criteria_schema": super::criteria::schema(),
        "limits": limits::as_json(broker.request_timeout_seconds),
        "owns_daemon": true,
        "resource_subscriptions": true,
        "observation": {
            "screen": "bounded_rows",
            "history_continuity": "unknown",
            "process_cursor": if tracking_ok { "conditional" } else { "unsupported" },
            "requirements": requirements,
            "wait_conditions": ["screen_contains", "process_exit"],
            "hook_check": match check {
                HookCheck::InQueue => "after-capture-pane is checked inside each capture's own tmux command queue (one if-shell -F per session linking the pane's window, the capture in its innermost branch): one round trip, no gap between check and capture",
                HookCheck::Preflight => "after-capture-pane is checked with show-hooks (global and every session linking the pane's window) immediately before each capture; on tmux < 3.5 (3.3a included) a hook set in the gap between that check and the capture cannot be excluded",
            },
            "hook_check_mode": check.as_str(),
        },
        "broker": {
            "pid": std::process::id(),
            "scope": match session.scope { crate::wire::Scope::Session => "session", crate::wire::Scope::Server => "server" },
            "caller_pane": session.caller_pane,
            "sessions_open": broker.sessions_open(),
        },
        "process_identity": {
            "backend": "linux-pidfd",
            "available": backend.unavailable.is_none(),
            "reason": backend.unavailable.as_ref().map(|e| e.to_string()),
        }
    });
    envelope::ok("tmux_capabilities", data)
}
