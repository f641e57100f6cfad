//! `capture_since` (libtmux family, on by default) against real tmux servers
//! through rmcp's client: new lines exactly once and in order, nothing new,
//! losses reported (history-limit trimming, clear-history, respawn), the key
//! binding's hand-off cursor for an agent scoped to another session, hook
//! refusal, bad input, and the wire size of a one-line delta.
//!
//! Every successful `structuredContent` is validated against the published
//! `outputSchema` by the harness (`McpClient::call`, `checked_structured`).

use serde_json::{json, Value};
use std::time::Duration;
use tmux_mcp_e2e::*;

fn lines(v: &Value) -> Vec<String> {
    v["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("no lines in {v:#}"))
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect()
}

/// `linesMissed`, which is present only when true.
fn lines_missed(v: &Value) -> Value {
    match v.get("linesMissed") {
        None => json!(false),
        Some(t) => {
            assert_eq!(
                t,
                &json!(true),
                "linesMissed is present only when true: {v:#}"
            );
            assert!(v["missed"]["reason"].is_string(), "a loss says why: {v:#}");
            json!(true)
        }
    }
}

fn numbered(prefix: &str, range: std::ops::Range<usize>) -> (Vec<u8>, Vec<String>) {
    let want: Vec<String> = range.map(|i| format!("{prefix}-{i}")).collect();
    let bytes = want
        .iter()
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .into_bytes();
    (bytes, want)
}

/// The text of a tool error (asserting that it is one, with no structuredContent).
async fn error_text(c: &McpClient, args: Value) -> String {
    let r = c.call_raw("capture_since", args).await;
    assert_eq!(r.is_error, Some(true), "expected an error: {r:?}");
    assert!(
        r.structured_content.is_none(),
        "a libtmux-family error carries no structuredContent: {r:?}"
    );
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn new_lines_come_back_once_in_order_and_nothing_new_is_empty() {
    let srv = TmuxServer::start();
    let mut p = PaneWriter::new_session(&srv, "w", 60, 10);
    p.emit(&srv, b"one\ntwo\n");
    let c = McpClient::attach(&srv, &[]).await;
    let tool = c.tool("capture_since");
    assert_eq!(
        tool.annotations.as_ref().and_then(|a| a.read_only_hint),
        Some(true),
        "read-only tier"
    );

    let seed = c.call("capture_since", json!({"paneId": p.id})).await;
    assert_eq!(seed["seeded"], json!(true), "{seed:#}");
    assert_eq!(
        lines(&seed),
        ["one", "two"],
        "the seed is the visible screen up to the cursor"
    );
    assert_eq!(lines_missed(&seed), json!(false));
    let cursor = seed["cursor"].as_str().unwrap().to_string();
    assert!(
        cursor.len() == 22
            && cursor
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "{cursor}"
    );

    p.emit(&srv, b"three\nfour\n");
    let d = c
        .call("capture_since", json!({"paneId": p.id, "cursor": cursor}))
        .await;
    assert_eq!(lines(&d), ["three", "four"], "{d:#}");
    assert!(
        d.get("seeded").is_none() && d.get("linesMissed").is_none(),
        "{d:#}"
    );
    let text = c
        .call_raw("capture_since", json!({"paneId": p.id, "cursor": cursor}))
        .await;
    let text = text.content[0].as_text().unwrap().text.clone();
    assert!(
        text.starts_with("three\nfour\n[cursor "),
        "the text is the new lines and the next cursor: {text:?}"
    );

    // Nothing was printed since: empty.
    let next = d["cursor"].as_str().unwrap().to_string();
    let e = c
        .call("capture_since", json!({"paneId": p.id, "cursor": next}))
        .await;
    assert_eq!(lines(&e), Vec::<String>::new(), "{e:#}");

    // More than a screenful: every line exactly once, in order, though most
    // scrolled into history before the read.
    let (bytes, want) = numbered("burst", 0..37);
    p.emit(&srv, &bytes);
    let f = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": e["cursor"]}),
        )
        .await;
    assert_eq!(lines(&f), want, "{f:#}");
    // A line in progress (no LF yet) is returned, then not again until it changes.
    p.emit(&srv, b"partial");
    let g = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": f["cursor"]}),
        )
        .await;
    assert_eq!(lines(&g), ["partial"]);
    let h = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": g["cursor"]}),
        )
        .await;
    assert_eq!(lines(&h), Vec::<String>::new(), "{h:#}");
    p.emit(&srv, b" done\nnext\n");
    let i = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": h["cursor"]}),
        )
        .await;
    assert_eq!(lines(&i), ["partial done", "next"], "{i:#}");
    // Cursors are not consumed: the old one reads the same lines again.
    let again = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": d["cursor"]}),
        )
        .await;
    assert_eq!(
        lines(&again).first().map(String::as_str),
        Some("burst-0"),
        "{again:#}"
    );
    c.close().await;
}

/// A pane moved to another window after the broker last read the table: the
/// capture's guard refuses the place the table gave, the table is read again,
/// and the state read beside the rows follows the pane to its new window (it
/// is built for the pane each attempt captures).
#[tokio::test(flavor = "multi_thread")]
async fn a_pane_moved_to_another_window_is_followed() {
    let srv = TmuxServer::start();
    let mut p = PaneWriter::new_session(&srv, "w", 60, 10);
    srv.tmux(&["split-window", "-d", "-t", &p.id, "sleep 1000"]);
    p.emit(&srv, b"one\n");
    let c = McpClient::attach(&srv, &[]).await;
    let seed = c.call("capture_since", json!({"paneId": p.id})).await;
    assert_eq!(lines(&seed), ["one"], "{seed:#}");
    let cursor = seed["cursor"].as_str().unwrap().to_string();
    let before = srv.tmux(&["display-message", "-p", "-t", &p.id, "#{window_id}"]);
    srv.tmux(&["break-pane", "-d", "-s", &p.id]);
    let after = srv.tmux(&["display-message", "-p", "-t", &p.id, "#{window_id}"]);
    assert_ne!(before, after, "premise: the pane is in another window");
    p.emit(&srv, b"two\n");
    let d = c
        .call("capture_since", json!({"paneId": p.id, "cursor": cursor}))
        .await;
    assert_eq!(lines(&d), ["two"], "{d:#}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn caps_keep_the_tail_and_report_what_they_dropped() {
    let srv = TmuxServer::start();
    let mut p = PaneWriter::new_session(&srv, "w", 60, 10);
    let c = McpClient::attach(&srv, &[]).await;
    let seed = c.call("capture_since", json!({"paneId": p.id})).await;
    let (bytes, want) = numbered("cap", 0..20);
    p.emit(&srv, &bytes);
    let d = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": seed["cursor"], "maxLines": 5}),
        )
        .await;
    assert_eq!(lines(&d), want[15..].to_vec(), "{d:#}");
    assert_eq!(d["truncated"]["lines"], json!(15), "{d:#}");
    assert_eq!(
        lines_missed(&d),
        json!(false),
        "a cap is not a loss of the pane's lines: {d:#}"
    );
    // "cap-18\ncap-19" is 13 bytes: 12 keep the last line only.
    let d = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": seed["cursor"], "maxBytes": 13}),
        )
        .await;
    assert_eq!(
        (lines(&d), d["truncated"]["lines"].clone()),
        (vec!["cap-18".to_string(), "cap-19".to_string()], json!(18)),
        "{d:#}"
    );
    let d = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": seed["cursor"], "maxBytes": 12}),
        )
        .await;
    assert_eq!(lines(&d), ["cap-19"], "{d:#}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn history_trimmed_by_history_limit_is_reported_then_tracking_goes_on() {
    let srv = TmuxServer::start();
    srv.tmux(&["set-option", "-g", "history-limit", "20"]);
    let mut p = PaneWriter::new_session(&srv, "w", 60, 10);
    let c = McpClient::attach(&srv, &[]).await;
    let (bytes, _) = numbered("pre", 0..30);
    p.emit(&srv, &bytes);
    let seed = c.call("capture_since", json!({"paneId": p.id})).await;

    // A few lines: no loss although the history sits at its limit.
    let (bytes, want) = numbered("few", 0..3);
    p.emit(&srv, &bytes);
    let d = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": seed["cursor"]}),
        )
        .await;
    assert_eq!((lines(&d), lines_missed(&d)), (want, json!(false)), "{d:#}");

    // Far more than history + screen hold: the loss is reported.
    let (bytes, want) = numbered("many", 0..100);
    p.emit(&srv, &bytes);
    let m = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": d["cursor"]}),
        )
        .await;
    assert_eq!(lines_missed(&m), json!(true), "{m:#}");
    assert_eq!(m["missed"]["reason"], "history_trimmed", "{m:#}");
    let got = lines(&m);
    assert!(
        got.len() < 100 && want.ends_with(&got),
        "what the pane still holds, in order: {got:?}"
    );

    // The new cursor goes on exactly.
    let (bytes, want) = numbered("after", 0..4);
    p.emit(&srv, &bytes);
    let a = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": m["cursor"]}),
        )
        .await;
    assert_eq!((lines(&a), lines_missed(&a)), (want, json!(false)), "{a:#}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn clear_history_and_respawn_are_reported() {
    let srv = TmuxServer::start();
    let mut p = PaneWriter::new_session(&srv, "w", 60, 10);
    let (bytes, _) = numbered("old", 0..15);
    p.emit(&srv, &bytes);
    let c = McpClient::attach(&srv, &[]).await;
    let seed = c.call("capture_since", json!({"paneId": p.id})).await;
    let (bytes, _) = numbered("gone", 0..25);
    p.emit(&srv, &bytes);
    srv.tmux(&["clear-history", "-t", &p.id]);
    let d = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": seed["cursor"]}),
        )
        .await;
    assert_eq!(
        (lines_missed(&d), d["missed"]["reason"].clone()),
        (json!(true), json!("history_cleared")),
        "{d:#}"
    );
    assert_eq!(
        lines(&d).last().map(String::as_str),
        Some("gone-24"),
        "the screen that is left: {d:#}"
    );

    srv.tmux(&[
        "respawn-pane",
        "-k",
        "-t",
        &p.id,
        "printf 'reborn\\n'; exec cat",
    ]);
    poll(Duration::from_secs(5), || {
        srv.tmux(&["capture-pane", "-p", "-t", &p.id])
            .contains("reborn")
            .then_some(())
    })
    .expect("the respawned pane printed");
    let r = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": d["cursor"]}),
        )
        .await;
    assert_eq!(
        (lines_missed(&r), r["missed"]["reason"].clone()),
        (json!(true), json!("respawned")),
        "{r:#}"
    );
    assert!(lines(&r).contains(&"reborn".to_string()), "{r:#}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_ms_waits_for_output_and_is_clamped_to_the_request_timeout() {
    let srv = TmuxServer::start();
    let mut p = PaneWriter::new_session(&srv, "w", 60, 10);
    let c = McpClient::attach(&srv, &[]).await;
    let seed = c.call("capture_since", json!({"paneId": p.id})).await;
    let call = c.call(
        "capture_since",
        json!({"paneId": p.id, "cursor": seed["cursor"], "waitMs": 600000}),
    );
    let writer = async {
        // Lets the call start waiting first; the result is the same either way.
        tokio::time::sleep(Duration::from_millis(300)).await;
        tokio::task::block_in_place(|| p.emit(&srv, b"late line\n"));
    };
    let (d, ()) = tokio::join!(call, writer);
    assert_eq!(lines(&d), ["late line"], "{d:#}");
    assert_eq!(
        d["waitMs"],
        json!(5000),
        "clamped to the broker's 5 s request timeout: {d:#}"
    );

    // No polling captures: a wait with no output runs the reads of a call
    // that does not wait plus the safety net's fingerprint readings
    // (`activity`: a baseline, then one every 250 ms while it is watched).
    let commands = || srv.status()["tmux_connections"].as_u64().unwrap();
    let t0 = commands();
    let plain = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": d["cursor"]}),
        )
        .await;
    let t1 = commands();
    let waited = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": d["cursor"], "waitMs": 1500}),
        )
        .await;
    let t2 = commands();
    assert_eq!(
        (lines(&plain), lines(&waited), waited["waitMs"].clone()),
        (vec![], vec![], json!(1500))
    );
    assert!(t2 - t1 <= (t1 - t0) + 8, "a 1.5 s wait on a silent pane ran {} tmux commands, a call without wait {}: more than the net's readings", t2 - t1, t1 - t0);
    c.close().await;
}

#[test]
fn handoff_cursor_works_for_a_session_scoped_agent_of_another_session() {
    let srv = TmuxServer::start(); // session main, where the agent runs
    let mut pa = PaneWriter::new_session(&srv, "alpha", 60, 12);
    pa.emit(&srv, b"alpha one\nalpha two\n");
    let a = pa.id.clone();
    let relay = PaneRelay::start(&srv, "relay", &[], false);
    let (mut ch, tools) = (relay.channel, relay.tools);

    // Out of scope without the hand-off.
    let denied = ch.request(
        2,
        "tools/call",
        json!({"name": "capture_since", "arguments": {"paneId": a}}),
    );
    assert_eq!(denied["result"]["isError"], json!(true), "{denied}");
    assert!(
        denied["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("outside this session's scope"),
        "{denied}"
    );

    // The key press in pane A.
    let (out, _) = run_with_timeout(
        tmux_mcp(&["cursor", "-S", srv.socket_str(), &a]),
        Duration::from_secs(15),
    );
    assert!(
        out.status.success(),
        "tmux-mcp cursor failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout)
        .unwrap()
        .trim_end()
        .to_string();
    assert!(
        line.starts_with(&format!(
            "tmux-mcp: pane {a} handed over — call capture_since "
        )),
        "{line}"
    );
    assert_eq!(
        srv.tmux(&["show-buffer", "-b", "mcp-cursor"]).trim_end(),
        line
    );
    let (args, _) = parse_handoff(&line);

    pa.emit(&srv, b"alpha three\n");
    let d = checked_structured(
        &tools,
        "capture_since",
        &ch.request(
            3,
            "tools/call",
            json!({"name": "capture_since", "arguments": args}),
        ),
    );
    assert_eq!(
        (lines(&d), lines_missed(&d)),
        (vec!["alpha three".to_string()], json!(false)),
        "what is new since the key press: {d:#}"
    );
    pa.emit(&srv, b"alpha four\n");
    let d2 = checked_structured(
        &tools,
        "capture_since",
        &ch.request(
            4,
            "tools/call",
            json!({"name": "capture_since", "arguments": {"paneId": a, "cursor": d["cursor"]}}),
        ),
    );
    assert_eq!(lines(&d2), ["alpha four"], "the chain goes on: {d2:#}");
    // The hand-off is for that pane only.
    let other = ch.request(
        5,
        "tools/call",
        json!({"name": "capture_since", "arguments": {"paneId": "%0", "cursor": d["cursor"]}}),
    );
    assert!(
        other["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Invalid argument cursor: it belongs to pane"),
        "{other}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_while_an_after_capture_pane_hook_is_set_and_the_hook_never_fires() {
    let srv = TmuxServer::start();
    let mut p = PaneWriter::new_session(&srv, "w", 60, 10);
    let c = McpClient::attach(&srv, &[]).await;
    let seed = c.call("capture_since", json!({"paneId": p.id})).await;
    srv.tmux(&[
        "set-hook",
        "-g",
        "after-capture-pane",
        "set-option -g @since_hook_fired yes",
    ]);
    p.emit(&srv, b"hidden\n");
    for args in [
        json!({"paneId": p.id}),
        json!({"paneId": p.id, "cursor": seed["cursor"]}),
    ] {
        let text = error_text(&c, args).await;
        assert!(text.contains("after-capture-pane"), "{text}");
    }
    assert_eq!(
        srv.tmux(&["show-options", "-gqv", "@since_hook_fired"])
            .trim(),
        "",
        "the hook ran"
    );
    // The sentinel: with the hook gone the same call reads (so the refusal was the hook's).
    srv.tmux(&["set-hook", "-gu", "after-capture-pane"]);
    let d = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": seed["cursor"]}),
        )
        .await;
    assert_eq!(lines(&d), ["hidden"]);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_names_the_field_and_sends_nothing() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &[]).await;
    c.call("capture_since", json!({"paneId": "%0"})).await;
    let before = srv.status()["tmux_connections"].clone();
    for (args, field) in [
        (json!({"paneId": "0"}), "paneId"),
        (json!({"paneId": "%0", "cursor": "xyz"}), "cursor"),
        (
            json!({"paneId": "%0", "cursor": "0123456789abcdef0123456789abcdef"}),
            "cursor",
        ),
        (
            json!({"paneId": "%0", "cursor": "AAAAAAAAAAAAAAAAAAAAAA"}),
            "cursor",
        ),
        (json!({"paneId": "%0", "maxLines": 0}), "maxLines"),
        (json!({"paneId": "%0", "maxBytes": -1}), "maxBytes"),
        (json!({"paneId": "%0", "waitMs": "soon"}), "waitMs"),
        (json!({"paneId": "%0", "extra": 1}), "extra"),
    ] {
        let text = error_text(&c, args.clone()).await;
        assert!(text.contains(field), "{args}: {text}");
        assert!(text.contains("Nothing was sent to tmux"), "{args}: {text}");
    }
    assert_eq!(
        srv.status()["tmux_connections"],
        before,
        "a refused call ran a tmux command"
    );
    let text = error_text(&c, json!({"paneId": "%999"})).await;
    assert!(text.contains("No pane %999"), "{text}");
    c.close().await;
}

/// The figure: one appended line costs at most 300 bytes on the wire
/// (the whole JSON-RPC response line, text content plus structuredContent).
#[test]
fn one_appended_line_costs_at_most_300_bytes_on_the_wire() {
    let srv = TmuxServer::start();
    let mut p = PaneWriter::new_session(&srv, "w", 80, 10);
    let mut raw = RawClient::attach(&srv, &[]);
    raw.initialize();
    let tools = raw.request(1, "tools/list", json!({}));
    let seed = checked_structured(
        &tools,
        "capture_since",
        &raw.request(
            2,
            "tools/call",
            json!({"name": "capture_since", "arguments": {"paneId": p.id}}),
        ),
    );
    let appended = "make: *** [all] Error 2 (build step 3)";
    p.emit(&srv, format!("{appended}\n").as_bytes());
    let line = raw.request_line(
        3,
        "tools/call",
        json!({"name": "capture_since", "arguments": {"paneId": p.id, "cursor": seed["cursor"]}}),
    );
    let resp: Value = serde_json::from_slice(&line).unwrap();
    let d = checked_structured(&tools, "capture_since", &resp);
    assert_eq!(lines(&d), [appended]);
    println!("capture_since: one appended line of {} bytes costs {} bytes on the wire (the response line with its LF)", appended.len(), line.len());
    assert!(
        line.len() <= 300,
        "{} bytes: {}",
        line.len(),
        String::from_utf8_lossy(&line)
    );
}

/// The hook trap: every after-* hook but after-capture-pane (which makes the
/// tool refuse, see above) is set; seeding, deltas, a search after a trim and a
/// wait run none of them.
#[tokio::test(flavor = "multi_thread")]
async fn no_after_hook_runs() {
    let srv = TmuxServer::start();
    srv.tmux(&["set-option", "-g", "history-limit", "20"]);
    let mut p = PaneWriter::new_session(&srv, "w", 60, 10);
    let trap = HookTrap::at(srv.dir().join("hooks.log"));
    let armed = trap.arm_every_after_hook(&srv, &["after-capture-pane"]);
    // tmux has no after-list-commands or after-if-shell (what the tool uses).
    for h in [
        "after-display-message",
        "after-show-options",
        "after-list-panes",
    ] {
        assert!(armed.iter().any(|a| a == h), "{h} not armed: {armed:?}");
    }
    // The sentinel is the test's own display-message: once its line is in the
    // file, every hook of an earlier command is before it.
    let sentinel = || srv.tmux(&["display-message", "-p", ""]);
    let c = McpClient::attach(&srv, &[]).await;
    sentinel();
    trap.before_sentinel("after-display-message");
    trap.clear();
    let seed = c.call("capture_since", json!({"paneId": p.id})).await;
    let (bytes, _) = numbered("x", 0..60);
    p.emit(&srv, &bytes);
    // emit's own display-message reads ran hooks: wait for them all, then forget them.
    sentinel();
    trap.before_sentinel("after-display-message");
    trap.clear();
    let d = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": seed["cursor"]}),
        )
        .await;
    assert_eq!(
        lines_missed(&d),
        json!(true),
        "the trim path (whole-history search) ran: {d:#}"
    );
    let e = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": d["cursor"], "waitMs": 50}),
        )
        .await;
    assert_eq!(lines(&e), Vec::<String>::new());
    sentinel();
    trap.before_sentinel("after-display-message");
    assert_eq!(
        trap.fired(),
        "after-display-message\n",
        "after-* hooks ran (only the sentinel's line belongs here)"
    );
    c.close().await;
}

/// A full-screen program (alternate screen) reads as its whole screen, once
/// per change; when it leaves, line tracking of the normal screen goes on.
#[tokio::test(flavor = "multi_thread")]
async fn the_alternate_screen_reads_whole_and_line_tracking_resumes_after_it() {
    let srv = TmuxServer::start();
    let mut p = PaneWriter::new_session(&srv, "w", 60, 10);
    p.emit(&srv, b"before\n");
    let c = McpClient::attach(&srv, &[]).await;
    let seed = c.call("capture_since", json!({"paneId": p.id})).await;
    p.emit(&srv, b"\x1b[?1049h\x1b[H\x1b[2Jmenu: one\r\n      two");
    let a = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": seed["cursor"]}),
        )
        .await;
    assert_eq!(
        (lines(&a), a["alternateScreen"].clone()),
        (
            vec!["menu: one".to_string(), "      two".to_string()],
            json!(true)
        ),
        "{a:#}"
    );
    let same = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": a["cursor"]}),
        )
        .await;
    assert_eq!(
        lines(&same),
        Vec::<String>::new(),
        "unchanged screen: {same:#}"
    );
    p.emit(&srv, b"\x1b[3;1Hthree");
    let b = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": same["cursor"]}),
        )
        .await;
    assert_eq!(lines(&b), ["menu: one", "      two", "three"], "{b:#}");
    p.emit(&srv, b"\x1b[?1049lafter\n");
    let d = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": b["cursor"]}),
        )
        .await;
    assert_eq!(
        (
            lines(&d),
            d.get("alternateScreen").cloned(),
            lines_missed(&d)
        ),
        (vec!["after".to_string()], None, json!(false)),
        "{d:#}"
    );
    c.close().await;
}

/// A styled run as `(line, col, len, fg, bg, attrs, link)`, absent fields
/// empty.
type StyleRun = (u64, u64, u64, String, String, Vec<String>, String);

/// The runs of a styled result.
fn runs(v: &Value) -> Vec<StyleRun> {
    let s = |r: &Value, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    v["styles"]
        .as_array()
        .unwrap_or_else(|| panic!("no styles in {v:#}"))
        .iter()
        .map(|r| {
            let attrs = r.get("attrs").map_or(Vec::new(), |a| {
                a.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap().to_string())
                    .collect()
            });
            (
                r["line"].as_u64().unwrap(),
                r["col"].as_u64().unwrap(),
                r["len"].as_u64().unwrap(),
                s(r, "fg"),
                s(r, "bg"),
                attrs,
                s(r, "link"),
            )
        })
        .collect()
}

fn run(line: u64, col: u64, len: u64, fg: &str, bg: &str, attrs: &[&str], link: &str) -> StyleRun {
    (
        line,
        col,
        len,
        fg.into(),
        bg.into(),
        attrs.iter().map(|a| a.to_string()).collect(),
        link.into(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn styles_on_request_name_colours_and_attributes_over_the_plain_lines() {
    let srv = TmuxServer::start();
    let mut p = PaneWriter::new_session(&srv, "w", 60, 12);
    let c = McpClient::attach(&srv, &[]).await;
    // A plain seed: its cursor is continued by a styled read.
    let first = c.call("capture_since", json!({"paneId": p.id})).await;
    assert!(first.get("styles").is_none(), "not asked: {first:#}");

    // OSC 8 hyperlinks are kept in the grid from tmux 3.4 on.
    let (major, minor, _) = tmux_version();
    let links = (major, minor) >= (3, 4);
    p.emit(
        &srv,
        concat!(
            "plain \x1b[31mred\x1b[0m tail\n",
            "\x1b[1;4;38;5;200mbold\x1b[0m \x1b[48;2;10;20;30mbg\x1b[0m \x1b[7mrev\x1b[0m\n",
            "\x1b]8;;https://example.com/x\x1b\\link\x1b]8;;\x1b\\ after\n",
            "\x1b[92mgreen\n",
            "still\x1b[0m \x1b[3;9mgone\x1b[0m\n",
        )
        .as_bytes(),
    );
    let want_lines = [
        "plain red tail",
        "bold bg rev",
        "link after",
        "green",
        "still gone",
    ];
    let d = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": first["cursor"], "styles": true}),
        )
        .await;
    assert_eq!(lines(&d), want_lines, "the text has no escapes: {d:#}");
    let mut want = vec![
        run(0, 6, 3, "red", "", &[], ""),
        run(1, 0, 4, "colour200", "", &["bold", "underscore"], ""),
        run(1, 5, 2, "", "#0a141e", &[], ""),
        run(1, 8, 3, "", "", &["reverse"], ""),
    ];
    if links {
        want.push(run(2, 0, 4, "", "", &[], "https://example.com/x"));
    }
    want.extend([
        // A colour set on one line carries over the line end, as in the pane.
        run(3, 0, 5, "brightgreen", "", &[], ""),
        run(4, 0, 5, "brightgreen", "", &[], ""),
        run(4, 6, 4, "", "", &["italics", "strikethrough"], ""),
    ]);
    assert_eq!(runs(&d), want, "{d:#}");
    let text = c
        .call_raw(
            "capture_since",
            json!({"paneId": p.id, "cursor": first["cursor"], "styles": true}),
        )
        .await;
    let text = text.content[0].as_text().unwrap().text.clone();
    assert!(
        text.contains("\n0:6+3 fg=red\n1:0+4 fg=colour200,bold,underscore\n1:5+2 bg=#0a141e\n"),
        "the text content lists the runs in tmux's style syntax: {text}"
    );
    assert!(
        !text.contains('\x1b'),
        "no escape reaches the model: {text:?}"
    );

    // The same lines read plainly from the same cursor: equal text, no styles.
    let plain = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": first["cursor"]}),
        )
        .await;
    assert_eq!(lines(&plain), want_lines, "{plain:#}");
    assert!(plain.get("styles").is_none(), "{plain:#}");

    // A styled cursor continues with a plain read, and back: only new lines.
    p.emit(&srv, b"\x1b[34mnext\x1b[0m\n");
    let e = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": d["cursor"]}),
        )
        .await;
    assert_eq!(lines(&e), ["next"], "{e:#}");
    let f = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": d["cursor"], "styles": true}),
        )
        .await;
    assert_eq!(lines(&f), ["next"], "{f:#}");
    assert_eq!(runs(&f), [run(0, 0, 4, "blue", "", &[], "")], "{f:#}");
    let g = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": f["cursor"], "styles": true}),
        )
        .await;
    assert_eq!(
        (lines(&g), runs(&g)),
        (vec![], vec![]),
        "nothing new: no lines, no runs: {g:#}"
    );

    // A styled seed is the screen with its runs; lines equal a plain seed's.
    let styled_seed = c
        .call("capture_since", json!({"paneId": p.id, "styles": true}))
        .await;
    let plain_seed = c.call("capture_since", json!({"paneId": p.id})).await;
    assert_eq!(lines(&styled_seed), lines(&plain_seed));
    assert_eq!(runs(&styled_seed).len(), want.len() + 1, "{styled_seed:#}");

    // maxBytes counts the runs: the bytes that hold the five lines plainly
    // hold fewer of them with their runs; the tail is kept.
    let size: usize = want_lines.iter().map(|l| l.len() + 1).sum::<usize>() + "next".len();
    let capped = c
        .call(
            "capture_since",
            json!({"paneId": p.id, "cursor": first["cursor"], "maxBytes": size, "styles": true}),
        )
        .await;
    let got = lines(&capped);
    assert!(
        got.len() < 6 && got.last().map(String::as_str) == Some("next"),
        "{capped:#}"
    );
    c.close().await;
}
