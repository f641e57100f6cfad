//! A call that names a server (issue 52). Every tool takes an optional
//! `server`: a key `list_servers` gives (a `-L` name in tmux's socket
//! directory, or a path of the option `@mcp-sockets`). Absent, or naming the
//! agent's own server, the call is served here exactly as without it. Naming
//! another server, the call is served by that server's own broker (started
//! the way `attach` starts one when the plugin is not loaded there), over the
//! agent's link to it ([`crate::peers`]): hook-freedom, generations, exact
//! captures and refusals hold there as here. What the agent may do there is
//! the stricter of its own tier and that server's `@mcp-safety`, read-only
//! when that is unset (`policy`); an agent scoped to its own sessions may
//! only continue a pane the person handed over there ([`within_reach`]). A
//! server that is gone, stale, another user's, or not one `list_servers`
//! would name is refused by name with nothing sent; nothing ever falls back
//! to another server.
//!
//! `server` is taken out of the arguments before the tool's own schema
//! checks them, so no tool declares it; `list_servers`' description says it
//! once for every tool (the budget of `tools/list`).

use crate::peers::{Failure, OpenError};
use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::confirm::Ask;
use crate::toolkit::call::hosts;
use crate::toolkit::call::output::ToolOutput;
use crate::toolkit::call::spec::{Family, ToolSpec};
use crate::toolkit::seed::envelope;
use crate::toolkit::target::qualified::{self, IdFields};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;
use tmux_mcp_core::server::ServerIdentity;
use tmux_mcp_core::sockets::{self, Knock, KNOCK_TIMEOUT};
use tmux_mcp_core::wire::{McpHello, Scope};

/// Longest `server` accepted (a socket path is far shorter).
pub const SERVER_MAX: usize = 1024;

/// Where a call goes.
pub enum Destination {
    Own,
    Other {
        key: String,
        identity: Box<ServerIdentity>,
    },
    /// Another machine, over ssh (`ssh:HOST`, `hosts`), with the options
    /// read when it was named (read once per call).
    Host {
        key: String,
        host: String,
        opts: hosts::HostOptions,
    },
}

/// Whose broker serves a forwarded call.
pub enum Via<'a> {
    /// A server of this machine, by its identity.
    Local(&'a ServerIdentity),
    /// Another machine, and the host options.
    Host(&'a str, &'a hosts::HostOptions),
    /// The agent's open link that the key named before (`Links::named`).
    Linked(std::sync::Arc<crate::peers::Link>),
}

/// What a call's `server` names.
#[derive(Debug, PartialEq)]
pub enum Named {
    /// No `server`: the agent's own server.
    Own,
    /// One server, by its key.
    One(String),
    /// Several servers (a listing across servers): these keys, or every
    /// server `list_servers` would list (`"*"`, `None`).
    Many(Option<Vec<String>>),
    /// The Python toolset's `socket_name` naming another server.
    Socket(String),
}

/// Most keys one listing may name.
pub const MANY_MAX: usize = 32;

/// Takes `server` out of `args`; `Err` names the field and its rule.
pub fn take_server(args: &mut Value) -> Result<Named, String> {
    let Some(v) = args.as_object_mut().and_then(|m| m.remove("server")) else {
        return Ok(Named::Own);
    };
    let key = |v: &Value| match v {
        Value::String(s)
            if (1..=SERVER_MAX).contains(&s.chars().count())
                && !s.chars().any(char::is_control) =>
        {
            Some(s.clone())
        }
        _ => None,
    };
    let rule = format!("argument /server: must be the key of a server as list_servers gives it (a string of 1 to {SERVER_MAX} characters, no control character), or for a listing \"*\" or a list of 1 to {MANY_MAX} keys");
    match &v {
        Value::String(s) if s == "*" => Ok(Named::Many(None)),
        Value::Array(a) if (1..=MANY_MAX).contains(&a.len()) => {
            let mut keys: Vec<String> = a.iter().map(key).collect::<Option<_>>().ok_or(rule)?;
            keys.dedup();
            Ok(Named::Many(Some(keys)))
        }
        _ => key(&v).map(Named::One).ok_or(rule),
    }
}

/// `server` as a tool's published input schema declares it, where that
/// schema is closed (the Python toolset: tmux-python/libtmux-mcp's shape
/// refuses unknown arguments, so a client that checks arguments itself
/// would refuse an undeclared `server`): the rule [`take_server`] holds.
pub fn server_schema(across: bool) -> Value {
    let one = json!({"type": "string", "minLength": 1, "maxLength": SERVER_MAX});
    match across {
        false => json!({
            "description": "Another tmux server to serve this call: a list_servers key.",
            "type": "string", "minLength": 1, "maxLength": SERVER_MAX,
        }),
        true => json!({
            "description": "Another tmux server to serve this call: a list_servers key; \"*\" or a list of keys for several.",
            "anyOf": [one, {"type": "array", "items": one, "minItems": 1, "maxItems": MANY_MAX}],
        }),
    }
}

/// The Python toolset's spelling of a server: tmux-python/libtmux-mcp's
/// `socket_name` (a `-L` name, which is a `list_servers` key) naming another
/// server than this one sends the call there, as `server` would; that
/// server's broker then checks the name against its own socket.
pub fn python_socket(session: &Session, args: &Value, named: Named) -> Named {
    let socket_name = args.get("socket_name").and_then(Value::as_str);
    match (named, socket_name) {
        (Named::Own, Some(name))
            if session.toolset == tmux_mcp_core::wire::Toolset::Python
                && Some(name)
                    != session
                        .broker
                        .identity
                        .socket_path
                        .file_name()
                        .and_then(|n| n.to_str()) =>
        {
            Named::Socket(name.to_string())
        }
        (named, _) => named,
    }
}

/// The keys of every server `list_servers` would list (its socket
/// directory's, `@mcp-sockets`', the own server), for `server: "*"`; found
/// without a knock (each is knocked on when called).
pub async fn every_key(session: &Session) -> Vec<String> {
    let mut keys: Vec<String> = sockets::in_socket_dir()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.key)
        .collect();
    keys.extend(extra_sockets(session).await);
    keys.extend(
        hosts::options(session)
            .await
            .hosts
            .into_iter()
            .map(|h| format!("{}{h}", hosts::PREFIX)),
    );
    let own = own_key(session);
    if !keys.contains(&own) {
        keys.push(own);
    }
    keys.dedup();
    keys
}

/// The key `list_servers` gives the agent's own server: its name in tmux's
/// socket directory, else its path.
pub fn own_key(session: &Session) -> String {
    sockets::key_of(&session.broker.identity.socket_path)
}

/// One result per server of a listing across servers: `{servers: [{server,
/// result} | {server, error}]}`, in the order the keys were named. The own
/// server's ids are qualified here (the others' came qualified), so no bare
/// id stands beside another server's.
pub fn gather(t: &'static ToolSpec, outs: Vec<(String, ToolOutput)>) -> ToolOutput {
    let mut entries = Vec::new();
    let mut texts = Vec::new();
    for (key, out) in outs {
        // The own server's answer has bare ids; another's came qualified
        // (nothing left to qualify) and with its `[server KEY]` prefix.
        let mut structured = out.structured;
        let ids = match structured.as_mut() {
            Some(s) if !out.is_error => id_fields(t).output.qualify(s, &key),
            _ => Vec::new(),
        };
        let mut text = out.text;
        if !text.starts_with("[server ") {
            if t.ids_in_text {
                text = qualified::qualify_text(&text, &ids, &key);
            }
            text = format!("[server {key}] {text}");
        }
        match (out.is_error, structured) {
            (false, Some(s)) => entries.push(json!({"server": key, "result": s})),
            _ => entries.push(json!({"server": key, "error": text})),
        }
        texts.push(text);
    }
    ToolOutput {
        structured: Some(json!({ "servers": entries })),
        text: texts.join("\n\n"),
        is_error: false,
        refusal: None,
    }
}

/// A listing's output schema as published when it reads several servers:
/// its own result, or one entry per server.
pub fn across_schema(one: Value) -> Value {
    let mut one = one;
    let defs = one
        .as_object_mut()
        .and_then(|m| m.remove("$defs"))
        .unwrap_or_else(|| json!({}));
    let dialect = one.as_object_mut().and_then(|m| m.remove("$schema"));
    let mut defs = match defs {
        Value::Object(m) => m,
        _ => Default::default(),
    };
    defs.insert("OneServer".into(), one);
    let mut schema = json!({
        "type": "object",
        "anyOf": [
            {"$ref": "#/$defs/OneServer"},
            {"type": "object", "required": ["servers"], "additionalProperties": false,
             "properties": {"servers": {"type": "array", "items": {
                "type": "object", "required": ["server"], "additionalProperties": false,
                "properties": {
                    "server": {"type": "string"},
                    "result": {"$ref": "#/$defs/OneServer"},
                    "error": {"type": "string"}}}}}}
        ],
        "$defs": defs,
    });
    if let Some(d) = dialect {
        schema["$schema"] = d;
    }
    schema
}

/// Whether the option that lets `key` in names it now: `@mcp-hosts` for a
/// host, `@mcp-sockets` for a path other than the own socket (one hook-free
/// read; a `-L` name needs none). `Err` is that option's name; a host's
/// options come back for its link.
async fn let_in(session: &Session, key: &str) -> Result<Option<hosts::HostOptions>, &'static str> {
    if let Some(host) = hosts::host_of(key) {
        let opts = hosts::options(session).await;
        return match opts.hosts.iter().any(|h| h == host) {
            true => Ok(Some(opts)),
            false => Err("@mcp-hosts"),
        };
    }
    let own = Path::new(key) == session.broker.identity.socket_path;
    if key.starts_with('/') && !own && !extra_sockets(session).await.iter().any(|p| p == key) {
        return Err("@mcp-sockets");
    }
    Ok(None)
}

/// For a key the agent reached before: whether the option that let it in
/// still names it ([`let_in`]). A key taken out of the option is refused
/// from the next call on, its link let go.
pub async fn still_named(session: &Session, key: &str) -> Result<(), String> {
    let_in(session, key).await.map(drop).map_err(|option| {
        session.other_servers.forget(key);
        format!("server {key:?} is not a key list_servers gives any more: it was taken out of the option {option}")
    })
}

/// The server `key` names, knocked on (no tmux command runs); `Err` says why
/// it cannot be called.
pub async fn destination(session: &Session, key: &str) -> Result<Destination, String> {
    let own = &session.broker.identity;
    let opts = let_in(session, key).await.map_err(|option| {
        let what = match hosts::host_of(key) {
            Some(host) => format!("host {host:?} is not in the option {option}"),
            None => format!("a path must be one of the option {option}"),
        };
        format!("server {key:?} is not a key list_servers gives: {what}")
    })?;
    if let (Some(host), Some(opts)) = (hosts::host_of(key), opts) {
        if !hosts::plain_host(host) {
            return Err(format!("server {key:?}: not a plain ssh destination"));
        }
        return Ok(Destination::Host {
            key: key.to_string(),
            host: host.to_string(),
            opts,
        });
    }
    let candidate = if key.starts_with('/') {
        if Path::new(key) == own.socket_path {
            return Ok(Destination::Own);
        }
        sockets::extra(key).map_err(|why| format!("server {why}"))?
    } else {
        sockets::named(key).map_err(|why| format!("server {key:?}: {why}"))?
    };
    match sockets::knock(&candidate.path, KNOCK_TIMEOUT).await {
        Knock::Live(id) if id.generation == own.generation => Ok(Destination::Own),
        Knock::Live(identity) => Ok(Destination::Other {
            key: key.to_string(),
            identity,
        }),
        Knock::Stale(why) => Err(format!(
            "server {key:?} is stale: no tmux server listens on {} ({why})",
            candidate.path.display()
        )),
        Knock::Busy => Err(format!(
            "server {key:?} took no connection within {} ms (stopped or overloaded)",
            KNOCK_TIMEOUT.as_millis()
        )),
        Knock::Foreign => Err(format!("server {key:?} is another user's")),
    }
}

/// The paths of the own server's `@mcp-sockets`, read now (a change needs no
/// restart).
async fn extra_sockets(session: &Session) -> Vec<String> {
    session
        .broker
        .registry
        .expand_format("#{@mcp-sockets}")
        .await
        .map(|t| t.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// A refusal of `t`'s family, with nothing sent: the seed family's
/// `policy_denied` (what the agent may not do).
pub fn refuse(t: &ToolSpec, why: &str) -> ToolOutput {
    failed(t, "policy_denied", why, Delivery::NotSent)
}

/// A server that cannot be reached (gone, stale, no broker), nothing sent:
/// the seed family's `transport_error`.
pub fn unreachable(t: &ToolSpec, why: &str) -> ToolOutput {
    failed(t, "transport_error", why, Delivery::NotSent)
}

fn failed(t: &ToolSpec, code: &str, why: &str, delivery: Delivery) -> ToolOutput {
    let said = match delivery {
        Delivery::NotSent => format!("{why}. Nothing was sent to tmux."),
        _ => why.to_string(),
    };
    match t.family {
        Family::Seed => t.answer(envelope::error(code, &said, delivery)),
        Family::Libtmux => ToolOutput::libtmux_error(said),
    }
}

/// The arguments of a call naming the own server by `key`: its qualified
/// ids taken back, another server's refused.
pub fn unqualify_own(t: &'static ToolSpec, key: &str, args: &mut Value) -> Result<(), ToolOutput> {
    id_fields(t)
        .input
        .unqualify(args, key)
        .map_err(|why| refuse(t, &why))
}

/// A call without `server` that carries another server's qualified id:
/// refused, naming the server to add.
pub fn check_unqualified(t: &'static ToolSpec, args: &mut Value) -> Result<(), ToolOutput> {
    // Every call passes here: one without a `:` in any string (nearly all)
    // holds no qualified id, and does not take the id table's lock.
    if !has_colon(args) {
        return Ok(());
    }
    id_fields(t)
        .input
        .refuse_qualified(args)
        .map_err(|why| refuse(t, &why))
}

/// Whether any string in `v` holds a `:`.
fn has_colon(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(':'),
        Value::Array(a) => a.iter().any(has_colon),
        Value::Object(m) => m.values().any(has_colon),
        _ => false,
    }
}

/// Where a tool's input and (libtmux family) output hold ids.
struct ToolIds {
    input: IdFields,
    output: IdFields,
}

/// [`ToolIds`] of `t`, read from its schemas once (every call checks its
/// input's).
fn id_fields(t: &'static ToolSpec) -> &'static ToolIds {
    type ById = std::sync::Mutex<HashMap<usize, &'static ToolIds>>;
    static IDS: OnceLock<ById> = OnceLock::new();
    let mut ids = IDS.get_or_init(Default::default).lock().unwrap();
    ids.entry(std::ptr::from_ref(t) as usize)
        .or_insert_with(|| {
            let output = match t.family {
                Family::Libtmux => IdFields::of(
                    &qualified::qualifiable((t.output_schema)()),
                    &qualified::QUALIFIABLE,
                ),
                Family::Seed => IdFields::default(),
            };
            Box::leak(Box::new(ToolIds {
                input: IdFields::of_input(&t.full_input_schema()),
                output,
            }))
        })
}

/// Serves `t` with `args` on another server, through its broker; a question
/// that broker asks the person goes out as this call asks (`ask`).
pub async fn forward(
    session: &Session,
    t: &'static ToolSpec,
    key: &str,
    via: Via<'_>,
    mut args: Value,
    ask: Ask,
) -> ToolOutput {
    if session.via.is_some() {
        return refuse(
            t,
            &format!(
                "server {key:?} cannot be reached from a call that another server's broker made"
            ),
        );
    }
    if let Err(refused) = within_reach(session, t, key, &args) {
        return refused;
    }
    if let Err(why) = id_fields(t).input.unqualify(&mut args, key) {
        return refuse(t, &why);
    }
    let link = match via {
        Via::Linked(l) => Ok(l),
        Via::Local(identity) => link(session, identity, hello(session)).await,
        Via::Host(host, opts) => hosts::link(session, key, host, opts)
            .await
            .map_err(|e| e.to_string()),
    };
    let link = match link {
        Ok(l) => l,
        Err(why) => return unreachable(t, &format!("server {key:?}: {why}")),
    };
    session.other_servers.name(key, &link);
    // The other broker holds its waits to its own request timeout; this one
    // waits a little longer for the answer.
    let wait = Duration::from_secs_f64(session.request_timeout_seconds.max(1.0) + 10.0);
    let params = json!({"name": t.name, "arguments": args});
    match link.call_tool(key, params, wait, ask).await {
        Ok(result) => {
            if hosts::host_of(key).is_some() {
                session.other_servers.answered(key);
            }
            answer(t, key, result)
        }
        Err(Failure::NotSent(why)) => unreachable(t, &format!("server {key:?}: {why}")),
        Err(Failure::Refused(why)) => refuse(t, &format!("server {key:?} refused the call: {why}")),
        Err(Failure::Lost(why)) => lost(t, key, &why),
    }
}

/// The tools that continue a cursor of the person's hand-off (with
/// `cursor`): all a session-scoped agent may call on another server.
const HANDOFF_TOOLS: &[&str] = &["capture_since", "tmux_capture"];

/// Whether a call of `t` with `args` continues a cursor, as a hand-off is
/// continued: all an agent kept to what the person hands over may do on a
/// server not its own.
pub fn continues_handoff(t: &ToolSpec, args: &Value) -> bool {
    HANDOFF_TOOLS.contains(&t.name) && args.get("cursor").is_some_and(Value::is_string)
}

/// Whether this agent may call `t` with `args` on server `key`. Scope
/// `session` is the agent's own sessions on its own server: another server
/// is out of its reach, except a pane the person handed over there (the key
/// binding's line names the server): a read that continues a cursor. Its
/// link says scope `Session` ([`hello`]), and that broker then gives it no
/// pane and read-only tools, so the cursor must be a hand-off's: nothing
/// else of that server is readable through it.
fn within_reach(
    session: &Session,
    t: &ToolSpec,
    key: &str,
    args: &Value,
) -> Result<(), ToolOutput> {
    if session.scope != Scope::Session {
        return Ok(());
    }
    let local = hosts::host_of(key).is_none();
    if local && continues_handoff(t, args) {
        return Ok(());
    }
    let except = if local {
        " but for a pane the person hands over there (prefix + A, then the call its line names)"
    } else {
        ""
    };
    Err(refuse(t, &format!("this agent may see only its own sessions on its own server (scope session, the default inside tmux), so server {key:?} is out of its reach{except}; attach with --scope server to reach other servers")))
}

/// The hello of the agent's session on another server's broker: its
/// tier, toolset and opt-in tools, its scope (the whole server, or for a
/// session-scoped agent no session there: [`within_reach`]), and where it
/// comes from (`via`).
fn hello(session: &Session) -> McpHello {
    let (scope, safety) = match session.scope {
        Scope::Session => (Scope::Session, tmux_mcp_core::wire::Tier::Readonly),
        Scope::Server => (Scope::Server, session.safety),
    };
    McpHello {
        client_name: format!(
            "{} (agent of {})",
            session.client_name,
            session.broker.identity.socket_path.display()
        ),
        enable_tools: session.enabled.iter().cloned().collect(),
        scope: Some(scope),
        safety: Some(safety),
        toolset: Some(session.toolset),
        confirm: session.confirm,
        via: Some(session.broker.identity.socket_path.display().to_string()),
        ..Default::default()
    }
}

/// The agent's link to the broker of `identity`, that broker found or
/// started first. A broker that has just died, or has just started, may take
/// no connection for a moment: it is found (or started) again, a few times
/// (only a hello has been tried; no tool call has left).
async fn link(
    session: &Session,
    identity: &ServerIdentity,
    hello: McpHello,
) -> Result<std::sync::Arc<crate::peers::Link>, String> {
    let mut tries = 0;
    loop {
        let sock = tmux_mcp_core::brokers::ensure_async(identity)
            .await
            .map_err(|why| format!("no broker: {why}"))?;
        match session
            .other_servers
            .get(&identity.generation, &sock, hello.clone())
            .await
        {
            Ok(l) => return Ok(l),
            Err(OpenError::Connect(_)) if tries < 5 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The other broker's result as this tool's, its ids qualified.
fn answer(t: &'static ToolSpec, key: &str, mut result: Value) -> ToolOutput {
    // Taken out of the answer, not copied: a capture's text is most of it.
    let mut text = format!("[server {key}] ");
    for (i, c) in result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(s) = c["text"].as_str() {
            if i > 0 {
                text.push('\n');
            }
            text.push_str(s);
        }
    }
    let mut structured = result.get_mut("structuredContent").map(Value::take);
    let ids = match structured.as_mut() {
        Some(s) => id_fields(t).output.qualify(s, key),
        None => Vec::new(),
    };
    if t.ids_in_text && !ids.is_empty() {
        text = qualified::qualify_text(&text, &ids, key);
    }
    ToolOutput {
        structured,
        text,
        is_error: result["isError"].as_bool().unwrap_or(false),
        refusal: None,
    }
}

/// A call the link lost while it was out: it may have reached tmux there,
/// and it is not retried.
fn lost(t: &ToolSpec, key: &str, why: &str) -> ToolOutput {
    let text = format!("The call to server {key:?} may have reached tmux there: {why}. It was not retried; read the server's state before acting again.");
    failed(t, "transport_error", &text, Delivery::PossiblySent)
}

#[cfg(test)]
mod tests {
    use crate::toolkit::call::spec::{Family, Toolset};
    use serde_json::Value;

    /// Every field of a libtmux-family output that names a pane, window or
    /// session by id (`id`, `…Id`, `…Ids`) publishes an id pattern, so a
    /// result from another server has each of them qualified; a field that
    /// names something else by id is said here.
    #[test]
    fn every_id_field_of_the_libtmux_family_is_qualifiable() {
        // Ids of what is not a tmux pane, window or session.
        const OTHER_IDS: &[&str] = &["jobId", "clientId"];
        fn walk(tool: &str, path: &str, v: &Value, bad: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    for (name, sub) in m
                        .get("properties")
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                    {
                        let named = name == "id" || name.ends_with("Id") || name.ends_with("Ids");
                        let patterned = sub.to_string().contains("\"pattern\":\"^(?:.+:)?");
                        if named && !patterned && !OTHER_IDS.contains(&name.as_str()) {
                            bad.push(format!("{tool} {path}/{name}"));
                        }
                    }
                    for (k, sub) in m {
                        walk(tool, &format!("{path}/{k}"), sub, bad);
                    }
                }
                Value::Array(a) => a.iter().for_each(|s| walk(tool, path, s, bad)),
                _ => {}
            }
        }
        let mut bad = Vec::new();
        for set in [Toolset::Default, Toolset::Python] {
            for t in crate::tools::catalog(set).filter(|t| t.family == Family::Libtmux) {
                let out = t.published_output_schema();
                // The contracts keep their bare patterns (spec B.7).
                if out.to_string().contains("\"^%\\\\d+$\"") {
                    continue;
                }
                walk(t.name, "", &out, &mut bad);
            }
        }
        bad.sort();
        bad.dedup();
        assert!(
            bad.is_empty(),
            "id fields without an id pattern:\n{}",
            bad.join("\n")
        );
    }
}
