//! `tmux_snapshot` (seed family): one consistent, hook-free read of the server's
//! metadata, filtered locally, served as immutable pages.
//!
//! Entities: session, window, pane, window_link, client. Clients are read with
//! tmux's `L:` format loop (`clients`), from tmux 3.5; before that tmux reports
//! them only through `list-clients`, which runs the user's `after-list-clients`
//! hook, so there `client` has coverage `unavailable` and no records.
//! Criteria are the `libtmux-ruby.where` v1 language (`criteria`): field
//! predicates, relations, `and`/`or`/`not`. Records come from the panes the
//! session may see, cut to its scope, and a page cursor is readable only by a
//! session whose view covers the one that made it (`retention`).

use super::criteria::{self, Entity, Graph};
use super::envelope::{self, Delivery};
use super::{Family, ToolOutput, Annotations, Call, CallFuture, ToolSpec};
use crate::retention::Retained;
use crate::session::Session;
use crate::sys;
use serde_json::{json, Map, Value};

pub const SPEC: ToolSpec = ToolSpec {
    name: "tmux_snapshot",
    family: Family::Seed,
    description: "Read tmux metadata once (hook-free), filter it locally and page through the immutable result. Query form: entity (session|window|pane|window_link|client), optional criteria ({profile:\"libtmux-ruby.where\",version:1,entity,where}) and limit 1-200 (default 50). Page form: cursor only. Every record carries its entity reference with the server generation. client records (attached clients) need tmux >= 3.5; on older tmux their coverage is unavailable (reading them would run a user hook).",
    annotations: Annotations::read_only("tmux metadata snapshot", false),
    seed_annotations: None,
    opt_in: false,
    input_schema,
    output_schema,
    run,
};



fn input_schema() -> Value {
    json!({
        "type": "object",
        "oneOf": [
            {
                "type": "object",
                "additionalProperties": false,
                "required": ["entity"],
                "properties": {
                    "entity": { "enum": Entity::names() },
                    "criteria": criteria::envelope_schema(),
                    "limit": { "type": "integer", "minimum": 1, "maximum": 200 }
                }
            },
            {
                "type": "object",
                "additionalProperties": false,
                "required": ["cursor"],
                "properties": { "cursor": { "type": "string", "pattern": "^[a-f0-9]{32}:[0-9]{1,10}$", "maxLength": 43 } }
            }
        ]
    })
}

fn output_schema() -> Value {
    let kind_status = json!({ "enum": ["complete", "unavailable"] });
    envelope::output_schema(json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["capture_id", "server_identity", "entity", "items", "coverage", "interval", "truncated"],
        "properties": {
            "capture_id": { "type": "string", "pattern": "^[a-f0-9]{32}$" },
            "server_identity": {
                "type": "object",
                "additionalProperties": false,
                "required": ["generation", "pid", "start_time", "tmux_version"],
                "properties": {
                    "generation": { "type": "string" }, "pid": { "type": "integer" },
                    "start_time": { "type": "integer" }, "tmux_version": { "type": "string" }
                }
            },
            "entity": { "enum": Entity::names() },
            "items": {
                "type": "array",
                "maxItems": 200,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["kind", "fields", "ref"],
                    "properties": {
                        "kind": { "enum": Entity::names() },
                        "fields": { "type": "object" },
                        "ref": { "type": ["object", "null"] }
                    }
                }
            },
            "coverage": {
                "type": "object",
                "additionalProperties": false,
                "required": Entity::names(),
                "properties": { "session": kind_status, "window": kind_status, "pane": kind_status, "window_link": kind_status, "client": kind_status }
            },
            "interval": {
                "type": "object",
                "additionalProperties": false,
                "required": ["clock", "started", "finished", "reads"],
                "properties": { "clock": { "const": "monotonic_seconds" }, "started": { "type": "number" }, "finished": { "type": "number" }, "reads": { "type": "integer" } }
            },
            "truncated": { "type": "boolean" },
            "next_cursor": { "type": "string" }
        }
    }))
}

/// One page; `reads` is the number of tmux reads made for it (none for a
/// page of a retained result).
fn page(header: &Value, items: Vec<Value>, total: usize, key: &str, offset: usize, started: f64, reads: u32) -> Value {
    let end = offset + items.len();
    let mut data = header.clone();
    data["items"] = Value::Array(items);
    data["interval"] = json!({ "clock": "monotonic_seconds", "started": started, "finished": sys::monotonic_seconds(), "reads": reads });
    data["truncated"] = json!(end < total);
    if end < total {
        data["next_cursor"] = json!(format!("{key}:{end}"));
    }
    data
}

fn stale_cursor() -> ToolOutput {
    envelope::error("stale_cursor", "The cursor is unknown, expired, or outside its captured result.", Delivery::NotSent)
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move { call(c.session, &c.args).await })
}

pub async fn call(session: &Session, args: &Value) -> ToolOutput {
    let broker = &session.broker;
    let started = sys::monotonic_seconds();
    if let Some(cursor) = args.get("cursor").and_then(Value::as_str) {
        let (key, offset) = cursor.split_once(':').unwrap_or((cursor, "0"));
        let offset: usize = offset.parse().unwrap_or(0);
        // A page made under a view this session does not cover reads as unknown.
        let retained = broker.retained.get(key, &session.view());
        let Some(Retained::Pages(p)) = retained.as_deref() else { return stale_cursor() };
        if offset == 0 || offset >= p.records.len() {
            return stale_cursor();
        }
        let end = (offset + p.limit).min(p.records.len());
        return envelope::ok("tmux_snapshot", page(&p.header, p.slice(offset, end), p.records.len(), key, offset, started, 0));
    }
    let entity = args["entity"].as_str().and_then(Entity::parse).unwrap_or(Entity::Pane);
    let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(50) as usize;
    let filter = match criteria::compile(entity, args.get("criteria")) {
        Ok(f) => f,
        Err(why) => return envelope::error("invalid_filter", &format!("The operation could not establish its requested result. Invalid criteria: {why}."), Delivery::NotSent),
    };
    let snap = match broker.registry.refresh().await {
        Ok(s) => s,
        Err(e) => return envelope::error("transport_error", &format!("The operation could not establish its requested result. {e}"), Delivery::PossiblySent),
    };
    // The clients in a second read just after the table: a client attached to
    // a session that closed in between relates to no session record.
    let clients = crate::clients::read(&broker.registry, &snap.server.version).await;
    let reads = if clients.is_ok() { 2 } else { 1 };
    let clients_unavailable = clients.as_ref().err().map(|u| u.0.clone());
    let clients: Vec<_> = clients.as_deref().unwrap_or_default().iter().filter(|c| session.sees_session(&c.session_id)).cloned().collect();
    let visible: Vec<_> = session.visible(&snap).collect();
    let graph = Graph::build(visible.iter().map(|p| &**p), &clients, session.generation());
    let items: Vec<Value> = graph.select(entity, &filter).into_iter().map(|r| json!({ "kind": entity.as_str(), "fields": r.fields, "ref": r.reference })).collect();
    let mut coverage = Map::new();
    for e in criteria::ENTITIES {
        let complete = e != Entity::Client || reads == 2;
        coverage.insert(e.as_str().to_string(), json!(if complete { "complete" } else { "unavailable" }));
    }
    let key = sys::random_hex(16);
    let header = json!({
        "capture_id": sys::random_hex(16),
        "server_identity": { "generation": session.generation(), "pid": broker.identity.pid, "start_time": broker.identity.start_time, "tmux_version": snap.server.version },
        "entity": entity.as_str(),
        "coverage": coverage,
    });
    let total = items.len();
    let first = page(&header, items[..limit.min(total)].to_vec(), total, &key, 0, started, reads);
    if total > limit && broker.retained.insert(key, Retained::Pages(broker.retained.pages(&items, header, limit)), session.owner()).is_err() {
        return envelope::error("capacity", "The operation could not establish its requested result. The result exceeds the retention budget; narrow the criteria.", Delivery::Observed);
    }
    let mut out = envelope::ok("tmux_snapshot", first);
    out.text = format!("tmux_snapshot {}: {} record(s); structuredContent contains the result.", entity.as_str(), out.structured.as_ref().map_or(0, |s| s["data"]["items"].as_array().map_or(0, Vec::len)));
    if let (Entity::Client, Some(why)) = (entity, clients_unavailable) {
        out.text.push_str(&format!(" Client coverage is unavailable: {why}."));
    }
    out
}
