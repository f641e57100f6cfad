//! The `tmux-mcp` command line: clear failures, doctor, the cursor helper.

use std::time::Duration;
use tmux_mcp_e2e::*;

#[test]
fn no_tmux_server_is_a_clear_error() {
    let sock = "/nonexistent/x/sock";
    let (out, took) = run_with_timeout(tmux_mcp(&["attach", "-S", sock]), Duration::from_secs(5));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "attach without a server exited {:?}",
        out.status
    );
    assert!(
        took < Duration::from_secs(2),
        "attach took {took:?} to give up"
    );
    assert!(
        stderr.contains(sock),
        "stderr should name the socket: {stderr:?}"
    );
    assert!(
        out.stdout.is_empty(),
        "stdout must carry nothing but MCP: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn doctor_reports_ok() {
    let srv = TmuxServer::start();
    srv.start_broker();
    let (out, _) = run_with_timeout(
        tmux_mcp(&["doctor", "-S", srv.socket_str()]),
        Duration::from_secs(15),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "doctor exited {:?}:\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let peer_exit = tmux_mcp_core::platform::IDENTITY_BACKEND.peer_exit_call();
    assert!(stdout.contains(peer_exit), "{stdout}");
    assert!(stdout.contains("process identity"), "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
}

/// `status` and `doctor` print the tmux server's start time as UTC ISO 8601
/// and how long ago, not a raw epoch (issue 38 item 13).
#[test]
fn status_and_doctor_print_the_start_time_a_person_reads() {
    let srv = TmuxServer::start();
    srv.start_broker();
    let start: i64 = srv
        .tmux(&["display-message", "-p", "#{start_time}"])
        .trim()
        .parse()
        .unwrap();
    // tmux's start_time and the broker's (from /proc) may round apart.
    let iso: Vec<String> = (start - 2..=start + 2)
        .map(|t| {
            let out = std::process::Command::new("date")
                .args(["-u", "-d", &format!("@{t}"), "+%FT%TZ"])
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        })
        .collect();
    for (cmd, line_start) in [
        ("status", "tmux server   pid"),
        ("doctor", "] tmux server: pid"),
    ] {
        let (out, _) = run_with_timeout(
            tmux_mcp(&[cmd, "-S", srv.socket_str()]),
            Duration::from_secs(15),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{cmd}: {stdout}");
        let line = stdout
            .lines()
            .find(|l| l.contains(line_start) && l.contains("started"))
            .unwrap_or_else(|| panic!("{cmd} prints no tmux server line:\n{stdout}"));
        assert!(
            iso.iter().any(|i| line.contains(&format!("started {i} ("))),
            "{cmd}: {line:?} does not say started one of {iso:?}"
        );
        assert!(
            line.contains(" s ago)") || line.contains(" min ago)"),
            "{cmd}: {line:?}"
        );
        assert!(
            !line.contains(&start.to_string()),
            "{cmd}: a raw epoch: {line:?}"
        );
    }
}

#[test]
fn cursor_prints_reference_and_fills_buffer() {
    let srv = TmuxServer::start();
    srv.start_broker();
    let generation = srv.status()["generation"].as_str().unwrap().to_string();
    let (out, _) = run_with_timeout(
        tmux_mcp(&["cursor", "-S", srv.socket_str(), "%0"]),
        Duration::from_secs(15),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success(),
        "cursor exited {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let (since, v) = parse_handoff(&stdout);
    assert_eq!(since["paneId"], "%0", "{stdout}");
    assert_eq!(since["cursor"], v["cursor"], "{stdout}");
    assert_eq!(
        v["target"],
        serde_json::json!({"kind": "pane", "id": "%0", "generation": generation})
    );
    assert_eq!(
        srv.tmux(&["show-buffer", "-b", "mcp-cursor"]).trim_end(),
        stdout
    );

    let (out, _) = run_with_timeout(
        tmux_mcp(&["cursor", "-S", srv.socket_str(), "%999"]),
        Duration::from_secs(15),
    );
    assert!(
        !out.status.success(),
        "cursor for a missing pane should fail"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("%999"));
}

/// Issue "Exact and honest, round 2" item 3: the key binding's helper runs no
/// hook of the person's. With `after-set-buffer` or `after-display-message`
/// set (globally or in a session) it leaves that command out; with both, it
/// shows nothing and exits 3; while an `after-capture-pane` hook is set it
/// refuses (exit 2), with no cursor-less line handed over.
#[test]
fn cursor_runs_no_hook_and_refuses_loudly() {
    let srv = TmuxServer::start();
    srv.start_broker();
    let trap = HookTrap::new(&srv);
    let quiet = || trap.fire_sentinel(&srv, "after-list-sessions", &["list-sessions"]);
    let buffer = || {
        srv.try_tmux(&["show-buffer", "-b", "mcp-cursor"])
            .status
            .success()
            .then(|| srv.tmux(&["show-buffer", "-b", "mcp-cursor"]))
    };
    let run = || {
        let _ = srv.try_tmux(&["delete-buffer", "-b", "mcp-cursor"]);
        let (out, _) = run_with_timeout(
            tmux_mcp(&["cursor", "-S", srv.socket_str(), "%0"]),
            Duration::from_secs(15),
        );
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let hook = |args: &[&str]| srv.tmux(args);

    // Both set: neither copied nor shown, said on stderr, exit 3; the line is on stdout.
    hook(&[
        "set-hook",
        "-g",
        "after-set-buffer",
        &trap.command_writing("after-set-buffer"),
    ]);
    hook(&[
        "set-hook",
        "-t",
        "main",
        "after-display-message",
        &trap.command_writing("after-display-message"),
    ]);
    let (code, stdout, stderr) = run();
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stdout.contains("handed over")
            && stderr.contains("after-set-buffer and after-display-message"),
        "{stdout} / {stderr}"
    );
    assert_eq!(
        buffer(),
        None,
        "the buffer was set although after-set-buffer is"
    );
    assert_eq!(quiet(), "", "a hook ran");

    // Only the display is hooked (in a session): copied, not shown.
    hook(&["set-hook", "-gu", "after-set-buffer"]);
    let (code, stdout, stderr) = run();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        buffer().as_deref().map(str::trim_end),
        Some(stdout.as_str())
    );
    assert_eq!(quiet(), "", "a hook ran");

    // Only the buffer is hooked: shown, not copied.
    hook(&["set-hook", "-u", "-t", "main", "after-display-message"]);
    hook(&[
        "set-hook",
        "-g",
        "after-set-buffer",
        &trap.command_writing("after-set-buffer"),
    ]);
    let (code, _, stderr) = run();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(buffer(), None);
    assert_eq!(quiet(), "", "a hook ran");
    hook(&["set-hook", "-gu", "after-set-buffer"]);

    // A capture hook: refused, exit 2, nothing handed over.
    hook(&[
        "set-hook",
        "-g",
        "after-capture-pane",
        &trap.command_writing("after-capture-pane"),
    ]);
    let (code, stdout, stderr) = run();
    assert_eq!(code, Some(2), "{stdout} / {stderr}");
    assert!(
        stderr.contains("not handed over") && stderr.contains("after-capture-pane"),
        "{stderr}"
    );
    assert!(
        !stdout.contains("handed over"),
        "a line was handed over: {stdout}"
    );
    assert_eq!(buffer(), None);
    assert_eq!(quiet(), "", "a hook ran");
}

/// Issue "Exact and honest, round 2" item 12: `attach` with no broker binary
/// beside it nor on PATH says which binary is missing at once, instead of
/// "the broker did not come up within 10 s".
#[test]
fn a_missing_broker_binary_is_named() {
    let srv = TmuxServer::start();
    let alone = srv.dir().join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    let copy = alone.join("tmux-mcp");
    std::fs::copy(bin("tmux-mcp"), &copy).unwrap();
    let path = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !std::path::Path::new(d).join("tmux-mcp-broker").exists())
        .collect::<Vec<_>>()
        .join(":");
    let mut cmd = std::process::Command::new(&copy);
    cmd.args(["attach", "-S", srv.socket_str()])
        .env("PATH", path)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(std::process::Stdio::null());
    let (out, took) = run_with_timeout(cmd, Duration::from_secs(15));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("tmux-mcp-broker is missing") && stderr.contains(alone.to_str().unwrap()),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(out.stdout.is_empty());
}

/// Issue "Exact and honest, round 2" item 12: `tmux-mcp uninstall` takes the
/// plugin out of a running server — its broker, its key binding, every
/// `@mcp-*` option — and runs no hook: with `after-set-option` set, the
/// options stay, it says so and exits 3.
#[test]
fn uninstall_removes_binding_options_and_broker_and_runs_no_hook() {
    let plugin = |srv: &TmuxServer| {
        srv.tmux(&[
            "set-option",
            "-g",
            "@mcp-bin-dir",
            target_dir().to_str().unwrap(),
        ]);
        srv.tmux(&[
            "run-shell",
            repo_root().join("tmux-mcp.tmux").to_str().unwrap(),
        ]);
        let broker = srv.wait_for_one_broker(Duration::from_secs(10));
        poll(Duration::from_secs(10), || {
            (!srv
                .tmux(&["show-options", "-gqv", "@mcp-cursor-key-bound"])
                .trim()
                .is_empty())
            .then_some(())
        })
        .expect("the plugin bound its key");
        // The plugin's own background job sets @mcp-state last (it checked
        // for hooks when it began): let it finish before a hook is armed.
        poll(Duration::from_secs(10), || {
            (srv.tmux(&["show-options", "-gqv", "@mcp-state"]).trim() == "ready").then_some(())
        })
        .expect("the plugin never said ready");
        std::thread::sleep(Duration::from_millis(500));
        broker
    };
    let ours = |srv: &TmuxServer| {
        srv.tmux(&["list-keys", "-T", "prefix"])
            .lines()
            .filter(|l| l.contains("tmux-mcp") && l.contains("cursor"))
            .count()
    };
    let options = |srv: &TmuxServer| {
        let mut o = srv.tmux(&["show-options", "-g"]);
        o.push_str(&srv.tmux(&["show-options", "-s"]));
        o.lines()
            .filter(|l| l.starts_with("@mcp-"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let uninstall = |srv: &TmuxServer| {
        let (out, _) = run_with_timeout(
            tmux_mcp(&["uninstall", "-S", srv.socket_str()]),
            Duration::from_secs(15),
        );
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };

    let srv = TmuxServer::start();
    let broker = plugin(&srv);
    assert_eq!(ours(&srv), 1);
    assert!(!options(&srv).is_empty());
    let log = std::path::PathBuf::from(srv.status()["broker_socket"].as_str().unwrap())
        .with_extension("log");
    assert!(
        log.exists(),
        "test premise: the broker logs to {}",
        log.display()
    );
    let (code, stdout, stderr) = uninstall(&srv);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    // Its broker was stopped while the server lives: its log goes too.
    assert!(!log.exists(), "uninstall left {}: {stdout}", log.display());
    assert_eq!(
        ours(&srv),
        0,
        "the key binding stays: {}",
        srv.tmux(&["list-keys", "-T", "prefix"])
    );
    assert_eq!(options(&srv), Vec::<String>::new());
    poll(Duration::from_secs(5), || {
        (!pid_alive(broker)).then_some(())
    })
    .expect("the broker outlived uninstall");

    // An after-set-option hook: the options stay, the hook does not run.
    let srv = TmuxServer::start();
    plugin(&srv);
    let trap = HookTrap::new(&srv);
    srv.tmux(&[
        "set-hook",
        "-g",
        "after-set-option",
        &trap.command_writing("after-set-option"),
    ]);
    let before = options(&srv);
    let (code, _, stderr) = uninstall(&srv);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("after-set-option"), "{stderr}");
    assert_eq!(options(&srv), before);
    assert_eq!(ours(&srv), 0, "the binding goes all the same");
    assert_eq!(
        trap.fire_sentinel(&srv, "after-list-sessions", &["list-sessions"]),
        "",
        "a hook ran"
    );
}
