//! `tmux_snapshot` (seed family): one consistent, hook-free read of the server's
//! metadata, filtered locally, served as immutable pages.
//!
//! Entities: session, window, pane, window_link. `client` is listed with coverage
//! `unavailable`: tmux only reports clients through `list-clients`, which runs the
//! user's `after-list-clients` hook, and the broker reads nothing that way.
//! Criteria follow the `libtmux-ruby.where` v1 envelope with field predicates
//! and `and`/`or`/`not`; relation predicates are refused with `invalid_filter`.

use super::envelope::{self, Delivery};
use super::{Family, ToolOutput, ToolSpec};
use crate::registry::{numeric_id, Snapshot};
use crate::retention::{Pages, Retained};
use crate::session::Session;
use crate::sys;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

pub const SPEC: ToolSpec = ToolSpec {
    name: "tmux_snapshot",
    family: Family::Seed,
    default_enabled: true,
    description: "Read tmux metadata once (hook-free), filter it locally and page through the immutable result. Query form: entity (session|window|pane|window_link|client), optional criteria ({profile:\"libtmux-ruby.where\",version:1,entity,where}) and limit 1-200 (default 50). Page form: cursor only. Every record carries its entity reference with the server generation. client records are unavailable (reading them would run a user hook).",
    annotations,
    input_schema,
    output_schema,
};

const ENTITIES: &[&str] = &["session", "window", "pane", "window_link", "client"];
const MAX_DEPTH: usize = 32;
const MAX_NODES: usize = 2048;

fn annotations() -> Value {
    json!({ "title": "tmux metadata snapshot", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false })
}

pub fn criteria_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["profile", "version", "entity", "where"],
        "properties": {
            "profile": { "const": "libtmux-ruby.where" },
            "version": { "const": 1 },
            "entity": { "enum": ENTITIES },
            "where": { "type": "object" }
        }
    })
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "oneOf": [
            {
                "type": "object",
                "additionalProperties": false,
                "required": ["entity"],
                "properties": {
                    "entity": { "enum": ENTITIES },
                    "criteria": criteria_schema(),
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
            "entity": { "enum": ENTITIES },
            "items": {
                "type": "array",
                "maxItems": 200,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["kind", "fields", "ref"],
                    "properties": {
                        "kind": { "enum": ENTITIES },
                        "fields": { "type": "object" },
                        "ref": { "type": ["object", "null"] }
                    }
                }
            },
            "coverage": {
                "type": "object",
                "additionalProperties": false,
                "required": ENTITIES,
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

/// Field types, for operator checks: 'i' integer, 't' text, 'b' boolean.
fn field_types(entity: &str) -> &'static [(&'static str, char)] {
    match entity {
        "session" => &[("id", 't'), ("name", 't'), ("created", 'i'), ("attached", 'i'), ("windowCount", 'i')],
        "window" => &[("id", 't'), ("name", 't'), ("width", 'i'), ("height", 'i'), ("paneCount", 'i'), ("layout", 't')],
        "pane" => &[
            ("id", 't'), ("windowId", 't'), ("index", 'i'), ("pid", 'i'), ("currentCommand", 't'), ("currentPath", 't'), ("title", 't'),
            ("active", 'b'), ("dead", 'b'), ("deadStatus", 'i'), ("width", 'i'), ("height", 'i'),
        ],
        "window_link" => &[("sessionId", 't'), ("windowId", 't'), ("index", 'i'), ("active", 'b')],
        _ => &[],
    }
}

const RELATIONS: &[&str] = &["windows", "windowLinks", "panes", "currentWindow", "activePane", "window", "session"];

/// A checked filter.
#[derive(Debug)]
enum Filter {
    All(Vec<Filter>),
    Any(Vec<Filter>),
    Not(Box<Filter>),
    Field { name: String, ops: Vec<(String, Value)> },
}

fn compile(entity: &str, criteria: Option<&Value>) -> Result<Filter, String> {
    let Some(c) = criteria else { return Ok(Filter::All(vec![])) };
    if c["entity"] != entity {
        return Err(format!("criteria describe {} but the query is for {entity}", c["entity"]));
    }
    let mut nodes = 0;
    compile_where(entity, &c["where"], 0, &mut nodes)
}

fn compile_where(entity: &str, w: &Value, depth: usize, nodes: &mut usize) -> Result<Filter, String> {
    *nodes += 1;
    if depth > MAX_DEPTH || *nodes > MAX_NODES {
        return Err(format!("criteria exceed depth {MAX_DEPTH} or {MAX_NODES} nodes"));
    }
    let obj = w.as_object().ok_or("a where clause must be an object")?;
    let mut all = Vec::new();
    for (k, v) in obj {
        match k.as_str() {
            "and" | "or" => {
                let items = v.as_array().ok_or(format!("{k} takes an array of where clauses"))?;
                let compiled = items.iter().map(|i| compile_where(entity, i, depth + 1, nodes)).collect::<Result<Vec<_>, _>>()?;
                all.push(if k == "and" { Filter::All(compiled) } else { Filter::Any(compiled) });
            }
            "not" => all.push(Filter::Not(Box::new(compile_where(entity, v, depth + 1, nodes)?))),
            name if RELATIONS.contains(&name) => return Err(format!("relation predicate {name} is not supported by this broker")),
            name => {
                let ty = field_types(entity).iter().find(|(f, _)| *f == name).map(|(_, t)| *t).ok_or(format!("{entity} has no field {name}"))?;
                let ops: Vec<(String, Value)> = match v {
                    Value::Object(m) => m.iter().map(|(o, x)| (o.clone(), x.clone())).collect(),
                    lit => vec![("equals".into(), lit.clone())],
                };
                for (op, arg) in &ops {
                    let ok = match op.as_str() {
                        "equals" | "not" => true,
                        "in" => arg.as_array().is_some_and(|a| a.len() <= 1024),
                        "lt" | "lte" | "gt" | "gte" => ty == 'i' && arg.is_i64(),
                        "contains" | "startsWith" | "endsWith" => ty == 't' && arg.is_string(),
                        _ => false,
                    };
                    if !ok {
                        return Err(format!("operator {op} is not valid for field {name} (or its argument has the wrong type)"));
                    }
                }
                all.push(Filter::Field { name: name.to_string(), ops });
            }
        }
    }
    Ok(Filter::All(all))
}

fn matches(f: &Filter, fields: &Value) -> bool {
    match f {
        Filter::All(fs) => fs.iter().all(|f| matches(f, fields)),
        Filter::Any(fs) => fs.iter().any(|f| matches(f, fields)),
        Filter::Not(f) => !matches(f, fields),
        Filter::Field { name, ops } => {
            let v = &fields[name.as_str()];
            ops.iter().all(|(op, arg)| match op.as_str() {
                "equals" => v == arg,
                "not" => v != arg,
                "in" => arg.as_array().is_some_and(|a| a.contains(v)),
                "lt" => v.as_i64().zip(arg.as_i64()).is_some_and(|(a, b)| a < b),
                "lte" => v.as_i64().zip(arg.as_i64()).is_some_and(|(a, b)| a <= b),
                "gt" => v.as_i64().zip(arg.as_i64()).is_some_and(|(a, b)| a > b),
                "gte" => v.as_i64().zip(arg.as_i64()).is_some_and(|(a, b)| a >= b),
                "contains" => v.as_str().zip(arg.as_str()).is_some_and(|(a, b)| a.contains(b)),
                "startsWith" => v.as_str().zip(arg.as_str()).is_some_and(|(a, b)| a.starts_with(b)),
                "endsWith" => v.as_str().zip(arg.as_str()).is_some_and(|(a, b)| a.ends_with(b)),
                _ => false,
            })
        }
    }
}

/// Every record of `entity` visible to the session, in the documented order.
fn records(session: &Session, snap: &Snapshot, entity: &str) -> Vec<(Value, Value)> {
    let gen = session.generation();
    let panes: Vec<_> = session.visible(snap).collect();
    let mut out: BTreeMap<(u64, i64, u64), (Value, Value)> = BTreeMap::new();
    for p in &panes {
        match entity {
            "pane" => {
                let fields = json!({
                    "id": p.id, "windowId": p.window_id, "index": p.index, "pid": p.pid, "currentCommand": p.command,
                    "currentPath": if p.cwd.is_empty() { Value::Null } else { json!(p.cwd) }, "title": p.title,
                    "active": p.active, "dead": p.dead, "deadStatus": p.dead_status, "width": p.width, "height": p.height,
                });
                out.insert((numeric_id(&p.id), 0, 0), (fields, json!({ "kind": "pane", "id": p.id, "generation": gen })));
            }
            "window" => {
                let fields = json!({ "id": p.window_id, "name": p.window_name, "width": p.window_width, "height": p.window_height, "paneCount": p.window_panes, "layout": p.window_layout });
                out.insert((numeric_id(&p.window_id), 0, 0), (fields, json!({ "kind": "window", "id": p.window_id, "generation": gen })));
            }
            "session" => {
                for pl in &p.placements {
                    let fields = json!({ "id": pl.session_id, "name": pl.session_name, "created": pl.session_created, "attached": pl.session_attached, "windowCount": pl.session_windows });
                    out.insert((numeric_id(&pl.session_id), 0, 0), (fields, json!({ "kind": "session", "id": pl.session_id, "generation": gen })));
                }
            }
            "window_link" => {
                for pl in &p.placements {
                    let fields = json!({ "sessionId": pl.session_id, "windowId": p.window_id, "index": pl.window_index, "active": pl.window_active });
                    let r = json!({ "kind": "window_link", "id": p.window_id, "generation": gen, "session_id": pl.session_id, "index": pl.window_index });
                    out.insert((numeric_id(&pl.session_id), pl.window_index, numeric_id(&p.window_id)), (fields, r));
                }
            }
            _ => {}
        }
    }
    out.into_values().collect()
}

fn page(header: &Value, records: &[Value], key: &str, offset: usize, limit: usize, started: f64) -> Value {
    let end = (offset + limit).min(records.len());
    let mut data = header.clone();
    data["items"] = json!(records[offset..end]);
    data["interval"] = json!({ "clock": "monotonic_seconds", "started": started, "finished": sys::monotonic_seconds(), "reads": if offset == 0 { 1 } else { 0 } });
    data["truncated"] = json!(end < records.len());
    if end < records.len() {
        data["next_cursor"] = json!(format!("{key}:{end}"));
    }
    data
}

pub async fn call(session: &Session, args: &Value) -> ToolOutput {
    let broker = &session.broker;
    let started = sys::monotonic_seconds();
    if let Some(cursor) = args.get("cursor").and_then(Value::as_str) {
        let (key, offset) = cursor.split_once(':').unwrap_or((cursor, "0"));
        let offset: usize = offset.parse().unwrap_or(0);
        let retained = broker.retained.get(key);
        let Some(Retained::Pages(p)) = retained.as_deref() else {
            return envelope::error("stale_cursor", "The cursor is unknown, expired, or outside its captured result.", Delivery::NotSent);
        };
        if offset == 0 || offset >= p.records.len() {
            return envelope::error("stale_cursor", "The cursor is unknown, expired, or outside its captured result.", Delivery::NotSent);
        }
        return envelope::ok("tmux_snapshot", page(&p.header, &p.records, key, offset, p.limit, started));
    }
    let entity = args["entity"].as_str().unwrap_or_default();
    let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(50) as usize;
    let filter = match compile(entity, args.get("criteria")) {
        Ok(f) => f,
        Err(why) => return envelope::error("invalid_filter", &format!("The operation could not establish its requested result. Invalid criteria: {why}."), Delivery::NotSent),
    };
    let snap = match broker.registry.refresh().await {
        Ok(s) => s,
        Err(e) => return envelope::error("transport_error", &format!("The operation could not establish its requested result. {e}"), Delivery::PossiblySent),
    };
    let items: Vec<Value> = records(session, &snap, entity)
        .into_iter()
        .filter(|(fields, _)| matches(&filter, fields))
        .map(|(fields, r)| json!({ "kind": entity, "fields": fields, "ref": r }))
        .collect();
    let mut coverage = Map::new();
    for k in ENTITIES {
        coverage.insert(k.to_string(), json!(if *k == "client" { "unavailable" } else { "complete" }));
    }
    let key = sys::random_hex(16);
    let header = json!({
        "capture_id": sys::random_hex(16),
        "server_identity": { "generation": session.generation(), "pid": broker.identity.pid, "start_time": broker.identity.start_time, "tmux_version": snap.server.version },
        "entity": entity,
        "coverage": coverage,
    });
    let first = page(&header, &items, &key, 0, limit, started);
    if items.len() > limit && broker.retained.insert(key, Retained::Pages(Pages { records: items, header, limit })).is_err() {
        return envelope::error("capacity", "The operation could not establish its requested result. The result exceeds the retention budget; narrow the criteria.", Delivery::Observed);
    }
    let mut out = envelope::ok("tmux_snapshot", first);
    out.text = format!("tmux_snapshot {entity}: {} record(s); structuredContent contains the result.", out.structured.as_ref().map_or(0, |s| s["data"]["items"].as_array().map_or(0, Vec::len)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criteria_compile_and_match() {
        let c = json!({ "profile": "libtmux-ruby.where", "version": 1, "entity": "pane", "where": { "dead": false, "width": { "gte": 80 }, "or": [ { "currentCommand": { "startsWith": "vi" } }, { "title": { "contains": "log" } } ] } });
        let f = compile("pane", Some(&c)).unwrap();
        assert!(matches(&f, &json!({ "dead": false, "width": 100, "currentCommand": "vim", "title": "" })));
        assert!(!matches(&f, &json!({ "dead": false, "width": 60, "currentCommand": "vim", "title": "" })));
        assert!(!matches(&f, &json!({ "dead": false, "width": 100, "currentCommand": "zsh", "title": "x" })));
        assert!(compile("window", Some(&c)).unwrap_err().contains("criteria describe"));
        let bad = json!({ "profile": "libtmux-ruby.where", "version": 1, "entity": "pane", "where": { "width": { "contains": "x" } } });
        assert!(compile("pane", Some(&bad)).is_err());
        let rel = json!({ "profile": "libtmux-ruby.where", "version": 1, "entity": "pane", "where": { "window": { "is": null } } });
        assert!(compile("pane", Some(&rel)).unwrap_err().contains("relation"));
        // Comparisons with null are false.
        let f = compile("pane", Some(&json!({ "profile": "libtmux-ruby.where", "version": 1, "entity": "pane", "where": { "deadStatus": { "lt": 5 } } }))).unwrap();
        assert!(!matches(&f, &json!({ "deadStatus": null })));
    }
}
