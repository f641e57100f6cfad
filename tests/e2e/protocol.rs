//! Whatever bytes one client sends, it gets JSON-RPC errors and the broker goes
//! on serving it and everyone else.

#![allow(deprecated)] // MCP logging (SEP-2577) is deprecated in rmcp, still served

use rmcp::model::{
    CallToolRequestParams, LoggingLevel, LoggingMessageNotificationParam, SetLevelRequestParams,
};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tmux_mcp_e2e::*;

const T: Duration = Duration::from_secs(20);

fn error_code(msg: &Value) -> i64 {
    msg.pointer("/error/code")
        .and_then(Value::as_i64)
        .unwrap_or_else(|| panic!("expected a JSON-RPC error, got {msg}"))
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
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{tools}"
    );

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
    assert_ne!(
        m["id"],
        json!(6),
        "the oversized request must not have been parsed"
    );

    // Wrong-type arguments: params not an object, arguments not an object, a
    // field of the wrong type (a tool error naming the field), an unknown tool.
    let m = raw.request(7, "tools/call", json!("list_panes"));
    assert_eq!(error_code(&m), -32602, "{m}");
    let m = raw.request(
        8,
        "tools/call",
        json!({"name": "list_panes", "arguments": "x"}),
    );
    assert_eq!(error_code(&m), -32602, "{m}");
    let m = raw.request(9, "tools/call", json!({"name": 42}));
    assert_eq!(error_code(&m), -32602, "{m}");
    let m = raw.request(
        10,
        "tools/call",
        json!({"name": "list_panes", "arguments": {"session": 5}}),
    );
    assert_eq!(
        m["result"]["isError"], true,
        "a wrongly typed argument must be a tool error: {m}"
    );
    let text = m["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("session"),
        "the tool error should name the field: {text:?}"
    );
    let m = raw.request(
        11,
        "tools/call",
        json!({"name": "list_panes", "arguments": {"bogus": true}}),
    );
    assert_eq!(m["result"]["isError"], true, "{m}");
    let m = raw.request(
        12,
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert!(
        m["result"]["isError"] == true || m.get("error").is_some(),
        "{m}"
    );

    // The raw connection still answers …
    let m = raw.request(13, "ping", json!({}));
    assert_eq!(m["result"], json!({}), "{m}");
    let m = raw.request(
        14,
        "tools/call",
        json!({"name": "list_panes", "arguments": {}}),
    );
    let listed = checked_structured(&tools, "list_panes", &m);
    assert_eq!(listed["generation"], first["generation"]);

    // … and so does the other client.
    let again = good.call("list_panes", json!({})).await;
    assert_eq!(again["generation"], first["generation"]);
    assert_eq!(
        again["panes"].as_array().unwrap().len(),
        first["panes"].as_array().unwrap().len()
    );
    let cap = good.call("tmux_capabilities", json!({})).await;
    assert_eq!(cap["data"]["broker"]["sessions_open"], 2);
    assert_eq!(srv.brokers().len(), 1);

    assert!(
        raw.close().is_some_and(|s| s.success()),
        "the relay should exit 0 when its client closes stdin"
    );
    good.close().await;
}

/// Collects the `notifications/message` an agent receives.
struct LogClient(tokio::sync::mpsc::UnboundedSender<LoggingMessageNotificationParam>);

impl rmcp::ClientHandler for LogClient {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(params);
    }
}

async fn log_client(
    srv: &TmuxServer,
    label: &str,
) -> (
    rmcp::service::RunningService<rmcp::RoleClient, LogClient>,
    tokio::sync::mpsc::UnboundedReceiver<LoggingMessageNotificationParam>,
) {
    let cmd = tokio::process::Command::from(tmux_mcp(&[
        "attach",
        "-S",
        srv.socket_str(),
        "--enable-tool",
        "tmux_capture",
    ]));
    let err = std::fs::File::create(srv.scratch(label)).expect("stderr file");
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(err)
        .spawn()
        .expect("spawning tmux-mcp attach");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let client = tokio::time::timeout(T, LogClient(tx).serve(transport))
        .await
        .expect("initialize timed out")
        .expect("initialize");
    (client, rx)
}

async fn capture(
    client: &rmcp::service::RunningService<rmcp::RoleClient, LogClient>,
    target: &Value,
) -> Value {
    let Value::Object(args) = json!({ "target": target }) else {
        unreachable!()
    };
    let r = tokio::time::timeout(
        T,
        client.call_tool(CallToolRequestParams::new("tmux_capture").with_arguments(args)),
    )
    .await
    .expect("tools/call timed out")
    .expect("tools/call");
    r.structured_content.expect("an envelope")
}

async fn set_level(
    client: &rmcp::service::RunningService<rmcp::RoleClient, LogClient>,
    level: LoggingLevel,
) {
    tokio::time::timeout(T, client.set_level(SetLevelRequestParams::new(level)))
        .await
        .expect("logging/setLevel timed out")
        .expect("logging/setLevel");
}

async fn next_notice(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<LoggingMessageNotificationParam>,
) -> LoggingMessageNotificationParam {
    tokio::time::timeout(T, rx.recv())
        .await
        .expect("no notifications/message arrived")
        .expect("client gone")
}

/// `logging/setLevel` is honoured per session: a capture refused because an
/// `after-capture-pane` hook is set reaches the agent as a warning, a reference
/// gone stale as info; below the chosen level, or before any level is chosen,
/// nothing is sent (each checked with a later notice through the same path).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_notices_reach_each_agent_at_the_level_it_chose() {
    let srv = TmuxServer::start();
    let pane = srv
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", "exec cat"])
        .trim()
        .to_string();
    let doomed = srv
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", "exec cat"])
        .trim()
        .to_string();
    let doomed_too = srv
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", "exec cat"])
        .trim()
        .to_string();
    let (a, mut a_rx) = log_client(&srv, "log-a-stderr").await;
    let (b, mut b_rx) = log_client(&srv, "log-b-stderr").await;
    let caps = a
        .call_tool(CallToolRequestParams::new("tmux_capabilities"))
        .await
        .expect("tmux_capabilities");
    let generation =
        caps.structured_content.expect("envelope")["data"]["server_identity"]["generation"].clone();
    let target = json!({ "kind": "pane", "id": pane, "generation": generation });
    let stale = |id: &str| json!({ "kind": "pane", "id": id, "generation": generation });
    srv.tmux(&["kill-pane", "-t", &doomed]);
    srv.tmux(&["kill-pane", "-t", &doomed_too]);

    // A stale reference is info: not sent at warning, sent at info, and it is
    // the first notice A gets.
    set_level(&a, LoggingLevel::Warning).await;
    assert_eq!(
        capture(&a, &stale(&doomed)).await["error"]["code"],
        "stale_target"
    );
    set_level(&a, LoggingLevel::Info).await;
    assert_eq!(
        capture(&a, &stale(&doomed_too)).await["error"]["code"],
        "stale_target"
    );
    let n = next_notice(&mut a_rx).await;
    assert_eq!(n.level, LoggingLevel::Info, "{n:?}");
    assert!(
        n.data["message"]
            .as_str()
            .is_some_and(|m| m.contains(&doomed_too)),
        "the notice below A's level arrived: {n:?}"
    );

    srv.tmux(&[
        "set-hook",
        "-g",
        "after-capture-pane",
        "set -g @mcp-test-hook-ran 1",
    ]);
    // A: above the warning level, so the refusal is not sent …
    set_level(&a, LoggingLevel::Error).await;
    assert_eq!(
        capture(&a, &target).await["error"]["code"],
        "unsupported",
        "the hook must refuse the capture"
    );
    // … B has chosen no level: nothing either.
    assert_eq!(capture(&b, &target).await["error"]["code"], "unsupported");
    // Then warning: this refusal is the next notice A gets.
    set_level(&a, LoggingLevel::Warning).await;
    capture(&a, &target).await;
    let n = next_notice(&mut a_rx).await;
    assert_eq!(
        n.level,
        LoggingLevel::Warning,
        "a notice below A's level arrived: {n:?}"
    );
    assert!(
        n.data["message"]
            .as_str()
            .is_some_and(|m| m.contains("after-capture-pane")),
        "{n:?}"
    );
    assert_eq!(n.data["tool"], "tmux_capture", "{n:?}");
    assert!(a_rx.try_recv().is_err(), "A got a notice below its level");
    // B chooses warning now: its next refusal is the first notice it gets.
    set_level(&b, LoggingLevel::Warning).await;
    capture(&b, &target).await;
    assert_eq!(next_notice(&mut b_rx).await.level, LoggingLevel::Warning);
    assert!(
        b_rx.try_recv().is_err(),
        "B got a notice before it chose a level"
    );
    assert_eq!(
        srv.tmux(&["show-options", "-gqv", "@mcp-test-hook-ran"])
            .trim(),
        "",
        "the hook ran: a capture happened"
    );
    let _ = a.cancel().await;
    let _ = b.cancel().await;
}

/// A client that goes away stops its calls at once: sixteen waits (every
/// place there is) end when the connection closes, well before their own
/// deadline, so another agent's wait is admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_going_away_ends_its_waits_at_once() {
    let srv = TmuxServer::start();
    let pane = srv
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", "exec cat"])
        .trim()
        .to_string();
    let other = McpClient::attach(&srv, &["--enable-tool", "tmux_wait"]).await;
    let caps = other.call("tmux_capabilities", json!({})).await;
    let generation = caps["data"]["server_identity"]["generation"].clone();
    let deadline = caps["data"]["limits"]["request_timeout_seconds"]
        .as_f64()
        .unwrap();
    let max_waits = caps["data"]["limits"]["max_observers"]
        .as_u64()
        .unwrap_or(16);
    let wait = |timeout: f64| json!({ "target": { "kind": "pane", "id": pane, "generation": generation }, "timeout": timeout, "condition": { "type": "screen_contains", "text": "NEVER-SEEN-0d1c" } });

    let mut raw = RawClient::attach(&srv, &["--enable-tool", "tmux_wait"]);
    raw.initialize();
    // One more wait than there are places: the one refused for capacity shows
    // that the other sixteen hold every place (nothing else runs meanwhile).
    for id in 0..=max_waits {
        raw.send(&json!({ "jsonrpc": "2.0", "id": 100 + id, "method": "tools/call", "params": { "name": "tmux_wait", "arguments": wait(30.0) } }));
    }
    let refused = raw.recv(T);
    assert_eq!(
        refused["result"]["structuredContent"]["error"]["code"], "capacity",
        "expected one wait refused for capacity first: {refused}"
    );
    let started = Instant::now();
    assert!(raw.close().is_some_and(|s| s.success()));
    let admitted = poll_async(T, || async {
        let e = other.call_envelope("tmux_wait", wait(0.1)).await;
        (e.structured["error"]["code"] == "deadline").then_some(())
    })
    .await;
    assert!(
        admitted.is_some(),
        "no wait place came free after the client went away"
    );
    let took = started.elapsed().as_secs_f64();
    assert!(took < deadline - 1.0, "the waits ran on for {took:.2} s after their client went away (their deadline is {deadline} s)");
    other.close().await;
}

#[test]
fn requests_before_initialize_are_refused_and_change_nothing() {
    let srv = TmuxServer::start();
    // The name is compared below: tmux must not rename the window meanwhile
    // (it reads `tmux`, then the login shell's name, while the shell starts).
    srv.tmux(&["set-option", "-w", "-t", "%0", "automatic-rename", "off"]);
    let window = srv
        .tmux(&["display-message", "-p", "-t", "%0", "#{window_id}"])
        .trim()
        .to_string();
    let name = srv
        .tmux(&["display-message", "-p", "-t", "%0", "#{window_name}"])
        .trim()
        .to_string();
    let mut raw = RawClient::attach(&srv, &["--safety", "mutating"]);
    // A liveness probe is answered before the handshake, as the lifecycle allows.
    assert!(
        raw.request(1, "ping", json!({})).get("result").is_some(),
        "ping before initialize must be answered"
    );
    // Anything else is refused and never runs: the window keeps its name.
    let refused = raw.request(2, "tools/call", json!({"name": "rename_window", "arguments": {"windowId": window, "name": "renamed-before-initialize"}}));
    assert_eq!(error_code(&refused), -32600, "{refused}");
    let message = refused
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(
        message.contains("before initialize") && message.contains("Nothing was run"),
        "{refused}"
    );
    let listed = raw.request(3, "tools/list", json!({}));
    assert_eq!(error_code(&listed), -32600, "{listed}");
    assert_eq!(
        srv.tmux(&["display-message", "-p", "-t", "%0", "#{window_name}"])
            .trim(),
        name,
        "a refused call renamed the window"
    );
    // A request of the stateless era carries its version and needs no handshake.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": {"name": "raw-e2e", "version": "0"}, "io.modelcontextprotocol/clientCapabilities": {}});
    let stateless = raw.request(4, "tools/list", json!({"_meta": meta}));
    assert!(
        stateless["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{stateless}"
    );
    // After initialize the same call runs.
    raw.initialize();
    let ok = raw.request(5, "tools/call", json!({"name": "rename_window", "arguments": {"windowId": window, "name": "renamed-after"}}));
    assert!(
        ok.get("result")
            .is_some_and(|r| r["isError"] != json!(true)),
        "{ok}"
    );
    assert_eq!(
        srv.tmux(&["display-message", "-p", "-t", "%0", "#{window_name}"])
            .trim(),
        "renamed-after"
    );
    raw.close();
}

/// rmcp's client in the 2026-07-28 era (`server/discover`, per-request
/// `_meta`), declaring the tasks extension or not.
#[derive(Clone)]
struct ModernClient {
    tasks: bool,
}

impl rmcp::ClientHandler for ModernClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut c = rmcp::model::ClientConfig::default();
        if self.tasks {
            c.capabilities = rmcp::model::ClientCapabilities::builder()
                .enable_tasks()
                .build();
        }
        c
    }
}

async fn modern_client(
    srv: &TmuxServer,
    tasks: bool,
) -> rmcp::service::RunningService<rmcp::RoleClient, ModernClient> {
    use rmcp::service::ClientLifecycleMode;
    let cmd = tokio::process::Command::from(tmux_mcp(&[
        "attach",
        "-S",
        srv.socket_str(),
        "--safety",
        "mutating",
    ]));
    let err = std::fs::File::create(srv.scratch(if tasks { "tasks-a" } else { "tasks-b" }))
        .expect("stderr file");
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(err)
        .spawn()
        .expect("spawning tmux-mcp attach");
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    tokio::time::timeout(
        T,
        rmcp::service::serve_client_with_lifecycle(ModernClient { tasks }, transport, lifecycle),
    )
    .await
    .expect("server/discover timed out")
    .expect("server/discover")
}

/// Issue 50, item 9: a `run_command` of a 2026-07-28 client that declares the
/// tasks extension is a task (rmcp's client polls it with `tasks/get` to the
/// command's status and output); the same call from a client that did not
/// declare it is the blocking call of before, never a task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_is_a_task_only_for_a_client_that_declares_tasks() {
    use rmcp::model::{CallToolResponse, GetTaskParams, TaskStatus};
    let srv = TmuxServer::start();
    let pane = srv
        .tmux(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "env",
            "PS1=$ ",
            "HISTFILE=/dev/null",
            "bash",
            "--norc",
            "--noprofile",
        ])
        .trim()
        .to_string();
    let at_prompt = |srv: &TmuxServer| {
        let deadline = Instant::now() + T;
        while !srv
            .tmux(&["capture-pane", "-p", "-t", &pane])
            .trim_end()
            .ends_with('$')
        {
            assert!(Instant::now() < deadline, "no prompt in {pane}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    at_prompt(&srv);
    let args = |cmd: &str| {
        let Value::Object(a) = json!({ "paneId": pane, "command": cmd }) else {
            unreachable!()
        };
        CallToolRequestParams::new("run_command").with_arguments(a)
    };

    let with = modern_client(&srv, true).await;
    let created = with
        .call_tool_once(args("sleep 1.5; echo from-a-$((6*7))"))
        .await
        .expect("tools/call");
    let CallToolResponse::Task(created) = created else {
        panic!("no task for a client that declared the extension: {created:?}")
    };
    let id = created.task.task_id.clone();
    let deadline = Instant::now() + T;
    let done = loop {
        let got = with
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .expect("tasks/get");
        if got.task.task.status != TaskStatus::Working {
            break got;
        }
        assert!(Instant::now() < deadline, "the task never ended: {got:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let v = serde_json::to_value(&done).unwrap();
    assert_eq!(v["status"], json!("completed"), "{v}");
    assert_eq!(
        v["result"]["structuredContent"]["state"],
        json!("done"),
        "{v}"
    );
    assert_eq!(
        v["result"]["structuredContent"]["exitStatus"],
        json!(0),
        "{v}"
    );
    assert!(v.to_string().contains("from-a-42"), "{v}");
    with.cancel().await.ok();

    at_prompt(&srv);
    let without = modern_client(&srv, false).await;
    let answered = without
        .call_tool_once(args("sleep 1.5; echo from-b"))
        .await
        .expect("tools/call");
    let CallToolResponse::Complete(r) = answered else {
        panic!("a task for a client that did not declare the extension: {answered:?}")
    };
    let s = r.structured_content.expect("structuredContent");
    assert_eq!(s["state"], json!("done"), "{s}");
    assert!(
        without.get_task(GetTaskParams::new(id)).await.is_err(),
        "tasks/get answered a client that did not declare the extension"
    );
    without.cancel().await.ok();
}
