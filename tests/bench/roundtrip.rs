//! What one tmux client connection costs against the command it carries
//! (issue 8, item 5), through the broker's own in-process protocol client
//! (`tmux_mcp::tmux::Tmux`, the framing its start-up probe picks): N
//! connections each running one hook-free `list-commands -F x list-commands`,
//! N connections each running K of them joined with `;` (so per command =
//! (batch - single) / (K - 1), per connection = single - per command), a
//! `capture-pane -p` of a 200x50 pane, and a `tmux_capture` through an MCP
//! client with the tmux invocations it cost (`status` `tmux_commands`).
//! Prints p50/p90 in ms; asserts nothing.

use serde_json::json;
use std::time::{Duration, Instant};
use tmux_mcp::tmux::Tmux;
use tmux_mcp_e2e::{generation, pane_ref, tmux_version, McpClient, TmuxServer};

const N: usize = 400;
const K: usize = 50;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn time_direct(tmux: &Tmux, args: &[&str]) -> Vec<f64> {
    let mut t = Vec::with_capacity(N);
    for _ in 0..N {
        let t0 = Instant::now();
        let out = tmux.output(args, Duration::from_secs(5)).await.expect("tmux command");
        t.push(ms(t0.elapsed()));
        assert_eq!(out.status, 0, "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    t
}

fn line(label: &str, v: &mut [f64]) -> f64 {
    let p50 = pct(v, 0.5);
    println!("{label:<58} p50 {p50:>7.3} ms   p90 {:>7.3} ms", pct(v, 0.9));
    p50
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (_, _, version) = tmux_version();
    let srv = TmuxServer::start();
    srv.tmux(&["resize-window", "-t", "main", "-x", "200", "-y", "50"]);
    let tmux = Tmux::new(srv.socket());
    assert!(tmux.try_enable_direct().await, "the in-process tmux client was refused");
    println!("tmux {version}, in-process client framing {:?}, {N} runs each", tmux.framing().unwrap());

    let one = ["list-commands", "-F", "x", "list-commands"];
    let mut batch: Vec<&str> = Vec::new();
    for i in 0..K {
        if i > 0 {
            batch.push(";");
        }
        batch.extend_from_slice(&one);
    }
    // Warm-up: the server's first connections allocate.
    time_direct(&tmux, &one).await;
    let single = line("1 connection, 1 hook-free command", &mut time_direct(&tmux, &one).await);
    let batched = line(&format!("1 connection, {K} hook-free commands (;)"), &mut time_direct(&tmux, &batch).await);
    let per_cmd = (batched - single) / (K - 1) as f64;
    println!("=> per command {:.4} ms, per connection (identify, command message, exit) {:.3} ms ({:.0}% of a single-command call)", per_cmd, single - per_cmd, 100.0 * (single - per_cmd) / single);
    line("1 connection, capture-pane -p (200x50)", &mut time_direct(&tmux, &["capture-pane", "-p", "-t", "%0"]).await);

    let c = McpClient::attach(&srv, &["--enable-tool", "tmux_capture"]).await;
    let gen = generation(&c).await;
    let args = json!({"target": pane_ref(&gen, "%0")});
    c.call_envelope("tmux_capture", args.clone()).await.data();
    let before = srv.status()["tmux_commands"].as_u64().unwrap();
    let mut t = Vec::with_capacity(N);
    for _ in 0..N {
        let t0 = Instant::now();
        let r = c.call_raw("tmux_capture", args.clone()).await;
        t.push(ms(t0.elapsed()));
        assert_ne!(r.is_error, Some(true), "{:?}", r.content);
    }
    let per_call = (srv.status()["tmux_commands"].as_u64().unwrap() - before) as f64 / N as f64;
    line("tmux_capture through rmcp (200x50)", &mut t);
    println!("=> tmux invocations (= connections) per tmux_capture: {per_call:.2}");
    c.close().await;
}
