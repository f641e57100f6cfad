//! `scripts/bench`: tmux_capture through a real MCP client (rmcp), against a
//! real tmux server. Prints p50/p90 of snapshot captures, of tracked deltas with
//! one line appended between calls, of an MCP `ping`, and of a fork+exec of
//! `tmux capture-pane -p`, with their ratios, the CPU the broker, relay and tmux
//! server spend per call, and the size of a one-line delta
//! response on two pane sizes.

use serde_json::{json, Value};
use std::process::Command;
use std::time::{Duration, Instant};
use tmux_mcp_e2e::{McpClient, TmuxServer};

const N: usize = 200;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// CPU time `pid` has used so far, every thread (the first field of each
/// task's `schedstat`, in ns: exact, unlike the 10 ms ticks of `stat`).
fn cpu_ns(pid: u32) -> u64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// A pane of `w`×`h` that prints every line written to `fifo`, after `lines`
/// lines of text.
fn text_pane(server: &TmuxServer, w: u32, h: u32, lines: usize, fifo: &std::path::Path) -> String {
    let st = Command::new("mkfifo").arg(fifo).status().unwrap();
    assert!(st.success());
    let script = format!(
        "i=1; while [ $i -le {lines} ]; do echo \"line $i of the benchmark pane: lorem ipsum dolor sit amet\"; i=$((i+1)); done; while true; do cat {}; done",
        fifo.display()
    );
    let id = server
        .tmux(&["new-window", "-P", "-F", "#{pane_id}", "sh", "-c", &script])
        .trim()
        .to_string();
    server.tmux(&[
        "resize-window",
        "-t",
        &id,
        "-x",
        &w.to_string(),
        "-y",
        &h.to_string(),
    ]);
    wait_for(server, &id, &format!("line {lines} of"));
    id
}

fn wait_for(server: &TmuxServer, pane: &str, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server
        .tmux(&["capture-pane", "-p", "-t", pane])
        .contains(text)
    {
        assert!(
            Instant::now() < deadline,
            "pane {pane} never showed {text:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn append(fifo: &std::path::Path, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
    writeln!(f, "{line}").unwrap();
}

/// `follow`: the cursor's scope includes the history (what a client following
/// scrolling output asks for), so a scrolled line moves into history and the
/// splice stays one inserted row. Without it the visible window slides on every
/// scroll, the rows share no prefix or suffix, and the splice is a reset.
async fn delta_run(
    client: &McpClient,
    server: &TmuxServer,
    target: &Value,
    pane: &str,
    fifo: &std::path::Path,
    n: usize,
    follow: bool,
) -> (Vec<f64>, Vec<usize>) {
    let args = if follow {
        json!({ "target": target, "track": true, "history_lines": 1000, "max_lines": 1000 })
    } else {
        json!({ "target": target, "track": true })
    };
    let first = client.call_raw("tmux_capture", args).await;
    let mut cursor = first.structured_content.unwrap()["data"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_string();
    let (mut times, mut sizes) = (Vec::new(), Vec::new());
    for i in 0..n {
        let line = format!("appended {i}");
        append(fifo, &line);
        wait_for(server, pane, &line);
        let t = Instant::now();
        let r = client
            .call_raw(
                "tmux_capture",
                json!({ "target": target, "cursor": cursor }),
            )
            .await;
        times.push(ms(t.elapsed()));
        let s = r.structured_content.clone().unwrap();
        assert_eq!(s["ok"], true, "{s}");
        assert_eq!(s["data"]["mode"], "delta");
        sizes.push(
            serde_json::to_string(&json!({ "jsonrpc": "2.0", "id": i, "result": r }))
                .unwrap()
                .len(),
        );
        cursor = s["data"]["next_cursor"].as_str().unwrap().to_string();
    }
    (times, sizes)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let server = TmuxServer::start();
    let fifo = server.scratch("fifo");
    let pane = text_pane(&server, 200, 50, 40, &fifo);
    let client = McpClient::attach(
        &server,
        &["--enable-tool", "tmux_capture", "--scope", "server"],
    )
    .await;
    let caps = client.call("tmux_capabilities", json!({})).await;
    let generation = caps["data"]["server_identity"]["generation"]
        .as_str()
        .unwrap()
        .to_string();
    let target = json!({ "kind": "pane", "id": pane, "generation": generation });

    // Warm-up.
    for _ in 0..20 {
        client
            .call_raw("tmux_capture", json!({ "target": target }))
            .await;
    }
    let mut snap = Vec::new();
    let mut snap_bytes = 0;
    for _ in 0..N {
        let t = Instant::now();
        let r = client
            .call_raw("tmux_capture", json!({ "target": target }))
            .await;
        snap.push(ms(t.elapsed()));
        snap_bytes = r.structured_content.as_ref().unwrap()["data"]["bytes"]
            .as_u64()
            .unwrap();
    }
    let mut ping = Vec::new();
    for _ in 0..N {
        let t = Instant::now();
        client.ping().await;
        ping.push(ms(t.elapsed()));
    }
    let mut fork = Vec::new();
    for _ in 0..N {
        let t = Instant::now();
        let out = Command::new("tmux")
            .arg("-S")
            .arg(server.socket())
            .args(["capture-pane", "-p", "-t", &pane])
            .output()
            .unwrap();
        fork.push(ms(t.elapsed()));
        assert!(out.status.success());
    }
    // The same snapshot through a bare JSON-RPC line client on its own relay:
    // what the broker and relay cost, without rmcp's client-side work.
    let mut raw = Vec::new();
    let broker_pid = server.status()["broker_pid"].as_u64().expect("broker pid") as u32;
    // Broker, relay, tmux server: ms of CPU per call.
    let cpu_per_call = {
        use std::io::{BufRead, BufReader, Write};
        let mut child = Command::new(tmux_mcp_e2e::bin("tmux-mcp"))
            .args([
                "attach",
                "-S",
                server.socket_str(),
                "--enable-tool",
                "tmux_capture",
                "--scope",
                "server",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        let mut output = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        // The MCP lifecycle first: a call before `initialize` is refused.
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
        input
            .write_all((init.to_string() + "\n").as_bytes())
            .unwrap();
        output.read_line(&mut line).unwrap();
        assert!(line.contains("\"result\""), "initialize: {line}");
        let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        input
            .write_all((ready.to_string() + "\n").as_bytes())
            .unwrap();
        let call = serde_json::to_string(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "tmux_capture", "arguments": { "target": target } } })).unwrap() + "\n";
        let pids = [broker_pid, child.id(), server.pid()];
        let mut cpu_before = [0u64; 3];
        for i in 0..(N + 20) {
            if i == 20 {
                cpu_before = pids.map(cpu_ns);
            }
            let t = Instant::now();
            input.write_all(call.as_bytes()).unwrap();
            line.clear();
            output.read_line(&mut line).unwrap();
            if i >= 20 {
                raw.push(ms(t.elapsed()));
            }
            assert!(line.contains("\"ok\":true"), "{line}");
        }
        let used: Vec<f64> = pids
            .iter()
            .zip(cpu_before)
            .map(|(p, b)| (cpu_ns(*p) - b) as f64 / 1e6 / N as f64)
            .collect();
        drop(input);
        let _ = child.wait();
        (used[0], used[1], used[2])
    };

    // One round trip of the broker's in-process tmux client (what a capture does twice).
    let mut direct = Vec::new();
    let mut direct_cap = Vec::new();
    let probe = tmux_mcp_core::tmux::Tmux::new(server.socket());
    assert!(
        probe.try_enable_direct().await,
        "the in-process tmux client works on this tmux"
    );
    for _ in 0..N {
        let t = Instant::now();
        tmux_mcp_core::tmux::direct::run_async(
            server.socket(),
            &["show-hooks", "-g", "after-capture-pane"],
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        direct.push(ms(t.elapsed()));
        let t = Instant::now();
        tmux_mcp_core::tmux::direct::run_async(
            server.socket(),
            &["capture-pane", "-p", "-t", &pane],
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        direct_cap.push(ms(t.elapsed()));
    }
    let (mut delta, sizes) = delta_run(&client, &server, &target, &pane, &fifo, N, true).await;
    let (mut window_delta, window_sizes) =
        delta_run(&client, &server, &target, &pane, &fifo, 20, false).await;

    // The same one-line delta on a pane four times the size.
    let fifo2 = server.scratch("fifo2");
    let big = text_pane(&server, 400, 100, 90, &fifo2);
    let big_target = json!({ "kind": "pane", "id": big, "generation": generation });
    let (_, big_sizes) = delta_run(&client, &server, &big_target, &big, &fifo2, 20, true).await;

    let (s50, s90) = (pct(&mut snap, 0.5), pct(&mut snap, 0.9));
    let (d50, d90) = (pct(&mut delta, 0.5), pct(&mut delta, 0.9));
    let (p50, p90) = (pct(&mut ping, 0.5), pct(&mut ping, 0.9));
    let (f50, f90) = (pct(&mut fork, 0.5), pct(&mut fork, 0.9));
    let max_size = *sizes.iter().max().unwrap();
    let big_max = *big_sizes.iter().max().unwrap();
    println!("tmux_capture benchmark: {N} sequential calls each, 200x50 pane holding 40 lines ({snap_bytes} bytes captured)");
    println!(
        "  snapshot capture        p50 {s50:7.3} ms   p90 {s90:7.3} ms   (target p50 <= 1.0 ms)"
    );
    println!("  tracked delta (+1 line) p50 {d50:7.3} ms   p90 {d90:7.3} ms");
    println!("  snapshot, bare JSON-RPC client p50 {:7.3} ms   (the same call without rmcp's client-side work)", pct(&mut raw, 0.5));
    let (cb, cr, ct) = cpu_per_call;
    println!("    CPU per call (schedstat): broker {cb:.3} ms (its own time; target <= 0.35 ms on tmux >= 3.5, <= 0.6 ms before), relay {cr:.3} ms, tmux server {ct:.3} ms");
    println!("  MCP ping round trip     p50 {p50:7.3} ms   p90 {p90:7.3} ms");
    println!("  tmux capture-pane fork  p50 {f50:7.3} ms   p90 {f90:7.3} ms");
    println!(
        "  in-process tmux client: show-hooks p50 {:7.3} ms, capture-pane p50 {:7.3} ms",
        pct(&mut direct, 0.5),
        pct(&mut direct_cap, 0.5)
    );
    println!(
        "  ratios: snapshot/ping {:.2}x, fork+exec/snapshot {:.2}x, delta/snapshot {:.2}x",
        s50 / p50,
        f50 / s50,
        d50 / s50
    );
    println!("  one-line delta response (scope with history): max {max_size} bytes on 200x50, max {big_max} bytes on 400x100 (target < 1024, not growing)");
    let w50 = pct(&mut window_delta, 0.5);
    println!("  visible-window-only cursor on a scrolling pane: every scroll is a reset, p50 {w50:.3} ms, response max {} bytes", window_sizes.iter().max().unwrap());
    client.close().await;
}
