//! `list_servers` (issue 52 item 1) on several real tmux servers at once, in
//! a private `TMUX_TMPDIR`: the agent's own server, one a broker serves, a
//! window linked into two sessions, Claude Code agent teams' servers
//! (`claude-swarm-<pid>`, its leader running or gone), tmux 3.5a and 3.7c
//! servers where `scripts/tmux-build` made them, a stale socket, an extra
//! socket path from `@mcp-sockets`, a symlink and a plain file beside the
//! sockets; every `after-*` hook (and the client and session hooks) armed on
//! every server, none fired; each result validated against the published
//! output schema. And another local user's sockets are never listed.

use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tmux_mcp_e2e::*;

/// `base/tmux-UID`, made 0700 as tmux makes it.
fn socket_dir(base: &Path) -> PathBuf {
    let dir = base.join(format!("tmux-{}", own_uid()));
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// This process's uid, from the metadata of a file it just made (the tests
/// crate has no uid call of its own).
fn own_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    // One name per call: tests run at once, and one's removal must not take
    // another's probe.
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = std::env::temp_dir().join(format!("tmcp-uid-{}-{n}", std::process::id()));
    std::fs::write(&probe, "").unwrap();
    let uid = std::fs::metadata(&probe).unwrap().uid();
    std::fs::remove_file(&probe).unwrap();
    uid
}

/// The agent's own server on `dir/default`, whose global environment has
/// `TMUX_TMPDIR=base` (its broker is a tmux job and sees that environment,
/// whatever the relay's).
fn own_server(base: &Path, dir: &Path) -> TmuxServer {
    let own = TmuxServer::start_on_socket(&dir.join("default"));
    own.tmux(&[
        "set-environment",
        "-g",
        "TMUX_TMPDIR",
        base.to_str().unwrap(),
    ]);
    own
}

/// The tmux binary `scripts/tmux-build` installed for `version`, if any.
fn built_tmux(version: &str) -> Option<PathBuf> {
    let cache = std::env::var_os("TMUX_MCP_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/tmux-mcp")))?;
    std::fs::read_dir(cache)
        .ok()?
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("tmux-{version}-"))
        })
        .map(|e| e.path().join("bin/tmux"))
        .find(|p| p.is_file())
}

/// Hooks that a connection or a read could conceivably run besides the
/// `after-*` ones.
const OTHER_HOOKS: &[&str] = &[
    "client-attached",
    "client-detached",
    "client-active",
    "client-session-changed",
    "session-created",
    "session-closed",
];

/// Every `after-*` hook and [`OTHER_HOOKS`] armed on `srv`, each writing its
/// name into the server's own trap file.
fn arm(srv: &TmuxServer) -> HookTrap {
    let trap = HookTrap::at(srv.dir().join("hooks.log"));
    for h in OTHER_HOOKS {
        let _ = srv.try_tmux(&["set-hook", "-g", h, &trap.command_writing(h)]);
    }
    let armed = trap.arm_every_after_hook(srv, &[]);
    assert!(
        armed.iter().any(|h| h == "after-display-message"),
        "{armed:?}"
    );
    // What arming itself fired (each set-hook after after-set-hook was set).
    fired(srv, &trap);
    trap
}

/// What fired on `srv` since the last call, up to a sentinel line the test
/// writes through `run-shell` (which runs no hook, and runs in tmux's queue
/// after every hook queued before it). Not `display-message`: its own
/// `after-display-message` line would hide one a listing fired.
fn fired(srv: &TmuxServer, trap: &HookTrap) -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let line = format!(
        "sentinel{}",
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    srv.tmux(&[
        "run-shell",
        &format!("echo {line} >> {}", trap.file.display()),
    ]);
    trap.before_sentinel(&line)
}

fn by_key<'a>(listing: &'a Value, key: &str) -> &'a Value {
    listing["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("no server {key}: {listing:#}"))
}

/// A tmux server killed with SIGKILL, its socket file left behind.
fn stale_socket(path: &Path) {
    let mut dead = TmuxServer::start_on_socket(path);
    kill_pid(dead.pid(), libc::SIGKILL);
    poll(Duration::from_secs(5), || {
        (!pid_alive(dead.pid())).then_some(())
    })
    .expect("the killed server exits");
    dead.kill_server();
    assert!(path.exists(), "the stale socket file stays");
}

/// A pid that ran and has exited.
fn gone_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_server_of_the_user_listed_stale_as_stale_and_no_hook_fired() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    let work = TmuxServer::start_on_socket(&dir.join("work"));
    // Two sessions, a window of `main` linked into `second`: its pane counts once.
    work.tmux(&["split-window", "-d", "-t", "main:0", "cat"]);
    work.tmux(&["new-session", "-d", "-s", "second", "cat"]);
    work.tmux(&["link-window", "-d", "-s", "main:0", "-t", "second:5"]);
    work.start_broker();
    // Its broker has published its socket option (a set-option) before the
    // hooks are armed.
    poll(Duration::from_secs(10), || {
        let s = work.status()["option_published"].as_str()?.to_string();
        s.contains("published").then_some(())
    })
    .expect("the work broker publishes @mcp-broker-socket");
    let me = std::process::id();
    let dead = gone_pid();
    let team = TmuxServer::start_on_socket(&dir.join(format!("claude-swarm-{me}")));
    let old_team = TmuxServer::start_on_socket(&dir.join(format!("claude-swarm-{dead}")));
    let mut versions = Vec::new();
    for v in ["3.5a", "3.7c"] {
        match built_tmux(v) {
            Some(bin) => versions.push((
                v,
                TmuxServer::start_with_binary(&bin, &dir.join(format!("v{v}"))),
            )),
            None => eprintln!(
                "NOTE: no tmux {v} built (scripts/tmux-build); listing it is not tested here"
            ),
        }
    }
    stale_socket(&dir.join("gone"));
    std::os::unix::fs::symlink(work.socket(), dir.join("link")).unwrap();
    std::fs::write(dir.join("file"), "").unwrap();
    let elsewhere = TmuxServer::start();
    own.tmux(&[
        "set-option",
        "-g",
        "@mcp-sockets",
        &format!("{} relative/sock", elsewhere.socket_str()),
    ]);

    let mut servers: Vec<&TmuxServer> = vec![&own, &work, &team, &old_team, &elsewhere];
    servers.extend(versions.iter().map(|(_, s)| s));
    let traps: Vec<HookTrap> = servers.iter().map(|s| arm(s)).collect();

    let tmpdir = base.path().to_str().unwrap();
    let c = McpClient::attach_env(&own, &[], &[("TMUX_TMPDIR", tmpdir)]).await;
    assert!(
        c.tools().iter().any(|t| t.name == "list_servers"),
        "on by default"
    );
    let listing = c.call("list_servers", json!({})).await;

    for (srv, trap) in servers.iter().zip(&traps) {
        assert_eq!(
            fired(srv, trap),
            "",
            "hooks fired on {}",
            srv.socket().display()
        );
    }
    let keys: Vec<&str> = listing["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    let mut want: Vec<String> = vec![
        format!("claude-swarm-{dead}"),
        format!("claude-swarm-{me}"),
        "default".into(),
        "gone".into(),
        "work".into(),
    ];
    want.extend(versions.iter().map(|(v, _)| format!("v{v}")));
    want.sort();
    want.push(elsewhere.socket_str().to_string());
    assert_eq!(
        keys, want,
        "no symlink, no file; the extra path last: {listing:#}"
    );

    let d = by_key(&listing, "default");
    assert_eq!(d["state"], "live");
    assert_eq!(
        (d["own"].clone(), d["broker"].clone()),
        (json!(true), json!(true)),
        "{d}"
    );
    assert_eq!(
        (d["sessions"].clone(), d["panes"].clone()),
        (json!(1), json!(1)),
        "{d}"
    );
    assert_eq!(d["socket"], json!(dir.join("default").to_str().unwrap()));
    assert!(d.get("host").is_none(), "this machine: {d}");

    let w = by_key(&listing, "work");
    assert_eq!(
        (
            w["state"].clone(),
            w["sessions"].clone(),
            w["panes"].clone(),
            w["broker"].clone()
        ),
        (json!("live"), json!(2), json!(3), json!(true)),
        "main (2 panes), second (cat, and main:0 linked): 3 panes, each once: {w}"
    );
    assert!(w.get("own").is_none(), "{w}");
    assert_eq!(w["version"], json!(tmux_version().2));

    let t = by_key(&listing, &format!("claude-swarm-{me}"));
    assert_eq!(
        t["startedBy"],
        json!({"what": "Claude Code agent team", "pid": me, "running": true})
    );
    assert!(t.get("broker").is_none(), "no broker serves it: {t}");
    let o = by_key(&listing, &format!("claude-swarm-{dead}"));
    assert_eq!(o["startedBy"]["running"], json!(false), "{o}");

    let g = by_key(&listing, "gone");
    assert_eq!(g["state"], "stale", "{g}");
    for field in ["version", "sessions", "panes", "broker", "own"] {
        assert!(
            g.get(field).is_none(),
            "a stale socket is no empty server: {g}"
        );
    }
    for (v, _) in &versions {
        assert_eq!(by_key(&listing, &format!("v{v}"))["version"], json!(v));
    }
    let e = by_key(&listing, elsewhere.socket_str());
    assert_eq!(
        (e["state"].clone(), e["panes"].clone()),
        (json!("live"), json!(1))
    );
    let skipped = listing["skipped"]
        .as_array()
        .expect("the relative path is skipped");
    assert!(
        skipped.iter().any(|s| s
            .as_str()
            .unwrap()
            .contains("relative/sock: not an absolute path")),
        "{skipped:?}"
    );
    c.close().await;
}

/// The result a model is given for three servers (its own, one with a
/// broker, a stale socket), in compact JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_cost_a_model_few_bytes() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    let work = TmuxServer::start_on_socket(&dir.join("work"));
    work.start_broker();
    stale_socket(&dir.join("old"));
    let tmpdir = base.path().to_str().unwrap();
    let c = McpClient::attach_env(&own, &[], &[("TMUX_TMPDIR", tmpdir)]).await;
    let listing = c.call("list_servers", json!({})).await;
    let bytes = serde_json::to_string(&listing).unwrap().len();
    eprintln!("list_servers, 3 servers: {bytes} B compact: {listing}");
    assert_eq!(
        listing["servers"].as_array().unwrap().len(),
        3,
        "{listing:#}"
    );
    // Three records of ~100 B each, their socket paths included.
    assert!(bytes <= 450, "{bytes} B: {listing}");
    c.close().await;
}

/// Another local user's sockets are never listed: hers in an extra path,
/// and one moved into this user's socket directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_sockets_are_never_listed() {
    let Some(mut eve) = OtherUser::make() else {
        assert!(
            std::env::var_os("CI").is_none() || own_uid() != 0,
            "as root, under CI, the test's second user must be made (useradd, runuser)"
        );
        eprintln!(
            "SKIPPED: a second local user cannot be made here (needs root, useradd and runuser)"
        );
        return;
    };
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    // Her directory, open for reading, with her server's socket in it.
    let hers = PathBuf::from(format!("/tmp/{}-tmux", eve.name));
    let _ = std::fs::remove_dir_all(&hers);
    std::fs::create_dir(&hers).unwrap();
    eve.made.push(hers.clone());
    let chown = std::process::Command::new("chown")
        .arg(&eve.name)
        .arg(&hers)
        .status()
        .unwrap();
    assert!(chown.success());
    std::fs::set_permissions(&hers, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sock = hers.join("s");
    // A tmux she may run (the test's own may be in a home she cannot enter).
    let tmux = tmux_on_path()
        .into_iter()
        .find(|t| eve.sh(&format!("test -x {t}")))
        .expect("a tmux binary another user may run");
    let start = format!(
        "{tmux} -S {} -f /dev/null new-session -d -s main cat",
        sock.display()
    );
    assert!(eve.sh(&start), "her tmux server starts");
    let _stop = Stop(
        format!("{tmux} -S {} kill-server", sock.display()),
        &mut eve,
    );
    // A second socket of hers, moved into this user's socket directory (only
    // root could; the listing must not take it for this user's).
    let moved = hers.join("m");
    let listener = std::os::unix::net::UnixListener::bind(&moved).unwrap();
    std::process::Command::new("chown")
        .arg(&_stop.1.name)
        .arg(&moved)
        .status()
        .unwrap();
    std::fs::rename(&moved, dir.join("hers")).unwrap();
    own.tmux(&["set-option", "-g", "@mcp-sockets", sock.to_str().unwrap()]);
    let tmpdir = base.path().to_str().unwrap();
    let c = McpClient::attach_env(&own, &[], &[("TMUX_TMPDIR", tmpdir)]).await;
    let listing = c.call("list_servers", json!({})).await;
    let keys: Vec<&str> = listing["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["default"], "{listing:#}");
    let skipped = listing["skipped"].to_string();
    assert!(skipped.contains("is another user's"), "{listing:#}");
    // Named, hers are refused: the moved socket by name, her server by path.
    for (server, says) in [
        (json!("hers"), "another user's"),
        (json!(sock.to_str().unwrap()), "another user's"),
    ] {
        let r = c.call_raw("list_panes", json!({"server": server})).await;
        assert_eq!(r.is_error, Some(true), "{server}: {r:?}");
        let t = text_of(&r);
        assert!(
            t.contains(says) && t.contains("Nothing was sent"),
            "{server}: {t}"
        );
    }
    drop(listener);
    c.close().await;
}

/// Every `tmux` on `PATH`, in order.
fn tmux_on_path() -> Vec<String> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("tmux"))
        .filter(|p| p.is_file())
        .map(|p| p.display().to_string())
        .collect()
}

/// Runs its command as the user when dropped (her server's `kill-server`).
struct Stop<'a>(String, &'a mut OtherUser);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        let cmd = self.0.clone();
        self.1.sh(&cmd);
    }
}

/// A stopped tmux server (SIGSTOP) still has its connection accepted by the
/// kernel, so it is live, but its read is given up at its deadline: listed
/// with `unread` and no counts, and the listing is late by that deadline
/// only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_is_listed_unread_within_its_deadline() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    let stopped = TmuxServer::start_on_socket(&dir.join("stopped"));
    let tmpdir = base.path().to_str().unwrap();
    let c = McpClient::attach_env(&own, &[], &[("TMUX_TMPDIR", tmpdir)]).await;
    kill_pid(stopped.pid(), libc::SIGSTOP);
    // Continued however the test ends, so the server can be killed.
    struct Cont(u32);
    impl Drop for Cont {
        fn drop(&mut self) {
            kill_pid(self.0, libc::SIGCONT);
        }
    }
    let _cont = Cont(stopped.pid());
    let t = std::time::Instant::now();
    let listing = c.call("list_servers", json!({})).await;
    let took = t.elapsed();
    let s = by_key(&listing, "stopped");
    assert_eq!(s["state"], "live", "{s}");
    assert!(
        s["unread"]
            .as_str()
            .unwrap()
            .contains("did not answer within 500 ms"),
        "{s}"
    );
    assert!(
        s.get("panes").is_none() && s.get("version").is_none(),
        "{s}"
    );
    assert_eq!(by_key(&listing, "default")["panes"], json!(1));
    assert!(took < Duration::from_secs(3), "the listing took {took:?}");
    c.close().await;
}

/// A session-scoped agent (one in a pane, by default) counts its own
/// server's sessions and panes as it sees them: its own session only, as
/// `list_sessions` does; other servers are listed as for anyone.
#[test]
fn a_session_scoped_agent_counts_only_its_own_sessions_on_its_server() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    own.tmux(&["new-session", "-d", "-s", "beta", "cat"]);
    own.tmux(&["split-window", "-d", "-t", "beta:0", "cat"]);
    let other = TmuxServer::start_on_socket(&dir.join("other"));
    other.tmux(&["new-session", "-d", "-s", "two", "cat"]);
    let mut r = PaneRelay::start(&own, "scoped", &[], true);
    let resp = r.channel.request(
        2,
        "tools/call",
        json!({ "name": "list_servers", "arguments": {} }),
    );
    let listing = resp["result"]["structuredContent"].clone();
    let schema = r.tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "list_servers")
        .expect("list_servers is listed")["outputSchema"]
        .clone();
    validate(&schema, &listing).unwrap_or_else(|e| panic!("{e}: {listing:#}"));
    let d = by_key(&listing, "default");
    assert_eq!(d["own"], json!(true), "{listing:#}");
    // main: the pane the relay runs in and the first pane; beta is not its.
    let main_panes: usize = own
        .tmux(&["list-panes", "-s", "-t", "main", "-F", "#{pane_id}"])
        .lines()
        .count();
    assert_eq!(
        (d["sessions"].clone(), d["panes"].clone()),
        (json!(1), json!(main_panes)),
        "{d}"
    );
    let o = by_key(&listing, "other");
    assert_eq!(
        (o["sessions"].clone(), o["panes"].clone()),
        (json!(2), json!(2)),
        "{o}"
    );
}

/// The text of a tool result.
fn text_of(r: &rmcp::model::CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Issue 52 item 2: a call naming another server (`server`, a key of
/// `list_servers`) is served by that server's own broker, started when none
/// runs; the libtmux family's ids from it come back qualified (`work:%N`,
/// valid against the published output schemas), and are taken back with
/// the same `server`; one given without it is refused naming the server to
/// add. The agent's own key is the same as no key. Reads there fire no hook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_naming_another_server_is_served_there_with_qualified_ids() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    let work = TmuxServer::start_on_socket(&dir.join("work"));
    work.tmux(&[
        "new-window",
        "-d",
        "-n",
        "shown",
        "sh -c 'echo hello-from-work; exec cat'",
    ]);
    assert!(
        work.brokers().is_empty(),
        "no broker serves work before the call"
    );
    let tmpdir = base.path().to_str().unwrap();
    let c = McpClient::attach_env(&own, &[], &[("TMUX_TMPDIR", tmpdir)]).await;

    let listing = c
        .call("list_panes", json!({"server": "work", "detail": "brief"}))
        .await;
    assert_eq!(work.brokers().len(), 1, "the call started work's broker");
    let panes = listing["panes"].as_array().unwrap();
    assert_eq!(
        panes.len(),
        2,
        "work's panes, not the own server's: {listing:#}"
    );
    for p in panes {
        let id = p["id"].as_str().unwrap();
        assert!(
            id.strip_prefix("work:%")
                .is_some_and(|n| n.parse::<u32>().is_ok()),
            "qualified: {id}"
        );
    }
    let shown = panes
        .iter()
        .find(|p| p["at"].to_string().contains("main:1."))
        .unwrap_or_else(|| panic!("the window 'shown' (main:1): {listing:#}"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let bare = shown.strip_prefix("work:").unwrap().to_string();
    // The text a model reads (Gemini CLI) says the same ids, qualified.
    let r = c
        .call_raw("list_panes", json!({"server": "work", "detail": "brief"}))
        .await;
    let text = text_of(&r);
    assert!(text.starts_with("[server work] "), "{text}");
    for p in panes {
        let id = p["id"].as_str().unwrap();
        assert!(
            text.lines().any(|l| l.split_whitespace().any(|w| w == id)),
            "{id} in {text}"
        );
    }

    // Armed now (starting the broker ran `run-shell -b` there): the reads
    // below fire nothing on either server.
    let traps = [arm(&own), arm(&work)];
    // work's own refusals hold: no capture while its after-capture-pane
    // hook is set.
    let r = c
        .call_raw("capture_pane", json!({"server": "work", "paneId": shown}))
        .await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(
        text_of(&r).contains("after-capture-pane hook is set"),
        "{}",
        text_of(&r)
    );
    work.tmux(&["set-hook", "-gu", "after-capture-pane"]);
    let _ = fired(&work, &traps[1]);
    for pane in [&shown, &bare] {
        let cap = c
            .call("capture_pane", json!({"server": "work", "paneId": pane}))
            .await;
        assert!(
            cap["text"].as_str().unwrap().contains("hello-from-work"),
            "{pane}: {cap:#}"
        );
    }
    let info = c
        .call("get_pane_info", json!({"server": "work", "paneId": shown}))
        .await;
    assert_eq!(info["pane"]["id"], json!(shown), "{info:#}");
    for (srv, trap) in [&own, &work].into_iter().zip(&traps) {
        assert_eq!(
            fired(srv, trap),
            "",
            "hooks fired on {}",
            srv.socket().display()
        );
    }

    // The same key with the own server is the call without it: bare ids.
    let mine = c.call("list_panes", json!({"server": "default"})).await;
    let own_ids: Vec<&str> = mine["panes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(own_ids.len(), 1, "{mine:#}");
    assert!(own_ids[0].starts_with('%'), "{mine:#}");

    // work's id without `server` is refused, naming the server to add.
    let r = c.call_raw("capture_pane", json!({"paneId": shown})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let t = text_of(&r);
    assert!(
        t.contains("\"server\": \"work\"") && t.contains("Nothing was sent to tmux"),
        "{t}"
    );
    // Another server's key on an id of work's is refused.
    let r = c
        .call_raw(
            "capture_pane",
            json!({"server": "default", "paneId": shown}),
        )
        .await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    c.close().await;
}

/// On a server other than its own an agent is read-only unless that server
/// says more (`@mcp-safety`), and then it gets the stricter of both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_server_is_read_only_unless_it_says_more() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    let work = TmuxServer::start_on_socket(&dir.join("work"));
    let tmpdir = base.path().to_str().unwrap();
    let env = [("TMUX_TMPDIR", tmpdir)];
    let window = || work.tmux(&["display-message", "-p", "-t", "main:0", "#{window_name}"]);
    let before = window();
    let window_id = work.tmux(&["display-message", "-p", "-t", "main:0", "#{window_id}"]);
    let window_id = window_id.trim();

    let c = McpClient::attach_env(&own, &["--safety", "destructive"], &env).await;
    let rename = json!({"server": "work", "windowId": window_id, "name": "renamed"});
    let r = c.call_raw("rename_window", rename.clone()).await;
    assert_eq!(r.is_error, Some(true), "read-only there by default: {r:?}");
    assert!(text_of(&r).contains("Nothing was sent"), "{}", text_of(&r));
    assert_eq!(window(), before, "nothing changed on work");
    c.close().await;

    work.tmux(&["set-option", "-g", "@mcp-safety", "mutating"]);
    let c = McpClient::attach_env(&own, &["--safety", "destructive"], &env).await;
    c.call("rename_window", rename.clone()).await;
    assert_eq!(window().trim(), "renamed");
    let pane = work.tmux(&["display-message", "-p", "-t", "main:0", "#{pane_id}"]);
    let r = c
        .call_raw(
            "kill_pane",
            json!({"server": "work", "paneId": pane.trim()}),
        )
        .await;
    assert_eq!(
        r.is_error,
        Some(true),
        "mutating there, not destructive: {r:?}"
    );
    c.close().await;

    // The agent's own tier caps it too.
    let c = McpClient::attach_env(&own, &[], &env).await;
    let r = c
        .call_raw(
            "rename_window",
            json!({"server": "work", "windowId": window_id, "name": "x"}),
        )
        .await;
    assert_eq!(
        r.is_error,
        Some(true),
        "the agent is read-only itself: {r:?}"
    );
    assert_eq!(window().trim(), "renamed");
    c.close().await;
}

/// A `server` that names no server this agent may call is refused by name,
/// nothing sent anywhere: a stale socket, an unknown name, paths that are not
/// in `@mcp-sockets`, `..`, a huge string, a number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_be_called_is_refused_by_name() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    stale_socket(&dir.join("gone"));
    let elsewhere = TmuxServer::start();
    let tmpdir = base.path().to_str().unwrap();
    let c = McpClient::attach_env(&own, &[], &[("TMUX_TMPDIR", tmpdir)]).await;
    let trap = arm(&own);
    let huge = "w".repeat(5000);
    let cases: Vec<(Value, &str)> = vec![
        (json!("gone"), "stale"),
        (json!("nosuch"), "no socket nosuch"),
        (json!(".."), "one file name"),
        (json!("../tmux-0/default"), "one file name"),
        (json!(elsewhere.socket_str()), "@mcp-sockets"),
        (json!("/etc/passwd"), "@mcp-sockets"),
        (json!(huge), "argument /server"),
        (json!(7), "argument /server"),
        (json!(""), "argument /server"),
    ];
    for (server, says) in cases {
        for tool in ["list_panes", "tmux_snapshot"] {
            let mut args = json!({"server": server});
            if tool == "tmux_snapshot" {
                args["entity"] = json!("pane");
            }
            let r = c.call_raw(tool, args).await;
            assert_eq!(r.is_error, Some(true), "{tool} {says}: {r:?}");
            let t = text_of(&r);
            assert!(
                t.to_lowercase().contains(&says.to_lowercase()),
                "{tool} {says}: {t}"
            );
            assert!(!t.contains(&"w".repeat(100)), "the value is not echoed");
        }
    }
    // A flood of hostile values, each refused by the field's name, nothing
    // sent: paths, `..` chains, option-like and shell-like strings, control
    // characters, huge strings, other JSON types.
    let mut flood: Vec<Value> = Vec::new();
    for i in 0..64 {
        flood.push(json!(format!("{}x{i}", "../".repeat(i % 9))));
        flood.push(json!(format!("/tmp/../tmp/{i}/sock")));
        flood.push(json!(format!("-oProxyCommand=touch {i}")));
        flood.push(json!(format!("a\u{7}{i}")));
        flood.push(json!(format!("ssh:-oProxyCommand={i}")));
        flood.push(json!(format!("ssh:host{i}")));
        flood.push(json!("w".repeat(1000 + i * 100)));
        flood.push(json!([format!("k{i}")]));
        flood.push(json!({"key": i}));
        flood.push(json!(i));
    }
    for server in flood {
        let r = c
            .call_raw("get_pane_info", json!({"server": server, "paneId": "%0"}))
            .await;
        assert_eq!(r.is_error, Some(true), "{server}: {r:?}");
        let t = text_of(&r);
        assert!(
            t.contains("server") && t.contains("Nothing was sent"),
            "{server}: {t}"
        );
    }
    assert_eq!(fired(&own, &trap), "", "nothing reached the own server");
    // Once configured, the extra path is a server to call.
    own.tmux(&["set-option", "-g", "@mcp-sockets", elsewhere.socket_str()]);
    let listing = c
        .call("list_panes", json!({"server": elsewhere.socket_str()}))
        .await;
    let id = listing["panes"][0]["id"].as_str().unwrap();
    assert!(
        id.starts_with(&format!("{}:%", elsewhere.socket_str())),
        "{id}"
    );
    // Taken out of the option, it is refused from the next call on, though
    // the agent has its link open.
    own.tmux(&["set-option", "-gu", "@mcp-sockets"]);
    let r = c
        .call_raw("list_panes", json!({"server": elsewhere.socket_str()}))
        .await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let t = text_of(&r);
    assert!(
        t.contains("taken out of the option @mcp-sockets") && t.contains("Nothing was sent"),
        "{t}"
    );
    c.close().await;
}

/// A `wait_for_text` on `pane` of server `work` that nothing will end, out
/// while `then` runs; its answer, which must come within 10 s.
async fn answer_of_a_wait_while(
    c: &McpClient,
    pane: &str,
    then: impl FnOnce(),
) -> rmcp::model::CallToolResult {
    let args = json!({"server": "work", "paneId": pane, "patterns": ["never-shown"],
        "timeoutMs": 20000});
    let peer = c.peer();
    let waiting = tokio::spawn(async move {
        let params = rmcp::model::CallToolRequestParams::new("wait_for_text")
            .with_arguments(args.as_object().unwrap().clone());
        peer.call_tool(params).await
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    then();
    tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the call out is answered, never left hanging")
        .unwrap()
        .unwrap()
}

/// A link lost while a call is out (the other broker killed) says the call
/// may have reached tmux there, and is not retried; the next call opens a
/// new link to a new broker. A server that has gone since is refused by
/// name, nothing sent, never answered by another server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_out_when_the_other_broker_dies_says_possibly_sent_and_a_gone_server_is_refused() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    let mut work = TmuxServer::start_on_socket(&dir.join("work"));
    let tmpdir = base.path().to_str().unwrap();
    let c = McpClient::attach_env(&own, &[], &[("TMUX_TMPDIR", tmpdir)]).await;
    let listing = c.call("list_panes", json!({"server": "work"})).await;
    let pane = listing["panes"][0]["id"].as_str().unwrap().to_string();
    let broker = work.wait_for_one_broker(Duration::from_secs(5));

    let r = answer_of_a_wait_while(&c, &pane, || kill_pid(broker, libc::SIGKILL)).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let t = text_of(&r);
    assert!(
        t.contains("may have reached tmux there") && t.contains("not retried"),
        "{t}"
    );

    // A new broker, a new link.
    let again = c.call("list_panes", json!({"server": "work"})).await;
    assert_eq!(again["panes"][0]["id"], json!(pane));
    assert_ne!(work.wait_for_one_broker(Duration::from_secs(5)), broker);

    work.kill_server();
    poll(Duration::from_secs(5), || {
        work.brokers().is_empty().then_some(())
    })
    .expect("work's broker ends with its server");
    let r = c.call_raw("list_panes", json!({"server": "work"})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let t = text_of(&r);
    assert!(
        t.contains("\"work\"") && t.contains("Nothing was sent"),
        "{t}"
    );
    // The own server still answers as itself.
    let mine = c.call("list_panes", json!({})).await;
    assert!(mine["panes"][0]["id"].as_str().unwrap().starts_with('%'));
    c.close().await;
}

/// Servers of other tmux versions (3.5a and 3.7c where `scripts/tmux-build`
/// made them) and a Claude Code agent team's server are called by their
/// keys like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_of_other_versions_and_an_agent_team_s_are_called_by_key() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    let me = std::process::id();
    let team_key = format!("claude-swarm-{me}");
    let team = TmuxServer::start_on_socket(&dir.join(&team_key));
    team.tmux(&["rename-session", "-t", "main", "claude-swarm"]);
    let mut servers = vec![(team_key.clone(), team, tmux_version().2)];
    for v in ["3.5a", "3.7c"] {
        match built_tmux(v) {
            Some(bin) => servers.push((
                format!("v{v}"),
                TmuxServer::start_with_binary(&bin, &dir.join(format!("v{v}"))),
                v.to_string(),
            )),
            None => eprintln!("NOTE: no tmux {v} built (scripts/tmux-build); not called here"),
        }
    }
    // A second agent team's server that loads the plugin, as Claude Code's
    // teammates' servers do when ~/.tmux.conf loads it: its own broker is
    // the one that serves the call.
    let plugged_key = format!("claude-swarm-{}", gone_pid());
    let plugged = TmuxServer::start_on_socket(&dir.join(&plugged_key));
    plugged.tmux(&[
        "set-option",
        "-g",
        "@mcp-bin-dir",
        target_dir().to_str().unwrap(),
    ]);
    plugged.tmux(&[
        "run-shell",
        repo_root().join("tmux-mcp.tmux").to_str().unwrap(),
    ]);
    let plugin_broker = plugged.wait_for_one_broker(Duration::from_secs(10));
    poll(Duration::from_secs(10), || {
        (plugged.tmux(&["show-options", "-gqv", "@mcp-state"]).trim() == "ready").then_some(())
    })
    .expect("the plugin said ready");
    servers.push((plugged_key, plugged, tmux_version().2));
    let tmpdir = base.path().to_str().unwrap();
    let c = McpClient::attach_env(&own, &[], &[("TMUX_TMPDIR", tmpdir)]).await;
    for (key, srv, version) in &servers {
        let info = c.call("get_server_info", json!({"server": key})).await;
        assert_eq!(
            info["tmuxVersion"].as_str(),
            Some(version.as_str()),
            "{key}: {info:#}"
        );
        let sessions = c.call("list_sessions", json!({"server": key})).await;
        let id = sessions["sessions"][0]["id"].as_str().unwrap();
        assert!(id.starts_with(&format!("{key}:$")), "{key}: {sessions:#}");
        assert_eq!(srv.brokers().len(), 1, "{key}: its own broker serves it");
    }
    let (_, plugged, _) = servers.last().unwrap();
    assert_eq!(
        plugged.brokers(),
        [plugin_broker],
        "the plugin's broker served it, no second one started"
    );
    c.close().await;
}

/// The other server exits while a call is out there: the call is answered
/// (an error, never a hang and never another server's answer), and the
/// server is then refused by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_other_server_killed_during_a_call_answers_it_and_is_then_refused() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    let mut work = TmuxServer::start_on_socket(&dir.join("work"));
    let tmpdir = base.path().to_str().unwrap();
    let c = McpClient::attach_env(&own, &[], &[("TMUX_TMPDIR", tmpdir)]).await;
    let listing = c.call("list_panes", json!({"server": "work"})).await;
    let pane = listing["panes"][0]["id"].as_str().unwrap().to_string();
    let r = answer_of_a_wait_while(&c, &pane, || work.kill_server()).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    // Refused, by the server's name: by its broker if the link has not yet
    // ended (it cannot read its table), else here (the socket is gone).
    let r = c.call_raw("list_panes", json!({"server": "work"})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let t = text_of(&r);
    assert!(
        (t.contains("\"work\"") && t.contains("Nothing was sent"))
            || (t.starts_with("[server work] ") && t.contains("Nothing was changed")),
        "{t}"
    );
    c.close().await;
}

/// Issue 52 item 5: the listings read several servers in one call
/// (`server: "*"` or a list of keys): one entry per server, its records'
/// ids qualified by its key (the own server's too), a server that could not
/// be read reported beside the others with its reason; each result valid
/// against the published output schema. Other tools take one key only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listings_read_several_servers_in_one_call() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    let work = TmuxServer::start_on_socket(&dir.join("work"));
    for srv in [&own, &work] {
        srv.tmux(&[
            "new-window",
            "-d",
            "sh -c 'echo needle-of-every-server; exec cat'",
        ]);
    }
    stale_socket(&dir.join("gone"));
    let tmpdir = base.path().to_str().unwrap();
    let c = McpClient::attach_env(&own, &[], &[("TMUX_TMPDIR", tmpdir)]).await;

    let all = c.call("list_panes", json!({"server": "*"})).await;
    let entries = all["servers"].as_array().unwrap();
    let keys: Vec<&str> = entries
        .iter()
        .map(|e| e["server"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["default", "gone", "work"], "{all:#}");
    for e in entries {
        let key = e["server"].as_str().unwrap();
        if key == "gone" {
            let why = e["error"].as_str().unwrap();
            assert!(why.contains("stale"), "{why}");
            assert!(e.get("result").is_none());
            continue;
        }
        let panes = e["result"]["panes"].as_array().unwrap();
        assert_eq!(panes.len(), 2, "{key}: {e:#}");
        for p in panes {
            let id = p["id"].as_str().unwrap();
            assert!(id.starts_with(&format!("{key}:%")), "{key}: {id}");
        }
    }
    // A qualified id of the own server is taken back with its key.
    let own_id = entries[0]["result"]["panes"][0]["id"].as_str().unwrap();
    c.call(
        "get_pane_info",
        json!({"server": "default", "paneId": own_id}),
    )
    .await;

    let two = c
        .call("list_sessions", json!({"server": ["work", "default"]}))
        .await;
    let keys: Vec<&str> = two["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["server"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["work", "default"]);
    let found = c
        .call(
            "search_panes",
            json!({"server": ["default", "work"], "pattern": "needle-of-every-server"}),
        )
        .await;
    for e in found["servers"].as_array().unwrap() {
        let key = e["server"].as_str().unwrap();
        let matches = e["result"]["matches"].as_array().unwrap();
        assert_eq!(matches.len(), 1, "{key}: {e:#}");
        assert!(matches[0]["paneId"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{key}:%")));
    }
    c.call("list_agents", json!({"server": "*"})).await;

    let r = c
        .call_raw("get_pane_info", json!({"server": "*", "paneId": "%0"}))
        .await;
    assert_eq!(r.is_error, Some(true));
    assert!(text_of(&r).contains("argument /server"), "{}", text_of(&r));
    c.close().await;
}

/// The Python toolset's `socket_name` (tmux-python/libtmux-mcp's way of
/// naming a server) names another server as `server` does: the call is
/// served there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_toolset_s_socket_name_calls_another_server() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    let work = TmuxServer::start_on_socket(&dir.join("work"));
    let pane = work.new_pane("sh -c 'echo said-on-work; exec cat'");
    let tmpdir = base.path().to_str().unwrap();
    let c = McpClient::attach_env(&own, &["--toolset", "python"], &[("TMUX_TMPDIR", tmpdir)]).await;
    let mut text = String::new();
    for _ in 0..100 {
        let r = c
            .call_raw(
                "capture_pane",
                json!({"socket_name": "work", "pane_id": pane}),
            )
            .await;
        assert_ne!(r.is_error, Some(true), "{r:?}");
        text = text_of(&r);
        if text.contains("said-on-work") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        text.starts_with("[server work] ") && text.contains("said-on-work"),
        "{text}"
    );
    c.close().await;
}

/// The text of a raw `tools/call` response that must be a refusal.
fn refusal_text(resp: &Value) -> String {
    assert_eq!(
        resp["result"]["isError"],
        json!(true),
        "not refused: {resp}"
    );
    resp["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Issue 52 item 3, the person's hand-off across servers: an agent scoped to
/// its own sessions (the default inside tmux) is handed a pane of another
/// server with that server's key binding (`tmux-mcp cursor`, run as the
/// plugin binds it); the line names the server (`"server":"work"`), and the
/// agent reads the pane's new lines with the line's arguments (capture_since
/// and tmux_capture, each result valid against its published schema), then
/// goes on with the chain. Nothing else of that server is in its reach: the
/// listings, a capture, typing (which its tier and work's would allow), a
/// read without the hand-off's cursor, a made-up cursor, the hand-off's
/// cursor on another pane and a cursor of work's own agent are refused, and
/// nothing reached work's panes.
#[test]
fn a_pane_of_another_server_handed_over_reaches_a_session_scoped_agent() {
    let base = TempDir::new("tmsv-");
    let dir = socket_dir(base.path());
    let own = own_server(base.path(), &dir);
    let work = TmuxServer::start_on_socket(&dir.join("work"));
    // The binding's helper is a job of work: it sees work's environment.
    let tmpdir = base.path().to_str().unwrap();
    work.tmux(&["set-environment", "-g", "TMUX_TMPDIR", tmpdir]);
    // work lets other servers' agents type: a refusal below is the scope's.
    work.tmux(&["set-option", "-g", "@mcp-safety", "mutating"]);
    let mut handed = PaneWriter::new_session(&work, "handed", 60, 12);
    handed.emit(&work, b"before the key\n");
    let other = work.new_pane("cat");
    let relay = PaneRelay::start(
        &own,
        "scoped",
        &["--safety", "mutating", "--enable-tool", "tmux_capture"],
        false,
    );
    let (mut ch, tools) = (relay.channel, relay.tools);
    let mut id = 1;
    let mut call = |name: &str, args: Value| {
        id += 1;
        ch.request(id, "tools/call", json!({"name": name, "arguments": args}))
    };
    let info = checked_structured(
        &tools,
        "get_server_info",
        &call("get_server_info", json!({})),
    );
    assert_eq!(info["scope"], json!("session"), "{info:#}");

    // The key press on work, as the plugin's binding runs it.
    let binding = format!(
        "{} cursor -S '#{{socket_path}}' '#{{pane_id}}' </dev/null >/dev/null 2>&1",
        sh_quote(bin("tmux-mcp").to_str().unwrap())
    );
    work.tmux(&["run-shell", "-t", &handed.id, &binding]);
    let line = work.tmux(&["show-buffer", "-b", "mcp-cursor"]);
    let line = line.trim_end();
    let (since, capture) = parse_handoff(line);
    assert_eq!(
        (since["server"].clone(), capture["server"].clone()),
        (json!("work"), json!("work")),
        "{line}"
    );

    handed.emit(&work, b"after the key\n");
    let r = call("capture_since", since.clone());
    let d = checked_structured(&tools, "capture_since", &r);
    assert_eq!(d["lines"], json!(["after the key"]), "{d:#}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("[server work] "), "{text}");
    handed.emit(&work, b"and then\n");
    let next = json!({"paneId": since["paneId"], "cursor": d["cursor"], "server": "work"});
    let d2 = checked_structured(&tools, "capture_since", &call("capture_since", next));
    assert_eq!(
        d2["lines"],
        json!(["and then"]),
        "the chain goes on: {d2:#}"
    );
    let exact = checked_structured(&tools, "tmux_capture", &call("tmux_capture", capture));
    assert_eq!(exact["ok"], json!(true), "{exact:#}");
    assert!(exact.to_string().contains("after the key"), "{exact:#}");

    // Nothing else of work.
    let handed_id = handed.id.clone();
    let out_of_reach = [
        ("list_panes", json!({"server": "work"})),
        ("list_sessions", json!({"server": "work"})),
        ("search_panes", json!({"server": "work", "pattern": "key"})),
        (
            "capture_pane",
            json!({"server": "work", "paneId": handed_id}),
        ),
        (
            "get_pane_info",
            json!({"server": "work", "paneId": handed_id}),
        ),
        (
            "capture_since",
            json!({"server": "work", "paneId": handed_id}),
        ),
        (
            "send_keys",
            json!({"server": "work", "paneId": handed_id, "text": "typed-by-agent", "enter": true}),
        ),
    ];
    for (tool, args) in out_of_reach {
        let t = refusal_text(&call(tool, args));
        assert!(
            t.contains("out of its reach")
                && t.contains("prefix + A")
                && t.contains("Nothing was sent to tmux"),
            "{tool}: {t}"
        );
    }
    let mut raw =
        RawClient::attach_with_env(&work, &["--scope", "server"], &[("TMUX_TMPDIR", tmpdir)]);
    raw.initialize();
    let theirs = raw.request(
        2,
        "tools/call",
        json!({"name": "capture_since", "arguments": {"paneId": other}}),
    );
    let theirs = theirs["result"]["structuredContent"]["cursor"].clone();
    assert!(theirs.is_string(), "work's own agent's cursor: {theirs}");
    let cursors = [
        (
            json!({"paneId": handed_id, "cursor": "0123456789abcdef0123456789abcdef"}),
            "no cursor of this broker",
        ),
        (
            json!({"paneId": other, "cursor": d2["cursor"]}),
            "belongs to pane",
        ),
        (
            json!({"paneId": other, "cursor": theirs}),
            "no cursor of this broker",
        ),
    ];
    for (mut args, says) in cursors {
        args["server"] = json!("work");
        let t = refusal_text(&call("capture_since", args.clone()));
        assert!(t.contains(says), "{args}: {t}");
    }
    let _ = raw.close();
    let screen = work.tmux(&["capture-pane", "-p", "-t", &handed_id]);
    assert!(
        !screen.contains("typed-by-agent"),
        "typed on work: {screen}"
    );
}

/// What another server's broker opens for its session-scoped agent (a hello
/// with `via` and scope session) sees no pane of this server: the listings
/// are empty, a capture or a pane's details are refused, a search finds
/// nothing, only read-only tools are offered whatever its tier; it may read
/// a pane the person handed over, and only with the hand-off's cursor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_scoped_agent_s_link_sees_no_pane_but_the_handed_over_one() {
    let srv = TmuxServer::start();
    let mut handed = PaneWriter::new_session(&srv, "handed", 60, 12);
    handed.emit(&srv, b"secret line\n");
    let via = [
        "--scope",
        "session",
        "--via",
        "/tmp/tmux-mcp-nowhere/default",
        "--safety",
        "destructive",
    ];
    let c = McpClient::attach(&srv, &via).await;
    for t in c.tools() {
        let read_only = t.annotations.as_ref().and_then(|a| a.read_only_hint);
        assert_eq!(read_only, Some(true), "{} is offered", t.name);
    }
    // Every call but a hand-off's continuation is refused saying why (not
    // answered with empty listings, which would read as an empty server).
    for (tool, args) in [
        ("list_panes", json!({})),
        ("list_sessions", json!({})),
        ("list_windows", json!({})),
        ("search_panes", json!({"pattern": "secret"})),
        ("list_agents", json!({})),
        ("get_server_info", json!({})),
        ("capture_pane", json!({"paneId": handed.id})),
        ("get_pane_info", json!({"paneId": handed.id})),
        ("capture_since", json!({"paneId": handed.id})),
    ] {
        let r = c.call_raw(tool, args).await;
        assert_eq!(r.is_error, Some(true), "{tool}: {r:?}");
        let t = text_of(&r);
        assert!(!t.contains("secret"), "{tool}: {t}");
        assert!(
            t.contains("not open to agents of other tmux servers")
                && t.contains("Nothing was sent"),
            "{tool}: {t}"
        );
    }
    let (out, _) = run_with_timeout(
        tmux_mcp(&["cursor", "-S", srv.socket_str(), &handed.id]),
        Duration::from_secs(15),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let (since, _) = parse_handoff(line.trim_end());
    handed.emit(&srv, b"handed line\n");
    let d = c.call("capture_since", since).await;
    assert_eq!(d["lines"], json!(["handed line"]), "{d:#}");
    c.close().await;
}

/// `@mcp-scope` decides for an agent whose attach says no `--scope`: `server`
/// for one in a pane; `session` refuses one in no pane, saying so; and for
/// another server's agent `session` there is the stricter side: it may only
/// continue what the person hands over, every other call refused by name.
#[test]
fn the_scope_option_decides_where_the_agent_says_nothing() {
    let srv = TmuxServer::start();
    srv.tmux(&["new-session", "-d", "-s", "beta", "cat"]);
    srv.tmux(&["set-option", "-g", "@mcp-scope", "server"]);
    let mut wide = PaneRelay::start(&srv, "wide", &[], false);
    // Server scope: the session it runs in no more than any other.
    let listed = wide.channel.request(
        2,
        "tools/call",
        json!({"name": "list_sessions", "arguments": {}}),
    );
    let names: Vec<&str> = listed["result"]["structuredContent"]["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(names.contains(&"beta") && names.len() > 1, "{listed:#}");

    srv.tmux(&["set-option", "-g", "@mcp-scope", "session"]);
    let (out, _) = run_with_timeout(
        tmux_mcp(&["attach", "-S", srv.socket_str()]),
        Duration::from_secs(15),
    );
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("@mcp-scope is session") && said.contains("--scope server"),
        "{said}"
    );
    // The attach's own --scope wins over the option.
    let (out, _) = run_with_timeout(
        tmux_mcp(&["attach", "-S", srv.socket_str(), "--scope", "server"]),
        Duration::from_secs(15),
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!said.contains("@mcp-scope"), "{said}");
}

/// Another server's agent, server-scoped, on a server whose `@mcp-scope` is
/// session: refused there by name for everything but a hand-off's
/// continuation, which reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_kept_to_sessions_gives_other_servers_agents_only_the_handoff() {
    let srv = TmuxServer::start();
    srv.tmux(&["set-option", "-g", "@mcp-scope", "session"]);
    srv.tmux(&["set-option", "-g", "@mcp-safety", "mutating"]);
    let mut handed = PaneWriter::new_session(&srv, "handed", 60, 12);
    let via = [
        "--scope",
        "server",
        "--via",
        "/tmp/tmux-mcp-nowhere/default",
        "--safety",
        "mutating",
    ];
    let c = McpClient::attach(&srv, &via).await;
    let r = c.call_raw("list_panes", json!({})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(
        text_of(&r).contains("its @mcp-scope is session"),
        "{}",
        text_of(&r)
    );
    let r = c
        .call_raw("send_keys", json!({"paneId": handed.id, "keys": "typed"}))
        .await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let (out, _) = run_with_timeout(
        tmux_mcp(&["cursor", "-S", srv.socket_str(), &handed.id]),
        Duration::from_secs(15),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let (since, _) = parse_handoff(line.trim_end());
    handed.emit(&srv, b"handed line\n");
    let d = c.call("capture_since", since).await;
    assert_eq!(d["lines"], json!(["handed line"]), "{d:#}");
    assert!(!srv
        .tmux(&["capture-pane", "-p", "-t", &handed.id])
        .contains("typed"));
    c.close().await;
}
