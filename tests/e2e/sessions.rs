//! Many agents, many servers: one broker per server shared by its clients,
//! and no reference or process crossing from one server to another.

use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tmux_mcp_e2e::*;

/// `pane_id -> pane_pid` as tmux itself reports it.
fn tmux_panes(srv: &TmuxServer) -> BTreeMap<String, u64> {
    srv.tmux(&["list-panes", "-a", "-F", "#{pane_id} #{pane_pid}"])
        .lines()
        .map(|l| {
            let (id, pid) = l.split_once(' ').expect("id pid");
            (id.to_string(), pid.parse().expect("pid"))
        })
        .collect()
}

fn listed(list: &Value) -> BTreeMap<String, u64> {
    list["panes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap().to_string(),
                p["pid"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_two_brokers_no_crosstalk() {
    let a = TmuxServer::start();
    let b = TmuxServer::start();
    // Give A more panes than B so pane ids exist on A only.
    a.tmux(&["new-window", "-d"]);
    a.tmux(&["split-window", "-d", "-t", "main:1"]);

    let ca = McpClient::attach(&a, &[]).await;
    let cb = McpClient::attach(&b, &[]).await;
    let cap_a = ca.call("tmux_capabilities", json!({})).await;
    let cap_b = cb.call("tmux_capabilities", json!({})).await;
    let gen_a = cap_a["data"]["server_identity"]["generation"]
        .as_str()
        .unwrap()
        .to_string();
    let gen_b = cap_b["data"]["server_identity"]["generation"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(gen_a, gen_b, "two servers share a generation");
    assert_eq!(cap_a["data"]["server_identity"]["pid"], a.pid());
    assert_eq!(cap_b["data"]["server_identity"]["pid"], b.pid());

    let broker_a = cap_a["data"]["broker"]["pid"].as_u64().unwrap() as u32;
    let broker_b = cap_b["data"]["broker"]["pid"].as_u64().unwrap() as u32;
    assert_ne!(broker_a, broker_b, "one broker serves two servers");
    assert_eq!(a.brokers(), vec![broker_a]);
    assert_eq!(b.brokers(), vec![broker_b]);
    assert_ne!(a.status()["broker_socket"], b.status()["broker_socket"]);

    let la = ca.call("list_panes", json!({"detail": "full"})).await;
    let lb = cb.call("list_panes", json!({"detail": "full"})).await;
    // Each lists exactly its own server's panes, with that server's pids …
    assert_eq!(
        listed(&la),
        tmux_panes(&a),
        "server A's list_panes differs from A's panes: {la:#}"
    );
    assert_eq!(
        listed(&lb),
        tmux_panes(&b),
        "server B's list_panes differs from B's panes: {lb:#}"
    );
    assert_eq!(listed(&la).len(), 3);
    assert_eq!(listed(&lb).len(), 1);
    // … and every reference carries that server's generation only.
    for (list, gen) in [(&la, &gen_a), (&lb, &gen_b)] {
        assert_eq!(&list["generation"], gen);
        for p in list["panes"].as_array().unwrap() {
            assert_eq!(
                p["ref"]["generation"],
                json!(gen),
                "pane reference with a foreign generation: {p:#}"
            );
            assert_eq!(p["ref"]["id"], p["id"]);
            assert_eq!(p["ref"]["kind"], "pane");
        }
    }
    // %0 exists on both servers: it is a different pane (different process) on each.
    assert_ne!(pane(&la, "%0")["pid"], pane(&lb, "%0")["pid"]);
    ca.close().await;
    cb.close().await;

    // A reference minted by A is refused by B's broker, even for an id B has,
    // and nothing is sent to B's tmux.
    let ca = McpClient::attach(&a, &["--enable-tool", "tmux_capture"]).await;
    let cb = McpClient::attach(&b, &["--enable-tool", "tmux_capture"]).await;
    let ref_a = pane(&la, "%0")["ref"].clone();
    let own = ca.call("tmux_capture", json!({ "target": ref_a })).await;
    assert_eq!(own["ok"], true, "A's broker captures A's pane: {own:#}");
    let commands_before = b.status()["tmux_connections"].clone();
    let foreign = cb
        .call_raw("tmux_capture", json!({ "target": ref_a }))
        .await;
    assert_eq!(foreign.is_error, Some(true));
    let s = foreign.structured_content.expect("error envelope");
    assert_eq!(s["ok"], false);
    assert_eq!(s["error"]["code"], "stale_target", "{s:#}");
    assert_eq!(s["error"]["delivery"], "not_sent", "{s:#}");
    assert_eq!(
        b.status()["tmux_connections"],
        commands_before,
        "B's broker ran a tmux command for A's reference"
    );
    ca.close().await;
    cb.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_served_at_once() {
    let srv = TmuxServer::start();
    // Both sessions are open at the same time before either calls a tool.
    let (c1, c2) = tokio::join!(McpClient::attach(&srv, &[]), McpClient::attach(&srv, &[]));
    let (l1, l2) = tokio::join!(
        c1.call("list_panes", json!({"detail": "full"})),
        c2.call("list_panes", json!({"detail": "full"}))
    );
    let want: BTreeSet<String> = srv
        .tmux(&["list-panes", "-a", "-F", "#{pane_id}"])
        .lines()
        .map(str::to_string)
        .collect();
    for l in [&l1, &l2] {
        let got: BTreeSet<String> = l["panes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(got, want, "{l:#}");
    }
    assert_eq!(l1["generation"], l2["generation"]);

    let (k1, k2) = tokio::join!(
        c1.call("tmux_capabilities", json!({})),
        c2.call("tmux_capabilities", json!({}))
    );
    let brokers = srv.brokers();
    assert_eq!(
        brokers.len(),
        1,
        "expected one broker for two clients, found {brokers:?}"
    );
    for k in [&k1, &k2] {
        assert_eq!(k["data"]["broker"]["pid"], brokers[0]);
        assert_eq!(k["data"]["broker"]["sessions_open"], 2, "{k:#}");
    }
    assert_eq!(srv.status()["sessions_open"], 2);
    c1.close().await;
    // The other session is unaffected by the first one leaving.
    let again = c2.call("list_panes", json!({"detail": "full"})).await;
    assert_eq!(again["generation"], l2["generation"]);
    let open = poll_async(Duration::from_secs(3), || async {
        (srv.status()["sessions_open"] == 1).then_some(())
    })
    .await;
    assert!(
        open.is_some(),
        "sessions_open did not drop to 1 after one client closed: {:#}",
        srv.status()
    );
    c2.close().await;
}

/// The broker reads the pane table with `list-commands -F` by default and can be
/// told to use the `run-shell` feed helper, or to exec `tmux` for every command;
/// every way must give the same panes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_feed_mode_lists_the_same_panes() {
    let broker = bin("tmux-mcp-broker");
    for (flags, access) in [
        ("--feed run-shell", "run-shell"),
        ("--feed list-commands --exec-only", "list-commands"),
    ] {
        // tmux 3.4 and 3.5 print command output through strvis, so US/RS come
        // back as `\037`/`\036` and the table cannot be read with list-commands
        // there (the broker's start-up probe then picks run-shell by itself).
        let (major, minor, full) = tmux_version();
        if access == "list-commands" && (major, minor) >= (3, 4) && !tmux_at_least(3, 6) {
            eprintln!("SKIPPED on tmux {full}: {flags} (list-commands output is strvis-escaped on 3.4-3.5)");
            continue;
        }
        let srv = TmuxServer::start();
        srv.tmux(&["split-window", "-d"]);
        let quoted =
            format!("'{}'", broker.display().to_string().replace('\'', "'\\''")).replace('#', "##");
        srv.tmux(&[
            "run-shell",
            "-b",
            &format!(
                "exec {quoted} --socket '#{{socket_path}}' {flags} </dev/null >/dev/null 2>&1"
            ),
        ]);
        let status = poll(Duration::from_secs(5), || srv.try_status())
            .unwrap_or_else(|| panic!("broker with {flags} never answered"));
        let how = status["tmux_access"].as_str().unwrap_or_default();
        assert!(how.contains(access), "{flags}: tmux_access is {how:?}");
        if flags.contains("--exec-only") {
            assert!(how.contains("exec"), "{flags}: tmux_access is {how:?}");
        }
        let c = McpClient::attach(&srv, &[]).await;
        let list = c.call("list_panes", json!({"detail": "full"})).await;
        assert_eq!(listed(&list), tmux_panes(&srv), "{flags}: {list:#}");
        assert_eq!(
            srv.brokers(),
            vec![status["broker_pid"].as_u64().unwrap() as u32]
        );
        c.close().await;
    }
}
