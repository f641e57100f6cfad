//! Resources and subscriptions (issue "Platform …", item 2) against a real
//! tmux server: `tmux://server`, `tmux://sessions`, `tmux://panes`,
//! `tmux://pane/{pane_id}` and `/info` read like the tools that read the same
//! things; subscriptions in both eras (legacy `resources/subscribe` through
//! rmcp's client, 2026-07-28 `subscriptions/listen` as raw JSON-RPC), told by
//! events: a line written to a pane's terminal, a pane appearing; coalesced to
//! at most 4 updates a second; scope applies.
//!
//! "Nothing arrived" is never proved by waiting: a sentinel change on another
//! subscribed pane is made, its update awaited, and what came before it checked.

#![allow(deprecated)] // resources/subscribe is the legacy eras' subscription, tested on purpose

use rmcp::model::{
    ClientRequest, ReadResourceRequestParams, ResourceContents, ResourceUpdatedNotificationParam,
    SubscribeRequest, SubscribeRequestParams, UnsubscribeRequest, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{json, Value};
use std::io::Write;
use std::time::{Duration, Instant};
use tmux_mcp_e2e::*;
use tokio::sync::mpsc;

/// What the client heard: `Some(uri)` for resources/updated, `None` for list_changed.
#[derive(Clone)]
struct Heard(mpsc::UnboundedSender<Option<String>>);

impl ClientHandler for Heard {
    /// A client of the initialize eras: `resources/subscribe` belongs to them
    /// (rmcp's default is 2026-07-28, where subscriptions are `subscriptions/listen`).
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut c = rmcp::model::ClientConfig::default();
        c.protocol_version = rmcp::model::ProtocolVersion::V_2025_11_25;
        c
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(Some(params.uri));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(None);
    }
}

async fn client(
    srv: &TmuxServer,
    extra: &[&str],
) -> (
    RunningService<RoleClient, Heard>,
    mpsc::UnboundedReceiver<Option<String>>,
) {
    let mut cmd = tokio::process::Command::new(bin("tmux-mcp"));
    cmd.arg("attach").arg("-S").arg(srv.socket()).args(extra);
    for v in FOREIGN_TMUX_VARS {
        cmd.env_remove(v);
    }
    let err = std::fs::File::create(srv.scratch("res-stderr")).unwrap();
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(err)
        .spawn()
        .expect("attach");
    let (tx, rx) = mpsc::unbounded_channel();
    let service = tokio::time::timeout(Duration::from_secs(20), Heard(tx).serve(transport))
        .await
        .expect("initialize timed out")
        .expect("initialize");
    (service, rx)
}

/// Writes `line` to pane `id`'s terminal, as a program in it would.
fn write_to_pane(srv: &TmuxServer, id: &str, line: &str) {
    let tty = srv
        .tmux(&["display-message", "-p", "-t", id, "#{pane_tty}"])
        .trim()
        .to_string();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&tty)
        .unwrap_or_else(|e| panic!("open {tty}: {e}"));
    f.write_all(format!("{line}\r\n").as_bytes()).unwrap();
}

fn uri(id: &str) -> String {
    format!("tmux://pane/%25{}", &id[1..])
}

async fn read_text(c: &RunningService<RoleClient, Heard>, uri: &str) -> Result<String, String> {
    match tokio::time::timeout(
        Duration::from_secs(10),
        c.read_resource(ReadResourceRequestParams::new(uri)),
    )
    .await
    .expect("read timed out")
    {
        Ok(r) => match &r.contents[..] {
            [ResourceContents::TextResourceContents { text, uri: u, .. }] => {
                assert_eq!(u, uri, "contents answer the URI asked");
                Ok(text.clone())
            }
            other => panic!("unexpected contents {other:?}"),
        },
        Err(e) => Err(e.to_string()),
    }
}

async fn subscribe(c: &RunningService<RoleClient, Heard>, uri: &str) -> Result<(), String> {
    let req =
        ClientRequest::SubscribeRequest(SubscribeRequest::new(SubscribeRequestParams::new(uri)));
    c.peer()
        .send_request(req)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Waits (≤5 s) for an update of `want`; returns what was heard before it.
async fn until_updated(
    rx: &mut mpsc::UnboundedReceiver<Option<String>>,
    want: &str,
) -> Vec<Option<String>> {
    let mut before = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(Some(u))) if u == want => return before,
            Ok(Some(other)) => before.push(other),
            _ => {
                panic!("no notifications/resources/updated for {want} within 5 s; heard {before:?}")
            }
        }
    }
}

fn a_second_pane(srv: &TmuxServer) -> String {
    srv.tmux(&[
        "new-window",
        "-d",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        "main:",
        "sleep 1000",
    ])
    .trim()
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_read_like_the_tools_that_read_the_same_things() {
    let srv = TmuxServer::start();
    let other = a_second_pane(&srv);
    write_to_pane(&srv, &other, "hello from the pane");
    let tools = McpClient::attach(&srv, &[]).await;
    let (c, _rx) = client(&srv, &[]).await;

    let caps = c
        .peer_info()
        .expect("server info")
        .capabilities
        .resources
        .clone()
        .expect("resources capability");
    assert_eq!(
        (caps.subscribe, caps.list_changed),
        (Some(true), Some(true))
    );
    let listed: Vec<String> = c
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri)
        .collect();
    for u in [
        "tmux://server",
        "tmux://sessions",
        "tmux://panes",
        &uri("%0"),
        &uri(&other),
    ] {
        assert!(listed.iter().any(|l| l == u), "{u} not listed: {listed:?}");
    }
    let templates: Vec<String> = c
        .list_all_resource_templates()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.uri_template)
        .collect();
    assert_eq!(
        templates,
        [
            "tmux://pane/{pane_id}",
            "tmux://pane/{pane_id}/info",
            "tmux://tool/{name}"
        ]
    );

    // JSON resources equal the tools' results (and validate against their schemas).
    let panes: Value = serde_json::from_str(&read_text(&c, "tmux://panes").await.unwrap()).unwrap();
    validate(
        &Value::Object((*tools.tool("list_panes").output_schema.clone().unwrap()).clone()),
        &panes,
    )
    .unwrap();
    assert_eq!(panes["panes"].as_array().map(Vec::len), Some(2));
    let sessions: Value =
        serde_json::from_str(&read_text(&c, "tmux://sessions").await.unwrap()).unwrap();
    // Resources give the whole records (`detail: full`).
    assert_eq!(
        sessions,
        tools.call("list_sessions", json!({"detail": "full"})).await
    );
    let server: Value =
        serde_json::from_str(&read_text(&c, "tmux://server").await.unwrap()).unwrap();
    assert_eq!(server["generation"], json!(generation(&tools).await));
    let info: Value = serde_json::from_str(
        &read_text(&c, &format!("{}/info", uri(&other)))
            .await
            .unwrap(),
    )
    .unwrap();
    let record = panes["panes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == json!(other))
        .unwrap();
    assert_eq!(&info, record, "the info resource is the list_panes record");
    // The screen is capture_pane's text; every spelling of the id reads it.
    let screen = read_text(&c, &uri(&other)).await.unwrap();
    assert!(screen.contains("hello from the pane"), "{screen:?}");
    assert_eq!(
        screen,
        tools.call("capture_pane", json!({"paneId": other})).await["text"]
            .as_str()
            .unwrap()
    );
    assert_eq!(
        read_text(&c, &format!("tmux://pane/{other}"))
            .await
            .unwrap(),
        screen
    );
    // Unknown resources and panes are errors naming them.
    let e = read_text(&c, "tmux://pane/%25999").await.unwrap_err();
    assert!(e.contains("%999"), "{e}");
    let e = read_text(&c, "tmux://nothing").await.unwrap_err();
    assert!(e.contains("unknown resource"), "{e}");

    // A capture hook: the screen is refused, and the hook does not run.
    let trap = HookTrap::new(&srv);
    srv.tmux(&["set-hook", "-g", "after-capture-pane", &trap.command]);
    let e = read_text(&c, &uri(&other)).await.unwrap_err();
    assert!(e.contains("after-capture-pane"), "{e}");
    assert_eq!(
        trap.fire_sentinel(
            &srv,
            "after-display-message",
            &["display-message", "-p", ""]
        ),
        ""
    );
    c.cancel().await.ok();
    tools.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_subscriptions_tell_output_coalesced_and_stop_on_unsubscribe() {
    let srv = TmuxServer::start();
    let a = "%0".to_string();
    let b = a_second_pane(&srv);
    let (c, mut rx) = client(&srv, &[]).await;
    subscribe(&c, &uri(&a)).await.unwrap();
    subscribe(&c, &uri(&b)).await.unwrap();
    // Subscribing to what does not exist is refused.
    let e = subscribe(&c, "tmux://pane/%25999").await.unwrap_err();
    assert!(e.contains("%999"), "{e}");

    // One line → an update for that pane (and none for the other).
    write_to_pane(&srv, &a, "one");
    let before = until_updated(&mut rx, &uri(&a)).await;
    assert!(!before.contains(&Some(uri(&b))), "{before:?}");

    // A burst of 40 lines over ~1 s: at most 4 updates a second (plus the
    // trailing one), at least one.
    tokio::time::sleep(Duration::from_millis(300)).await;
    while rx.try_recv().is_ok() {}
    let start = Instant::now();
    for i in 0..40 {
        write_to_pane(&srv, &a, &format!("burst {i}"));
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let burst = start.elapsed();
    tokio::time::sleep(Duration::from_millis(400)).await; // the trailing update's slot
    write_to_pane(&srv, &b, "sentinel");
    let heard = until_updated(&mut rx, &uri(&b)).await;
    let updates = heard
        .iter()
        .filter(|u| u.as_deref() == Some(uri(&a).as_str()))
        .count();
    let allowed = (burst.as_secs_f64() * 4.0).ceil() as usize + 2;
    assert!(
        (1..=allowed).contains(&updates),
        "{updates} updates for a {burst:?} burst (allowed 1..={allowed})"
    );

    // The safety net (`activity`) reads a's cursor every 250 ms, so the burst
    // can bring one more update of a after b's sentinel: let it come first.
    tokio::time::sleep(Duration::from_millis(700)).await;
    while rx.try_recv().is_ok() {}

    // Unsubscribed: writes to a bring nothing (the sentinel on b proves it).
    let req = ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(
        UnsubscribeRequestParams::new(uri(&a)),
    ));
    c.peer().send_request(req).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    write_to_pane(&srv, &a, "after unsubscribe");
    tokio::time::sleep(Duration::from_millis(100)).await;
    write_to_pane(&srv, &b, "sentinel 2");
    let heard = until_updated(&mut rx, &uri(&b)).await;
    assert!(
        !heard.contains(&Some(uri(&a))),
        "an update came after unsubscribe: {heard:?}"
    );

    // A new pane: list_changed, and the new pane is listed.
    let before = c.list_all_resources().await.unwrap().len();
    let new = a_second_pane(&srv);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(None)) => break,
            Ok(Some(_)) => continue,
            _ => panic!("no notifications/resources/list_changed after a new pane"),
        }
    }
    let listed: Vec<String> = c
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri)
        .collect();
    assert_eq!(listed.len(), before + 1);
    assert!(listed.contains(&uri(&new)), "{listed:?}");
    c.cancel().await.ok();
}

/// A relay started inside a pane of session `main` (scope: that session),
/// speaking the 2025-06-18 era over FIFOs.
#[test]
fn a_session_scoped_agent_lists_reads_and_subscribes_only_to_what_it_sees() {
    let srv = TmuxServer::start();
    let other = srv
        .tmux(&[
            "new-session",
            "-d",
            "-s",
            "other",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    let mut relay = PaneRelay::start(&srv, "scoped", &[], false);
    let ch = &mut relay.channel;
    let listed = ch.request(2, "resources/list", json!({}));
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(
        uris.contains(&uri("%0").as_str()) && !uris.contains(&uri(&other).as_str()),
        "{uris:?}"
    );
    let read = ch.request(3, "resources/read", json!({"uri": uri(&other)}));
    assert!(
        read["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("outside this session's scope")),
        "{read}"
    );
    // A refused read says why in a code and a reason, never -32603 (internal).
    assert_eq!(
        (
            read["error"]["code"].as_i64(),
            read["error"]["data"]["reason"].as_str()
        ),
        (Some(-32002), Some("not_visible")),
        "{read}"
    );
    let gone = ch.request(30, "resources/read", json!({"uri": "tmux://pane/%25999"}));
    assert_eq!(
        (
            gone["error"]["code"].as_i64(),
            gone["error"]["data"]["reason"].as_str()
        ),
        (Some(-32002), Some("not_found")),
        "{gone}"
    );
    let trap = HookTrap::new(&srv);
    srv.tmux(&["set-hook", "-g", "after-capture-pane", &trap.command]);
    let hooked = ch.request(31, "resources/read", json!({"uri": uri("%0")}));
    assert_eq!(
        (
            hooked["error"]["code"].as_i64(),
            hooked["error"]["data"]["reason"].as_str(),
            hooked["error"]["data"]["delivery"].as_str()
        ),
        (Some(-31001), Some("hook_set"), Some("not_sent")),
        "{hooked}"
    );
    assert!(
        hooked["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("after-capture-pane")),
        "{hooked}"
    );
    srv.tmux(&["set-hook", "-gu", "after-capture-pane"]);
    assert_eq!(trap.fired(), "", "the refused read ran the hook");
    let sub = ch.request(4, "resources/subscribe", json!({"uri": uri(&other)}));
    assert!(
        sub["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(&other)),
        "{sub}"
    );
    let sub = ch.request(5, "resources/subscribe", json!({"uri": uri("%0")}));
    assert!(sub.get("result").is_some(), "{sub}");
    let panes = ch.request(6, "resources/read", json!({"uri": "tmux://panes"}));
    let panes: Value =
        serde_json::from_str(panes["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    let ids: Vec<&str> = panes["panes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert!(
        !ids.contains(&other.as_str()) && ids.contains(&"%0"),
        "{ids:?}"
    );
}

/// A pane the person handed over (the key binding's `tmux-mcp cursor`) is
/// readable and subscribable through `?handoff=CURSOR` by an agent whose scope
/// does not include it; a made-up cursor opens nothing.
#[test]
fn a_handed_over_pane_is_readable_through_its_cursor_whatever_the_scope() {
    let srv = TmuxServer::start();
    let other = srv
        .tmux(&[
            "new-session",
            "-d",
            "-s",
            "other",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    write_to_pane(&srv, &other, "handed over text");
    let mut relay = PaneRelay::start(&srv, "handed", &[], false);
    let ch = &mut relay.channel;
    let refused = ch.request(2, "resources/read", json!({"uri": uri(&other)}));
    assert!(
        refused.get("error").is_some(),
        "out of scope without the hand-off: {refused}"
    );
    let (out, _) = run_with_timeout(
        tmux_mcp(&["cursor", "-S", srv.socket_str(), &other]),
        Duration::from_secs(15),
    );
    assert!(
        out.status.success(),
        "tmux-mcp cursor failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (since_args, _) = parse_handoff(String::from_utf8(out.stdout).unwrap().trim_end());
    let cursor = since_args["cursor"].as_str().unwrap().to_string();
    let handed = format!("{}?handoff={cursor}", uri(&other));
    let read = ch.request(3, "resources/read", json!({"uri": handed}));
    let text = read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{read}"));
    assert!(text.contains("handed over text"), "{text:?}");
    let fake = ch.request(
        4,
        "resources/read",
        json!({"uri": format!("{}?handoff=0123456789abcdef0123456789abcdef", uri(&other))}),
    );
    assert!(
        fake.get("error").is_some(),
        "a made-up cursor read the pane: {fake}"
    );
    let sub = ch.request(5, "resources/subscribe", json!({"uri": handed}));
    assert!(sub.get("result").is_some(), "{sub}");
    write_to_pane(&srv, &other, "more");
    ch.recv_where(Duration::from_secs(5), |m| is_update(m, &handed))
        .expect("no update for the handed-over pane");
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": {"name": "raw-e2e", "version": "0"}, "io.modelcontextprotocol/clientCapabilities": {}})
}

fn is_update(m: &Value, uri: &str) -> bool {
    m["method"] == json!("notifications/resources/updated") && m["params"]["uri"] == json!(uri)
}

#[test]
fn listen_streams_tell_updates_in_the_2026_era_and_end_when_cancelled() {
    let srv = TmuxServer::start();
    let b = a_second_pane(&srv);
    let mut raw = RawClient::attach(&srv, &[]);
    let (ua, ub) = (uri("%0"), uri(&b));
    raw.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {"_meta": meta(), "notifications": {"resourceSubscriptions": [ua, ub, "tmux://pane/%25999"], "resourcesListChanged": true}}}));
    let ack = raw
        .recv_where(Duration::from_secs(10), |m| {
            m["method"] == json!("notifications/subscriptions/acknowledged")
        })
        .expect("acknowledged");
    let accepted = &ack["params"]["notifications"];
    assert_eq!(
        accepted["resourceSubscriptions"],
        json!([ua, ub]),
        "an unknown pane is left out: {ack}"
    );
    write_to_pane(&srv, "%0", "in the 2026 era");
    let up = raw
        .recv_where(Duration::from_secs(5), |m| is_update(m, &ua))
        .expect("an update on the listen stream");
    assert_eq!(
        up["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(7),
        "{up}"
    );
    // A new pane: list_changed on the stream.
    let _new = a_second_pane(&srv);
    raw.recv_where(Duration::from_secs(5), |m| {
        m["method"] == json!("notifications/resources/list_changed")
    })
    .expect("list_changed on the stream");
    // Cancelled: no more updates (sentinel: a second stream on b).
    raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "_meta": meta()}}));
    raw.send(&json!({"jsonrpc": "2.0", "id": 8, "method": "subscriptions/listen", "params": {"_meta": meta(), "notifications": {"resourceSubscriptions": [ub]}}}));
    raw.recv_where(Duration::from_secs(10), |m| {
        m["method"] == json!("notifications/subscriptions/acknowledged")
            && m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == json!(8)
    })
    .expect("second ack");
    let _ = raw.take_kept(|_| true);
    write_to_pane(&srv, "%0", "after cancel");
    std::thread::sleep(Duration::from_millis(100));
    write_to_pane(&srv, &b, "sentinel");
    raw.recv_where(Duration::from_secs(5), |m| is_update(m, &ub))
        .expect("the sentinel's update");
    let late = raw.take_kept(|m| is_update(m, &ua));
    assert!(
        late.is_empty(),
        "updates after the stream was cancelled: {late:?}"
    );
    raw.close();
}

/// Issue "Exact and honest, round 2" item 10: what a person types into a
/// program reading in cooked mode (`cat`) is echoed by the kernel, not written
/// by a process, so inotify on the terminal never sees it. The safety net
/// (`activity`) reads the watched panes' cursor and history every 250 ms:
/// the subscriber hears of it, and `wait_for_text` finds the typed text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_echo_nobody_wrote_is_seen() {
    let srv = TmuxServer::start();
    let pane = srv
        .tmux(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            "main:",
            "cat",
        ])
        .trim()
        .to_string();
    poll(Duration::from_secs(5), || {
        (srv.tmux(&[
            "display-message",
            "-p",
            "-t",
            &pane,
            "#{pane_current_command}",
        ])
        .trim()
            == "cat")
            .then_some(())
    })
    .expect("cat runs");
    let (c, mut rx) = client(&srv, &[]).await;
    subscribe(&c, &uri(&pane)).await.unwrap();
    // Whatever the subscription's start sends, let it pass first.
    tokio::time::sleep(Duration::from_millis(700)).await;
    while rx.try_recv().is_ok() {}
    let typed = Instant::now();
    srv.tmux(&["send-keys", "-t", &pane, "-l", "typed-by-a-person"]);
    until_updated(&mut rx, &uri(&pane)).await;
    eprintln!("typed echo heard after {:?}", typed.elapsed());
    c.cancel().await.ok();

    let tools = McpClient::attach(&srv, &[]).await;
    let waiting = {
        let pane = pane.clone();
        let tools = &tools;
        async move {
            tools
                .call(
                    "wait_for_text",
                    json!({ "paneId": pane, "patterns": ["second-line-typed"], "timeoutMs": 4000 }),
                )
                .await
        }
    };
    let typing = async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        srv.tmux(&["send-keys", "-t", &pane, "-l", " second-line-typed"]);
    };
    let (found, ()) = tokio::join!(waiting, typing);
    assert_eq!(
        found["outcome"], "matched",
        "wait_for_text missed typed echo: {found:#}"
    );
    tools.close().await;
}

/// A change made the moment a client hears it is subscribed is told, in both
/// eras: what a subscription watches is armed before the answer (the
/// `resources/subscribe` result, the listen stream's acknowledgment), not
/// when its watch task gets to run. The debug broker holds every watch task
/// back 400 ms (`TMUX_MCP_TEST_WATCH_DELAY_MS`), so the write, and the new
/// pane, land in that moment every time; armed in the task, both were lost
/// for good (the safety net's first reading already showed the write).
#[test]
fn a_change_right_after_subscribing_is_told() {
    let srv = TmuxServer::start();
    let b = a_second_pane(&srv);
    // The broker is a tmux job (run-shell -b): it has tmux's environment.
    srv.tmux(&[
        "set-environment",
        "-g",
        "TMUX_MCP_TEST_WATCH_DELAY_MS",
        "400",
    ]);

    // 2025-06-18: resources/subscribe, then write at once.
    let mut legacy = RawClient::attach(&srv, &[]);
    legacy.initialize();
    let r = legacy.request(1, "resources/subscribe", json!({"uri": uri("%0")}));
    assert!(r.get("result").is_some(), "{r}");
    write_to_pane(&srv, "%0", "right after subscribe");
    legacy
        .recv_where(Duration::from_secs(5), |m| is_update(m, &uri("%0")))
        .expect("the write right after resources/subscribe is told");
    legacy.close();

    // 2026-07-28: a listen stream, then write and make a pane at once.
    let mut raw = RawClient::attach(&srv, &[]);
    raw.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {"_meta": meta(), "notifications": {"resourceSubscriptions": [uri(&b)], "resourcesListChanged": true}}}));
    raw.recv_where(Duration::from_secs(10), |m| {
        m["method"] == json!("notifications/subscriptions/acknowledged")
    })
    .expect("acknowledged");
    write_to_pane(&srv, &b, "right after the acknowledgment");
    let _new = a_second_pane(&srv);
    raw.recv_where(Duration::from_secs(5), |m| is_update(m, &uri(&b)))
        .expect("the write right after the acknowledgment is told");
    raw.recv_where(Duration::from_secs(5), |m| {
        m["method"] == json!("notifications/resources/list_changed")
    })
    .expect("the pane made right after the acknowledgment is told");
    raw.close();
}
