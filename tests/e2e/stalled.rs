//! A stalled tmux server does not stall the broker (issue 18, item 5): while
//! the person's tmux server is stopped (SIGSTOP: a debugger, `kill -STOP`, a
//! laptop's frozen cgroup) and its accept queue is full, every answer that
//! needs nothing from tmux — `ping`, `tools/list`, `get_job` — still comes at
//! once, and a call that needs tmux waits for it without holding the broker.
//!
//! tmux listens with a backlog of 128; connections it has not accepted stay
//! queued, so a stopped server's queue fills with the broker's own reads
//! within seconds. Here the test fills it first, so the broker's next
//! connection to tmux meets a full queue at once.

use serde_json::json;
use std::time::Duration;
use tmux_mcp_e2e::*;

/// The tmux server stopped for as long as this lives (continued on drop, so a
/// failing test still leaves a server that `TmuxServer`'s drop can kill).
struct Stopped(u32);

impl Stopped {
    fn new(pid: u32) -> Stopped {
        kill_pid(pid, libc::SIGSTOP);
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        kill_pid(self.0, libc::SIGCONT);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_tmux_server_with_a_full_accept_queue_does_not_stall_the_broker() {
    let srv = TmuxServer::start();
    let pane = srv.bash_pane();
    let c = McpClient::attach(&srv, &["--safety", "mutating"]).await;
    let job = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo ready", "detach": true }),
        )
        .await["jobId"]
        .as_str()
        .unwrap()
        .to_string();
    poll_async(Duration::from_secs(10), || async {
        Some(c.call("get_job", json!({ "jobId": job })).await).filter(|v| v["state"] == "done")
    })
    .await
    .expect("the job finished before the server was stopped");

    let stopped = Stopped::new(srv.pid());
    // Fill tmux's accept queue (a non-blocking connect is refused with EAGAIN
    // once it is full).
    let mut queued = Vec::new();
    loop {
        match tokio::net::UnixStream::connect(srv.socket()).await {
            Ok(s) => queued.push(s),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("connecting to the stopped tmux server: {e}"),
        }
        assert!(queued.len() < 100_000, "the accept queue never filled up");
    }
    // A call that needs tmux: it cannot finish while the server is stopped.
    let peer = c.peer();
    let capture = tokio::spawn(async move {
        let params = rmcp::model::CallToolRequestParams::new("capture_pane")
            .with_arguments(json!({ "paneId": "%0" }).as_object().unwrap().clone());
        peer.call_tool(params).await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;

    // What needs no tmux answers while that call is still waiting for it.
    c.ping().await;
    let listed = tokio::time::timeout(Duration::from_secs(10), c.peer().list_all_tools())
        .await
        .expect("tools/list answered while tmux is stopped")
        .expect("tools/list");
    assert_eq!(listed.len(), c.tools().len());
    let done = c.call("get_job", json!({ "jobId": job })).await;
    assert_eq!(
        (done["state"].as_str(), done["output"]["text"].as_str()),
        (Some("done"), Some("ready\n")),
        "{done}"
    );
    assert!(
        !capture.is_finished(),
        "premise: the capture needs the stopped server, so it is still waiting"
    );

    // Once tmux runs again, the waiting call ends (an answer or an error that
    // says what reached tmux) and the broker reads the server as before.
    drop(queued);
    drop(stopped);
    let result = tokio::time::timeout(Duration::from_secs(20), capture)
        .await
        .expect("the capture ended once tmux was continued")
        .expect("the capture task")
        .expect("tools/call capture_pane");
    if result.is_error == Some(true) {
        let text = format!("{:?}", result.content);
        assert!(text.contains("tmux"), "{text}");
    }
    let again = c.call("capture_pane", json!({ "paneId": pane })).await;
    assert!(
        again["text"].as_str().is_some_and(|t| t.contains("ready")),
        "{again}"
    );
    c.ping().await;
    c.close().await;
}
