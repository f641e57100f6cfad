//! `--toolset python` (issue "The libtmux family", item 5): `capture_pane` as
//! tmux-python/libtmux-mcp spells it (SPEC-TOOLS C.0/C.1, seed 004), against a
//! real tmux server: the published input schema equals the contract exactly,
//! the annotations and description equal the seed's, text compared with
//! tmux's own `capture-pane -p`, the truncation header, pane resolution from
//! session and window, and errors that name what is wrong.

use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::Duration;
use tmux_mcp_e2e::*;

const SEED: &str = "004_4f0cb7a14343f393.txt";

/// The seed page's description (the paragraphs between the language list and
/// "All Python tools") and its annotations (the last JSON block).
fn seed() -> (String, Value) {
    let text = seed_text(SEED);
    assert_eq!(text.lines().next().map(str::trim), Some("capture_pane"), "tests/seeds/{SEED} is not the capture_pane seed");
    let body = text.split("\nSwift\n").nth(1).expect("language list").split("\nAll Python tools").next().unwrap();
    let description = body.trim().split("\n\n").collect::<Vec<_>>().join("\n\n");
    let ann = text.rsplit("Tool annotations").next().unwrap();
    (description, serde_json::from_str(ann.trim()).expect("annotations JSON"))
}

/// `tmux capture-pane -p -t PANE ARGS…`, trailing empty lines removed.
fn tmux_lines(srv: &TmuxServer, pane: &str, args: &[&str]) -> Vec<String> {
    let out = Command::new("tmux").arg("-u").arg("-S").arg(srv.socket()).args(["capture-pane", "-p", "-t", pane]).args(args).env_remove("TMUX").stdin(Stdio::null()).output().expect("tmux");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// A detached session `name` printing `line 001`…`line N`, then sleeping.
fn session_printing(srv: &TmuxServer, name: &str, n: u32) -> String {
    let script = srv.dir().join(format!("{name}.sh"));
    std::fs::write(&script, format!("i=1\nwhile [ $i -le {n} ]; do printf 'line %03d\\n' $i; i=$((i+1)); done\nexec sleep 1000\n")).unwrap();
    let id = srv.tmux(&["new-session", "-d", "-s", name, "-x", "80", "-y", "20", "-P", "-F", "#{pane_id}", &format!("sh {}", sh_quote(script.to_str().unwrap()))]).trim().to_string();
    let last = format!("line {n:03}");
    poll(Duration::from_secs(5), || tmux_lines(srv, &id, &[]).iter().any(|l| *l == last).then_some(())).unwrap_or_else(|| panic!("{name} never printed {last}"));
    id
}

async fn result_of(c: &McpClient, args: Value) -> String {
    c.call("capture_pane", args).await["result"].as_str().expect("result is a string").to_string()
}

async fn error_of(c: &McpClient, args: Value) -> String {
    let r = c.call_raw("capture_pane", args).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(r.structured_content.is_none(), "{r:?}");
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_capture_pane_publishes_the_contract_and_the_seed() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &["--toolset", "python"]).await;
    let t = c.tool("capture_pane");
    let contract = contract_text("capture_pane.python.input.json");
    let contract: Value = serde_json::from_str(&contract).unwrap();
    let published = Value::Object((*t.input_schema).clone());
    assert_eq!(serde_json::to_string(&published).unwrap(), serde_json::to_string(&contract).unwrap(), "inputSchema (with key order) differs from the contract");
    let (description, annotations) = seed();
    assert_eq!(t.description.as_deref(), Some(description.as_str()));
    assert_eq!(serde_json::to_value(t.annotations.clone().unwrap()).unwrap(), annotations);
    // The default toolset keeps the libtmux-ts spelling.
    let d = McpClient::attach(&srv, &[]).await;
    let required = d.tool("capture_pane").input_schema.get("required").cloned();
    assert_eq!(required, Some(json!(["paneId"])), "the default capture_pane is the TypeScript contract");
    // @mcp-toolset sets it for agents that do not say.
    srv.tmux(&["set-option", "-g", "@mcp-toolset", "python"]);
    let o = McpClient::attach(&srv, &[]).await;
    assert!(o.tool("capture_pane").input_schema.contains_key("properties") && o.tool("capture_pane").input_schema["properties"].get("max_lines").is_some());
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
    assert_eq!(result_of(&c, json!({"pane_id": big})).await, tmux_lines(&srv, &big, &[]).join("\n"));
    // All history: more than 500 lines, so the last 500 under the header.
    let all = tmux_lines(&srv, &big, &["-S", "-"]);
    assert!(all.len() > 500, "{}", all.len());
    let got = result_of(&c, json!({"pane_id": big, "start": -1000})).await;
    let (head, rest) = got.split_once('\n').unwrap();
    assert_eq!(head, format!("[... truncated {} lines ...]", all.len() - 500));
    assert_eq!(rest, all[all.len() - 500..].join("\n"));
    assert_eq!(rest.lines().last(), Some("line 700"));
    // null: no truncation; explicit max_lines; start/end passed as -S/-E.
    assert_eq!(result_of(&c, json!({"pane_id": big, "start": -1000, "max_lines": null})).await, all.join("\n"));
    let got = result_of(&c, json!({"pane_id": big, "start": -1000, "max_lines": 3})).await;
    assert_eq!(got, format!("[... truncated {} lines ...]\n{}", all.len() - 3, all[all.len() - 3..].join("\n")));
    assert_eq!(result_of(&c, json!({"pane_id": big, "start": -5, "end": -3})).await, tmux_lines(&srv, &big, &["-S", "-5", "-E", "-3"]).join("\n"));

    // Errors name what is wrong and send nothing.
    let e = error_of(&c, json!({"pane_id": big, "max_lines": 0})).await;
    assert!(e.contains("max_lines must be a positive integer"), "{e}");
    let e = error_of(&c, json!({"pane_id": "%999"})).await;
    assert!(e.contains("%999"), "{e}");
    let e = error_of(&c, json!({"session_name": "nope"})).await;
    assert!(e.starts_with("Object not found: session \"nope\"") && e.contains("list_sessions"), "{e}");
    let e = error_of(&c, json!({"pane_id": big, "socket_name": "elsewhere"})).await;
    assert!(e.contains("socket_name \"elsewhere\" names another tmux server"), "{e}");
    let e = error_of(&c, json!({"pane_id": big, "lines": 3})).await;
    assert!(e.contains("lines"), "an unknown argument is named: {e}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_capture_pane_resolves_session_window_and_first_session() {
    let srv = TmuxServer::start(); // session "main", pane %0
    let first = session_printing(&srv, "aaa", 3); // sorts first
    let second_window = srv.tmux(&["new-window", "-d", "-t", "aaa:", "-P", "-F", "#{window_id} #{pane_id}", "sh -c 'echo second; exec sleep 1000'"]);
    let (win, win_pane) = second_window.trim().split_once(' ').unwrap();
    poll(Duration::from_secs(5), || tmux_lines(&srv, win_pane, &[]).iter().any(|l| l == "second").then_some(())).expect("second window output");
    let main_pane = session_printing(&srv, "mmm", 2);

    let c = McpClient::attach(&srv, &["--toolset", "python", "--scope", "server"]).await;
    // No target: the first session (by name), its first window, its first pane.
    assert_eq!(result_of(&c, json!({})).await, tmux_lines(&srv, &first, &[]).join("\n"));
    assert_eq!(result_of(&c, json!({"session_name": "mmm"})).await, tmux_lines(&srv, &main_pane, &[]).join("\n"));
    let main_id = srv.tmux(&["display-message", "-p", "-t", "mmm:", "#{session_id}"]).trim().to_string();
    assert_eq!(result_of(&c, json!({"session_id": main_id, "session_name": "aaa"})).await, tmux_lines(&srv, &main_pane, &[]).join("\n"), "session_id wins over session_name");
    assert_eq!(result_of(&c, json!({"window_id": win, "session_name": "mmm"})).await, "second", "window_id wins over the session arguments");
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
    let before = trap.fire_sentinel(&srv, "after-display-message", &["display-message", "-p", ""]);
    assert_eq!(before, "", "a hook ran for the refused capture");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_capture_since_returns_new_lines_in_the_reference_fields() {
    let srv = TmuxServer::start();
    let fifo = srv.dir().join("py-since.fifo");
    mkfifo(&fifo);
    let script = format!("while true; do cat {}; done", sh_quote(fifo.to_str().unwrap()));
    let pane = srv.tmux(&["new-session", "-d", "-s", "since", "-x", "60", "-y", "10", "-P", "-F", "#{pane_id}", &script]).trim().to_string();
    let emit = |text: &str| {
        let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    };
    emit("first line\n");
    poll(Duration::from_secs(5), || tmux_lines(&srv, &pane, &[]).iter().any(|l| l == "first line").then_some(())).expect("first line shown");
    let c = McpClient::attach(&srv, &["--toolset", "python", "--scope", "server"]).await;
    let schema = Value::Object((*c.tool("capture_since").input_schema).clone());
    assert!(schema["properties"].get("pane_id").is_some() && schema["properties"].get("paneId").is_none(), "{schema}");
    let seed = c.call("capture_since", json!({"pane_id": pane})).await;
    assert_eq!(seed["pane_id"], json!(pane));
    assert!(seed["lines"].as_array().unwrap().iter().any(|l| l == "first line"), "{seed:#}");
    assert_eq!((seed["lines_missed"].as_bool(), seed["truncated"].as_bool()), (Some(false), Some(false)));
    assert!(seed["elapsed_seconds"].as_f64().is_some());
    emit("second line\nthird line\n");
    poll(Duration::from_secs(5), || tmux_lines(&srv, &pane, &[]).iter().any(|l| l == "third line").then_some(())).expect("new lines shown");
    // The cursor alone names the pane.
    let next = c.call("capture_since", json!({"cursor": seed["cursor"]})).await;
    assert_eq!(next["lines"], json!(["second line", "third line"]), "{next:#}");
    let capped = c.call("capture_since", json!({"cursor": seed["cursor"], "max_lines": 1})).await;
    assert_eq!((capped["lines"].clone(), capped["truncated"].as_bool(), capped["truncated_lines"].as_u64()), (json!(["third line"]), Some(true), Some(1)), "{capped:#}");
    let e = error_of_tool(&c, "capture_since", json!({"pane_id": pane, "max_bytes": 0})).await;
    assert!(e.contains("max_bytes must be a positive integer"), "{e}");
    let e = error_of_tool(&c, "capture_since", json!({"cursor": "nope"})).await;
    assert!(e.contains("invalid capture_since cursor"), "{e}");
    c.close().await;
}

async fn error_of_tool(c: &McpClient, tool: &str, args: Value) -> String {
    let r = c.call_raw(tool, args).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}
