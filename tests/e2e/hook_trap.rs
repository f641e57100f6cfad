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

/// Arguments that make read tool `tool` do its read on pane `%0` (`gen` is
/// the server generation): the tool's own sample (`ToolSpec::sample`), which
/// every read tool has (a unit test of the catalog says so).
fn sample_args(tool: &str, gen: &str) -> Option<Value> {
    let sample = tmux_mcp_broker::tools::spec(tool)?.sample?;
    Some(sample(&tmux_mcp_broker::toolkit::call::spec::Sample {
        pane: "%0",
        generation: gen,
    }))
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
    // Every tool: the highest tier, and every opt-in tool of the catalog by
    // name.
    let mut extra: Vec<String> = ["--safety", "destructive", "--scope", "server"]
        .map(String::from)
        .to_vec();
    for t in tmux_mcp_broker::tools::CATALOG {
        if t.listed == tmux_mcp_broker::toolkit::call::spec::Listed::OptIn {
            extra.extend(["--enable-tool".to_string(), t.name.to_string()]);
        }
    }
    assert!(extra.len() > 4, "no opt-in tool found in the catalog");
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let c = McpClient::attach(&srv, &extra).await;
    let gen = generation(&c).await;
    let reads: Vec<String> = c
        .tools()
        .iter()
        .filter(|t| {
            t.meta
                .as_ref()
                .and_then(|m| m.get("tmux-mcp/tier"))
                .and_then(Value::as_str)
                == Some("readonly")
        })
        .map(|t| t.name.to_string())
        .collect();
    assert!(reads.len() >= 15, "{reads:?}");
    let missing: Vec<&String> = reads
        .iter()
        .filter(|t| sample_args(t, &gen).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "read-only tools with no sample call in this test (add them): {missing:?}"
    );
    let resources = [
        "tmux://server",
        "tmux://sessions",
        "tmux://panes",
        "tmux://pane/%250",
        "tmux://pane/%250/info",
    ];

    for except in [&[][..], &["after-capture-pane"][..]] {
        let armed = trap.arm_every_after_hook(&srv, except);
        assert!(
            armed.iter().any(|h| h == "after-display-message")
                && armed.iter().any(|h| h == "after-list-panes"),
            "{armed:?}"
        );
        assert_eq!(
            armed.iter().any(|h| h == "command-error"),
            hook_check_in_queue(),
            "command-error is a hook exactly from tmux 3.5: {armed:?}"
        );
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
            let _ = peer
                .read_resource(rmcp::model::ReadResourceRequestParams::new(uri))
                .await;
        }
        sentinel();
        trap.before_sentinel("after-display-message");
        assert_eq!(
            trap.fired(),
            "after-display-message\n",
            "hooks ran for a read (except {except:?}); calls: {answered:?}"
        );
        if except.is_empty() {
            trap.clear();
        } else {
            // With the capture hook unset, the captures really ran.
            for tool in [
                "capture_pane",
                "snapshot_pane",
                "capture_since",
                "tmux_capture",
            ] {
                assert!(
                    answered.iter().any(|(t, err)| t == tool && !err),
                    "{tool} failed without an after-capture-pane hook: {answered:?}"
                );
            }
        }
    }
    c.close().await;
}

/// `hooks::while_exists`, the guard `show_hooks` and the `after-set-option`
/// check put in front of a read of one session, window or pane: when the
/// entity has gone the read does not run (a failing `show-hooks` runs the
/// person's `command-error` hook on tmux >= 3.5) and the marker says so.
/// The bare read, run the same way, fires the hook: the trap works.
#[test]
fn a_read_of_a_vanished_entity_runs_no_command_error_hook() {
    use tmux_mcp_core::hooks::{gone_marker, print_gone, while_exists};
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    let armed = srv
        .try_tmux(&[
            "set-hook",
            "-g",
            "command-error",
            &trap.command_writing("command-error"),
        ])
        .status
        .success();
    assert_eq!(
        armed,
        tmux_at_least(3, 5),
        "command-error exists from tmux 3.5"
    );
    let run = |argv: Vec<String>| {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        srv.try_tmux(&argv)
    };
    for (id, flag) in [("%999", " -p"), ("@999", " -w"), ("$999", "")] {
        let out = run(while_exists(
            id,
            &format!("show-hooks{flag} -t '{id}'"),
            Some(&print_gone()),
        ));
        assert!(out.status.success(), "{id}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            gone_marker(),
            "{id}"
        );
        assert_eq!(
            trap.fire_sentinel(
                &srv,
                "after-display-message",
                &["display-message", "-p", ""]
            ),
            "",
            "{id}: a hook ran"
        );
    }
    // The entity exists: the read runs, no marker.
    let out = run(while_exists(
        "%0",
        "show-hooks -p -t '%0'",
        Some(&print_gone()),
    ));
    assert!(
        out.status.success() && !String::from_utf8_lossy(&out.stdout).contains(gone_marker()),
        "{out:?}"
    );
    // The unguarded read of a gone pane fails, and fires the hook where it
    // exists (its exit status is then the hook's, so only the trap tells).
    srv.try_tmux(&["show-hooks", "-p", "-t", "%999"]);
    let fired = trap.fire_sentinel(
        &srv,
        "after-display-message",
        &["display-message", "-p", ""],
    );
    assert_eq!(
        fired.contains("command-error"),
        armed,
        "the trap catches a failing command: {fired:?}"
    );
}

/// `show_hooks` while its pane is being killed: whichever comes first, no
/// `command-error` hook runs, and a pane that is gone is an error, never an
/// empty list of hooks (issue "Exact and honest, round 2" item 2: the old
/// code fired the hook in 50-67 of 120 rounds on tmux 3.5a).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_hooks_racing_a_kill_fires_no_hook() {
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    let armed = srv
        .try_tmux(&[
            "set-hook",
            "-g",
            "command-error",
            &trap.command_writing("command-error"),
        ])
        .status
        .success();
    srv.tmux(&[
        "set-hook",
        "-p",
        "-t",
        "%0",
        "pane-focus-in[3]",
        "display-message hello",
    ]);
    let c = std::sync::Arc::new(McpClient::attach(&srv, &["--enable-tool", "show_hooks"]).await);
    let (mut listed, mut gone) = (0, 0);
    for round in 0..60u64 {
        let pane = srv
            .tmux(&[
                "split-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-t",
                "%0",
                "sleep 1000",
            ])
            .trim()
            .to_string();
        srv.tmux(&[
            "set-hook",
            "-p",
            "-t",
            &pane,
            "pane-focus-in[1]",
            "display-message x",
        ]);
        let call = {
            let (c, pane) = (c.clone(), pane.clone());
            tokio::spawn(async move { c.call_raw("show_hooks", json!({ "pane": pane })).await })
        };
        tokio::time::sleep(std::time::Duration::from_micros(300 * (round % 8))).await;
        srv.tmux(&["kill-pane", "-t", &pane]);
        let r = call.await.unwrap();
        let text: String = r
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        if r.is_error == Some(true) {
            assert!(
                text.contains("no longer exists") || text.contains("no pane"),
                "{text}"
            );
            gone += 1;
        } else {
            let hooks = r.structured_content.as_ref().unwrap()["hooks"]
                .as_array()
                .unwrap()
                .clone();
            assert_eq!(hooks.len(), 1, "the pane's own hook, or an error: never an empty list for a pane that was read: {r:?}");
            listed += 1;
        }
    }
    let fired = trap.fire_sentinel(
        &srv,
        "after-display-message",
        &["display-message", "-p", ""],
    );
    assert!(!fired.contains("command-error"), "show_hooks ran the command-error hook ({listed} read, {gone} gone; hook armed: {armed}): {fired:?}");
    eprintln!("show_hooks racing kill-pane: {listed} read, {gone} gone");
    std::sync::Arc::try_unwrap(c)
        .ok()
        .expect("one client")
        .close()
        .await;
}
