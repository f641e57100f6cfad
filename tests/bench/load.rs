//! `scripts/bench --load`: the broker under the loads the outside testers used
//! (issue "Exact and safe under scrutiny", items 12–14). Prints figures; asserts
//! nothing about speed.
//!
//! 1. Retention memory: 120 (then 240) `tmux_snapshot` listings of a server with
//!    1,001 panes (100 sessions × 10 windows), broker RSS before, during, after.
//! 2. A soak of 32 agents for `TMUX_MCP_SOAK_SECONDS` (default 60): each takes
//!    tracked captures and continues its earlier cursors; counts captures
//!    refused for capacity and cursors lost (`stale_cursor` on a live pane).

use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tmux_mcp_e2e::{big_server, McpClient, TmuxServer};

fn rss_kib(pid: u64) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

async fn retention_rss() {
    let srv = big_server();
    let c = McpClient::attach(&srv, &["--scope", "server"]).await;
    let caps = c.call("tmux_capabilities", json!({})).await;
    let broker = caps["data"]["broker"]["pid"].as_u64().unwrap();
    let panes = c
        .call("tmux_snapshot", json!({ "entity": "pane", "limit": 1 }))
        .await;
    let cursor = panes["data"]["next_cursor"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let start = rss_kib(broker);
    let mut marks = Vec::new();
    let t = Instant::now();
    for i in 1..=240 {
        let r = c
            .call_raw("tmux_snapshot", json!({ "entity": "pane", "limit": 50 }))
            .await;
        assert_eq!(r.structured_content.as_ref().unwrap()["ok"], true);
        if [30, 60, 120, 180, 240].contains(&i) {
            marks.push((i, rss_kib(broker)));
        }
    }
    let per_call = t.elapsed().as_secs_f64() * 1000.0 / 240.0;
    let first_page = c
        .call_raw("tmux_snapshot", json!({ "cursor": cursor }))
        .await;
    c.close().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = rss_kib(broker);
    println!(
        "retention memory: tmux_snapshot of {} panes, limit 50 (each result retained for paging)",
        1 + 100 * 10
    );
    println!("  broker RSS at start            {:7.1} MiB", mib(start));
    for (i, k) in marks {
        println!("  after {i:3} snapshots            {:7.1} MiB", mib(k));
    }
    println!("  after the client left          {:7.1} MiB   (entries stay for their 600 s TTL by design)", mib(after));
    println!(
        "  the first snapshot's page cursor after 240 more: {}",
        if first_page.structured_content.unwrap()["ok"] == true {
            "still served"
        } else {
            "evicted (budget)"
        }
    );
    println!("  mean snapshot call             {per_call:7.1} ms");
}

#[derive(Default)]
struct Counts {
    captures: AtomicU64,
    refused: AtomicU64,
    followups: AtomicU64,
    lost: AtomicU64,
    other_errors: AtomicU64,
}

async fn soak(seconds: u64) {
    let srv = TmuxServer::start();
    let mut panes = vec!["%0".to_string()];
    for _ in 0..3 {
        panes.push(
            srv.tmux(&[
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "sh -c 'while :; do date +%s%N; sleep 0.2; done'",
            ])
            .trim()
            .to_string(),
        );
    }
    let mut agents = Vec::new();
    for _ in 0..32 {
        agents.push(Arc::new(
            McpClient::attach(
                &srv,
                &["--enable-tool", "tmux_capture", "--scope", "server"],
            )
            .await,
        ));
    }
    let caps = agents[0].call("tmux_capabilities", json!({})).await;
    let gen = caps["data"]["server_identity"]["generation"]
        .as_str()
        .unwrap()
        .to_string();
    let broker = caps["data"]["broker"]["pid"].as_u64().unwrap();
    let counts = Arc::new(Counts::default());
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for (n, a) in agents.iter().enumerate() {
        let (a, gen, counts, panes) = (a.clone(), gen.clone(), counts.clone(), panes.clone());
        tasks.push(tokio::spawn(async move {
            let mut seed = 0x9e3779b97f4a7c15u64 ^ (n as u64 + 1);
            let mut rand = move || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            };
            let mut cursors: Vec<(Value, String)> = Vec::new();
            while Instant::now() < end {
                let pane = &panes[(rand() % panes.len() as u64) as usize];
                let target = json!({ "kind": "pane", "id": pane, "generation": gen });
                let r = a
                    .call_raw(
                        "tmux_capture",
                        json!({ "target": target, "track": true, "max_lines": 5 }),
                    )
                    .await;
                let s = r.structured_content.unwrap();
                counts.captures.fetch_add(1, Ordering::Relaxed);
                match (s["ok"].as_bool(), s["error"]["code"].as_str()) {
                    (Some(true), _) => cursors.push((
                        target,
                        s["data"]["next_cursor"].as_str().unwrap().to_string(),
                    )),
                    (_, Some("capacity")) => {
                        counts.refused.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {
                        counts.other_errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
                // Keep the newest 64; follow one of them up at random.
                if cursors.len() > 64 {
                    cursors.remove(0);
                }
                if !cursors.is_empty() {
                    let (target, cursor) =
                        cursors[(rand() % cursors.len() as u64) as usize].clone();
                    let r = a
                        .call_raw(
                            "tmux_capture",
                            json!({ "target": target, "cursor": cursor }),
                        )
                        .await;
                    let s = r.structured_content.unwrap();
                    counts.followups.fetch_add(1, Ordering::Relaxed);
                    match (s["ok"].as_bool(), s["error"]["code"].as_str()) {
                        (Some(true), _) => {}
                        (_, Some("stale_cursor")) => {
                            counts.lost.fetch_add(1, Ordering::Relaxed);
                        }
                        (_, Some("capacity")) => {
                            counts.refused.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            counts.other_errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let c = &counts;
    println!("soak: 32 agents, {seconds} s, 4 live panes, tracked captures (max_lines 5) and follow-ups of earlier cursors");
    println!(
        "  captures {}  follow-ups {}  refused (capacity) {}  cursors lost (stale_cursor on a live pane) {}  other errors {}",
        c.captures.load(Ordering::Relaxed),
        c.followups.load(Ordering::Relaxed),
        c.refused.load(Ordering::Relaxed),
        c.lost.load(Ordering::Relaxed),
        c.other_errors.load(Ordering::Relaxed)
    );
    println!(
        "  aggregate {:.0} calls/s; broker RSS at the end {:.1} MiB",
        (c.captures.load(Ordering::Relaxed) + c.followups.load(Ordering::Relaxed)) as f64
            / seconds as f64,
        mib(rss_kib(broker))
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let seconds = std::env::var("TMUX_MCP_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    retention_rss().await;
    soak(seconds).await;
}
