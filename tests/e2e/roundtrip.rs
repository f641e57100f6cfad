//! One tmux round trip per capture where tmux allows it (issue 8, item 4): on
//! tmux >= 3.5 the `after-capture-pane` check runs inside the capture's own
//! command queue (`#{after-capture-pane}` reads every array entry there), so a
//! pane read is one tmux client invocation; 3.3a (and 3.4) keep the
//! `show-hooks` preflight, two invocations. Each test runs on every tested
//! version and asserts that version's path.

use serde_json::{json, Value};
use tmux_mcp_e2e::*;

/// Attach flags enabling the seed capture tool (opt-in).
const TOOLS: &[&str] = &["--enable-tool", "tmux_capture"];

/// `status`: tmux connections (client invocations) and the commands they carried.
fn counts(srv: &TmuxServer) -> (u64, u64) {
    let s = srv.status();
    (
        s["tmux_connections"]
            .as_u64()
            .expect("status counts tmux connections"),
        s["tmux_commands"]
            .as_u64()
            .expect("status counts tmux commands"),
    )
}

/// `tmux_capabilities` says which hook check is in force, and keeps the
/// "stable hook configuration" requirement only where there is a gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_name_the_hook_check_in_force() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &[]).await;
    let cap = c.call_envelope("tmux_capabilities", json!({})).await;
    let obs = &cap.data()["observation"];
    let (_, _, full) = tmux_version();
    let stable = obs["requirements"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r == "stable capture-hook configuration on tmux < 3.5");
    if hook_check_in_queue() {
        assert_eq!(obs["hook_check_mode"], "in_queue", "tmux {full}: {obs:#}");
        assert!(
            !stable && obs["hook_check"].as_str().unwrap().contains("no gap"),
            "tmux {full}: {obs:#}"
        );
    } else {
        assert_eq!(obs["hook_check_mode"], "preflight", "tmux {full}: {obs:#}");
        assert!(
            stable
                && obs["hook_check"]
                    .as_str()
                    .unwrap()
                    .contains("cannot be excluded"),
            "tmux {full}: {obs:#}"
        );
    }
    c.close().await;
}

/// Every pane read from the cached table costs one tmux client invocation on
/// >= 3.5 (hook check, guard and capture in one queue) and two before (the
/// preflight, then the guarded capture), on a server of 21 panes.
/// `snapshot_pane` reads the table fresh first (it reports fields the guard
/// does not prove, such as the cursor), one more invocation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pane_read_costs_one_tmux_command_from_3_5_and_two_before() {
    let srv = TmuxServer::start();
    for _ in 0..20 {
        srv.tmux(&["new-window", "-d", "sleep 1000"]);
    }
    let c = McpClient::attach(&srv, TOOLS).await;
    let gen = generation(&c).await;
    let target = pane_ref(&gen, "%0");
    let cursor = c
        .call_envelope("tmux_capture", json!({"target": target, "track": true}))
        .await
        .data()["next_cursor"]
        .as_str()
        .unwrap()
        .to_string();
    c.call("list_panes", json!({})).await; // the broker's table knows every pane
    let per = tmux_connections_per_capture();
    let (_, _, full) = tmux_version();
    let calls: [(&str, Value, u64); 5] = [
        ("tmux_capture", json!({"target": target}), per),
        (
            "tmux_capture",
            json!({"target": target, "track": true}),
            per,
        ),
        (
            "tmux_capture",
            json!({"target": target, "cursor": cursor}),
            per,
        ),
        ("capture_pane", json!({"paneId": "%0"}), per),
        ("snapshot_pane", json!({"paneId": "%0"}), per + 1),
    ];
    let tool_calls = || {
        srv.status()["tool_calls"]
            .as_u64()
            .expect("status counts tool calls")
    };
    for (tool, args, each) in calls {
        let (before, calls_before) = (counts(&srv), tool_calls());
        for _ in 0..3 {
            let r = c.call_raw(tool, args.clone()).await;
            assert_ne!(
                r.is_error,
                Some(true),
                "tmux {full}: {tool} {args}: {:?}",
                r.content
            );
        }
        let after = counts(&srv);
        let (ran, carried) = (after.0 - before.0, after.1 - before.1);
        assert_eq!(
            ran,
            3 * each,
            "tmux {full}: 3 x {tool} {args} made {ran} tmux connections ({each} each expected)"
        );
        assert!(
            carried >= ran,
            "tmux {full}: {tool}: {ran} connections carried {carried} commands"
        );
        assert_eq!(
            tool_calls() - calls_before,
            3,
            "status counts the tool calls"
        );
    }
    c.close().await;
}

/// The refusal every capture tool gives while the hook is set, with the
/// delivery of this version's check; `why` names the case.
async fn all_refused(c: &McpClient, target: &Value, why: &str) {
    let (_, _, full) = tmux_version();
    for args in [
        json!({"target": target}),
        json!({"target": target, "track": true}),
    ] {
        let e = c.call_envelope("tmux_capture", args.clone()).await;
        assert_eq!(
            e.structured["error"]["code"], "unsupported",
            "tmux {full}: {why}: {args}: {:#}",
            e.structured
        );
        e.expect_error("unsupported", hook_refusal_delivery());
    }
    for tool in ["capture_pane", "snapshot_pane"] {
        let r = c.call_raw(tool, json!({"paneId": target["id"]})).await;
        assert_eq!(
            r.is_error,
            Some(true),
            "tmux {full}: {why}: {tool} captured: {r:?}"
        );
        let shown = format!("{:?}", r.content);
        assert!(
            shown.contains("an after-capture-pane hook is set"),
            "tmux {full}: {why}: {tool}: {shown}"
        );
    }
}

/// A hook in each scope that would fire for a capture of the pane: global,
/// global at a sparse index, the pane's session at a sparse index, a second
/// session linking the window, and `set-hook -p` / `-w` (tmux keeps command
/// hooks as session options, so these land on a linking session). Each is
/// refused by every capture tool, none ever runs (a sentinel through the same
/// trap file comes first), and a hook on an unrelated session stops nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_in_any_scope_that_would_fire_is_refused_and_never_runs() {
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    srv.tmux(&["new-session", "-d", "-s", "other"]);
    srv.tmux(&["link-window", "-s", "main:0", "-t", "other:7"]);
    srv.tmux(&["new-session", "-d", "-s", "unrelated"]);
    let window = srv
        .tmux(&["display-message", "-p", "-t", "%0", "#{window_id}"])
        .trim()
        .to_string();
    let c = McpClient::attach(&srv, TOOLS).await;
    let gen = generation(&c).await;
    let target = pane_ref(&gen, "%0");
    c.call_envelope("tmux_capture", json!({"target": target}))
        .await
        .data();

    // (scope, set-hook arguments before the command, arguments that remove the
    // whole array again: an emptied session array would mask the global one).
    let scopes: [(&str, Vec<&str>, Vec<&str>); 6] = [
        (
            "global",
            vec!["-g", "after-capture-pane"],
            vec!["-gu", "after-capture-pane"],
        ),
        (
            "global-503",
            vec!["-g", "after-capture-pane[503]"],
            vec!["-gu", "after-capture-pane"],
        ),
        (
            "session-17",
            vec!["-t", "main", "after-capture-pane[17]"],
            vec!["-u", "-t", "main", "after-capture-pane"],
        ),
        (
            "linked-session",
            vec!["-t", "other", "after-capture-pane"],
            vec!["-u", "-t", "other", "after-capture-pane"],
        ),
        (
            "pane-flag",
            vec!["-p", "-t", "%0", "after-capture-pane[3]"],
            vec![],
        ),
        (
            "window-flag",
            vec!["-w", "-t", &window, "after-capture-pane[4]"],
            vec![],
        ),
    ];
    for (scope, set, unset) in scopes {
        let mut args = vec!["set-hook"];
        args.extend(set);
        let command = trap.command_writing(scope);
        args.push(&command);
        srv.tmux(&args);
        all_refused(&c, &target, scope).await;
        if unset.is_empty() {
            // -p / -w stored the hook on whichever linking session tmux chose.
            for s in ["main", "other"] {
                srv.tmux(&["set-hook", "-u", "-t", s, "after-capture-pane"]);
            }
        } else {
            let mut args = vec!["set-hook"];
            args.extend(unset);
            srv.tmux(&args);
        }
        let ok = c
            .call_envelope("tmux_capture", json!({"target": target}))
            .await;
        ok.data();
    }

    // A hook on a session that does not link the window does not fire for it.
    srv.tmux(&[
        "set-hook",
        "-t",
        "unrelated",
        "after-capture-pane",
        &trap.command_writing("unrelated"),
    ]);
    c.call_envelope("tmux_capture", json!({"target": target}))
        .await
        .data();
    c.call("capture_pane", json!({"paneId": "%0"})).await;
    srv.tmux(&["set-hook", "-u", "-t", "unrelated", "after-capture-pane"]);

    assert_eq!(
        trap.fire_sentinel(
            &srv,
            "after-capture-pane",
            &["capture-pane", "-p", "-t", "main:"]
        ),
        "",
        "a hook ran"
    );
    c.close().await;
}

/// A session's own (emptied) hook array masks the global one in tmux: tmux's
/// own capture of that session runs no hook. On >= 3.5 the in-queue check reads
/// the hook as tmux would run it, so the capture goes ahead (and runs nothing);
/// the preflight of older versions sees the global entry and refuses. Either
/// way the hook never runs, and a pane of an unmasked session is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_hook_masked_by_the_sessions_own_array_follows_what_tmux_would_run() {
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    let fresh = srv
        .tmux(&["new-session", "-d", "-s", "fresh", "-P", "-F", "#{pane_id}"])
        .trim()
        .to_string();
    srv.tmux(&[
        "set-hook",
        "-t",
        "main",
        "after-capture-pane[17]",
        "run-shell true",
    ]);
    srv.tmux(&["set-hook", "-u", "-t", "main", "after-capture-pane[17]"]);
    let c = McpClient::attach(&srv, TOOLS).await;
    let gen = generation(&c).await;
    let masked = pane_ref(&gen, "%0");
    srv.tmux(&[
        "set-hook",
        "-g",
        "after-capture-pane",
        &trap.command_writing("global"),
    ]);

    // Premise: tmux runs no hook for a capture in `main`, and does in `fresh`
    // (the sentinel comes through the global entry).
    srv.tmux(&["capture-pane", "-p", "-t", "main:"]);
    srv.tmux(&["set-hook", "-gu", "after-capture-pane"]);
    assert_eq!(
        trap.fire_sentinel(
            &srv,
            "after-capture-pane",
            &["capture-pane", "-p", "-t", "fresh:"]
        ),
        "",
        "premise: the emptied array of main masks the global hook"
    );
    srv.tmux(&[
        "set-hook",
        "-g",
        "after-capture-pane",
        &trap.command_writing("global"),
    ]);

    let e = c
        .call_envelope("tmux_capture", json!({"target": masked}))
        .await;
    if hook_check_in_queue() {
        assert!(
            e.structured["ok"] == json!(true),
            "the masked global hook refused the capture: {:#}",
            e.structured
        );
    } else {
        e.expect_error("unsupported", "not_sent");
    }
    all_refused(&c, &pane_ref(&gen, &fresh), "unmasked session").await;
    srv.tmux(&["set-hook", "-gu", "after-capture-pane"]);
    assert_eq!(
        trap.fire_sentinel(
            &srv,
            "after-capture-pane",
            &["capture-pane", "-p", "-t", "fresh:"]
        ),
        "",
        "a hook ran"
    );
    c.close().await;
}

/// A window linked twice into one session and once into another: the check
/// covers each session once, the guard counts every link, and the capture works
/// (and is refused while the second session has a hook).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_linked_twice_is_captured_and_checked_in_every_session() {
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    srv.tmux(&["send-keys", "-t", "%0", "echo linked-twice-text", "Enter"]);
    srv.tmux(&["link-window", "-s", "main:0", "-t", "main:5"]);
    srv.tmux(&["new-session", "-d", "-s", "other"]);
    srv.tmux(&["link-window", "-s", "main:0", "-t", "other:7"]);
    let c = McpClient::attach(&srv, TOOLS).await;
    let gen = generation(&c).await;
    let target = pane_ref(&gen, "%0");
    let (client, pane) = (&c, &target);
    let text = poll_async(std::time::Duration::from_secs(5), || async move {
        let d = client
            .call_envelope("tmux_capture", json!({"target": pane}))
            .await;
        let rows = d.data()["rows"].to_string();
        rows.contains("linked-twice-text").then_some(rows)
    })
    .await;
    assert!(
        text.is_some(),
        "the capture of a window linked three times never showed the pane's text"
    );
    srv.tmux(&[
        "set-hook",
        "-t",
        "other",
        "after-capture-pane",
        &trap.command,
    ]);
    all_refused(&c, &target, "second session of a twice-linked window").await;
    srv.tmux(&["set-hook", "-u", "-t", "other", "after-capture-pane"]);
    assert_eq!(
        trap.fire_sentinel(
            &srv,
            "after-capture-pane",
            &["capture-pane", "-p", "-t", "main:"]
        ),
        "",
        "a hook ran"
    );
    c.close().await;
}

/// The broker aims every capture through one session that linked the pane's
/// window when it last read the table, and the guard proves in tmux's queue
/// that the session still links it. Here the window moves, after that read, to
/// a session whose name is as long (so the linked-sessions guard alone would
/// pass) and which has an `after-capture-pane` hook, while a global
/// `command-error` hook is armed (tmux >= 3.5 has it): a capture aimed at the old session would
/// fail (firing `command-error`), one aimed at the bare pane id would fire the
/// new session's hook. Neither may run; the capture is refused, because the
/// window's session now has a hook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_moved_since_the_table_was_read_fires_no_hook() {
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    srv.tmux(&["new-window", "-d", "-t", "main:1"]); // main outlives the unlink
    let c = McpClient::attach(&srv, TOOLS).await;
    let gen = generation(&c).await;
    let target = pane_ref(&gen, "%0");
    c.call_envelope("tmux_capture", json!({"target": target}))
        .await
        .data(); // the table: %0 in main
    let (_, _, full) = tmux_version();
    let error_hook = srv
        .try_tmux(&[
            "set-hook",
            "-g",
            "command-error",
            &trap.command_writing("command-error"),
        ])
        .status
        .success();
    assert_eq!(
        error_hook,
        hook_check_in_queue(),
        "tmux {full}: command-error is a hook exactly from 3.5"
    );
    srv.tmux(&["new-session", "-d", "-s", "nwsn"]); // as many bytes as "main"
    srv.tmux(&[
        "set-hook",
        "-t",
        "nwsn",
        "after-capture-pane",
        &trap.command_writing("after-capture-pane"),
    ]);
    srv.tmux(&["link-window", "-d", "-s", "main:0", "-t", "nwsn:5"]);
    srv.tmux(&["unlink-window", "-t", "main:0"]);
    let e = c
        .call_envelope("tmux_capture", json!({"target": target}))
        .await;
    assert_eq!(
        e.structured["error"]["code"], "unsupported",
        "tmux {full}: {:#}",
        e.structured
    );
    if error_hook {
        srv.tmux(&["set-hook", "-gu", "command-error"]);
    }
    // main has no hook array of its own, so the global sentinel entry fires there.
    assert_eq!(
        trap.fire_sentinel(
            &srv,
            "after-capture-pane",
            &["capture-pane", "-p", "-t", "main:1"]
        ),
        "",
        "tmux {full}: a hook ran"
    );
    c.close().await;
}
