//! Process identity: process generations, exit seen through the pidfd without
//! asking tmux, and the caller's pane found from the relay's process ancestry.

use serde_json::{json, Value};
use std::time::Duration;
use tmux_mcp_e2e::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn respawn_gives_new_process_generation() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &[]).await;
    let before = c.call("list_panes", json!({"detail": "full"})).await;
    let p1 = pane(&before, "%0").clone();
    let g1 = p1["processGeneration"]
        .as_str()
        .unwrap_or_else(|| panic!("no processGeneration for %0: {p1:#}"))
        .to_string();
    assert_eq!(p1["processState"], "running");

    // Asking again without a respawn keeps the generation (it names the process).
    let same = c.call("list_panes", json!({"detail": "full"})).await;
    assert_eq!(pane(&same, "%0")["processGeneration"], json!(g1));

    srv.tmux(&["respawn-pane", "-k", "-t", "%0"]);
    let after = c.call("list_panes", json!({"detail": "full"})).await;
    let p2 = pane(&after, "%0");
    let g2 = p2["processGeneration"]
        .as_str()
        .unwrap_or_else(|| panic!("no processGeneration for %0 after respawn: {p2:#}"));
    assert_ne!(g2, g1, "respawn-pane kept the process generation");
    assert_ne!(p2["pid"], p1["pid"], "respawn-pane should give a new pid");
    assert_eq!(p2["processState"], "running");
    assert_eq!(
        p2["ref"], p1["ref"],
        "the pane reference itself stays the same"
    );
    c.close().await;
}

fn process_state(status: &Value, pane_id: &str) -> Option<String> {
    status["processes"]
        .as_array()?
        .iter()
        .find(|p| p["pane_id"] == pane_id)
        .and_then(|p| p["state"].as_str())
        .map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_pane_process_seen_exited_without_polling_tmux() {
    let srv = TmuxServer::start();
    srv.tmux(&["set-option", "-g", "remain-on-exit", "on"]);
    let out = srv.tmux(&[
        "new-window",
        "-d",
        "-P",
        "-F",
        "#{pane_id} #{pane_pid}",
        "sleep 1000",
    ]);
    let (pane_id, pid) = out.trim().split_once(' ').expect("pane id and pid");
    let pid: u32 = pid.parse().unwrap();
    // The pane process may still be between fork and exec: wait for the exec.
    let is_sleep = || {
        cmdline(pid)
            .iter()
            .any(|a| a == "sleep" || a.ends_with("/sleep") || a.contains("sleep 1000"))
    };
    assert!(
        poll(Duration::from_secs(2), || is_sleep().then_some(())).is_some(),
        "pane pid {pid} is not the sleep: {:?}",
        cmdline(pid)
    );

    let c = McpClient::attach(&srv, &[]).await;
    let list = c.call("list_panes", json!({"detail": "full"})).await;
    let p = pane(&list, pane_id);
    assert_eq!(p["processState"], "running", "{p:#}");
    assert_eq!(p["pid"], pid);
    assert!(p["processGeneration"].is_string());

    // The broker's start-up work (publishing @mcp-broker-socket) runs tmux
    // commands too; let it finish so the count below is only about the exit.
    let status = poll(Duration::from_secs(5), || {
        srv.try_status()
            .filter(|s| s["option_published"] != "not yet")
    })
    .expect("the broker's start-up did not finish");
    assert_eq!(
        process_state(&status, pane_id).as_deref(),
        Some("running"),
        "{status:#}"
    );
    let n = status["tmux_connections"]
        .as_u64()
        .expect("tmux_connections");

    kill_pid(pid, libc::SIGKILL);
    let seen = poll(Duration::from_secs(2), || {
        srv.try_status()
            .filter(|s| process_state(s, pane_id).as_deref() == Some("exited"))
    });
    let seen = seen.unwrap_or_else(|| {
        panic!(
            "the broker did not see pane {pane_id}'s process exit within 2 s: {:#}",
            srv.status()
        )
    });
    assert_eq!(
        seen["tmux_connections"], n,
        "the broker ran tmux commands to notice the exit"
    );

    // Asking tmux afterwards shows the pane dead (remain-on-exit).
    let after = c.call("list_panes", json!({"detail": "full"})).await;
    let p = pane(&after, pane_id);
    assert_eq!(p["dead"], true, "{p:#}");
    assert_eq!(p["processState"], "dead", "{p:#}");
    c.close().await;
}

#[test]
fn caller_pane_found_from_process_ancestry() {
    let srv = TmuxServer::start();
    // The relay runs as a child of the pane's shell, with neither TMUX nor
    // TMUX_PANE in its environment: only process ancestry can tell its pane.
    let relay = PaneRelay::start(&srv, "relay", &[], false);
    let (mut ch, tools, caller) = (relay.channel, relay.tools, relay.pane);
    let pane_pid: u32 = srv
        .tmux(&["display-message", "-p", "-t", &caller, "#{pane_pid}"])
        .trim()
        .parse()
        .unwrap();
    let resp = ch.request(
        2,
        "tools/call",
        json!({"name": "list_panes", "arguments": {"detail": "full"}}),
    );
    let relay_err = || std::fs::read_to_string(&relay.stderr).unwrap_or_default();
    let list = checked_structured(&tools, "list_panes", &resp);

    // The relay really is below the pane's process, not the pane process itself.
    let relay_pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let a = cmdline(*p);
            a.get(1).map(String::as_str) == Some("attach")
                && a.iter().any(|x| x == srv.socket_str())
        })
        .collect();
    assert_eq!(
        relay_pids.len(),
        1,
        "expected one relay process for this server: {relay_pids:?}"
    );
    let relay_ppid = std::fs::read_to_string(format!("/proc/{}/stat", relay_pids[0]))
        .unwrap()
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u32>()
        .unwrap();
    assert_eq!(
        relay_ppid, pane_pid,
        "test premise: the relay is a child of the pane's shell"
    );
    assert!(
        !std::fs::read(format!("/proc/{}/environ", relay_pids[0]))
            .unwrap()
            .split(|b| *b == 0)
            .any(|kv| kv.starts_with(b"TMUX_PANE=")),
        "test premise: the relay has no TMUX_PANE"
    );

    assert_eq!(
        list["callerPaneId"],
        json!(caller),
        "relay stderr: {}\n{list:#}",
        relay_err()
    );
    assert_eq!(
        list["scope"], "session",
        "the default scope inside a pane is session: {list:#}"
    );
    for p in list["panes"].as_array().unwrap() {
        assert_eq!(p["isCallerPane"], json!(p["id"] == json!(caller)), "{p:#}");
    }
    // The lean listing names the caller's pane once, at the top.
    let lean = checked_structured(
        &tools,
        "list_panes",
        &ch.request(
            30,
            "tools/call",
            json!({"name": "list_panes", "arguments": {}}),
        ),
    );
    assert_eq!(
        (&lean["callerPaneId"], &lean["scope"]),
        (&json!(caller), &json!("session")),
        "{lean:#}"
    );
    let cap_resp = ch.request(
        3,
        "tools/call",
        json!({"name": "tmux_capabilities", "arguments": {}}),
    );
    let cap = checked_structured(&tools, "tmux_capabilities", &cap_resp);
    assert_eq!(cap["data"]["broker"]["caller_pane"], json!(caller));
    assert_eq!(cap["data"]["broker"]["scope"], "session");

    // Contrast: a relay outside tmux that merely claims TMUX_PANE is not believed.
    let mut outside = RawClient::attach_with_env(&srv, &[], &[("TMUX_PANE", "%0")]);
    outside.initialize();
    let tools2 = outside.request(1, "tools/list", json!({}));
    let resp2 = outside.request(
        2,
        "tools/call",
        json!({"name": "list_panes", "arguments": {"detail": "full"}}),
    );
    let list2 = checked_structured(&tools2, "list_panes", &resp2);
    assert_eq!(
        list2["callerPaneId"],
        Value::Null,
        "TMUX_PANE alone made a caller pane: {list2:#}"
    );
    assert_eq!(list2.get("scope"), None, "server, the default: {list2:#}");
    assert!(list2["panes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["isCallerPane"] == false));
    outside.close();
}
