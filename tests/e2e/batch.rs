//! `batch` (issue "The libtmux family", item 6): several read calls in one
//! request, results in order, each with its own error, each inner result valid
//! against its own tool's published outputSchema; the whole batch fires no hook.

use serde_json::{json, Value};
use tmux_mcp_e2e::*;

fn check_inner(c: &McpClient, answer: &Value) {
    let tool = answer["tool"].as_str().unwrap();
    if let Some(sc) = answer.get("structuredContent") {
        let schema = c
            .tool(tool)
            .output_schema
            .clone()
            .unwrap_or_else(|| panic!("{tool} has no outputSchema"));
        validate(&Value::Object((*schema).clone()), sc).unwrap_or_else(|e| {
            panic!("{tool}'s result in the batch does not validate: {e}\n{sc:#}")
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_answers_in_order_each_with_its_own_error() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &[]).await;
    let calls = json!([
        {"tool": "list_sessions"},
        {"tool": "get_pane_info", "arguments": {"paneId": "%0"}},
        {"tool": "tmux_send", "arguments": {}},
        {"tool": "no_such_tool"},
        {"tool": "batch", "arguments": {"calls": [{"tool": "list_panes"}]}},
        {"tool": "get_pane_info", "arguments": {"paneId": "zero"}},
        {"tool": "capture_pane", "arguments": {"paneId": "%0"}},
        {"tool": "list_panes", "arguments": {}}
    ]);
    let out = c.call("batch", json!({"calls": calls})).await;
    let r = out["results"].as_array().unwrap();
    let tools: Vec<&str> = r.iter().map(|a| a["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "list_sessions",
            "get_pane_info",
            "tmux_send",
            "no_such_tool",
            "batch",
            "get_pane_info",
            "capture_pane",
            "list_panes"
        ]
    );
    let errors: Vec<bool> = r.iter().map(|a| a["isError"].as_bool().unwrap()).collect();
    assert_eq!(
        errors,
        [false, false, true, true, true, true, false, false],
        "{out:#}"
    );
    assert!(
        r[2]["text"].as_str().unwrap().contains("not read-only"),
        "{}",
        r[2]["text"]
    );
    assert!(
        r[3]["text"].as_str().unwrap().contains("unknown tool"),
        "{}",
        r[3]["text"]
    );
    assert!(
        r[4]["text"]
            .as_str()
            .unwrap()
            .contains("cannot hold another batch"),
        "{}",
        r[4]["text"]
    );
    assert!(
        r[5]["text"].as_str().unwrap().contains("/paneId"),
        "the invalid argument is named: {}",
        r[5]["text"]
    );
    for a in r {
        check_inner(&c, a);
    }
    // The same answers as the calls alone.
    let alone = c.call("get_pane_info", json!({"paneId": "%0"})).await;
    assert_eq!(r[1]["structuredContent"], alone);
    assert_eq!(
        r[7]["structuredContent"]["panes"].as_array().map(Vec::len),
        c.call("list_panes", json!({})).await["panes"]
            .as_array()
            .map(Vec::len)
    );
    // Bad batch input names the field.
    let bad = c.call_raw("batch", json!({"calls": []})).await;
    assert_eq!(bad.is_error, Some(true));
    let text = bad.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("/calls"), "{text}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_every_read_fires_no_hook() {
    let srv = TmuxServer::start();
    srv.tmux(&["new-window", "-d", "-t", "main:", "sleep 1000"]);
    let trap = HookTrap::at(srv.dir().join("hooks.log"));
    let armed = trap.arm_every_after_hook(&srv, &[]);
    assert!(
        armed.iter().any(|h| h == "after-display-message")
            && armed.iter().any(|h| h == "after-show-options"),
        "{armed:?}"
    );
    let sentinel = || srv.tmux(&["display-message", "-p", ""]);
    let c = McpClient::attach(&srv, &ENABLE_SHOW).await;
    sentinel();
    trap.before_sentinel("after-display-message");
    trap.clear();
    let calls = json!([
        {"tool": "tmux_capabilities"},
        {"tool": "tmux_snapshot", "arguments": {"entity": "pane"}},
        {"tool": "list_panes"},
        {"tool": "list_sessions"},
        {"tool": "list_windows"},
        {"tool": "get_pane_info", "arguments": {"paneId": "%0"}},
        {"tool": "get_server_info"},
        {"tool": "show_options", "arguments": {"names": ["status"]}},
        {"tool": "show_environment", "arguments": {"names": ["PATH"]}},
        {"tool": "show_hooks"},
        // after-capture-pane is armed: these captures are refused, not run.
        {"tool": "capture_pane", "arguments": {"paneId": "%0"}},
        {"tool": "snapshot_pane", "arguments": {"paneId": "%0"}},
        {"tool": "search_panes", "arguments": {"pattern": "x"}}
    ]);
    let out = c.call("batch", json!({"calls": calls})).await;
    let r = out["results"].as_array().unwrap();
    for a in r {
        check_inner(&c, a);
    }
    let failed: Vec<&str> = r
        .iter()
        .filter(|a| a["isError"] == json!(true))
        .map(|a| a["tool"].as_str().unwrap())
        .collect();
    assert_eq!(
        failed,
        ["capture_pane", "snapshot_pane"],
        "only the hook-refused captures fail: {out:#}"
    );
    sentinel();
    trap.before_sentinel("after-display-message");
    assert_eq!(
        trap.fired(),
        "after-display-message\n",
        "after-* hooks ran for the batch (only the sentinel's line belongs here)"
    );
    c.close().await;
}
