//! The input tools through a real MCP client (rmcp) against a real tmux server:
//! `run_command` of `true` in a bash pane against a bare `sh -c true` (p50 of
//! 30; the difference is the tool's overhead), and the latency from text
//! appearing in a pane to `wait_for_text` returning (p50/p90 of 30: the
//! printer stamps CLOCK_MONOTONIC right after writing, the bench right after
//! the call returns). Prints figures, asserts nothing about speed.
//! `cargo bench -p tmux-mcp-e2e --bench input` (release; `scripts/bench --input`).

use serde_json::json;
use std::time::{Duration, Instant};
use tmux_mcp_e2e::{poll, McpClient, TmuxServer};

const N: usize = 30;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// CLOCK_MONOTONIC in seconds (what Python's time.monotonic() reads).
fn monotonic() -> f64 {
    tmux_mcp_core::sys::monotonic_seconds()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let server = TmuxServer::start();
    let client = McpClient::attach(&server, &["--safety", "mutating"]).await;

    // run_command overhead.
    let bash = server.bash_pane();
    let mut tool = Vec::with_capacity(N);
    for i in 0..N + 3 {
        let t = Instant::now();
        let r = client
            .call_raw("run_command", json!({ "paneId": bash, "command": "true" }))
            .await
            .structured_content
            .expect("structuredContent");
        assert_eq!(r["exitStatus"], 0, "{r}");
        if i >= 3 {
            tool.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        if i % 10 == 9 {
            client
                .call("run_command", json!({ "paneId": bash, "command": "clear" }))
                .await;
        }
    }
    let mut bare = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        assert!(std::process::Command::new("sh")
            .args(["-c", "true"])
            .status()
            .unwrap()
            .success());
        bare.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let (tp50, tp90, bp50) = (
        pct(&mut tool, 0.5),
        pct(&mut tool, 0.9),
        pct(&mut bare, 0.5),
    );
    println!("run_command `true`       p50 {tp50:7.2} ms  p90 {tp90:7.2} ms");
    println!("bare `sh -c true`        p50 {bp50:7.2} ms");
    println!(
        "run_command overhead     p50 {:7.2} ms over sh -c",
        tp50 - bp50
    );

    // wait_for_text latency.
    let stamp = server.dir().join("printed-at");
    let script = server.dir().join("printer.py");
    std::fs::write(&script, "import sys, time\nwhile True:\n    line = sys.stdin.readline()\n    if not line: break\n    sys.stdout.write('FOUND<' + line.strip() + '>\\n'); sys.stdout.flush()\n    t = time.monotonic()\n    open(sys.argv[1], 'w').write(repr(t))\n").unwrap();
    let printer = server
        .tmux(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "python3",
            script.to_str().unwrap(),
            stamp.to_str().unwrap(),
        ])
        .trim()
        .to_string();
    std::thread::sleep(Duration::from_millis(300));
    let mut lat = Vec::with_capacity(N);
    for i in 0..N + 3 {
        let _ = std::fs::remove_file(&stamp);
        let c = &client;
        let p = printer.clone();
        // call_raw: the harness's `call` also compiles the output schema to
        // validate the result, which is the client's time, not the tool's.
        let call = async move {
            c.call_raw(
                "wait_for_text",
                json!({ "paneId": p, "patterns": [format!("FOUND<{i}>")] }),
            )
            .await
        };
        let trigger = async {
            // Let the wait arm (resolve, watch, first capture) before printing.
            tokio::time::sleep(Duration::from_millis(150)).await;
            // Not server.tmux(): a blocking wait here would stall this task,
            // which also receives the wait's answer.
            let st = tokio::process::Command::new("tmux")
                .args([
                    "-S",
                    server.socket_str(),
                    "send-keys",
                    "-t",
                    &printer,
                    &i.to_string(),
                    "Enter",
                ])
                .status()
                .await
                .unwrap();
            assert!(st.success());
        };
        let (r, ()) = tokio::join!(
            async {
                let r = call.await;
                (r, monotonic())
            },
            trigger
        );
        let (r, returned) = r;
        let r = r.structured_content.expect("structuredContent");
        assert_eq!(r["outcome"], "matched", "{r}");
        let printed: f64 = poll(Duration::from_secs(5), || {
            std::fs::read_to_string(&stamp)
                .ok()
                .and_then(|s| s.parse().ok())
        })
        .expect("printer stamp");
        if i >= 3 {
            lat.push((returned - printed) * 1000.0);
        }
        if i % 10 == 9 {
            server.tmux(&["clear-history", "-t", &printer]);
        }
    }
    let (p50, p90) = (pct(&mut lat, 0.5), pct(&mut lat, 0.9));
    println!("wait_for_text: text appearing → call returned   p50 {p50:7.2} ms  p90 {p90:7.2} ms  (n={N})");
    // For scale: one MCP round trip that does no work.
    let mut pings = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        client.ping().await;
        pings.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "MCP ping (for scale)     p50 {:7.2} ms",
        pct(&mut pings, 0.5)
    );
    client.close().await;
}
