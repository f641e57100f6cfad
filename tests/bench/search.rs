//! `search_panes` across 100 panes through a real MCP client (rmcp), against a
//! real tmux server: p50/p90 of a search that matches nothing, of one that
//! matches a line in every pane, and of the same with 50 lines of scrollback
//! (and the Python spelling's `-J` search, `--toolset python`);
//! plus the tmux commands one search costs. Prints figures, asserts nothing
//! about speed. `cargo bench -p tmux-mcp-e2e --bench search` (release; with
//! `TMUX_MCP_E2E_NO_BUILD=1` after `cargo build --release --bins`), or
//! `cargo test -p tmux-mcp-e2e --bench search` for a debug-build figure.

use serde_json::json;
use std::time::{Duration, Instant};
use tmux_mcp_e2e::{McpClient, TmuxServer};

const PANES: usize = 100;
const N: usize = 30;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let server = TmuxServer::start();
    let script = "i=1; while [ $i -le 60 ]; do echo \"line $i of a search benchmark pane: lorem ipsum dolor sit amet\"; i=$((i+1)); done; exec sleep 1000";
    // main's first pane is a shell; 99 windows more print 60 lines each (the
    // visible screen is 50 rows, so 10 are in history).
    for _ in 1..PANES {
        server.tmux(&["new-window", "-d", "-t", "main:", "sh", "-c", script]);
    }
    let ids: Vec<String> = server
        .tmux(&["list-panes", "-a", "-F", "#{pane_id}"])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(ids.len(), PANES);
    let deadline = Instant::now() + Duration::from_secs(30);
    for id in ids.iter().skip(1) {
        while !server
            .tmux(&["capture-pane", "-p", "-t", id])
            .contains("line 60 of")
        {
            assert!(
                Instant::now() < deadline,
                "pane {id} never printed its lines"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let client = McpClient::attach(&server, &[]).await;
    let python = McpClient::attach(&server, &["--toolset", "python"]).await;
    for (client, label, args) in [
        (
            &client,
            "no match",
            json!({ "pattern": "needle-that-is-nowhere" }),
        ),
        (
            &client,
            "a match per pane",
            json!({ "pattern": "line 42 of" }),
        ),
        (
            &client,
            "regex, 50 lines of scrollback",
            json!({ "pattern": "line [0-9]+ of a search", "regex": true, "scrollbackLines": 50, "maxMatchesPerPane": 1 }),
        ),
        (
            &python,
            "Python spelling, no match (-J)",
            json!({ "pattern": "needle-that-is-nowhere" }),
        ),
        (
            &python,
            "Python spelling, a match per pane",
            json!({ "pattern": "line 42 of" }),
        ),
    ] {
        let first = client.call("search_panes", args.clone()).await;
        // The two spellings name their counts differently (the Python one
        // reports panes matched, not panes searched).
        let searched = first["panesSearched"].as_u64().map_or_else(
            || format!("{} matched", first["total_panes_matched"]),
            |n| n.to_string(),
        );
        let matches = first["totalMatches"].as_u64().unwrap_or_else(|| {
            first["matches"].as_array().map_or(0, |m| {
                m.iter()
                    .map(|p| p["matched_lines"].as_array().map_or(0, Vec::len) as u64)
                    .sum()
            })
        });
        let clamped = if first["matchingClamped"] == true || first["truncated"] == true {
            ", a budget or cap reached"
        } else {
            ""
        };
        let before = server.status()["tmux_connections"].as_u64().unwrap();
        let mut times = Vec::with_capacity(N);
        for _ in 0..N {
            let t = Instant::now();
            client.call_raw("search_panes", args.clone()).await;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let per_call =
            (server.status()["tmux_connections"].as_u64().unwrap() - before) as f64 / N as f64;
        let (p50, p90) = (pct(&mut times, 0.5), pct(&mut times, 0.9));
        println!("search_panes {label:<36} {searched} panes, {matches} matches{clamped}: p50 {p50:7.2} ms  p90 {p90:7.2} ms  ({per_call:.0} tmux commands per call)");
    }
    python.close().await;
    client.close().await;
}
