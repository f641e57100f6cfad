//! `--toolset python` (issue "The libtmux family", item 5): `capture_pane` as
//! tmux-python/libtmux-mcp spells it (docs/spec.md C.0/C.1, seed 004), against a
//! real tmux server: the published input schema equals the contract exactly,
//! the annotations and description equal the seed's, text compared with
//! tmux's own `capture-pane -p`, the truncation header, pane resolution from
//! session and window, and errors that name what is wrong; `capture_since`
//! in the reference's fields; `search_panes` (C.3): matched lines compared
//! with tmux's own `capture-pane -p -J`, case, regex, the last N lines per
//! pane, paging by pane, the capture range, sessions, geometry, scope and the
//! caller, format-looking patterns never expanded, bad input and the hook trap.

use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::Duration;
use tmux_mcp_e2e::*;

const SEED: &str = "004_4f0cb7a14343f393.txt";

/// The seed page's description (the paragraphs between the language list and
/// "All Python tools") and its annotations (the last JSON block).
fn seed() -> (String, Value) {
    let text = seed_text(SEED);
    assert_eq!(
        text.lines().next().map(str::trim),
        Some("capture_pane"),
        "tests/seeds/{SEED} is not the capture_pane seed"
    );
    let body = text
        .split("\nSwift\n")
        .nth(1)
        .expect("language list")
        .split("\nAll Python tools")
        .next()
        .unwrap();
    let description = body.trim().split("\n\n").collect::<Vec<_>>().join("\n\n");
    let ann = text.rsplit("Tool annotations").next().unwrap();
    (
        description,
        serde_json::from_str(ann.trim()).expect("annotations JSON"),
    )
}

/// `tmux capture-pane -p -t PANE ARGS…`, trailing empty lines removed.
fn tmux_lines(srv: &TmuxServer, pane: &str, args: &[&str]) -> Vec<String> {
    let out = Command::new("tmux")
        .arg("-u")
        .arg("-S")
        .arg(srv.socket())
        .args(["capture-pane", "-p", "-t", pane])
        .args(args)
        .env_remove("TMUX")
        .stdin(Stdio::null())
        .output()
        .expect("tmux");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// A detached session `name` printing `line 001`…`line N`, then sleeping.
fn session_printing(srv: &TmuxServer, name: &str, n: u32) -> String {
    let lines: Vec<String> = (1..=n).map(|i| format!("line {i:03}")).collect();
    session_showing(srv, name, 20, &lines)
}

/// A detached session `name` (80 columns, `height` rows) whose pane prints
/// `lines` and sleeps; its pane id once the last line is in tmux's grid.
fn session_showing(srv: &TmuxServer, name: &str, height: u32, lines: &[String]) -> String {
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
            &height.to_string(),
            "-P",
            "-F",
            "#{pane_id}",
            &format!("sh {}", sh_quote(script.to_str().unwrap())),
        ])
        .trim()
        .to_string();
    let last = lines.last().expect("a line to wait for").clone();
    poll(Duration::from_secs(5), || {
        tmux_lines(srv, &id, &["-J", "-S", "-"])
            .contains(&last)
            .then_some(())
    })
    .unwrap_or_else(|| panic!("{name} never printed {last:?}"));
    // Records compared with tmux's own read name the program and the window:
    // wait until the script has exec'd sleep and tmux has renamed the window
    // after it (automatic-rename runs on a timer, after the output).
    poll(Duration::from_secs(5), || {
        let now = srv.tmux(&[
            "display-message",
            "-p",
            "-t",
            &id,
            "#{pane_current_command} #{window_name}",
        ]);
        (now.trim() == "sleep sleep").then_some(())
    })
    .unwrap_or_else(|| panic!("{name} never settled on sleep"));
    id
}

async fn result_of(c: &McpClient, args: Value) -> String {
    c.call("capture_pane", args).await["result"]
        .as_str()
        .expect("result is a string")
        .to_string()
}

async fn error_of(c: &McpClient, args: Value) -> String {
    let r = c.call_raw("capture_pane", args).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(r.structured_content.is_none(), "{r:?}");
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_capture_pane_publishes_the_contract_and_the_seed() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &["--toolset", "python"]).await;
    let t = c.tool("capture_pane");
    let contract = contract_text("capture_pane.python.input.json");
    let contract: Value = serde_json::from_str(&contract).unwrap();
    let published = Value::Object((*t.input_schema).clone());
    assert_eq!(
        serde_json::to_string(&published).unwrap(),
        serde_json::to_string(&contract).unwrap(),
        "inputSchema (with key order) differs from the contract"
    );
    let (description, seed_annotations) = seed();
    assert_eq!(t.description.as_deref(), Some(description.as_str()));
    // Not the seed page's annotations (MCP's defaults, which its catalog never
    // set): the honest read hints, which clients act on.
    let published = serde_json::to_value(t.annotations.clone().unwrap()).unwrap();
    assert_eq!(
        seed_annotations["readOnlyHint"],
        json!(false),
        "the seed page shows MCP's default hints"
    );
    assert_eq!(
        (
            &published["readOnlyHint"],
            &published["destructiveHint"],
            &published["idempotentHint"],
            &published["openWorldHint"]
        ),
        (&json!(true), &json!(false), &json!(true), &json!(false)),
        "{published}"
    );
    // The default toolset keeps the libtmux-ts spelling.
    let d = McpClient::attach(&srv, &[]).await;
    let required = d.tool("capture_pane").input_schema.get("required").cloned();
    assert_eq!(
        required,
        Some(json!(["paneId"])),
        "the default capture_pane is the TypeScript contract"
    );
    // @mcp-toolset sets it for agents that do not say.
    srv.tmux(&["set-option", "-g", "@mcp-toolset", "python"]);
    let o = McpClient::attach(&srv, &[]).await;
    assert!(
        o.tool("capture_pane")
            .input_schema
            .contains_key("properties")
            && o.tool("capture_pane").input_schema["properties"]
                .get("max_lines")
                .is_some()
    );
    for x in [c, d, o] {
        x.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_capture_pane_reads_like_tmux_and_truncates_with_the_header() {
    let srv = TmuxServer::start();
    srv.tmux(&["set-option", "-g", "history-limit", "5000"]);
    let big = session_printing(&srv, "big", 700);
    let c = McpClient::attach(&srv, &["--toolset", "python"]).await;

    // The visible screen, as tmux prints it.
    assert_eq!(
        result_of(&c, json!({"pane_id": big})).await,
        tmux_lines(&srv, &big, &[]).join("\n")
    );
    // All history: more than 500 lines, so the last 500 under the header.
    let all = tmux_lines(&srv, &big, &["-S", "-"]);
    assert!(all.len() > 500, "{}", all.len());
    let got = result_of(&c, json!({"pane_id": big, "start": -1000})).await;
    let (head, rest) = got.split_once('\n').unwrap();
    assert_eq!(
        head,
        format!("[... truncated {} lines ...]", all.len() - 500)
    );
    assert_eq!(rest, all[all.len() - 500..].join("\n"));
    assert_eq!(rest.lines().last(), Some("line 700"));
    // null: no truncation; explicit max_lines; start/end passed as -S/-E.
    assert_eq!(
        result_of(
            &c,
            json!({"pane_id": big, "start": -1000, "max_lines": null})
        )
        .await,
        all.join("\n")
    );
    let got = result_of(&c, json!({"pane_id": big, "start": -1000, "max_lines": 3})).await;
    assert_eq!(
        got,
        format!(
            "[... truncated {} lines ...]\n{}",
            all.len() - 3,
            all[all.len() - 3..].join("\n")
        )
    );
    assert_eq!(
        result_of(&c, json!({"pane_id": big, "start": -5, "end": -3})).await,
        tmux_lines(&srv, &big, &["-S", "-5", "-E", "-3"]).join("\n")
    );

    // Errors name what is wrong and send nothing.
    let e = error_of(&c, json!({"pane_id": big, "max_lines": 0})).await;
    assert!(e.contains("max_lines must be a positive integer"), "{e}");
    let e = error_of(&c, json!({"pane_id": "%999"})).await;
    assert!(e.contains("%999"), "{e}");
    let e = error_of(&c, json!({"session_name": "nope"})).await;
    assert!(
        e.starts_with("Object not found: session \"nope\"") && e.contains("list_sessions"),
        "{e}"
    );
    let e = error_of(&c, json!({"pane_id": big, "socket_name": "elsewhere"})).await;
    assert!(
        e.contains("socket_name \"elsewhere\" names another tmux server"),
        "{e}"
    );
    let e = error_of(&c, json!({"pane_id": big, "lines": 3})).await;
    assert!(e.contains("lines"), "an unknown argument is named: {e}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_capture_pane_resolves_session_window_and_first_session() {
    let srv = TmuxServer::start(); // session "main", pane %0
    let first = session_printing(&srv, "aaa", 3); // sorts first
    let second_window = srv.tmux(&[
        "new-window",
        "-d",
        "-t",
        "aaa:",
        "-P",
        "-F",
        "#{window_id} #{pane_id}",
        "sh -c 'echo second; exec sleep 1000'",
    ]);
    let (win, win_pane) = second_window.trim().split_once(' ').unwrap();
    poll(Duration::from_secs(5), || {
        tmux_lines(&srv, win_pane, &[])
            .iter()
            .any(|l| l == "second")
            .then_some(())
    })
    .expect("second window output");
    let main_pane = session_printing(&srv, "mmm", 2);

    let c = McpClient::attach(&srv, &["--toolset", "python", "--scope", "server"]).await;
    // No target: the first session (by name), its first window, its first pane.
    assert_eq!(
        result_of(&c, json!({})).await,
        tmux_lines(&srv, &first, &[]).join("\n")
    );
    assert_eq!(
        result_of(&c, json!({"session_name": "mmm"})).await,
        tmux_lines(&srv, &main_pane, &[]).join("\n")
    );
    let main_id = srv
        .tmux(&["display-message", "-p", "-t", "mmm:", "#{session_id}"])
        .trim()
        .to_string();
    assert_eq!(
        result_of(&c, json!({"session_id": main_id, "session_name": "aaa"})).await,
        tmux_lines(&srv, &main_pane, &[]).join("\n"),
        "session_id wins over session_name"
    );
    assert_eq!(
        result_of(&c, json!({"window_id": win, "session_name": "mmm"})).await,
        "second",
        "window_id wins over the session arguments"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_capture_pane_refuses_while_a_capture_hook_is_set() {
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    srv.tmux(&["set-hook", "-g", "after-capture-pane", &trap.command]);
    let c = McpClient::attach(&srv, &["--toolset", "python"]).await;
    let e = error_of(&c, json!({"pane_id": "%0"})).await;
    assert!(e.contains("after-capture-pane"), "{e}");
    let before = trap.fire_sentinel(
        &srv,
        "after-display-message",
        &["display-message", "-p", ""],
    );
    assert_eq!(before, "", "a hook ran for the refused capture");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_capture_since_returns_new_lines_in_the_reference_fields() {
    let srv = TmuxServer::start();
    let fifo = srv.dir().join("py-since.fifo");
    mkfifo(&fifo);
    let script = format!(
        "while true; do cat {}; done",
        sh_quote(fifo.to_str().unwrap())
    );
    let pane = srv
        .tmux(&[
            "new-session",
            "-d",
            "-s",
            "since",
            "-x",
            "60",
            "-y",
            "10",
            "-P",
            "-F",
            "#{pane_id}",
            &script,
        ])
        .trim()
        .to_string();
    let emit = |text: &str| {
        let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    };
    emit("first line\n");
    poll(Duration::from_secs(5), || {
        tmux_lines(&srv, &pane, &[])
            .iter()
            .any(|l| l == "first line")
            .then_some(())
    })
    .expect("first line shown");
    let c = McpClient::attach(&srv, &["--toolset", "python", "--scope", "server"]).await;
    let schema = Value::Object((*c.tool("capture_since").input_schema).clone());
    assert!(
        schema["properties"].get("pane_id").is_some()
            && schema["properties"].get("paneId").is_none(),
        "{schema}"
    );
    let seed = c.call("capture_since", json!({"pane_id": pane})).await;
    assert_eq!(seed["pane_id"], json!(pane));
    assert!(
        seed["lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == "first line"),
        "{seed:#}"
    );
    assert_eq!(
        (seed["lines_missed"].as_bool(), seed["truncated"].as_bool()),
        (Some(false), Some(false))
    );
    assert!(seed["elapsed_seconds"].as_f64().is_some());
    emit("second line\nthird line\n");
    poll(Duration::from_secs(5), || {
        tmux_lines(&srv, &pane, &[])
            .iter()
            .any(|l| l == "third line")
            .then_some(())
    })
    .expect("new lines shown");
    // The cursor alone names the pane.
    let next = c
        .call("capture_since", json!({"cursor": seed["cursor"]}))
        .await;
    assert_eq!(
        next["lines"],
        json!(["second line", "third line"]),
        "{next:#}"
    );
    let capped = c
        .call(
            "capture_since",
            json!({"cursor": seed["cursor"], "max_lines": 1}),
        )
        .await;
    assert_eq!(
        (
            capped["lines"].clone(),
            capped["truncated"].as_bool(),
            capped["truncated_lines"].as_u64()
        ),
        (json!(["third line"]), Some(true), Some(1)),
        "{capped:#}"
    );
    let e = error_of_tool(
        &c,
        "capture_since",
        json!({"pane_id": pane, "max_bytes": 0}),
    )
    .await;
    assert!(e.contains("max_bytes must be a positive integer"), "{e}");
    let e = error_of_tool(&c, "capture_since", json!({"cursor": "nope"})).await;
    assert!(e.contains("invalid capture_since cursor"), "{e}");
    c.close().await;
}

async fn error_of_tool(c: &McpClient, tool: &str, args: Value) -> String {
    let r = c.call_raw(tool, args).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------
// search_panes, the Python spelling (docs/spec.md C.3)
// ---------------------------------------------------------------------------

/// (pane id, matched lines) of each match, in result order.
fn matched(found: &Value) -> Vec<(String, Vec<String>)> {
    found["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["pane_id"].as_str().unwrap().to_string(),
                m["matched_lines"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect()
}

/// The last `n` lines of tmux's own `capture-pane -p -J ARGS…` of `pane` that `keep` accepts.
fn tmux_matching(
    srv: &TmuxServer,
    pane: &str,
    args: &[&str],
    n: usize,
    keep: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut capture = vec!["-J"];
    capture.extend_from_slice(args);
    let all: Vec<String> = tmux_lines(srv, pane, &capture)
        .into_iter()
        .filter(|l| keep(l))
        .collect();
    all[all.len().saturating_sub(n)..].to_vec()
}

fn has_ci(needle: &str) -> impl Fn(&str) -> bool + '_ {
    move |l: &str| l.to_lowercase().contains(&needle.to_lowercase())
}

fn display(srv: &TmuxServer, pane: &str, format: &str) -> String {
    srv.tmux(&["display-message", "-p", "-t", pane, format])
        .trim_end_matches('\n')
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_search_panes_publishes_the_reference_fields() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &["--toolset", "python"]).await;
    let t = c.tool("search_panes");
    let input = Value::Object((*t.input_schema).clone());
    assert_eq!(
        (
            input["type"].as_str(),
            input["additionalProperties"].as_bool(),
            &input["required"]
        ),
        (Some("object"), Some(false), &json!(["pattern"])),
        "{input:#}"
    );
    let keys = |v: &Value| {
        v.as_object()
            .unwrap_or_else(|| panic!("not an object: {v:#}"))
            .keys()
            .cloned()
            .collect::<std::collections::BTreeSet<String>>()
    };
    let want = |names: &[&str]| {
        names
            .iter()
            .map(|n| n.to_string())
            .collect::<std::collections::BTreeSet<String>>()
    };
    assert_eq!(
        keys(&input["properties"]),
        want(&[
            "pattern",
            "regex",
            "match_case",
            "session_name",
            "session_id",
            "content_start",
            "content_end",
            "max_matched_lines_per_pane",
            "limit",
            "offset",
            "socket_name",
            // Not the reference's: every tool's `server` (B.7), declared
            // since this toolset's objects are closed.
            "server"
        ])
    );
    for (k, d) in [
        ("regex", json!(false)),
        ("match_case", json!(false)),
        ("max_matched_lines_per_pane", json!(50)),
        ("limit", json!(500)),
        ("offset", json!(0)),
        ("session_name", Value::Null),
        ("content_start", Value::Null),
    ] {
        assert_eq!(
            input["properties"][k]["default"], d,
            "default of {k}: {input:#}"
        );
    }
    let output = Value::Object((*t.output_schema.clone().expect("outputSchema")).clone());
    assert_eq!(output["type"], "object");
    assert_eq!(
        keys(&output["properties"]),
        want(&[
            "matches",
            "truncated",
            "truncated_panes",
            "total_panes_matched",
            "offset",
            "limit"
        ])
    );
    let record = &output["properties"]["matches"]["items"]["properties"];
    assert_eq!(
        keys(record),
        want(&[
            "pane_id",
            "pane_left",
            "pane_top",
            "pane_right",
            "pane_bottom",
            "pane_at_left",
            "pane_at_right",
            "pane_at_top",
            "pane_at_bottom",
            "pane_tty",
            "pane_current_command",
            "pane_current_path",
            "window_id",
            "window_name",
            "session_id",
            "session_name",
            "matched_lines",
            "is_caller"
        ])
    );
    let ann = serde_json::to_value(t.annotations.clone().unwrap()).unwrap();
    assert_eq!(
        (
            ann["readOnlyHint"].as_bool(),
            ann["destructiveHint"].as_bool()
        ),
        (Some(true), Some(false)),
        "{ann}"
    );
    assert_eq!(
        t.meta.as_ref().and_then(|m| m.get("tmux-mcp/tier")),
        Some(&json!("readonly"))
    );
    // The default toolset keeps its own spelling.
    let d = McpClient::attach(&srv, &[]).await;
    assert!(d.tool("search_panes").input_schema["properties"]
        .get("matchCase")
        .is_some());
    for x in [c, d] {
        x.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_search_panes_matches_joined_lines_like_tmux() {
    let srv = TmuxServer::start();
    // 76 + 6 + 10 columns: "needle" spans the wrap at column 80, so only a
    // joined read (-J) finds it.
    let wrapped = format!("{}needle{}", "x".repeat(76), "y".repeat(10));
    let ran = srv.dir().join("ran");
    let never_shown = srv.dir().join("never-shown");
    let injected = format!("#{{pane_id}} and #(touch {})", ran.display());
    let a = session_showing(
        &srv,
        "s1",
        10,
        &[
            "Needle one",
            "needle two",
            "hay a.c",
            "abc",
            "NEEDLE three",
            &wrapped,
        ]
        .map(String::from),
    );
    let b = session_showing(
        &srv,
        "s2",
        10,
        &["needle four".to_string(), injected.clone()],
    );
    assert!(
        !tmux_lines(&srv, &a, &[])
            .iter()
            .any(|l| l.contains("needle") && l.starts_with('x')),
        "premise: without -J the wrapped needle is not on one line"
    );
    let c = McpClient::attach(&srv, &["--toolset", "python"]).await;

    // Literal and case-insensitive by default; panes by id; lines as tmux -J gives them.
    let f = c.call("search_panes", json!({"pattern": "needle"})).await;
    let want = vec![
        (
            a.clone(),
            tmux_matching(&srv, &a, &[], 50, has_ci("needle")),
        ),
        (
            b.clone(),
            tmux_matching(&srv, &b, &[], 50, has_ci("needle")),
        ),
    ];
    assert_eq!(matched(&f), want, "{f:#}");
    assert_eq!(
        want[0].1,
        ["Needle one", "needle two", "NEEDLE three", wrapped.as_str()],
        "the expectation itself"
    );
    assert_eq!(
        (
            f["truncated"].as_bool(),
            &f["truncated_panes"],
            f["total_panes_matched"].as_u64(),
            f["offset"].as_u64(),
            f["limit"].as_u64()
        ),
        (Some(false), &json!([]), Some(2), Some(0), Some(500)),
        "{f:#}"
    );
    let m = &f["matches"][0];
    let tmux_says = display(&srv, &a, "#{window_id}|#{window_name}|#{session_id}|#{session_name}|#{pane_tty}|#{pane_current_command}");
    let we_say = [
        "window_id",
        "window_name",
        "session_id",
        "session_name",
        "pane_tty",
        "pane_current_command",
    ]
    .map(|k| m[k].as_str().unwrap_or("?").to_string())
    .join("|");
    assert_eq!(we_say, tmux_says, "{m:#}");
    assert_eq!(
        m["is_caller"],
        Value::Null,
        "this client runs in no pane of the server"
    );

    // match_case, regex, a literal dot.
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "needle", "match_case": true}),
        )
        .await;
    assert_eq!(
        matched(&f),
        vec![
            (a.clone(), vec!["needle two".to_string(), wrapped.clone()]),
            (b.clone(), vec!["needle four".to_string()])
        ]
    );
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "needle (one|four)$", "regex": true}),
        )
        .await;
    assert_eq!(
        matched(&f),
        vec![
            (a.clone(), vec!["Needle one".to_string()]),
            (b.clone(), vec!["needle four".to_string()])
        ]
    );
    let f = c.call("search_panes", json!({"pattern": "a.c"})).await;
    assert_eq!(
        matched(&f),
        vec![(a.clone(), vec!["hay a.c".to_string()])],
        "a literal dot"
    );
    let f = c
        .call("search_panes", json!({"pattern": "^a.c$", "regex": true}))
        .await;
    assert_eq!(matched(&f), vec![(a.clone(), vec!["abc".to_string()])]);

    // Format-looking patterns are text: matched literally, expanded never.
    let f = c
        .call("search_panes", json!({"pattern": "#{pane_id}"}))
        .await;
    assert_eq!(
        matched(&f),
        vec![(b.clone(), vec![injected.clone()])],
        "{f:#}"
    );
    let f = c
        .call(
            "search_panes",
            json!({"pattern": format!("#(touch {})", ran.display())}),
        )
        .await;
    assert_eq!(
        matched(&f),
        vec![(b.clone(), vec![injected.clone()])],
        "{f:#}"
    );
    let f = c.call("search_panes", json!({"pattern": format!("#(touch {})", never_shown.display()), "regex": false, "match_case": true})).await;
    assert_eq!(matched(&f), vec![]);
    // Sentinel: a format job of the test's own, through tmux's format path;
    // once it has run, a job our searches had started would have run too.
    let sentinel = srv.dir().join("sentinel");
    // tmux ties a format job to the client that expanded it and may kill it
    // when that client exits before the job ran: ask again until one ran.
    poll(Duration::from_secs(10), || {
        srv.tmux(&[
            "display-message",
            "-p",
            &format!("#(touch {})", sentinel.display()),
        ]);
        std::thread::sleep(Duration::from_millis(50));
        sentinel.exists().then_some(())
    })
    .expect("the sentinel format job never ran");
    assert!(
        !ran.exists() && !never_shown.exists(),
        "a pattern was expanded as a tmux format"
    );

    // An invalid regex: the reference's message, nothing sent.
    let before = srv.status()["tmux_connections"].clone();
    let e = error_of_tool(&c, "search_panes", json!({"pattern": "(", "regex": true})).await;
    assert!(
        e.starts_with("Invalid regex pattern: ") && e.contains("Nothing was sent to tmux"),
        "{e}"
    );
    assert_eq!(
        srv.status()["tmux_connections"],
        before,
        "a refused call ran a tmux command"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_search_panes_keeps_the_last_lines_pages_and_reaches_history() {
    let srv = TmuxServer::start();
    let hits = |from: u32, to: u32| {
        (from..=to)
            .map(|i| format!("hit {i:02}"))
            .collect::<Vec<_>>()
    };
    let p1 = session_showing(&srv, "p1", 10, &hits(1, 30)); // 10 rows: the first ones only in history
    let p2 = session_showing(&srv, "p2", 10, &hits(1, 2));
    let p3 = session_showing(&srv, "p3", 10, &hits(1, 3));
    let c = McpClient::attach(&srv, &["--toolset", "python"]).await;
    let has = |s: &'static str| move |l: &str| l.contains(s);

    // The last N matched lines of a pane, and truncated.
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "hit", "max_matched_lines_per_pane": 3}),
        )
        .await;
    assert_eq!(
        matched(&f)[0],
        (p1.clone(), tmux_matching(&srv, &p1, &[], 3, has("hit"))),
        "{f:#}"
    );
    assert_eq!(matched(&f)[0].1, ["hit 28", "hit 29", "hit 30"]);
    assert_eq!(
        (
            f["truncated"].as_bool(),
            &f["truncated_panes"],
            f["total_panes_matched"].as_u64()
        ),
        (Some(true), &json!([]), Some(3)),
        "{f:#}"
    );

    // Paging by pane: limit / offset, truncated_panes after the page.
    let page = |o: u64| json!({"pattern": "hit", "limit": 1, "offset": o});
    let f = c.call("search_panes", page(0)).await;
    assert_eq!(
        (
            matched(&f).into_iter().map(|m| m.0).collect::<Vec<_>>(),
            &f["truncated_panes"],
            f["truncated"].as_bool()
        ),
        (vec![p1.clone()], &json!([p2, p3]), Some(true)),
        "{f:#}"
    );
    let f = c.call("search_panes", page(1)).await;
    assert_eq!(
        (matched(&f), &f["truncated_panes"]),
        (
            vec![(p2.clone(), vec!["hit 01".to_string(), "hit 02".to_string()])],
            &json!([p3])
        ),
        "{f:#}"
    );
    let f = c.call("search_panes", page(2)).await;
    assert_eq!(
        (
            matched(&f).len(),
            &f["truncated_panes"],
            f["truncated"].as_bool(),
            f["offset"].as_u64()
        ),
        (1, &json!([]), Some(false), Some(2)),
        "the last page of panes none of which was cut: {f:#}"
    );
    let f = c
        .call("search_panes", json!({"pattern": "hit", "limit": null}))
        .await;
    assert_eq!(
        (matched(&f).len(), &f["limit"], &f["truncated_panes"]),
        (3, &Value::Null, &json!([])),
        "{f:#}"
    );
    let f = c
        .call("search_panes", json!({"pattern": "hit", "offset": 5}))
        .await;
    assert_eq!(
        (matched(&f).len(), f["total_panes_matched"].as_u64()),
        (0, Some(3))
    );

    // content_start reaches into history, content_end bounds the range (tmux -S/-E).
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "hit 0", "session_name": "p1"}),
        )
        .await;
    assert_eq!(
        matched(&f),
        vec![],
        "hit 01…09 are above the visible screen: {f:#}"
    );
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "hit 0", "session_name": "p1", "content_start": -100}),
        )
        .await;
    assert_eq!(
        matched(&f),
        vec![(
            p1.clone(),
            tmux_matching(&srv, &p1, &["-S", "-100"], 50, has("hit 0"))
        )],
        "{f:#}"
    );
    assert_eq!(matched(&f)[0].1.len(), 9);
    let f = c.call("search_panes", json!({"pattern": "hit", "session_name": "p1", "content_start": -15, "content_end": -5})).await;
    let want = tmux_matching(&srv, &p1, &["-S", "-15", "-E", "-5"], 50, has("hit"));
    assert_eq!(
        (matched(&f), want.len()),
        (vec![(p1.clone(), want)], 11),
        "{f:#}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_search_panes_sessions_geometry_scope_and_caller() {
    let srv = TmuxServer::start();
    let a = session_showing(&srv, "s1", 10, &["needle a".to_string()]);
    let b = session_showing(&srv, "s2", 10, &["needle b".to_string()]);
    let s1 = display(&srv, &a, "#{session_id}");
    // A second pane beside `a` (geometry), and s1's window linked into s2 too.
    let a2 = srv
        .tmux(&[
            "split-window",
            "-d",
            "-h",
            "-t",
            &a,
            "-P",
            "-F",
            "#{pane_id}",
            "sh -c 'echo needle a2; exec sleep 1000'",
        ])
        .trim()
        .to_string();
    poll(Duration::from_secs(5), || {
        tmux_lines(&srv, &a2, &[])
            .iter()
            .any(|l| l == "needle a2")
            .then_some(())
    })
    .expect("a2's output");
    srv.tmux(&["link-window", "-d", "-s", "s1:0", "-t", "s2:5"]);
    let c = McpClient::attach(&srv, &["--toolset", "python"]).await;

    let ids = |f: &Value| matched(f).into_iter().map(|m| m.0).collect::<Vec<_>>();
    let f = c.call("search_panes", json!({"pattern": "needle"})).await;
    assert_eq!(
        ids(&f),
        vec![a.clone(), b.clone(), a2.clone()],
        "by pane id: {f:#}"
    );
    let geometry = "#{pane_left} #{pane_top} #{pane_right} #{pane_bottom} #{pane_at_left} #{pane_at_right} #{pane_at_top} #{pane_at_bottom}";
    for m in f["matches"].as_array().unwrap() {
        let id = m["pane_id"].as_str().unwrap();
        let ours: Vec<String> = ["pane_left", "pane_top", "pane_right", "pane_bottom"]
            .iter()
            .map(|k| m[k].to_string())
            .chain(
                [
                    "pane_at_left",
                    "pane_at_right",
                    "pane_at_top",
                    "pane_at_bottom",
                ]
                .iter()
                .map(|k| {
                    if m[k] == json!(true) {
                        "1".into()
                    } else if m[k] == json!(false) {
                        "0".into()
                    } else {
                        "?".into()
                    }
                }),
            )
            .collect();
        assert_eq!(
            ours.join(" "),
            display(&srv, id, geometry),
            "geometry of {id}: {m:#}"
        );
    }
    assert_eq!(
        f["matches"][2]["pane_at_left"],
        json!(false),
        "the split pane is not at the left edge: {f:#}"
    );
    assert_eq!(
        f["matches"][0]["session_name"],
        json!("s1"),
        "without a session: the pane's first session"
    );

    // One session: by name, by id (which wins), and through a linked window.
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "needle", "session_name": "s2"}),
        )
        .await;
    assert_eq!(
        ids(&f),
        vec![a.clone(), b.clone(), a2.clone()],
        "s1's window is linked into s2: {f:#}"
    );
    assert_eq!(
        f["matches"][0]["session_name"],
        json!("s2"),
        "the session searched: {f:#}"
    );
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "needle", "session_id": s1, "session_name": "s2"}),
        )
        .await;
    assert_eq!(ids(&f), vec![a.clone(), a2.clone()], "{f:#}");
    srv.tmux(&["unlink-window", "-t", "s2:5"]);
    let f = c
        .call(
            "search_panes",
            json!({"pattern": "needle", "session_name": "s2"}),
        )
        .await;
    assert_eq!(ids(&f), vec![b.clone()], "{f:#}");
    let e = error_of_tool(
        &c,
        "search_panes",
        json!({"pattern": "needle", "session_name": "nope"}),
    )
    .await;
    assert!(e.contains("session_name") && e.contains("\"nope\""), "{e}");
    c.close().await;

    // An agent inside a pane of session main (session scope by default):
    // only main's panes, is_caller true for its own pane and false for another.
    let relay = PaneRelay::start(&srv, "caller", &["--toolset", "python"], false);
    let (mut ch, tools, me) = (relay.channel, relay.tools, relay.pane);
    let other = srv
        .tmux(&[
            "new-window",
            "-d",
            "-t",
            "main:",
            "-P",
            "-F",
            "#{pane_id}",
            "sh -c 'echo caller-mark other; echo needle main; exec sleep 1000'",
        ])
        .trim()
        .to_string();
    let tty = display(&srv, &me, "#{pane_tty}");
    std::io::Write::write_all(
        &mut std::fs::OpenOptions::new().write(true).open(&tty).unwrap(),
        b"caller-mark\r\n",
    )
    .unwrap();
    for p in [&me, &other] {
        poll(Duration::from_secs(5), || {
            tmux_lines(&srv, p, &[])
                .iter()
                .any(|l| l.starts_with("caller-mark"))
                .then_some(())
        })
        .expect("the mark on screen");
    }
    let mut id = 10;
    let mut call = |ch: &mut LineChannel, args: Value| {
        id += 1;
        ch.request(
            id,
            "tools/call",
            json!({ "name": "search_panes", "arguments": args }),
        )
    };
    let f = checked_structured(
        &tools,
        "search_panes",
        &call(&mut ch, json!({"pattern": "caller-mark"})),
    );
    let callers: Vec<(String, Value)> = f["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["pane_id"].as_str().unwrap().to_string(),
                m["is_caller"].clone(),
            )
        })
        .collect();
    let mut want = vec![(me.clone(), json!(true)), (other.clone(), json!(false))];
    want.sort_by_key(|(p, _)| p[1..].parse::<u64>().unwrap());
    assert_eq!(callers, want, "{f:#}");
    let f = checked_structured(
        &tools,
        "search_panes",
        &call(&mut ch, json!({"pattern": "needle"})),
    );
    assert_eq!(
        ids(&f),
        vec![other.clone()],
        "s1's and s2's panes are not this agent's: {f:#}"
    );
    let resp = call(&mut ch, json!({"pattern": "needle", "session_name": "s1"}));
    assert_eq!(resp["result"]["isError"], json!(true), "{resp}");
    let text = resp["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("session_name") && !text.contains("(s2)"),
        "the error names the field and no session outside the scope: {text}"
    );
    drop(ch);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_search_panes_refuses_bad_input_and_fires_no_hook() {
    let srv = TmuxServer::start();
    let a = session_showing(&srv, "s1", 10, &["needle".to_string()]);
    let c = McpClient::attach(&srv, &["--toolset", "python"]).await;
    let before = srv.status()["tmux_connections"].clone();
    for (args, names) in [
        (
            json!({"pattern": "x", "scrollbackLines": 5}),
            "scrollbackLines",
        ),
        (json!({"pattern": "x", "limit": "10"}), "/limit"),
        (json!({"pattern": "x", "limit": 0}), "/limit"),
        (json!({"pattern": 5}), "/pattern"),
        (
            json!({"pattern": "x", "max_matched_lines_per_pane": 0}),
            "/max_matched_lines_per_pane",
        ),
        (
            json!({"pattern": "x", "content_start": 40000}),
            "/content_start",
        ),
        (json!({"pattern": "x", "match_case": "yes"}), "/match_case"),
        (json!({"regex": true}), "pattern"),
        (
            json!({"pattern": "x", "socket_name": "elsewhere"}),
            "socket_name \"elsewhere\"",
        ),
    ] {
        let e = error_of_tool(&c, "search_panes", args.clone()).await;
        assert!(
            e.contains(names) && e.contains("Nothing was sent to tmux"),
            "{args}: {e}"
        );
    }
    assert_eq!(
        srv.status()["tmux_connections"],
        before,
        "a refused call ran a tmux command"
    );

    // Every after-* hook but after-capture-pane: the search captures and
    // fires nothing; with after-capture-pane too, it captures nothing.
    let trap = HookTrap::at(srv.dir().join("hooks.log"));
    let sentinel = || srv.tmux(&["display-message", "-p", ""]);
    for except in [&["after-capture-pane"][..], &[][..]] {
        trap.arm_every_after_hook(&srv, except);
        sentinel();
        trap.before_sentinel("after-display-message");
        trap.clear();
        let r = c
            .call_raw(
                "search_panes",
                json!({"pattern": "needle", "content_start": -5}),
            )
            .await;
        if except.is_empty() {
            assert_eq!(r.is_error, Some(true), "{r:?}");
            let text = r
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect::<String>();
            assert!(
                text.starts_with("No pane could be searched")
                    && text.contains("after-capture-pane"),
                "{text}"
            );
        } else {
            let f = r
                .structured_content
                .clone()
                .unwrap_or_else(|| panic!("{r:?}"));
            assert_eq!(
                matched(&f),
                vec![(a.clone(), vec!["needle".to_string()])],
                "{f:#}"
            );
        }
        sentinel();
        trap.before_sentinel("after-display-message");
        assert_eq!(
            trap.fired(),
            "after-display-message\n",
            "hooks ran for search_panes (except {except:?})"
        );
        trap.clear();
    }
    c.close().await;
}
