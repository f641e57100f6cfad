//! Defects found when the broker was tried from outside (the issue "Exact and
//! safe under scrutiny"): each test is named after its item and the
//! docs/spec.md section it follows, and drives the real binaries on a real tmux
//! server through rmcp's client (or, for a session-scoped agent, a relay
//! running inside a pane).

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use tmux_mcp_e2e::*;

const CAPTURE: &[&str] = &[
    "--enable-tool",
    "tmux_capture",
    "--enable-tool",
    "tmux_wait",
];

/// A `tools/call` through a pane relay; its structuredContent, validated
/// against the tool's published outputSchema (errors included).
fn relay_call(r: &mut PaneRelay, id: i64, name: &str, args: Value) -> Value {
    let resp = r
        .channel
        .request(id, "tools/call", json!({ "name": name, "arguments": args }));
    let s = resp["result"]["structuredContent"].clone();
    assert!(
        s.is_object(),
        "tools/call {name} through the pane relay: {resp}"
    );
    let schema = r.tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed"))["outputSchema"]
        .clone();
    if let Err(e) = validate(&schema, &s) {
        panic!(
            "structuredContent of {name} does not validate against its outputSchema: {e}\n{s:#}"
        );
    }
    s
}

fn session_id(srv: &TmuxServer, name: &str) -> String {
    srv.tmux(&[
        "display-message",
        "-p",
        "-t",
        &format!("{name}:"),
        "#{session_id}",
    ])
    .trim()
    .to_string()
}

fn snapshot_ids(data: &Value, field: &str) -> BTreeSet<String> {
    data["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["fields"][field].as_str().unwrap_or_default().to_string())
        .collect()
}

fn crit(entity: &str, w: Value) -> Value {
    json!({ "profile": "libtmux-ruby.where", "version": 1, "entity": entity, "where": w })
}

/// Item 1 (docs/spec.md A.2.3, A.0.4 scope): a window linked into the agent's
/// session and another one must not reveal the other session through any
/// record kind or field.
#[test]
fn item1_session_scope_does_not_leak_through_linked_windows() {
    let srv = TmuxServer::start();
    srv.tmux(&["new-session", "-d", "-s", "beta", "sleep 1000"]);
    let shared = srv
        .tmux(&[
            "new-window",
            "-d",
            "-t",
            "main:",
            "-P",
            "-F",
            "#{window_id}",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    srv.tmux(&["link-window", "-d", "-s", &shared, "-t", "beta:7"]);
    let (main, beta) = (session_id(&srv, "main"), session_id(&srv, "beta"));
    let mut r = PaneRelay::start(&srv, "scoped", &[], true);
    let caps = relay_call(&mut r, 2, "tmux_capabilities", json!({}));
    assert_eq!(
        caps["data"]["broker"]["scope"], "session",
        "test premise: the agent is session-scoped"
    );

    let sessions = relay_call(&mut r, 3, "tmux_snapshot", json!({ "entity": "session" }));
    assert_eq!(
        snapshot_ids(&sessions["data"], "id"),
        BTreeSet::from([main.clone()]),
        "session records: {sessions:#}"
    );
    let links = relay_call(
        &mut r,
        4,
        "tmux_snapshot",
        json!({ "entity": "window_link", "limit": 200 }),
    );
    let link_sessions = snapshot_ids(&links["data"], "sessionId");
    assert_eq!(
        link_sessions,
        BTreeSet::from([main.clone()]),
        "window_link records name another session: {links:#}"
    );
    assert!(
        links["data"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["fields"]["windowId"] == json!(shared)),
        "the shared window's own link is missing"
    );
    // Relations cannot reach outside the scope either.
    let via = relay_call(
        &mut r,
        5,
        "tmux_snapshot",
        json!({ "entity": "window", "criteria": crit("window", json!({ "windowLinks": { "some": { "sessionId": beta } } })) }),
    );
    assert_eq!(
        via["data"]["items"],
        json!([]),
        "a relation reached the other session: {via:#}"
    );

    // The lean records place a pane by session name: none in beta.
    let lean = relay_call(&mut r, 6, "list_panes", json!({}));
    for p in lean["panes"].as_array().unwrap() {
        for at in p["at"].as_array().unwrap() {
            assert!(
                at.as_str().unwrap().starts_with("main:"),
                "list_panes shows a placement in another session: {p:#}"
            );
        }
    }
    let list = relay_call(&mut r, 60, "list_panes", json!({"detail": "full"}));
    for p in list["panes"].as_array().unwrap() {
        for pl in p["placements"].as_array().unwrap() {
            assert_eq!(
                pl["sessionId"],
                json!(main),
                "list_panes shows a placement in another session: {p:#}"
            );
        }
    }
    let shared_pane = srv
        .tmux(&["display-message", "-p", "-t", &shared, "#{pane_id}"])
        .trim()
        .to_string();
    let snap = relay_call(&mut r, 7, "snapshot_pane", json!({ "paneId": shared_pane }));
    let places: Vec<&Value> = snap["pane"]["placements"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(
        places.len(),
        1,
        "snapshot_pane shows placements outside the scope: {snap:#}"
    );
    assert_eq!(places[0]["sessionId"], json!(main));
    let text = serde_json::to_string(&snap).unwrap()
        + &serde_json::to_string(&list).unwrap()
        + &serde_json::to_string(&links).unwrap();
    assert!(
        !text.contains("\"beta\"") && !text.contains(&format!("\"{beta}\"")),
        "the other session's name or id appears in a result"
    );
}

/// Item 2 (docs/spec.md A.2.2 page form, A.0.6): a page cursor made by a
/// server-scoped agent is unknown to a session-scoped one; so is a capture
/// cursor of a pane outside its scope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item2_retained_pages_and_cursors_are_bound_to_the_scope_that_made_them() {
    let srv = TmuxServer::start();
    srv.tmux(&["new-session", "-d", "-s", "beta", "sleep 1000"]);
    for _ in 0..3 {
        srv.tmux(&["new-window", "-d", "-t", "beta:", "sleep 1000"]);
    }
    let wide = McpClient::attach(&srv, CAPTURE).await;
    let gen = generation(&wide).await;
    let first = wide
        .call_envelope("tmux_snapshot", json!({ "entity": "pane", "limit": 1 }))
        .await;
    let cursor = first.data()["next_cursor"]
        .as_str()
        .expect("more than one page")
        .to_string();
    // The maker itself pages on.
    let again = wide
        .call_envelope("tmux_snapshot", json!({ "cursor": cursor }))
        .await;
    assert_eq!(again.data()["items"].as_array().unwrap().len(), 1);
    let beta_pane = srv
        .tmux(&["display-message", "-p", "-t", "beta:1", "#{pane_id}"])
        .trim()
        .to_string();
    let tracked = wide
        .call_envelope(
            "tmux_capture",
            json!({ "target": pane_ref(&gen, &beta_pane), "track": true }),
        )
        .await;
    let capture_cursor = tracked.data()["next_cursor"].as_str().unwrap().to_string();

    let mut r = PaneRelay::start(&srv, "narrow", CAPTURE, true);
    let replay = relay_call(&mut r, 2, "tmux_snapshot", json!({ "cursor": cursor }));
    assert_eq!(
        replay["error"]["code"], "stale_cursor",
        "a session-scoped agent read a server-scoped page: {replay:#}"
    );
    assert_eq!(replay["error"]["delivery"], "not_sent");
    let replay = relay_call(
        &mut r,
        3,
        "tmux_capture",
        json!({ "target": pane_ref(&gen, &beta_pane), "cursor": capture_cursor }),
    );
    assert_eq!(
        replay["error"]["code"], "stale_cursor",
        "a session-scoped agent continued a cursor of another session's pane: {replay:#}"
    );
    // Its own pages work.
    srv.tmux(&["new-window", "-d", "-t", "main:", "sleep 1000"]);
    let own = relay_call(
        &mut r,
        4,
        "tmux_snapshot",
        json!({ "entity": "pane", "limit": 1 }),
    );
    let own_cursor = own["data"]["next_cursor"]
        .as_str()
        .expect("the agent's session has two panes")
        .to_string();
    let own_next = relay_call(&mut r, 5, "tmux_snapshot", json!({ "cursor": own_cursor }));
    assert_eq!(own_next["ok"], true, "{own_next:#}");
    wide.close().await;
}

/// Item 3 (docs/spec.md A.3.2 step 5, A.3.5, A.3.7 "Pane respawned"): after
/// `respawn-pane -k`, a new tracked capture and a `process_exit` wait bind the
/// new process without any listing in between; the old cursor stays stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item3_tracked_capture_and_wait_after_respawn_bind_the_new_process() {
    let srv = TmuxServer::start();
    // A second window keeps the server alive when %0's process is killed below
    // (else its exit would race the server's own and end the wait as
    // observation_lost).
    srv.tmux(&["new-window", "-d", "sleep 1000"]);
    let c = McpClient::attach(&srv, CAPTURE).await;
    let gen = generation(&c).await;
    let before = c
        .call_envelope(
            "tmux_capture",
            json!({ "target": pane_ref(&gen, "%0"), "track": true }),
        )
        .await;
    let old_cursor = before.data()["next_cursor"].as_str().unwrap().to_string();
    let old_gen = before.data()["process_generation"]
        .as_str()
        .unwrap()
        .to_string();
    let old_pid = srv
        .tmux(&["display-message", "-p", "-t", "%0", "#{pane_pid}"])
        .trim()
        .to_string();
    srv.tmux(&["respawn-pane", "-k", "-t", "%0", "sleep 1000"]);
    let new_pid = poll(Duration::from_secs(5), || {
        let p = srv
            .tmux(&["display-message", "-p", "-t", "%0", "#{pane_pid}"])
            .trim()
            .to_string();
        (p != old_pid).then_some(p)
    })
    .expect("respawn gave a new pid");
    // Wait until the old process is really gone, so the broker's identity of it has exited.
    poll(Duration::from_secs(5), || {
        (!pid_alive(old_pid.parse().unwrap())).then_some(())
    })
    .expect("old process exited");

    let after = c
        .call_envelope(
            "tmux_capture",
            json!({ "target": pane_ref(&gen, "%0"), "track": true }),
        )
        .await;
    assert!(
        after.structured["ok"] == true,
        "tracked capture after respawn failed: {:#}",
        after.structured
    );
    let new_gen = after.data()["process_generation"].as_str().unwrap();
    assert_ne!(
        new_gen, old_gen,
        "the respawned pane kept the old process_generation"
    );
    let stale = c
        .call_envelope(
            "tmux_capture",
            json!({ "target": pane_ref(&gen, "%0"), "cursor": old_cursor }),
        )
        .await;
    stale.expect_error("stale_cursor", "not_sent");

    // process_exit on the new process, again without a listing first.
    srv.tmux(&["respawn-pane", "-k", "-t", "%0", "sleep 1000"]);
    let third = poll(Duration::from_secs(5), || {
        let p = srv
            .tmux(&["display-message", "-p", "-t", "%0", "#{pane_pid}"])
            .trim()
            .to_string();
        (p != new_pid).then_some(p)
    })
    .expect("second respawn");
    poll(Duration::from_secs(5), || {
        (!pid_alive(new_pid.parse().unwrap())).then_some(())
    })
    .expect("second process exited");
    let killer = {
        let third: u32 = third.parse().unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            kill_pid(third, libc::SIGTERM);
        })
    };
    let waited = c.call_envelope("tmux_wait", json!({ "target": pane_ref(&gen, "%0"), "condition": { "type": "process_exit" }, "timeout": 5 })).await;
    killer.join().unwrap();
    assert_eq!(
        waited.structured["ok"], true,
        "process_exit wait on a respawned pane: {:#}",
        waited.structured
    );
    assert_eq!(waited.data()["condition"], "process_exit");
    c.close().await;
}

/// Item 4 (docs/spec.md A.3.7 "Pane killed"): an untracked capture of a pane
/// killed since the broker's last read is `stale_target`, nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item4_killed_pane_untracked_capture_is_stale_target_not_sent() {
    let srv = TmuxServer::start();
    let victim = srv
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", "sleep 1000"])
        .trim()
        .to_string();
    let c = McpClient::attach(&srv, CAPTURE).await;
    let gen = generation(&c).await;
    c.call("list_panes", json!({"detail": "full"})).await; // the broker's table now has the pane
    srv.tmux(&["kill-pane", "-t", &victim]);
    let r = c
        .call_envelope("tmux_capture", json!({ "target": pane_ref(&gen, &victim) }))
        .await;
    r.expect_error("stale_target", "not_sent");
    c.close().await;
}

/// Item 5 (docs/spec.md A.5): text longer than one tmux message (16,341 bytes
/// of argument) arrives whole and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item5_send_text_longer_than_one_tmux_message_arrives_whole() {
    let srv = TmuxServer::start();
    let out = srv.dir().join("received");
    let ready = srv.dir().join("ready");
    let cmd = format!(
        "stty raw -echo && touch {} && exec cat > {}",
        ready.display(),
        out.display()
    );
    let pane = srv
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", &cmd])
        .trim()
        .to_string();
    poll(Duration::from_secs(10), || ready.exists().then_some(()))
        .expect("the raw reader did not start");
    let c = McpClient::attach(&srv, &["--enable-tool", "tmux_send"]).await;
    let gen = generation(&c).await;
    // ';' and a two-byte character around every likely cut, 60,000 bytes in all.
    let unit = "0123456789abcdefghijklmnopqrstuvwxyz;é-";
    let mut text = String::new();
    while text.len() + unit.len() <= 60_000 {
        text.push_str(unit);
    }
    let sent = c
        .call_envelope(
            "tmux_send",
            json!({ "target": pane_ref(&gen, &pane), "input": { "type": "text", "text": text } }),
        )
        .await;
    assert_eq!(sent.structured["ok"], true, "{:#}", sent.structured);
    let got = poll(Duration::from_secs(10), || {
        std::fs::read(&out).ok().filter(|b| b.len() >= text.len())
    })
    .unwrap_or_else(|| std::fs::read(&out).unwrap_or_default());
    assert_eq!(
        got.len(),
        text.len(),
        "received {} of {} bytes",
        got.len(),
        text.len()
    );
    assert!(
        got == text.as_bytes(),
        "the text arrived changed or out of order"
    );
    c.close().await;
}

/// Item 6 (docs/spec.md A.4): the deadline is min(request_timeout_seconds,
/// timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item6_wait_deadline_is_the_smaller_of_request_timeout_and_timeout() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, CAPTURE).await;
    let caps = c.call("tmux_capabilities", json!({})).await;
    let limit = caps["data"]["limits"]["request_timeout_seconds"]
        .as_f64()
        .unwrap();
    let gen = generation(&c).await;
    let asked = limit + 1.5;
    let t = Instant::now();
    let r = c.call_envelope("tmux_wait", json!({ "target": pane_ref(&gen, "%0"), "condition": { "type": "screen_contains", "text": "never-on-this-screen-0xdeadbeef" }, "timeout": asked })).await;
    let took = t.elapsed().as_secs_f64();
    let msg = r.expect_error("deadline", "observed");
    assert!(msg.contains(&format!("within {limit} s")), "{msg}");
    assert!(
        took < asked - 0.5,
        "the wait ran {took:.2} s, past the broker's request timeout {limit} s"
    );
}

/// Item 7 (docs/spec.md A.2.3): a wrongly typed literal is `invalid_filter`;
/// relation predicates select by related records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item7_criteria_typed_literals_and_relations() {
    let srv = TmuxServer::start();
    let w1 = srv
        .tmux(&["new-window", "-d", "-P", "-F", "#{window_id}", "sleep 1000"])
        .trim()
        .to_string();
    let p2 = srv
        .tmux(&[
            "split-window",
            "-d",
            "-t",
            &w1,
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 1001",
        ])
        .trim()
        .to_string();
    let c = McpClient::attach(&srv, &[]).await;
    for bad in [
        crit("window", json!({ "width": "wide" })),
        crit("window", json!({ "width": { "in": [80, "x"] } })),
        crit("window", json!({ "panes": { "is": {} } })),
        crit(
            "window",
            json!({ "or": [{ "id": "@0" }, { "nosuchfield": 1 }] }),
        ),
    ] {
        let r = c
            .call_envelope(
                "tmux_snapshot",
                json!({ "entity": "window", "criteria": bad }),
            )
            .await;
        let msg = r.expect_error("invalid_filter", "not_sent");
        assert!(
            msg.contains("criteria.where"),
            "the error names no path: {msg}"
        );
    }
    let with_p2 = c.call_envelope("tmux_snapshot", json!({ "entity": "window", "criteria": crit("window", json!({ "panes": { "some": { "id": p2 } } })) })).await;
    assert_eq!(
        snapshot_ids(with_p2.data(), "id"),
        BTreeSet::from([w1.clone()])
    );
    let two_panes = c.call_envelope("tmux_snapshot", json!({ "entity": "window", "criteria": crit("window", json!({ "panes": { "none": { "id": "%0" } }, "paneCount": 2 })) })).await;
    assert_eq!(
        snapshot_ids(two_panes.data(), "id"),
        BTreeSet::from([w1.clone()])
    );
    let in_w1 = c.call_envelope("tmux_snapshot", json!({ "entity": "pane", "criteria": crit("pane", json!({ "window": { "is": { "id": w1 } } })) })).await;
    assert_eq!(in_w1.data()["items"].as_array().unwrap().len(), 2);
    let not_w1 = c.call_envelope("tmux_snapshot", json!({ "entity": "pane", "criteria": crit("pane", json!({ "window": { "isNot": { "id": w1 } } })) })).await;
    assert_eq!(
        snapshot_ids(not_w1.data(), "id"),
        BTreeSet::from(["%0".to_string()])
    );
    c.close().await;
}

/// Item 8 (docs/spec.md A.0.3 invalid_input): the error names the leaf field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item8_errors_name_the_leaf_field() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, CAPTURE).await;
    let gen = generation(&c).await;
    let cases = [
        (
            "tmux_capture",
            json!({ "target": { "kind": "pane", "id": "0", "generation": gen } }),
            "/target/id",
        ),
        (
            "tmux_capture",
            json!({ "target": { "kind": "pane", "id": "%0", "generation": "" } }),
            "/target/generation",
        ),
        (
            "tmux_wait",
            json!({ "target": pane_ref(&gen, "%0"), "condition": { "type": "screen_contains" } }),
            "/condition: missing required field text",
        ),
    ];
    for (tool, args, leaf) in cases {
        let msg = c
            .call_envelope(tool, args)
            .await
            .expect_error("invalid_input", "not_sent");
        assert!(
            msg.contains(leaf),
            "{tool}: the error does not name {leaf}: {msg}"
        );
    }
    c.close().await;
}

/// Item 9 (docs/spec.md A.1): `criteria_schema` is published, and a validator
/// built from it agrees with the broker on what is a valid criteria document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item9_capabilities_publish_the_criteria_schema() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &[]).await;
    let caps = c.call("tmux_capabilities", json!({})).await;
    let schema = caps["data"]["criteria_schema"].clone();
    assert!(
        schema["$defs"]["where_pane"].is_object(),
        "criteria_schema: {schema:#}"
    );
    let samples = [
        (
            "pane",
            crit(
                "pane",
                json!({ "width": { "gte": 10 }, "window": { "is": { "paneCount": { "lt": 9 } } } }),
            ),
            true,
        ),
        (
            "session",
            crit(
                "session",
                json!({ "windows": { "every": { "name": { "contains": "x" } } } }),
            ),
            true,
        ),
        ("pane", crit("pane", json!({ "width": "wide" })), false),
        (
            "pane",
            crit("pane", json!({ "window": { "some": {} } })),
            false,
        ),
        (
            "window",
            crit("window", json!({ "activePane": { "is": null } })),
            false,
        ),
    ];
    for (entity, criteria, valid) in samples {
        assert_eq!(
            validate(&schema, &criteria).is_ok(),
            valid,
            "criteria_schema on {criteria}"
        );
        let r = c
            .call_envelope(
                "tmux_snapshot",
                json!({ "entity": entity, "criteria": criteria }),
            )
            .await;
        assert_eq!(
            r.structured["ok"] == true,
            valid,
            "the broker disagrees with its criteria_schema on {criteria}: {:#}",
            r.structured
        );
    }
    c.close().await;
}

/// Item 12 (docs/spec.md A.0.5 max_observers): 32 agents capturing at once are
/// normal load: captures queue for a place instead of being refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item12_captures_of_32_agents_queue_instead_of_failing() {
    let srv = TmuxServer::start();
    let mut agents = Vec::new();
    for _ in 0..32 {
        agents.push(std::sync::Arc::new(McpClient::attach(&srv, CAPTURE).await));
    }
    let gen = generation(&agents[0]).await;
    let mut tasks = Vec::new();
    for a in &agents {
        let (a, gen) = (a.clone(), gen.clone());
        tasks.push(tokio::spawn(async move {
            let mut refused = Vec::new();
            for _ in 0..15 {
                let r = a
                    .call_envelope("tmux_capture", json!({ "target": pane_ref(&gen, "%0") }))
                    .await;
                if r.structured["ok"] != true {
                    refused.push(r.structured["error"].clone());
                }
            }
            refused
        }));
    }
    let mut refused = Vec::new();
    for t in tasks {
        refused.extend(t.await.unwrap());
    }
    assert!(
        refused.is_empty(),
        "{} of {} captures failed, e.g. {:#}",
        refused.len(),
        32 * 15,
        refused[0]
    );
}

/// Item 13 (docs/spec.md Decision 6, A.0.6): one busy agent's cursors never
/// evict another agent's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item13_a_busy_agent_does_not_evict_another_agents_cursor() {
    let srv = TmuxServer::start();
    let quiet = McpClient::attach(&srv, CAPTURE).await;
    let busy = McpClient::attach(&srv, CAPTURE).await;
    let gen = generation(&quiet).await;
    let caps = quiet.call("tmux_capabilities", json!({})).await;
    let per_agent = caps["data"]["limits"]["max_captures"].as_u64().unwrap();
    let kept = quiet
        .call_envelope(
            "tmux_capture",
            json!({ "target": pane_ref(&gen, "%0"), "track": true }),
        )
        .await;
    let cursor = kept.data()["next_cursor"].as_str().unwrap().to_string();
    for _ in 0..per_agent + 20 {
        busy.call_envelope(
            "tmux_capture",
            json!({ "target": pane_ref(&gen, "%0"), "track": true, "max_lines": 1 }),
        )
        .await;
    }
    let later = quiet
        .call_envelope(
            "tmux_capture",
            json!({ "target": pane_ref(&gen, "%0"), "cursor": cursor }),
        )
        .await;
    assert_eq!(
        later.structured["ok"], true,
        "the quiet agent's cursor was evicted by the busy one: {:#}",
        later.structured
    );
    quiet.close().await;
    busy.close().await;
}

/// Item 1, over time (docs/spec.md A.3.3 guard): a pane moved out of the
/// agent's sessions since the broker last read the table is not captured for
/// it — the scope check of a session-scoped agent never rests on a stale table.
#[test]
fn item1_a_pane_moved_out_of_scope_is_not_captured_from_a_stale_table() {
    let srv = TmuxServer::start();
    srv.tmux(&["new-session", "-d", "-s", "beta", "sleep 1000"]);
    let w = srv
        .tmux(&[
            "new-window",
            "-d",
            "-t",
            "main:",
            "-P",
            "-F",
            "#{window_id}",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    let pane = srv
        .tmux(&["display-message", "-p", "-t", &w, "#{pane_id}"])
        .trim()
        .to_string();
    let mut r = PaneRelay::start(&srv, "mover", &["--enable-tool", "tmux_capture"], true);
    let gen = relay_call(&mut r, 2, "tmux_capabilities", json!({}))["data"]["server_identity"]
        ["generation"]
        .as_str()
        .unwrap()
        .to_string();
    let seen = r.channel.request(
        3,
        "tools/call",
        json!({ "name": "capture_pane", "arguments": { "paneId": pane } }),
    );
    assert_eq!(
        seen["result"]["isError"], false,
        "test premise: the pane is in scope first: {seen}"
    );
    let tracked = relay_call(
        &mut r,
        4,
        "tmux_capture",
        json!({ "target": pane_ref(&gen, &pane) }),
    );
    assert_eq!(tracked["ok"], true, "{tracked:#}");
    // Moved into another session; no listing runs before the next reads.
    srv.tmux(&["move-window", "-d", "-s", &w, "-t", "beta:"]);
    let after = r.channel.request(
        5,
        "tools/call",
        json!({ "name": "capture_pane", "arguments": { "paneId": pane } }),
    );
    assert_eq!(
        after["result"]["isError"], true,
        "capture_pane read a pane moved out of scope: {after}"
    );
    let after = relay_call(
        &mut r,
        6,
        "tmux_capture",
        json!({ "target": pane_ref(&gen, &pane) }),
    );
    assert_eq!(
        after["error"]["code"], "policy_denied",
        "tmux_capture read a pane moved out of scope: {after:#}"
    );
}

/// Item 14 (docs/spec.md A.0.6): what retention holds is counted in heap bytes
/// and shown by `tmux-mcp status`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item14_status_reports_what_retention_holds() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, CAPTURE).await;
    let gen = generation(&c).await;
    assert_eq!(srv.status()["retained_entries"], json!(0));
    c.call_envelope(
        "tmux_capture",
        json!({ "target": pane_ref(&gen, "%0"), "track": true }),
    )
    .await;
    let st = srv.status();
    assert_eq!(st["retained_entries"], json!(1), "{st:#}");
    // A 200x50 screen's rows plus bookkeeping: more than the rows' text, far below a MiB.
    let bytes = st["retained_bytes"].as_u64().unwrap();
    assert!((256..1 << 20).contains(&bytes), "retained bytes {bytes}");
    c.close().await;
}
