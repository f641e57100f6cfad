//! The `tmux-mcp` command line: clear failures, doctor, the cursor helper.

use std::time::Duration;
use tmux_mcp_e2e::*;

#[test]
fn no_tmux_server_is_a_clear_error() {
    let sock = "/nonexistent/x/sock";
    let (out, took) = run_with_timeout(tmux_mcp(&["attach", "-S", sock]), Duration::from_secs(5));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "attach without a server exited {:?}", out.status);
    assert!(took < Duration::from_secs(2), "attach took {took:?} to give up");
    assert!(stderr.contains(sock), "stderr should name the socket: {stderr:?}");
    assert!(out.stdout.is_empty(), "stdout must carry nothing but MCP: {:?}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn doctor_reports_ok() {
    let srv = TmuxServer::start();
    srv.start_broker();
    let (out, _) = run_with_timeout(tmux_mcp(&["doctor", "-S", srv.socket_str()]), Duration::from_secs(15));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "doctor exited {:?}:\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("SO_PEERPIDFD"), "{stdout}");
    assert!(stdout.contains("process identity"), "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
}

#[test]
fn cursor_prints_reference_and_fills_buffer() {
    let srv = TmuxServer::start();
    srv.start_broker();
    let generation = srv.status()["generation"].as_str().unwrap().to_string();
    let (out, _) = run_with_timeout(tmux_mcp(&["cursor", "-S", srv.socket_str(), "%0"]), Duration::from_secs(15));
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(out.status.success(), "cursor exited {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    let (since, v) = parse_handoff(&stdout);
    assert_eq!(since["paneId"], "%0", "{stdout}");
    assert_eq!(since["cursor"], v["cursor"], "{stdout}");
    assert_eq!(v["target"], serde_json::json!({"kind": "pane", "id": "%0", "generation": generation}));
    assert_eq!(srv.tmux(&["show-buffer", "-b", "mcp-cursor"]).trim_end(), stdout);

    let (out, _) = run_with_timeout(tmux_mcp(&["cursor", "-S", srv.socket_str(), "%999"]), Duration::from_secs(15));
    assert!(!out.status.success(), "cursor for a missing pane should fail");
    assert!(String::from_utf8_lossy(&out.stderr).contains("%999"));
}
