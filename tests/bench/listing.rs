//! `scripts/bench --listing`: `list_panes`, `list_windows` and `tmux_snapshot` on a server of
//! 1,001 panes (100 sessions × 10 windows), and where the time goes. Prints
//! figures; asserts nothing about speed.
//!
//! 1. tmux's side, through the broker's own in-process client: a bare command,
//!    the `#{S:#{W:#{P:…}}}` loop with nothing in it, the transfer of as many
//!    bytes as the table has, the table itself; then our parse of it.
//! 2. Whole calls through rmcp's client and through the official Python SDK
//!    (`tests/bench/listing.py`), the response sizes, and what encoding and
//!    decoding that JSON costs.
//! 3. Broker RSS after 120 `list_panes` + 120 `tmux_snapshot` (limit 50, so
//!    each result is retained for paging), and after 120 more of each.
//!
//! With `TMUX_MCP_BENCH_BEFORE=DIR` (a directory holding another build's
//! `tmux-mcp` and `tmux-mcp-broker`), 2 and 3 run for that build too, on a second
//! server of the same shape, interleaved round by round with this build.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use tmux_mcp_core::feed;
use tmux_mcp_core::tmux::Tmux;
use tmux_mcp_e2e::{big_server, bin, repo_root, McpClient, TmuxServer};

const ROUNDS: usize = 40;
const MEMORY_ROUNDS: usize = 120;

fn pct(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn line(label: &str, v: &[f64]) {
    println!(
        "  {label:<58} p50 {:7.2} ms  p90 {:7.2} ms",
        pct(v, 0.5),
        pct(v, 0.9)
    );
}

/// Wall times, and the tmux server's mean CPU per read.
fn tmux_line(label: &str, (v, cpu): &(Vec<f64>, f64)) {
    println!(
        "  {label:<58} p50 {:7.2} ms  p90 {:7.2} ms  tmux CPU {cpu:6.1} ms/read",
        pct(v, 0.5),
        pct(v, 0.9)
    );
}

/// CPU time (user + system) of process `pid` so far, in ms: the tmux server's
/// own cost of a read, which other load on the machine barely changes (wall
/// times do). Clock ticks of 10 ms, so only means over many reads mean much.
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let f: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, r)| r)
        .split_whitespace()
        .collect();
    let ticks: f64 = f.get(11).zip(f.get(12)).map_or(0.0, |(u, s)| {
        u.parse::<f64>().unwrap_or(0.0) + s.parse::<f64>().unwrap_or(0.0)
    });
    ticks * 1000.0 / tmux_mcp_core::platform::process_table::clock_ticks_per_second() as f64
}

fn rss_kib(pid: u64) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn tmux_side(srv: &TmuxServer) {
    let tmux = Tmux::new(srv.socket());
    let direct = tmux.try_enable_direct().await;
    let timeout = Duration::from_secs(10);
    let expand = |format: String| {
        let tmux = &tmux;
        async move {
            let mut times = Vec::new();
            let mut out = Vec::new();
            let cpu = cpu_ms(srv.pid());
            for _ in 0..ROUNDS {
                let t = Instant::now();
                let o = tmux
                    .output(&["list-commands", "-F", &format, "list-commands"], timeout)
                    .await
                    .expect("list-commands");
                times.push(ms(t.elapsed()));
                assert_eq!(o.status, 0);
                out = o.stdout;
            }
            ((times, (cpu_ms(srv.pid()) - cpu) / ROUNDS as f64), out)
        }
    };
    let (table_t, table) = expand(feed::table_format()).await;
    let (bare_table_t, _) = expand(feed::shaped_format(
        &feed::Shape::FULL,
        feed::Spelling::Bare,
    ))
    .await;
    let parsed = feed::parse(&table).expect("the table parses");
    assert_eq!(table_t.0.len(), ROUNDS);
    let panes = parsed.rows.len();
    let per_pane = table.len() / panes.max(1);
    let (bare_t, _) = expand("x".into()).await;
    let (loop_t, _) = expand("#{S:#{W:#{P:x}}}".into()).await;
    let (bytes_t, bytes) = expand(format!("#{{S:#{{W:#{{P:{}}}}}}}", "x".repeat(per_pane))).await;
    // What list_panes reads instead (feed::Shape): a first page's sessions
    // (the ten holding the 100 lowest pane ids here) in full and the rest
    // placed; and the brief fields of every pane.
    let page_sessions: Vec<String> = {
        let mut by_id: Vec<_> = parsed.rows.iter().collect();
        by_id.sort_by_key(|r| r.pane_id[1..].parse::<u64>().unwrap_or(u64::MAX));
        let mut s: Vec<String> = by_id[..100.min(by_id.len())]
            .iter()
            .map(|r| r.session_id.clone())
            .collect();
        s.sort();
        s.dedup();
        s
    };
    let page_shape = feed::Shape {
        depth: feed::Depth::Full,
        only: Some(&page_sessions),
    };
    let (page_t, page) = expand(feed::shaped_format(&page_shape, feed::Spelling::Bare)).await;
    let page_rows = feed::parse(&page).expect("the page table parses").rows;
    assert_eq!(page_rows.len(), panes, "a shaped table places every pane");
    // A fresh read of one pane (a session-scoped agent's capture): its
    // session in full, the rest placed (observe::find_pane).
    let one = [parsed.rows[0].session_id.clone()];
    let one_shape = feed::Shape {
        depth: feed::Depth::Full,
        only: Some(&one),
    };
    let (one_t, _) = expand(feed::shaped_format(&one_shape, feed::Spelling::Bare)).await;
    let brief_shape = feed::Shape {
        depth: feed::Depth::Brief,
        only: None,
    };
    let (brief_t, brief) = expand(feed::shaped_format(&brief_shape, feed::Spelling::Bare)).await;
    assert_eq!(
        feed::parse(&brief)
            .expect("the brief table parses")
            .rows
            .len(),
        panes
    );
    let mut parse_t = Vec::new();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let p = feed::parse(&table).unwrap();
        parse_t.push(ms(t.elapsed()));
        assert_eq!(p.rows.len(), panes);
    }
    println!(
        "tmux side ({}): {panes} pane placements, table {} kB",
        if direct {
            "in-process protocol client"
        } else {
            "exec of tmux"
        },
        table.len() / 1000
    );
    tmux_line("one command, nothing expanded (connection)", &bare_t);
    tmux_line("the S/W/P loop with one byte per pane", &loop_t);
    tmux_line(
        &format!("the loop printing {} kB (transfer)", bytes.len() / 1000),
        &bytes_t,
    );
    tmux_line("the table (expansion + transfer)", &table_t);
    tmux_line(
        "the table, command and path bare (what the broker reads)",
        &bare_table_t,
    );
    tmux_line(
        &format!(
            "a first page's table: {} sessions full, the rest placed ({} kB)",
            page_sessions.len(),
            page.len() / 1000
        ),
        &page_t,
    );
    tmux_line(
        "one pane's fresh read: its session full, the rest placed",
        &one_t,
    );
    tmux_line(
        &format!("every pane brief ({} kB)", brief.len() / 1000),
        &brief_t,
    );
    line("our parse of it", &parse_t);
}

/// One build's client and broker on its own big server.
struct Build {
    label: &'static str,
    client: McpClient,
    broker: u64,
    _srv: TmuxServer,
    tmux_mcp: PathBuf,
    sock: PathBuf,
}

impl Build {
    async fn start(label: &'static str, tmux_mcp: PathBuf) -> Build {
        let srv = big_server();
        let client = McpClient::attach_binary(
            &tmux_mcp,
            srv.socket(),
            &["--scope", "server"],
            srv.scratch("attach-stderr"),
        )
        .await;
        let caps = client.call("tmux_capabilities", json!({})).await;
        let broker = caps["data"]["broker"]["pid"].as_u64().unwrap();
        let sock = srv.socket().to_path_buf();
        Build {
            label,
            client,
            broker,
            _srv: srv,
            tmux_mcp,
            sock,
        }
    }

    async fn call(&self, name: &str, args: Value) -> (f64, usize) {
        let t = Instant::now();
        let r = self.client.call_raw(name, args).await;
        let took = ms(t.elapsed());
        assert_ne!(r.is_error, Some(true), "{name}: {r:?}");
        (took, serde_json::to_string(&r).unwrap().len())
    }
}

fn python() -> PathBuf {
    std::env::var_os("PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let venv = repo_root().join(".venv/bin/python");
            if venv.is_file() {
                venv
            } else {
                PathBuf::from("/work/main/.venv/bin/python")
            }
        })
}

/// Milliseconds per tool through the Python SDK, or why not.
fn python_sdk(sock: &Path, tmux_mcp: &Path, rounds: usize) -> Result<Value, String> {
    let script = repo_root().join("tests/bench/listing.py");
    let out = Command::new(python())
        .arg(script)
        .arg(sock)
        .arg(tmux_mcp)
        .arg(rounds.to_string())
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("")
            .to_string());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

/// A label, the tool and the arguments it is called with (the Python side,
/// tests/bench/listing.py, calls the same under the same labels).
type ToolCall = (&'static str, &'static str, fn() -> Value);

/// `list_panes` pages at 100 panes unless asked, `list_windows` at 100
/// windows; the whole table is one page of `limit` 10,000, full or brief.
const TOOLS: [ToolCall; 5] = [
    ("list_panes first page", "list_panes", || json!({})),
    ("list_windows first page", "list_windows", || json!({})),
    (
        "list_panes whole",
        "list_panes",
        || json!({ "limit": 10_000 }),
    ),
    (
        "list_panes whole brief",
        "list_panes",
        || json!({ "limit": 10_000, "detail": "brief" }),
    ),
    (
        "tmux_snapshot",
        "tmux_snapshot",
        || json!({ "entity": "pane", "limit": 200 }),
    ),
];

async fn calls(builds: &[Build]) {
    for (label, name, args) in TOOLS {
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); builds.len()];
        let mut sizes = vec![0; builds.len()];
        let mut last: Vec<Value> = vec![Value::Null; builds.len()];
        for b in builds {
            b.call(name, args()).await; // warm: pidfd identities are acquired once
        }
        for _ in 0..ROUNDS {
            for (i, b) in builds.iter().enumerate() {
                let (t, size) = b.call(name, args()).await;
                times[i].push(t);
                sizes[i] = size;
            }
        }
        println!("{label}: {name} {} through rmcp's client:", args());
        for (i, b) in builds.iter().enumerate() {
            line(&format!("{} ({} kB)", b.label, sizes[i] / 1000), &times[i]);
            last[i] = serde_json::to_value(b.client.call_raw(name, args()).await).unwrap();
        }
        // What the result's JSON costs to write and to read, with serde_json.
        let text = serde_json::to_string(&last[0]).unwrap();
        let (mut enc, mut dec) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let t = Instant::now();
            let s = serde_json::to_string(&last[0]).unwrap();
            enc.push(ms(t.elapsed()));
            let t = Instant::now();
            let v: Value = serde_json::from_str(&s).unwrap();
            dec.push(ms(t.elapsed()));
            assert!(v.is_object());
        }
        line(
            &format!(
                "  serde_json: encode {} kB ({})",
                text.len() / 1000,
                builds[0].label
            ),
            &enc,
        );
        line(
            &format!(
                "  serde_json: decode {} kB ({})",
                text.len() / 1000,
                builds[0].label
            ),
            &dec,
        );
    }
    // Through the Python SDK: alternating builds, two halves each.
    let mut py: Vec<Vec<Value>> = vec![Vec::new(); builds.len()];
    for _ in 0..2 {
        for (i, b) in builds.iter().enumerate() {
            match python_sdk(&b.sock, &b.tmux_mcp, ROUNDS / 2) {
                Ok(v) => py[i].push(v),
                Err(e) => {
                    println!("through the Python SDK: not measured ({e}); set PYTHON to a python with tests/python/requirements.txt");
                    return;
                }
            }
        }
    }
    for (label, name, args) in TOOLS {
        println!(
            "{label}: {name} {} through the official Python SDK (ClientSession.call_tool):",
            args()
        );
        for (i, b) in builds.iter().enumerate() {
            let v: Vec<f64> = py[i]
                .iter()
                .flat_map(|r| {
                    r[label]["ms"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap())
                })
                .collect();
            line(
                &format!(
                    "{} (structured {} kB)",
                    b.label,
                    py[i][0][label]["structured_bytes"].as_u64().unwrap() / 1000
                ),
                &v,
            );
        }
    }
}

async fn memory(builds: &[Build]) {
    let mib = |k: u64| k as f64 / 1024.0;
    let mut marks: Vec<Vec<u64>> = builds.iter().map(|b| vec![rss_kib(b.broker)]).collect();
    for _ in 0..2 {
        for _ in 0..MEMORY_ROUNDS {
            for b in builds {
                b.call("list_panes", json!({})).await;
                b.call("tmux_snapshot", json!({ "entity": "pane", "limit": 50 }))
                    .await;
            }
        }
        for (i, b) in builds.iter().enumerate() {
            marks[i].push(rss_kib(b.broker));
        }
    }
    println!("broker RSS, {MEMORY_ROUNDS} list_panes + {MEMORY_ROUNDS} tmux_snapshot (limit 50: each result retained for paging) per step:");
    for (i, b) in builds.iter().enumerate() {
        let m = &marks[i];
        println!(
            "  {:<20} before {:6.1} MiB   after 120+120 {:6.1} MiB   after 240+240 {:6.1} MiB",
            b.label,
            mib(m[0]),
            mib(m[1]),
            mib(m[2])
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let srv = big_server();
    tmux_side(&srv).await;
    drop(srv);
    let mut builds = vec![Build::start("this build", bin("tmux-mcp")).await];
    if let Some(dir) = std::env::var_os("TMUX_MCP_BENCH_BEFORE").filter(|d| !d.is_empty()) {
        builds.push(
            Build::start(
                "before (TMUX_MCP_BENCH_BEFORE)",
                PathBuf::from(dir).join("tmux-mcp"),
            )
            .await,
        );
    }
    calls(&builds).await;
    memory(&builds).await;
}
