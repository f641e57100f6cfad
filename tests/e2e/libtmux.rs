//! `capture_pane` and `snapshot_pane` (libtmux family, docs/spec.md B.1/B.2)
//! against real tmux servers: the published contracts, text compared with
//! tmux's own `capture-pane`, range bounding (incl. the B.1 clamping example),
//! failures as `isError` text with a hint, pane views compared with tmux's
//! formats, placements of a window linked into several sessions, attended and
//! caller panes, and hook refusal.
//!
//! Every successful `structuredContent` is validated against the published
//! `outputSchema` by the harness (`McpClient::call`, `checked_structured`).

use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::Duration;
use tmux_mcp_e2e::*;

/// The opening every read-only libtmux description starts with (SPEC B.0).
const OPENER: &str = "Read pane output; accepts no client-supplied executable input. Returned content may be sensitive or untrusted. ";

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

/// The seed page of `tool` in tests/seeds/ (see its README): line 3 is the
/// tool's name in backquotes, line 9 the description the tool must publish.
fn seed_description(tool: &str, seed: &str) -> String {
    let text = seed_text(seed);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.get(2).map(|l| l.trim()),
        Some(format!("`{tool}`").as_str()),
        "tests/seeds/{seed} is not the seed of {tool}"
    );
    let line = lines
        .get(8)
        .unwrap_or_else(|| panic!("tests/seeds/{seed} has no line 9"))
        .trim_end();
    assert!(
        line.starts_with(OPENER),
        "line 9 of tests/seeds/{seed} is not a description: {line:?}"
    );
    line.to_string()
}

/// `tmux -u -S sock capture-pane -p -t PANE ARGS…` decoded the B.0 way:
/// split on LF, trailing empty lines removed.
fn tmux_lines(srv: &TmuxServer, pane: &str, args: &[&str]) -> Vec<String> {
    let out = Command::new("tmux")
        .arg("-u")
        .arg("-S")
        .arg(srv.socket())
        .args(["capture-pane", "-p", "-t", pane])
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .output()
        .expect("tmux capture-pane");
    assert!(
        out.status.success(),
        "tmux capture-pane failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("tmux output is UTF-8");
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// A session running `script` (sh), `w`x`h`; returns its pane id once
/// `ready` is on its screen.
fn session_with_script(
    srv: &TmuxServer,
    name: &str,
    w: u32,
    h: u32,
    script: &str,
    ready: &str,
) -> String {
    let path = srv.dir().join(format!("{name}.sh"));
    std::fs::write(&path, script).unwrap();
    let id = srv
        .tmux(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            &w.to_string(),
            "-y",
            &h.to_string(),
            "-P",
            "-F",
            "#{pane_id}",
            &format!("sh {}", sh_quote(path.to_str().unwrap())),
        ])
        .trim()
        .to_string();
    poll(Duration::from_secs(5), || {
        tmux_lines(srv, &id, &[])
            .iter()
            .any(|l| l.contains(ready))
            .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "pane output never appeared: {:?}",
            tmux_lines(srv, &id, &[])
        )
    });
    id
}

/// Prints `line 01`…`line NN`, then sleeps.
fn numbered(n: u32) -> String {
    format!("i=1\nwhile [ $i -le {n} ]; do printf 'line %02d\\n' $i; i=$((i+1)); done\nexec sleep 1000\n")
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A call that must fail the libtmux way: `isError`, text only.
async fn call_fail(c: &McpClient, name: &str, args: Value) -> String {
    let r = c.call_raw(name, args).await;
    assert_eq!(r.is_error, Some(true), "{name} should have failed: {r:?}");
    assert!(
        r.structured_content.is_none(),
        "a failure carries no structuredContent: {r:?}"
    );
    text_of(&r)
}

/// `display-message -p -t PANE FORMAT` (the test's own read; hooks are unset).
fn fmt(srv: &TmuxServer, pane: &str, format: &str) -> String {
    srv.tmux(&["display-message", "-p", "-t", pane, format])
        .trim_end_matches('\n')
        .to_string()
}

// ---------------------------------------------------------------------------
// 1. published contract
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn published_schemas_annotations_and_descriptions() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &[]).await;
    for (tool, seed) in [
        ("capture_pane", "001_7e18fe2348acf61f.txt"),
        ("snapshot_pane", "003_0128d3aa6d00c88b.txt"),
    ] {
        let t = c.tool(tool); // enabled by default
        for (kind, got) in [
            ("input", Value::Object((*t.input_schema).clone())),
            (
                "output",
                Value::Object((*t.output_schema.clone().expect("outputSchema")).clone()),
            ),
        ] {
            let want = contract_json(&format!("{tool}.{kind}.json"));
            assert_eq!(
                got, want,
                "{tool} {kind} schema differs from broker/contracts/{tool}.{kind}.json"
            );
            // Same keys in the same order.
            assert_eq!(
                serde_json::to_string(&got).unwrap(),
                serde_json::to_string(&want).unwrap(),
                "{tool} {kind} schema key order differs"
            );
        }
        let ann = serde_json::to_value(t.annotations.clone().expect("annotations")).unwrap();
        // Honest read hints, not the seed pages' MCP defaults (a client such as
        // Codex CLI refuses a tool hinted destructive when it runs unattended).
        assert_eq!(
            ann,
            json!({"title": t.annotations.as_ref().unwrap().title, "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}),
            "{tool} annotations"
        );
        assert_eq!(
            t.description.as_deref(),
            Some(seed_description(tool, seed).as_str()),
            "{tool} description"
        );
        assert!(t.description.as_deref().unwrap().starts_with(OPENER));
    }
    c.close().await;
}

// ---------------------------------------------------------------------------
// 2. capture_pane
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_pane_text_equals_tmux() {
    let srv = TmuxServer::start();
    // A short screen: 3 lines then blank rows (which disappear).
    let short = session_with_script(
        &srv,
        "short",
        40,
        10,
        "printf 'alpha\\n  beta  \\n漢字 wide\\n'\nexec sleep 1000\n",
        "漢字",
    );
    let c = McpClient::attach(&srv, &[]).await;
    let s = c.call("capture_pane", json!({"paneId": short})).await;
    let want = tmux_lines(&srv, &short, &[]);
    assert_eq!(
        want,
        ["alpha", "  beta", "漢字 wide"],
        "test premise (tmux trims trailing spaces)"
    );
    assert_eq!(s["text"], json!(want.join("\n")));
    assert_eq!(
        s["totalLines"],
        json!(3),
        "blank rows at the bottom are removed"
    );
    assert_eq!(s["returnedBytes"], json!(want.join("\n").len()));
    assert_eq!(
        (s["droppedLines"].clone(), s["omittedBytes"].clone()),
        (json!(0), json!(0))
    );
    assert_eq!(
        (s["rangeClamped"].clone(), s["byteClamped"].clone()),
        (json!(false), json!(false))
    );
    assert_eq!(
        (s["effectiveStart"].clone(), s["effectiveEnd"].clone()),
        (Value::Null, Value::Null),
        "default call on a short pane sends no -S/-E"
    );
    assert_eq!(s["paneId"], json!(short));
    // The text content is the text, without notices.
    let r = c.call_raw("capture_pane", json!({"paneId": short})).await;
    assert_eq!(text_of(&r), want.join("\n"));

    // A full screen with history.
    let hist = session_with_script(&srv, "hist", 40, 10, &numbered(30), "line 30");
    let screen = tmux_lines(&srv, &hist, &[]);
    assert_eq!(
        screen.first().map(String::as_str),
        Some("line 22"),
        "test premise: {screen:?}"
    );
    let s = c.call("capture_pane", json!({"paneId": hist})).await;
    assert_eq!(s["text"], json!(screen.join("\n")));
    assert_eq!(s["totalLines"], json!(9));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_pane_ranges_join_and_max_lines() {
    let srv = TmuxServer::start();
    let hist = session_with_script(&srv, "hist", 40, 10, &numbered(30), "line 30");
    let c = McpClient::attach(&srv, &[]).await;

    // start/end on tmux's scale: end -1 is the row above the screen top.
    let s = c
        .call(
            "capture_pane",
            json!({"paneId": hist, "start": -5, "end": -1}),
        )
        .await;
    let want = tmux_lines(&srv, &hist, &["-S", "-5", "-E", "-1"]);
    assert_eq!(
        want,
        ["line 17", "line 18", "line 19", "line 20", "line 21"],
        "test premise"
    );
    assert_eq!(s["text"], json!(want.join("\n")));
    assert_eq!(
        (
            s["effectiveStart"].clone(),
            s["effectiveEnd"].clone(),
            s["rangeClamped"].clone()
        ),
        (json!(-5), json!(-1), json!(false))
    );

    // start only: -S sent, -E omitted (null).
    let s = c
        .call("capture_pane", json!({"paneId": hist, "start": -3}))
        .await;
    assert_eq!(
        s["text"],
        json!(tmux_lines(&srv, &hist, &["-S", "-3"]).join("\n"))
    );
    assert_eq!(
        (s["effectiveStart"].clone(), s["effectiveEnd"].clone()),
        (json!(-3), Value::Null)
    );
    assert!(
        s["text"].as_str().unwrap().starts_with("line 19\n"),
        "{s:#}"
    );

    // end only.
    let s = c
        .call("capture_pane", json!({"paneId": hist, "end": 2}))
        .await;
    assert_eq!(
        s["text"],
        json!(tmux_lines(&srv, &hist, &["-E", "2"]).join("\n"))
    );
    assert_eq!(
        (s["effectiveStart"].clone(), s["effectiveEnd"].clone()),
        (Value::Null, json!(2))
    );

    // maxLines narrows the default range to the last rows before tmux is asked.
    let r = c
        .call_raw("capture_pane", json!({"paneId": hist, "maxLines": 3}))
        .await;
    let s = r.structured_content.clone().unwrap();
    assert_eq!(
        (
            s["effectiveStart"].clone(),
            s["effectiveEnd"].clone(),
            s["rangeClamped"].clone()
        ),
        (json!(7), json!(9), json!(true))
    );
    assert_eq!(
        s["text"],
        json!("line 29\nline 30"),
        "row 9 is blank and removed"
    );
    assert_eq!(
        (
            s["totalLines"].clone(),
            s["droppedLines"].clone(),
            s["byteClamped"].clone()
        ),
        (json!(2), json!(0), json!(false))
    );
    assert_eq!(
        text_of(&r),
        "[capture range clamped: 7 through 9]\nline 29\nline 30"
    );

    // An inverted range is left to tmux (which swaps it).
    let s = c
        .call(
            "capture_pane",
            json!({"paneId": hist, "start": -1, "end": -4}),
        )
        .await;
    assert_eq!(
        s["text"],
        json!(tmux_lines(&srv, &hist, &["-S", "-1", "-E", "-4"]).join("\n"))
    );
    assert_eq!(s["rangeClamped"], json!(false));

    // joinWrapped: a 100-character line in a 40-column pane.
    let long = "x".repeat(60) + &"y".repeat(40);
    let wrap = session_with_script(
        &srv,
        "wrap",
        40,
        8,
        &format!("printf '%s\\n' {long}\nexec sleep 1000\n"),
        "yyyy",
    );
    let plain = c.call("capture_pane", json!({"paneId": wrap})).await;
    assert_eq!(
        plain["text"],
        json!(tmux_lines(&srv, &wrap, &[]).join("\n"))
    );
    assert_eq!(plain["totalLines"], json!(3));
    let joined = c
        .call("capture_pane", json!({"paneId": wrap, "joinWrapped": true}))
        .await;
    assert_eq!(
        joined["text"],
        json!(tmux_lines(&srv, &wrap, &["-J"]).join("\n"))
    );
    assert_eq!(joined["text"], json!(long));
    assert_eq!(joined["totalLines"], json!(1));
    let joined = c
        .call(
            "capture_pane",
            json!({"paneId": wrap, "joinWrapped": false}),
        )
        .await;
    assert_eq!(joined["totalLines"], json!(3));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_pane_clamping_example_and_byte_bound() {
    let srv = TmuxServer::start();
    // h=50, L=200, start:-1000 -> -150..49 (80 columns: the byte bound allows 390 rows).
    let tall = session_with_script(&srv, "tall", 80, 50, &numbered(400), "line 400");
    let c = McpClient::attach(&srv, &[]).await;
    let r = c
        .call_raw("capture_pane", json!({"paneId": tall, "start": -1000}))
        .await;
    let s = r.structured_content.clone().unwrap();
    assert_eq!(
        (
            s["effectiveStart"].clone(),
            s["effectiveEnd"].clone(),
            s["rangeClamped"].clone()
        ),
        (json!(-150), json!(49), json!(true)),
        "{s:#}"
    );
    assert_eq!(s["byteClamped"], json!(false));
    let want = tmux_lines(&srv, &tall, &["-S", "-150", "-E", "49"]);
    assert_eq!(s["text"], json!(want.join("\n")));
    assert_eq!(s["totalLines"], json!(want.len()));
    assert_eq!(
        s["droppedLines"],
        json!(0),
        "the line cap is applied before tmux is asked"
    );
    assert!(
        text_of(&r).starts_with("[capture range clamped: -150 through 49]\n"),
        "{}",
        text_of(&r)
    );
    // Over-large maxLines is clamped silently to the ceiling (same result).
    let s2 = c
        .call(
            "capture_pane",
            json!({"paneId": tall, "start": -1000, "maxLines": 5000}),
        )
        .await;
    assert_eq!(s2, s);
    // A smaller maxLines narrows further.
    let s = c
        .call(
            "capture_pane",
            json!({"paneId": tall, "start": -1000, "maxLines": 10}),
        )
        .await;
    assert_eq!(
        (s["effectiveStart"].clone(), s["effectiveEnd"].clone()),
        (json!(40), json!(49))
    );

    // 200 columns (session main, 200x50): 6401 bytes a row, 156 rows fit the ceiling.
    let s = c
        .call("capture_pane", json!({"paneId": "%0", "start": -1000}))
        .await;
    assert_eq!(
        (s["effectiveStart"].clone(), s["effectiveEnd"].clone()),
        (json!(-106), json!(49)),
        "{s:#}"
    );
    assert_eq!(
        (s["rangeClamped"].clone(), s["byteClamped"].clone()),
        (json!(true), json!(true))
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_pane_failures_are_text_with_a_hint() {
    let srv = TmuxServer::start();
    for i in 0..14 {
        srv.tmux(&["new-window", "-d", "-t", "main:", "sleep 1000"]);
        let _ = i;
    }
    let c = McpClient::attach(&srv, &[]).await;
    for tool in ["capture_pane", "snapshot_pane"] {
        let text = call_fail(&c, tool, json!({"paneId": "%999"})).await;
        let (reason, hint) = text
            .split_once("\n\n")
            .unwrap_or_else(|| panic!("no hint after a blank line: {text:?}"));
        assert_eq!(reason, "No pane %999 on this server.");
        assert!(hint.contains("%0 (main:0 "), "{hint}");
        assert!(hint.contains("%1 (main:1 "), "{hint}");
        assert!(
            !hint.contains("%12 ") && !hint.contains("%14 "),
            "at most 12 panes listed: {hint}"
        );
        assert!(
            hint.contains("3 more"),
            "says how many were left out: {hint}"
        );
        // Input validation names the field.
        let text = call_fail(&c, tool, json!({"paneId": "1"})).await;
        assert!(text.contains("paneId"), "{text}");
        let text = call_fail(&c, tool, json!({})).await;
        assert!(text.contains("paneId"), "{text}");
        let text = call_fail(&c, tool, json!({"paneId": "%0", "maxLines": 0})).await;
        assert!(text.contains("maxLines"), "{text}");
    }
    let text = call_fail(&c, "capture_pane", json!({"paneId": "%0", "start": "x"})).await;
    assert!(text.contains("start"), "{text}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hook_refusal_leaves_hook_unrun() {
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    let run = trap.command.as_str();
    let c = McpClient::attach(&srv, &[]).await;
    c.call("capture_pane", json!({"paneId": "%0"})).await;
    c.call("snapshot_pane", json!({"paneId": "%0"})).await;

    let refused = |why: &'static str| {
        let c = &c;
        async move {
            for tool in ["capture_pane", "snapshot_pane"] {
                let text = call_fail(c, tool, json!({"paneId": "%0"})).await;
                assert!(
                    text.starts_with(
                        "Refused to capture pane %0: an after-capture-pane hook is set"
                    ),
                    "{why}: {text}"
                );
                // The preflight sent nothing; the in-queue check (>= 3.5) ran in tmux.
                let nothing = if hook_check_in_queue() {
                    "nothing was captured and the hook did not run"
                } else {
                    "Nothing was sent"
                };
                assert!(text.contains(nothing), "{why}: {text}");
                assert!(text.contains("\n\n"), "{why}: a hint follows: {text}");
            }
        }
    };
    srv.tmux(&["set-hook", "-g", "after-capture-pane", run]);
    refused("global").await;
    srv.tmux(&["set-hook", "-gu", "after-capture-pane"]);
    c.call("capture_pane", json!({"paneId": "%0"})).await;

    srv.tmux(&["set-hook", "-t", "main", "after-capture-pane[4]", run]);
    refused("session").await;
    srv.tmux(&["set-hook", "-u", "-t", "main", "after-capture-pane[4]"]);

    srv.tmux(&["new-session", "-d", "-s", "other"]);
    srv.tmux(&["link-window", "-s", "main:0", "-t", "other:7"]);
    srv.tmux(&["set-hook", "-t", "other", "after-capture-pane", run]);
    refused("linking session").await;
    srv.tmux(&["set-hook", "-u", "-t", "other", "after-capture-pane"]);
    c.call("capture_pane", json!({"paneId": "%0"})).await;
    c.call("snapshot_pane", json!({"paneId": "%0"})).await;

    // The same hook, fired on purpose by tmux's own capture-pane, writes a
    // sentinel into the same file; a hook run by any refused call would have
    // landed before it. A fresh session: `main` and `other` keep the (now
    // empty) hook arrays of the steps above, which mask the global entry.
    srv.tmux(&["new-session", "-d", "-s", "sentinel"]);
    assert_eq!(
        trap.fire_sentinel(
            &srv,
            "after-capture-pane",
            &["capture-pane", "-p", "-t", "sentinel:"]
        ),
        "",
        "an after-capture-pane hook ran"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_other_after_hook_runs() {
    let srv = TmuxServer::start();
    let trap = HookTrap::at(srv.dir().join("hooks.log"));
    let armed = trap.arm_every_after_hook(&srv, &["after-capture-pane"]);
    assert!(
        armed.iter().any(|h| h == "after-list-panes")
            && armed.iter().any(|h| h == "after-display-message"),
        "{armed:?}"
    );
    // The sentinel: the test's own display-message fires the trapped
    // after-display-message entry. tmux finishes a command's hooks before the
    // command's client is done, so once the line is there, every hook of an
    // earlier command (the broker's included) is in the file before it.
    let sentinel = || srv.tmux(&["display-message", "-p", ""]);
    let c = McpClient::attach(&srv, &[]).await;
    // The trap caught the test's own set-hook commands and the broker's start;
    // start clean once they have all landed.
    sentinel();
    trap.before_sentinel("after-display-message");
    trap.clear();
    c.call(
        "capture_pane",
        json!({"paneId": "%0", "start": -5, "joinWrapped": true}),
    )
    .await;
    c.call("snapshot_pane", json!({"paneId": "%0"})).await;
    call_fail(&c, "capture_pane", json!({"paneId": "%77"})).await;
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
// 3. snapshot_pane
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_pane_matches_tmux() {
    let srv = TmuxServer::start();
    let cwd = srv.dir().join("work dir");
    std::fs::create_dir(&cwd).unwrap();
    let path = srv.dir().join("snap.sh");
    std::fs::write(
        &path,
        format!(
            "{}printf 'last line\\n'\nexec sleep 1000\n",
            numbered(30).replace("exec sleep 1000\n", "")
        ),
    )
    .unwrap();
    let id = srv
        .tmux(&[
            "new-session",
            "-d",
            "-s",
            "snap",
            "-x",
            "60",
            "-y",
            "12",
            "-c",
            cwd.to_str().unwrap(),
            "-P",
            "-F",
            "#{pane_id}",
            &format!("sh {}", sh_quote(path.to_str().unwrap())),
        ])
        .trim()
        .to_string();
    poll(Duration::from_secs(5), || {
        (fmt(&srv, &id, "#{pane_current_command}") == "sleep"
            && tmux_lines(&srv, &id, &[]).iter().any(|l| l == "last line"))
        .then_some(())
    })
    .expect("pane never settled");
    srv.tmux(&["select-pane", "-t", &id, "-T", "my title"]);
    srv.tmux(&["rename-window", "-t", &id, "my window"]);
    let c = McpClient::attach(&srv, &[]).await;

    let r = c.call_raw("snapshot_pane", json!({"paneId": id})).await;
    let s = c.call("snapshot_pane", json!({"paneId": id})).await;
    let p = &s["pane"];
    let row = srv.tmux(&["list-panes", "-t", &id, "-F", "#{pane_id}|#{pane_index}|#{pane_active}|#{pane_dead}|#{pane_width}|#{pane_height}|#{window_id}|#{window_name}|#{pane_current_command}|#{pane_current_path}|#{pane_title}|#{session_id}|#{window_index}"]);
    let f: Vec<&str> = row.trim().split('|').collect();
    assert_eq!(p["id"], json!(f[0]));
    assert_eq!(p["index"], json!(f[1].parse::<i64>().unwrap()));
    assert_eq!(p["active"], json!(f[2] == "1"));
    assert_eq!(p["dead"], json!(f[3] == "1"));
    assert_eq!(
        (p["width"].clone(), p["height"].clone()),
        (json!(60), json!(12))
    );
    assert_eq!(p["width"], json!(f[4].parse::<i64>().unwrap()));
    assert_eq!(p["height"], json!(f[5].parse::<i64>().unwrap()));
    assert_eq!(p["windowId"], json!(f[6]));
    assert_eq!(p["windowName"], json!(f[7]));
    assert_eq!(p["command"], json!(f[8]));
    assert_eq!(p["command"], json!("sleep"));
    assert_eq!(p["cwd"], json!(f[9]));
    assert!(p["cwd"].as_str().unwrap().ends_with("/work dir"), "{p:#}");
    assert_eq!(p["windowName"], json!("my window"));
    assert_eq!(p["title"], json!("my title"));
    assert_eq!(
        p["placements"],
        json!([{"index": f[12].parse::<i64>().unwrap(), "sessionId": f[11], "sessionName": "snap"}])
    );
    assert_eq!(
        (
            p["placementsComplete"].clone(),
            p["omittedPlacements"].clone()
        ),
        (json!(true), json!(0))
    );
    assert_eq!(
        (
            p["metadataComplete"].clone(),
            p["omittedMetadataBytes"].clone()
        ),
        (json!(true), json!(0))
    );
    assert_eq!(
        p["isCallerPane"],
        json!(false),
        "the client runs outside tmux"
    );
    assert_eq!(p["isAttended"], json!(false), "no client is attached");
    assert_eq!(
        s["cursorX"],
        json!(fmt(&srv, &id, "#{cursor_x}").parse::<i64>().unwrap())
    );
    assert_eq!(
        s["cursorY"],
        json!(fmt(&srv, &id, "#{cursor_y}").parse::<i64>().unwrap())
    );
    assert_eq!(
        (s["cursorX"].clone(), s["cursorY"].clone()),
        (json!(0), json!(11))
    );
    assert_eq!(
        (s["inMode"].clone(), s["scrollPosition"].clone()),
        (json!(0), json!(0))
    );
    let screen = tmux_lines(&srv, &id, &["-J"]);
    assert_eq!(s["content"], json!(screen.join("\n")));
    assert_eq!(screen.len(), 11, "test premise: {screen:?}");
    assert_eq!(s["droppedLines"], json!(0));
    let text = text_of(&r);
    let (line, body) = text.split_once('\n').unwrap();
    assert!(line.starts_with(&format!("{id} in snap:0 ")), "{line}");
    assert_eq!(body, screen.join("\n"));

    // maxLines keeps the last lines and says so.
    let r = c
        .call_raw("snapshot_pane", json!({"paneId": id, "maxLines": 2}))
        .await;
    let s = r.structured_content.clone().unwrap();
    assert_eq!(s["content"], json!(screen[9..].join("\n")));
    assert_eq!(s["droppedLines"], json!(9));
    assert!(
        text_of(&r).contains("\n[9 earlier lines omitted; "),
        "{}",
        text_of(&r)
    );

    // Copy mode: inMode and scrollPosition come from tmux.
    srv.tmux(&["copy-mode", "-t", &id]);
    srv.tmux(&["send-keys", "-t", &id, "-X", "-N", "3", "scroll-up"]);
    let s = c.call("snapshot_pane", json!({"paneId": id})).await;
    assert_eq!(s["inMode"], json!(1));
    assert_eq!(
        s["scrollPosition"],
        json!(fmt(&srv, &id, "#{scroll_position}").parse::<i64>().unwrap())
    );
    assert_eq!(s["scrollPosition"], json!(3));
    srv.tmux(&["send-keys", "-t", &id, "-X", "cancel"]);
    let s = c.call("snapshot_pane", json!({"paneId": id})).await;
    assert_eq!(
        (s["inMode"].clone(), s["scrollPosition"].clone()),
        (json!(0), json!(0))
    );

    // Dead panes are viewed (and captured) normally.
    srv.tmux(&["set-option", "-wg", "remain-on-exit", "on"]);
    let dead = srv
        .tmux(&[
            "new-window",
            "-d",
            "-t",
            "snap:",
            "-P",
            "-F",
            "#{pane_id}",
            "printf 'bye\\n'; sleep 0.3",
        ])
        .trim()
        .to_string();
    // tmux marks the pane dead and (once it has reaped the process) draws its
    // notice; under load the two can be far apart, so compare with tmux's own
    // capture until the screen has settled.
    poll(Duration::from_secs(5), || {
        (fmt(&srv, &dead, "#{pane_dead}") == "1").then_some(())
    })
    .expect("pane never died");
    let mut last = Value::Null;
    let mut settled = false;
    for _ in 0..50 {
        let before = tmux_lines(&srv, &dead, &["-J"]).join("\n");
        let s = c.call("snapshot_pane", json!({"paneId": dead})).await;
        assert_eq!(s["pane"]["dead"], json!(true), "{s:#}");
        let after = tmux_lines(&srv, &dead, &["-J"]).join("\n");
        if before == after && s["content"] == json!(after) {
            settled = true;
            break;
        }
        last = s;
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        settled,
        "snapshot_pane content never matched tmux's capture of the dead pane: {last:#}"
    );
    let s = c
        .call("capture_pane", json!({"paneId": dead, "start": -20}))
        .await;
    assert_eq!(
        s["text"],
        json!(tmux_lines(&srv, &dead, &["-S", "-20"]).join("\n"))
    );
    assert!(s["text"].as_str().unwrap().starts_with("bye"), "{s:#}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_pane_placements_of_a_linked_window() {
    let srv = TmuxServer::start();
    let id = srv
        .tmux(&[
            "new-session",
            "-d",
            "-s",
            "snap",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    // Sessions $2..$10 so that $10 sorts after $2 only when compared as numbers.
    for i in 2..=10 {
        srv.tmux(&["new-session", "-d", "-s", &format!("s{i}")]);
    }
    assert_eq!(fmt(&srv, "s10:", "#{session_id}"), "$10", "test premise");
    srv.tmux(&["link-window", "-s", "snap:0", "-t", "s10:3"]);
    srv.tmux(&["link-window", "-s", "snap:0", "-t", "s2:4"]);
    let c = McpClient::attach(&srv, &[]).await;
    let s = c.call("snapshot_pane", json!({"paneId": id})).await;
    assert_eq!(
        s["pane"]["placements"],
        json!([
            {"index": 0, "sessionId": "$1", "sessionName": "snap"},
            {"index": 4, "sessionId": "$2", "sessionName": "s2"},
            {"index": 3, "sessionId": "$10", "sessionName": "s10"},
        ])
    );
    assert_eq!(s["pane"]["windowId"], json!(fmt(&srv, &id, "#{window_id}")));
    assert_eq!(s["pane"]["placementsComplete"], json!(true));
    // capture_pane works through a linked window too.
    let cap = c.call("capture_pane", json!({"paneId": id})).await;
    assert_eq!(cap["text"], json!(tmux_lines(&srv, &id, &[]).join("\n")));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_pane_attended_follows_current_window_and_zoom() {
    let srv = TmuxServer::start();
    let a = srv
        .tmux(&[
            "new-session",
            "-d",
            "-s",
            "seen",
            "-x",
            "80",
            "-y",
            "24",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    let b = srv
        .tmux(&[
            "split-window",
            "-d",
            "-t",
            &a,
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    let hidden = srv
        .tmux(&[
            "new-window",
            "-d",
            "-t",
            "seen:",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    let c = McpClient::attach(&srv, &[]).await;
    // snapshot_pane's isAttended, and list_sessions' summary saying the same
    // of the pane (one rule, B.2.2), its total counting each pane once.
    let attended = |id: String| {
        let c = &c;
        async move {
            let one =
                c.call("snapshot_pane", json!({"paneId": id})).await["pane"]["isAttended"].clone();
            let listed = c.call("list_sessions", json!({})).await;
            let mut seen: Vec<&Value> = listed["sessions"]
                .as_array()
                .unwrap()
                .iter()
                // Left out of a lean record when empty.
                .flat_map(|s| {
                    s.get("attendedPanes")
                        .map_or(&[][..], |a| a.as_array().unwrap())
                })
                .collect();
            seen.sort_by_key(|v| v.to_string());
            seen.dedup();
            assert_eq!(
                json!(seen.contains(&&json!(id))),
                one,
                "list_sessions on {id}: {listed}"
            );
            // A count of 0 is left out.
            assert_eq!(
                listed.get("attendedCount").unwrap_or(&json!(0)),
                &json!(seen.len()),
                "{listed}"
            );
            one
        }
    };
    assert_eq!(attended(a.clone()).await, json!(false), "nobody attached");

    let control = ControlClient::attach(&srv, "seen");
    // A control-mode client is a program, not a person (B.2.2). From 3.5 the
    // broker asks the clients (`L:`); before, the table cannot tell them apart.
    assert_eq!(
        attended(a.clone()).await,
        json!(!tmux_at_least(3, 5)),
        "attended through a control client only"
    );
    drop(control);
    let _person = TerminalClient::attach(&srv, "seen", 100, 30);
    assert_eq!(
        attended(a.clone()).await,
        json!(true),
        "current window of an attached session"
    );
    assert_eq!(
        attended(b.clone()).await,
        json!(true),
        "every pane of an unzoomed current window"
    );
    assert_eq!(
        attended(hidden.clone()).await,
        json!(false),
        "not the session's current window"
    );
    assert_eq!(
        attended("%0".to_string()).await,
        json!(false),
        "session main has no client"
    );

    srv.tmux(&["resize-pane", "-Z", "-t", &a]);
    assert_eq!(fmt(&srv, &a, "#{window_zoomed_flag}"), "1", "test premise");
    assert_eq!(
        attended(a.clone()).await,
        json!(true),
        "the zoomed (active) pane"
    );
    assert_eq!(
        attended(b.clone()).await,
        json!(false),
        "hidden behind the zoomed pane"
    );
    srv.tmux(&["resize-pane", "-Z", "-t", &a]);
    assert_eq!(attended(b.clone()).await, json!(true));
    srv.tmux(&["select-window", "-t", &hidden]);
    assert_eq!(
        (attended(hidden.clone()).await, attended(a.clone()).await),
        (json!(true), json!(false)),
        "the person's session switched windows"
    );
    c.close().await;
}

// ---------------------------------------------------------------------------
// 4. caller pane and scope (the relay runs inside a pane; FIFO technique)
// ---------------------------------------------------------------------------

/// The relay in a new window of `main`, surviving its own pane being closed.
fn relay_in_pane(srv: &TmuxServer, label: &str, extra: &[&str]) -> (LineChannel, Value, String) {
    let r = PaneRelay::start(srv, label, extra, true);
    (r.channel, r.tools, r.pane)
}

#[test]
fn caller_pane_and_session_scope() {
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
    let (mut ch, tools, me) = relay_in_pane(&srv, "caller", &["--scope", "session"]);
    let mut id = 10;
    let mut call = |ch: &mut LineChannel, name: &str, args: Value| {
        id += 1;
        ch.request(id, "tools/call", json!({ "name": name, "arguments": args }))
    };
    let s = checked_structured(
        &tools,
        "snapshot_pane",
        &call(&mut ch, "snapshot_pane", json!({"paneId": me})),
    );
    assert_eq!(s["pane"]["isCallerPane"], json!(true), "{s:#}");
    let s = checked_structured(
        &tools,
        "snapshot_pane",
        &call(&mut ch, "snapshot_pane", json!({"paneId": "%0"})),
    );
    assert_eq!(s["pane"]["isCallerPane"], json!(false));
    checked_structured(
        &tools,
        "capture_pane",
        &call(&mut ch, "capture_pane", json!({"paneId": "%0"})),
    );

    // A pane of another session is out of this session's scope.
    for tool in ["capture_pane", "snapshot_pane"] {
        let resp = call(&mut ch, tool, json!({"paneId": other}));
        let result = &resp["result"];
        assert_eq!(result["isError"], json!(true), "{resp}");
        assert!(result.get("structuredContent").is_none(), "{resp}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with(&format!("Pane {other} is outside this session's scope.")),
            "{text}"
        );
        // Unknown panes are listed from what this session may see only.
        let resp = call(&mut ch, tool, json!({"paneId": "%999"}));
        let text = resp["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            text.contains(&format!("{me} (main:")) && !text.contains(&format!("{other} (")),
            "{text}"
        );
    }
    drop(ch);
}
