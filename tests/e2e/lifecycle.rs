//! Broker lifecycle: one broker per tmux server, started by the plugin or by
//! attach, never displaced, replaced when stale, gone with its server.

use serde_json::json;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tmux_mcp_e2e::*;

fn count_lines(path: &Path, needle: &str) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().filter(|l| l.contains(needle)).count())
        .unwrap_or(0)
}

#[test]
fn plugin_config_starts_exactly_one_broker() {
    let srv = TmuxServer::start_with_config(&plugin_config());
    let pid = srv.wait_for_one_broker(Duration::from_secs(5));

    // The broker answers and is the one we found.
    let status = poll(Duration::from_secs(5), || srv.try_status())
        .expect("the plugin's broker never answered status");
    assert_eq!(status["broker_pid"], pid, "status: {status:#}");
    let log = std::path::PathBuf::from(status["log_file"].as_str().expect("log_file"));
    const SECOND: &str = "a broker already serves this tmux server";
    let before = count_lines(&log, SECOND);

    // Reloading the config runs the plugin script again: it must not start a
    // second broker nor displace the first.
    let conf = srv.dir().join("tmux.conf");
    let conf = conf.to_str().unwrap();
    srv.tmux(&["source-file", conf]);
    srv.tmux(&["source-file", conf]);

    // Both reloads did try to start a broker (each start saw the live one and
    // logged so) — otherwise this test would prove nothing.
    poll(Duration::from_secs(5), || (count_lines(&log, SECOND) >= before + 2).then_some(()))
        .unwrap_or_else(|| panic!("the two reloads did not both reach the broker start (log {}: {} of 2 'already serves' lines)", log.display(), count_lines(&log, SECOND) - before));
    // Then: exactly the original broker, still after 1 s.
    let settle = Instant::now() + Duration::from_secs(1);
    let mut seen = Vec::new();
    while Instant::now() < settle {
        let now = srv.brokers();
        assert!(
            now.contains(&pid),
            "the first broker {pid} disappeared after a config reload; brokers now {now:?}"
        );
        seen = now;
        std::thread::sleep(Duration::from_millis(20));
    }
    let final_set = poll(Duration::from_secs(2), || {
        let b = srv.brokers();
        (b == vec![pid]).then_some(b)
    });
    assert_eq!(
        final_set,
        Some(vec![pid]),
        "expected only broker {pid} 1 s after two reloads; last seen {seen:?}, now {:?}",
        srv.brokers()
    );
    assert_eq!(srv.status()["broker_pid"], pid);

    // The hand-to-agent key: prefix + A runs `tmux-mcp … cursor …`.
    // The whole table, filtered here: from 3.7 `list-keys` with a single match
    // shows it in a client's status line instead of printing it.
    let table = srv.tmux(&["list-keys", "-T", "prefix"]);
    let keys: Vec<&str> = table
        .lines()
        .filter(|l| l.split_whitespace().nth(3) == Some("A"))
        .collect();
    assert!(
        keys.len() == 1 && keys[0].contains("tmux-mcp") && keys[0].contains("cursor"),
        "prefix A is not bound to the tmux-mcp cursor helper: {keys:?}"
    );
}

#[test]
fn broker_exits_within_one_second_of_kill_server() {
    let mut srv = TmuxServer::start();
    let bsock = srv.start_broker();
    let pid = srv.wait_for_one_broker(Duration::from_secs(5));
    assert!(bsock.exists(), "broker socket {} missing", bsock.display());
    assert_eq!(srv.status()["broker_pid"], pid);

    let issued = Instant::now();
    srv.kill_server();
    let t0 = Instant::now();
    let mut pid_gone = None;
    let mut sock_gone = None;
    while t0.elapsed() < Duration::from_secs(3) && (pid_gone.is_none() || sock_gone.is_none()) {
        if pid_gone.is_none() && !pid_alive(pid) {
            pid_gone = Some(t0.elapsed());
        }
        if sock_gone.is_none() && !bsock.exists() {
            sock_gone = Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let (Some(p), Some(s)) = (pid_gone, sock_gone) else {
        panic!("after kill-server: broker pid {pid} gone: {pid_gone:?}, socket {} removed: {sock_gone:?} (waited 3 s)", bsock.display());
    };
    let both = p.max(s);
    eprintln!(
        "kill-server -> broker exit: pid gone {:.1} ms, socket removed {:.1} ms after kill-server returned ({:.1} ms after it was issued)",
        p.as_secs_f64() * 1e3,
        s.as_secs_f64() * 1e3,
        (t0 - issued + both).as_secs_f64() * 1e3
    );
    assert!(
        both < Duration::from_secs(1),
        "the broker took {both:?} to exit after kill-server (pid {p:?}, socket {s:?})"
    );
}

#[test]
fn second_broker_start_exits_zero_and_leaves_first() {
    let srv = TmuxServer::start();
    let bsock = srv.start_broker();
    let pid = srv.wait_for_one_broker(Duration::from_secs(5));
    let before = srv.status();

    let mut cmd = std::process::Command::new(bin("tmux-mcp-broker"));
    cmd.arg("--socket").arg(srv.socket()).stdin(Stdio::null());
    for v in FOREIGN_TMUX_VARS {
        cmd.env_remove(v);
    }
    let (out, took) = run_with_timeout(cmd, Duration::from_secs(2));
    assert!(
        out.status.success(),
        "a second broker start exited with {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("second broker start exited 0 after {took:?}");

    let after = srv.status();
    assert_eq!(
        after["broker_pid"], pid,
        "the first broker no longer answers status"
    );
    assert_eq!(after["broker_socket"], before["broker_socket"]);
    assert_eq!(after["broker_socket"], bsock.to_str().unwrap());
    assert_eq!(
        srv.brokers(),
        vec![pid],
        "exactly the first broker must remain"
    );
    assert!(
        UnixStream::connect(&bsock).is_ok(),
        "the first broker's socket stopped accepting"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_socket_file_is_replaced() {
    let srv = TmuxServer::start();
    let bsock = srv.start_broker();
    let old = srv.wait_for_one_broker(Duration::from_secs(5));

    kill_pid(old, libc::SIGKILL); // our server's broker, by pid
    poll(Duration::from_secs(2), || (!pid_alive(old)).then_some(()))
        .expect("SIGKILLed broker still alive");
    assert!(
        bsock.exists(),
        "test premise: a SIGKILLed broker leaves its socket file {}",
        bsock.display()
    );
    assert!(
        UnixStream::connect(&bsock).is_err(),
        "test premise: nobody listens on the stale socket"
    );

    let client = McpClient::attach(&srv, &[]).await;
    let list = client.call("list_panes", serde_json::json!({})).await;
    assert!(
        list["panes"].as_array().is_some_and(|p| !p.is_empty()),
        "{list:#}"
    );
    let new = srv.wait_for_one_broker(Duration::from_secs(5));
    assert_ne!(new, old);
    let status = srv.status();
    assert_eq!(status["broker_pid"], new);
    assert_eq!(
        status["broker_socket"],
        bsock.to_str().unwrap(),
        "the new broker should take over the same socket path"
    );
    assert!(UnixStream::connect(&bsock).is_ok());
    client.close().await;
}

/// Hand-over (issue "People …", item 3): after an update the plugin makes a
/// busy broker retire (SIGUSR1). It gives up its public socket at once, so a
/// new broker starts and new agents reach it, while the agent on the old
/// broker is not cut off — also with the run-shell feed, whose helpers must
/// then answer the old broker on a socket of its own. The old broker exits
/// when its last agent leaves, leaving no socket behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_broker_retires_and_serves_its_agents_until_they_leave() {
    let broker = bin("tmux-mcp-broker");
    let srv = TmuxServer::start();
    let quoted =
        format!("'{}'", broker.display().to_string().replace('\'', "'\\''")).replace('#', "##");
    srv.tmux(&[
        "run-shell",
        "-b",
        &format!(
            "exec {quoted} --socket '#{{socket_path}}' --feed run-shell </dev/null >/dev/null 2>&1"
        ),
    ]);
    let status =
        poll(Duration::from_secs(5), || srv.try_status()).expect("the first broker never answered");
    let old = status["broker_pid"].as_u64().unwrap() as u32;
    let public = PathBuf::from(status["broker_socket"].as_str().unwrap());
    let agent = McpClient::attach(&srv, &[]).await;
    assert_eq!(
        agent.call("list_panes", json!({})).await["panes"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );

    kill_pid(old, libc::SIGUSR1);
    poll(Duration::from_secs(5), || (!public.exists()).then_some(()))
        .expect("the retiring broker kept its public socket");
    assert!(
        pid_alive(old),
        "the retiring broker exited with an agent on it"
    );
    let dir = public.parent().unwrap().to_path_buf();
    let private: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.to_string_lossy()
                .contains(&format!(".retired-{old}.sock"))
        })
        .collect();
    assert_eq!(
        private.len(),
        1,
        "no private socket for the retired broker in {}",
        dir.display()
    );

    // A new broker takes the public socket; a new agent reaches it.
    srv.start_broker();
    let status =
        poll(Duration::from_secs(5), || srv.try_status()).expect("the new broker never answered");
    let new = status["broker_pid"].as_u64().unwrap() as u32;
    assert_ne!(new, old);
    let newcomer = McpClient::attach(&srv, &[]).await;
    srv.tmux(&["split-window", "-d"]);
    assert_eq!(
        newcomer.call("list_panes", json!({})).await["panes"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    // The old agent still reads fresh tables through its retired broker (a
    // fresh read: run-shell feed answers on the private socket).
    let info = agent.call("get_server_info", json!({})).await;
    assert_eq!(info["broker"]["pid"].as_u64(), Some(old as u64), "{info:#}");
    assert_eq!(
        agent.call("list_panes", json!({})).await["panes"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );

    // Its last agent leaves: it exits, removing only its private socket.
    agent.close().await;
    poll(Duration::from_secs(10), || (!pid_alive(old)).then_some(()))
        .expect("the retired broker did not exit after its last agent left");
    assert!(
        !private[0].exists(),
        "the retired broker left its private socket"
    );
    assert!(
        public.exists() && pid_alive(new),
        "the new broker lost its socket"
    );
    assert_eq!(srv.brokers(), vec![new]);
    newcomer.close().await;
}

/// The plugin script's files in `tmpdir` (its private scratch directory).
fn plugin_scratch(tmpdir: &Path) -> Vec<String> {
    std::fs::read_dir(tmpdir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tmux-mcp"))
        .collect()
}

/// The plugin script reads tmux through `run-shell` formats into files of a
/// private directory. It removes the directory when it ends: after a normal
/// run, and when it gets SIGTERM in the middle of a read (tmux signals its jobs
/// when the server exits). The second case is made certain with a `tmux`
/// wrapper (the script's `TMUX_MCP_TMUX`) that turns a `run-shell` into a
/// `wait-for` nobody signals (a real tmux client, blocked until the server
/// goes) and names its parent, the script, which the test then signals as tmux
/// would before it kills the server.
#[test]
fn the_plugin_script_leaves_no_files_behind() {
    // A normal run: the broker starts, every plugin job ends, nothing is left.
    let srv = TmuxServer::start();
    let tmpdir = srv.dir().join("tmp");
    std::fs::create_dir_all(&tmpdir).unwrap();
    srv.tmux(&["set-environment", "-g", "TMPDIR", tmpdir.to_str().unwrap()]);
    srv.tmux(&[
        "set-option",
        "-g",
        "@mcp-bin-dir",
        target_dir().to_str().unwrap(),
    ]);
    let script = repo_root().join("tmux-mcp.tmux");
    srv.tmux(&["run-shell", script.to_str().unwrap()]);
    srv.wait_for_one_broker(Duration::from_secs(10));
    let left = poll(Duration::from_secs(10), || {
        let l = plugin_scratch(&tmpdir);
        l.is_empty().then_some(())
    });
    assert!(
        left.is_some(),
        "after a normal plugin run: {:?} left in {}",
        plugin_scratch(&tmpdir),
        tmpdir.display()
    );

    // Killed mid-read: the wrapper marks that the script is inside a read, then blocks.
    let mut srv = TmuxServer::start();
    let tmpdir = srv.dir().join("tmp");
    std::fs::create_dir_all(&tmpdir).unwrap();
    let marker = srv.dir().join("blocked");
    let wrapper = srv.dir().join("tmux-wrapper");
    let real = tmux_mcp_core::tmux::find_in_path("tmux").expect("tmux on PATH");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ncase \" $* \" in *\" run-shell \"*) echo $PPID > '{m}'; exec '{t}' -S '{s}' wait-for tmux-mcp-test-never ;; esac\nexec '{t}' \"$@\"\n",
            m = marker.display(),
            t = real.display(),
            s = srv.socket().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    srv.tmux(&["set-environment", "-g", "TMPDIR", tmpdir.to_str().unwrap()]);
    srv.tmux(&[
        "set-environment",
        "-g",
        "TMUX_MCP_TMUX",
        wrapper.to_str().unwrap(),
    ]);
    srv.tmux(&["run-shell", "-b", script.to_str().unwrap()]);
    let script_pid: i32 = poll(Duration::from_secs(10), || {
        std::fs::read_to_string(&marker).ok()?.trim().parse().ok()
    })
    .expect("the plugin script never reached a run-shell read");
    assert_eq!(
        plugin_scratch(&tmpdir).len(),
        1,
        "the script's scratch directory exists while it reads"
    );
    // The plugin script this test started (the wrapper's parent).
    let pid = rustix::process::Pid::from_raw(script_pid).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("kill");
    srv.kill_server();
    poll(Duration::from_secs(5), || {
        (!pid_alive(script_pid as u32)).then_some(())
    })
    .expect("the plugin script outlived its server");
    let left = poll(Duration::from_secs(5), || {
        plugin_scratch(&tmpdir).is_empty().then_some(())
    });
    assert!(
        left.is_some(),
        "after kill-server during a read: {:?} left in {}",
        plugin_scratch(&tmpdir),
        tmpdir.display()
    );
}
