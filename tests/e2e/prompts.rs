//! Prompts and completion keep the session's scope: an agent running in a pane
//! of session `main` (session scope, its default there) is offered and may
//! name only what `main` holds — except a pane the person handed over with
//! the key binding, which `take_over_pane` takes with its cursor. The happy
//! paths through the official SDK are in tests/python/test_prompts.py.

use serde_json::{json, Value};
use std::time::Duration;
use tmux_mcp_e2e::*;

fn completion(ch: &mut LineChannel, id: i64, r#ref: Value, name: &str, value: &str) -> Vec<String> {
    let r = ch.request(
        id,
        "completion/complete",
        json!({ "ref": r#ref, "argument": { "name": name, "value": value } }),
    );
    let c = &r["result"]["completion"];
    let values: Vec<String> = c["values"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(c["total"].as_u64(), Some(values.len() as u64), "{r}");
    values
}

#[test]
fn a_session_scoped_agent_is_offered_and_may_name_only_what_it_sees() {
    let srv = TmuxServer::start();
    let other = srv
        .tmux(&[
            "new-session",
            "-d",
            "-s",
            "other",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    let mut relay = PaneRelay::start(&srv, "scoped", &[], false);
    let ch = &mut relay.channel;
    let mine: Vec<String> = srv
        .tmux(&["list-panes", "-s", "-t", "main", "-F", "#{pane_id}"])
        .split_whitespace()
        .map(String::from)
        .collect();

    let watch = json!({ "type": "ref/prompt", "name": "watch_run" });
    assert_eq!(completion(ch, 2, watch.clone(), "pane", ""), mine);
    assert_eq!(
        completion(ch, 3, watch, "pane", &other),
        Vec::<String>::new()
    );
    let template = json!({ "type": "ref/resource", "uri": "tmux://pane/{pane_id}" });
    assert_eq!(completion(ch, 4, template, "pane_id", ""), mine);
    let find = json!({ "type": "ref/prompt", "name": "find_error" });
    assert_eq!(completion(ch, 5, find, "session", ""), ["main"]);

    let get = |ch: &mut LineChannel, id: i64, name: &str, args: Value| {
        ch.request(
            id,
            "prompts/get",
            json!({ "name": name, "arguments": args }),
        )
    };
    let refused = get(ch, 6, "watch_run", json!({ "pane": other }));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["data"]["argument"], "pane", "{refused}");
    let refused = get(ch, 7, "find_error", json!({ "session": "other" }));
    assert_eq!(refused["error"]["data"]["argument"], "session", "{refused}");
    let ok = get(ch, 8, "watch_run", json!({ "pane": mine[0] }));
    assert!(
        ok["result"]["messages"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains(&mine[0])),
        "{ok}"
    );

    // Handed over with the key binding's helper: the other session's pane
    // may now be taken over, with that cursor (and only with it).
    let (out, _) = run_with_timeout(
        tmux_mcp(&["cursor", "-S", srv.socket_str(), &other]),
        Duration::from_secs(15),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (since_args, _) = parse_handoff(String::from_utf8(out.stdout).unwrap().trim_end());
    let cursor = since_args["cursor"].as_str().unwrap().to_string();
    let taken = get(
        ch,
        9,
        "take_over_pane",
        json!({ "pane": other, "cursor": cursor }),
    );
    let text = taken["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{taken}"));
    assert!(text.contains(&other) && text.contains(&cursor), "{text}");
    let without = get(ch, 10, "take_over_pane", json!({ "pane": other }));
    assert_eq!(without["error"]["data"]["argument"], "pane", "{without}");
    let elsewhere = get(
        ch,
        11,
        "take_over_pane",
        json!({ "pane": mine[0], "cursor": cursor }),
    );
    assert_eq!(
        elsewhere["error"]["data"]["argument"], "cursor",
        "{elsewhere}"
    );
    // Arguments are strings (MCP's prompt arguments), and are named.
    let typed = get(ch, 12, "watch_run", json!({ "pane": 3 }));
    assert!(
        typed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("\"pane\"") && m.contains("string")),
        "{typed}"
    );
}
