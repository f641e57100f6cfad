//! Input validation against the published schemas, the broker's own work on
//! every call: microseconds per `tools::validate_input` for a few typical
//! calls, valid and invalid (an invalid one also builds the error text); and
//! the `tools/list` entries of every tool (schemas derived by schemars).
//! Prints figures, asserts nothing. `cargo bench -p tmux-mcp-e2e --bench
//! validate` (the release profile, whose opt-level for jsonschema and its
//! dependencies is what this measures: see docs/benchmarks.md, "Build time").

use serde_json::{json, Value};
use std::time::Instant;

fn main() {
    let calls: [(&str, Value); 6] = [
        ("capture_pane", json!({ "paneId": "%3", "maxLines": 200 })),
        (
            "tmux_capture",
            json!({ "target": { "kind": "pane", "id": "%3", "generation": "0123456789abcdef" }, "track": true }),
        ),
        (
            "tmux_snapshot",
            json!({ "entity": "pane", "criteria": { "profile": "libtmux-ruby.where", "version": 1, "entity": "pane", "where": { "and": [{ "currentCommand": { "in": ["vim", "nvim", "less"] } }, { "window": { "is": { "name": { "startsWith": "dev" } } } }] } }, "limit": 100 }),
        ),
        (
            "search_panes",
            json!({ "pattern": "error: [a-z]+", "regex": true, "scrollbackLines": 200 }),
        ),
        ("capture_pane", json!({ "paneId": "3", "maxLines": -1 })),
        (
            "tmux_capture",
            json!({ "target": { "kind": "pane", "id": "%3" }, "cursor": 7 }),
        ),
    ];
    const N: u32 = 20_000;
    for (name, args) in &calls {
        let valid = tmux_mcp_broker::tools::validate_input(name, args).is_ok();
        // The validators are compiled once, on first use.
        let t = Instant::now();
        for _ in 0..N {
            std::hint::black_box(
                tmux_mcp_broker::tools::validate_input(name, std::hint::black_box(args)).is_ok(),
            );
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / f64::from(N);
        println!(
            "validate {name:<14} {:<7} {us:8.2} us per call",
            if valid { "valid" } else { "invalid" }
        );
    }
    let tools: Vec<_> =
        tmux_mcp_broker::tools::catalog(tmux_mcp_broker::toolkit::call::spec::Toolset::Default)
            .collect();
    let t = Instant::now();
    const M: u32 = 200;
    for _ in 0..M {
        for spec in &tools {
            std::hint::black_box(tmux_mcp_broker::toolkit::schemas::publish::describe(
                spec,
                tmux_mcp_broker::toolkit::call::spec::Toolset::Default,
            ));
        }
    }
    println!(
        "tools/list entries of all {} tools: {:8.1} us",
        tools.len(),
        t.elapsed().as_secs_f64() * 1e6 / f64::from(M)
    );
}
