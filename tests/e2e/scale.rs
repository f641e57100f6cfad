//! Reads whose cost does not depend on the size of the server (the issue
//! "Fast at every scale", item 1): a pane read resolves through the cached
//! table and proves it inside tmux's queue, so it runs no table read.

use serde_json::json;
use tmux_mcp_e2e::*;

fn commands(srv: &TmuxServer) -> u64 {
    srv.status()["tmux_commands"].as_u64().expect("status counts tmux commands")
}

/// `capture_pane` is the hook preflight plus one guarded capture: two tmux
/// commands, no table read, on a server with many panes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_pane_runs_two_tmux_commands_and_no_table_read() {
    let srv = TmuxServer::start();
    for _ in 0..20 {
        srv.tmux(&["new-window", "-d", "sleep 1000"]);
    }
    let c = McpClient::attach(&srv, &[]).await;
    c.call("list_panes", json!({})).await; // the broker's table knows every pane
    let before = commands(&srv);
    for _ in 0..5 {
        let r = c.call("capture_pane", json!({ "paneId": "%0" })).await;
        assert_eq!(r["paneId"], "%0");
    }
    let after = commands(&srv);
    assert_eq!(after - before, 10, "5 captures ran {} tmux commands (2 each expected: show-hooks, guarded capture-pane)", after - before);
    c.close().await;
}

/// The cached size is proven by the guard: after a resize that no listing
/// saw, `capture_pane` plans its range from the new size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_pane_after_an_unseen_resize_plans_from_the_new_size() {
    let srv = TmuxServer::start();
    let pane = srv.tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", "sh -c 'i=0; while [ $i -lt 60 ]; do echo line$i; i=$((i+1)); done; exec sleep 1000'"]).trim().to_string();
    let c = McpClient::attach(&srv, &[]).await;
    // maxLines below the height: the plan keeps the last rows up to the
    // bottom of the screen, so its end is the height the broker believes.
    let first = c.call("capture_pane", json!({ "paneId": pane, "start": 0, "maxLines": 5 })).await;
    let before = srv.tmux(&["display-message", "-p", "-t", &pane, "#{pane_height}"]).trim().parse::<u64>().unwrap();
    srv.tmux(&["resize-window", "-t", &pane, "-y", "12"]);
    let height = srv.tmux(&["display-message", "-p", "-t", &pane, "#{pane_height}"]).trim().parse::<u64>().unwrap();
    assert!(height < before, "test premise: the pane got shorter ({before} -> {height})");
    assert_eq!(first["effectiveEnd"], json!(before - 1), "{first:#}");
    let second = c.call("capture_pane", json!({ "paneId": pane, "start": 0, "maxLines": 5 })).await;
    assert_eq!(second["effectiveEnd"], json!(height - 1), "the range was planned from the stale size: {second:#} (before: {first:#})");
    c.close().await;
}
