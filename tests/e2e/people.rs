//! Issue 10, people and their clients: an agent whose MCP client strips the
//! environment still reaches its own pane's tmux server (item 1), and the
//! plugin says what it does through `@mcp-state` / `@mcp-status` (item 3).

use serde_json::json;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::time::Duration;
use tmux_mcp_e2e::*;

fn uid() -> u32 {
    tmux_mcp_core::sys::current_uid()
}

/// The children of `pid` (from `/proc/*/stat`).
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

fn environ(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

/// Item 1: Codex CLI starts its MCP servers with TMUX and TMUX_PANE removed.
/// A relay started that way, with no -S/-L and an otherwise empty environment,
/// inside a pane of server `work`, must find `work` by process ancestry among
/// the user's tmux sockets — not the `default` server that sits in the same
/// socket directory (the old fallback) — and be scoped to the pane's session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item1_attach_without_tmux_env_finds_the_server_of_its_pane() {
    // Declared first, so it is removed after both servers are gone.
    let tmpdir = TempDir::new("tmcp-tt-");
    let sockdir = tmpdir.path().join(format!("tmux-{}", uid()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&sockdir)
        .unwrap();
    let decoy = TmuxServer::start_on_socket(&sockdir.join("default"));
    let srv = TmuxServer::start_on_socket(&sockdir.join("work"));
    srv.tmux(&["new-session", "-d", "-s", "other", "sleep 1000"]);
    let other_pane = srv
        .tmux(&["display-message", "-p", "-t", "other:", "#{pane_id}"])
        .trim()
        .to_string();

    let path = std::env::var("PATH").unwrap_or_default();
    let command = format!(
        "env -i PATH={} TMUX_TMPDIR={} {} attach",
        sh_quote(&path),
        sh_quote(tmpdir.path().to_str().unwrap()),
        sh_quote(bin("tmux-mcp").to_str().unwrap())
    );
    let (pane, writer, reader, stderr) = spawn_in_pane(&srv, "noenv", &command, false);
    let client = McpClient::over_fifos(writer, reader, stderr.clone()).await;

    // Premise: the relay really runs with no tmux variables and no socket flag.
    let shell: u32 = srv
        .tmux(&["display-message", "-p", "-t", &pane, "#{pane_pid}"])
        .trim()
        .parse()
        .unwrap();
    let relay = poll(Duration::from_secs(5), || {
        children(shell)
            .into_iter()
            .find(|c| cmdline(*c).get(1).map(String::as_str) == Some("attach"))
    })
    .expect("the relay process under the pane's shell");
    assert_eq!(
        cmdline(relay)[1..],
        ["attach".to_string()],
        "the relay got arguments"
    );
    let env = environ(relay);
    assert!(
        env.iter()
            .all(|v| !v.starts_with("TMUX=") && !v.starts_with("TMUX_PANE=")),
        "the relay's environment names a tmux server: {env:?}"
    );

    let caps = client.call("tmux_capabilities", json!({})).await;
    let found = caps["data"]["server_identity"]["socket_path"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        Path::new(&found),
        std::fs::canonicalize(srv.socket()).unwrap(),
        "the relay reached another tmux server; stderr: {}",
        std::fs::read_to_string(&stderr).unwrap_or_default()
    );
    assert_eq!(caps["data"]["server_identity"]["pid"], json!(srv.pid()));
    assert_eq!(caps["data"]["broker"]["scope"], "session", "{caps:#}");
    assert_eq!(
        caps["data"]["broker"]["caller_pane"],
        json!(pane),
        "{caps:#}"
    );

    let list = client.call("list_panes", json!({})).await;
    let ids: Vec<&str> = list["panes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&pane.as_str()),
        "its own pane is not listed: {list:#}"
    );
    assert!(
        !ids.contains(&other_pane.as_str()),
        "a pane of another session is visible to a session-scoped agent: {list:#}"
    );
    assert!(
        decoy.brokers().is_empty(),
        "a broker was started for the default server"
    );
    drop(client);
}

fn option(srv: &TmuxServer, name: &str) -> String {
    srv.tmux(&["show-options", "-gqv", name])
        .trim_end_matches('\n')
        .to_string()
}

/// Waits (≤ `timeout`) for `@mcp-state` to be `want`; panics with both options.
fn wait_state(srv: &TmuxServer, want: &str, timeout: Duration) {
    if poll(timeout, || {
        (option(srv, "@mcp-state") == want).then_some(())
    })
    .is_none()
    {
        panic!(
            "@mcp-state never became {want:?} within {timeout:?}: @mcp-state={:?} @mcp-status={:?}",
            option(srv, "@mcp-state"),
            option(srv, "@mcp-status")
        );
    }
}

/// Item 3: a config that loads the plugin as TPM does (`run-shell <repo>/tmux-mcp.tmux`,
/// binaries found) ends with `@mcp-state` ready and `@mcp-status` saying so, and
/// by then the broker answers.
#[test]
fn item3_plugin_state_reaches_ready_when_the_broker_answers() {
    let srv = TmuxServer::start_with_config(&plugin_config());
    wait_state(&srv, "ready", Duration::from_secs(15));
    assert_eq!(option(&srv, "@mcp-status"), "mcp: ready");
    let status = srv
        .try_status()
        .expect("@mcp-state is ready but no broker answers");
    assert_eq!(
        status["broker_pid"],
        json!(srv.wait_for_one_broker(Duration::from_secs(5)))
    );
}

/// A copy of the plugin script in a directory of its own, whose
/// `scripts/build` is a stand-in for cargo: it waits for a gate file (so the
/// test sees the state while it builds), then installs the built binaries as
/// new files (as cargo does: a rename, so a running broker keeps its old
/// binary): a copy of the broker, and a `tmux-mcp` that answers `--version`
/// with the version in the checkout's Cargo.toml and runs the real one
/// otherwise. The checkout is identified by that version (the directory is no
/// git checkout), and `set_version` changes it in the script too, as a pull
/// of a new release does.
struct StagedPlugin {
    _dir: TempDir,
    root: std::path::PathBuf,
    gate: std::path::PathBuf,
}

impl StagedPlugin {
    fn new() -> StagedPlugin {
        let dir = TempDir::new("tmcp-plug-");
        let root = dir.path().join("tmux-mcp");
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::copy(
            repo_root().join("tmux-mcp.tmux"),
            root.join("tmux-mcp.tmux"),
        )
        .unwrap();
        let gate = dir.path().join("gate");
        let built = target_dir();
        let script = format!(
            "#!/bin/sh\nset -e\nwhile [ ! -e {gate} ]; do sleep 0.05; done\nrm -f {gate}\nmkdir -p {out}\n\
             v=$(sed -n 's/^version = \"\\(.*\\)\"$/\\1/p' \"$(dirname \"$0\")/../Cargo.toml\")\n\
             printf '#!/bin/sh\\n[ \"$1\" = --version ] && {{ echo \"tmux-mcp %s\"; exit 0; }}\\nexec %s \"$@\"\\n' \"$v\" {helper} >{out}/.tmux-mcp.new\n\
             chmod +x {out}/.tmux-mcp.new; mv -f {out}/.tmux-mcp.new {out}/tmux-mcp\n\
             cp {built}/tmux-mcp-broker {out}/.tmux-mcp-broker.new; mv -f {out}/.tmux-mcp-broker.new {out}/tmux-mcp-broker\necho built\n",
            gate = sh_quote(gate.to_str().unwrap()),
            out = sh_quote(root.join("target/release").to_str().unwrap()),
            built = sh_quote(built.to_str().unwrap()),
            helper = sh_quote(&sh_quote(built.join("tmux-mcp").to_str().unwrap())),
        );
        let build = root.join("scripts/build");
        std::fs::write(&build, script).unwrap();
        std::fs::set_permissions(&build, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let p = StagedPlugin {
            _dir: dir,
            root,
            gate,
        };
        p.set_version("1.0.0");
        p
    }

    /// What a `git pull` of a new release changes, as far as the plugin can
    /// tell: the checkout's version and the version the script expects.
    fn set_version(&self, v: &str) {
        std::fs::write(
            self.root.join("Cargo.toml"),
            format!("[workspace.package]\nversion = \"{v}\"\n"),
        )
        .unwrap();
        let script = self.root.join("tmux-mcp.tmux");
        let text = std::fs::read_to_string(&script).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("PLUGIN_VERSION="))
            .expect("the script sets PLUGIN_VERSION")
            .to_string();
        std::fs::write(
            &script,
            text.replacen(&line, &format!("PLUGIN_VERSION=\"{v}\""), 1),
        )
        .unwrap();
    }

    fn open_gate(&self) {
        std::fs::write(&self.gate, b"").unwrap();
    }

    fn config(&self) -> String {
        format!(
            "run-shell {}\n",
            sh_quote(self.root.join("tmux-mcp.tmux").to_str().unwrap())
        )
    }

    fn broker_bin(&self) -> std::path::PathBuf {
        self.root.join("target/release/tmux-mcp-broker")
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    matches!((std::fs::metadata(a), std::fs::metadata(b)), (Ok(x), Ok(y)) if x.dev() == y.dev() && x.ino() == y.ino())
}

/// Item 3: with no binaries the plugin says "building" (state and status),
/// starts no broker until the build is done, then says "ready" with a broker
/// of the new binaries. After an update of the checkout (new version) a
/// reload rebuilds in the background and then hands over: the old broker
/// retires (it gives up its socket and keeps serving its agent, which keeps
/// working), a broker of the new binary starts and new agents get it; the old
/// one exits when its agent leaves. Issue 38 item 9: while it rebuilds, the
/// old broker serves and `@mcp-state` says `ready` (never `building`), with
/// `@mcp-status` naming the rebuild.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item3_plugin_builds_reports_and_rebuilds_after_an_update() {
    let plugin = StagedPlugin::new();
    // The script's scratch directories go here, to be counted at the end.
    let tmpdir = plugin.root.join("tmp");
    std::fs::create_dir(&tmpdir).unwrap();
    let config = format!(
        "set-environment -g TMPDIR {}\n{}",
        sh_quote(tmpdir.to_str().unwrap()),
        plugin.config()
    );
    let mut srv = TmuxServer::start_with_config(&config);
    let conf = srv.dir().join("tmux.conf");
    let conf = conf.to_str().unwrap();

    // The first load found no binaries: building, and no broker yet (the
    // build is held at its gate).
    wait_state(&srv, "building", Duration::from_secs(10));
    assert_eq!(option(&srv, "@mcp-status"), "mcp: building");
    assert!(
        srv.brokers().is_empty(),
        "a broker started before the binaries were built"
    );
    plugin.open_gate();
    wait_state(&srv, "ready", Duration::from_secs(30));
    let first = srv.wait_for_one_broker(Duration::from_secs(5));
    assert!(
        same_file(
            Path::new(&format!("/proc/{first}/exe")),
            &plugin.broker_bin()
        ),
        "the broker does not run the plugin's build"
    );
    let stamp =
        std::fs::read_to_string(plugin.root.join("target/release/tmux-mcp-build-stamp")).unwrap();
    assert_eq!(stamp.trim(), "version 1.0.0");

    // An agent on the first broker.
    let agent = McpClient::attach(&srv, &[]).await;
    assert_eq!(srv.status()["sessions_open"], json!(1));

    // `prefix + U`: the checkout changes; the reload notices and rebuilds,
    // while the broker of the old build serves: ready all along.
    plugin.set_version("1.1.0");
    srv.tmux(&["source-file", conf]);
    let ready_until = |status: &str, timeout: Duration| {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let state = option(&srv, "@mcp-state");
            assert_eq!(
                state,
                "ready",
                "@mcp-state while the old broker serves (status {:?})",
                option(&srv, "@mcp-status")
            );
            if option(&srv, "@mcp-status") == status {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "@mcp-status never became {status:?}: {:?}",
                option(&srv, "@mcp-status")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    ready_until(
        "mcp: ready (tmux-mcp 1.0.0, plugin 1.1.0; rebuilding)",
        Duration::from_secs(10),
    );
    assert_eq!(srv.status()["broker_pid"], json!(first));
    plugin.open_gate();
    ready_until("mcp: ready", Duration::from_secs(30));
    let second = poll(Duration::from_secs(15), || match srv.brokers().as_slice() {
        [a, b] if *a == first || *b == first => Some(if *a == first { *b } else { *a }),
        _ => None,
    })
    .unwrap_or_else(|| {
        panic!(
            "no new broker beside the retired {first}; brokers {:?}",
            srv.brokers()
        )
    });
    assert!(
        same_file(
            Path::new(&format!("/proc/{second}/exe")),
            &plugin.broker_bin()
        ),
        "the new broker does not run the new binary"
    );
    assert_eq!(option(&srv, "@mcp-state"), "ready");
    let stamp =
        std::fs::read_to_string(plugin.root.join("target/release/tmux-mcp-build-stamp")).unwrap();
    assert_eq!(stamp.trim(), "version 1.1.0");
    // A new agent gets the new broker; the old agent keeps its own.
    let fresh = McpClient::attach(&srv, &[]).await;
    assert_eq!(srv.status()["broker_pid"], json!(second));
    fresh.call("list_panes", json!({})).await;
    let info = agent.call("get_server_info", json!({})).await;
    assert_eq!(
        info["broker"]["pid"],
        json!(first),
        "the running agent was moved: {info:#}"
    );
    agent.call("list_panes", json!({})).await;
    // Its agent leaves: the retired broker exits; the new one stays.
    agent.close().await;
    poll(Duration::from_secs(10), || {
        (srv.brokers() == vec![second]).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the retired broker {first} did not exit after its agent left; brokers {:?}",
            srv.brokers()
        )
    });
    fresh.call("list_panes", json!({})).await;
    fresh.close().await;
    // Every job of the script (the build's announcer included) removed what it made.
    srv.kill_server();
    let scratch = || {
        std::fs::read_dir(&tmpdir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    };
    let left = poll(Duration::from_secs(5), || {
        scratch().is_empty().then_some(())
    });
    assert!(
        left.is_some(),
        "the plugin script left {:?} in {}",
        scratch(),
        tmpdir.display()
    );
}

/// Item 6: `tmux-mcp status` lists the server's panes before any agent has
/// connected, including one made after the broker last read its table.
#[test]
fn item6_status_lists_panes_before_any_agent() {
    let srv = TmuxServer::start();
    srv.start_broker();
    let late = srv
        .tmux(&[
            "new-window",
            "-d",
            "-t",
            "main:",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 1000",
        ])
        .trim()
        .to_string();
    let first = srv
        .tmux(&["display-message", "-p", "-t", "main:0", "#{pane_id}"])
        .trim()
        .to_string();
    let (out, _) = run_with_timeout(
        tmux_mcp(&["status", "-S", srv.socket_str()]),
        Duration::from_secs(10),
    );
    assert!(
        out.status.success(),
        "status failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        srv.status()["sessions_served"],
        json!(0),
        "test premise: no agent has connected"
    );
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            l.strip_prefix("  ")
                .and_then(|l| l.split_whitespace().next())
        })
        .collect();
    assert!(
        listed.contains(&first.as_str()) && listed.contains(&late.as_str()),
        "status does not list panes {first} and {late}:\n{text}"
    );
}

/// Item 6: `attach`'s errors state their cause once, on one line ending in a
/// newline, and exit 1.
#[test]
fn item6_attach_error_states_its_cause_once() {
    let dir = TempDir::new("tmcp-noserv-");
    let missing = dir.path().join("sock");
    let (out, _) = run_with_timeout(
        tmux_mcp(&["attach", "-S", missing.to_str().unwrap()]),
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.ends_with('\n') && err.lines().count() == 1,
        "not one line ending in a newline: {err:?}"
    );
    assert_eq!(
        err.matches("no tmux server is listening").count(),
        1,
        "{err:?}"
    );
    assert!(
        err.contains(missing.to_str().unwrap()),
        "the error does not name the socket: {err:?}"
    );
    assert!(
        out.stdout.is_empty(),
        "attach wrote to stdout: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The plugin's own jobs (`tmux-mcp.tmux build|up`) still running under `srv`.
fn plugin_jobs(srv: &TmuxServer) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let argv = cmdline(pid);
        if argv.iter().any(|a| a.ends_with("tmux-mcp.tmux"))
            && pid_alive(pid)
            && tmux_mcp_core::platform::process_table::ancestry(pid, 64).contains(&srv.pid())
        {
            out.push(pid);
        }
    }
    out
}

/// Item 3: setting `@mcp-state` would run a user's `after-set-option` hook;
/// then the plugin keeps no state (as the broker does with
/// `@mcp-broker-socket`) and still starts the broker.
#[test]
fn item3_plugin_sets_no_state_when_that_would_run_a_hook() {
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    // The user's own `set -g @mcp-bin-dir` comes before the hook; then the
    // plugin loads as TPM runs it.
    srv.tmux(&[
        "set-option",
        "-g",
        "@mcp-bin-dir",
        target_dir().to_str().unwrap(),
    ]);
    srv.tmux(&["set-hook", "-t", "main", "after-set-option", &trap.command]);
    srv.tmux(&[
        "run-shell",
        repo_root().join("tmux-mcp.tmux").to_str().unwrap(),
    ]);
    poll(Duration::from_secs(15), || srv.try_status()).expect("the plugin started no broker");
    poll(Duration::from_secs(15), || {
        plugin_jobs(&srv).is_empty().then_some(())
    })
    .unwrap_or_else(|| panic!("plugin jobs still running: {:?}", plugin_jobs(&srv)));
    assert_eq!(
        option(&srv, "@mcp-state"),
        "",
        "@mcp-state was set although that runs the user's hook"
    );
    // The same hook entry fires for a set-option of ours: nothing before it.
    srv.tmux(&[
        "set-hook",
        "-t",
        "main",
        "after-set-option",
        &trap.command_writing("sentinel"),
    ]);
    srv.tmux(&["set-option", "-t", "main", "@mcp-test", "x"]);
    assert_eq!(
        trap.before_sentinel("sentinel"),
        "",
        "the plugin ran the user's after-set-option hook"
    );
}

/// A tmux client attached to `srv` in a pseudo-terminal (`script`), whose
/// terminal output is collected in a file; detached and ended on drop.
struct AttachedClient {
    child: std::process::Child,
    out: std::path::PathBuf,
}

impl AttachedClient {
    fn new(srv: &TmuxServer) -> AttachedClient {
        let out = srv.scratch("client-tty");
        let cmd = format!(
            "stty cols 200 rows 50; exec tmux -S {} attach -t main",
            sh_quote(srv.socket_str())
        );
        let mut c = std::process::Command::new("script");
        c.args(["-q", "-f", "-c", &cmd])
            .arg(&out)
            .env("TERM", "xterm")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        for v in FOREIGN_TMUX_VARS {
            c.env_remove(v);
        }
        let child = c.spawn().expect("running script(1)");
        AttachedClient { child, out }
    }

    /// Waits until the client's terminal has shown `text`.
    fn wait_for(&self, text: &str, timeout: Duration) {
        poll(timeout, || {
            String::from_utf8_lossy(&std::fs::read(&self.out).unwrap_or_default())
                .contains(text)
                .then_some(())
        })
        .unwrap_or_else(|| panic!("the attached client never showed {text:?} within {timeout:?}"));
    }
}

impl Drop for AttachedClient {
    fn drop(&mut self) {
        kill_pid(self.child.id(), libc::SIGTERM);
        if poll(Duration::from_secs(3), || {
            self.child.try_wait().ok().flatten()
        })
        .is_none()
        {
            kill_pid(self.child.id(), libc::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// Item 3: at a normal start the config loads before any client exists, so
/// the "building" message is shown once a client attaches, and "ready" when
/// the build is done and the broker answers.
#[test]
fn item3_building_message_waits_for_a_client() {
    let plugin = StagedPlugin::new();
    let srv = TmuxServer::start_with_config(&plugin.config());
    wait_state(&srv, "building", Duration::from_secs(10));
    let client = AttachedClient::new(&srv);
    client.wait_for("tmux-mcp: building", Duration::from_secs(15));
    plugin.open_gate();
    wait_state(&srv, "ready", Duration::from_secs(30));
    client.wait_for("tmux-mcp: ready", Duration::from_secs(15));
}

/// `tmux-mcp status | head -1`: a reader that went away ends the report
/// quietly (SIGPIPE, as any Unix tool), never with a panic.
#[test]
fn item6_status_into_a_closed_pipe_does_not_panic() {
    let srv = TmuxServer::start();
    srv.start_broker();
    let (read_end, write_end) = rustix::pipe::pipe().unwrap();
    let write_end = std::fs::File::from(write_end);
    drop(read_end);
    let mut cmd = tmux_mcp(&["status", "-S", srv.socket_str()]);
    let child = cmd
        .stdout(write_end)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked"),
        "status panicked on a closed stdout: {err}"
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "status: {:?}, stderr {err}",
        out.status
    );
}
