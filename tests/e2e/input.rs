//! The libtmux family's input tools against real tmux through rmcp's client:
//! `send_keys` (`;`, `\;`, a leading `-`, key names, Enter — byte for byte into
//! a raw-mode reader), `paste_text` (exact bytes, brackets only when asked, the
//! private buffer gone), `run_command` + `get_job` (real exit status, echo-proof
//! output, tail kept with the drop reported, timeout → job, detach, non-shell
//! panes refused), `wait_for_text`, `wait_for_idle`, the safety tier and the
//! agent's own pane. Every structured result is validated against the tool's
//! published outputSchema (`McpClient::call`).

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tmux_mcp_e2e::*;

const MUTATING: &[&str] = &["--safety", "mutating"];

/// Bytes the reader got, once it has at least `n`.
fn bytes_after(out: &std::path::Path, n: usize) -> Vec<u8> {
    poll(Duration::from_secs(10), || {
        Some(std::fs::read(out).unwrap_or_default()).filter(|b| b.len() >= n)
    })
    .unwrap_or_else(|| {
        panic!(
            "the reader got only {:?}",
            String::from_utf8_lossy(&std::fs::read(out).unwrap_or_default())
        )
    })
}

/// The text of a tool error (isError, no structuredContent in this family).
async fn call_err(c: &McpClient, name: &str, args: Value) -> String {
    let r = c.call_raw(name, args).await;
    assert_eq!(r.is_error, Some(true), "{name} should have failed: {r:?}");
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A POSIX sh (dash where /bin/sh is dash) in a new window, its prompt shown
/// (until then tmux may still name the pane's program `tmux`, the forked child).
fn sh_pane(srv: &TmuxServer) -> String {
    let id = srv
        .tmux(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "env",
            "PS1=% ",
            "sh",
        ])
        .trim()
        .to_string();
    // The prompt, and tmux naming the shell as the pane's program (not yet
    // `env` or `tmux`, see `TmuxServer::bash_pane`).
    poll(Duration::from_secs(10), || {
        let named = srv.tmux(&[
            "display-message",
            "-p",
            "-t",
            &id,
            "#{pane_current_command}",
        ]);
        let named = named.trim();
        (screen(srv, &id).contains('%') && named != "env" && named != "tmux").then_some(())
    })
    .expect("sh prompt, and tmux naming the shell");
    id
}

fn screen(srv: &TmuxServer, pane: &str) -> String {
    srv.tmux(&["capture-pane", "-p", "-J", "-t", pane])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_tools_are_mutating_hidden_by_default_and_refused_with_the_switch() {
    let srv = TmuxServer::start();
    // A reader records every byte its terminal gets: what a refused call typed
    // would be there (a shell's screen would also show its prompt).
    let (reader, bytes) = start_reader(&srv);
    let plain = McpClient::attach(&srv, &[]).await;
    let names: Vec<String> = plain.tools().iter().map(|t| t.name.to_string()).collect();
    for t in ["send_keys", "paste_text", "run_command"] {
        assert!(
            !names.contains(&t.to_string()),
            "{t} is listed at the readonly tier: {names:?}"
        );
        let e = call_err(
            &plain,
            t,
            json!({ "paneId": reader, "text": "x", "command": "x" }),
        )
        .await;
        assert!(
            e.contains("--safety mutating") && e.ends_with("Nothing was sent to tmux."),
            "{t}: {e}"
        );
    }
    // get_job collects what only run_command starts: listed with it, not
    // before (issue 20: each listed tool costs every agent context).
    assert!(
        !names.contains(&"get_job".to_string()),
        "get_job is listed without run_command: {names:?}"
    );
    let e = call_err(&plain, "get_job", json!({ "jobId": "0".repeat(32) })).await;
    assert!(e.contains("comes with run_command"), "{e}");
    // The waits type nothing: read-only, on by default.
    for t in ["wait_for_text", "wait_for_idle"] {
        let a = plain.tool(t).annotations.clone().expect("annotations");
        assert_eq!(
            (a.read_only_hint, a.destructive_hint),
            (Some(true), Some(false)),
            "{t}"
        );
    }
    plain.close().await;
    // A sentinel typed after every call: anything a refused call typed would
    // have arrived before it.
    srv.tmux(&["send-keys", "-t", &reader, "-l", "END"]);
    let got = poll(Duration::from_secs(10), || {
        let b = std::fs::read(&bytes).unwrap_or_default();
        b.ends_with(b"END").then_some(b)
    })
    .expect("the reader never got the sentinel");
    assert_eq!(
        String::from_utf8_lossy(&got),
        "END",
        "the refused calls typed something"
    );

    let c = McpClient::attach(&srv, MUTATING).await;
    let a = c.tool("get_job").annotations.clone().expect("annotations");
    assert_eq!(
        (a.read_only_hint, a.destructive_hint),
        (Some(true), Some(false)),
        "get_job, listed with run_command, is a read"
    );
    for t in ["send_keys", "paste_text", "run_command"] {
        let tool = c.tool(t);
        let a = tool.annotations.clone().expect("annotations");
        assert_eq!(
            (a.read_only_hint, a.destructive_hint, a.idempotent_hint),
            (Some(false), Some(false), Some(false)),
            "{t}"
        );
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")), "{t}");
        assert_eq!(
            tool.output_schema.as_ref().unwrap().get("type"),
            Some(&json!("object")),
            "{t}"
        );
    }
    c.close().await;
    // Naming one tool enables that tool alone, whatever its tier.
    let one = McpClient::attach(&srv, &["--enable-tool", "send_keys"]).await;
    let names: Vec<String> = one.tools().iter().map(|t| t.name.to_string()).collect();
    assert!(
        names.contains(&"send_keys".to_string())
            && !names.contains(&"paste_text".to_string())
            && !names.contains(&"run_command".to_string()),
        "{names:?}"
    );
    one.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_keys_delivers_separators_dashes_key_names_and_enter_exactly() {
    let srv = TmuxServer::start();
    let (pane, out) = start_reader(&srv);
    let c = McpClient::attach(&srv, MUTATING).await;
    let gen = c.call("list_panes", json!({})).await["generation"]
        .as_str()
        .unwrap()
        .to_string();
    let r = c
        .call(
            "send_keys",
            json!({ "paneId": pane, "generation": gen, "text": "-x ; \\; end;" }),
        )
        .await;
    assert_eq!(
        r["pane"],
        json!({ "kind": "pane", "id": pane, "generation": gen })
    );
    assert_eq!(
        (
            r["characters"].as_u64(),
            r["keys"].as_u64(),
            r["enter"].as_bool(),
            r["delivery"].as_str()
        ),
        (Some(12), Some(0), Some(false), Some("observed"))
    );
    c.call("send_keys", json!({ "paneId": pane, "text": "\\;" }))
        .await;
    // Key names: `-l` and `;` are no flags or separators; C-c is 0x03, Enter CR.
    let r = c
        .call(
            "send_keys",
            json!({ "paneId": pane, "keys": ["-l", ";", "\\;", "C-c", "Up"], "enter": true }),
        )
        .await;
    assert_eq!(
        (r["keys"].as_u64(), r["enter"].as_bool()),
        (Some(5), Some(true))
    );
    c.call("send_keys", json!({ "paneId": pane, "enter": true }))
        .await;
    let want: &[u8] = b"-x ; \\; end;\\;-l;\\;\x03\x1b[A\r\r";
    let got = bytes_after(&out, want.len());
    assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want));

    // Both keys and text, or literal with keys: refused, nothing sent.
    for bad in [
        json!({ "paneId": pane, "keys": ["a"], "text": "b" }),
        json!({ "paneId": pane, "keys": ["a"], "literal": true }),
        json!({ "paneId": pane }),
    ] {
        let e = call_err(&c, "send_keys", bad).await;
        assert!(e.ends_with("Nothing was sent to tmux."), "{e}");
    }
    let e = call_err(
        &c,
        "send_keys",
        json!({ "paneId": pane, "generation": "0123", "text": "x" }),
    )
    .await;
    assert!(e.contains("generation"), "{e}");
    // The sentinel proves nothing else arrived after the accepted calls.
    c.call("send_keys", json!({ "paneId": pane, "text": "S" }))
        .await;
    let got = bytes_after(&out, want.len() + 1);
    assert_eq!(&got[want.len()..], b"S", "a refused call sent something");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paste_text_is_exact_brackets_only_when_asked_and_leaves_no_buffer() {
    let srv = TmuxServer::start();
    let (pane, out) = start_reader_as(&srv, "plain", false);
    let c = McpClient::attach(&srv, MUTATING).await;
    let text = "one;\n-two \\; #{pane_id}\n\tthree";
    let r = c
        .call(
            "paste_text",
            json!({ "paneId": pane, "text": text, "lineEnding": "lf" }),
        )
        .await;
    // `#{bracket_paste_flag}` is in tmux 3.7c, not in 3.5a (3.6 added it).
    let bracket_known = tmux_at_least(3, 6);
    assert_eq!(
        r["bracketedPaste"],
        if bracket_known { "off" } else { "unknown" },
        "{r}"
    );
    assert_eq!(
        (
            r["bytes"].as_u64(),
            r["bufferDeleted"].as_bool(),
            r["lineEnding"].as_str()
        ),
        (Some(text.len() as u64), Some(true), Some("lf"))
    );
    let got = bytes_after(&out, text.len());
    assert_eq!(String::from_utf8_lossy(&got), text);
    // The default turns LF into CR, as a terminal paste does.
    c.call("paste_text", json!({ "paneId": pane, "text": "a\nb" }))
        .await;
    let got = bytes_after(&out, text.len() + 3);
    assert_eq!(&got[text.len()..], b"a\rb");
    // A text larger than one tmux message fills the buffer in pieces.
    let long: String = (0..3000).map(|i| format!("{i:05};é")).collect();
    let r = c
        .call(
            "paste_text",
            json!({ "paneId": pane, "text": long, "lineEnding": "lf" }),
        )
        .await;
    assert!(r["bufferPieces"].as_u64().unwrap() > 1, "{r}");
    let got = bytes_after(&out, text.len() + 3 + long.len());
    assert_eq!(String::from_utf8_lossy(&got[text.len() + 3..]), long);

    // A program that turned bracketed paste on gets the paste bracketed.
    let (bp, bout) = start_reader_as(&srv, "bracketed", true);
    let r = c
        .call("paste_text", json!({ "paneId": bp, "text": "x y" }))
        .await;
    assert_eq!(
        r["bracketedPaste"],
        if bracket_known { "on" } else { "unknown" },
        "{r}"
    );
    let got = bytes_after(&bout, 15);
    assert_eq!(String::from_utf8_lossy(&got), "\x1b[200~x y\x1b[201~");

    let buffers = srv.tmux(&["list-buffers", "-F", "#{buffer_name}"]);
    assert!(
        !buffers.contains("mcp-paste"),
        "a private buffer was left: {buffers:?}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_returns_the_real_status_and_output_not_the_echo() {
    let srv = TmuxServer::start();
    let pane = srv.bash_pane();
    let c = McpClient::attach(&srv, MUTATING).await;
    let r = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo marker-$((6*7))" }),
        )
        .await;
    assert_eq!(
        (r["state"].as_str(), r["exitStatus"].as_i64()),
        (Some("done"), Some(0)),
        "{r}"
    );
    // Nothing dropped: the output is its text alone. Done: no jobId, no
    // wait; the pane and the command line are the call's, not restated.
    assert_eq!(r["output"], json!({ "text": "marker-42\n" }), "{r}");
    for k in [
        "jobId",
        "pane",
        "paneId",
        "command",
        "timeoutMs",
        "timeoutClamped",
    ] {
        assert!(r.get(k).is_none(), "{k} in {r}");
    }
    // The shell echoed the typed line (the unexpanded marker is on the screen),
    // and the result is not taken from it.
    assert!(
        screen(&srv, &pane).contains("echo marker-$((6*7))"),
        "{}",
        screen(&srv, &pane)
    );

    let r = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo to-stderr >&2; (exit 7)" }),
        )
        .await;
    assert_eq!(
        (r["exitStatus"].as_i64(), r["output"]["text"].as_str()),
        (Some(7), Some("to-stderr\n")),
        "{r}"
    );
    // The shell's state persists: it runs in the person's shell.
    c.call(
        "run_command",
        json!({ "paneId": pane, "command": "cd /tmp && X=kept" }),
    )
    .await;
    let r = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "pwd; echo $X" }),
        )
        .await;
    assert_eq!(r["output"]["text"], "/tmp\nkept\n");

    // Long output: the tail is kept and what was dropped is counted.
    let r = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "seq 1 5000", "maxLines": 3 }),
        )
        .await;
    let o = &r["output"];
    assert_eq!(o["text"], "4998\n4999\n5000\n");
    let total: u64 = (1..=5000u64).map(|i| i.to_string().len() as u64 + 1).sum();
    assert_eq!(
        (
            o["totalLines"].as_u64(),
            o["droppedLines"].as_u64(),
            o["totalBytes"].as_u64(),
            o["droppedBytes"].as_u64()
        ),
        (Some(5000), Some(4997), Some(total), Some(total - 15))
    );
    let r = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "seq 1 5000", "maxOutputBytes": 12 }),
        )
        .await;
    assert_eq!(
        r["output"]["text"], "4999\n5000\n",
        "the partial line at the cut is dropped"
    );

    // The clamp is reported when the clamped wait ran out (the job still
    // runs); get_job names the job's pane and command line.
    let r = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "sleep 5.5", "timeoutMs": 600000 }),
        )
        .await;
    assert_eq!(
        (
            r["state"].as_str(),
            r["timeoutMs"].as_u64(),
            r["timeoutClamped"].as_bool()
        ),
        (Some("running"), Some(5000), Some(true)),
        "{r}"
    );
    let job = r["jobId"].as_str().unwrap().to_string();
    let done = poll_async(Duration::from_secs(10), || async {
        Some(c.call("get_job", json!({ "jobId": job })).await).filter(|v| v["state"] == "done")
    })
    .await
    .expect("the clamped job never finished");
    assert_eq!(
        (
            done["paneId"].as_str(),
            done["command"].as_str(),
            done["exitStatus"].as_i64()
        ),
        (Some(pane.as_str()), Some("sleep 5.5"), Some(0)),
        "{done}"
    );
    assert!(
        done.get("jobId").is_none() && done.get("timeoutMs").is_none(),
        "{done}"
    );

    // A timeout returns the job; get_job collects it once the status came.
    let r = c.call("run_command", json!({ "paneId": pane, "command": "sleep 1; echo late; exit_code() { return 3; }; exit_code", "timeoutMs": 200 })).await;
    assert_eq!(r["state"], "running", "{r}");
    assert!(r.get("exitStatus").is_none());
    // Not clamped: timeoutClamped left out.
    assert_eq!(
        (r["timeoutMs"].as_u64(), r.get("timeoutClamped")),
        (Some(200), None),
        "{r}"
    );
    let job = r["jobId"].as_str().unwrap().to_string();
    let done = poll_async(Duration::from_secs(10), || async {
        Some(c.call("get_job", json!({ "jobId": job })).await).filter(|v| v["state"] == "done")
    })
    .await
    .expect("the job never finished");
    assert_eq!(
        (done["exitStatus"].as_i64(), done["output"]["text"].as_str()),
        (Some(3), Some("late\n")),
        "{done}"
    );
    assert!(done["elapsedMs"].as_u64().unwrap() >= 1000, "{done}");

    // detach returns at once with a job.
    let r = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo detached", "detach": true }),
        )
        .await;
    assert!(r.get("timeoutMs").is_none());
    let job = r["jobId"].as_str().unwrap().to_string();
    let done = poll_async(Duration::from_secs(10), || async {
        Some(c.call("get_job", json!({ "jobId": job })).await).filter(|v| v["state"] == "done")
    })
    .await
    .expect("the detached job never finished");
    assert_eq!(done["output"]["text"], "detached\n");
    let e = call_err(&c, "get_job", json!({ "jobId": "0".repeat(32) })).await;
    assert!(e.contains("No job"), "{e}");
    // No job directory is left in the broker's runtime dir.
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_refuses_panes_not_at_a_shell_prompt_and_sends_nothing() {
    let srv = TmuxServer::start();
    let sleeper = srv
        .tmux(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep",
            "1000",
        ])
        .trim()
        .to_string();
    let c = McpClient::attach(&srv, MUTATING).await;
    let e = call_err(
        &c,
        "run_command",
        json!({ "paneId": sleeper, "command": "echo no" }),
    )
    .await;
    assert!(
        e.contains("not a shell")
            && e.contains("\"sleep\"")
            && e.ends_with("Nothing was sent to tmux."),
        "{e}"
    );
    let pane = srv.bash_pane();
    srv.tmux(&["copy-mode", "-t", &pane]);
    let e = call_err(
        &c,
        "run_command",
        json!({ "paneId": pane, "command": "echo no" }),
    )
    .await;
    assert!(e.contains("copy mode"), "{e}");
    srv.tmux(&["send-keys", "-t", &pane, "-X", "cancel"]);
    // A dead pane (remain-on-exit keeps it): every input tool refuses.
    srv.tmux(&["set-option", "-g", "remain-on-exit", "on"]);
    let dead = srv
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", "true"])
        .trim()
        .to_string();
    poll(Duration::from_secs(10), || {
        (srv.tmux(&["display-message", "-p", "-t", &dead, "#{pane_dead}"])
            .trim()
            == "1")
            .then_some(())
    })
    .expect("pane dead");
    for (name, args) in [
        ("send_keys", json!({ "paneId": dead, "keys": ["Enter"] })),
        ("paste_text", json!({ "paneId": dead, "text": "x" })),
        ("run_command", json!({ "paneId": dead, "command": "true" })),
    ] {
        let e = call_err(&c, name, args).await;
        assert!(
            e.contains("is dead") && e.ends_with("Nothing was sent to tmux."),
            "{name}: {e}"
        );
    }
    // The sleeping pane echoes typed text (cooked mode): only the sentinel shows.
    c.call(
        "send_keys",
        json!({ "paneId": sleeper, "text": "sentinel" }),
    )
    .await;
    let s = poll(Duration::from_secs(10), || {
        Some(screen(&srv, &sleeper)).filter(|s| s.contains("sentinel"))
    })
    .expect("sentinel");
    assert_eq!(
        s.trim(),
        "sentinel",
        "a refused run_command typed into the pane"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_pane_is_not_typed_into_without_allow_self() {
    let srv = TmuxServer::start();
    let mut relay = PaneRelay::start(&srv, "me", MUTATING, true);
    let me = relay.pane.clone();
    let mut id = 10;
    for (name, args) in [
        ("send_keys", json!({ "paneId": me, "text": "typed" })),
        ("paste_text", json!({ "paneId": me, "text": "pasted" })),
        (
            "run_command",
            json!({ "paneId": me, "command": "echo ran" }),
        ),
    ] {
        id += 1;
        let r = relay
            .channel
            .request(id, "tools/call", json!({ "name": name, "arguments": args }));
        assert_eq!(r["result"]["isError"], true, "{name}: {r}");
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.contains("--allow-self") && text.ends_with("Nothing was sent to tmux."),
            "{name}: {text}"
        );
    }
    // Another agent types a sentinel through the same path: it is all there is.
    let other = McpClient::attach(&srv, MUTATING).await;
    let before = screen(&srv, &me);
    other
        .call(
            "send_keys",
            json!({ "paneId": me, "text": "sentinel-self" }),
        )
        .await;
    let s = poll(Duration::from_secs(10), || {
        Some(screen(&srv, &me)).filter(|s| s.contains("sentinel-self"))
    })
    .expect("sentinel");
    assert_eq!(
        s.trim(),
        format!("{}sentinel-self", before.trim()),
        "the refused calls typed into the agent's own pane"
    );
    other.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_text_returns_on_later_text_stop_markers_idle_and_timeout() {
    let srv = TmuxServer::start();
    let pane = srv.bash_pane();
    let c = McpClient::attach(&srv, MUTATING).await;
    // Started before the call; the typed line shows READY-$((1+1)), which
    // does not match: only the printed text does.
    c.call(
        "send_keys",
        json!({ "paneId": pane, "text": "sleep 0.4; echo READY-$((1+1))", "enter": true }),
    )
    .await;
    let t = Instant::now();
    let r = c
        .call(
            "wait_for_text",
            json!({ "paneId": pane, "patterns": ["absent", "READY-2"] }),
        )
        .await;
    assert_eq!(
        (
            r["outcome"].as_str(),
            r["patternIndex"].as_u64(),
            r["line"].as_str()
        ),
        (Some("matched"), Some(1), Some("READY-2")),
        "{r}"
    );
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "matched before the text was printed: {r}"
    );
    // A match restates neither the pane nor the pattern the call gave, nor
    // the wait's timeout and output events (it did not run out).
    for k in [
        "paneId",
        "pattern",
        "timeoutMs",
        "timeoutClamped",
        "outputEvents",
    ] {
        assert!(r.get(k).is_none(), "{k} in {r}");
    }
    // Already on the screen: at once.
    let r = c
        .call(
            "wait_for_text",
            json!({ "paneId": pane, "patterns": ["ready-\\d"], "regex": true, "ignoreCase": true }),
        )
        .await;
    assert_eq!(
        (r["outcome"].as_str(), r["patternIndex"].as_u64()),
        (Some("matched"), None),
        "{r}"
    );

    c.call(
        "send_keys",
        json!({ "paneId": pane, "text": "clear; sleep 0.3; echo FAIL-$((2+3))", "enter": true }),
    )
    .await;
    let r = c.call("wait_for_text", json!({ "paneId": pane, "patterns": ["never-shown"], "stopPatterns": ["^FAIL-[0-9]$"], "regex": true })).await;
    assert_eq!(
        (
            r["outcome"].as_str(),
            r["patternIndex"].as_u64(),
            r["line"].as_str()
        ),
        // patternIndex 0 is left out.
        (Some("stopped"), None, Some("FAIL-5")),
        "{r}"
    );

    let r = c
        .call(
            "wait_for_text",
            json!({ "paneId": pane, "patterns": ["never-shown"], "timeoutMs": 300 }),
        )
        .await;
    assert_eq!(
        (
            r["outcome"].as_str(),
            r["timeoutMs"].as_u64(),
            r["timeoutClamped"].as_bool()
        ),
        // Not clamped: timeoutClamped left out.
        (Some("timeout"), Some(300), None),
        "{r}"
    );
    assert!(r["waitedMs"].as_u64().unwrap() >= 300);
    // Idle is not running out: the (clamped) timeout is not reported.
    let r = c.call("wait_for_text", json!({ "paneId": pane, "patterns": ["never-shown"], "idleSeconds": 0.3, "timeoutMs": 600000 })).await;
    assert_eq!(
        (
            r["outcome"].as_str(),
            r["timeoutMs"].as_u64(),
            r["timeoutClamped"].as_bool()
        ),
        (Some("idle"), None, None),
        "{r}"
    );

    let e = call_err(
        &c,
        "wait_for_text",
        json!({ "paneId": pane, "patterns": ["("], "regex": true }),
    )
    .await;
    assert!(e.contains("/patterns/0"), "{e}");
    let e = call_err(
        &c,
        "wait_for_text",
        json!({ "paneId": "%999", "patterns": ["x"] }),
    )
    .await;
    assert!(e.contains("%999"), "{e}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_idle_sees_quiet_after_output_and_times_out_while_busy() {
    let srv = TmuxServer::start();
    let pane = srv.bash_pane();
    let c = McpClient::attach(&srv, MUTATING).await;
    c.call("send_keys", json!({ "paneId": pane, "text": "for i in 1 2 3 4 5 6; do echo $i; sleep 0.1; done", "enter": true })).await;
    let r = c
        .call(
            "wait_for_idle",
            json!({ "paneId": pane, "idleSeconds": 0.7 }),
        )
        .await;
    assert_eq!(r["outcome"], "idle", "{r}");
    assert!(
        r["quietMs"].as_u64().unwrap() >= 700 && r["outputEvents"].as_u64().unwrap() >= 3,
        "{r}"
    );
    assert!(
        screen(&srv, &pane).contains("\n6\n"),
        "idle before the loop ended: {}",
        screen(&srv, &pane)
    );

    // Output keeps resetting the quiet period: without it, idle would come at
    // 0.5 s, long before the timeout.
    c.call(
        "send_keys",
        json!({ "paneId": pane, "text": "while :; do echo busy; sleep 0.05; done", "enter": true }),
    )
    .await;
    let r = c
        .call(
            "wait_for_idle",
            json!({ "paneId": pane, "idleSeconds": 0.5, "timeoutMs": 1500 }),
        )
        .await;
    assert_eq!(r["outcome"], "timeout", "{r}");
    assert!(r["outputEvents"].as_u64().unwrap() >= 10, "{r}");
    c.call("send_keys", json!({ "paneId": pane, "keys": ["C-c"] }))
        .await;
    c.close().await;
}

/// This broker's job directories (`srv-<gen16>.run-*` next to its socket).
fn job_dirs(srv: &TmuxServer) -> Vec<String> {
    let sock = srv.status()["broker_socket"]
        .as_str()
        .expect("status.broker_socket")
        .to_string();
    let sock = std::path::Path::new(&sock);
    let prefix = format!("{}.run-", sock.file_stem().unwrap().to_string_lossy());
    std::fs::read_dir(sock.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_in_sh_alternate_screen_refused_lost_shell_and_no_files_left() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, MUTATING).await;
    // POSIX sh (dash where /bin/sh is dash) as well as bash.
    let sh = sh_pane(&srv);
    let r = c
        .call(
            "run_command",
            json!({ "paneId": sh, "command": "echo in-sh; false" }),
        )
        .await;
    assert_eq!(
        (r["exitStatus"].as_i64(), r["output"]["text"].as_str()),
        (Some(1), Some("in-sh\n")),
        "{r}"
    );

    // A full-screen program's alternate screen: refused, nothing typed.
    let pane = srv.bash_pane();
    c.call(
        "send_keys",
        json!({ "paneId": pane, "text": "printf '\\033[?1049h\\033[H\\033[2J'; read -r x", "enter": true }),
    )
    .await;
    // On and cleared by bash's own printf: no program runs in front of bash
    // (with `clear`, "1 bash" could be seen before it started, and while it
    // ended tmux may name the pane by the command it started, `env`).
    poll(Duration::from_secs(10), || {
        (srv.tmux(&[
            "display-message",
            "-p",
            "-t",
            &pane,
            "#{alternate_on} #{pane_current_command}",
        ])
        .trim()
            == "1 bash")
            .then_some(())
    })
    .expect("alternate screen on");
    // bash itself is the foreground program while `read` runs, so only the
    // alternate screen tells that this is not a prompt.
    let e = call_err(
        &c,
        "run_command",
        json!({ "paneId": pane, "command": "echo no" }),
    )
    .await;
    assert!(
        e.contains("alternate screen") && e.ends_with("Nothing was sent to tmux."),
        "{e}"
    );
    c.call(
        "send_keys",
        json!({ "paneId": pane, "text": "sentinel-alt" }),
    )
    .await;
    let s = poll(Duration::from_secs(10), || {
        Some(screen(&srv, &pane)).filter(|s| s.contains("sentinel-alt"))
    })
    .expect("sentinel");
    assert_eq!(
        s.trim(),
        "sentinel-alt",
        "the refused run_command typed into the pane"
    );

    // A command that ends the shell: the job is lost (pidfd), not hung.
    let doomed = srv.bash_pane();
    let r = c
        .call(
            "run_command",
            json!({ "paneId": doomed, "command": "exit 3" }),
        )
        .await;
    assert_eq!(r["state"], "lost", "{r}");
    assert!(r["lostReason"].as_str().unwrap().contains("exited"), "{r}");

    // Every job's directory is gone once its shell has read its release
    // (a lost job's at once).
    let gone = poll(Duration::from_secs(5), || {
        job_dirs(&srv).is_empty().then_some(())
    });
    assert!(gone.is_some(), "{:?}", job_dirs(&srv));
    let e = call_err(&c, "send_keys", json!({ "paneId": doomed, "text": "x" })).await;
    assert!(e.contains("does not exist"), "{e}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waits_and_get_job_fire_no_hook_and_wait_for_text_refuses_a_capture_hook() {
    let srv = TmuxServer::start();
    let pane = srv
        .tmux(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "sh",
            "-c",
            "echo shown-text; exec sleep 1000",
        ])
        .trim()
        .to_string();
    poll(Duration::from_secs(10), || {
        screen(&srv, &pane).contains("shown-text").then_some(())
    })
    .expect("text shown");
    let trap = HookTrap::at(srv.dir().join("hooks.log"));
    let armed = trap.arm_every_after_hook(&srv, &[]);
    assert!(
        armed.iter().any(|a| a == "after-capture-pane")
            && armed.iter().any(|a| a == "after-display-message"),
        "{armed:?}"
    );
    let sentinel = || srv.tmux(&["display-message", "-p", ""]);
    let c = McpClient::attach(&srv, &["--enable-tool", "get_job"]).await;
    sentinel();
    trap.before_sentinel("after-display-message");
    trap.clear();

    let e = call_err(
        &c,
        "wait_for_text",
        json!({ "paneId": pane, "patterns": ["shown-text"] }),
    )
    .await;
    assert!(e.contains("after-capture-pane"), "{e}");
    let r = c
        .call(
            "wait_for_idle",
            json!({ "paneId": pane, "idleSeconds": 0.2 }),
        )
        .await;
    assert_eq!(r["outcome"], "idle");
    call_err(&c, "get_job", json!({ "jobId": "0".repeat(32) })).await;
    sentinel();
    assert_eq!(
        trap.before_sentinel("after-display-message"),
        "",
        "after-* hooks ran"
    );

    // Without the capture hook, wait_for_text reads (guarded) and fires none.
    srv.tmux(&["set-hook", "-gu", "after-capture-pane"]);
    sentinel();
    trap.before_sentinel("after-display-message");
    let r = c
        .call(
            "wait_for_text",
            json!({ "paneId": pane, "patterns": ["shown-text"] }),
        )
        .await;
    assert_eq!(r["outcome"], "matched");
    let r = c
        .call(
            "wait_for_text",
            json!({ "paneId": pane, "patterns": ["absent"], "timeoutMs": 200 }),
        )
        .await;
    assert_eq!(r["outcome"], "timeout");
    sentinel();
    assert_eq!(
        trap.before_sentinel("after-display-message"),
        "",
        "after-* hooks ran"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_are_bounded_per_agent_and_their_files_go_with_the_server() {
    let mut srv = TmuxServer::start();
    let c = McpClient::attach(&srv, MUTATING).await;
    // A Tab would make the shell's line editor complete: refused by the schema.
    let e = call_err(
        &c,
        "run_command",
        json!({ "paneId": "%0", "command": "printf 'a\tb'" }),
    )
    .await;
    assert!(
        e.contains("/command") && e.ends_with("Nothing was sent to tmux."),
        "{e}"
    );
    let sock = std::path::PathBuf::from(srv.status()["broker_socket"].as_str().unwrap());
    let prefix = format!("{}.run-", sock.file_stem().unwrap().to_string_lossy());
    let dirs = || {
        std::fs::read_dir(sock.parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .count()
    };
    let mut jobs = Vec::new();
    for i in 0..16 {
        let pane = sh_pane(&srv);
        let r = c.call("run_command", json!({ "paneId": pane, "command": format!("echo started-{i}; sleep 100"), "detach": true })).await;
        jobs.push(r["jobId"].as_str().unwrap().to_string());
    }
    let pane = sh_pane(&srv);
    let e = call_err(
        &c,
        "run_command",
        json!({ "paneId": pane, "command": "echo seventeenth" }),
    )
    .await;
    assert!(
        e.contains("Too many jobs") && e.ends_with("Nothing was sent to tmux."),
        "{e}"
    );
    assert_eq!(
        c.call("get_job", json!({ "jobId": jobs[15] })).await["state"],
        "running"
    );
    assert_eq!(dirs(), 16);
    // The server goes: every job ends (lost) and its directory is removed.
    srv.kill_server();
    poll(Duration::from_secs(10), || (dirs() == 0).then_some(()))
        .unwrap_or_else(|| panic!("{} job directories left after the server exited", dirs()));
}
