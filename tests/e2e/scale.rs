//! Reads whose cost does not depend on the size of the server (the issue
//! "Fast at every scale", item 1): a pane read resolves through the cached
//! table and proves it inside tmux's queue, so it runs no table read.

use serde_json::json;
use tmux_mcp_e2e::*;

fn commands(srv: &TmuxServer) -> u64 {
    srv.status()["tmux_commands"].as_u64().expect("status counts tmux commands")
}

/// `capture_pane` is one guarded capture with the hook check in its queue on
/// tmux >= 3.5, the hook preflight plus that capture before: one or two tmux
/// commands, no table read, on a server with many panes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_pane_runs_no_table_read() {
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
    let per = tmux_commands_per_capture();
    assert_eq!(after - before, 5 * per, "5 captures ran {} tmux commands ({per} each expected)", after - before);
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

/// The table read sanitises only the text tmux does not clean itself: names,
/// titles, commands and paths holding the separator bytes (and newlines) must
/// neither break the read nor shift a column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_read_survives_separators_in_every_free_text_field() {
    let srv = TmuxServer::start();
    let nasty = "x\u{1f}y\u{1e}z\nw";
    let dir = srv.dir().join(nasty);
    std::fs::create_dir_all(&dir).unwrap();
    // tmux 3.6+ refuses such names outright; whatever a version accepts must read right.
    let d = dir.to_str().unwrap();
    if !srv.try_tmux(&["new-session", "-d", "-s", nasty, "-n", nasty, "-c", d, "sleep 1000"]).status.success() {
        srv.tmux(&["new-session", "-d", "-s", "plain", "-c", d, "sleep 1000"]);
    }
    let pane = srv.tmux(&["display-message", "-p", "-t", "%1", "#{pane_id}"]).trim().to_string();
    let _ = srv.try_tmux(&["select-pane", "-t", &pane, "-T", nasty]);
    if !srv.try_tmux(&["new-window", "-d", "-t", "main:", "-n", nasty, "sleep 1001"]).status.success() {
        srv.tmux(&["new-window", "-d", "-t", "main:", "sleep 1001"]);
    }
    let c = McpClient::attach(&srv, &[]).await;
    let list = c.call("list_panes", json!({})).await;
    let panes = list["panes"].as_array().unwrap();
    assert_eq!(panes.len(), 3, "{list:#}");
    let p = panes.iter().find(|p| p["id"] == json!(pane)).expect("the nasty session's pane");
    assert_eq!(p["pid"].as_u64().unwrap().to_string(), srv.tmux(&["display-message", "-p", "-t", &pane, "#{pane_pid}"]).trim(), "a column shifted: {p:#}");
    assert_eq!(p["width"].as_u64().unwrap().to_string(), srv.tmux(&["display-message", "-p", "-t", &pane, "#{pane_width}"]).trim(), "a column shifted: {p:#}");
    for field in ["windowName", "cwd", "title"] {
        let v = p[field].as_str().unwrap();
        assert!(!v.contains('\u{1f}') && !v.contains('\u{1e}') && !v.contains('\n'), "{field} holds a separator: {v:?}");
    }
    c.close().await;
}
