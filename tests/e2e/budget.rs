//! The context budget of `tools/list` is measured in process, from the
//! catalog (`broker/src/mcp/budget.rs`: `cargo test -p tmux-mcp-broker
//! budget`). Here: that the relay writes to a client exactly the line it
//! measures, for the default surface and for every tool of both toolsets;
//! and that what `tools/list` leaves out is one resource read away.

use serde_json::json;
use std::collections::BTreeSet;
use tmux_mcp_broker::toolkit::call::spec::{Listed, Tier, Toolset};
use tmux_mcp_broker::tools::{enabled_set, CATALOG};
use tmux_mcp_e2e::*;

/// The answer to `tools/list` (request id 2) as the relay writes it.
fn tools_list(srv: &TmuxServer, args: &[&str]) -> Vec<u8> {
    let mut raw = RawClient::attach(srv, args);
    raw.initialize();
    let bytes = raw.request_line(2, "tools/list", json!({}));
    let _ = raw.close();
    bytes
}

#[test]
fn the_budget_measures_the_line_the_relay_writes() {
    let srv = TmuxServer::start();
    let opt_in: Vec<&str> = CATALOG
        .iter()
        .filter(|t| t.listed == Listed::OptIn)
        .map(|t| t.name)
        .collect();
    let mut every: Vec<&str> = vec!["--safety", "destructive"];
    for name in &opt_in {
        every.extend(["--enable-tool", name]);
    }
    let every_set = || enabled_set(Tier::Destructive, opt_in.iter().map(|n| n.to_string()));
    let surfaces: [(&str, Vec<&str>, Toolset, BTreeSet<String>); 3] = [
        (
            "default",
            vec![],
            Toolset::Default,
            enabled_set(Tier::Readonly, []),
        ),
        ("every tool", every.clone(), Toolset::Default, every_set()),
        (
            "every tool, --toolset python",
            [every.as_slice(), &["--toolset", "python"]].concat(),
            Toolset::Python,
            every_set(),
        ),
    ];
    for (label, args, toolset, enabled) in surfaces {
        let wire = tools_list(&srv, &args);
        let measured = tmux_mcp_broker::mcp::tools_list_line(toolset, &enabled);
        assert!(
            wire == measured,
            "{label}: the relay wrote {} B, the budget measures {} B: tmux_mcp_broker::mcp::tools_list_line must build what Handler::list_tools answers\nwire:     {}\nmeasured: {}",
            wire.len(),
            measured.len(),
            String::from_utf8_lossy(&wire),
            String::from_utf8_lossy(&measured),
        );
    }
}

/// What `tools/list` leaves out is one read away: `tmux://tool/{name}` holds
/// the tool's details and every argument with its whole description, for a
/// tool this session cannot call too (saying why); an unknown tool is an
/// MCP resource-not-found error.
#[test]
fn each_tool_reference_is_a_resource() {
    let srv = TmuxServer::start();
    let mut raw = RawClient::attach(&srv, &[]);
    raw.initialize();
    let templates = raw.request(2, "resources/templates/list", json!({}));
    assert!(
        templates["result"]["resourceTemplates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["uriTemplate"] == "tmux://tool/{name}"),
        "{templates}"
    );
    let read = |raw: &mut RawClient, id: i64, uri: &str| {
        raw.request(id, "resources/read", json!({ "uri": uri }))
    };
    let r = read(&mut raw, 3, "tmux://tool/capture_since");
    let c = &r["result"]["contents"][0];
    assert_eq!(c["mimeType"], "text/markdown", "{r}");
    let text = c["text"].as_str().unwrap();
    for want in [
        "# capture_since\n",
        // the details tools/list leaves out
        "history_trimmed by history-limit",
        // each argument, with the paragraph tools/list cuts
        "- `cursor` (",
        "32 hex digits",
        "- `waitMs` (",
        "## Result",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
    // A tool this session may not call: documented, and why it is off.
    let r = read(&mut raw, 4, "tmux://tool/kill_pane");
    let text = r["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("Not enabled in this session: kill_pane is in the destructive safety tier"),
        "{text}"
    );
    assert!(text.contains("- `paneId` ("), "{text}");
    let r = read(&mut raw, 5, "tmux://tool/no_such_tool");
    assert_eq!(r["error"]["code"], -32002, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_tool"),
        "{r}"
    );
    let _ = raw.close();
}
