//! Attached clients, read hook-free: `tmux_snapshot` client records, from tmux
//! 3.5 (the `L:` format loop); coverage `unavailable` before. `snapshot_pane`'s
//! `isAttended` (exact from 3.5 the same way) is tested in libtmux.rs, and that
//! these reads fire no hook in hook_trap.rs.

use serde_json::{json, Value};
use tmux_mcp_e2e::{
    checked_structured, tmux_at_least, ControlClient, McpClient, PaneRelay, TerminalClient,
    TmuxServer,
};

async fn clients(c: &McpClient, criteria: Option<Value>) -> (Value, Vec<Value>) {
    let mut args = json!({ "entity": "client" });
    if let Some(w) = criteria {
        args["criteria"] = json!({ "profile": "libtmux-ruby.where", "version": 1, "entity": "client", "where": w });
    }
    let e = c.call_envelope("tmux_snapshot", args).await;
    assert!(!e.is_error, "{}", e.text);
    let data = e.structured["data"].clone();
    let items = data["items"].as_array().unwrap().clone();
    (data, items)
}

/// tmux's own view of a client, asked by the test (the broker never runs
/// `list-clients`: it fires `after-list-clients`).
fn tmux_client(srv: &TmuxServer, pid: u32) -> Vec<String> {
    let out = srv.tmux(&["list-clients", "-F", "#{client_pid}|#{client_name}|#{client_tty}|#{client_created}|#{session_id}|#{client_width}|#{client_height}|#{client_control_mode}|#{client_readonly}|#{client_utf8}"]);
    out.lines()
        .map(|l| l.split('|').map(str::to_string).collect::<Vec<_>>())
        .find(|f| f[0] == pid.to_string())
        .unwrap_or_else(|| panic!("tmux lists no client {pid}: {out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_client_records_are_the_attached_clients() {
    let srv = TmuxServer::start();
    srv.tmux(&["new-session", "-d", "-s", "second", "sleep 1000"]);
    let c = McpClient::attach(&srv, &[]).await;
    let person = TerminalClient::attach(&srv, "main", 100, 30);
    let control = ControlClient::attach(&srv, "second");
    let caps = c.call_envelope("tmux_capabilities", json!({})).await;
    assert_eq!(
        caps.structured["data"]["observation"]["clients"],
        json!(if tmux_at_least(3, 5) {
            "format_loop"
        } else {
            "unavailable"
        }),
        "{:#}",
        caps.structured
    );
    if !tmux_at_least(3, 5) {
        // Not an empty page (an agent would read "no clients attached"): an
        // error that says why, with nothing sent that has an effect.
        let e = c
            .call_envelope("tmux_snapshot", json!({"entity": "client"}))
            .await;
        let text = e.expect_error("unsupported", "not_sent");
        assert!(
            text.contains("cannot be read on this tmux") && text.contains("after-list-clients"),
            "{text}"
        );
        c.close().await;
        return;
    }
    let (data, items) = clients(&c, None).await;
    assert_eq!(
        (
            data["coverage"]["client"].as_str(),
            data["coverage"]["pane"].as_str()
        ),
        (Some("complete"), Some("complete")),
        "{data:#}"
    );
    assert_eq!(
        data["interval"]["reads"],
        json!(2),
        "the table, then the clients"
    );
    let pids: Vec<u64> = items
        .iter()
        .map(|i| i["fields"]["pid"].as_u64().unwrap())
        .collect();
    let mut want = vec![person.pid as u64, control.pid() as u64];
    want.sort();
    assert_eq!(pids, want, "both attached clients, by pid; the broker's own command clients are not listed: {items:#?}");
    for item in &items {
        let f = &item["fields"];
        let t = tmux_client(&srv, f["pid"].as_u64().unwrap() as u32);
        assert_eq!(
            (item["kind"].as_str(), &item["ref"]),
            (Some("client"), &Value::Null),
            "{item:#}"
        );
        assert_eq!(f["name"].as_str(), Some(t[1].as_str()), "{item:#}");
        assert_eq!(f["tty"].as_str().unwrap_or(""), t[2], "{item:#}");
        assert_eq!(f["created"].to_string(), t[3], "{item:#}");
        assert_eq!(f["sessionId"].as_str(), Some(t[4].as_str()), "{item:#}");
        assert_eq!(f["width"].to_string(), t[5], "{item:#}");
        assert_eq!(
            f["height"]
                .as_u64()
                .map(|h| h.to_string())
                .unwrap_or_default(),
            t[6],
            "{item:#}"
        );
        assert_eq!(
            (
                f["controlMode"].as_bool(),
                f["readOnly"].as_bool(),
                f["utf8"].as_bool()
            ),
            (Some(t[7] == "1"), Some(t[8] == "1"), Some(t[9] == "1")),
            "{item:#}"
        );
    }
    let terminal = items
        .iter()
        .find(|i| i["fields"]["pid"] == json!(person.pid))
        .unwrap();
    assert_eq!(
        (
            terminal["fields"]["width"].as_u64(),
            terminal["fields"]["height"].as_u64(),
            terminal["fields"]["controlMode"].as_bool()
        ),
        (Some(100), Some(30), Some(false)),
        "{terminal:#}"
    );
    // Criteria over fields and the client -> session relation.
    let (_, people) = clients(&c, Some(json!({ "controlMode": false }))).await;
    assert_eq!(
        people
            .iter()
            .map(|i| i["fields"]["pid"].clone())
            .collect::<Vec<_>>(),
        vec![json!(person.pid)]
    );
    let (_, on_second) = clients(
        &c,
        Some(json!({ "session": { "is": { "name": "second" } } })),
    )
    .await;
    assert_eq!(
        on_second
            .iter()
            .map(|i| i["fields"]["pid"].clone())
            .collect::<Vec<_>>(),
        vec![json!(control.pid())]
    );
    // An agent scoped to main's session sees main's client only.
    let mut relay = PaneRelay::start(&srv, "scoped", &["--scope", "session"], true);
    let resp = relay.channel.request(
        2,
        "tools/call",
        json!({ "name": "tmux_snapshot", "arguments": { "entity": "client" } }),
    );
    let scoped = checked_structured(&relay.tools, "tmux_snapshot", &resp);
    let seen: Vec<&Value> = scoped["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["fields"]["sessionId"])
        .collect();
    let main = srv
        .tmux(&["display-message", "-p", "-t", "main:", "#{session_id}"])
        .trim()
        .to_string();
    assert_eq!(seen, vec![&json!(main)], "{scoped:#}");
    drop(relay);
    drop(control);
    let (_, items) = clients(&c, None).await;
    assert_eq!(
        items
            .iter()
            .map(|i| i["fields"]["pid"].clone())
            .collect::<Vec<_>>(),
        vec![json!(person.pid)],
        "a client that left is gone from the next snapshot"
    );
    c.close().await;
}
