//! Resource subscription latency (issue "Platform …", item 2): from a line
//! written into a pane's terminal to the client receiving
//! `notifications/resources/updated` for that pane, p50 and p90 over 100
//! events, through rmcp's client (legacy `resources/subscribe`). Events are
//! spaced past the 4-per-second coalescing, so each is told at once. Also a
//! burst: how many updates 2 s of continuous output produce. Prints figures,
//! asserts nothing about speed. `cargo bench -p tmux-mcp-e2e --bench subscribe`
//! (release; with `TMUX_MCP_E2E_NO_BUILD=1` after `cargo build --release
//! --bins`), or `cargo test -p tmux-mcp-e2e --bench subscribe` for a debug build.

#![allow(deprecated)] // resources/subscribe: the legacy eras' subscription

use rmcp::model::{
    ClientRequest, ResourceUpdatedNotificationParam, SubscribeRequest, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use std::io::Write;
use std::time::{Duration, Instant};
use tmux_mcp_e2e::{bin, TmuxServer, FOREIGN_TMUX_VARS};
use tokio::sync::mpsc;

const EVENTS: usize = 100;

#[derive(Clone)]
struct Heard(mpsc::UnboundedSender<(String, Instant)>);

impl ClientHandler for Heard {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut c = rmcp::model::ClientConfig::default();
        c.protocol_version = rmcp::model::ProtocolVersion::V_2025_11_25;
        c
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send((params.uri, Instant::now()));
    }
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let server = TmuxServer::start();
    let tty = server
        .tmux(&["display-message", "-p", "-t", "%0", "#{pane_tty}"])
        .trim()
        .to_string();
    let mut pane = std::fs::OpenOptions::new()
        .write(true)
        .open(&tty)
        .expect("the pane's terminal");
    let mut cmd = tokio::process::Command::new(bin("tmux-mcp"));
    cmd.arg("attach").arg("-S").arg(server.socket());
    for v in FOREIGN_TMUX_VARS {
        cmd.env_remove(v);
    }
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("attach");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let client = Heard(tx).serve(transport).await.expect("initialize");
    let uri = "tmux://pane/%250".to_string();
    client
        .peer()
        .send_request(ClientRequest::SubscribeRequest(SubscribeRequest::new(
            SubscribeRequestParams::new(uri.clone()),
        )))
        .await
        .expect("subscribe");

    let mut lat = Vec::with_capacity(EVENTS);
    for i in 0..EVENTS {
        tokio::time::sleep(Duration::from_millis(300)).await; // past the 250 ms coalescing gap
        while rx.try_recv().is_ok() {}
        let t = Instant::now();
        pane.write_all(format!("event {i}\r\n").as_bytes()).unwrap();
        let (got, at) = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("an update within 5 s")
            .unwrap();
        assert_eq!(got, uri);
        lat.push(at.duration_since(t).as_secs_f64() * 1000.0);
    }
    let (p50, p90, max) = (pct(&mut lat, 0.5), pct(&mut lat, 0.9), pct(&mut lat, 1.0));
    println!("line written -> notifications/resources/updated, {EVENTS} events: p50 {p50:6.2} ms  p90 {p90:6.2} ms  max {max:6.2} ms  (target p50 <= 30 ms)");

    // Continuous output for 2 s: one line every 10 ms.
    tokio::time::sleep(Duration::from_millis(300)).await;
    while rx.try_recv().is_ok() {}
    let start = Instant::now();
    let mut lines = 0;
    while start.elapsed() < Duration::from_secs(2) {
        pane.write_all(format!("burst {lines}\r\n").as_bytes())
            .unwrap();
        lines += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut updates = 0;
    while rx.try_recv().is_ok() {
        updates += 1;
    }
    println!("burst: {lines} lines over 2 s -> {updates} updates (at most 4 per second, plus the trailing one)");
    let _ = client.cancel().await;
}
