//! The attach relay outlives its broker (issue 6 item 11, issue 10 item 4), and
//! another user cannot keep the broker from starting by occupying its runtime
//! directory (issue 6 item 10).
//!
//! Real tmux servers on private sockets, rmcp's client (and raw JSON-RPC lines
//! where the exact stdout matters); the broker is killed by its pid, which
//! `tmux_capabilities` reports.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ErrorData,
};
use rmcp::service::{PeerRequestOptions, RoleClient, ServiceError};
use serde_json::{json, Value};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tmux_mcp_e2e::*;

/// The JSON-RPC error code the relay answers in-flight requests with.
const BROKER_LOST: i32 = -31000;

fn params(name: &str, args: Value) -> CallToolRequestParams {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new(name.to_string()).with_arguments(map)
}

fn broker_pid_of(caps: &Value) -> u32 {
    caps["data"]["broker"]["pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("no broker pid in tmux_capabilities: {caps:#}")) as u32
}

/// Asserts the relay's answer to a request the lost broker had.
fn assert_broker_lost(e: &ErrorData, what: &str) {
    assert_eq!(e.code.0, BROKER_LOST, "{what}: unexpected error {e:?}");
    assert!(
        e.message.contains("broker was lost") && e.message.contains("unknown"),
        "{what}: the message must say the broker was lost and delivery is unknown: {e:?}"
    );
    assert_eq!(
        e.data.as_ref().map(|d| d["delivery"].clone()),
        Some(json!("possibly_sent")),
        "{what}: {e:?}"
    );
}

#[derive(Debug)]
enum Outcome {
    Ok(CallToolResult),
    Lost(ErrorData),
    Other(String),
}

async fn outcome(peer: &rmcp::service::Peer<RoleClient>, p: CallToolRequestParams) -> Outcome {
    match tokio::time::timeout(Duration::from_secs(30), peer.call_tool(p)).await {
        Err(_) => Outcome::Other("no answer within 30 s".into()),
        Ok(Ok(r)) => Outcome::Ok(r),
        Ok(Err(ServiceError::McpError(e))) if e.code.0 == BROKER_LOST => Outcome::Lost(e),
        Ok(Err(e)) => Outcome::Other(e.to_string()),
    }
}

/// Issue 6 item 11 + issue 10 item 4: `kill -9` of the broker while waits are
/// in flight and four tasks flood the session with calls. In-flight calls get
/// the delivery-unknown error, nothing else fails, later calls on the same MCP
/// session are served by a new broker, references stay valid, a tracked cursor
/// from before is `stale_cursor`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn broker_kill_9_under_a_flood_keeps_the_mcp_session() {
    let srv = TmuxServer::start();
    // The waits below must still be in flight when the broker is killed, however
    // slow this machine is between sending them and the kill; with the default
    // 5 s request timeout a loaded CI machine answered them `deadline` first.
    // The harness's @mcp-request-timeout 5 would win over the flag.
    srv.tmux(&["set-option", "-gu", "@mcp-request-timeout"]);
    srv.start_broker_with(&["--request-timeout", "60"]);
    let c = McpClient::attach(
        &srv,
        &[
            "--enable-tool",
            "tmux_capture",
            "--enable-tool",
            "tmux_wait",
        ],
    )
    .await;
    let caps = c.call("tmux_capabilities", json!({})).await;
    let gen = caps["data"]["server_identity"]["generation"]
        .as_str()
        .expect("generation")
        .to_string();
    let old = broker_pid_of(&caps);
    assert_eq!(
        srv.brokers(),
        vec![old],
        "tmux_capabilities names the broker that runs"
    );
    assert_eq!(
        caps["data"]["limits"]["request_timeout_seconds"].as_f64(),
        Some(60.0),
        "the session is served by the broker started with --request-timeout 60: {caps:#}"
    );
    let target = pane_ref(&gen, "%0");
    let tracked = c
        .call_envelope("tmux_capture", json!({"target": target, "track": true}))
        .await;
    let cursor = tracked.data()["next_cursor"]
        .as_str()
        .expect("a tracked capture has a next_cursor")
        .to_string();

    // The flood: four tasks calling as fast as answers come, each call timed.
    let peer = c.peer();
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let mut flood = Vec::new();
    for i in 0..4 {
        let (peer, stop, answered) = (peer.clone(), stop.clone(), answered.clone());
        let (name, args) = if i % 2 == 0 {
            ("list_panes", json!({}))
        } else {
            ("tmux_capabilities", json!({}))
        };
        flood.push(tokio::spawn(async move {
            let mut log = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                let sent = Instant::now();
                let o = outcome(&peer, params(name, args.clone())).await;
                answered.fetch_add(1, Ordering::SeqCst);
                let other = matches!(o, Outcome::Other(_));
                log.push((sent, Instant::now(), o));
                if other {
                    break; // reported below; a closed session would answer this at once, forever
                }
            }
            log
        }));
    }
    poll_async(Duration::from_secs(10), || {
        let n = answered.load(Ordering::SeqCst);
        async move { (n >= 20).then_some(()) }
    })
    .await
    .expect("the flood got no answers");

    // Calls certain to be in flight: waits for text that never appears. A
    // tmux_capabilities queued behind them is the sentinel: once it is
    // answered, the broker it names has read the waits (it reads one
    // connection in order).
    let mut waits = Vec::new();
    for i in 0..3 {
        let wait = params(
            "tmux_wait",
            json!({"target": target, "condition": {"type": "screen_contains", "text": format!("never-shown-{i}-{}", std::process::id())}, "timeout": 60}),
        );
        let req = ClientRequest::CallToolRequest(CallToolRequest::new(wait));
        waits.push(
            peer.send_request_with_option(req, PeerRequestOptions::no_options())
                .await
                .expect("queueing a wait"),
        );
    }
    let queued = Instant::now();
    let holder = broker_pid_of(&c.call("tmux_capabilities", json!({})).await);
    eprintln!(
        "the call behind the waits took {:.1} ms under the flood",
        queued.elapsed().as_secs_f64() * 1e3
    );
    // What the relay and the brokers said, for any failure from here on.
    let story = || {
        format!(
            "brokers now {:?}; relay stderr:\n{}",
            srv.brokers(),
            std::fs::read_to_string(&c.stderr_path).unwrap_or_default()
        )
    };
    assert_eq!(
        holder,
        old,
        "the broker was lost during the flood, before the kill: {}",
        story()
    );

    let killed = Instant::now();
    kill_pid(old, libc::SIGKILL); // this test's broker, by the pid it reported
    for (i, w) in waits.into_iter().enumerate() {
        match tokio::time::timeout(Duration::from_secs(20), w.await_response())
            .await
            .expect("an in-flight wait was never answered")
        {
            Err(ServiceError::McpError(e)) => assert_broker_lost(&e, &format!("wait {i}")),
            other => panic!(
                "in-flight wait {i}: expected the broker-lost error, got {other:?}; {}",
                story()
            ),
        }
    }
    // Recovery: the first call after the kill that a broker answers.
    let (recovered, new) = loop {
        match outcome(&peer, params("tmux_capabilities", json!({}))).await {
            Outcome::Ok(r) => {
                break (
                    Instant::now(),
                    broker_pid_of(r.structured_content.as_ref().expect("structuredContent")),
                )
            }
            Outcome::Lost(_) => continue, // sent while the old broker was dying
            Outcome::Other(e) => panic!("a call after the kill failed otherwise: {e}"),
        }
    };
    eprintln!(
        "recovery after kill -9 of the broker: {:.1} ms (kill -> next call answered)",
        recovered.duration_since(killed).as_secs_f64() * 1e3
    );

    // Let the flood run on the new broker, then stop it.
    let before = answered.load(Ordering::SeqCst);
    poll_async(Duration::from_secs(10), || {
        let n = answered.load(Ordering::SeqCst);
        async move { (n >= before + 20).then_some(()) }
    })
    .await
    .expect("the flood stopped being answered after the reconnect");
    stop.store(true, Ordering::SeqCst);
    let (mut ok, mut lost, mut ok_after) = (0, 0, 0);
    for task in flood {
        for (sent, _done, o) in task.await.expect("flood task") {
            match o {
                Outcome::Ok(r) => {
                    assert_ne!(r.is_error, Some(true), "a flood call failed: {r:?}");
                    ok += 1;
                    if sent > recovered {
                        ok_after += 1;
                    }
                }
                Outcome::Lost(e) => {
                    assert_broker_lost(&e, "flood call");
                    assert!(
                        sent < recovered,
                        "a call sent after the recovery got the broker-lost error"
                    );
                    lost += 1;
                }
                Outcome::Other(e) => panic!(
                    "a flood call failed with something else than the broker-lost error: {e}"
                ),
            }
        }
    }
    eprintln!("flood: {ok} calls answered ({ok_after} sent after the recovery), {lost} answered with the broker-lost error");
    assert!(ok_after > 0, "no flood call was served after the recovery");

    // Same MCP session, a new broker.
    assert_ne!(
        new, old,
        "the call after the kill was answered by the killed broker?"
    );
    assert!(!pid_alive(old), "the killed broker {old} is alive");
    assert_eq!(
        srv.wait_for_one_broker(Duration::from_secs(5)),
        new,
        "exactly the new broker serves the server"
    );
    assert_eq!(
        generation(&c).await,
        gen,
        "the generation comes from the tmux server and stays"
    );
    c.call_envelope("tmux_capture", json!({"target": target}))
        .await
        .data(); // a reference from before still works
    let msg = c
        .call_envelope("tmux_capture", json!({"target": target, "cursor": cursor}))
        .await
        .expect_error("stale_cursor", "not_sent");
    assert!(!msg.is_empty());

    let stderr = std::fs::read_to_string(&c.stderr_path).unwrap_or_default();
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.contains("lost the broker"))
            .count(),
        1,
        "one line per loss on stderr: {stderr}"
    );
    assert!(
        stderr.contains("reconnected to the broker"),
        "stderr: {stderr}"
    );
    c.close().await;
}

/// The relay's stdout after a reconnect: the replayed `initialize` is answered
/// to the relay, never to the client. The sentinel ping proves nothing else
/// arrived in between. Also a string id with an escape is echoed as the broker
/// would (the relay's answer carries the client's id).
#[test]
fn replayed_initialize_is_swallowed_and_ids_are_echoed() {
    let srv = TmuxServer::start();
    // The harness's @mcp-request-timeout 5 would win over the flag.
    srv.tmux(&["set-option", "-gu", "@mcp-request-timeout"]);
    srv.start_broker_with(&["--request-timeout", "60"]); // the wait outlives any delay before the kill
    let mut raw = RawClient::attach(&srv, &["--enable-tool", "tmux_wait"]);
    let _diag = StderrOnPanic(&srv);
    raw.initialize();
    let caps = raw.request(
        1,
        "tools/call",
        json!({"name": "tmux_capabilities", "arguments": {}}),
    );
    let data = &caps["result"]["structuredContent"];
    let old = broker_pid_of(data);
    let gen = data["data"]["server_identity"]["generation"]
        .as_str()
        .unwrap()
        .to_string();
    // In flight: a wait with a string id written with an escape.
    raw.send_bytes(format!("{{\"jsonrpc\":\"2.0\",\"id\":\"w\\u0031\",\"method\":\"tools/call\",\"params\":{{\"name\":\"tmux_wait\",\"arguments\":{{\"target\":{},\"condition\":{{\"type\":\"screen_contains\",\"text\":\"never-shown\"}},\"timeout\":60}}}}}}\n", pane_ref(&gen, "%0")).as_bytes());
    assert!(raw.request(2, "ping", json!({})).get("result").is_some());
    kill_pid(old, libc::SIGKILL);
    let lost = raw.recv(Duration::from_secs(20));
    assert_eq!(
        lost["id"],
        json!("w1"),
        "the next message must answer the in-flight wait: {lost}"
    );
    assert_eq!(lost["error"]["code"], json!(BROKER_LOST), "{lost}");
    assert_eq!(
        lost["error"]["data"]["delivery"],
        json!("possibly_sent"),
        "{lost}"
    );
    let mut id = 10;
    loop {
        raw.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        let m = raw.recv(Duration::from_secs(20));
        assert_eq!(m["id"], json!(id), "an unexpected message on stdout: {m}");
        if m.get("result").is_some() {
            break;
        }
        assert_eq!(m["error"]["code"], json!(BROKER_LOST), "{m}");
        id += 1;
    }
    // The sentinel: the next message is its answer, nothing before it.
    raw.send(&json!({"jsonrpc": "2.0", "id": "sentinel", "method": "ping"}));
    let m = raw.recv(Duration::from_secs(20));
    assert_eq!(
        m["id"],
        json!("sentinel"),
        "something else reached stdout after the reconnect: {m}"
    );
    let caps = raw.request(
        1000,
        "tools/call",
        json!({"name": "tmux_capabilities", "arguments": {}}),
    );
    assert_ne!(broker_pid_of(&caps["result"]["structuredContent"]), old);
    assert_eq!(
        raw.close().map(|s| s.success()),
        Some(true),
        "the relay ends cleanly when its client closes stdin"
    );
}

/// A 2026-07-28 client never initializes: there is nothing to replay, and its
/// session goes on after the broker is killed.
#[test]
fn stateless_client_goes_on_after_a_broker_kill() {
    let srv = TmuxServer::start();
    let mut raw = RawClient::attach(&srv, &[]);
    let _diag = StderrOnPanic(&srv);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": {"name": "raw-e2e", "version": "0"}, "io.modelcontextprotocol/clientCapabilities": {}});
    let d = raw.request(1, "server/discover", json!({"_meta": meta}));
    assert!(
        d["result"]["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("2026-07-28"))),
        "{d}"
    );
    let call = |raw: &mut RawClient, id: i64| {
        raw.request(
            id,
            "tools/call",
            json!({"name": "tmux_capabilities", "arguments": {}, "_meta": meta}),
        )
    };
    let old = broker_pid_of(&call(&mut raw, 2)["result"]["structuredContent"]);
    kill_pid(old, libc::SIGKILL);
    let mut id = 3;
    let new = loop {
        let r = call(&mut raw, id);
        if let Some(s) = r["result"].get("structuredContent") {
            assert_eq!(r["result"]["resultType"], json!("complete"), "{r}");
            break broker_pid_of(s);
        }
        assert_eq!(r["error"]["code"], json!(BROKER_LOST), "{r}");
        id += 1;
    };
    assert_ne!(new, old);
    raw.send(
        &json!({"jsonrpc": "2.0", "id": "sentinel", "method": "ping", "params": {"_meta": meta}}),
    );
    let m = raw.recv(Duration::from_secs(20));
    assert_eq!(
        m["id"],
        json!("sentinel"),
        "something else reached stdout after the reconnect: {m}"
    );
}

/// The attach relay's stderr file (`RawClient` names it `raw-attach-stderr-N`
/// in the server's directory; this test has one relay).
fn raw_stderr(srv: &TmuxServer) -> String {
    std::fs::read_dir(srv.dir())
        .expect("server dir")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("raw-attach-stderr")
        })
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("")
}

/// Shows the relay's stderr when a test fails (the server's directory, where
/// it is, goes with the server).
struct StderrOnPanic<'a>(&'a TmuxServer);

impl Drop for StderrOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("relay stderr:\n{}", raw_stderr(self.0));
        }
    }
}

/// Issue 6 item 11, the other half: when the tmux server itself is gone no
/// broker can be started; the relay answers what was pending, says so on
/// stderr and exits non-zero.
#[test]
fn relay_exits_non_zero_when_the_tmux_server_is_gone() {
    let mut srv = TmuxServer::start();
    let sock = srv.socket_str().to_string();
    let mut raw = RawClient::attach(&srv, &["--enable-tool", "tmux_wait"]);
    raw.initialize();
    let caps = raw.request(
        1,
        "tools/call",
        json!({"name": "tmux_capabilities", "arguments": {}}),
    );
    let gen = caps["result"]["structuredContent"]["data"]["server_identity"]["generation"]
        .as_str()
        .unwrap()
        .to_string();
    raw.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "tmux_wait", "arguments": {"target": pane_ref(&gen, "%0"), "condition": {"type": "screen_contains", "text": "never-shown"}, "timeout": 60}}}));
    assert!(raw.request(6, "ping", json!({})).get("result").is_some()); // the wait is running
    srv.kill_server();
    // Answered: by the broker as it stops (a tool error; which one is the
    // broker's business) or, when the broker went first, by the relay.
    let w = raw.recv_id(&json!(5), Duration::from_secs(20));
    let by_broker = w["result"]["isError"] == json!(true);
    let by_relay = w["error"]["code"] == json!(BROKER_LOST);
    assert!(
        by_broker || by_relay,
        "the pending wait got neither a tool error from the broker nor the broker-lost error: {w}"
    );
    let err = poll(Duration::from_secs(20), || {
        let t = raw_stderr(&srv);
        t.contains("this MCP session ends").then_some(t)
    })
    .unwrap_or_else(|| {
        panic!(
            "the relay did not say the session ends; stderr: {}",
            raw_stderr(&srv)
        )
    });
    assert!(
        err.contains(&format!("the tmux server at {sock} is gone")),
        "stderr: {err}"
    );
    let status = raw.close().expect("the relay exited");
    assert_eq!(
        status.code(),
        Some(1),
        "exit status after the tmux server is gone (stderr: {err})"
    );
}

// ---------------------------------------------------------------------------
// Issue 6 item 10: runtime directory denial of service
// ---------------------------------------------------------------------------

fn mkdir(p: &Path, mode: u32) {
    std::fs::create_dir(p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn is_empty_dir(p: &Path) -> bool {
    std::fs::read_dir(p)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false)
}

/// Issue 6 item 10. `XDG_RUNTIME_DIR` and `TMUX_TMPDIR` point into a temporary
/// base, so the test controls every candidate the broker considers. Each one
/// is occupied: by another uid (a directory chowned away, as root can), a
/// symlink to a directory of ours, a regular file. The broker passes all of
/// them over and starts in the next numbered name, made 0700; the relay finds
/// it; its log is where `status` says; `doctor` names each refusal and why;
/// nothing is written into what others hold.
#[test]
fn runtime_dir_denial_of_service_falls_through_to_a_private_dir() {
    let root = rustix::process::geteuid().is_root();
    let uid = tmux_mcp_core::sys::current_uid();
    let other = 65534; // "nobody": any uid that is not ours
    let base = TempDir::new("tmcp-rd-");
    let (xdg, tt, decoy) = (
        base.path().join("xdg"),
        base.path().join("tt"),
        base.path().join("decoy"),
    );
    mkdir(&xdg, 0o700);
    mkdir(&tt, 0o755);
    mkdir(&decoy, 0o700);
    let stem = format!("tmux-mcp-{uid}");
    let squat_xdg = xdg.join("tmux-mcp");
    let squat_tt = tt.join(&stem);
    let mut others_dirs: Vec<PathBuf> = Vec::new();
    if root {
        for d in [&squat_xdg, &squat_tt] {
            mkdir(d, 0o777);
            std::os::unix::fs::chown(d, Some(other), Some(other)).unwrap();
            others_dirs.push(d.clone());
        }
    } else {
        // Without root another user's directory cannot be made; the other
        // squats still run, and the test fails at the end (never a silent skip).
        std::fs::write(&squat_xdg, b"").unwrap();
        std::os::unix::fs::symlink(&decoy, &squat_tt).unwrap();
    }
    std::os::unix::fs::symlink(&decoy, tt.join(format!("{stem}.1"))).unwrap();
    std::fs::write(tt.join(format!("{stem}.2")), b"").unwrap();
    let want = tt.join(format!("{stem}.3"));

    let srv = TmuxServer::start();
    // The broker is a tmux job: it gets the server's global environment.
    srv.tmux(&[
        "set-environment",
        "-g",
        "XDG_RUNTIME_DIR",
        xdg.to_str().unwrap(),
    ]);
    srv.tmux(&["set-environment", "-g", "TMUX_TMPDIR", tt.to_str().unwrap()]);
    let env = [
        ("XDG_RUNTIME_DIR", xdg.to_str().unwrap()),
        ("TMUX_TMPDIR", tt.to_str().unwrap()),
    ];
    let mut raw = RawClient::attach_with_env(&srv, &[], &env);
    raw.initialize();
    let list = raw.request(
        1,
        "tools/call",
        json!({"name": "list_panes", "arguments": {}}),
    );
    assert!(
        list["result"]["structuredContent"]["panes"]
            .as_array()
            .is_some_and(|p| !p.is_empty()),
        "{list}"
    );

    let with_env = |args: &[&str]| {
        let mut cmd = tmux_mcp(args);
        cmd.envs(env);
        let (out, _) = run_with_timeout(cmd, Duration::from_secs(15));
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, status, err) = with_env(&["status", "-S", srv.socket_str(), "--json"]);
    assert!(ok, "status failed: {err}");
    let status: Value = serde_json::from_str(&status).unwrap();
    let sock = PathBuf::from(status["broker_socket"].as_str().unwrap());
    let log = PathBuf::from(status["log_file"].as_str().unwrap());
    assert_eq!(
        sock.parent(),
        Some(want.as_path()),
        "the broker should have passed every squatted name and started in {}: {status:#}",
        want.display()
    );
    assert_eq!(log.parent(), Some(want.as_path()), "{status:#}");
    assert!(
        std::fs::metadata(&log).is_ok_and(|m| m.len() > 0),
        "the log {} named by status was not written",
        log.display()
    );
    let md = std::fs::symlink_metadata(&want).unwrap();
    assert!(
        md.is_dir() && md.uid() == uid && md.mode() & 0o777 == 0o700,
        "{} must be our 0700 directory: mode {:o} uid {}",
        want.display(),
        md.mode() & 0o777,
        md.uid()
    );

    let (_, doctor, _) = with_env(&["doctor", "-S", srv.socket_str()]);
    let refused = |p: &Path, why: &str| {
        let needle = format!("runtime dir refused: {} {why}", p.display());
        assert!(
            doctor.contains(&needle),
            "doctor does not say `{needle}`:\n{doctor}"
        );
    };
    if root {
        refused(
            &squat_xdg,
            &format!("is owned by uid {other}, not by this user"),
        );
        refused(
            &squat_tt,
            &format!("is owned by uid {other}, not by this user"),
        );
    } else {
        refused(&squat_xdg, "is not a directory");
        refused(&squat_tt, "is a symbolic link");
    }
    refused(&tt.join(format!("{stem}.1")), "is a symbolic link");
    refused(&tt.join(format!("{stem}.2")), "is not a directory");
    assert!(
        doctor.contains(&format!("runtime dir for a new broker: {}", want.display())),
        "{doctor}"
    );

    // Nothing went into what others hold, nor through the symlinks.
    for d in others_dirs.iter().chain([&decoy]) {
        assert!(
            is_empty_dir(d),
            "something was written into {}",
            d.display()
        );
    }
    assert_eq!(raw.close().map(|s| s.success()), Some(true));
    drop(srv);
    assert!(root, "this test could not simulate another user's directory (it needs root to chown one; CI runs as root): the symlink and file squats passed, the other-uid case was not tested");
}
