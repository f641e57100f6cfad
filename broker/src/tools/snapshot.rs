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

use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::records::criteria::{self, Entity};
use crate::toolkit::records::graph::Graph;
use crate::toolkit::schemas::derived::data_schema_of;
use crate::toolkit::seed::envelope;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::{Map, Value};
use tmux_mcp_core::sys;
use tmux_mcp_engine::retention::Retained;

pub const SPEC: ToolSpec = ToolSpec::new(
    "tmux_snapshot",
    Annotations::read_only("tmux metadata snapshot"),
    input_schema,
    output_schema,
    |c| c.run(call),
)
.seed()
.description("Sessions, windows, panes, links or clients matching criteria; a cursor pages on.")
.details("Read tmux metadata once (hook-free), filter it locally and page through the immutable result. Query form: entity (session|window|pane|window_link|client), optional criteria ({profile:\"libtmux-ruby.where\",version:1,entity,where}) and limit 1-200 (default 50). Page form: cursor only. Every record carries its entity reference with the server generation. client records (attached clients) need tmux >= 3.5; on older tmux entity client is refused as unsupported (reading them would run a user hook) and other entities report client coverage unavailable.")
.sample(|_| json!({"entity": "pane"}));

/// The arguments: a query, or the cursor of a page to continue from.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(extend("type" = "object"))]
enum Args {
    Query(Query),
    Page(PageArgs),
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Query {
    entity: Entity,
    // Checked by the published schema, then compiled by `criteria`.
    #[serde(default)]
    #[schemars(schema_with = "criteria_schema")]
    criteria: Option<Value>,
    #[schemars(range(min = 1, max = 200))]
    limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PageArgs {
    #[schemars(regex(pattern = r"^[a-f0-9]{32}:[0-9]{1,10}$"), length(max = 43))]
    cursor: String,
}

fn criteria_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::Schema::try_from(criteria::envelope_schema())
        .expect("the criteria schema is an object")
}

fn input_schema() -> Value {
    crate::toolkit::schemas::derived::input_of::<Args>()
}

/// What every page of one result repeats; retained with the records.
#[derive(Serialize, Deserialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
struct Header {
    /// Minted per metadata acquisition (not the page key).
    #[schemars(regex(pattern = r"^[a-f0-9]{32}$"))]
    capture_id: String,
    server_identity: ServerIdentity,
    entity: Entity,
    coverage: Coverage,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
struct ServerIdentity {
    generation: String,
    pid: u32,
    start_time: u64,
    tmux_version: String,
}

/// Whether every record of a kind could be read (clients need tmux >= 3.5).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
enum CoverageStatus {
    Complete,
    Unavailable,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
struct Coverage {
    session: CoverageStatus,
    window: CoverageStatus,
    pane: CoverageStatus,
    window_link: CoverageStatus,
    client: CoverageStatus,
}

/// One record: its wire fields (A.2.3's catalog of its kind) and its entity
/// reference (`null` for clients).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Item {
    kind: Entity,
    fields: Map<String, Value>,
    #[serde(rename = "ref")]
    reference: Option<Map<String, Value>>,
}

crate::constant!(MonotonicSeconds, "monotonic_seconds");

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Interval {
    clock: MonotonicSeconds,
    started: f64,
    finished: f64,
    /// tmux reads made for this page (none for a page of a retained result).
    reads: u32,
}

/// The envelope's `data`: one page of the result.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Page {
    #[schemars(regex(pattern = r"^[a-f0-9]{32}$"))]
    capture_id: String,
    server_identity: ServerIdentity,
    entity: Entity,
    #[schemars(length(max = 200))]
    items: Vec<Item>,
    coverage: Coverage,
    interval: Interval,
    truncated: bool,
    /// `<key>:<offset>` of the next page; present exactly when `truncated`.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

fn output_schema() -> Value {
    envelope::output_schema(data_schema_of::<Page>())
}

/// One page; `reads` is the number of tmux reads made for it (none for a
/// page of a retained result).
fn page(
    header: Header,
    items: Vec<Item>,
    total: usize,
    key: &str,
    offset: usize,
    started: f64,
    reads: u32,
) -> Page {
    let end = offset + items.len();
    let Header {
        capture_id,
        server_identity,
        entity,
        coverage,
    } = header;
    let interval = Interval {
        clock: MonotonicSeconds,
        started,
        finished: sys::monotonic_seconds(),
        reads,
    };
    Page {
        capture_id,
        server_identity,
        entity,
        items,
        coverage,
        interval,
        truncated: end < total,
        next_cursor: (end < total).then(|| format!("{key}:{end}")),
    }
}

fn stale_cursor() -> ToolOutput {
    envelope::error("stale_cursor", "", Delivery::NotSent)
}

/// The page after `cursor` (`key:offset`) of a retained result.
fn next_page(session: &Session, cursor: &str, started: f64) -> ToolOutput {
    let broker = &session.broker;
    let (key, offset) = cursor.split_once(':').unwrap_or((cursor, "0"));
    let offset: usize = offset.parse().unwrap_or(0);
    // A page made under a view this session does not cover reads as unknown.
    let retained = broker.retained.get(key, &session.view());
    let Some(Retained::Pages(p)) = retained.as_deref() else {
        return stale_cursor();
    };
    if offset == 0 || offset >= p.records.len() {
        return stale_cursor();
    }
    let end = (offset + p.limit).min(p.records.len());
    // Both were written by this module from these types.
    let (Ok(header), Ok(items)) = (
        serde_json::from_value::<Header>(p.header.clone()),
        p.slice(offset, end)
            .into_iter()
            .map(serde_json::from_value)
            .collect::<Result<Vec<Item>, _>>(),
    ) else {
        return stale_cursor();
    };
    envelope::ok(
        "tmux_snapshot",
        &page(header, items, p.records.len(), key, offset, started, 0),
    )
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let broker = &session.broker;
    let started = sys::monotonic_seconds();
    let query = match args {
        Args::Page(PageArgs { cursor }) => return Ok(next_page(session, &cursor, started)),
        Args::Query(q) => q,
    };
    let entity = query.entity;
    let limit = query.limit.unwrap_or(50);
    let filter = criteria::compile(entity, query.criteria.as_ref()).map_err(|why| {
        envelope::error(
            "invalid_filter",
            &format!("Invalid criteria: {why}."),
            Delivery::NotSent,
        )
    })?;
    let snap =
        broker.registry.refresh().await.map_err(|e| {
            envelope::error("transport_error", &e.to_string(), Delivery::PossiblySent)
        })?;
    // Asked for clients where they cannot be read hook-free: an empty page
    // would read as "no clients attached", so the answer is an error (only
    // the hook-free table read ran, nothing with an effect).
    if let (Entity::Client, Err(why)) = (
        entity,
        tmux_mcp_engine::clients::readable(&snap.server.version),
    ) {
        return Err(envelope::error(
            "unsupported",
            &format!("Client records cannot be read on this tmux: {}.", why.0),
            Delivery::NotSent,
        ));
    }
    // The clients in a second read just after the table: a client attached to
    // a session that closed in between relates to no session record.
    let clients = tmux_mcp_engine::clients::read(&broker.registry, &snap.server.version).await;
    let reads = if clients.is_ok() { 2 } else { 1 };
    let clients_unavailable = clients.as_ref().err().map(|u| u.0.clone());
    let clients: Vec<_> = clients
        .as_deref()
        .unwrap_or_default()
        .iter()
        .filter(|c| session.sees_session(&c.session_id))
        .cloned()
        .collect();
    let visible: Vec<_> = session.visible(&snap).collect();
    let graph = Graph::build(visible.iter().map(|p| &**p), &clients, session.generation());
    let object = |v: &Value| v.as_object().cloned();
    let mut items: Vec<Item> = graph
        .select(entity, &filter)
        .into_iter()
        .map(|r| Item {
            kind: entity,
            fields: object(&r.fields).unwrap_or_default(),
            reference: object(&r.reference),
        })
        .collect();
    let header = header(session, &snap.server.version, entity, reads == 2);
    let key = sys::random_hex(16);
    let total = items.len();
    if total > limit {
        retain_pages(session, &key, &items, &header, limit)?;
    }
    items.truncate(limit);
    let first = page(header, items, total, &key, 0, started, reads);
    let shown = first.items.len();
    let mut out = envelope::ok("tmux_snapshot", &first);
    out.text = format!(
        "tmux_snapshot {}: {shown} record(s); structuredContent contains the result.",
        entity.as_str()
    );
    if let (Entity::Client, Some(why)) = (entity, clients_unavailable) {
        out.text
            .push_str(&format!(" Client coverage is unavailable: {why}."));
    }
    Ok(out)
}

/// The result's header: a fresh capture id, the server it was read from,
/// the entity, and which entities' records were read (clients only where
/// they can be read hook-free).
fn header(session: &Session, tmux_version: &str, entity: Entity, clients_read: bool) -> Header {
    let broker = &session.broker;
    let status = |complete: bool| {
        if complete {
            CoverageStatus::Complete
        } else {
            CoverageStatus::Unavailable
        }
    };
    Header {
        capture_id: sys::random_hex(16),
        server_identity: ServerIdentity {
            generation: session.generation().to_string(),
            pid: broker.identity.pid,
            start_time: broker.identity.start_time,
            tmux_version: tmux_version.to_string(),
        },
        entity,
        coverage: Coverage {
            session: status(true),
            window: status(true),
            pane: status(true),
            window_link: status(true),
            client: status(clients_read),
        },
    }
}

/// Keeps every record of a result longer than a page, under `key`, so its
/// cursor pages on over the same immutable result; a result over the
/// retention budget is refused rather than cut.
fn retain_pages(
    session: &Session,
    key: &str,
    items: &[Item],
    header: &Header,
    limit: usize,
) -> Result<(), ToolOutput> {
    let broker = &session.broker;
    let records: Vec<Value> = items
        .iter()
        .map(|i| serde_json::to_value(i).expect("a record serializes"))
        .collect();
    let retained_header = serde_json::to_value(header).expect("the header serializes");
    if broker
        .retained
        .insert(
            key.to_string(),
            Retained::Pages(broker.retained.pages(&records, retained_header, limit)),
            session.owner(),
        )
        .is_err()
    {
        return Err(envelope::error(
            "capacity",
            "The result exceeds the retention budget; narrow the criteria.",
            Delivery::Observed,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_page_schema_is_the_published_shape() {
        let s = data_schema_of::<Page>();
        assert!(s.get("additionalProperties").is_none(), "{s:#}");
        let mut required: Vec<&str> = s["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        required.sort();
        assert_eq!(
            required,
            [
                "capture_id",
                "coverage",
                "entity",
                "interval",
                "items",
                "server_identity",
                "truncated"
            ],
            "{s:#}"
        );
        assert_eq!(s["properties"]["items"]["maxItems"], json!(200));
        assert_eq!(
            s["properties"]["entity"]["enum"],
            json!(Entity::names()),
            "{s:#}"
        );
        assert_eq!(
            s["properties"]["interval"]["properties"]["clock"],
            json!({ "const": "monotonic_seconds" })
        );
        assert_eq!(
            s["properties"]["coverage"]["required"]
                .as_array()
                .map(Vec::len),
            Some(5)
        );
        let v = jsonschema::validator_for(&s).unwrap();
        let status = CoverageStatus::Complete;
        let header = Header {
            capture_id: "a".repeat(32),
            server_identity: ServerIdentity {
                generation: "g".into(),
                pid: 1,
                start_time: 2,
                tmux_version: "3.5a".into(),
            },
            entity: Entity::WindowLink,
            coverage: Coverage {
                session: status,
                window: status,
                pane: status,
                window_link: status,
                client: CoverageStatus::Unavailable,
            },
        };
        let item = Item {
            kind: Entity::WindowLink,
            fields: Map::new(),
            reference: None,
        };
        let p = serde_json::to_value(page(header.clone(), vec![item], 2, "k", 0, 0.0, 1)).unwrap();
        assert!(v.is_valid(&p), "{p:#}");
        assert_eq!(
            (
                p["entity"].as_str(),
                p["next_cursor"].as_str(),
                &p["items"][0]["ref"]
            ),
            (Some("window_link"), Some("k:1"), &Value::Null)
        );
        let last = serde_json::to_value(page(header, Vec::new(), 0, "k", 0, 0.0, 0)).unwrap();
        assert!(
            v.is_valid(&last) && last.get("next_cursor").is_none(),
            "{last:#}"
        );
        let mut wrong = p.clone();
        wrong["items"] = json!("not a list");
        assert!(!v.is_valid(&wrong));
    }

    #[test]
    fn the_derived_schema_takes_a_query_or_a_page_and_decodes_it() {
        let v = jsonschema::validator_for(&SPEC.full_input_schema()).unwrap();
        let criteria = json!({ "profile": "libtmux-ruby.where", "version": 1, "entity": "pane",
                               "where": { "field": "pane_dead", "eq": false } });
        let cursor = "0123456789abcdef0123456789abcdef:50";
        for ok in [
            json!({ "entity": "pane" }),
            json!({ "entity": "window_link", "limit": 200 }),
            json!({ "entity": "pane", "criteria": criteria, "limit": 1 }),
            json!({ "cursor": cursor }),
        ] {
            assert!(v.is_valid(&ok), "refused {ok}");
            match serde_json::from_value::<Args>(ok.clone()).unwrap() {
                Args::Query(q) => {
                    assert_eq!(json!(q.entity), ok["entity"]);
                    assert_eq!(q.limit.map(|l| l as u64), ok["limit"].as_u64());
                    assert_eq!(q.criteria.as_ref(), ok.get("criteria"));
                }
                Args::Page(p) => assert_eq!(p.cursor, cursor),
            }
        }
        for bad in [
            json!({}),
            json!({ "entity": "buffer" }),
            json!({ "entity": "pane", "limit": 0 }),
            json!({ "entity": "pane", "limit": 201 }),
            json!({ "entity": "pane", "cursor": cursor }),
            json!({ "cursor": "0123456789abcdef0123456789abcdef" }),
            json!({ "cursor": cursor, "limit": 5 }),
            json!({ "entity": "pane", "criteria": { "profile": "other", "version": 1, "entity": "pane", "where": {} } }),
        ] {
            assert!(!v.is_valid(&bad), "accepted {bad}");
        }
    }
}
