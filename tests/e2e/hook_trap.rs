//! The hook trap over the whole family (issue "The libtmux family", item 7):
//! with an `after-*` hook set for every tmux command, every read-only tool the
//! broker publishes — found from `tools/list` at the highest tier with every
//! opt-in tool enabled, so a new read tool cannot be forgotten — and every
//! resource read fires none (nor `command-error`, which a failing command
//! runs, from tmux 3.5). Two passes: every hook armed (captures are then
//! refused, since `after-capture-pane` is set), and every hook but
//! `after-capture-pane` (captures run, and still fire nothing else).
//!
//! The check is a sentinel: the test's own `display-message` fires
//! `after-display-message` once; every hook of an earlier command is in the
//! trap file before that line.

use serde_json::{json, Value};
use tmux_mcp_e2e::*;

/// Arguments that make each read-only tool do its read on pane `%0`
/// (`gen` is the server generation). A read tool missing here fails the test.
fn sample_args(tool: &str, gen: &str) -> Option<Value> {
    let pane = pane_ref(gen, "%0");
    Some(match tool {
        "tmux_capabilities" | "list_panes" | "list_sessions" | "list_windows" | "get_server_info" | "show_hooks" => json!({}),
        "tmux_snapshot" => json!({"entity": "pane"}),
        "capture_pane" | "snapshot_pane" | "get_pane_info" | "capture_since" => json!({"paneId": "%0"}),
        "show_options" => json!({"names": ["status", "history-limit"], "pane": "%0"}),
        "show_environment" => json!({"names": ["PATH"]}),
        "search_panes" => json!({"pattern": "x", "scrollbackLines": 5}),
        "batch" => json!({"calls": [{"tool": "list_panes"}, {"tool": "capture_pane", "arguments": {"paneId": "%0"}}]}),
        "tmux_capture" => json!({"target": pane}),
        "tmux_wait" => json!({"target": pane, "condition": {"type": "screen_contains", "text": "$"}, "timeout": 0.5}),
        "get_job" => json!({"jobId": "0123456789abcdef0123456789abcdef"}),
        "wait_for_text" => json!({"paneId": "%0", "patterns": ["$"], "timeoutMs": 300}),
        "wait_for_idle" => json!({"paneId": "%0", "idleSeconds": 0.2, "timeoutMs": 500}),
        _ => return None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_read_tool_or_resource_fires_any_hook() {
    let srv = TmuxServer::start();
    srv.tmux(&["new-window", "-d", "-t", "main:", "sleep 1000"]);
    // A person attached, so the client loops (get_server_info, tmux_snapshot,
    // snapshot_pane on tmux >= 3.5) have a client to expand.
    let _person = TerminalClient::attach(&srv, "main", 80, 24);
    let trap = HookTrap::at(srv.dir().join("hooks.log"));
    let sentinel = || srv.tmux(&["display-message", "-p", ""]);
    // Every tool: the highest tier, and every opt-in tool of the README's
    // tools table by name.
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let mut extra: Vec<String> = ["--safety", "destructive", "--scope", "server"].map(String::from).to_vec();
    for line in readme.lines() {
        if let Some(name) = line.strip_prefix("| `").and_then(|l| l.split_once("` | opt-in |")).map(|(n, _)| n) {
            extra.extend(["--enable-tool".to_string(), name.to_string()]);
        }
    }
    assert!(extra.len() > 4, "no opt-in tool found in README.md's tools table");
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let c = McpClient::attach(&srv, &extra).await;
    let gen = generation(&c).await;
    let reads: Vec<String> = c
        .tools()
        .iter()
        .filter(|t| t.meta.as_ref().and_then(|m| m.get("tmux-mcp/tier")).and_then(Value::as_str) == Some("readonly"))
        .map(|t| t.name.to_string())
        .collect();
    assert!(reads.len() >= 15, "{reads:?}");
    let missing: Vec<&String> = reads.iter().filter(|t| sample_args(t, &gen).is_none()).collect();
    assert!(missing.is_empty(), "read-only tools with no sample call in this test (add them): {missing:?}");
    let resources = ["tmux://server", "tmux://sessions", "tmux://panes", "tmux://pane/%250", "tmux://pane/%250/info"];

    for except in [&[][..], &["after-capture-pane"][..]] {
        let armed = trap.arm_every_after_hook(&srv, except);
        assert!(armed.iter().any(|h| h == "after-display-message") && armed.iter().any(|h| h == "after-list-panes"), "{armed:?}");
        assert_eq!(armed.iter().any(|h| h == "command-error"), hook_check_in_queue(), "command-error is a hook exactly from tmux 3.5: {armed:?}");
        sentinel();
        trap.before_sentinel("after-display-message");
        trap.clear();
        let mut answered = Vec::new();
        for tool in &reads {
            let r = c.call_raw(tool, sample_args(tool, &gen).unwrap()).await;
            answered.push((tool.clone(), r.is_error == Some(true)));
        }
        let peer = c.peer();
        for uri in resources {
            let _ = peer.read_resource(rmcp::model::ReadResourceRequestParams::new(uri)).await;
        }
        sentinel();
        trap.before_sentinel("after-display-message");
        assert_eq!(trap.fired(), "after-display-message\n", "hooks ran for a read (except {except:?}); calls: {answered:?}");
        if except.is_empty() {
            trap.clear();
        } else {
            // With the capture hook unset, the captures really ran.
            for tool in ["capture_pane", "snapshot_pane", "capture_since", "tmux_capture"] {
                assert!(answered.iter().any(|(t, err)| t == tool && !err), "{tool} failed without an after-capture-pane hook: {answered:?}");
            }
        }
    }
    c.close().await;
}
