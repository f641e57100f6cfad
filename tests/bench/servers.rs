//! `scripts/bench --servers`: reaching other tmux servers (issue 52), through
//! rmcp's client, release build. Prints figures and ratios beside the
//! issue's targets; asserts nothing about speed.
//!
//! 1. `capture_pane` of a 200×50 pane on the agent's own server, and of the
//!    same pane on another local server named by `server` (served by that
//!    server's broker over the agent's link), alternating call by call.
//!    Target: another server ≤ 1.5× the own server.
//! 2. `list_panes` (brief) of one server of 100 panes, and of as many such
//!    servers as this machine has cores (`available_parallelism`, at least
//!    2) in one call (`server: "*"`), alternating; then the same with five
//!    servers. Target (five) ≤ 2×. Each with the CPU per call of every tmux
//!    server and broker: the fan-out runs the listings at once, so with no
//!    more servers than cores the ratio shows its parallelism, and with more
//!    it shows the CPU floor.

use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tmux_mcp_e2e::{McpClient, TempDir, TmuxServer};

const N: usize = 200;
const LISTINGS: usize = 40;
/// The fan-out figure: five servers of 100 panes.
const FIVE: usize = 5;

fn pct(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn line(label: &str, v: &[f64]) {
    println!(
        "  {label:<52} p50 {:7.3} ms  p90 {:7.3} ms",
        pct(v, 0.5),
        pct(v, 0.9)
    );
}

/// `base/tmux-UID`, private as tmux makes it (the uid from a file just made).
fn socket_dir(base: &Path) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let probe = base.join("uid-probe");
    std::fs::write(&probe, "").unwrap();
    let uid = std::fs::metadata(&probe).unwrap().uid();
    std::fs::remove_file(&probe).unwrap();
    let dir = base.join(format!("tmux-{uid}"));
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// A 200×50 pane showing 50 lines of text; its id.
fn text_pane(srv: &TmuxServer) -> String {
    let script = "i=1; while [ $i -le 50 ]; do echo \"line $i of the benchmark pane: lorem ipsum dolor sit amet\"; i=$((i+1)); done; exec cat";
    let id = srv.new_pane(&format!("sh -c '{script}'"));
    srv.tmux(&["resize-window", "-t", &id, "-x", "200", "-y", "50"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !srv
        .tmux(&["capture-pane", "-p", "-t", &id])
        .contains("line 50 of")
    {
        assert!(Instant::now() < deadline, "the pane never filled");
        std::thread::sleep(Duration::from_millis(5));
    }
    id
}

/// `n` more panes on `srv` (windows of `cat`), so it has `n` + 1.
fn fill(srv: &TmuxServer, n: usize) {
    for _ in 0..n {
        srv.tmux(&["new-window", "-d", "cat"]);
    }
}

/// CPU time `pid` has used so far, every thread, in ns (`schedstat`).
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

async fn timed(c: &McpClient, tool: &str, args: &Value) -> f64 {
    let t = Instant::now();
    let r = c.call_raw(tool, args.clone()).await;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    assert_ne!(r.is_error, Some(true), "{tool} {args}: {r:?}");
    ms
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let base = TempDir::new("tmbs-");
    let dir = socket_dir(base.path());
    let own = TmuxServer::start_on_socket(&dir.join("default"));
    let tmpdir = base.path().to_str().unwrap().to_string();
    own.tmux(&["set-environment", "-g", "TMUX_TMPDIR", &tmpdir]);
    let work = TmuxServer::start_on_socket(&dir.join("work"));
    let own_pane = text_pane(&own);
    let work_pane = text_pane(&work);
    let c = McpClient::attach_env(&own, &[], &[("TMUX_TMPDIR", &tmpdir)]).await;

    println!("1. capture_pane of a 200x50 pane, {N} calls each, alternating");
    let here = json!({"paneId": own_pane});
    let there = json!({"paneId": work_pane, "server": "work"});
    for _ in 0..20 {
        timed(&c, "capture_pane", &here).await;
        timed(&c, "capture_pane", &there).await;
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..N {
        a.push(timed(&c, "capture_pane", &here).await);
        b.push(timed(&c, "capture_pane", &there).await);
    }
    line("own server", &a);
    line("another local server (server: \"work\")", &b);
    println!(
        "  ratio p50 {:.2}x (target <= 1.5x)",
        pct(&b, 0.5) / pct(&a, 0.5)
    );

    // As many servers as this machine has cores (the fan-out runs one
    // listing per server at once), then five: the figure.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let k = cores.clamp(2, FIVE);
    println!(
        "2. list_panes (brief) of 100-pane servers, {LISTINGS} calls each, alternating; \
         this machine has {cores} cores"
    );
    fill(&own, 100 - 2);
    drop(work);
    let mut others = Vec::new();
    let counts = if k < FIVE { vec![k, FIVE] } else { vec![FIVE] };
    for n in counts {
        while others.len() + 1 < n {
            let s = TmuxServer::start_on_socket(&dir.join(format!("s{}", others.len() + 1)));
            fill(&s, 99);
            others.push(s);
        }
        listings(&c, &own, &others).await;
    }
    c.close().await;
    drop(others);
}

/// `list_panes` of the own server against `server: "*"` (the own server and
/// `others`, 100 panes each), alternating, with the CPU every tmux server
/// and broker of the run spends per call (where the time goes when the
/// servers outnumber the cores).
async fn listings(c: &McpClient, own: &TmuxServer, others: &[TmuxServer]) {
    let servers = others.len() + 1;
    let one = json!({"detail": "brief", "limit": 500});
    let all = json!({"detail": "brief", "limit": 500, "server": "*"});
    // One of the others by name: its own broker's listing, relayed (the
    // longest leg of the fan-out).
    let another = json!({"detail": "brief", "limit": 500, "server": "s1"});
    let r = c.call("list_panes", all.clone()).await;
    let count: usize = r["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["result"]["panes"].as_array().map_or(0, Vec::len))
        .sum();
    println!("  {servers} servers' listing: {count} panes");
    for _ in 0..5 {
        timed(c, "list_panes", &one).await;
        timed(c, "list_panes", &another).await;
        timed(c, "list_panes", &all).await;
    }
    // Brokers after the warm-up: another server's is started by the first
    // call that reaches it.
    let mut tmux_pids: Vec<u32> = vec![own.pid()];
    tmux_pids.extend(others.iter().map(|s| s.pid()));
    let mut broker_pids = own.brokers();
    for s in others {
        broker_pids.extend(s.brokers());
    }
    let cpu = |p: &[u32]| p.iter().map(|&p| cpu_ns(p)).sum::<u64>() as f64 / 1e6;
    let (mut a, mut o, mut b) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ta, mut ba, mut tb, mut bb) = (0.0, 0.0, 0.0, 0.0);
    for _ in 0..LISTINGS {
        o.push(timed(c, "list_panes", &another).await);
        let (t0, b0) = (cpu(&tmux_pids), cpu(&broker_pids));
        a.push(timed(c, "list_panes", &one).await);
        let (t1, b1) = (cpu(&tmux_pids), cpu(&broker_pids));
        b.push(timed(c, "list_panes", &all).await);
        let (t2, b2) = (cpu(&tmux_pids), cpu(&broker_pids));
        ta += t1 - t0;
        ba += b1 - b0;
        tb += t2 - t1;
        bb += b2 - b1;
    }
    let n = LISTINGS as f64;
    line("one server (100 panes)", &a);
    println!(
        "    CPU per call: tmux servers {:.2} ms, brokers {:.2} ms",
        ta / n,
        ba / n
    );
    line("another server alone (server: \"s1\")", &o);
    line(&format!("{servers} servers (server: \"*\")"), &b);
    println!(
        "    CPU per call: tmux servers {:.2} ms, brokers {:.2} ms",
        tb / n,
        bb / n
    );
    println!(
        "  ratio p50 {:.2}x (target <= 2x at five servers)",
        pct(&b, 0.5) / pct(&a, 0.5)
    );
    // What the p50s would add up to if the listings ran one after another,
    // against the longest one alone (at once, plus the own broker's merge).
    let (own_ms, other_ms) = (pct(&a, 0.5), pct(&o, 0.5));
    println!(
        "  one after another would be about {:.1} ms (own + {} x another), all at once about {:.1} ms + the merge",
        own_ms + (servers - 1) as f64 * other_ms,
        servers - 1,
        own_ms.max(other_ms)
    );
}
