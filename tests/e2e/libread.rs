//! The libtmux family's read tools `list_sessions`, `list_windows`,
//! `get_pane_info` and `get_server_info` against real tmux servers: published
//! contracts, records compared with tmux's own formats (a window linked into
//! two sessions included), the session filter, bad input refused with the
//! field named and nothing sent, session scope through a relay in a pane, and
//! the hook trap (every after-* hook set: these reads fire none).
//!
//! Every successful `structuredContent` is validated against the published
//! `outputSchema` by the harness (`McpClient::call`, `checked_structured`).

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;
use tmux_mcp_e2e::*;

/// `attach` arguments that enable the configuration reads (opt-in).
const SHOW: [&str; 6] = ENABLE_SHOW;

const TOOLS: [&str; 8] = [
    "list_sessions",
    "list_windows",
    "get_pane_info",
    "get_server_info",
    "show_options",
    "show_environment",
    "show_hooks",
    "search_panes",
];

/// A call that must fail the libtmux way (`isError`, text only); its text.
async fn call_fail(c: &McpClient, name: &str, args: Value) -> String {
    let r = c.call_raw(name, args).await;
    assert_eq!(r.is_error, Some(true), "{name} should have failed: {r:?}");
    assert!(
        r.structured_content.is_none(),
        "a failure carries no structuredContent: {r:?}"
    );
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `tmux FORMAT-listing` lines split on spaces (the test's own reads; no hook is set).
fn rows(srv: &TmuxServer, args: &[&str]) -> Vec<Vec<String>> {
    srv.tmux(args)
        .lines()
        .map(|l| l.split(' ').map(str::to_string).collect())
        .collect()
}

/// `main` (200x50, one window) plus `other` with two windows, and main's
/// window 0 linked into `other` at index 5. Returns other's session id.
fn two_sessions_with_a_linked_window(srv: &TmuxServer) -> String {
    let other = srv
        .tmux(&[
            "new-session",
            "-d",
            "-s",
            "other",
            "-x",
            "100",
            "-y",
            "30",
            "-P",
            "-F",
            "#{session_id}",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    srv.tmux(&[
        "new-window",
        "-d",
        "-t",
        "other:",
        "-n",
        "second",
        "sleep 1000",
    ]);
    srv.tmux(&["link-window", "-d", "-s", "main:0", "-t", "other:5"]);
    other
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn published_contracts_are_read_only_objects() {
    let srv = TmuxServer::start();
    let plain = McpClient::attach(&srv, &[]).await;
    let listed: Vec<String> = plain.tools().iter().map(|t| t.name.to_string()).collect();
    for name in TOOLS {
        let opt_in = name.starts_with("show_");
        assert_eq!(
            listed.iter().any(|l| l == name),
            !opt_in,
            "{name}: the configuration reads are opt-in, the rest on by default: {listed:?}"
        );
    }
    plain.close().await;
    let c = McpClient::attach(&srv, &SHOW).await;
    for name in TOOLS {
        let t = c.tool(name);
        let input = Value::Object((*t.input_schema).clone());
        // The published schema leaves `additionalProperties: false` out
        // (issue 20); the broker refuses an unknown argument all the same.
        assert_eq!(
            (input["type"].as_str(), input.get("additionalProperties")),
            (Some("object"), None),
            "{name} input schema: {input:#}"
        );
        let e = call_fail(&c, name, json!({ "bogusArgument": 1 })).await;
        assert!(
            e.contains("unexpected field(s) bogusArgument")
                && e.ends_with("Nothing was sent to tmux."),
            "{name}: {e}"
        );
        let output = Value::Object((*t.output_schema.clone().expect("outputSchema")).clone());
        assert_eq!(
            output["type"], "object",
            "{name} output schema root: {output:#}"
        );
        let ann = serde_json::to_value(t.annotations.clone().expect("annotations")).unwrap();
        assert_eq!(
            (
                ann["readOnlyHint"].as_bool(),
                ann["destructiveHint"].as_bool(),
                ann["idempotentHint"].as_bool(),
                ann["openWorldHint"].as_bool()
            ),
            (Some(true), Some(false), Some(true), Some(false)),
            "{name} annotations: {ann}"
        );
    }
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_sessions_matches_tmux() {
    let srv = TmuxServer::start();
    two_sessions_with_a_linked_window(&srv);
    let c = McpClient::attach(&srv, &[]).await;
    let generation = generation(&c).await;
    let got = c.call("list_sessions", json!({"detail": "full"})).await;
    assert_eq!(got["generation"], json!(generation));
    // At their defaults (server scope, no caller pane), left out.
    assert_eq!((got.get("scope"), got.get("callerPaneId")), (None, None));
    let want = rows(&srv, &["list-sessions", "-F", "#{session_id} #{session_name} #{session_created} #{session_attached} #{session_windows}"]);
    // The lean records (the default): id, name, windowCount, attached when
    // not 0, and no reference.
    let lean = c.call("list_sessions", json!({})).await;
    assert_eq!(lean["generation"], json!(generation));
    let listed: Vec<(String, String, String, String)> = lean["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert!(
                s.get("ref").is_none() && s.get("attached") != Some(&json!(0)),
                "{s:#}"
            );
            (
                s["id"].as_str().unwrap().to_string(),
                s["name"].as_str().unwrap().to_string(),
                s.get("attached").unwrap_or(&json!(0)).to_string(),
                s["windowCount"].to_string(),
            )
        })
        .collect();
    let wanted: Vec<(String, String, String, String)> = want
        .iter()
        .map(|w| (w[0].clone(), w[1].clone(), w[3].clone(), w[4].clone()))
        .collect();
    assert_eq!(listed, wanted, "{lean:#}");
    let sessions = got["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), want.len(), "{got:#}");
    for (s, w) in sessions.iter().zip(&want) {
        assert_eq!(
            s["ref"],
            json!({"kind": "session", "id": w[0], "generation": generation}),
            "{s:#}"
        );
        assert_eq!(
            (s["id"].as_str(), s["name"].as_str()),
            (Some(w[0].as_str()), Some(w[1].as_str()))
        );
        assert_eq!(
            (
                s["created"].to_string(),
                s["attached"].to_string(),
                s["windowCount"].to_string()
            ),
            (w[2].clone(), w[3].clone(), w[4].clone()),
            "{s:#}"
        );
        assert_eq!(
            s["holdsCallerPane"],
            json!(false),
            "the test runner is in no pane"
        );
        let mut windows: Vec<Value> = s["windows"].as_array().unwrap().clone();
        windows.sort_by_key(|w| w["index"].as_i64());
        let want_windows: Vec<Value> = rows(&srv, &["list-windows", "-t", &w[0], "-F", "#{window_id} #{window_index} #{window_active}"])
            .into_iter()
            .map(|r| json!({"windowId": r[0], "index": r[1].parse::<i64>().unwrap(), "active": r[2] == "1"}))
            .collect();
        assert_eq!(windows, want_windows, "windows of {}", w[1]);
    }
    assert_eq!(
        sessions[1]["windows"].as_array().unwrap().len(),
        3,
        "other holds its two windows and main's linked one: {got:#}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_windows_matches_tmux_and_filters_by_session() {
    let srv = TmuxServer::start();
    let other = two_sessions_with_a_linked_window(&srv);
    srv.tmux(&["split-window", "-d", "-t", "other:0"]);
    // Window names are compared with tmux's read taken later: no automatic
    // renames between the two (a window reads `tmux` until its program exec'd).
    srv.quiet_panes("cat");
    let c = McpClient::attach(&srv, &[]).await;
    let generation = generation(&c).await;
    let got = c.call("list_windows", json!({"detail": "full"})).await;
    let lean = c.call("list_windows", json!({})).await;
    // One line per window link; a linked window appears once per session.
    let mut want: BTreeMap<String, (Vec<String>, Vec<Value>)> = BTreeMap::new();
    for r in rows(&srv, &["list-windows", "-a", "-F", "#{window_id} #{window_width} #{window_height} #{window_panes} #{session_id} #{session_name} #{window_index} #{window_active} #{window_layout} #{pane_id}"]) {
        let e = want.entry(r[0].clone()).or_insert_with(|| (r.clone(), Vec::new()));
        e.1.push(json!({"sessionId": r[4], "sessionName": r[5], "index": r[6].parse::<i64>().unwrap(), "active": r[7] == "1"}));
    }
    let windows = got["windows"].as_array().unwrap();
    assert_eq!(
        windows
            .iter()
            .map(|w| w["id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
            .len(),
        want.len(),
        "{got:#}"
    );
    for w in windows {
        let id = w["id"].as_str().unwrap();
        let (r, links) = want
            .get(id)
            .unwrap_or_else(|| panic!("tmux has no window {id}"));
        assert_eq!(
            w["ref"],
            json!({"kind": "window", "id": id, "generation": generation})
        );
        assert_eq!(
            (
                w["width"].to_string(),
                w["height"].to_string(),
                w["paneCount"].to_string()
            ),
            (r[1].clone(), r[2].clone(), r[3].clone()),
            "{w:#}"
        );
        assert_eq!(w["layout"], json!(r[8]));
        assert_eq!(
            w["activePaneId"],
            json!(r[9]),
            "list-windows' #{{pane_id}} is the active pane"
        );
        assert_eq!(
            w["name"],
            json!(srv
                .tmux(&["display-message", "-p", "-t", id, "#{window_name}"])
                .trim_end())
        );
        assert_eq!(
            &w["links"].as_array().unwrap().clone(),
            links,
            "links of {id}"
        );
    }
    // The lean records say the same in fewer fields: `at` per link, the
    // sessions whose current window it is, size, pane count.
    for (w, full) in lean["windows"].as_array().unwrap().iter().zip(windows) {
        let links = full["links"].as_array().unwrap();
        let at: Vec<String> = links
            .iter()
            .map(|l| format!("{}:{}", l["sessionName"].as_str().unwrap(), l["index"]))
            .collect();
        let active: Vec<&Value> = links
            .iter()
            .filter(|l| l["active"] == json!(true))
            .map(|l| &l["sessionName"])
            .collect();
        assert_eq!(
            (
                &w["id"],
                &w["name"],
                &w["at"],
                w.get("activeIn"),
                &w["paneCount"]
            ),
            (
                &full["id"],
                &full["name"],
                &json!(at),
                (!active.is_empty()).then(|| json!(active)).as_ref(),
                &full["paneCount"]
            ),
            "{w:#} against {full:#}"
        );
        assert_eq!(
            w["size"],
            json!(format!("{}x{}", full["width"], full["height"]))
        );
        assert!(w.get("ref").is_none() && w.get("layout").is_none(), "{w:#}");
    }
    let linked = windows
        .iter()
        .find(|w| w["links"].as_array().unwrap().len() == 2)
        .expect("main:0 is linked into both sessions");
    assert_eq!(
        linked["id"],
        json!(srv
            .tmux(&["display-message", "-p", "-t", "main:0", "#{window_id}"])
            .trim())
    );

    // The filter: by id, by name (same windows), and an unknown session.
    let by_id = c.call("list_windows", json!({"session": other})).await;
    let by_name = c.call("list_windows", json!({"session": "other"})).await;
    assert_eq!(by_id["windows"], by_name["windows"]);
    let ids: Vec<&str> = by_id["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_str().unwrap())
        .collect();
    let want_ids: Vec<String> = srv
        .tmux(&["list-windows", "-t", "other", "-F", "#{window_id}"])
        .lines()
        .map(str::to_string)
        .collect();
    let mut want_sorted = want_ids.clone();
    want_sorted.sort_by_key(|i| i[1..].parse::<u64>().unwrap());
    assert_eq!(ids, want_sorted);
    let main_only = c.call("list_windows", json!({"session": "main"})).await;
    assert_eq!(main_only["windows"].as_array().unwrap().len(), 1);

    // Refusals name the field; nothing reaches tmux.
    let before = srv.status()["tmux_connections"].clone();
    let t = call_fail(&c, "list_windows", json!({"session": ""})).await;
    assert!(t.contains("argument /session: must be at least 1"), "{t}");
    let t = call_fail(&c, "list_windows", json!({"session": 3})).await;
    assert!(t.contains("argument /session: expected type string"), "{t}");
    let t = call_fail(&c, "list_sessions", json!({"session": "main"})).await;
    assert!(t.contains("unexpected field(s) session"), "{t}");
    assert_eq!(
        srv.status()["tmux_connections"],
        before,
        "a refused call ran a tmux command"
    );
    let t = call_fail(&c, "list_windows", json!({"session": "nope"})).await;
    assert!(
        t.starts_with("Argument session: no session with id or name \"nope\"")
            && t.contains("(other)"),
        "{t}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_pane_info_agrees_with_the_listings() {
    let srv = TmuxServer::start();
    // Names stay as they are between the reads compared below (the login
    // shell's window is renamed from `env` to `bash` once it has started).
    srv.tmux(&["set-option", "-g", "automatic-rename", "off"]);
    two_sessions_with_a_linked_window(&srv);
    let second = srv
        .tmux(&[
            "split-window",
            "-d",
            "-t",
            "main:0",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    let c = McpClient::attach(&srv, &[]).await;
    let full = json!({"detail": "full"});
    let panes = c.call("list_panes", full.clone()).await;
    let windows = c.call("list_windows", full.clone()).await;
    let sessions = c.call("list_sessions", full.clone()).await;
    let lean_panes = c.call("list_panes", json!({})).await;
    for id in ["%0", second.as_str()] {
        // Lean: the list_panes record with the window's id and name, the pid
        // and the title.
        let lean = c.call("get_pane_info", json!({"paneId": id})).await;
        let mut rest = lean["pane"].as_object().unwrap().clone();
        let whole = pane(&panes, id);
        for k in ["windowId", "windowName", "pid", "title"] {
            assert_eq!(rest.remove(k).as_ref(), Some(&whole[k]), "{id}: {k}");
        }
        assert_eq!(
            Value::Object(rest),
            *pane(&lean_panes, id),
            "{id}: the lean list_panes record"
        );
        assert!(
            lean.get("window").is_none() && lean.get("sessions").is_none(),
            "{lean:#}"
        );
        let info = c
            .call("get_pane_info", json!({"paneId": id, "detail": "full"}))
            .await;
        assert_eq!(
            info["pane"],
            *pane(&panes, id),
            "{id}: the list_panes record"
        );
        let wid = info["pane"]["windowId"].as_str().unwrap();
        let window = windows["windows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["id"] == wid)
            .unwrap();
        assert_eq!(info["window"], *window, "{id}: the list_windows record");
        assert_eq!(
            info["window"]["activePaneId"],
            json!("%0"),
            "the split was made with -d"
        );
        let placed: Vec<&Value> = info["pane"]["placements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["sessionId"])
            .collect();
        // list_sessions' records with its pane summary taken off.
        let want: Vec<Value> = sessions["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| placed.contains(&&s["id"]))
            .map(|s| {
                let mut s = s.clone();
                let m = s.as_object_mut().unwrap();
                for k in ["paneCount", "busyPanes", "deadPanes", "attendedPanes"] {
                    assert!(m.remove(k).is_some(), "list_sessions gives {k}");
                }
                s
            })
            .collect();
        assert_eq!(
            info["sessions"].as_array().unwrap().clone(),
            want,
            "{id}: the list_sessions records"
        );
        assert_eq!(want.len(), 2, "main:0 is linked into main and other");
    }
    let before = srv.status()["tmux_connections"].clone();
    let t = call_fail(&c, "get_pane_info", json!({"paneId": "1"})).await;
    assert!(
        t.contains("argument /paneId: must match the pattern"),
        "{t}"
    );
    let t = call_fail(&c, "get_pane_info", json!({})).await;
    assert!(t.contains("missing required field paneId"), "{t}");
    assert_eq!(
        srv.status()["tmux_connections"],
        before,
        "a refused call ran a tmux command"
    );
    let t = call_fail(&c, "get_pane_info", json!({"paneId": "%999"})).await;
    assert!(
        t.starts_with("No pane %999 on this server.") && t.contains("%0 (main:0"),
        "{t}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_server_info_matches_the_server() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &[]).await;
    let generation = generation(&c).await;
    let (_, _, version) = tmux_version();
    let attach = |session: &str| ControlClient::attach(&srv, session);
    let client = attach("main");
    let info = c.call("get_server_info", json!({})).await;
    assert_eq!(info["generation"], json!(generation));
    assert_eq!(info["tmuxVersion"], json!(version));
    assert_eq!(
        std::fs::canonicalize(info["socketPath"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(srv.socket()).unwrap()
    );
    assert_eq!(info["serverPid"], json!(srv.pid()));
    assert_eq!(
        info["serverStartTime"].to_string(),
        srv.tmux(&["display-message", "-p", "#{start_time}"]).trim()
    );
    // At their defaults (server scope, outside tmux): left out.
    assert_eq!(
        (
            info.get("scope"),
            info.get("callerPaneId"),
            info.get("callerSessionIds")
        ),
        (None, None, None),
        "{info:#}"
    );
    assert!(
        srv.brokers()
            .contains(&(info["broker"]["pid"].as_u64().unwrap() as u32)),
        "{info:#}"
    );
    let clients = &info["clients"];
    if tmux_at_least(3, 5) {
        assert_eq!(clients["available"], json!(true), "{info:#}");
        let attached = clients["attached"].as_array().unwrap();
        assert_eq!(
            attached.len(),
            1,
            "only the control client is attached (command clients are not): {info:#}"
        );
        assert_eq!(
            (
                attached[0]["pid"].as_u64(),
                attached[0]["sessionName"].as_str(),
                attached[0]["controlMode"].as_bool()
            ),
            (Some(client.pid() as u64), Some("main"), Some(true)),
            "{info:#}"
        );
    } else {
        assert_eq!(
            // None attached: the list is left out.
            (clients["available"].as_bool(), clients.get("attached")),
            (Some(false), None),
            "{info:#}"
        );
        let why = clients["unavailableReason"].as_str().unwrap();
        assert!(
            why.contains(">= 3.5") && why.contains("after-list-clients"),
            "{why}"
        );
    }
    drop(client);
    c.close().await;
}

#[test]
fn session_scope_sees_only_the_callers_sessions() {
    let srv = TmuxServer::start();
    let other = two_sessions_with_a_linked_window(&srv);
    let hidden = srv
        .tmux(&["display-message", "-p", "-t", "other:second", "#{pane_id}"])
        .trim()
        .to_string();
    let r = PaneRelay::start(
        &srv,
        "scoped",
        &[&["--scope", "session"][..], &SHOW[..]].concat(),
        true,
    );
    let (mut ch, tools, me) = (r.channel, r.tools, r.pane);
    let main = srv
        .tmux(&["display-message", "-p", "-t", "main:", "#{session_id}"])
        .trim()
        .to_string();
    let mut id = 10;
    let mut call = |ch: &mut LineChannel, name: &str, args: Value| {
        id += 1;
        ch.request(id, "tools/call", json!({ "name": name, "arguments": args }))
    };
    let s = checked_structured(
        &tools,
        "list_sessions",
        &call(&mut ch, "list_sessions", json!({})),
    );
    assert_eq!(
        s["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].clone())
            .collect::<Vec<_>>(),
        vec![json!(main)],
        "{s:#}"
    );
    assert_eq!(
        (
            s["sessions"][0]["holdsCallerPane"].as_bool(),
            s["callerPaneId"].as_str()
        ),
        (Some(true), Some(me.as_str()))
    );
    let w = checked_structured(
        &tools,
        "list_windows",
        &call(&mut ch, "list_windows", json!({"detail": "full"})),
    );
    let lean = checked_structured(
        &tools,
        "list_windows",
        &call(&mut ch, "list_windows", json!({})),
    );
    assert_eq!(lean["scope"], json!("session"), "{lean:#}");
    for win in lean["windows"].as_array().unwrap() {
        assert_eq!(
            win["at"].as_array().unwrap().len(),
            1,
            "another session leaked through a link: {win:#}"
        );
        assert!(
            win["at"][0].as_str().unwrap().starts_with("main:"),
            "{win:#}"
        );
    }
    for win in w["windows"].as_array().unwrap() {
        assert_eq!(
            win["links"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["sessionId"].clone())
                .collect::<Vec<_>>(),
            vec![json!(main)],
            "another session leaked through a link: {win:#}"
        );
    }
    assert_eq!(
        w["windows"].as_array().unwrap().len(),
        2,
        "main's window and the relay's: {w:#}"
    );
    for name in ["other", other.as_str()] {
        let resp = call(&mut ch, "list_windows", json!({"session": name}));
        assert_eq!(resp["result"]["isError"], json!(true), "{resp}");
        let text = resp["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("Argument session:") && !text.contains("(other)"),
            "{text}"
        );
    }
    let resp = call(&mut ch, "get_pane_info", json!({"paneId": hidden}));
    assert_eq!(resp["result"]["isError"], json!(true), "{resp}");
    assert!(
        resp["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Pane {hidden} is outside this session's scope.")),
        "{resp}"
    );
    let p = checked_structured(
        &tools,
        "get_pane_info",
        &call(
            &mut ch,
            "get_pane_info",
            json!({"paneId": "%0", "detail": "full"}),
        ),
    );
    let lean = checked_structured(
        &tools,
        "get_pane_info",
        &call(&mut ch, "get_pane_info", json!({"paneId": "%0"})),
    );
    assert_eq!(
        lean["pane"]["at"],
        json!(["main:0.0"]),
        "main:0 is linked into other too, which must not show: {lean:#}"
    );
    assert_eq!(
        p["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].clone())
            .collect::<Vec<_>>(),
        vec![json!(main)],
        "main:0 is linked into other too, which must not show: {p:#}"
    );
    assert_eq!(
        p["pane"]["placements"].as_array().unwrap().len(),
        1,
        "{p:#}"
    );
    for (tool, args) in [
        (
            "show_options",
            json!({"names": ["status"], "session": "other"}),
        ),
        ("show_options", json!({"names": ["status"], "pane": hidden})),
        ("show_hooks", json!({"session": other})),
        (
            "show_environment",
            json!({"names": ["PATH"], "session": "other"}),
        ),
    ] {
        let resp = call(&mut ch, tool, args.clone());
        assert_eq!(
            resp["result"]["isError"],
            json!(true),
            "{tool} {args}: {resp}"
        );
    }
    checked_structured(
        &tools,
        "show_options",
        &call(
            &mut ch,
            "show_options",
            json!({"names": ["status"], "pane": me}),
        ),
    );
    // main:0 linked into a session tmux's session loop visits before main
    // (sessions go by name): the window's options are read through main, so
    // that session's own value never shows.
    srv.tmux(&["new-session", "-d", "-s", "a0", "sleep 1000"]);
    srv.tmux(&["link-window", "-d", "-s", "main:0", "-t", "a0:7"]);
    srv.tmux(&["set-option", "-t", "a0", "status", "off"]);
    let linked = srv
        .tmux(&["display-message", "-p", "-t", "main:0", "#{window_id}"])
        .trim()
        .to_string();
    let o = checked_structured(
        &tools,
        "show_options",
        &call(
            &mut ch,
            "show_options",
            json!({"names": ["status"], "window": linked}),
        ),
    );
    assert_eq!(
        o["options"][0]["value"],
        json!("on"),
        "read through the other session: {o:#}"
    );
    let f = checked_structured(
        &tools,
        "search_panes",
        &call(&mut ch, "search_panes", json!({"pattern": "zzz-not-there"})),
    );
    assert_eq!(
        f["panesSearched"],
        json!(2),
        "only main's two panes are this agent's: {f:#}"
    );
    let resp = call(
        &mut ch,
        "search_panes",
        json!({"pattern": "x", "session": "other"}),
    );
    assert_eq!(resp["result"]["isError"], json!(true), "{resp}");
    let i = checked_structured(
        &tools,
        "get_server_info",
        &call(&mut ch, "get_server_info", json!({})),
    );
    assert_eq!(
        (
            i["scope"].as_str(),
            i["callerPaneId"].as_str(),
            &i["callerSessionIds"]
        ),
        (Some("session"), Some(me.as_str()), &json!([main])),
        "{i:#}"
    );
    drop(ch);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_after_hook_runs_for_these_reads() {
    let srv = TmuxServer::start();
    two_sessions_with_a_linked_window(&srv);
    let trap = HookTrap::at(srv.dir().join("hooks.log"));
    let armed = trap.arm_every_after_hook(&srv, &[]);
    for h in [
        "after-list-sessions",
        "after-list-windows",
        "after-list-clients",
        "after-show-options",
        "after-display-message",
    ] {
        assert!(armed.iter().any(|a| a == h), "{h} not armed: {armed:?}");
    }
    // The sentinel is the test's own display-message (see libtmux.rs
    // `no_other_after_hook_runs`): once its line is in the file, every hook of
    // an earlier command is before it.
    let sentinel = || srv.tmux(&["display-message", "-p", ""]);
    let c = McpClient::attach(&srv, &SHOW).await;
    sentinel();
    trap.before_sentinel("after-display-message");
    trap.clear();
    c.call("list_sessions", json!({})).await;
    c.call("list_windows", json!({})).await;
    c.call("list_windows", json!({"session": "other"})).await;
    call_fail(&c, "list_windows", json!({"session": "nope"})).await;
    c.call("get_pane_info", json!({"paneId": "%0"})).await;
    call_fail(&c, "get_pane_info", json!({"paneId": "%999"})).await;
    c.call("get_server_info", json!({})).await;
    c.call(
        "show_options",
        json!({"names": ["status", "mode-keys", "@x"]}),
    )
    .await;
    c.call(
        "show_options",
        json!({"names": ["remain-on-exit"], "pane": "%0"}),
    )
    .await;
    c.call(
        "show_environment",
        json!({"names": ["PATH", "host"], "session": "other"}),
    )
    .await;
    c.call("show_hooks", json!({})).await;
    c.call("show_hooks", json!({"session": "other"})).await;
    // after-capture-pane is armed too: every pane is skipped, none captured.
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "x", "scrollbackLines": 10}),
        )
        .await;
    assert_eq!(
        (
            f["panesSearched"].as_u64(),
            f["panesSkipped"].as_array().map(Vec::len)
        ),
        (Some(0), Some(3)),
        "{f:#}"
    );
    sentinel();
    trap.before_sentinel("after-display-message");
    assert_eq!(
        trap.fired(),
        "after-display-message\n",
        "after-* hooks ran (only the sentinel's line belongs here)"
    );
    c.close().await;
}

// ---------------------------------------------------------------------------
// show_options, show_environment, show_hooks
// ---------------------------------------------------------------------------

/// `show-options -v ARGS NAME` (the test's own read; no hook is set).
fn show(srv: &TmuxServer, args: &[&str], name: &str) -> String {
    let mut a = vec!["show-options", "-v"];
    a.extend_from_slice(args);
    a.push(name);
    srv.tmux(&a).trim_end_matches('\n').to_string()
}

fn values(shown: &Value, key: &str) -> Vec<(String, Value)> {
    shown[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["name"].as_str().unwrap().to_string(), o["value"].clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_options_read_each_context_like_tmux() {
    let srv = TmuxServer::start();
    let other = two_sessions_with_a_linked_window(&srv);
    srv.tmux(&["set-option", "-g", "@mcp-test", "a b,#{host}}"]);
    srv.tmux(&["set-option", "-t", "other", "status", "off"]);
    srv.tmux(&["set-option", "-w", "-t", "other:second", "mode-keys", "vi"]);
    let pane = srv
        .tmux(&["display-message", "-p", "-t", "other:second", "#{pane_id}"])
        .trim()
        .to_string();
    let window = srv
        .tmux(&[
            "display-message",
            "-p",
            "-t",
            "other:second",
            "#{window_id}",
        ])
        .trim()
        .to_string();
    srv.tmux(&["set-option", "-p", "-t", &pane, "remain-on-exit", "on"]);
    let c = McpClient::attach(&srv, &SHOW).await;
    let names = [
        "@mcp-test",
        "history-limit",
        "status",
        "status-format[0]",
        "mode-keys",
        "remain-on-exit",
        "escape-time",
        "mouse",
    ];
    let global = c.call("show_options", json!({"names": names})).await;
    assert_eq!(global["context"], json!({"kind": "global"}));
    let want: Vec<(String, Value)> = names
        .iter()
        .map(|n| {
            let scope: &[&str] = match *n {
                "mode-keys" => &["-gw"],
                "remain-on-exit" => &["-gw"],
                "escape-time" => &["-s"],
                _ => &["-g"],
            };
            let v = show(&srv, scope, n);
            // Formats give a flag option tmux's numeric form (options_to_string
            // with `numeric`): mouse is a flag; status is a choice and stays on/off.
            let v = if *n == "mouse" {
                (if v == "on" { "1" } else { "0" }).to_string()
            } else {
                v
            };
            (n.to_string(), json!(v))
        })
        .collect();
    assert_eq!(values(&global, "options"), want, "{global:#}");
    assert_eq!(
        global["options"][0]["value"],
        json!("a b,#{host}}"),
        "a value is not format-expanded"
    );
    for (args, name, value) in [
        (json!({"session": "other"}), "status", "off"),
        (json!({"session": other}), "status", "off"),
        (json!({"session": "main"}), "status", "on"),
        (json!({"window": window}), "mode-keys", "vi"),
        (json!({"pane": pane}), "mode-keys", "vi"),
        (json!({"pane": pane}), "remain-on-exit", "on"),
        (json!({"pane": "%0"}), "remain-on-exit", "off"),
        (json!({"pane": pane}), "mouse", "0"),
    ] {
        let mut a = args.clone();
        a["names"] = json!([name]);
        let got = c.call("show_options", a).await;
        assert_eq!(
            got["options"][0]["value"],
            json!(value),
            "{args} {name}: {got:#}"
        );
        assert_eq!(got["options"][0]["readable"], json!(true));
    }
    let before = srv.status()["tmux_connections"].clone();
    let t = call_fail(
        &c,
        "show_options",
        json!({"names": ["status"], "session": "main", "pane": "%0"}),
    )
    .await;
    assert!(
        t.starts_with("Arguments session and pane: give at most one context."),
        "{t}"
    );
    let t = call_fail(&c, "show_options", json!({"names": ["host"]})).await;
    assert!(
        t.contains("argument /names/0: must match the pattern"),
        "a format variable is not an option: {t}"
    );
    let t = call_fail(&c, "show_options", json!({"names": []})).await;
    assert!(t.contains("argument /names:"), "{t}");
    assert_eq!(
        srv.status()["tmux_connections"],
        before,
        "a refused call ran a tmux command"
    );
    let t = call_fail(
        &c,
        "show_options",
        json!({"names": ["status"], "pane": "%99"}),
    )
    .await;
    assert!(
        t.starts_with("Argument pane: no pane %99 is visible"),
        "{t}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_environment_reads_global_and_session_values() {
    let srv = TmuxServer::start();
    two_sessions_with_a_linked_window(&srv);
    srv.tmux(&["set-environment", "-g", "MCPTEST_G", "global value"]);
    srv.tmux(&["set-environment", "-t", "other", "MCPTEST_G", "override"]);
    srv.tmux(&["set-environment", "-t", "other", "MCPTEST_S", "only other"]);
    let c = McpClient::attach(&srv, &SHOW).await;
    let names = json!(["MCPTEST_G", "MCPTEST_S", "host"]);
    let g = c.call("show_environment", json!({"names": names})).await;
    assert_eq!(
        values(&g, "variables"),
        vec![
            ("MCPTEST_G".into(), json!("global value")),
            ("MCPTEST_S".into(), json!("")),
            ("host".into(), Value::Null)
        ],
        "{g:#}"
    );
    assert_eq!(
        (
            g["variables"][2]["readable"].as_bool(),
            g["variables"][0]["readable"].as_bool()
        ),
        (Some(false), Some(true))
    );
    let s = c
        .call(
            "show_environment",
            json!({"names": names, "session": "other"}),
        )
        .await;
    assert_eq!(s["context"]["kind"], "session");
    assert_eq!(
        values(&s, "variables")[..2],
        [
            ("MCPTEST_G".to_string(), json!("override")),
            ("MCPTEST_S".to_string(), json!("only other"))
        ],
        "{s:#}"
    );
    let m = c
        .call(
            "show_environment",
            json!({"names": ["MCPTEST_G"], "session": "main"}),
        )
        .await;
    assert_eq!(m["variables"][0]["value"], json!("global value"));
    let t = call_fail(&c, "show_environment", json!({"names": ["A-B"]})).await;
    assert!(
        t.contains("argument /names/0: must match the pattern"),
        "{t}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_hooks_lists_the_entries_of_each_context() {
    let srv = TmuxServer::start();
    two_sessions_with_a_linked_window(&srv);
    let window = srv
        .tmux(&[
            "display-message",
            "-p",
            "-t",
            "other:second",
            "#{window_id}",
        ])
        .trim()
        .to_string();
    let pane = srv
        .tmux(&["display-message", "-p", "-t", "other:second", "#{pane_id}"])
        .trim()
        .to_string();
    srv.tmux(&["set-hook", "-g", "after-new-window[3]", "display-message x"]);
    srv.tmux(&["set-hook", "-gw", "pane-exited", "display-message gw"]);
    srv.tmux(&[
        "set-hook",
        "-t",
        "other",
        "client-attached",
        "display-message -p y",
    ]);
    srv.tmux(&[
        "set-hook",
        "-w",
        "-t",
        &window,
        "pane-exited",
        "display-message w",
    ]);
    srv.tmux(&[
        "set-hook",
        "-p",
        "-t",
        &pane,
        "pane-focus-in",
        "display-message p",
    ]);
    let c = McpClient::attach(&srv, &SHOW).await;
    let entries = |v: &Value| {
        v["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["name"].as_str().unwrap().to_string(),
                    h["index"].as_u64().unwrap(),
                    h["command"].as_str().unwrap().to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let e = |n: &str, i: u64, cmd: &str| (n.to_string(), i, cmd.to_string());
    let g = c.call("show_hooks", json!({})).await;
    assert_eq!(
        entries(&g),
        vec![
            e("after-new-window", 3, "display-message x"),
            e("pane-exited", 0, "display-message gw")
        ],
        "{g:#}"
    );
    let s = c.call("show_hooks", json!({"session": "other"})).await;
    assert_eq!(
        entries(&s),
        vec![e("client-attached", 0, "display-message -p y")],
        "{s:#}"
    );
    assert_eq!(
        entries(&c.call("show_hooks", json!({"session": "main"})).await),
        vec![]
    );
    assert_eq!(
        entries(&c.call("show_hooks", json!({"window": window})).await),
        vec![e("pane-exited", 0, "display-message w")]
    );
    assert_eq!(
        entries(&c.call("show_hooks", json!({"pane": pane})).await),
        vec![e("pane-focus-in", 0, "display-message p")]
    );
    let t = call_fail(&c, "show_hooks", json!({"window": "%1"})).await;
    assert!(
        t.contains("argument /window: must match the pattern"),
        "{t}"
    );
    c.close().await;
}

// ---------------------------------------------------------------------------
// search_panes
// ---------------------------------------------------------------------------

/// A new session `name` (80x10) whose pane prints `lines` and sleeps; its pane
/// id once the last line is on tmux's screen.
fn printing_session(srv: &TmuxServer, name: &str, lines: &[&str]) -> String {
    let script = srv.dir().join(format!("{name}.sh"));
    let body: String = lines
        .iter()
        .map(|l| format!("printf '%s\\n' {}\n", sh_quote(l)))
        .collect();
    std::fs::write(&script, format!("{body}exec sleep 1000\n")).unwrap();
    let id = srv
        .tmux(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "80",
            "-y",
            "10",
            "-P",
            "-F",
            "#{pane_id}",
            &format!("sh {}", sh_quote(script.to_str().unwrap())),
        ])
        .trim()
        .to_string();
    let last = lines.last().unwrap().to_string();
    poll(Duration::from_secs(5), || {
        srv.tmux(&["capture-pane", "-p", "-S", "-", "-t", &id])
            .contains(&last)
            .then_some(())
    })
    .expect("pane output never appeared");
    id
}

/// (paneId, lineNumber, text) of each match.
fn hits(found: &Value) -> Vec<(String, u64, String)> {
    found["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["paneId"].as_str().unwrap().to_string(),
                m["lineNumber"].as_u64().unwrap(),
                m["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_panes_literal_regex_case_caps_and_paging() {
    let srv = TmuxServer::start();
    let a = printing_session(
        &srv,
        "s1",
        &["needle one", "NEEDLE two", "hay a.c", "needle three"],
    );
    let b = printing_session(&srv, "s2", &["needle four"]);
    let c = McpClient::attach(&srv, &[]).await;
    let generation = generation(&c).await;
    let h = |p: &str, n: u64, t: &str| (p.to_string(), n, t.to_string());

    let f = c.call("search_panes", json!({"pattern": "needle"})).await;
    assert_eq!(
        hits(&f),
        vec![
            h(&a, 1, "needle one"),
            h(&a, 4, "needle three"),
            h(&b, 1, "needle four")
        ],
        "{f:#}"
    );
    assert_eq!(
        (
            f["panesSearched"].as_u64(),
            f["panesMatched"].as_u64(),
            f["totalMatches"].as_u64()
        ),
        (Some(3), Some(2), Some(3)),
        "main's pane is searched too"
    );
    // The generation once; each match placed as `session:window.pane`.
    assert_eq!(f["generation"], json!(generation), "{f:#}");
    let m = &f["matches"][0];
    assert_eq!(m["at"], json!(["s1:0.0"]), "{m:#}");
    assert!(
        m.get("ref").is_none() && m.get("placements").is_none(),
        "{m:#}"
    );
    // Flags at false, empty lists and a 0 offset are left out.
    for k in [
        "offset",
        "nextOffset",
        "pageByteClamped",
        "panesTruncated",
        "panesSkipped",
        "panesFailed",
        "paneLimitClamped",
        "effectiveScrollbackLines",
        "scrollbackClamped",
        "matchingClamped",
    ] {
        assert!(f.get(k).is_none(), "{k} at its default: {f:#}");
    }
    // Line numbers index tmux's own capture of the visible screen.
    let own: Vec<String> = srv
        .tmux(&["capture-pane", "-p", "-t", &a])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(own[3], "needle three");

    let f = c
        .call(
            "search_panes",
            json!({"pattern": "needle", "matchCase": false, "session": "s1"}),
        )
        .await;
    assert_eq!(
        hits(&f),
        vec![
            h(&a, 1, "needle one"),
            h(&a, 2, "NEEDLE two"),
            h(&a, 4, "needle three")
        ],
        "{f:#}"
    );
    let f = c.call("search_panes", json!({"pattern": "a.c"})).await;
    assert_eq!(hits(&f), vec![h(&a, 3, "hay a.c")], "a literal dot");
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "needle (one|four)$", "regex": true}),
        )
        .await;
    assert_eq!(
        hits(&f),
        vec![h(&a, 1, "needle one"), h(&b, 1, "needle four")]
    );
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "needle", "maxMatchesPerPane": 1}),
        )
        .await;
    assert_eq!(
        hits(&f),
        vec![h(&a, 1, "needle one"), h(&b, 1, "needle four")]
    );
    assert_eq!(f["panesTruncated"], json!([a]));

    // Pages put together are the whole result.
    let mut paged = Vec::new();
    let mut offset = Some(0);
    while let Some(o) = offset {
        let p = c
            .call(
                "search_panes",
                json!({"pattern": "needle", "limit": 2, "offset": o}),
            )
            .await;
        paged.extend(hits(&p));
        offset = p["nextOffset"].as_u64();
        assert!(paged.len() <= 3, "{p:#}");
    }
    assert_eq!(
        paged,
        vec![
            h(&a, 1, "needle one"),
            h(&a, 4, "needle three"),
            h(&b, 1, "needle four")
        ]
    );

    let f = c
        .call(
            "search_panes",
            json!({"pattern": "x", "scrollbackLines": 100000}),
        )
        .await;
    assert_eq!(
        (
            f["scrollbackClamped"].as_bool(),
            f["effectiveScrollbackLines"].as_i64()
        ),
        (Some(true), Some(200)),
        "{f:#}"
    );

    let before = srv.status()["tmux_connections"].clone();
    let t = call_fail(&c, "search_panes", json!({"pattern": "(", "regex": true})).await;
    assert!(
        t.starts_with("Argument pattern: not a valid regular expression"),
        "{t}"
    );
    let t = call_fail(&c, "search_panes", json!({"pattern": ""})).await;
    assert!(t.contains("argument /pattern: must be at least 1"), "{t}");
    let t = call_fail(&c, "search_panes", json!({"pattern": "x", "limit": 0})).await;
    assert!(t.contains("argument /limit: must be >= 1"), "{t}");
    assert_eq!(
        srv.status()["tmux_connections"],
        before,
        "a refused call ran a tmux command"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_panes_skips_a_pane_whose_capture_would_run_a_hook() {
    let srv = TmuxServer::start();
    let a = printing_session(&srv, "s1", &["needle one"]);
    let b = printing_session(&srv, "s2", &["needle two"]);
    let trap = HookTrap::new(&srv);
    srv.tmux(&["set-hook", "-t", "s2", "after-capture-pane", &trap.command]);
    let c = McpClient::attach(&srv, &[]).await;
    let f = c.call("search_panes", json!({"pattern": "needle"})).await;
    assert_eq!(
        hits(&f),
        vec![(a.clone(), 1, "needle one".to_string())],
        "{f:#}"
    );
    let skipped = f["panesSkipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{f:#}");
    assert_eq!(skipped[0]["paneId"], json!(b));
    assert!(
        skipped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("after-capture-pane hook is set"),
        "{f:#}"
    );
    // The sentinel goes through a session without its own after-capture-pane
    // array (see HookTrap::fire_sentinel).
    srv.tmux(&["new-session", "-d", "-s", "sentinel"]);
    assert_eq!(
        trap.fire_sentinel(
            &srv,
            "after-capture-pane",
            &["capture-pane", "-p", "-t", "sentinel:"]
        ),
        "",
        "the skipped pane's hook ran"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_panes_stops_at_the_matching_budget() {
    let srv = TmuxServer::start();
    // 6 panes of 200 columns, each with 250 full rows in reach of a 200-line
    // scrollback search: about 50 KB each, 300 KB in all, over the 256 KiB budget.
    let row = "x".repeat(199);
    let script = format!("i=1; while [ $i -le 260 ]; do echo \"$i {row}\" | cut -c1-200; i=$((i+1)); done; exec sleep 1000");
    let mut ids = Vec::new();
    for n in 0..6 {
        let id = srv
            .tmux(&[
                "new-session",
                "-d",
                "-s",
                &format!("big{n}"),
                "-x",
                "200",
                "-y",
                "50",
                "-P",
                "-F",
                "#{pane_id}",
                "sh",
                "-c",
                &script,
            ])
            .trim()
            .to_string();
        ids.push(id);
    }
    for id in &ids {
        poll(Duration::from_secs(10), || {
            srv.tmux(&["capture-pane", "-p", "-t", id])
                .contains("260 xxx")
                .then_some(())
        })
        .expect("pane output never appeared");
    }
    let c = McpClient::attach(&srv, &[]).await;
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "no such text", "scrollbackLines": 200}),
        )
        .await;
    assert_eq!(f["matchingClamped"], json!(true), "{f:#}");
    // main's small pane, 5 big ones (≈ 251 KB), and the 6th, in which the budget runs out.
    assert_eq!(f["panesSearched"], json!(7), "{f:#}");
    // Within the budget, the same search completes (matchingClamped left
    // out: false).
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "no such text", "scrollbackLines": 200, "session": "big0"}),
        )
        .await;
    assert_eq!(
        (f.get("matchingClamped"), f["panesSearched"].as_u64()),
        (None, Some(1)),
        "{f:#}"
    );
    c.close().await;
}

/// tmux 3.5a crashes when a `#{L:…}` client loop expands the name, tty or
/// terminal of a client that is still connecting (found by the batch hook
/// trap: another agent's read connecting at the same moment). The client
/// records are read with only session-attached clients expanded; this drives
/// get_server_info beside a stream of connecting clients and checks that the
/// server lives. Without the guard, a 3.5a server died in 3 of 3 such runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_records_beside_connecting_clients_do_not_crash_tmux() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &[]).await;
    let sock = srv.socket_str().to_string();
    let connecting = std::thread::spawn(move || {
        for _ in 0..300 {
            let _ = std::process::Command::new("tmux")
                .args(["-S", &sock, "display-message", "-p", "x"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    });
    for _ in 0..150 {
        c.call("get_server_info", json!({})).await;
    }
    connecting.join().unwrap();
    assert!(
        srv.try_tmux(&["has-session"]).status.success(),
        "the tmux server died"
    );
    c.close().await;
}

/// `list_clients` (issue 40 item 4): opt-in, it names the person's terminal
/// client, its size and the pane it shows; a session filter keeps one
/// session's clients and an unknown session is refused by name. On tmux
/// before 3.5 the clients cannot be read hook-free, and it says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_clients_names_who_looks_at_which_pane() {
    let srv = TmuxServer::start();
    srv.tmux(&["new-session", "-d", "-s", "other"]);
    srv.tmux(&["split-window", "-d", "-t", "main:"]);
    let plain = McpClient::attach(&srv, &[]).await;
    assert!(
        !plain.tools().iter().any(|t| t.name == "list_clients"),
        "list_clients is opt-in"
    );
    plain.close().await;
    let person = TerminalClient::attach(&srv, "main", 80, 24);
    let c = McpClient::attach(
        &srv,
        &["--scope", "server", "--enable-tool", "list_clients"],
    )
    .await;
    let got = c.call("list_clients", json!({})).await;
    let shown = srv.tmux(&["display-message", "-p", "-t", "main:", "#{pane_id}"]);
    if tmux_at_least(3, 5) {
        assert_eq!(got["available"], json!(true), "{got:#}");
        let clients = got["clients"].as_array().unwrap();
        assert_eq!(clients.len(), 1, "the person's client only: {got:#}");
        let me = &clients[0];
        assert_eq!(
            (
                me["pid"].as_u64(),
                me["sessionName"].as_str(),
                me["width"].as_u64(),
                me["controlMode"].as_bool(),
                me["paneId"].as_str()
            ),
            (
                Some(person.pid as u64),
                Some("main"),
                Some(80),
                Some(false),
                Some(shown.trim())
            ),
            "{got:#}"
        );
        let other = c.call("list_clients", json!({ "session": "other" })).await;
        assert_eq!(other["clients"], json!([]), "{other:#}");
    } else {
        assert_eq!(
            (got["available"].as_bool(), &got["clients"]),
            (Some(false), &json!([])),
            "{got:#}"
        );
        let why = got["unavailableReason"].as_str().unwrap();
        assert!(why.contains("after-list-clients"), "{why}");
    }
    let refused = c
        .call_raw("list_clients", json!({ "session": "nosuch" }))
        .await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let text = format!("{:?}", refused.content);
    assert!(
        text.contains("Argument session") && text.contains("Nothing was sent to tmux"),
        "{text}"
    );
    drop(person);
    c.close().await;
}
