//! What one tmux client connection costs against the command it carries
//! (issue 8, item 5), on a 1-pane server and on the 1,001-pane server of the
//! scale benchmarks, side by side: through the broker's own in-process
//! protocol client (`tmux_mcp_core::tmux::Tmux`, as the start-up probe enables it)
//! N connections each running one hook-free `list-commands -F x list-commands`,
//! N connections each running K of them joined with `;` (so per command =
//! (batch - single) / (K - 1), per connection = single - per command), the same
//! single command through a fork+exec of the `tmux` binary (what a peer that
//! shells out pays), a `capture-pane -p` of a 200x50 pane, and a `tmux_capture`
//! through an MCP client with the tmux invocations it cost (`status`
//! `tmux_connections`). Prints p50/p90 in ms and the 1,001-pane / 1-pane ratios;
//! asserts nothing.

use serde_json::json;
use std::time::{Duration, Instant};
use tmux_mcp_core::tmux::Tmux;
use tmux_mcp_e2e::{big_server, generation, pane_ref, tmux_version, McpClient, TmuxServer};

const K: usize = 50;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// p50 and p90 of `n` timed runs of `f`.
async fn timed<F, Fut>(n: usize, mut f: F) -> (f64, f64)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut t = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        f().await;
        t.push(ms(t0.elapsed()));
    }
    (pct(&mut t, 0.5), pct(&mut t, 0.9))
}

async fn direct(tmux: &Tmux, args: &[&str]) {
    let out = tmux
        .output(args, Duration::from_secs(5))
        .await
        .expect("tmux command");
    assert_eq!(
        out.status,
        0,
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One server's figures, in row order.
async fn measure(srv: &TmuxServer, n: usize) -> Vec<(String, (f64, f64))> {
    srv.tmux(&["resize-window", "-t", "%0", "-x", "200", "-y", "50"]);
    let tmux = Tmux::new(srv.socket());
    assert!(
        tmux.try_enable_direct().await,
        "the in-process tmux client was refused"
    );
    let one = ["list-commands", "-F", "x", "list-commands"];
    let mut batch: Vec<&str> = Vec::new();
    for i in 0..K {
        if i > 0 {
            batch.push(";");
        }
        batch.extend_from_slice(&one);
    }
    // Warm-up: the server's first connections allocate.
    timed(20, || direct(&tmux, &one)).await;
    // The four kinds interleaved, so each sees the same moments of the
    // server's own activity (a new big server is busy for a while).
    let (mut single, mut batched, mut exec, mut cap) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let t0 = Instant::now();
        direct(&tmux, &one).await;
        single.push(ms(t0.elapsed()));
        let t0 = Instant::now();
        direct(&tmux, &batch).await;
        batched.push(ms(t0.elapsed()));
        let t0 = Instant::now();
        assert!(srv.try_tmux(&one).status.success());
        exec.push(ms(t0.elapsed()));
        let t0 = Instant::now();
        direct(&tmux, &["capture-pane", "-p", "-t", "%0"]).await;
        cap.push(ms(t0.elapsed()));
    }
    let p = |v: &mut Vec<f64>| (pct(v, 0.5), pct(v, 0.9));
    let (single, batched) = (p(&mut single), p(&mut batched));
    let mut rows = Vec::new();
    rows.push(("1 connection, 1 hook-free command".to_string(), single));
    rows.push((format!("1 connection, {K} hook-free commands (;)"), batched));
    let per_cmd = (batched.0 - single.0) / (K - 1) as f64;
    rows.push((
        "=> per command (from the p50s)".to_string(),
        (per_cmd, f64::NAN),
    ));
    rows.push((
        "=> per connection (identify, command, exit)".to_string(),
        (single.0 - per_cmd, f64::NAN),
    ));
    rows.push((
        "fork+exec of tmux, 1 hook-free command".to_string(),
        p(&mut exec),
    ));
    rows.push((
        "1 connection, capture-pane -p (200x50)".to_string(),
        p(&mut cap),
    ));

    let c = McpClient::attach(srv, &["--enable-tool", "tmux_capture"]).await;
    let gen = generation(&c).await;
    let args = json!({"target": pane_ref(&gen, "%0")});
    c.call_envelope("tmux_capture", args.clone()).await.data();
    let before = srv.status()["tmux_connections"].as_u64().unwrap();
    let t = timed(n, || async {
        let r = c.call_raw("tmux_capture", args.clone()).await;
        assert_ne!(r.is_error, Some(true), "{:?}", r.content);
    })
    .await;
    let per_call = (srv.status()["tmux_connections"].as_u64().unwrap() - before) as f64 / n as f64;
    rows.push(("tmux_capture through rmcp (200x50)".to_string(), t));
    rows.push((
        "=> tmux invocations (= connections) per tmux_capture".to_string(),
        (per_call, f64::NAN),
    ));
    c.close().await;
    rows
}

fn cell((p50, p90): (f64, f64)) -> String {
    if p90.is_nan() {
        format!("{p50:>8.3}          ")
    } else {
        format!("{p50:>8.3} / {p90:>7.3}")
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (_, _, version) = tmux_version();
    let small = {
        let srv = TmuxServer::start();
        measure(&srv, 400).await
    };
    let big = {
        let srv = big_server();
        measure(&srv, 100).await
    };
    println!("tmux {version}, in-process protocol client; ms, p50 / p90 (400 runs on 1 pane, 100 on 1,001 panes)");
    println!(
        "{:<56} {:>18} {:>18} {:>7}",
        "", "1 pane", "1,001 panes", "ratio"
    );
    for ((label, a), (_, b)) in small.iter().zip(&big) {
        println!("{label:<56} {} {} {:>6.2}x", cell(*a), cell(*b), b.0 / a.0);
    }
}
