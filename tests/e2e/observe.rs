//! `tmux_wait` (opt-in) and `tmux_snapshot` (default) against real tmux servers
//! on private sockets: event-driven waits (no polling while idle), process exit,
//! deadline, stale targets and hook refusal; snapshot records compared with
//! tmux's own list commands, criteria, paging and immutable pages.
//!
//! Every `structuredContent` is validated against the published `outputSchema`
//! (errors included) by the harness (`McpClient::call` / `call_envelope`).

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tmux_mcp_e2e::*;

const WAIT: &[&str] = &["--enable-tool", "tmux_wait"];

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

/// A short random tag (so a pane's text cannot come from anything else).
fn tag() -> String {
    let n = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
        ^ ((std::process::id() as u64) << 20);
    let mut x = n
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    x ^= x >> 29;
    format!("{:08x}", x as u32)
}

/// `tmux new-window -d` running `cmd`; returns the pane id.
fn new_window(srv: &TmuxServer, cmd: &str) -> String {
    srv.tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", cmd])
        .trim()
        .to_string()
}

fn rows_concat(capture: &Value) -> String {
    capture["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r.as_str().expect("row string"))
        .collect()
}

/// `tmux-mcp status -S SOCK --json` from a blocking thread (usable while an
/// async call is in flight).
async fn status_async(sock: &str) -> Value {
    let sock = sock.to_string();
    tokio::task::spawn_blocking(move || {
        let (out, _) = run_with_timeout(
            tmux_mcp(&["status", "-S", &sock, "--json"]),
            Duration::from_secs(10),
        );
        assert!(
            out.status.success(),
            "tmux-mcp status failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).expect("status --json is JSON")
    })
    .await
    .expect("status thread")
}

/// The error code and delivery of an envelope (asserting it is an error).
fn code_delivery(e: &Envelope) -> (String, String) {
    assert_eq!(
        e.structured["ok"],
        json!(false),
        "expected an error, got {:#}",
        e.structured
    );
    assert!(e.is_error, "an error envelope without isError");
    assert!(
        e.structured["error"].get("effects").is_none(),
        "observation tools never carry effects: {:#}",
        e.structured
    );
    let err = &e.structured["error"];
    (
        err["code"].as_str().unwrap_or_default().to_string(),
        err["delivery"].as_str().unwrap_or_default().to_string(),
    )
}

// ---------------------------------------------------------------------------
// 1. screen_contains returns when the text appears
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_screen_contains_returns_when_text_appears() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, WAIT).await;
    let gen = generation(&c).await;
    let t = tag();
    let stamp = srv.dir().join("printed-at");

    // The shell records the wall-clock time right before it prints the text.
    let script = format!(
        "sleep 1; date +%s.%N > {}; echo READY-{t}; exec sleep 100",
        sh_quote(stamp.to_str().unwrap())
    );
    let id = new_window(&srv, &format!("sh -c {}", sh_quote(&script)));
    let target = pane_ref(&gen, &id);
    let list = c.call("list_panes", json!({"detail": "full"})).await;
    let pgen = pane(&list, &id)["processGeneration"]
        .as_str()
        .expect("a tracked pane has a processGeneration")
        .to_string();

    let t0 = Instant::now();
    let e = c.call_envelope("tmux_wait", json!({"target": target, "condition": {"type": "screen_contains", "text": format!("READY-{t}")}})).await;
    let elapsed = t0.elapsed().as_secs_f64();
    let returned_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let d = e.data();
    let printed_at: f64 = std::fs::read_to_string(&stamp)
        .expect("the pane recorded when it printed")
        .trim()
        .parse()
        .expect("date +%s.%N");
    let lag = returned_at - printed_at;
    eprintln!("wait returned after {elapsed:.3} s; {lag:.3} s after the text was printed");
    assert!(
        (0.9..3.0).contains(&elapsed),
        "the wait returned after {elapsed:.3} s (text printed after ~1 s)"
    );
    assert!(lag < 0.5, "the wait returned {lag:.3} s after the text was printed (event-driven: expected ~0.2 s at most)");

    assert_eq!(d["target"], target);
    assert_eq!(d["condition"], "screen_contains");
    let cap = &d["capture"];
    assert_eq!(cap["mode"], "snapshot", "{cap:#}");
    assert_eq!(cap["target"], target);
    assert_eq!(
        cap["process_generation"],
        json!(pgen),
        "the capture carries the identity's process_generation"
    );
    assert!(
        cap.get("next_cursor").is_none(),
        "a wait capture is not retained: {cap:#}"
    );
    assert!(
        cap["capture_id"].as_str().is_some_and(|s| s.len() == 32),
        "{cap:#}"
    );
    let rows = rows_concat(cap);
    assert!(
        rows.contains(&format!("READY-{t}\n")),
        "the capture rows do not contain the text: {rows:?}"
    );
    assert!(
        cap["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == &json!(format!("READY-{t}\n"))),
        "one row is the text with its LF: {cap:#}"
    );
    assert_eq!(
        cap["scope"],
        json!({"max_lines": 200, "max_bytes": 65536, "history_lines": 0})
    );

    // A match spanning two rows: rows keep their LF, so "A\nB" matches across them.
    let script = format!("sleep 0.5; printf 'ALPHA-{t}\\nBETA-{t}\\n'; exec sleep 100");
    let id2 = new_window(&srv, &format!("sh -c {}", sh_quote(&script)));
    let target2 = pane_ref(&gen, &id2);
    let needle = format!("ALPHA-{t}\nBETA-{t}");
    let t0 = Instant::now();
    let e = c.call_envelope("tmux_wait", json!({"target": target2, "condition": {"type": "screen_contains", "text": needle}, "timeout": 4})).await;
    let elapsed = t0.elapsed().as_secs_f64();
    let d = e.data();
    assert!(elapsed < 2.0, "the cross-row wait took {elapsed:.3} s");
    let rows = rows_concat(&d["capture"]);
    assert!(rows.contains(&needle), "{rows:?}");
    let r = d["capture"]["rows"].as_array().unwrap();
    let i = r
        .iter()
        .position(|x| x == &json!(format!("ALPHA-{t}\n")))
        .unwrap_or_else(|| panic!("no ALPHA row: {r:?}"));
    assert_eq!(
        r[i + 1],
        json!(format!("BETA-{t}\n")),
        "the text spans two rows"
    );

    // Already on screen: the initial read matches and the wait returns at once.
    let t0 = Instant::now();
    let e = c.call_envelope("tmux_wait", json!({"target": target2, "condition": {"type": "screen_contains", "text": needle}, "timeout": 4})).await;
    let elapsed = t0.elapsed().as_secs_f64();
    assert!(rows_concat(&e.data()["capture"]).contains(&needle));
    assert!(
        elapsed < 0.5,
        "an already-true condition took {elapsed:.3} s"
    );
    // max_lines shapes the capture that is matched and returned: the text sits in
    // the top rows of a 50-row screen, the last 2 rows are blank, and bytes removed
    // by truncation are not searched.
    let e = c.call_envelope("tmux_wait", json!({"target": target2, "condition": {"type": "screen_contains", "text": format!("BETA-{t}")}, "max_lines": 2, "timeout": 0.5})).await;
    e.expect_error("deadline", "observed");
    let e = c.call_envelope("tmux_wait", json!({"target": target2, "condition": {"type": "screen_contains", "text": format!("BETA-{t}")}, "max_lines": 49, "timeout": 1})).await;
    let cap = &e.data()["capture"];
    assert_eq!(cap["scope"]["max_lines"], json!(49));
    assert_eq!(cap["row_count"], json!(49), "{cap:#}");
    assert_eq!(cap["truncated"], json!(true), "{cap:#}");
    c.close().await;
}

// ---------------------------------------------------------------------------
// 2. no polling while idle
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_without_polling_runs_no_tmux_command_while_idle() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, WAIT).await;
    let gen = generation(&c).await;
    let t = tag();
    let id = new_window(&srv, "exec cat");
    // The broker's start-up (option publication) is done before we count.
    poll(Duration::from_secs(5), || {
        srv.try_status()
            .filter(|s| s["option_published"] != "not yet")
    })
    .expect("the broker's start-up did not finish");
    let target = pane_ref(&gen, &id);
    let text = format!("READY-{t}");
    let sock = srv.socket_str().to_string();

    let t0 = Instant::now();
    let wait = c.call_envelope("tmux_wait", json!({"target": target, "condition": {"type": "screen_contains", "text": text}, "timeout": 3}));
    let probe = async {
        tokio::time::sleep_until(tokio::time::Instant::from_std(t0 + Duration::from_secs(1))).await;
        let a = status_async(&sock).await["tmux_connections"]
            .as_u64()
            .expect("tmux_connections");
        tokio::time::sleep_until(tokio::time::Instant::from_std(t0 + Duration::from_secs(2))).await;
        let b = status_async(&sock).await["tmux_connections"]
            .as_u64()
            .expect("tmux_connections");
        // cat writes the line back (the kernel's echo of the typed keys raises no
        // terminal-write event, cat's own write does).
        let sock2 = sock.clone();
        let id2 = id.clone();
        let text2 = text.clone();
        tokio::task::spawn_blocking(move || {
            let out = std::process::Command::new("tmux")
                .args(["-S", &sock2, "send-keys", "-t", &id2, "-l", &text2])
                .env_remove("TMUX")
                .env_remove("TMUX_PANE")
                .output()
                .unwrap();
            assert!(out.status.success());
            let out = std::process::Command::new("tmux")
                .args(["-S", &sock2, "send-keys", "-t", &id2, "Enter"])
                .env_remove("TMUX")
                .env_remove("TMUX_PANE")
                .output()
                .unwrap();
            assert!(out.status.success());
        })
        .await
        .unwrap();
        (a, b, t0.elapsed())
    };
    let (e, (a, b, sent)) = tokio::join!(wait, probe);
    let elapsed = t0.elapsed();
    // No capture while idle: only the safety net's fingerprint readings
    // (`activity`, one every 250 ms while something is watched) run.
    assert!(b - a <= 5, "the broker ran {} tmux command(s) during one idle second of a wait: more than the safety net's 4 a second", b - a);
    let d = e.data();
    assert!(
        elapsed >= sent,
        "the wait returned before the text was typed"
    );
    assert!(
        elapsed - sent < Duration::from_millis(700),
        "the wait returned {:?} after the text was typed",
        elapsed - sent
    );
    let rows = rows_concat(&d["capture"]);
    assert!(
        rows.matches(&format!("{text}\n")).count() >= 2,
        "both the echo and cat's copy are on screen: {rows:?}"
    );
    let after = srv.status()["tmux_connections"].as_u64().unwrap();
    assert!(
        after > b,
        "the re-read after the event ran tmux commands ({b} -> {after})"
    );
    c.close().await;
}

// ---------------------------------------------------------------------------
// 3. process exit, stale target, deadline
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_process_exit_and_deadline() {
    let srv = TmuxServer::start();
    srv.tmux(&["set-option", "-g", "remain-on-exit", "on"]);
    let c = McpClient::attach(&srv, WAIT).await;
    let gen = generation(&c).await;

    let id = new_window(&srv, "sh -c 'sleep 1.5; exit 3'");
    let target = pane_ref(&gen, &id);
    let list = c.call("list_panes", json!({"detail": "full"})).await;
    let pgen = pane(&list, &id)["processGeneration"]
        .as_str()
        .expect("processGeneration of a live pane")
        .to_string();

    let t0 = Instant::now();
    let e = c
        .call_envelope(
            "tmux_wait",
            json!({"target": target, "condition": {"type": "process_exit"}}),
        )
        .await;
    let elapsed = t0.elapsed().as_secs_f64();
    let d = e.data();
    assert_eq!(d["target"], target);
    assert_eq!(d["condition"], "process_exit");
    assert_eq!(
        d["exit_status"], "unobserved",
        "the exit status is never inferred"
    );
    assert_eq!(
        d["process_generation"],
        json!(pgen),
        "process_generation equals list_panes' processGeneration"
    );
    assert!(d["observed_at"].as_f64().is_some_and(|v| v > 0.0), "{d:#}");
    assert!(
        (1.0..3.0).contains(&elapsed),
        "process_exit returned after {elapsed:.3} s (the process exits after ~1.5 s)"
    );
    assert!(e.text.contains(&id), "text names the pane: {:?}", e.text);
    // tmux agrees that the pane is dead. (Its dead status should read 3; when this
    // test runs alongside others, tmux 3.3a was seen leaving the pane's process an
    // unreaped zombie, so pane_dead_status stays empty; that is logged, not asserted.)
    let dead = poll(Duration::from_secs(3), || {
        (srv.tmux(&["display-message", "-p", "-t", &id, "#{pane_dead}"])
            .trim()
            == "1")
            .then_some(())
    });
    assert!(dead.is_some(), "test premise: tmux shows the pane dead");
    let status = poll(Duration::from_secs(1), || {
        (srv.tmux(&["display-message", "-p", "-t", &id, "#{pane_dead_status}"])
            .trim()
            == "3")
            .then_some(())
    });
    if status.is_none() {
        eprintln!(
            "note: tmux shows pane {id} dead without a dead status: {:?}",
            srv.tmux(&[
                "display-message",
                "-p",
                "-t",
                &id,
                "#{pane_dead} [#{pane_dead_status}] #{pane_pid}"
            ])
        );
    }

    // A second wait on the dead pane: stale_target (not success).
    for cond in [
        json!({"type": "process_exit"}),
        json!({"type": "screen_contains", "text": "anything"}),
    ] {
        let e = c
            .call_envelope("tmux_wait", json!({"target": target, "condition": cond}))
            .await;
        let (code, delivery) = code_delivery(&e);
        assert_eq!(
            code, "stale_target",
            "waiting on an exited process ({cond}): {:#}",
            e.structured
        );
        assert!(
            delivery == "not_sent" || delivery == "observed",
            "{:#}",
            e.structured
        );
    }

    // Deadline: text that never comes, timeout 0.5 s.
    let live = new_window(&srv, "exec sleep 100");
    let t0 = Instant::now();
    let e = c.call_envelope("tmux_wait", json!({"target": pane_ref(&gen, &live), "condition": {"type": "screen_contains", "text": format!("NEVER-{}", tag())}, "timeout": 0.5})).await;
    let elapsed = t0.elapsed().as_secs_f64();
    e.expect_error("deadline", "observed");
    assert!(
        (0.45..1.5).contains(&elapsed),
        "a 0.5 s wait took {elapsed:.3} s"
    );
    // process_exit of a live process with a short timeout: deadline too.
    let t0 = Instant::now();
    let e = c.call_envelope("tmux_wait", json!({"target": pane_ref(&gen, &live), "condition": {"type": "process_exit"}, "timeout": 0.3})).await;
    e.expect_error("deadline", "observed");
    assert!(
        (0.25..1.3).contains(&t0.elapsed().as_secs_f64()),
        "a 0.3 s wait took {:?}",
        t0.elapsed()
    );

    // The pane's process exits during a screen_contains wait: stale_target.
    for remain in ["on", "off"] {
        // The second before the exit starts when the test says go, right
        // before the wait: a loaded machine may take a while to get there.
        let id = new_window(&srv, "sh -c 'read go; sleep 1; exit 0'");
        srv.tmux(&["set-option", "-w", "-t", &id, "remain-on-exit", remain]);
        srv.tmux(&["send-keys", "-t", &id, "Enter"]);
        let t0 = Instant::now();
        let e = c.call_envelope("tmux_wait", json!({"target": pane_ref(&gen, &id), "condition": {"type": "screen_contains", "text": format!("NEVER-{}", tag())}, "timeout": 4})).await;
        let elapsed = t0.elapsed().as_secs_f64();
        let (code, delivery) = code_delivery(&e);
        assert_eq!(
            (code.as_str(), delivery.as_str()),
            ("stale_target", "observed"),
            "process exit during a text wait (remain-on-exit {remain}): {:#}",
            e.structured
        );
        assert!(
            elapsed < 2.5,
            "the exit was noticed {elapsed:.3} s after the wait started (remain-on-exit {remain})"
        );
    }
    c.close().await;
}

// ---------------------------------------------------------------------------
// 4. capture hook
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_refuses_with_capture_hook() {
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    let c = McpClient::attach(&srv, WAIT).await;
    let gen = generation(&c).await;
    let id = new_window(&srv, "sh -c 'echo HOOKTEST; exec sleep 100'");
    let target = pane_ref(&gen, &id);
    // Sanity: without the hook the wait works.
    c.call_envelope("tmux_wait", json!({"target": target, "condition": {"type": "screen_contains", "text": "HOOKTEST"}, "timeout": 3})).await.data();

    srv.tmux(&["set-hook", "-g", "after-capture-pane", &trap.command]);
    for cond in [
        json!({"type": "screen_contains", "text": "HOOKTEST"}),
        json!({"type": "process_exit"}),
    ] {
        let t0 = Instant::now();
        let e = c
            .call_envelope(
                "tmux_wait",
                json!({"target": target, "condition": cond, "timeout": 2}),
            )
            .await;
        let (code, delivery) = code_delivery(&e);
        assert_eq!(
            code, "unsupported",
            "condition {cond} with an after-capture-pane hook: {:#}",
            e.structured
        );
        assert_eq!(delivery, hook_refusal_delivery(), "{:#}", e.structured);
        assert!(
            t0.elapsed() < Duration::from_secs(1),
            "the refusal waited {:?}",
            t0.elapsed()
        );
    }
    srv.tmux(&["set-hook", "-gu", "after-capture-pane"]);
    // The same hook, fired on purpose by tmux's own capture-pane, writes a
    // sentinel into the same file; had a refused wait run it, its line would
    // be there first.
    assert_eq!(
        trap.fire_sentinel(
            &srv,
            "after-capture-pane",
            &["capture-pane", "-p", "-t", &id]
        ),
        "",
        "the after-capture-pane hook ran"
    );
    c.call_envelope("tmux_wait", json!({"target": target, "condition": {"type": "screen_contains", "text": "HOOKTEST"}, "timeout": 3})).await.data();
    c.close().await;
}

// ---------------------------------------------------------------------------
// 5. snapshot entities against tmux
// ---------------------------------------------------------------------------

fn num(id: &str) -> u64 {
    id[1..].parse().unwrap_or_else(|_| panic!("bad id {id}"))
}

fn int(s: &str) -> i64 {
    s.parse()
        .unwrap_or_else(|_| panic!("not an integer: {s:?}"))
}

/// Rows of a tmux list command with a tab-separated format.
fn tmux_table(srv: &TmuxServer, args: &[&str]) -> Vec<Vec<String>> {
    srv.tmux(args)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

async fn snapshot(c: &McpClient, args: Value) -> Value {
    c.call_envelope("tmux_snapshot", args).await.data().clone()
}

fn items(d: &Value) -> &Vec<Value> {
    d["items"].as_array().expect("items")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_entities_match_tmux() {
    let srv = TmuxServer::start();
    // main: window 0 (%0), window 1 (split: 2 panes); second: window 0, plus main:1 linked at index 5.
    let w1 = srv
        .tmux(&[
            "new-window",
            "-d",
            "-t",
            "main:1",
            "-n",
            "editor",
            "-P",
            "-F",
            "#{window_id}",
            "exec sleep 1000",
        ])
        .trim()
        .to_string();
    srv.tmux(&["split-window", "-d", "-t", &w1, "exec sleep 1000"]);
    srv.tmux(&[
        "new-session",
        "-d",
        "-s",
        "second",
        "-x",
        "120",
        "-y",
        "40",
        "exec sleep 1000",
    ]);
    srv.tmux(&["link-window", "-d", "-s", &w1, "-t", "second:5"]);
    // %0's login shell runs its profile's commands (its current command, and
    // so main:0's automatic name, change meanwhile): a program that does not.
    srv.tmux(&["set-option", "-g", "automatic-rename", "off"]);
    srv.tmux(&["respawn-pane", "-k", "-t", "%0", "exec sleep 1000"]);
    // The table below includes each pane's current command: wait until the
    // panes have exec'd their sleep (they start as tmux's fork, then `sh -c`).
    let server_argv = cmdline(srv.pid());
    let settled = || {
        let rows = tmux_table(
            &srv,
            &[
                "list-panes",
                "-a",
                "-F",
                "#{pane_id}\t#{pane_pid}\t#{pane_current_command}",
            ],
        );
        rows.iter().all(|r| {
            let argv = cmdline(int(&r[1]) as u32);
            argv != server_argv && argv.first().is_some_and(|a| a == "sleep") && r[2] == "sleep"
        })
    };
    poll(Duration::from_secs(10), || settled().then_some(())).unwrap_or_else(|| {
        panic!(
            "the panes never exec'd their commands: {:?}",
            srv.tmux(&[
                "list-panes",
                "-a",
                "-F",
                "#{pane_id} #{pane_pid} #{pane_current_command}"
            ])
        )
    });

    let c = McpClient::attach(&srv, &[]).await;
    let gen = generation(&c).await;

    // sessions
    let d = snapshot(&c, json!({"entity": "session"})).await;
    let want = tmux_table(&srv, &["list-sessions", "-F", "#{session_id}\t#{session_name}\t#{session_created}\t#{session_attached}\t#{session_windows}"]);
    assert_eq!(want.len(), 2, "test premise: two sessions");
    let mut want_sorted = want.clone();
    want_sorted.sort_by_key(|r| num(&r[0]));
    let got = items(&d);
    assert_eq!(got.len(), 2, "{d:#}");
    for (g, w) in got.iter().zip(&want_sorted) {
        assert_eq!(g["kind"], "session");
        let f = &g["fields"];
        assert_eq!(
            f,
            &json!({"id": w[0], "name": w[1], "created": int(&w[2]), "attached": int(&w[3]), "windowCount": int(&w[4])}),
            "session record differs from tmux"
        );
        assert_eq!(
            g["ref"],
            json!({"kind": "session", "id": w[0], "generation": gen})
        );
    }
    assert_eq!(d["entity"], "session");
    assert_eq!(d["truncated"], json!(false));
    assert!(d.get("next_cursor").is_none());
    assert_eq!(d["server_identity"]["generation"], json!(gen));
    assert_eq!(d["server_identity"]["pid"], json!(srv.pid()));
    let clients = if tmux_at_least(3, 5) {
        "complete"
    } else {
        "unavailable"
    };
    assert_eq!(
        d["coverage"],
        json!({"session": "complete", "window": "complete", "pane": "complete", "window_link": "complete", "client": clients})
    );
    assert_eq!(d["interval"]["clock"], "monotonic_seconds");
    assert!(d["interval"]["started"].as_f64() <= d["interval"]["finished"].as_f64());
    assert!(d["interval"]["reads"].as_u64().unwrap() >= 1);

    // windows (list-windows -a lists each link; one record per window)
    let d = snapshot(&c, json!({"entity": "window"})).await;
    let mut want = tmux_table(&srv, &["list-windows", "-a", "-F", "#{window_id}\t#{window_name}\t#{window_width}\t#{window_height}\t#{window_panes}\t#{window_layout}"]);
    want.sort_by_key(|r| num(&r[0]));
    want.dedup_by(|a, b| a[0] == b[0]);
    assert_eq!(want.len(), 3, "test premise: three windows");
    let got = items(&d);
    assert_eq!(got.len(), 3, "{d:#}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g["kind"], "window");
        assert_eq!(
            g["fields"],
            json!({"id": w[0], "name": w[1], "width": int(&w[2]), "height": int(&w[3]), "paneCount": int(&w[4]), "layout": w[5]}),
            "window record differs from tmux"
        );
        assert_eq!(
            g["ref"],
            json!({"kind": "window", "id": w[0], "generation": gen})
        );
    }
    assert!(got
        .iter()
        .any(|g| g["fields"]["name"] == "editor" && g["fields"]["paneCount"] == 2));

    // panes
    let d = snapshot(&c, json!({"entity": "pane"})).await;
    let mut want = tmux_table(&srv, &["list-panes", "-a", "-F", "#{pane_id}\t#{window_id}\t#{pane_index}\t#{pane_pid}\t#{pane_current_command}\t#{pane_current_path}\t#{pane_title}\t#{pane_active}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_width}\t#{pane_height}"]);
    want.sort_by_key(|r| num(&r[0]));
    want.dedup_by(|a, b| a[0] == b[0]);
    assert_eq!(want.len(), 4, "test premise: four panes");
    let got = items(&d);
    assert_eq!(got.len(), 4, "{d:#}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g["kind"], "pane");
        let expect = json!({
            "id": w[0], "windowId": w[1], "index": int(&w[2]), "pid": int(&w[3]), "currentCommand": w[4],
            "currentPath": if w[5].is_empty() { Value::Null } else { json!(w[5]) }, "title": w[6],
            "active": w[7] == "1", "dead": w[8] == "1", "deadStatus": if w[9].is_empty() { Value::Null } else { json!(int(&w[9])) },
            "width": int(&w[10]), "height": int(&w[11]),
        });
        assert_eq!(g["fields"], expect, "pane record differs from tmux");
        assert_eq!(
            g["ref"],
            json!({"kind": "pane", "id": w[0], "generation": gen})
        );
    }

    // window links: every (session, index) link, sorted by (numeric session id, index)
    let d = snapshot(&c, json!({"entity": "window_link"})).await;
    let mut want = tmux_table(
        &srv,
        &[
            "list-windows",
            "-a",
            "-F",
            "#{session_id}\t#{window_id}\t#{window_index}\t#{window_active}",
        ],
    );
    want.sort_by_key(|r| (num(&r[0]), int(&r[2])));
    assert_eq!(
        want.len(),
        4,
        "test premise: four links (one window linked twice)"
    );
    let got = items(&d);
    assert_eq!(got.len(), 4, "{d:#}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g["kind"], "window_link");
        assert_eq!(
            g["fields"],
            json!({"sessionId": w[0], "windowId": w[1], "index": int(&w[2]), "active": w[3] == "1"}),
            "window_link record differs from tmux"
        );
        assert_eq!(
            g["ref"],
            json!({"kind": "window_link", "id": w[1], "generation": gen, "session_id": w[0], "index": int(&w[2])})
        );
    }
    let linked: Vec<_> = got
        .iter()
        .filter(|g| g["fields"]["windowId"] == json!(w1))
        .collect();
    assert_eq!(
        linked.len(),
        2,
        "the linked window appears once per session: {got:?}"
    );

    // clients: before tmux 3.5 coverage unavailable and no records, even with a
    // client attached (reading them would run a user hook); from 3.5 the
    // attached clients (tests/e2e/clients.rs compares them with tmux's).
    if tmux_at_least(3, 5) {
        let d = snapshot(&c, json!({"entity": "client"})).await;
        assert_eq!(d["entity"], "client");
        let attached = srv
            .tmux(&["list-clients", "-F", "#{client_pid}"])
            .lines()
            .count();
        assert_eq!(items(&d).len(), attached, "{d:#}");
        assert_eq!(d["coverage"]["client"], clients);
        assert_eq!(d["truncated"], json!(false));
    } else {
        c.call_envelope("tmux_snapshot", json!({"entity": "client"}))
            .await
            .expect_error("unsupported", "not_sent");
    }

    // Every acquisition gets its own capture_id.
    let a = snapshot(&c, json!({"entity": "pane"})).await;
    let b = snapshot(&c, json!({"entity": "pane"})).await;
    assert_ne!(a["capture_id"], b["capture_id"]);
    c.close().await;
}

// ---------------------------------------------------------------------------
// 6. criteria and paging
// ---------------------------------------------------------------------------

fn criteria(entity: &str, w: Value) -> Value {
    json!({"profile": "libtmux-ruby.where", "version": 1, "entity": entity, "where": w})
}

fn ids(d: &Value) -> Vec<String> {
    items(d)
        .iter()
        .map(|i| i["fields"]["id"].as_str().expect("id").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_criteria_and_paging() {
    let srv = TmuxServer::start();
    // 5 panes: %0 in main:0; a 3-pane window; another window.
    let w1 = srv
        .tmux(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{window_id}",
            "exec sleep 1000",
        ])
        .trim()
        .to_string();
    srv.tmux(&["split-window", "-d", "-t", &w1, "exec sleep 1000"]);
    srv.tmux(&["split-window", "-d", "-t", &w1, "exec sleep 1000"]);
    srv.tmux(&["new-window", "-d", "exec sleep 1000"]);
    // Titles (pane, title) — tmux's rows: id, index, title.
    let panes = tmux_table(&srv, &["list-panes", "-a", "-F", "#{pane_id}"]);
    let all: Vec<String> = {
        let mut v: Vec<String> = panes.into_iter().map(|r| r[0].clone()).collect();
        v.sort_by_key(|p| num(p));
        v.dedup();
        v
    };
    assert_eq!(all.len(), 5, "test premise: five panes: {all:?}");
    for (i, p) in all.iter().enumerate() {
        let title = ["alpha-one", "alpha-two", "beta-one", "beta-two", "gamma"][i];
        srv.tmux(&["select-pane", "-t", p, "-T", title]);
    }
    let table: Vec<(String, i64, String)> = {
        let mut t: Vec<_> = tmux_table(
            &srv,
            &[
                "list-panes",
                "-a",
                "-F",
                "#{pane_id}\t#{pane_index}\t#{pane_title}",
            ],
        )
        .into_iter()
        .map(|r| (r[0].clone(), int(&r[1]), r[2].clone()))
        .collect();
        t.sort_by_key(|r| num(&r.0));
        t.dedup_by(|a, b| a.0 == b.0);
        t
    };
    let expect = |f: &dyn Fn(&(String, i64, String)) -> bool| -> Vec<String> {
        table.iter().filter(|r| f(r)).map(|r| r.0.clone()).collect()
    };

    let c = McpClient::attach(&srv, &[]).await;
    let cases: Vec<(Value, Vec<String>)> = vec![
        (
            json!({"title": "alpha-one"}),
            expect(&|r| r.2 == "alpha-one"),
        ),
        (
            json!({"title": {"equals": "beta-two"}}),
            expect(&|r| r.2 == "beta-two"),
        ),
        (
            json!({"title": {"startsWith": "alpha"}}),
            expect(&|r| r.2.starts_with("alpha")),
        ),
        (
            json!({"title": {"endsWith": "-one"}}),
            expect(&|r| r.2.ends_with("-one")),
        ),
        (
            json!({"title": {"contains": "ta-t"}}),
            expect(&|r| r.2.contains("ta-t")),
        ),
        (json!({"index": {"gte": 1}}), expect(&|r| r.1 >= 1)),
        (json!({"index": {"lt": 1}}), expect(&|r| r.1 < 1)),
        (
            json!({"id": {"in": [all[1], all[3], "%999"]}}),
            expect(&|r| r.0 == all[1] || r.0 == all[3]),
        ),
        (
            json!({"title": {"not": "gamma"}}),
            expect(&|r| r.2 != "gamma"),
        ),
        (
            json!({"or": [{"title": "alpha-one"}, {"index": {"gte": 2}}]}),
            expect(&|r| r.2 == "alpha-one" || r.1 >= 2),
        ),
        (
            json!({"and": [{"title": {"startsWith": "beta"}}, {"index": {"gte": 1}}]}),
            expect(&|r| r.2.starts_with("beta") && r.1 >= 1),
        ),
        (
            json!({"not": {"title": {"startsWith": "alpha"}}}),
            expect(&|r| !r.2.starts_with("alpha")),
        ),
        (
            json!({"dead": false, "title": {"startsWith": "b"}}),
            expect(&|r| r.2.starts_with('b')),
        ),
        (json!({}), all.clone()),
    ];
    for (w, want) in &cases {
        assert!(
            !want.is_empty() || w == &json!({}),
            "test premise: {w} selects something"
        );
        let d = snapshot(
            &c,
            json!({"entity": "pane", "criteria": criteria("pane", w.clone())}),
        )
        .await;
        assert_eq!(&ids(&d), want, "criteria {w}");
    }
    // Window criteria.
    let d = snapshot(&c, json!({"entity": "window", "criteria": criteria("window", json!({"paneCount": {"gte": 3}}))})).await;
    assert_eq!(ids(&d), vec![w1.clone()]);

    // Invalid criteria: invalid_filter, not_sent.
    let invalid = [
        json!({"entity": "pane", "criteria": criteria("window", json!({"id": "@0"}))}),
        json!({"entity": "pane", "criteria": criteria("pane", json!({"window": {"is": null}}))}),
        json!({"entity": "session", "criteria": criteria("session", json!({"windows": {"is": {"name": "x"}}}))}),
        json!({"entity": "pane", "criteria": criteria("pane", json!({"width": {"contains": "x"}}))}),
        json!({"entity": "pane", "criteria": criteria("pane", json!({"title": {"gte": 3}}))}),
        json!({"entity": "pane", "criteria": criteria("pane", json!({"noSuchField": 1}))}),
        json!({"entity": "pane", "criteria": criteria("pane", json!({"or": [{"title": "x"}, {"activePane": {"is": null}}]}))}),
    ];
    for args in invalid {
        let e = c.call_envelope("tmux_snapshot", args.clone()).await;
        assert_eq!(
            e.structured["error"]["code"], "invalid_filter",
            "{args}: {:#}",
            e.structured
        );
        e.expect_error("invalid_filter", "not_sent");
    }

    // Paging: limit 2 over 5 panes.
    let first = snapshot(&c, json!({"entity": "pane", "limit": 2})).await;
    assert_eq!(items(&first).len(), 2);
    assert_eq!(first["truncated"], json!(true));
    let cursor = first["next_cursor"]
        .as_str()
        .expect("next_cursor on a truncated page")
        .to_string();
    let (key, off) = cursor.split_once(':').expect("cursor is key:offset");
    assert!(
        key.len() == 32
            && key
                .chars()
                .all(|ch| ch.is_ascii_hexdigit() && !ch.is_ascii_uppercase()),
        "{cursor}"
    );
    assert_eq!(off, "2");
    assert_ne!(
        key,
        first["capture_id"].as_str().unwrap(),
        "the page key is not the capture_id"
    );
    let key = key.to_string();

    // A new pane after the first page: later pages do not include it.
    let late = new_window(&srv, "exec sleep 1000");

    let mut seen = ids(&first);
    let mut next = Some(cursor);
    let mut pages = 1;
    let mut last = first.clone();
    while let Some(cur) = next {
        let d = snapshot(&c, json!({"cursor": cur})).await;
        assert_eq!(
            d["capture_id"], first["capture_id"],
            "pages of one acquisition share its capture_id"
        );
        assert_eq!(d["entity"], "pane");
        assert!(items(&d).len() <= 2);
        assert_eq!(
            d["truncated"],
            json!(d.get("next_cursor").is_some()),
            "truncated is true exactly when next_cursor is present: {d:#}"
        );
        seen.extend(ids(&d));
        next = d
            .get("next_cursor")
            .and_then(Value::as_str)
            .map(str::to_string);
        pages += 1;
        last = d;
        assert!(pages < 10, "paging does not end");
    }
    assert_eq!(pages, 3, "5 records at 2 a page");
    assert_eq!(items(&last).len(), 1);
    assert_eq!(seen, all, "every record exactly once, in order");
    assert!(
        !seen.contains(&late),
        "a page included a pane created after the capture"
    );
    assert_eq!(seen.iter().collect::<BTreeSet<_>>().len(), 5);
    // Pages never refresh: repeating a cursor gives the same records.
    let again = snapshot(&c, json!({"cursor": format!("{key}:2")})).await;
    assert_eq!(ids(&again), seen[2..4].to_vec());
    // A fresh query does see the new pane.
    let fresh = snapshot(&c, json!({"entity": "pane", "limit": 200})).await;
    assert!(ids(&fresh).contains(&late));
    assert!(fresh.get("next_cursor").is_none());

    // Cursors outside the result, or unknown: stale_cursor (not_sent).
    for cur in [
        format!("{key}:5"),
        format!("{key}:99"),
        format!("{key}:0"),
        format!("{}:2", "0".repeat(32)),
        format!("{key}:4294967295"),
    ] {
        c.call_envelope("tmux_snapshot", json!({"cursor": cur}))
            .await
            .expect_error("stale_cursor", "not_sent");
    }
    // The last valid offset still works.
    assert_eq!(
        ids(&snapshot(&c, json!({"cursor": format!("{key}:4")})).await),
        vec![all[4].clone()]
    );
    // Page form with query fields: invalid_input.
    c.call_envelope(
        "tmux_snapshot",
        json!({"cursor": format!("{key}:2"), "limit": 2}),
    )
    .await
    .expect_error("invalid_input", "not_sent");
    c.close().await;
}

// ---------------------------------------------------------------------------
// 7. input validation and server death
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_input_validation() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, WAIT).await;
    let gen = generation(&c).await;
    let target = pane_ref(&gen, "%0");
    let text = json!({"type": "screen_contains", "text": "x"});
    for args in [
        json!({"target": target, "condition": text, "timeout": 0}),
        json!({"target": target, "condition": text, "timeout": -1}),
        json!({"target": target, "condition": text, "timeout": 60.5}),
        json!({"target": target, "condition": {"type": "screen_contains", "text": ""}}),
        json!({"target": target, "condition": {"type": "screen_contains"}}),
        json!({"target": target, "condition": {"type": "process_exit", "text": "x"}}),
        json!({"target": target, "condition": {"type": "output_idle"}}),
        json!({"target": target}),
        json!({"condition": text}),
        json!({"target": target, "condition": text, "max_lines": 0}),
        json!({"target": target, "condition": text, "extra": 1}),
    ] {
        let e = c.call_envelope("tmux_wait", args.clone()).await;
        assert_eq!(
            e.structured["error"]["code"], "invalid_input",
            "{args}: {:#}",
            e.structured
        );
        e.expect_error("invalid_input", "not_sent");
    }
    // Another generation, an unknown pane: stale_target before anything is sent.
    c.call_envelope(
        "tmux_wait",
        json!({"target": pane_ref(&"0".repeat(32), "%0"), "condition": text}),
    )
    .await
    .expect_error("stale_target", "not_sent");
    c.call_envelope(
        "tmux_wait",
        json!({"target": pane_ref(&gen, "%9999"), "condition": text}),
    )
    .await
    .expect_error("stale_target", "not_sent");
    c.close().await;
}

/// Spec A.4 and decision 5: the tmux server process ending during a wait
/// reports `observation_lost` with delivery `observed`.
#[test]
fn wait_server_death_is_observation_lost() {
    let mut srv = TmuxServer::start();
    let id = new_window(&srv, "exec sleep 100");
    let mut raw = RawClient::attach(&srv, WAIT);
    raw.initialize();
    let tools = raw.request(1, "tools/list", json!({}));
    let caps = checked_structured(
        &tools,
        "tmux_capabilities",
        &raw.request(
            2,
            "tools/call",
            json!({"name": "tmux_capabilities", "arguments": {}}),
        ),
    );
    let gen = caps["data"]["server_identity"]["generation"]
        .as_str()
        .unwrap()
        .to_string();
    raw.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "tmux_wait", "_meta": {"progressToken": "death"}, "arguments": {
        "target": pane_ref(&gen, &id), "condition": {"type": "screen_contains", "text": "NEVER"}, "timeout": 10}}}));
    // The wait is in flight (past its first read, waiting for events) once it
    // reports progress; only then does the server die.
    let first = raw.recv(Duration::from_secs(5));
    assert_eq!(
        (
            first["method"].as_str(),
            first["params"]["progressToken"].as_str()
        ),
        (Some("notifications/progress"), Some("death")),
        "expected a progress notification of the running wait first, got {first}"
    );
    srv.kill_server();
    let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        raw.recv_id(&json!(5), Duration::from_secs(4))
    }));
    let resp = got.unwrap_or_else(|_| {
        panic!("no tools/call result for a tmux_wait in flight when the tmux server died (the relay's stdout closed or nothing came within 4 s); expected an observation_lost envelope with delivery observed (SPEC A.4, decision 5)")
    });
    let s = resp["result"]["structuredContent"].clone();
    let schema = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "tmux_wait")
        .unwrap()["outputSchema"]
        .clone();
    validate(&schema, &s).unwrap_or_else(|e| panic!("{e}\n{s:#}"));
    assert_eq!(
        (s["error"]["code"].as_str(), s["error"]["delivery"].as_str()),
        (Some("observation_lost"), Some("observed")),
        "server death during a wait: {s:#}"
    );
}
