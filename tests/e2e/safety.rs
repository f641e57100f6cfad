//! Safety tiers (issue "The libtmux family", item 4): `readonly` / `mutating`
//! / `destructive`, taken from each tool's annotations; a tool above the
//! session's tier is hidden from `tools/list` and refused by name with the
//! switch that enables it. The tier comes from `attach --safety`, else the tmux
//! option `@mcp-safety`, else read-only; `--enable-tool` enables one tool
//! whatever its tier.

use serde_json::{json, Value};
use std::time::Duration;
use tmux_mcp_e2e::*;

/// (name, read-only, destructive) of every listed tool, from the tier the
/// broker publishes in `_meta` — checked against the annotations, which say the
/// same except where a seed fixes them verbatim (docs/spec.md Decision 8: the
/// TypeScript family's read tools are published as destructive).
fn listed(c: &McpClient) -> Vec<(String, bool, bool)> {
    c.tools()
        .iter()
        .map(|t| {
            let tier = t
                .meta
                .as_ref()
                .and_then(|m| m.get("tmux-mcp/tier"))
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("{} publishes no tier", t.name))
                .to_string();
            let a = t
                .annotations
                .clone()
                .unwrap_or_else(|| panic!("{} has no annotations", t.name));
            let seed_verbatim = ["capture_pane", "snapshot_pane"].contains(&t.name.as_ref());
            if !seed_verbatim {
                let from_hints = match (a.read_only_hint, a.destructive_hint) {
                    (Some(true), _) => "readonly",
                    (_, Some(true)) => "destructive",
                    _ => "mutating",
                };
                assert_eq!(
                    tier, from_hints,
                    "{}: the published tier disagrees with its annotations",
                    t.name
                );
            }
            (
                t.name.to_string(),
                tier == "readonly",
                tier == "destructive",
            )
        })
        .collect()
}

fn names(c: &McpClient) -> Vec<String> {
    c.tools().iter().map(|t| t.name.to_string()).collect()
}

async fn safety_of(c: &McpClient) -> String {
    let caps = c.call_envelope("tmux_capabilities", json!({})).await;
    caps.data()["safety"]
        .as_str()
        .unwrap_or_else(|| panic!("no safety in capabilities: {:#}", caps.structured))
        .to_string()
}

/// Calls a tool the session does not list and returns its refusal envelope.
async fn refused(c: &McpClient, name: &str, args: Value) -> String {
    let r = c.call_raw(name, args).await;
    assert_eq!(r.is_error, Some(true), "{name} was not refused: {r:?}");
    let sc = r
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("no envelope: {r:?}"));
    assert_eq!(
        (
            sc["error"]["code"].as_str(),
            sc["error"]["delivery"].as_str()
        ),
        (Some("policy_denied"), Some("not_sent")),
        "{sc:#}"
    );
    let text = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    assert_fixed_message(&sc["error"], &text);
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_tier_lists_only_read_only_tools_and_names_the_switch() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &[]).await;
    let tools = listed(&c);
    assert!(tools.len() >= 10, "{tools:?}");
    for (name, read_only, _) in &tools {
        assert!(
            read_only,
            "{name} is listed at the default (readonly) tier but is not read-only"
        );
    }
    assert_eq!(safety_of(&c).await, "readonly");
    let gen = generation(&c).await;
    let before = srv.tmux(&["list-panes", "-a", "-F", "#{pane_id}"]);
    let msg = refused(&c, "tmux_close", json!({"target": pane_ref(&gen, "%0")})).await;
    assert!(
        msg.contains("tmux_close is in the destructive safety tier"),
        "{msg}"
    );
    assert!(
        msg.contains("--safety destructive")
            && msg.contains("@mcp-safety destructive")
            && msg.contains("--enable-tool tmux_close"),
        "the switches are named: {msg}"
    );
    assert!(msg.ends_with("Nothing was sent to tmux."), "{msg}");
    assert_eq!(
        srv.tmux(&["list-panes", "-a", "-F", "#{pane_id}"]),
        before,
        "the refused call changed nothing"
    );
    // An opt-in read-only tool names --enable-tool, not a tier.
    let msg = refused(&c, "tmux_capture", json!({"target": pane_ref(&gen, "%0")})).await;
    assert!(
        msg.contains("tmux_capture is opt-in") && msg.contains("--enable-tool tmux_capture"),
        "{msg}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tier_adds_exactly_its_tools() {
    let srv = TmuxServer::start();
    let read = McpClient::attach(&srv, &[]).await;
    let mutating = McpClient::attach(&srv, &["--safety", "mutating"]).await;
    let destructive = McpClient::attach(&srv, &["--safety", "destructive"]).await;
    let r = listed(&read);
    let m = listed(&mutating);
    let d = listed(&destructive);
    // Every tier lists the one below it, plus tools of its own tier only.
    for (lower, upper) in [(&r, &m), (&m, &d)] {
        for t in lower.iter() {
            assert!(upper.contains(t), "{t:?} vanished at a higher tier");
        }
    }
    for (name, read_only, destructive_hint) in &m {
        assert!(
            *read_only || !destructive_hint,
            "{name} is destructive but listed at the mutating tier"
        );
    }
    for t in &d {
        if !r.contains(t) && !m.contains(t) {
            assert!(
                t.2,
                "{t:?} appears only at the destructive tier but is not destructive"
            );
        }
    }
    for seed in ["tmux_send", "tmux_create", "tmux_close"] {
        assert!(
            names(&destructive).iter().any(|n| n == seed),
            "{seed} not listed at --safety destructive"
        );
        assert!(
            !names(&mutating).iter().any(|n| n == seed),
            "{seed} (destructive) listed at --safety mutating"
        );
    }
    // Opt-in tools stay opt-in at every tier.
    assert!(
        !names(&destructive).iter().any(|n| n == "tmux_capture"),
        "tmux_capture is opt-in"
    );
    assert_eq!(
        (safety_of(&mutating).await, safety_of(&destructive).await),
        ("mutating".to_string(), "destructive".to_string())
    );
    // A destructive session really may use them.
    let gen = generation(&destructive).await;
    let e = destructive.call_envelope("tmux_create", json!({"kind": "window", "parent": {"kind": "session", "id": "$0", "generation": gen}, "name": "w2", "argv": ["sleep", "30"]})).await;
    assert!(!e.is_error, "{:#}", e.structured);
    // --enable-tool names one tool whatever its tier.
    let one = McpClient::attach(&srv, &["--enable-tool", "tmux_send"]).await;
    let n = names(&one);
    assert!(
        n.iter().any(|x| x == "tmux_send") && !n.iter().any(|x| x == "tmux_close"),
        "{n:?}"
    );
    for c in [read, mutating, destructive, one] {
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_safety_option_sets_the_default_and_attach_overrides_it() {
    let srv = TmuxServer::start();
    srv.tmux(&["set-option", "-g", "@mcp-safety", "destructive"]);
    let by_option = McpClient::attach(&srv, &[]).await;
    assert_eq!(safety_of(&by_option).await, "destructive");
    assert!(
        names(&by_option).iter().any(|n| n == "tmux_close"),
        "{:?}",
        names(&by_option)
    );
    let narrowed = McpClient::attach(&srv, &["--safety", "readonly"]).await;
    assert_eq!(safety_of(&narrowed).await, "readonly");
    assert!(!names(&narrowed).iter().any(|n| n == "tmux_close"));
    by_option.close().await;
    narrowed.close().await;

    // A value that is no tier: the attach is refused with the reason, and no
    // session opens with a guessed tier.
    srv.tmux(&["set-option", "-g", "@mcp-safety", "everything"]);
    let mut cmd = tmux_mcp(&["attach", "-S", srv.socket_str()]);
    cmd.stdin(std::process::Stdio::null());
    let (out, _) = run_with_timeout(cmd, Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "attach succeeded with @mcp-safety=everything: {stderr}"
    );
    assert!(
        stderr.contains("@mcp-safety") && stderr.contains("readonly, mutating or destructive"),
        "{stderr}"
    );

    // And a bad --safety is a usage error naming the choices.
    let (out, _) = run_with_timeout(
        tmux_mcp(&["attach", "-S", srv.socket_str(), "--safety", "all"]),
        Duration::from_secs(10),
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("readonly, mutating or destructive"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
