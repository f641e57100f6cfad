//! The libtmux family's arrange tools against real tmux through rmcp's client:
//! each tool's effect read back with tmux's own formats, the returned
//! references valid for the list tools, the real name when tmux rewrites it,
//! the tiers (hidden and refused by name with the switch), the agent's own
//! pane/window/session never killed or respawned, stale generations and
//! out-of-scope targets refused with nothing changed, bad input naming the
//! field. Every structuredContent is validated against the published
//! outputSchema (`McpClient::call`); errors are text only.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;
use tmux_mcp_e2e::*;

const MUTATING: &[&str] = &[
    "create_session",
    "create_window",
    "split_window",
    "select_pane",
    "select_window",
    "resize_pane",
    "rename_session",
    "rename_window",
];
const DESTRUCTIVE: &[&str] = &["respawn_pane", "kill_pane", "kill_window", "kill_session"];

/// The text of a call that must fail (a family error: no structuredContent).
async fn err_text(c: &McpClient, name: &str, args: Value) -> String {
    let r = c.call_raw(name, args.clone()).await;
    assert_eq!(
        r.is_error,
        Some(true),
        "{name} {args} should have failed: {r:?}"
    );
    assert!(
        r.structured_content.is_none(),
        "{name}: an error carries no structuredContent: {r:?}"
    );
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `tmux display-message -p -t TARGET FORMAT`, trimmed.
fn show(srv: &TmuxServer, target: &str, format: &str) -> String {
    srv.tmux(&["display-message", "-p", "-t", target, format])
        .trim()
        .to_string()
}

fn all_panes(srv: &TmuxServer) -> BTreeSet<String> {
    srv.tmux(&["list-panes", "-a", "-F", "#{pane_id}"])
        .lines()
        .map(str::to_string)
        .collect()
}

fn names(c: &McpClient) -> Vec<String> {
    c.tools().iter().map(|t| t.name.to_string()).collect()
}

/// Waits until `pane`'s screen contains `text`; returns the screen.
fn screen_with(srv: &TmuxServer, pane: &str, text: &str) -> String {
    poll(Duration::from_secs(10), || {
        Some(srv.tmux(&["capture-pane", "-p", "-t", pane])).filter(|s| s.contains(text))
    })
    .unwrap_or_else(|| {
        panic!(
            "{text:?} never showed in {pane}: {:?}",
            srv.tmux(&["capture-pane", "-p", "-t", pane])
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiers_hide_and_refuse_by_name_with_the_switch() {
    let srv = TmuxServer::start();
    let plain = McpClient::attach(&srv, &[]).await;
    let listed = names(&plain);
    for t in MUTATING.iter().chain(DESTRUCTIVE) {
        assert!(
            !listed.contains(&t.to_string()),
            "{t} is listed at the default (read-only) tier: {listed:?}"
        );
    }
    let e = err_text(&plain, "create_session", json!({ "name": "nope" })).await;
    assert!(
        e.contains("create_session is in the mutating safety tier")
            && e.contains("--safety mutating")
            && e.ends_with("Nothing was sent to tmux."),
        "{e}"
    );
    plain.close().await;

    let m = McpClient::attach(&srv, &["--safety", "mutating"]).await;
    let listed = names(&m);
    for t in MUTATING {
        assert!(
            listed.contains(&t.to_string()),
            "{t} is not listed at --safety mutating: {listed:?}"
        );
    }
    let window = show(&srv, "%0", "#{window_id}");
    for (t, args) in [
        ("kill_pane", json!({ "paneId": "%0" })),
        ("kill_window", json!({ "windowId": window })),
        ("kill_session", json!({ "sessionId": "$0" })),
        ("respawn_pane", json!({ "paneId": "%0", "kill": true })),
    ] {
        assert!(
            !listed.contains(&t.to_string()),
            "{t} is listed at --safety mutating: {listed:?}"
        );
        let e = err_text(&m, t, args).await;
        assert!(
            e.contains(&format!("{t} is in the destructive safety tier"))
                && e.contains("--safety destructive"),
            "{e}"
        );
    }
    let pid = show(&srv, "%0", "#{pane_pid}");
    assert_eq!(
        all_panes(&srv),
        BTreeSet::from(["%0".to_string()]),
        "a refused kill changed the server"
    );
    assert_eq!(
        show(&srv, "%0", "#{pane_pid}"),
        pid,
        "a refused respawn restarted the pane"
    );
    m.close().await;

    let d = McpClient::attach(&srv, &["--safety", "destructive"]).await;
    for t in MUTATING.iter().chain(DESTRUCTIVE) {
        let tool = d.tool(t);
        let a = tool.annotations.as_ref().expect("annotations");
        assert_eq!(
            (a.read_only_hint, a.destructive_hint),
            (Some(false), Some(DESTRUCTIVE.contains(t))),
            "{t} annotations must say its tier"
        );
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")), "{t}");
        assert_eq!(
            tool.output_schema.as_ref().and_then(|s| s.get("type")),
            Some(&json!("object")),
            "{t}"
        );
    }
    d.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_split_select_rename_resize_read_back_from_tmux() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &["--safety", "mutating"]).await;
    let cwd = srv.dir().to_str().unwrap().to_string();

    // A session: tmux up to 3.5 rewrites `.` and `:` in its name (3.7 keeps
    // them); the result has the name tmux gave, whichever it is.
    let given = if tmux_at_least(3, 7) {
        "build.v1:x"
    } else if tmux_at_least(3, 6) {
        ""
    } else {
        "build_v1_x"
    };
    let s = c.call("create_session", json!({ "name": "build.v1:x", "windowName": "w #1;", "width": 120, "height": 40, "argv": ["sleep", "1000"], "cwd": cwd })).await;
    let gen = s["generation"].as_str().unwrap().to_string();
    let (sid, wid, pid) = (
        s["session"]["id"].as_str().unwrap(),
        s["window"]["id"].as_str().unwrap(),
        s["pane"]["id"].as_str().unwrap(),
    );
    let real = show(&srv, sid, "#{session_name}");
    assert_eq!(s["session"]["name"], json!(real), "{s:#}");
    if !given.is_empty() {
        assert_eq!(
            real,
            given,
            "tmux {} names the session so",
            tmux_version().2
        );
    }
    assert_eq!(
        show(
            &srv,
            pid,
            "#{session_id}|#{window_id} #{window_name}|#{pane_current_command}"
        ),
        format!("{sid}|{wid} w #1;|sleep")
    );
    assert_eq!(
        s["window"]["name"], "w #1;",
        "`#` and a final `;` reach tmux as themselves"
    );
    let want_cwd = std::fs::canonicalize(&cwd)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    // Empty until the pane's process owns its terminal (see below): wait.
    let path = poll(Duration::from_secs(5), || {
        Some(show(&srv, pid, "#{pane_current_path}")).filter(|p| !p.is_empty())
    });
    assert_eq!(path.as_deref(), Some(want_cwd.as_str()));
    assert_eq!(
        (
            s["window"]["width"].as_u64(),
            s["window"]["height"].as_u64()
        ),
        (Some(120), Some(40))
    );
    // The references are the list tools' own (their whole records).
    let sessions = c.call("list_sessions", json!({"detail": "full"})).await;
    let listed = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == sid)
        .unwrap_or_else(|| panic!("{sid} not listed: {sessions:#}"));
    assert_eq!(
        (&listed["ref"], &listed["name"]),
        (&s["session"]["ref"], &s["session"]["name"])
    );
    let panes = c.call("list_panes", json!({"detail": "full"})).await;
    assert_eq!(
        pane(&panes, pid)["ref"],
        json!({ "kind": "pane", "id": pid, "generation": gen })
    );
    // tmux's pane_current_path is read from the pane's foreground process and
    // can come back empty for a moment on a later read: compare it on its own.
    // (The command is the same: create_session waits until the new process has
    // exec'd its program, before which tmux names the forked server, "tmux".)
    let without_cwd = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("cwd");
        v
    };
    assert_eq!(
        without_cwd(pane(&panes, pid)),
        without_cwd(&s["pane"]),
        "create_session's pane record is list_panes's"
    );
    assert_eq!(
        s["pane"]["command"], "sleep",
        "create_session's record names the program it started"
    );
    // Right after the pane starts, before its process owns the terminal, tmux
    // reads the path as empty: then the record says so; else it is the cwd given.
    let reported = s["pane"]["cwd"].as_str().unwrap();
    assert!(
        reported.is_empty() || reported == std::fs::canonicalize(&cwd).unwrap().to_str().unwrap(),
        "cwd {reported:?}"
    );

    // A window from a shell line (asked for explicitly) with env, and one from argv at an index.
    let w = c.call("create_window", json!({ "sessionId": sid, "generation": gen, "name": "logs", "shell": "echo \"env=$ARR_X sum=$((40+2))\"; exec sleep 1000", "env": { "ARR_X": "a b;c" } })).await;
    let (w2, p2) = (
        w["window"]["id"].as_str().unwrap(),
        w["pane"]["id"].as_str().unwrap(),
    );
    assert_eq!(w["session"]["id"], json!(sid));
    screen_with(&srv, p2, "env=a b;c sum=42");
    assert_eq!(
        show(&srv, w2, "#{window_name} #{session_id} #{window_active}"),
        format!("logs {sid} 0"),
        "created detached (select false)"
    );
    let w = c.call("create_window", json!({ "sessionId": sid, "index": 7, "argv": ["sh", "-c", "echo argv-ran $0; exec sleep 1000"], "select": true })).await;
    let w3 = w["window"]["id"].as_str().unwrap().to_string();
    screen_with(&srv, w["pane"]["id"].as_str().unwrap(), "argv-ran sh");
    assert_eq!(show(&srv, &w3, "#{window_index} #{window_active}"), "7 1");
    let e = err_text(
        &c,
        "create_window",
        json!({ "sessionId": sid, "index": 7, "argv": ["sleep", "1"] }),
    )
    .await;
    assert!(
        e.contains("new-window exited with status") && e.ends_with("tmux received the command."),
        "{e}"
    );

    // Split right with 30 cells; then select, resize, zoom.
    let sp = c
        .call(
            "split_window",
            json!({ "paneId": pid, "direction": "right", "size": 30, "argv": ["sleep", "1000"] }),
        )
        .await;
    let p3 = sp["pane"]["id"].as_str().unwrap();
    assert_eq!(sp["window"]["id"], json!(wid));
    assert!(sp.get("session").is_none(), "{sp:#}");
    assert_eq!(
        show(&srv, p3, "#{window_id} #{pane_width} #{pane_active}"),
        format!("{wid} 30 0")
    );
    assert!(
        show(&srv, p3, "#{pane_left}").parse::<u32>().unwrap()
            > show(&srv, pid, "#{pane_left}").parse::<u32>().unwrap(),
        "right of the split pane"
    );
    assert_eq!(sp["pane"]["width"], 30);

    let sel = c
        .call("select_pane", json!({ "paneId": p3, "generation": gen }))
        .await;
    assert_eq!(show(&srv, p3, "#{pane_active}"), "1");
    assert_eq!(sel["window"]["activePaneId"], json!(p3));
    let sel = c.call("select_window", json!({ "windowId": wid })).await;
    assert_eq!(show(&srv, wid, "#{window_active}"), "1");
    assert_eq!(sel["window"]["links"][0]["active"], true, "{sel:#}");

    let r = c
        .call("resize_pane", json!({ "paneId": p3, "width": 50 }))
        .await;
    assert_eq!(show(&srv, p3, "#{pane_width}"), "50");
    assert_eq!(r["pane"]["width"], 50);
    c.call(
        "resize_pane",
        json!({ "paneId": p3, "adjust": { "direction": "left", "cells": 5 } }),
    )
    .await;
    assert_eq!(
        show(&srv, p3, "#{pane_width}"),
        "55",
        "moving the left border of the right pane left by 5 widens it"
    );
    let z = c
        .call("resize_pane", json!({ "paneId": p3, "zoom": true }))
        .await;
    assert_eq!(
        (
            show(&srv, wid, "#{window_zoomed_flag}"),
            z["windowZoomed"].clone()
        ),
        ("1".to_string(), json!(true))
    );
    // zoom is a state: asking again leaves it zoomed (tmux's -Z alone would unzoom).
    let z = c
        .call("resize_pane", json!({ "paneId": p3, "zoom": true }))
        .await;
    assert_eq!(
        (
            show(&srv, wid, "#{window_zoomed_flag}"),
            z["windowZoomed"].clone()
        ),
        ("1".to_string(), json!(true))
    );
    // Zooming the other pane of a zoomed window zooms that one.
    c.call("resize_pane", json!({ "paneId": pid, "zoom": true }))
        .await;
    assert_eq!(
        show(&srv, wid, "#{window_zoomed_flag} #{pane_id}"),
        format!("1 {pid}")
    );
    let z = c
        .call("resize_pane", json!({ "paneId": pid, "zoom": false }))
        .await;
    assert_eq!(
        (
            show(&srv, wid, "#{window_zoomed_flag}"),
            z["windowZoomed"].clone()
        ),
        ("0".to_string(), json!(false))
    );

    // Renames: the name tmux gave.
    let rn = c
        .call(
            "rename_session",
            json!({ "sessionId": sid, "generation": gen, "name": "-release.2" }),
        )
        .await;
    assert_eq!(
        rn["session"]["name"],
        json!(show(&srv, sid, "#{session_name}"))
    );
    if !tmux_at_least(3, 6) {
        assert_eq!(rn["session"]["name"], "-release_2");
    }
    let rn = c
        .call(
            "rename_window",
            json!({ "windowId": w2, "name": "tail ##x;" }),
        )
        .await;
    assert_eq!(rn["window"]["name"], "tail ##x;");
    assert_eq!(show(&srv, w2, "#{window_name}"), "tail ##x;");
    let e = err_text(
        &c,
        "rename_session",
        json!({ "sessionId": sid, "name": "main" }),
    )
    .await;
    assert!(
        e.contains("rename-session exited with status") && e.contains("duplicate"),
        "tmux refuses a name in use: {e}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_and_respawn_exactly_the_target_never_the_last() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &["--safety", "destructive"]).await;
    // Alone, main holds every pane: killing it, its window or its pane would end the server.
    let main_window = show(&srv, "%0", "#{window_id}");
    for (t, args) in [
        ("kill_session", json!({ "sessionId": "$0" })),
        ("kill_window", json!({ "windowId": main_window })),
        ("kill_pane", json!({ "paneId": "%0" })),
    ] {
        let e = err_text(&c, t, args).await;
        assert!(
            e.contains("holds every remaining pane")
                && e.contains("end the server")
                && e.ends_with("Nothing was sent to tmux."),
            "{e}"
        );
    }
    assert_eq!(all_panes(&srv), BTreeSet::from(["%0".to_string()]));

    // Extra panes, windows and a session to kill (main keeps %0 throughout).
    let s = c
        .call(
            "create_session",
            json!({ "name": "victim", "argv": ["sleep", "1000"] }),
        )
        .await;
    let (sid, vpane) = (
        s["session"]["id"].as_str().unwrap().to_string(),
        s["pane"]["id"].as_str().unwrap().to_string(),
    );
    let sp = c
        .call(
            "split_window",
            json!({ "paneId": "%0", "direction": "below", "argv": ["sleep", "1000"] }),
        )
        .await;
    let split = sp["pane"]["id"].as_str().unwrap().to_string();
    let w = c
        .call(
            "create_window",
            json!({ "sessionId": "$0", "argv": ["sleep", "1000"] }),
        )
        .await;
    let (wid, wpane) = (
        w["window"]["id"].as_str().unwrap().to_string(),
        w["pane"]["id"].as_str().unwrap().to_string(),
    );

    let before = all_panes(&srv);
    let k = c
        .call(
            "kill_pane",
            json!({ "paneId": split, "generation": s["generation"] }),
        )
        .await;
    assert_eq!(
        (
            k["killed"]["id"].as_str(),
            k["panesClosed"].as_array().map(Vec::len)
        ),
        (Some(split.as_str()), Some(1)),
        "{k:#}"
    );
    let after = all_panes(&srv);
    assert_eq!(
        before.difference(&after).cloned().collect::<Vec<_>>(),
        std::slice::from_ref(&split),
        "exactly the pane"
    );

    let k = c.call("kill_window", json!({ "windowId": wid })).await;
    assert_eq!(
        k["panesClosed"],
        json!([{ "kind": "pane", "id": wpane, "generation": k["generation"] }])
    );
    assert!(k["name"].is_string(), "{k:#}");
    assert!(!all_panes(&srv).contains(&wpane) && all_panes(&srv).contains("%0"));

    // Respawn: a running pane only with kill: true; then a new pid and process generation.
    let vpid = show(&srv, &vpane, "#{pane_pid}");
    let e = err_text(
        &c,
        "respawn_pane",
        json!({ "paneId": vpane, "argv": ["sleep", "5"] }),
    )
    .await;
    assert!(
        e.contains("kill: true") && e.ends_with("Nothing was sent to tmux."),
        "{e}"
    );
    assert_eq!(
        show(&srv, &vpane, "#{pane_pid}"),
        vpid,
        "the refused respawn changed the pane"
    );
    let old_gen = pane(
        &c.call("list_panes", json!({"detail": "full"})).await,
        &vpane,
    )["processGeneration"]
        .clone();
    let r = c.call("respawn_pane", json!({ "paneId": vpane, "kill": true, "shell": "echo respawned-$((6*7)); exec sleep 1000" })).await;
    screen_with(&srv, &vpane, "respawned-42");
    let new_pid = show(&srv, &vpane, "#{pane_pid}");
    assert_ne!(new_pid, vpid);
    assert_eq!(r["pane"]["pid"].as_u64().unwrap().to_string(), new_pid);
    assert_ne!(
        r["pane"]["processGeneration"], old_gen,
        "a respawned pane's process has a new generation"
    );

    let k = c.call("kill_session", json!({ "sessionId": sid })).await;
    assert_eq!(
        (k["killed"]["id"].as_str(), k["name"].as_str()),
        (Some(sid.as_str()), Some("victim"))
    );
    assert!(
        srv.try_tmux(&["has-session", "-t", &sid]).status.code() != Some(0),
        "session still there"
    );
    assert!(all_panes(&srv).contains("%0"));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_generation_and_bad_input_change_nothing() {
    let srv = TmuxServer::start();
    srv.tmux(&["new-window", "-d", "-t", "main:", "sleep 1000"]);
    let c = McpClient::attach(&srv, &["--safety", "destructive"]).await;
    let stale = "0123456789abcdef0123456789abcdef";
    let window = show(&srv, "%0", "#{window_id}");
    let state = || {
        srv.tmux(&["list-panes", "-a", "-F", "#{session_name} #{window_id} #{window_name} #{pane_id} #{pane_pid} #{pane_width} #{window_zoomed_flag}"])
    };
    let before = state();
    for (t, args) in [
        ("kill_pane", json!({ "paneId": "%1", "generation": stale })),
        (
            "rename_window",
            json!({ "windowId": window, "generation": stale, "name": "x" }),
        ),
        (
            "split_window",
            json!({ "paneId": "%0", "generation": stale, "direction": "right" }),
        ),
        (
            "respawn_pane",
            json!({ "paneId": "%1", "generation": stale, "kill": true }),
        ),
    ] {
        let e = err_text(&c, t, args).await;
        assert!(
            e.contains("generation is not this tmux server's")
                && e.ends_with("Nothing was sent to tmux."),
            "{t}: {e}"
        );
    }
    let bad = [
        (
            "split_window",
            json!({ "paneId": "%0", "direction": "sideways" }),
            "argument /direction",
        ),
        (
            "kill_window",
            json!({ "windowId": "%0" }),
            "argument /windowId",
        ),
        (
            "resize_pane",
            json!({ "paneId": "%0", "width": 10, "zoom": true }),
            "give exactly one of them",
        ),
        (
            "resize_pane",
            json!({ "paneId": "%0" }),
            "give exactly one of them",
        ),
        (
            "create_window",
            json!({ "sessionId": "$0", "argv": ["sleep", "1"], "shell": "sleep 1" }),
            "argv and shell",
        ),
        (
            "create_window",
            json!({ "sessionId": "$0", "argv": [""] }),
            "argv/0",
        ),
        (
            "create_window",
            json!({ "sessionId": "$0", "cwd": "/nonexistent/dir" }),
            "cwd",
        ),
        (
            "create_window",
            json!({ "sessionId": "$0", "env": { "1BAD": "x" } }),
            "argument /env",
        ),
        (
            "rename_window",
            json!({ "windowId": window, "name": "two\nlines" }),
            "argument /name: must not contain control characters",
        ),
        (
            "create_session",
            json!({ "name": "esc\u{1b}[31m" }),
            "argument /name: must not contain control characters",
        ),
        (
            "kill_pane",
            json!({ "paneId": "%99" }),
            "pane %99 does not exist",
        ),
        (
            "select_pane",
            json!({ "paneId": "%0", "extra": 1 }),
            "unexpected field(s) extra",
        ),
    ];
    for (t, args, needle) in bad {
        let e = err_text(&c, t, args).await;
        assert!(
            e.contains(needle) && e.ends_with("Nothing was sent to tmux."),
            "{t}: {e}"
        );
    }
    assert_eq!(state(), before, "a refused call changed tmux");
    c.close().await;
}

#[test]
fn own_pane_window_session_never_killed_or_respawned_and_scope_holds() {
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
    // Even --allow-self (which allows typing into itself) does not allow these.
    let mut relay = PaneRelay::start(
        &srv,
        "arranger",
        &["--safety", "destructive", "--allow-self"],
        true,
    );
    let me = relay.pane.clone();
    let list = checked_structured(
        &relay.tools,
        "list_panes",
        &relay.channel.request(
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
    assert_eq!(
        list["scope"], "session",
        "test premise: a relay in a pane is session-scoped by default"
    );
    let my_window = show(&srv, &me, "#{window_id}");
    let my_pid = show(&srv, &me, "#{pane_pid}");
    let before = all_panes(&srv);
    let mut id = 10;
    let mut call = |relay: &mut PaneRelay, name: &str, args: Value| {
        id += 1;
        relay
            .channel
            .request(id, "tools/call", json!({ "name": name, "arguments": args }))
    };
    let text = |resp: &Value| -> String {
        let r = &resp["result"];
        assert_eq!(r["isError"], true, "should have failed: {resp}");
        assert!(r.get("structuredContent").is_none(), "{resp}");
        r["content"][0]["text"].as_str().unwrap().to_string()
    };
    for (name, args) in [
        ("kill_pane", json!({ "paneId": me })),
        ("kill_window", json!({ "windowId": my_window })),
        ("kill_session", json!({ "sessionId": "$0" })),
        ("respawn_pane", json!({ "paneId": me, "kill": true })),
    ] {
        let e = text(&call(&mut relay, name, args));
        assert!(
            e.contains("never killed or respawned by an agent")
                && e.ends_with("Nothing was sent to tmux."),
            "{name}: {e}"
        );
    }
    // Out of scope: the other session's pane, and a new session.
    let e = text(&call(&mut relay, "kill_pane", json!({ "paneId": other })));
    assert!(
        e.contains("outside this session's scope") && e.ends_with("Nothing was sent to tmux."),
        "{e}"
    );
    let e = text(&call(
        &mut relay,
        "rename_session",
        json!({ "sessionId": show(&srv, &other, "#{session_id}"), "name": "mine" }),
    ));
    assert!(e.contains("outside this session's scope"), "{e}");
    let e = text(&call(
        &mut relay,
        "create_session",
        json!({ "name": "escape" }),
    ));
    assert!(e.contains("--scope server"), "{e}");
    assert_eq!(all_panes(&srv), before, "a refused kill changed the server");
    assert_eq!(
        show(&srv, &me, "#{pane_pid}"),
        my_pid,
        "the agent's pane was respawned"
    );
    assert_eq!(show(&srv, &other, "#{session_name}"), "other");
    // Harmless to itself: selecting and renaming its own window are allowed.
    let r = call(
        &mut relay,
        "rename_window",
        json!({ "windowId": my_window, "name": "agent" }),
    );
    let out = checked_structured(&relay.tools, "rename_window", &r);
    assert_eq!(out["window"]["name"], "agent");
    let r = call(&mut relay, "select_pane", json!({ "paneId": me }));
    checked_structured(&relay.tools, "select_pane", &r);
    assert_eq!(show(&srv, &me, "#{pane_active}"), "1");
}

/// Issue "Exact and honest, round 2" item 6: tmux's format expansion copies a
/// run of `#` before `[` unchanged (a style), so such a run reaches tmux as
/// typed, not doubled: names with `#[` keep it, and a cwd containing `#[`
/// starts the pane there (it used to start in tmux's start directory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_and_directories_with_hash_bracket_arrive_literally() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(
        &srv,
        &["--safety", "destructive", "--enable-tool", "tmux_create"],
    )
    .await;
    let dir = srv.dir().join("a#[x]##[y #b");
    std::fs::create_dir_all(&dir).unwrap();
    let dir = std::fs::canonicalize(&dir)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let cwd_of = |pane: &str| {
        poll(Duration::from_secs(5), || {
            Some(show(&srv, pane, "#{pane_current_path}")).filter(|p| !p.is_empty())
        })
        .unwrap_or_default()
    };

    let s = c.call("create_session", json!({ "name": "s#[1", "windowName": "w#[1]##[2", "argv": ["sleep", "1000"], "cwd": dir })).await;
    let (sid, wid, pid) = (
        s["session"]["id"].as_str().unwrap(),
        s["window"]["id"].as_str().unwrap(),
        s["pane"]["id"].as_str().unwrap(),
    );
    assert_eq!(
        (
            show(&srv, sid, "#{session_name}"),
            show(&srv, wid, "#{window_name}")
        ),
        ("s#[1".to_string(), "w#[1]##[2".to_string())
    );
    assert_eq!(
        (s["session"]["name"].as_str(), s["window"]["name"].as_str()),
        (Some("s#[1"), Some("w#[1]##[2")),
        "{s:#}"
    );
    assert_eq!(
        cwd_of(pid),
        dir,
        "create_session's pane starts in the directory asked"
    );

    let w = c
        .call(
            "create_window",
            json!({ "sessionId": sid, "name": "n#[z#", "argv": ["sleep", "1000"], "cwd": dir }),
        )
        .await;
    let (w2, p2) = (
        w["window"]["id"].as_str().unwrap(),
        w["pane"]["id"].as_str().unwrap(),
    );
    assert_eq!(show(&srv, w2, "#{window_name}"), "n#[z#");
    assert_eq!(cwd_of(p2), dir, "create_window");

    let sp = c
        .call(
            "split_window",
            json!({ "paneId": p2, "direction": "below", "argv": ["sleep", "1000"], "cwd": dir }),
        )
        .await;
    assert_eq!(
        cwd_of(sp["pane"]["id"].as_str().unwrap()),
        dir,
        "split_window"
    );

    c.call(
        "respawn_pane",
        json!({ "paneId": p2, "kill": true, "argv": ["sleep", "999"], "cwd": dir }),
    )
    .await;
    let respawned = poll(Duration::from_secs(5), || {
        Some(show(
            &srv,
            p2,
            "#{pane_current_command}|#{pane_current_path}",
        ))
        .filter(|l| l.starts_with("sleep|") && !l.ends_with('|'))
    });
    assert_eq!(respawned, Some(format!("sleep|{dir}")), "respawn_pane");

    let rn = c
        .call("rename_window", json!({ "windowId": wid, "name": "a#[b" }))
        .await;
    assert_eq!(
        (
            rn["window"]["name"].as_str(),
            show(&srv, wid, "#{window_name}")
        ),
        (Some("a#[b"), "a#[b".to_string())
    );
    let rn = c
        .call(
            "rename_session",
            json!({ "sessionId": sid, "name": "r#[s" }),
        )
        .await;
    assert_eq!(
        (
            rn["session"]["name"].as_str(),
            show(&srv, sid, "#{session_name}")
        ),
        (Some("r#[s"), "r#[s".to_string())
    );

    let t = c.call_envelope("tmux_create", json!({ "kind": "session", "name": "t#[s", "window_name": "t#[w", "argv": ["sleep", "1000"], "cwd": dir })).await;
    let created = t.data()["created"].as_array().unwrap().clone();
    let (ts, tw, tp) = (
        created[0]["id"].as_str().unwrap(),
        created[1]["id"].as_str().unwrap(),
        created[2]["id"].as_str().unwrap(),
    );
    assert_eq!(
        (
            show(&srv, ts, "#{session_name}"),
            show(&srv, tw, "#{window_name}")
        ),
        ("t#[s".to_string(), "t#[w".to_string())
    );
    assert_eq!(cwd_of(tp), dir, "tmux_create");
    c.close().await;
}
