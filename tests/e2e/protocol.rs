//! Whatever bytes one client sends, it gets JSON-RPC errors and the broker goes
//! on serving it and everyone else.

use serde_json::{json, Value};
use std::time::Duration;
use tmux_mcp_e2e::*;

const T: Duration = Duration::from_secs(20);

fn error_code(msg: &Value) -> i64 {
    msg.pointer("/error/code").and_then(Value::as_i64).unwrap_or_else(|| panic!("expected a JSON-RPC error, got {msg}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_input_does_not_disturb_other_sessions() {
    let srv = TmuxServer::start();
    // A well-behaved client, attached for the whole test.
    let good = McpClient::attach(&srv, &[]).await;
    let first = good.call("list_panes", json!({})).await;

    let mut raw = RawClient::attach(&srv, &[]);
    raw.initialize();
    let tools = raw.request(1, "tools/list", json!({}));
    assert!(tools["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{tools}");

    // Not JSON at all.
    raw.send_bytes(b"this is not json\n");
    let m = raw.recv(T);
    assert_eq!(error_code(&m), -32700, "{m}");
    assert_eq!(m["id"], Value::Null);

    // Invalid UTF-8.
    raw.send_bytes(b"\xff\xfe{\"jsonrpc\":\"2.0\",\"id\":\xc3}\n");
    let m = raw.recv(T);
    assert_eq!(error_code(&m), -32700, "{m}");

    // Truncated JSON.
    raw.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\n");
    let m = raw.recv(T);
    assert_eq!(error_code(&m), -32700, "{m}");

    // JSON, but not a request object.
    raw.send_bytes(b"[1,2,3]\n");
    let m = raw.recv(T);
    assert_eq!(error_code(&m), -32600, "{m}");
    raw.send(&json!({"jsonrpc": "1.0", "id": 3, "method": "ping"}));
    let m = raw.recv_id(&json!(3), T);
    assert_eq!(error_code(&m), -32600, "{m}");
    raw.send(&json!({"jsonrpc": "2.0", "id": 4, "method": 17}));
    let m = raw.recv_id(&json!(4), T);
    assert_eq!(error_code(&m), -32600, "{m}");

    // Unknown method.
    let m = raw.request(5, "no/such/method", json!({}));
    assert_eq!(error_code(&m), -32601, "{m}");

    // An oversized (2 MiB) line is discarded with -32600 and the stream stays in step.
    let mut big = br#"{"jsonrpc":"2.0","id":6,"method":"ping","params":{"pad":""#.to_vec();
    big.extend(std::iter::repeat_n(b'a', 2 * 1024 * 1024));
    big.extend_from_slice(b"\"}}\n");
    raw.send_bytes(&big);
    let m = raw.recv(T);
    assert_eq!(error_code(&m), -32600, "oversized line: {m}");
    assert_ne!(m["id"], json!(6), "the oversized request must not have been parsed");

    // Wrong-type arguments: params not an object, arguments not an object, a
    // field of the wrong type (a tool error naming the field), an unknown tool.
    let m = raw.request(7, "tools/call", json!("list_panes"));
    assert_eq!(error_code(&m), -32602, "{m}");
    let m = raw.request(8, "tools/call", json!({"name": "list_panes", "arguments": "x"}));
    assert_eq!(error_code(&m), -32602, "{m}");
    let m = raw.request(9, "tools/call", json!({"name": 42}));
    assert_eq!(error_code(&m), -32602, "{m}");
    let m = raw.request(10, "tools/call", json!({"name": "list_panes", "arguments": {"session": 5}}));
    assert_eq!(m["result"]["isError"], true, "a wrongly typed argument must be a tool error: {m}");
    let text = m["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("session"), "the tool error should name the field: {text:?}");
    let m = raw.request(11, "tools/call", json!({"name": "list_panes", "arguments": {"bogus": true}}));
    assert_eq!(m["result"]["isError"], true, "{m}");
    let m = raw.request(12, "tools/call", json!({"name": "no_such_tool", "arguments": {}}));
    assert!(m["result"]["isError"] == true || m.get("error").is_some(), "{m}");

    // The raw connection still answers …
    let m = raw.request(13, "ping", json!({}));
    assert_eq!(m["result"], json!({}), "{m}");
    let m = raw.request(14, "tools/call", json!({"name": "list_panes", "arguments": {}}));
    let listed = checked_structured(&tools, "list_panes", &m);
    assert_eq!(listed["generation"], first["generation"]);

    // … and so does the other client.
    let again = good.call("list_panes", json!({})).await;
    assert_eq!(again["generation"], first["generation"]);
    assert_eq!(again["panes"].as_array().unwrap().len(), first["panes"].as_array().unwrap().len());
    let cap = good.call("tmux_capabilities", json!({})).await;
    assert_eq!(cap["data"]["broker"]["sessions_open"], 2);
    assert_eq!(srv.brokers().len(), 1);

    assert!(raw.close().is_some_and(|s| s.success()), "the relay should exit 0 when its client closes stdin");
    good.close().await;
}
