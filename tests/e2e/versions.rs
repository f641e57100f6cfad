//! What differs between the tmux versions the project is tested on (3.3a, 3.5a,
//! 3.7c; `scripts/test` with `TMUX_MCP_TMUX_BIN_DIR` picks one): how the broker
//! reaches tmux on each, and that an `after-capture-pane` hook set with the
//! pane or window flag still stops every capture.

use serde_json::json;
use tmux_mcp_e2e::*;

/// Attach flags enabling the seed capture tool.
const CAPTURE: &[&str] = &["--enable-tool", "tmux_capture"];

/// The broker speaks tmux's client protocol in process on every tested version
/// (tmux 3.6 changed the imsg header without a protocol bump; the client sends
/// only messages both headers spell alike), reports the server's own version, and reads the table with
/// `list-commands` except on 3.4–3.5, whose command output is strvis-escaped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_client_and_table_read_on_this_tmux() {
    let (major, minor, full) = tmux_version();
    let srv = TmuxServer::start();
    srv.start_broker();
    let status = srv.status();
    let access = status["tmux_access"].as_str().unwrap_or_default();
    assert!(
        access.starts_with("in-process tmux protocol client"),
        "tmux {full}: the broker fell back to exec: {access:?}"
    );
    let strvis = (major, minor) >= (3, 4) && !tmux_at_least(3, 6);
    let feed = if strvis {
        "run-shell feed helper"
    } else {
        "list-commands"
    };
    assert!(
        access.contains(feed),
        "tmux {full}: expected the table via {feed}: {access:?}"
    );

    let c = McpClient::attach(&srv, &[]).await;
    let cap = c.call("tmux_capabilities", json!({})).await;
    assert_eq!(
        cap["data"]["server_identity"]["tmux_version"],
        full.as_str(),
        "{cap:#}"
    );
    // The table the broker read has every pane tmux has, with the fields that
    // are filled in on every version.
    srv.tmux(&["split-window", "-d", "-t", "main"]);
    let list = c.call("list_panes", json!({"detail": "full"})).await;
    let want = srv.tmux(&[
        "list-panes",
        "-a",
        "-F",
        "#{pane_id} #{pane_pid} #{pane_width}x#{pane_height}",
    ]);
    let mut got: Vec<String> = list["panes"]
        .as_array()
        .expect("panes")
        .iter()
        .map(|p| {
            format!(
                "{} {} {}x{}",
                p["id"].as_str().unwrap_or("?"),
                p["pid"],
                p["width"],
                p["height"]
            )
        })
        .collect();
    let mut want: Vec<String> = want.lines().map(str::to_string).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "tmux {full}: {list:#}");
    c.close().await;
}

/// The pane's window id, for `set-hook -w`.
fn window_of(srv: &TmuxServer, pane: &str) -> String {
    srv.tmux(&["display-message", "-p", "-t", pane, "#{window_id}"])
        .trim()
        .to_string()
}

/// `set-hook -p` / `-w` with an `after-*` hook: tmux keeps command hooks as
/// session options (their scope in tmux's option table, on 3.3a up to 3.7c), so
/// the flag is accepted and the hook lands on the session of the target — the
/// broker's hook check (the `show-hooks -t SESSION` preflight before 3.5, the
/// in-queue `#{after-capture-pane}` in that session's context from 3.5) must see
/// it there, and no capture may run while it is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_refused_while_a_pane_or_window_level_after_capture_pane_hook_is_set() {
    for flag in ["-p", "-w"] {
        let srv = TmuxServer::start();
        let trap = HookTrap::new(&srv);
        let c = McpClient::attach(&srv, CAPTURE).await;
        let gen = generation(&c).await;
        let pane = "%0";
        let target = if flag == "-p" {
            pane.to_string()
        } else {
            window_of(&srv, pane)
        };
        // Sanity: captures work before the hook.
        c.call_envelope("tmux_capture", json!({"target": pane_ref(&gen, pane)}))
            .await
            .data();
        c.call("capture_pane", json!({"paneId": pane})).await;

        srv.tmux(&[
            "set-hook",
            flag,
            "-t",
            &target,
            "after-capture-pane",
            &trap.command,
        ]);
        let on_session = srv.tmux(&["show-hooks", "-t", "main", "after-capture-pane"]);
        assert!(on_session.contains("after-capture-pane[0]"), "set-hook {flag} -t {target}: tmux did not store the hook on the session: {on_session:?}");

        for args in [
            json!({"target": pane_ref(&gen, pane)}),
            json!({"target": pane_ref(&gen, pane), "track": true}),
        ] {
            let e = c.call_envelope("tmux_capture", args.clone()).await;
            e.expect_error("unsupported", hook_refusal_delivery());
            assert!(
                e.text.contains("after-capture-pane"),
                "set-hook {flag}: {args}: {:?}",
                e.text
            );
        }
        for tool in ["capture_pane", "snapshot_pane"] {
            let r = c.call_raw(tool, json!({"paneId": pane})).await;
            assert_eq!(
                r.is_error,
                Some(true),
                "set-hook {flag}: {tool} captured: {r:?}"
            );
            // The libtmux family answers in text: it names the hook and says
            // nothing was sent (preflight) or captured (in-queue check, >= 3.5).
            let shown = format!("{:?}", r.content);
            let nothing = if hook_check_in_queue() {
                "nothing was captured and the hook did not run"
            } else {
                "Nothing was sent"
            };
            assert!(
                shown.contains("after-capture-pane") && shown.contains(nothing),
                "set-hook {flag}: {tool}: {shown}"
            );
        }

        // Sentinel through the same path: one capture of our own fires the hook
        // once; tmux runs it (run-shell, not -b) before the capture's client
        // exits, as it would have for any capture the broker made. So exactly
        // one line now means the broker ran none.
        assert_eq!(
            trap.fired(),
            "",
            "set-hook {flag}: the hook ran before the sentinel"
        );
        srv.tmux(&["capture-pane", "-t", pane]);
        assert_eq!(
            trap.fired(),
            "fired\n",
            "set-hook {flag}: expected only the sentinel's hook run"
        );

        // Unset the same way: captures work again.
        srv.tmux(&["set-hook", "-u", flag, "-t", &target, "after-capture-pane"]);
        c.call_envelope("tmux_capture", json!({"target": pane_ref(&gen, pane)}))
            .await
            .data();
        c.close().await;
    }
}

#[test]
fn version_helper_reads_tmux_v() {
    let (major, minor, full) = tmux_version();
    assert!(major >= 3 && !full.is_empty(), "tmux -V gave {full:?}");
    let out = std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .expect("tmux -V");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("tmux {full}")
    );
    assert!(tmux_at_least(major, minor) && !tmux_at_least(major, minor + 1));
}
