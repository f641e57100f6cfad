//! The seed family's mutation tools against real tmux: `tmux_send` (literal
//! text byte for byte, key names), `tmux_create` (session/window/pane, ids that
//! exist), `tmux_close` (exactly the referenced entity), the caller's own pane,
//! stale references and invalid input. Every structured result — successes and
//! error envelopes — is validated against the tool's published outputSchema.

use rmcp::model::CallToolResult;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;
use tmux_mcp_e2e::*;

const MUTATIONS: &[&str] = &[
    "--enable-tool",
    "tmux_send",
    "--enable-tool",
    "tmux_create",
    "--enable-tool",
    "tmux_close",
];

fn pane_ref(id: &str, gen: &str) -> Value {
    json!({ "kind": "pane", "id": id, "generation": gen })
}

fn entity_ref(kind: &str, id: &str, gen: &str) -> Value {
    json!({ "kind": kind, "id": id, "generation": gen })
}

/// The structured error envelope of a call that must fail, validated against
/// the tool's published outputSchema; returns `error`.
async fn call_err(c: &McpClient, name: &str, args: Value) -> Value {
    let result: CallToolResult = c.call_raw(name, args).await;
    assert_eq!(
        result.is_error,
        Some(true),
        "{name} should have failed: {result:?}"
    );
    let structured = result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("{name} error has no structuredContent: {result:?}"));
    let schema =
        Value::Object((*c.tool(name).output_schema.clone().expect("outputSchema")).clone());
    if let Err(e) = validate(&schema, &structured) {
        panic!("error envelope of {name} does not validate against its outputSchema:\n{e}\ninstance: {structured:#}");
    }
    assert_eq!(structured["ok"], false);
    // The detail is in the text content; the envelope keeps the fixed message.
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    assert_fixed_message(&structured["error"], &text);
    let mut error = structured["error"].clone();
    error["text"] = json!(text);
    error
}

fn assert_not_sent(err: &Value, code: &str) {
    assert_eq!(err["code"], code, "{err:#}");
    assert_eq!(err["delivery"], "not_sent", "{err:#}");
    assert_eq!(
        err["effects"],
        json!({ "state": "none", "created": [] }),
        "{err:#}"
    );
}

/// `list-panes -a`: every pane id of the server.
fn all_panes(srv: &TmuxServer) -> BTreeSet<String> {
    srv.tmux(&["list-panes", "-a", "-F", "#{pane_id}"])
        .lines()
        .map(str::to_string)
        .collect()
}

fn ids(srv: &TmuxServer, args: &[&str]) -> BTreeSet<String> {
    srv.tmux(args)
        .lines()
        .map(|l| l.split(' ').next().unwrap_or_default().to_string())
        .collect()
}

/// The bytes the reader echoed on its screen, read back with capture-pane.
fn screen_bytes(srv: &TmuxServer, pane: &str) -> Vec<u8> {
    let text = srv.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", pane]);
    text.split_whitespace()
        .map(|h| {
            u8::from_str_radix(h, 16)
                .unwrap_or_else(|_| panic!("not hex on the reader's screen: {h:?}\n{text}"))
        })
        .collect()
}

/// Proves that nothing reached the raw reader before now: types `sentinel`
/// into it through the path the refused calls would have taken (`tmux_send`
/// through this broker), waits until the reader has it, and returns the bytes
/// it had received before the sentinel.
async fn before_sentinel(
    c: &McpClient,
    target: &Value,
    out: &std::path::Path,
    sentinel: &str,
) -> Vec<u8> {
    c.call(
        "tmux_send",
        json!({ "target": target, "input": { "type": "text", "text": sentinel } }),
    )
    .await;
    let got = poll(Duration::from_secs(10), || {
        let b = std::fs::read(out).unwrap_or_default();
        b.ends_with(sentinel.as_bytes()).then_some(b)
    })
    .unwrap_or_else(|| {
        panic!(
            "the sentinel {sentinel:?} never reached the reader; it got {:?}",
            String::from_utf8_lossy(&std::fs::read(out).unwrap_or_default())
        )
    });
    got[..got.len() - sentinel.len()].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_listed_only_when_enabled_with_honest_annotations() {
    let srv = TmuxServer::start();
    let plain = McpClient::attach(&srv, &[]).await;
    let names: Vec<String> = plain.tools().iter().map(|t| t.name.to_string()).collect();
    for t in ["tmux_send", "tmux_create", "tmux_close"] {
        assert!(
            !names.contains(&t.to_string()),
            "{t} is listed without --enable-tool: {names:?}"
        );
    }
    // A direct call of the hidden tool is the policy_denied envelope, with effects.
    let r = plain
        .call_raw(
            "tmux_send",
            json!({ "target": pane_ref("%0", "x"), "input": { "type": "text", "text": "x" } }),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    let s = r.structured_content.expect("structuredContent");
    assert_eq!(s["error"]["code"], "policy_denied");
    assert_eq!(
        s["error"]["effects"],
        json!({ "state": "none", "created": [] })
    );
    plain.close().await;

    let c = McpClient::attach(&srv, MUTATIONS).await;
    let names: Vec<String> = c.tools().iter().map(|t| t.name.to_string()).collect();
    let pos = |n: &str| {
        names
            .iter()
            .position(|x| x == n)
            .unwrap_or_else(|| panic!("{n} not listed: {names:?}"))
    };
    assert!(
        pos("tmux_capabilities") < pos("tmux_send")
            && pos("tmux_send") < pos("tmux_create")
            && pos("tmux_create") < pos("tmux_close"),
        "catalog order: {names:?}"
    );
    for t in ["tmux_send", "tmux_create", "tmux_close"] {
        let tool = c.tool(t);
        let a = tool.annotations.as_ref().expect("annotations");
        assert_eq!(
            (
                a.read_only_hint,
                a.destructive_hint,
                a.idempotent_hint,
                a.open_world_hint
            ),
            (Some(false), Some(true), Some(false), Some(false)),
            "{t}"
        );
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")), "{t}");
        assert_eq!(
            tool.output_schema.as_ref().unwrap().get("type"),
            Some(&json!("object")),
            "{t}"
        );
    }
    let cap = c.call("tmux_capabilities", json!({})).await;
    let enabled: Vec<&str> = cap["data"]["enabled_tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        enabled.contains(&"tmux_send") && enabled.contains(&"tmux_close"),
        "{enabled:?}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_text_and_keys_arrive_exactly() {
    let srv = TmuxServer::start();
    let (pane, out) = start_reader(&srv);
    let c = McpClient::attach(&srv, MUTATIONS).await;
    let gen = generation(&c).await;
    let target = pane_ref(&pane, &gen);

    let texts = [
        "-leading dash; Enter C-c\nsecond line\tTAB;",
        "Enter",
        "C-c",
        ";",
        "back\\;",
        "",
        "-",
        "ünï ✓\n",
    ];
    let mut expected: Vec<u8> = Vec::new();
    for t in texts {
        let r = c
            .call(
                "tmux_send",
                json!({ "target": target, "input": { "type": "text", "text": t } }),
            )
            .await;
        assert_eq!(
            r["data"],
            json!({ "target": target, "delivery": "observed", "client_exit_status": 0, "completion": "dispatch_only" })
        );
        expected.extend_from_slice(t.as_bytes());
    }
    // Key names are interpreted by tmux: C-c is the byte 0x03 in raw mode, Enter
    // is CR, Space a blank, and ";" the semicolon key.
    c.call("tmux_send", json!({ "target": target, "input": { "type": "keys", "keys": ["C-c", "Enter", "Space", ";", "x"] } })).await;
    expected.extend_from_slice(b"\x03\r ;x");

    let got = poll(Duration::from_secs(5), || {
        let b = std::fs::read(&out).unwrap_or_default();
        (b.len() >= expected.len()).then_some(b)
    })
    .unwrap_or_else(|| {
        panic!(
            "the reader got {:?}, expected {:?}",
            String::from_utf8_lossy(&std::fs::read(&out).unwrap_or_default()),
            String::from_utf8_lossy(&expected)
        )
    });
    assert_eq!(
        got,
        expected,
        "bytes received by the program differ:\n got {:?}\nwant {:?}",
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&expected)
    );
    // Multi-line text: LF arrives as LF (0x0a), not as Enter (CR).
    assert!(got.contains(&b'\n') && !got[..texts[0].len()].contains(&b'\r'));
    // And the same bytes, read back from the reader's screen with capture-pane.
    let screen = poll(Duration::from_secs(5), || {
        Some(screen_bytes(&srv, &pane)).filter(|b| b.len() >= expected.len())
    })
    .unwrap_or_else(|| screen_bytes(&srv, &pane));
    assert_eq!(
        screen, expected,
        "capture-pane of the reader's hex echo differs"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_ctrl_c_interrupts_sleep_then_dead_pane_refused() {
    let srv = TmuxServer::start();
    srv.tmux(&["set-option", "-g", "remain-on-exit", "on"]);
    let out = srv.tmux(&[
        "new-window",
        "-d",
        "-P",
        "-F",
        "#{pane_id} #{pane_pid}",
        "exec sleep 1000",
    ]);
    let (pane, pid) = out.trim().split_once(' ').unwrap();
    let pid: u32 = pid.parse().unwrap();
    assert!(pid_alive(pid));
    let c = McpClient::attach(&srv, MUTATIONS).await;
    let gen = generation(&c).await;
    let r = c
        .call(
            "tmux_send",
            json!({ "target": pane_ref(pane, &gen), "input": { "type": "keys", "keys": ["C-c"] } }),
        )
        .await;
    assert_eq!(r["data"]["completion"], "dispatch_only");
    poll(Duration::from_secs(5), || (!pid_alive(pid)).then_some(()))
        .expect("C-c did not interrupt the sleep");
    let dead = poll(Duration::from_secs(5), || {
        Some(
            srv.tmux(&["display-message", "-p", "-t", pane, "#{pane_dead}"])
                .trim()
                .to_string(),
        )
        .filter(|d| d == "1")
    });
    assert_eq!(dead.as_deref(), Some("1"));
    // Nothing can read input in a dead pane: refused before sending.
    let err = call_err(
        &c,
        "tmux_send",
        json!({ "target": pane_ref(pane, &gen), "input": { "type": "text", "text": "x" } }),
    )
    .await;
    assert_not_sent(&err, "stale_target");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_session_window_pane_with_ids_that_exist() {
    let srv = TmuxServer::start();
    srv.tmux(&["set-option", "-g", "remain-on-exit", "on"]);
    let c = McpClient::attach(&srv, MUTATIONS).await;
    let gen = generation(&c).await;
    let dir = std::fs::canonicalize(srv.dir()).unwrap();
    let dir_s = dir.to_str().unwrap();

    // Session: name with '#' kept literally, cwd and environment applied.
    let r = c
        .call(
            "tmux_create",
            json!({ "kind": "session", "name": "new#1", "window_name": "w#{pane_id}", "width": 90, "height": 20,
                    "argv": ["sleep", "1000"], "cwd": dir_s, "environment": { "MCP_T": "v;", "OTHER": "#{x}" } }),
        )
        .await;
    let d = &r["data"];
    assert_eq!(d["delivery"], "observed");
    assert_eq!(d["program_completion"], "unobserved");
    let created = d["created"].as_array().unwrap();
    assert_eq!(created.len(), 3, "{d:#}");
    assert_eq!(d["entity"], created[0]);
    let (sid, wid, pid) = (
        created[0]["id"].as_str().unwrap(),
        created[1]["id"].as_str().unwrap(),
        created[2]["id"].as_str().unwrap(),
    );
    assert_eq!(
        created
            .iter()
            .map(|r| r["kind"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["session", "window", "pane"]
    );
    assert!(created.iter().all(|r| r["generation"] == json!(gen)));
    // tmux reads pane_current_path as empty until the new pane's process owns
    // its terminal: wait for it.
    let line = poll(Duration::from_secs(5), || {
        let l = srv.tmux(&["display-message", "-p", "-t", pid, "#{session_id}|#{session_name}|#{window_id}|#{window_name}|#{pane_id}|#{pane_current_path}|#{pane_pid}"]);
        (l.trim().split('|').nth(5) != Some("")).then_some(l)
    })
    .unwrap_or_else(|| panic!("tmux never knew the pane's current path"));
    let f: Vec<&str> = line.trim().split('|').collect();
    assert_eq!(
        &f[..6],
        &[sid, "new#1", wid, "w#{pane_id}", pid, dir_s],
        "{line}"
    );
    let pane_pid: u32 = f[6].parse().unwrap();
    // The pane process may still be between fork and exec: wait for the exec.
    poll(Duration::from_secs(2), || {
        (cmdline(pane_pid) == ["sleep", "1000"]).then_some(())
    })
    .unwrap_or_else(|| panic!("pane process runs {:?}", cmdline(pane_pid)));
    let environ = std::fs::read(format!("/proc/{pane_pid}/environ")).unwrap();
    let vars: Vec<&[u8]> = environ.split(|b| *b == 0).collect();
    assert!(
        vars.contains(&&b"MCP_T=v;"[..]) && vars.contains(&&b"OTHER=#{x}"[..]),
        "environment not applied literally"
    );

    // Window in that session at index 7; a one-element argv is not run by a shell.
    let sref = entity_ref("session", sid, &gen);
    let r = c.call("tmux_create", json!({ "kind": "window", "parent": sref, "name": "win#2", "index": 7, "argv": ["sleep 1000"] })).await;
    let created = r["data"]["created"].as_array().unwrap().clone();
    assert_eq!(created.len(), 2);
    let (wid2, pid2) = (
        created[0]["id"].as_str().unwrap(),
        created[1]["id"].as_str().unwrap(),
    );
    assert_eq!(r["data"]["entity"], created[0]);
    let line = srv.tmux(&[
        "display-message",
        "-p",
        "-t",
        pid2,
        "#{session_id} #{window_id} #{window_index} #{window_name}",
    ]);
    assert_eq!(line.trim(), format!("{sid} {wid2} 7 win#2"));
    // `sleep 1000` as one word is not a program: /usr/bin/env fails (127),
    // so the pane dies at once (through a shell it would sleep). tmux shows
    // the pane dead a moment before it has reaped the exit status, and under
    // load sometimes records no status for a child that exited that fast:
    // the pane must die, and a status, when tmux has one, must be 127.
    let dead = poll(Duration::from_secs(15), || {
        (srv.tmux(&["display-message", "-p", "-t", pid2, "#{pane_dead}"])
            .trim()
            == "1")
            .then_some(())
    });
    assert!(
        dead.is_some(),
        "a one-element argv must not go through a shell: the pane still runs"
    );
    let st = poll(Duration::from_secs(3), || {
        Some(
            srv.tmux(&["display-message", "-p", "-t", pid2, "#{pane_dead_status}"])
                .trim()
                .to_string(),
        )
        .filter(|s| !s.is_empty())
    });
    assert!(
        st.as_deref().is_none_or(|s| s == "127"),
        "exit status {st:?}, expected 127 (env found no program `sleep 1000`)"
    );
    // The session's active window did not change (focus defaults to false).
    assert_eq!(
        srv.tmux(&["display-message", "-p", "-t", sid, "#{window_id}"])
            .trim(),
        wid
    );

    // Index collision: tmux refuses; observed, effects unknown.
    let err = call_err(&c, "tmux_create", json!({ "kind": "window", "parent": sref, "name": "again", "index": 7, "argv": ["sleep", "1000"] })).await;
    assert_eq!(err["code"], "command_failed", "{err:#}");
    assert_eq!(err["delivery"], "observed");
    assert_eq!(err["effects"], json!({ "state": "unknown", "created": [] }));

    // Pane: split the session's first pane.
    let r = c.call("tmux_create", json!({ "kind": "pane", "parent": pane_ref(pid, &gen), "direction": "horizontal", "size": "30%", "argv": ["sleep", "1000"] })).await;
    let created = r["data"]["created"].as_array().unwrap();
    assert_eq!(created.len(), 1);
    let pid3 = created[0]["id"].as_str().unwrap();
    assert_eq!(
        srv.tmux(&["display-message", "-p", "-t", pid3, "#{window_id}"])
            .trim(),
        wid
    );
    assert!(all_panes(&srv).is_superset(&[pid, pid2, pid3].iter().map(|s| s.to_string()).collect()));

    // The registry was refreshed: later calls see the new panes.
    let list = c.call("list_panes", json!({})).await;
    for p in [pid, pid2, pid3] {
        pane(&list, p);
    }

    // cwd that does not exist: invalid_input, nothing created.
    let before = all_panes(&srv);
    let err = call_err(&c, "tmux_create", json!({ "kind": "window", "parent": sref, "name": "x", "argv": ["true"], "cwd": "/nonexistent/dir" })).await;
    assert_not_sent(&err, "invalid_input");
    assert!(err["text"].as_str().unwrap().contains("/cwd"), "{err:#}");
    let err = call_err(
        &c,
        "tmux_create",
        json!({ "kind": "window", "parent": sref, "name": "x", "argv": [""] }),
    )
    .await;
    assert_not_sent(&err, "invalid_input");
    assert!(err["text"].as_str().unwrap().contains("/argv/0"), "{err:#}");
    assert_eq!(all_panes(&srv), before);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_kills_exactly_the_referenced_entity() {
    let srv = TmuxServer::start();
    let w1 = srv.tmux(&[
        "new-window",
        "-d",
        "-P",
        "-F",
        "#{window_id} #{pane_id}",
        "-t",
        "main:",
        "sleep 1000",
    ]);
    let (w1, w1p1) = w1.trim().split_once(' ').unwrap();
    let w1p2 = srv
        .tmux(&[
            "split-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            w1p1,
            "sleep 1000",
        ])
        .trim()
        .to_string();
    let w2 = srv
        .tmux(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{window_id}",
            "-t",
            "main:",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    let other = srv
        .tmux(&[
            "new-session",
            "-d",
            "-P",
            "-F",
            "#{session_id}",
            "-s",
            "other",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    let c = McpClient::attach(&srv, MUTATIONS).await;
    let gen = generation(&c).await;

    // Pane: only that pane goes.
    let before = all_panes(&srv);
    let r = c
        .call("tmux_close", json!({ "target": pane_ref(&w1p2, &gen) }))
        .await;
    assert_eq!(
        r["data"],
        json!({ "target": pane_ref(&w1p2, &gen), "delivery": "observed", "client_exit_status": 0 })
    );
    let mut want = before.clone();
    want.remove(&w1p2);
    assert_eq!(all_panes(&srv), want);
    // Closing it again: it no longer exists.
    let err = call_err(&c, "tmux_close", json!({ "target": pane_ref(&w1p2, &gen) })).await;
    assert_not_sent(&err, "stale_target");

    // Window: that window and its pane, nothing else.
    let windows = ids(&srv, &["list-windows", "-a", "-F", "#{window_id}"]);
    c.call(
        "tmux_close",
        json!({ "target": entity_ref("window", w1, &gen) }),
    )
    .await;
    let mut want_w = windows.clone();
    want_w.remove(w1);
    assert_eq!(
        ids(&srv, &["list-windows", "-a", "-F", "#{window_id}"]),
        want_w
    );
    want.remove(w1p1);
    assert_eq!(all_panes(&srv), want);
    assert!(want_w.contains(&w2));

    // Session: "other" only; main stays.
    c.call(
        "tmux_close",
        json!({ "target": entity_ref("session", &other, &gen) }),
    )
    .await;
    let sessions = ids(&srv, &["list-sessions", "-F", "#{session_id}"]);
    assert!(
        !sessions.contains(&other) && sessions.contains("$0"),
        "{sessions:?}"
    );
    // The registry was refreshed: list_panes no longer shows closed panes.
    let list = c.call("list_panes", json!({})).await;
    let listed: BTreeSet<String> = list["panes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed, all_panes(&srv));

    // The last session would end the server: refused, nothing sent.
    let err = call_err(
        &c,
        "tmux_close",
        json!({ "target": entity_ref("session", "$0", &gen) }),
    )
    .await;
    assert_not_sent(&err, "policy_denied");
    assert!(ids(&srv, &["list-sessions", "-F", "#{session_id}"]).contains("$0"));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_generation_refused_and_nothing_changes() {
    let srv = TmuxServer::start();
    let (reader, out) = start_reader(&srv);
    let w = srv
        .tmux(&["new-window", "-d", "-P", "-F", "#{window_id}", "sleep 1000"])
        .trim()
        .to_string();
    let c = McpClient::attach(&srv, MUTATIONS).await;
    let gen = generation(&c).await;
    let stale = "0123456789abcdef0123456789abcdef";
    assert_ne!(gen, stale);
    let panes = all_panes(&srv);
    let sessions = ids(&srv, &["list-sessions", "-F", "#{session_id}"]);

    let err = call_err(
        &c,
        "tmux_send",
        json!({ "target": pane_ref(&reader, stale), "input": { "type": "text", "text": "nope" } }),
    )
    .await;
    assert_not_sent(&err, "stale_target");
    let err = call_err(
        &c,
        "tmux_send",
        json!({ "target": pane_ref(&reader, stale), "input": { "type": "keys", "keys": ["C-c"] } }),
    )
    .await;
    assert_not_sent(&err, "stale_target");
    let err = call_err(
        &c,
        "tmux_close",
        json!({ "target": entity_ref("window", &w, stale) }),
    )
    .await;
    assert_not_sent(&err, "stale_target");
    let err = call_err(
        &c,
        "tmux_close",
        json!({ "target": pane_ref(&reader, stale) }),
    )
    .await;
    assert_not_sent(&err, "stale_target");
    let err = call_err(&c, "tmux_create", json!({ "kind": "window", "parent": entity_ref("session", "$0", stale), "name": "x", "argv": ["sleep", "1"] })).await;
    assert_not_sent(&err, "stale_target");
    let err = call_err(&c, "tmux_create", json!({ "kind": "pane", "parent": pane_ref(&reader, stale), "direction": "vertical", "argv": ["sleep", "1"] })).await;
    assert_not_sent(&err, "stale_target");
    // An id that never existed, with the right generation.
    let err = call_err(
        &c,
        "tmux_send",
        json!({ "target": pane_ref("%999", &gen), "input": { "type": "text", "text": "x" } }),
    )
    .await;
    assert_not_sent(&err, "stale_target");

    // Each refused call was answered before the next was made, so once a
    // sentinel sent after them has arrived, whatever they did is visible.
    assert_eq!(
        before_sentinel(&c, &pane_ref(&reader, &gen), &out, "sentinel-stale").await,
        b"",
        "input reached the pane"
    );
    assert_eq!(all_panes(&srv), panes);
    assert_eq!(
        ids(&srv, &["list-sessions", "-F", "#{session_id}"]),
        sessions
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_input_names_the_field_and_sends_nothing() {
    let srv = TmuxServer::start();
    let (reader, out) = start_reader(&srv);
    let c = McpClient::attach(&srv, MUTATIONS).await;
    let gen = generation(&c).await;
    let t = pane_ref(&reader, &gen);
    let cases = [
        (
            json!({ "target": t, "input": { "type": "text", "text": "a", "keys": ["Enter"] } }),
            "/input",
        ),
        (
            json!({ "target": t, "input": { "type": "keys", "text": "a", "keys": ["Enter"] } }),
            "/input",
        ),
        (
            json!({ "target": t, "input": { "type": "text", "text": "a\u{0}b" } }),
            "/input/text",
        ),
        (
            json!({ "target": t, "input": { "type": "keys", "keys": [] } }),
            "/input/keys",
        ),
        (
            json!({ "target": t, "input": { "type": "keys", "keys": [""] } }),
            "/input/keys/0",
        ),
        (
            json!({ "target": t, "input": { "type": "keys", "keys": ["C-\u{0}"] } }),
            "/input/keys/0",
        ),
        (
            json!({ "target": { "kind": "pane", "id": "main", "generation": gen }, "input": { "type": "text", "text": "a" } }),
            "/target/id",
        ),
        (
            json!({ "input": { "type": "text", "text": "a" } }),
            "target",
        ),
    ];
    for (args, field) in cases {
        let err = call_err(&c, "tmux_send", args.clone()).await;
        assert_not_sent(&err, "invalid_input");
        let msg = err["text"].as_str().unwrap();
        assert!(
            msg.starts_with("Input does not match the operation schema."),
            "{msg}"
        );
        assert!(
            msg.contains(field),
            "message {msg:?} should name {field} for {args}"
        );
    }
    // Over max_mutation_bytes in all (each string within its own limit).
    let big = "x".repeat(40_000);
    let err = call_err(
        &c,
        "tmux_send",
        json!({ "target": t, "input": { "type": "keys", "keys": [big, big] } }),
    )
    .await;
    assert_not_sent(&err, "capacity");
    // Close: window-link or unknown kinds are not references it takes.
    let err = call_err(
        &c,
        "tmux_close",
        json!({ "target": { "kind": "window_link", "id": "@0", "generation": gen } }),
    )
    .await;
    assert_not_sent(&err, "invalid_input");

    assert_eq!(
        before_sentinel(&c, &t, &out, "sentinel-invalid").await,
        b"",
        "invalid input reached the pane"
    );
    c.close().await;
}

// ---------------------------------------------------------------------------
// The caller's own pane (the relay runs inside a pane; FIFO technique)
// ---------------------------------------------------------------------------

/// The relay in a new window of `main`, surviving its own pane being closed.
fn relay_in_pane(srv: &TmuxServer, label: &str, extra: &[&str]) -> (LineChannel, Value, String) {
    let r = PaneRelay::start(srv, label, extra, true);
    (r.channel, r.tools, r.pane)
}

/// The error of a `tools/call` through a raw channel, validated against the
/// published outputSchema.
fn raw_error(tools: &Value, name: &str, resp: &Value) -> Value {
    let result = resp
        .get("result")
        .unwrap_or_else(|| panic!("tools/call {name} failed: {resp}"));
    assert_eq!(
        result["isError"], true,
        "{name} should have failed: {result}"
    );
    let s = &result["structuredContent"];
    let schema = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap()["outputSchema"]
        .clone();
    if let Err(e) = validate(&schema, s) {
        panic!("error envelope of {name} does not validate: {e}\n{s:#}");
    }
    let text = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert_fixed_message(&s["error"], &text);
    let mut error = s["error"].clone();
    error["text"] = json!(text);
    error
}

#[test]
fn own_pane_protected_unless_allow_self() {
    let srv = TmuxServer::start();
    let other = srv
        .tmux(&[
            "new-session",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-s",
            "other",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    let (mut ch, tools, me) = relay_in_pane(&srv, "guarded", MUTATIONS);
    let list = checked_structured(
        &tools,
        "list_panes",
        &ch.request(
            2,
            "tools/call",
            json!({ "name": "list_panes", "arguments": {} }),
        ),
    );
    assert_eq!(
        list["callerPaneId"],
        json!(me),
        "test premise: the relay's pane is the caller"
    );
    let gen = list["generation"].as_str().unwrap().to_string();
    let my_window = srv
        .tmux(&["display-message", "-p", "-t", &me, "#{window_id}"])
        .trim()
        .to_string();
    let before = srv.tmux(&["capture-pane", "-p", "-t", &me]);

    let mut id = 10;
    let mut call = |ch: &mut LineChannel, name: &str, args: Value| {
        id += 1;
        ch.request(id, "tools/call", json!({ "name": name, "arguments": args }))
    };
    let denied = [
        (
            "tmux_send",
            json!({ "target": pane_ref(&me, &gen), "input": { "type": "text", "text": "typed into myself\n" } }),
        ),
        (
            "tmux_send",
            json!({ "target": pane_ref(&me, &gen), "input": { "type": "keys", "keys": ["C-c"] } }),
        ),
        ("tmux_close", json!({ "target": pane_ref(&me, &gen) })),
        (
            "tmux_close",
            json!({ "target": entity_ref("window", &my_window, &gen) }),
        ),
        (
            "tmux_close",
            json!({ "target": entity_ref("session", "$0", &gen) }),
        ),
    ];
    for (name, args) in denied {
        let err = raw_error(&tools, name, &call(&mut ch, name, args.clone()));
        assert_not_sent(&err, "policy_denied");
        assert!(
            err["text"].as_str().unwrap().contains("--allow-self"),
            "{err:#}"
        );
    }
    // Scope session: a pane of another session is out of reach.
    let err = raw_error(
        &tools,
        "tmux_send",
        &call(
            &mut ch,
            "tmux_send",
            json!({ "target": pane_ref(&other, &gen), "input": { "type": "text", "text": "x" } }),
        ),
    );
    assert_not_sent(&err, "policy_denied");
    assert!(err["text"].as_str().unwrap().contains("scope"), "{err:#}");
    // A pane of its own session is fine.
    let ok = call(
        &mut ch,
        "tmux_send",
        json!({ "target": pane_ref("%0", &gen), "input": { "type": "text", "text": "" } }),
    );
    checked_structured(&tools, "tmux_send", &ok);

    // With --allow-self: typing into and closing its own pane work.
    let allow: Vec<&str> = MUTATIONS.iter().copied().chain(["--allow-self"]).collect();
    let (mut ch2, tools2, me2) = relay_in_pane(&srv, "allowed", &allow);

    // Nothing reached the guarded caller's pane: the second agent (same
    // session) types a sentinel into it through the same path (tmux_send; the
    // terminal echoes it, nothing reads it). Once it shows, any text or key
    // the refused calls had sent would show before it.
    assert!(
        before.trim().is_empty(),
        "test premise: the caller's pane starts blank: {before:?}"
    );
    let r = call(
        &mut ch2,
        "tmux_send",
        json!({ "target": pane_ref(&me, &gen), "input": { "type": "text", "text": "sentinel-self" } }),
    );
    checked_structured(&tools2, "tmux_send", &r);
    let screen = poll(Duration::from_secs(10), || {
        Some(srv.tmux(&["capture-pane", "-p", "-t", &me])).filter(|s| s.contains("sentinel-self"))
    })
    .unwrap_or_else(|| {
        panic!(
            "the sentinel never showed in {me}: {:?}",
            srv.tmux(&["capture-pane", "-p", "-t", &me])
        )
    });
    assert_eq!(
        screen.trim(),
        "sentinel-self",
        "the caller's pane changed before the sentinel"
    );
    assert!(all_panes(&srv).contains(&me));
    let r = call(
        &mut ch2,
        "tmux_send",
        json!({ "target": pane_ref(&me2, &gen), "input": { "type": "text", "text": "typed-into-myself" } }),
    );
    checked_structured(&tools2, "tmux_send", &r);
    // The terminal echoes what was typed (nothing reads it).
    poll(Duration::from_secs(5), || {
        srv.tmux(&["capture-pane", "-p", "-t", &me2])
            .contains("typed-into-myself")
            .then_some(())
    })
    .expect("typed text did not show in the caller's own pane");
    let r = call(
        &mut ch2,
        "tmux_close",
        json!({ "target": pane_ref(&me2, &gen) }),
    );
    let s = checked_structured(&tools2, "tmux_close", &r);
    assert_eq!(s["data"]["target"]["id"], json!(me2));
    assert!(
        !all_panes(&srv).contains(&me2),
        "the caller's own pane is still there"
    );
    assert!(
        all_panes(&srv).contains(&me),
        "closed more than the referenced pane"
    );
    drop(ch2);
    drop(ch);
}
