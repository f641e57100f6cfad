//! Shared harness of the end-to-end tests (`tests/e2e/*.rs`).
//!
//! Everything here drives the *built* binaries `target/debug/tmux-mcp` and
//! `target/debug/tmux-mcp-broker` against real tmux servers on private sockets:
//!
//! - [`TmuxServer`]: one tmux server on `<private tempdir>/sock`, started with
//!   `-f /dev/null` (or a given config file). Dropping it kills exactly that server
//!   (`kill-server` on its socket), checks that its broker exits within 2 s, and
//!   removes the directory.
//! - [`bin`]: the path of a workspace binary. Binaries of other packages have no
//!   `CARGO_BIN_EXE_*`, so the first call runs
//!   `cargo build --bins -p tmux-mcp-plugin` once per test process
//!   (a no-op when they are up to date, so a test never runs stale binaries). Set
//!   `TMUX_MCP_E2E_NO_BUILD=1` to skip that step and use what is in target/.
//! - [`McpClient`]: rmcp's client (a client this project did not write) on
//!   `tmux-mcp attach -S sock`; [`McpClient::call`] validates every
//!   `structuredContent` against the tool's published `outputSchema` with the
//!   `jsonschema` crate and panics with the validation errors otherwise.
//! - [`RawClient`]: the attach relay driven with raw JSON-RPC lines.
//! - Broker discovery from `/proc/*/cmdline` ([`broker_pids`]); nothing is ever
//!   killed by name.

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Once};
use std::time::{Duration, Instant};

/// Environment variables that would tie a child to the tmux server the test runner
/// itself may run in. Tests must never touch that server.
pub const FOREIGN_TMUX_VARS: &[&str] = &["TMUX", "TMUX_PANE"];

/// `attach` arguments that enable the reads of tmux's configuration
/// (`show_options`, `show_environment`, `show_hooks`), opt-in since issue 20.
pub const ENABLE_SHOW: [&str; 6] = [
    "--enable-tool",
    "show_options",
    "--enable-tool",
    "show_environment",
    "--enable-tool",
    "show_hooks",
];

// ---------------------------------------------------------------------------
// Binaries
// ---------------------------------------------------------------------------

/// The workspace root (`tests/..`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The cargo profile directory the test binary was built into (`target/debug`),
/// found from the running test executable (`target/debug/deps/NAME-HASH`), so a
/// custom `CARGO_TARGET_DIR` works too.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .filter(|d| d.join("deps").is_dir())
        .unwrap_or_else(|| repo_root().join("target").join("debug"))
}

static BUILD: Once = Once::new();

/// Fails the test, saying how to install it, when `program` (one the README
/// lists for the tests; `package` its Debian/Ubuntu package) is not on
/// PATH: the test would otherwise fail on something less clear (a pane
/// whose command is not found).
pub fn require_program(program: &str, package: &str) {
    let found = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            std::fs::metadata(d.join(program)).is_ok_and(|m| {
                m.is_file()
                    && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
            })
        })
    });
    assert!(
        found,
        "`{program}` is not on PATH: this test runs it; install it as the README lists (Debian/Ubuntu: apt-get install {package})"
    );
}

/// Path of a workspace binary (`tmux-mcp`, `tmux-mcp-broker`), built on first use.
pub fn bin(name: &str) -> PathBuf {
    BUILD.call_once(build_binaries);
    let p = target_dir().join(name);
    assert!(
        p.is_file(),
        "{} is missing after the build step",
        p.display()
    );
    p
}

fn build_binaries() {
    let dir = target_dir();
    let present = ["tmux-mcp", "tmux-mcp-broker"]
        .iter()
        .all(|b| dir.join(b).is_file());
    if present && std::env::var_os("TMUX_MCP_E2E_NO_BUILD").is_some() {
        return;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--quiet", "--bins", "-p", "tmux-mcp-plugin"])
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .output()
        .expect("running cargo build for the binaries");
    assert!(
        out.status.success(),
        "cargo build --bins failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A `Command` for `tmux-mcp ARGS`, with no tie to any outer tmux server.
pub fn tmux_mcp(args: &[&str]) -> Command {
    let mut c = Command::new(bin("tmux-mcp"));
    c.args(args).stdin(Stdio::null());
    for v in FOREIGN_TMUX_VARS {
        c.env_remove(v);
    }
    c
}

/// Spawns `cmd`, retrying while its binary is "text file busy": a test that
/// copies a binary and runs the copy races every other test thread's fork,
/// whose child holds the copy's write descriptor until it execs.
pub fn spawn_busy_safe(cmd: &mut Command) -> std::process::Child {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match cmd.spawn() {
            Err(e)
                if e.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            r => return r.expect("spawn"),
        }
    }
}

/// Runs `cmd` to completion, failing the test after `timeout`.
pub fn run_with_timeout(mut cmd: Command, timeout: Duration) -> (Output, Duration) {
    let started = Instant::now();
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = spawn_busy_safe(&mut cmd);
    let (tx, rx) = mpsc::channel();
    let pid = child.id();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || read_all(stdout));
    let err_t = std::thread::spawn(move || read_all(stderr));
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(timeout) {
        Ok(s) => s.expect("wait"),
        Err(_) => {
            kill_pid(pid, libc::SIGKILL);
            panic!("{cmd:?} did not finish within {timeout:?}");
        }
    };
    let elapsed = started.elapsed();
    let output = Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    };
    (output, elapsed)
}

fn read_all(mut r: impl std::io::Read) -> Vec<u8> {
    let mut v = Vec::new();
    let _ = r.read_to_end(&mut v);
    v
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

/// Whether `pid` is a live (not zombie) process.
pub fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|st| st != "Z" && st != "X"),
        Err(_) => false,
    }
}

pub fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Sends `sig` to exactly `pid` (a process this test started or owns).
pub fn kill_pid(pid: u32, sig: i32) {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let (Some(pid), Some(sig)) = (pid, rustix::process::Signal::from_named_raw(sig)) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

fn same_path(a: &Path, b: &Path) -> bool {
    a == b
        || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}

/// Live `tmux-mcp-broker` processes serving the tmux socket `socket`, found by
/// their command line (`tmux-mcp-broker … --socket SOCK`). The `sh -c exec …`
/// that tmux runs before the exec is not counted (its argv[0] is the shell).
pub fn broker_pids(socket: &Path) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let argv = cmdline(pid);
        let Some(arg0) = argv.first() else { continue };
        if Path::new(arg0).file_name().and_then(|n| n.to_str()) != Some("tmux-mcp-broker") {
            continue;
        }
        let sock = argv
            .iter()
            .position(|a| a == "--socket")
            .and_then(|i| argv.get(i + 1).cloned())
            .or_else(|| {
                argv.iter()
                    .find_map(|a| a.strip_prefix("--socket=").map(str::to_string))
            });
        if sock.is_some_and(|s| same_path(Path::new(&s), socket)) && pid_alive(pid) {
            out.push(pid);
        }
    }
    out.sort_unstable();
    out
}

/// Polls `f` every 10 ms until it returns `Some` or `timeout` passes.
pub fn poll<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Async flavour of [`poll`] for use inside tokio tests.
pub async fn poll_async<T, F, Fut>(timeout: Duration, mut f: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// ---------------------------------------------------------------------------
// Temporary directories
// ---------------------------------------------------------------------------

/// A private directory (mode 0700) removed on drop. Short, under /tmp (or
/// `$TMUX_MCP_TEST_TMPDIR`), because Unix socket paths are limited to ~107
/// bytes.
pub struct TempDir(tempfile::TempDir);

impl TempDir {
    pub fn new(prefix: &str) -> TempDir {
        let base = std::env::var_os("TMUX_MCP_TEST_TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .rand_bytes(6)
            .tempdir_in(&base)
            .unwrap_or_else(|e| panic!("making a private directory in {}: {e}", base.display()));
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

// ---------------------------------------------------------------------------
// tmux server on a private socket
// ---------------------------------------------------------------------------

/// One real tmux server on `<private tempdir>/sock`.
pub struct TmuxServer {
    dir: TempDir,
    sock: PathBuf,
    /// The tmux binary that started it and that every command of the test
    /// runs (`tmux` on `PATH` unless [`TmuxServer::start_with_binary`]).
    bin: PathBuf,
    pid: u32,
    killed: bool,
    seq: AtomicU64,
}

/// What a pane started without a command runs on a test server (through
/// `bash -c`, which reads no file either, and which execs a pane's single
/// command as the person's bash would): bash without profile, rc or history
/// file.
/// How every test server starts: `tests/server.json`, which
/// `tests/python/harness.py` reads too (what each part is for is said there).
pub fn recipe() -> &'static serde_json::Value {
    static RECIPE: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    RECIPE.get_or_init(|| {
        let path = repo_root().join("tests/server.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    })
}

fn recipe_str(key: &str) -> String {
    recipe()[key]
        .as_str()
        .unwrap_or_else(|| panic!("tests/server.json: {key} is not a string"))
        .to_string()
}

/// Starts a tmux server on `sock` with `conf` as the recipe says
/// ([`recipe`]); its TMPDIR is `dir/tmp`.
fn launch(bin: &Path, sock: &Path, conf: &Path, dir: &Path, what: &str) {
    let session = &recipe()["session"];
    let (name, width, height) = (
        session["name"].as_str().expect("session.name").to_string(),
        session["width"].to_string(),
        session["height"].to_string(),
    );
    let tmp = dir.join("tmp");
    let _ = std::fs::create_dir(&tmp);
    let mut cmd = Command::new(bin);
    cmd.arg("-S").arg(sock).arg("-f").arg(conf).args([
        "set-option",
        "-g",
        "default-shell",
        &bash_path(),
        ";",
        "set-option",
        "-g",
        "default-command",
        &recipe_str("default_command"),
        ";",
        "new-session",
        "-d",
        "-s",
        &name,
        "-x",
        &width,
        "-y",
        &height,
    ]);
    let mut cmd = clean(cmd);
    cmd.env("TMPDIR", &tmp);
    for (k, v) in recipe()["environment"].as_object().expect("environment") {
        cmd.env(k, v.as_str().expect("an environment value"));
    }
    let out = cmd.stdin(Stdio::null()).output().expect("running tmux");
    assert!(
        out.status.success(),
        "{what} tmux failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// bash's path on `PATH` (the test servers' `default-shell`).
pub fn bash_path() -> String {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("bash"))
        .find(|p| p.is_file())
        .map_or_else(|| "/bin/bash".to_string(), |p| p.display().to_string())
}

impl TmuxServer {
    /// A server started with `-f /dev/null` and session `main` (200x50).
    pub fn start() -> TmuxServer {
        Self::start_inner(None, None)
    }

    /// A server started with `-f <dir>/tmux.conf` holding `config` (e.g. the plugin
    /// lines). [`plugin_config`] gives the lines that load this repository's plugin.
    pub fn start_with_config(config: &str) -> TmuxServer {
        Self::start_inner(Some(config), None)
    }

    /// A server like [`TmuxServer::start`] listening on `sock` instead of in its
    /// own directory (e.g. `<a test's TMUX_TMPDIR>/tmux-UID/NAME`, where a
    /// client that is given no socket looks); the directory of `sock` is the
    /// caller's to make and remove.
    pub fn start_on_socket(sock: &Path) -> TmuxServer {
        Self::start_inner(None, Some(sock.to_path_buf()))
    }

    /// A server like [`TmuxServer::start_on_socket`] started by another tmux
    /// binary (e.g. one `scripts/tmux-build` made), which also runs every
    /// command the test sends it.
    pub fn start_with_binary(tmux_bin: &Path, sock: &Path) -> TmuxServer {
        Self::start_full(tmux_bin, None, Some(sock.to_path_buf()))
    }

    fn start_inner(config: Option<&str>, sock: Option<PathBuf>) -> TmuxServer {
        Self::start_full(Path::new("tmux"), config, sock)
    }

    fn start_full(tmux_bin: &Path, config: Option<&str>, sock: Option<PathBuf>) -> TmuxServer {
        // Build before tmux starts, so a plugin config finds the binaries.
        let _ = bin("tmux-mcp");
        let dir = TempDir::new("tmcp-");
        let sock = sock.unwrap_or_else(|| dir.path().join("sock"));
        let conf = match config {
            None => PathBuf::from("/dev/null"),
            Some(text) => {
                let p = dir.path().join("tmux.conf");
                std::fs::write(&p, text).expect("writing tmux.conf");
                p
            }
        };
        launch(tmux_bin, &sock, &conf, dir.path(), "starting");
        let mut server = TmuxServer {
            dir,
            sock,
            bin: tmux_bin.to_path_buf(),
            pid: 0,
            killed: false,
            seq: AtomicU64::new(0),
        };
        server.pid = server
            .tmux(&["display-message", "-p", "#{pid}"])
            .trim()
            .parse()
            .expect("server pid");
        server.set_recipe_options();
        server
    }

    /// The global options the recipe sets once the server runs.
    fn set_recipe_options(&self) {
        for (k, v) in recipe()["options_after_start"]
            .as_object()
            .expect("options_after_start")
        {
            self.tmux(&["set-option", "-g", k, v.as_str().expect("an option value")]);
        }
    }

    pub fn socket(&self) -> &Path {
        &self.sock
    }

    pub fn socket_str(&self) -> &str {
        self.sock.to_str().expect("utf-8 socket path")
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `tmux -S sock ARGS…`; panics unless it succeeds; returns stdout.
    pub fn tmux(&self, args: &[&str]) -> String {
        let out = self.try_tmux(args);
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn try_tmux(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("-S").arg(&self.sock).args(args);
        clean(cmd)
            .stdin(Stdio::null())
            .output()
            .expect("running tmux")
    }

    /// A new window, not selected, running `command` (one shell command
    /// line); its pane's id.
    pub fn new_pane(&self, command: &str) -> String {
        self.tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", command])
            .trim()
            .to_string()
    }

    /// A fresh file name in the server's directory (for stderr logs and such).
    /// A bash without rc files in a new window (argv form: bash itself is
    /// the pane's process), once its `$ ` prompt shows and tmux names it;
    /// its pane id.
    pub fn bash_pane(&self) -> String {
        let id = self
            .tmux(&[
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "env",
                "PS1=$ ",
                "bash",
                "--norc",
                "--noprofile",
            ])
            .trim()
            .to_string();
        // The prompt, and tmux naming bash as the pane's program: tmux can
        // report the program it started (`env`) for a while after it exec'd
        // bash (seen on 3.7c under load), and tools decide by that name.
        poll(Duration::from_secs(10), || {
            let shown = self.tmux(&["capture-pane", "-p", "-t", &id]).contains('$');
            let named = self
                .tmux(&[
                    "display-message",
                    "-p",
                    "-t",
                    &id,
                    "#{pane_current_command}",
                ])
                .trim()
                == "bash";
            (shown && named).then_some(())
        })
        .expect("bash prompt, and tmux naming bash as the pane's program");
        id
    }

    /// Every pane runs `program` (a pane started with anything else is
    /// respawned with it), window names stay as they are (automatic-rename
    /// off), and tmux reports `program` as every pane's current command. For
    /// tests that compare reads taken at different times: a login shell draws
    /// a prompt and runs its profile's commands, and until a pane's program has
    /// exec'd its command (and so its window's automatic name) reads `tmux`.
    pub fn quiet_panes(&self, program: &str) {
        self.tmux(&["set-option", "-g", "automatic-rename", "off"]);
        let panes = self.tmux(&["list-panes", "-a", "-F", "#{pane_id} #{pane_start_command}"]);
        for line in panes.lines() {
            let (pane, start) = line.split_once(' ').unwrap_or((line, ""));
            if start.trim_matches('"') != program {
                self.tmux(&["respawn-pane", "-k", "-t", pane, program]);
            }
        }
        poll(Duration::from_secs(10), || {
            let now = self.tmux(&["list-panes", "-a", "-F", "#{pane_current_command}"]);
            now.lines().all(|c| c == program).then_some(())
        })
        .unwrap_or_else(|| {
            panic!(
                "panes still run {:?}, not only {program}",
                self.tmux(&[
                    "list-panes",
                    "-a",
                    "-F",
                    "#{pane_id} #{pane_current_command}"
                ])
            )
        });
    }

    pub fn scratch(&self, label: &str) -> PathBuf {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        self.dir().join(format!("{label}-{n}"))
    }

    /// Live brokers of this server.
    pub fn brokers(&self) -> Vec<u32> {
        broker_pids(&self.sock)
    }

    /// Waits until exactly one broker runs for this server; returns its pid.
    pub fn wait_for_one_broker(&self, timeout: Duration) -> u32 {
        poll(timeout, || match self.brokers().as_slice() {
            [one] => Some(*one),
            _ => None,
        })
        .unwrap_or_else(|| {
            panic!(
                "expected exactly one broker for {} within {timeout:?}; found {:?}",
                self.sock.display(),
                self.brokers()
            )
        })
    }

    /// `tmux-mcp start -S sock`: makes sure the broker runs; returns its socket path.
    pub fn start_broker(&self) -> PathBuf {
        let (out, _) = run_with_timeout(
            tmux_mcp(&["start", "-S", self.socket_str()]),
            Duration::from_secs(15),
        );
        assert!(
            out.status.success(),
            "tmux-mcp start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    }

    /// Starts the broker the way the plugin does (`run-shell -b`, so tmux is its
    /// parent) with extra flags, e.g. a longer `--request-timeout`; returns once
    /// `tmux-mcp status` answers, so a relay attached next finds this broker.
    pub fn start_broker_with(&self, flags: &[&str]) {
        let cmd = format!(
            "exec '{}' --socket '#{{socket_path}}' {} </dev/null >/dev/null 2>&1",
            bin("tmux-mcp-broker").display(),
            flags.join(" ")
        );
        self.tmux(&["run-shell", "-b", &cmd]);
        poll(Duration::from_secs(15), || self.try_status())
            .unwrap_or_else(|| panic!("the broker started with {flags:?} never answered status"));
    }

    /// `tmux-mcp status -S sock --json` (the broker's cached state; runs no tmux
    /// command). `None` when it fails.
    pub fn try_status(&self) -> Option<Value> {
        let (out, _) = run_with_timeout(
            tmux_mcp(&["status", "-S", self.socket_str(), "--json"]),
            Duration::from_secs(10),
        );
        if !out.status.success() {
            return None;
        }
        Some(serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "status --json is not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        }))
    }

    pub fn status(&self) -> Value {
        self.try_status()
            .unwrap_or_else(|| panic!("tmux-mcp status -S {} --json failed", self.sock.display()))
    }

    /// Kills this server and starts a new one (as [`recipe`] says) on the
    /// same socket path; the new server is the one dropped later.
    pub fn restart_on_same_socket(&mut self) {
        self.kill_server();
        let _ = poll(Duration::from_secs(5), || {
            (!pid_alive(self.pid)).then_some(())
        });
        launch(
            &self.bin,
            &self.sock,
            Path::new("/dev/null"),
            self.dir.path(),
            "restarting",
        );
        self.killed = false;
        self.pid = self
            .tmux(&["display-message", "-p", "#{pid}"])
            .trim()
            .parse()
            .expect("server pid");
        self.set_recipe_options();
    }

    /// Kills exactly this server now (also done on drop).
    pub fn kill_server(&mut self) {
        if !self.killed {
            self.killed = true;
            let _ = self.try_tmux(&["kill-server"]);
        }
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let before = self.brokers();
        self.kill_server();
        let remaining = || -> Vec<u32> {
            let mut v = self.brokers();
            v.extend(before.iter().copied().filter(|p| pid_alive(*p)));
            v.sort_unstable();
            v.dedup();
            v
        };
        // tmux itself takes a while to tear down a big server (seconds for
        // 1,001 panes); the broker's lifetime starts counting when it is gone.
        let _ = poll(Duration::from_secs(30), || {
            (!pid_alive(self.pid)).then_some(())
        });
        let gone = poll(Duration::from_secs(2), || {
            remaining().is_empty().then_some(())
        })
        .is_some();
        let leftover = remaining();
        // Ours: it serves this test's server. SIGTERM first, so it removes its
        // socket, lock and log as it does on any stop; SIGKILL only after 2 s.
        for pid in &leftover {
            kill_pid(*pid, libc::SIGTERM);
        }
        let _ = poll(Duration::from_secs(2), || {
            remaining().is_empty().then_some(())
        });
        for pid in remaining() {
            kill_pid(pid, libc::SIGKILL);
        }
        if pid_alive(self.pid) {
            kill_pid(self.pid, libc::SIGKILL);
        }
        if !gone && !std::thread::panicking() {
            panic!(
                "broker(s) {leftover:?} of {} were still alive 2 s after the tmux server exited",
                self.sock.display()
            );
        }
    }
}

/// The big server of the scale benchmarks: 1,001 panes (the first session's
/// pane plus 100 sessions × 10 windows), one `sleep` per pane (cheap
/// processes), made in one `source-file` so the set-up takes seconds, not minutes.
pub fn big_server() -> TmuxServer {
    let srv = TmuxServer::start();
    let mut script = String::new();
    for s in 0..100 {
        script.push_str(&format!(
            "new-session -d -s s{s} -x 80 -y 24 'sleep 100000'\n"
        ));
        for _ in 0..9 {
            script.push_str(&format!("new-window -d -t s{s}: 'sleep 100000'\n"));
        }
    }
    let file = srv.scratch("big.tmux");
    std::fs::write(&file, script).unwrap();
    srv.tmux(&["source-file", file.to_str().unwrap()]);
    srv
}

fn clean(mut cmd: Command) -> Command {
    for v in FOREIGN_TMUX_VARS {
        cmd.env_remove(v);
    }
    cmd
}

/// tmux.conf lines that load this repository's plugin script with the built
/// binaries (what a user's config does, minus TPM).
pub fn plugin_config() -> String {
    let bin_dir = target_dir();
    let script = repo_root().join("tmux-mcp.tmux");
    format!(
        "set -g @mcp-bin-dir '{}'\nrun-shell '{}'\n",
        bin_dir.display(),
        script.display()
    )
}

// ---------------------------------------------------------------------------
// tmux version
// ---------------------------------------------------------------------------

/// The tmux under test (the `tmux` on PATH; `scripts/test` puts
/// `TMUX_MCP_TMUX_BIN_DIR` first): `(major, minor, "3.7c")` from `tmux -V`, with
/// `next-3.6` read as 3.6 and anything unparsable as (0, 0).
pub fn tmux_version() -> (u32, u32, String) {
    static VERSION: std::sync::OnceLock<(u32, u32, String)> = std::sync::OnceLock::new();
    VERSION
        .get_or_init(|| {
            let out = clean(Command::new("tmux"))
                .arg("-V")
                .stdin(Stdio::null())
                .output()
                .expect("running tmux -V");
            let full = String::from_utf8_lossy(&out.stdout)
                .trim()
                .trim_start_matches("tmux ")
                .to_string();
            let v = full.trim_start_matches("next-");
            let mut parts = v.split('.');
            let major = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
            let minor = parts
                .next()
                .map(|s| {
                    s.chars()
                        .take_while(char::is_ascii_digit)
                        .collect::<String>()
                })
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            (major, minor, full)
        })
        .clone()
}

/// Whether the tmux under test is at least `major.minor`.
pub fn tmux_at_least(major: u32, minor: u32) -> bool {
    let (ma, mi, _) = tmux_version();
    (ma, mi) >= (major, minor)
}

/// Whether the broker checks `after-capture-pane` inside the capture's own
/// command queue on the tmux under test (>= 3.5: the whole-array format reads
/// sparse entries), rather than with a `show-hooks` preflight.
pub fn hook_check_in_queue() -> bool {
    tmux_at_least(3, 5)
}

/// The `delivery` of a capture refused for a hook: on >= 3.5 the check ran in
/// tmux (`observed`), before that the preflight sent nothing (`not_sent`).
pub fn hook_refusal_delivery() -> &'static str {
    if hook_check_in_queue() {
        "observed"
    } else {
        "not_sent"
    }
}

/// tmux client invocations per guarded pane read from the cached table: one
/// on >= 3.5, the `show-hooks` preflight plus the capture before.
pub fn tmux_connections_per_capture() -> u64 {
    if hook_check_in_queue() {
        1
    } else {
        2
    }
}

// ---------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------

/// Validates `instance` against `schema`; `Err` lists every violation.
pub fn validate(schema: &Value, instance: &Value) -> Result<(), String> {
    let v = jsonschema::validator_for(schema)
        .map_err(|e| format!("the schema does not compile: {e}"))?;
    let errors: Vec<String> = v
        .iter_errors(instance)
        .map(|e| format!("at {}: {e}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

// ---------------------------------------------------------------------------
// rmcp client on `tmux-mcp attach`
// ---------------------------------------------------------------------------

/// rmcp's MCP client on `tmux-mcp attach -S sock [extra…]`.
pub struct McpClient {
    service: RunningService<RoleClient, ()>,
    tools: Vec<Tool>,
    /// stderr of the attach relay.
    pub stderr_path: PathBuf,
}

impl McpClient {
    pub async fn attach(server: &TmuxServer, extra: &[&str]) -> McpClient {
        let stderr_path = server.scratch("attach-stderr");
        Self::attach_socket(server.socket(), extra, stderr_path).await
    }

    pub async fn attach_socket(socket: &Path, extra: &[&str], stderr_path: PathBuf) -> McpClient {
        Self::attach_binary(&bin("tmux-mcp"), socket, extra, stderr_path).await
    }

    /// `tmux-mcp attach` with extra environment (e.g. an `XDG_RUNTIME_DIR`
    /// of the test's, where the broker's runtime directory then is).
    pub async fn attach_env(
        server: &TmuxServer,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> McpClient {
        let stderr_path = server.scratch("attach-stderr");
        let mut cmd = tokio::process::Command::new(bin("tmux-mcp"));
        cmd.arg("attach").arg("-S").arg(server.socket()).args(extra);
        for v in FOREIGN_TMUX_VARS {
            cmd.env_remove(v);
        }
        cmd.envs(env.iter().copied());
        let err = std::fs::File::create(&stderr_path).expect("stderr file");
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(err)
            .spawn()
            .expect("spawning tmux-mcp attach");
        Self::serve(transport, stderr_path).await
    }

    /// Through another build's `tmux-mcp` (benchmarks compare builds; its
    /// broker is the `tmux-mcp-broker` next to it).
    pub async fn attach_binary(
        tmux_mcp: &Path,
        socket: &Path,
        extra: &[&str],
        stderr_path: PathBuf,
    ) -> McpClient {
        let mut cmd = tokio::process::Command::new(tmux_mcp);
        cmd.arg("attach").arg("-S").arg(socket).args(extra);
        for v in FOREIGN_TMUX_VARS {
            cmd.env_remove(v);
        }
        let err = std::fs::File::create(&stderr_path).expect("stderr file");
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(err)
            .spawn()
            .expect("spawning tmux-mcp attach");
        Self::serve(transport, stderr_path).await
    }

    /// rmcp's client on a relay that runs somewhere else (e.g. in a pane, see
    /// [`spawn_in_pane`]), spoken to through the two FIFO ends.
    pub async fn over_fifos(
        to_relay: std::fs::File,
        from_relay: std::fs::File,
        stderr_path: PathBuf,
    ) -> McpClient {
        let w = tokio::net::unix::pipe::Sender::from_file(to_relay)
            .expect("the relay's input is a fifo");
        let r = tokio::net::unix::pipe::Receiver::from_file(from_relay)
            .expect("the relay's output is a fifo");
        Self::serve((r, w), stderr_path).await
    }

    async fn serve<T, E, A>(transport: T, stderr_path: PathBuf) -> McpClient
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let service = match tokio::time::timeout(Duration::from_secs(20), ().serve(transport)).await
        {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => panic!(
                "MCP initialize through tmux-mcp attach failed: {e}; relay stderr: {}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            ),
            Err(_) => panic!(
                "MCP initialize through tmux-mcp attach timed out; relay stderr: {}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            ),
        };
        let tools = tokio::time::timeout(Duration::from_secs(10), service.list_all_tools())
            .await
            .expect("tools/list timed out")
            .expect("tools/list");
        McpClient {
            service,
            tools,
            stderr_path,
        }
    }

    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    pub fn tool(&self, name: &str) -> &Tool {
        self.tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| {
                panic!(
                    "tool {name} is not listed; tools: {:?}",
                    self.tools
                        .iter()
                        .map(|t| t.name.to_string())
                        .collect::<Vec<_>>()
                )
            })
    }

    /// Calls a tool and returns the raw result (no checks).
    pub async fn call_raw(&self, name: &str, args: Value) -> CallToolResult {
        let Value::Object(map) = args else {
            panic!("arguments must be an object")
        };
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(map);
        tokio::time::timeout(Duration::from_secs(20), self.service.call_tool(params))
            .await
            .unwrap_or_else(|_| panic!("tools/call {name} timed out"))
            .unwrap_or_else(|e| panic!("tools/call {name} failed: {e}"))
    }

    /// Calls a tool that must succeed; returns its `structuredContent` after
    /// validating it against the tool's published `outputSchema`.
    pub async fn call(&self, name: &str, args: Value) -> Value {
        let result = self.call_raw(name, args).await;
        assert_ne!(
            result.is_error,
            Some(true),
            "tool {name} returned an error: {:?}",
            result.content
        );
        let structured = result
            .structured_content
            .clone()
            .unwrap_or_else(|| panic!("tool {name} returned no structuredContent: {result:?}"));
        let schema = self
            .tool(name)
            .output_schema
            .clone()
            .unwrap_or_else(|| panic!("tool {name} publishes no outputSchema"));
        if let Err(errors) = validate(&Value::Object((*schema).clone()), &structured) {
            panic!("structuredContent of {name} does not validate against its outputSchema:\n{errors}\ninstance: {structured:#}");
        }
        structured
    }

    /// rmcp's peer of this session, for requests whose JSON-RPC errors a test
    /// inspects (or that it sends from other tasks).
    pub fn peer(&self) -> rmcp::service::Peer<RoleClient> {
        self.service.peer().clone()
    }

    /// One MCP `ping` round trip.
    pub async fn ping(&self) {
        let req = rmcp::model::ClientRequest::PingRequest(rmcp::model::PingRequest::default());
        tokio::time::timeout(
            Duration::from_secs(10),
            self.service.peer().send_request(req),
        )
        .await
        .expect("ping timed out")
        .expect("ping failed");
    }

    /// Calls an envelope (`tmux_*`) tool whatever the outcome: validates its
    /// `structuredContent` against the published `outputSchema` (errors too),
    /// checks that `isError` agrees with `ok`, and returns it with the text content.
    pub async fn call_envelope(&self, name: &str, args: Value) -> Envelope {
        let result = self.call_raw(name, args).await;
        let structured = result
            .structured_content
            .clone()
            .unwrap_or_else(|| panic!("tool {name} returned no structuredContent: {result:?}"));
        let schema = self
            .tool(name)
            .output_schema
            .clone()
            .unwrap_or_else(|| panic!("tool {name} publishes no outputSchema"));
        if let Err(errors) = validate(&Value::Object((*schema).clone()), &structured) {
            panic!("structuredContent of {name} does not validate against its outputSchema:\n{errors}\ninstance: {structured:#}");
        }
        let is_error = result.is_error == Some(true);
        assert_eq!(
            is_error,
            structured["ok"] == json!(false),
            "isError disagrees with ok: {result:?}"
        );
        let text = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        Envelope {
            structured,
            text,
            is_error,
        }
    }

    /// Closes the client and waits for the relay to exit.
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.service.cancel()).await;
    }
}

/// A validated envelope result (see [`McpClient::call_envelope`]).
/// The seed family's fixed `error.message` of `code` (its envelope contract).
pub fn seed_fixed_message(code: &str) -> &'static str {
    match code {
        "invalid_input" => "Input does not match the operation schema.",
        "stale_cursor" => "The cursor is unknown, expired, or outside its captured result.",
        "policy_denied" => "The configured policy denies this operation.",
        "closed" => "The application is closed.",
        _ => "The operation could not establish its requested result.",
    }
}

/// `error.message` is exactly the fixed text of its code, and the text content
/// starts with it (the detail follows there, never in the envelope).
pub fn assert_fixed_message(error: &Value, text: &str) {
    let want = seed_fixed_message(error["code"].as_str().unwrap_or_default());
    assert_eq!(
        error["message"].as_str(),
        Some(want),
        "error.message must be the fixed text: {error:#}"
    );
    assert!(
        text.starts_with(want),
        "text content {text:?} does not start with the fixed message {want:?}"
    );
}

#[derive(Debug, Clone)]
pub struct Envelope {
    pub structured: Value,
    pub text: String,
    pub is_error: bool,
}

impl Envelope {
    /// `data` of a success; panics with the error otherwise.
    pub fn data(&self) -> &Value {
        assert_eq!(
            self.structured["ok"],
            json!(true),
            "expected ok:true, got {:#}",
            self.structured
        );
        &self.structured["data"]
    }

    /// Asserts an `{ok:false}` envelope with `code` and `delivery` whose
    /// message is the code's fixed text; returns the text content (the fixed
    /// message, then the specific reason).
    pub fn expect_error(&self, code: &str, delivery: &str) -> String {
        let e = &self.structured["error"];
        assert_eq!(
            self.structured["ok"],
            json!(false),
            "expected error {code}, got {:#}",
            self.structured
        );
        assert_eq!(
            (e["code"].as_str(), e["delivery"].as_str()),
            (Some(code), Some(delivery)),
            "unexpected error: {:#}",
            self.structured
        );
        assert!(self.is_error, "an error envelope without isError");
        assert_fixed_message(e, &self.text);
        self.text.clone()
    }
}

// ---------------------------------------------------------------------------
// Raw JSON-RPC client on `tmux-mcp attach`
// ---------------------------------------------------------------------------

/// The attach relay as a plain child process speaking JSON-RPC lines.
pub struct RawClient {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<Vec<u8>>,
    /// Messages received while waiting for another id.
    pending: Vec<Value>,
}

impl RawClient {
    pub fn attach(server: &TmuxServer, extra: &[&str]) -> RawClient {
        Self::attach_with_env(server, extra, &[])
    }

    /// Like [`RawClient::attach`], with extra environment variables for the relay.
    pub fn attach_with_env(server: &TmuxServer, extra: &[&str], env: &[(&str, &str)]) -> RawClient {
        let mut cmd = tmux_mcp(&["attach", "-S", server.socket_str()]);
        cmd.args(extra);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let err = std::fs::File::create(server.scratch("raw-attach-stderr")).expect("stderr file");
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .expect("spawning tmux-mcp attach");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        RawClient {
            child,
            stdin,
            lines: spawn_line_reader(stdout),
            pending: Vec::new(),
        }
    }

    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let w = self.stdin.as_mut().expect("stdin open");
        w.write_all(bytes).expect("writing to the relay");
        w.flush().expect("flushing the relay's stdin");
    }

    pub fn send(&mut self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).unwrap();
        line.push(b'\n');
        self.send_bytes(&line);
    }

    /// The next message from the relay (in arrival order).
    pub fn recv(&mut self, timeout: Duration) -> Value {
        if !self.pending.is_empty() {
            return self.pending.remove(0);
        }
        recv_line(&self.lines, timeout)
    }

    /// The response with `id`, keeping other messages for later.
    pub fn recv_id(&mut self, id: &Value, timeout: Duration) -> Value {
        recv_id(&self.lines, &mut self.pending, id, timeout)
    }

    /// The first message (kept or new) for which `want` holds, within
    /// `timeout`; other messages stay kept, in order. `None` on timeout.
    pub fn recv_where(
        &mut self,
        timeout: Duration,
        want: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        recv_where(&self.lines, &mut self.pending, timeout, want)
    }

    /// Takes every kept message for which `want` holds.
    pub fn take_kept(&mut self, want: impl Fn(&Value) -> bool) -> Vec<Value> {
        let (taken, kept) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|m| want(m));
        self.pending = kept;
        taken
    }

    /// Sends a request and waits for its response.
    pub fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.recv_id(&json!(id), Duration::from_secs(20))
    }

    /// Sends a request and returns its response line exactly as the relay
    /// wrote it (for byte counts); other messages are kept for later.
    pub fn request_line(&mut self, id: i64, method: &str, params: Value) -> Vec<u8> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(20))
                .expect("a response line");
            let msg: Value = serde_json::from_slice(&line).expect("the relay wrote JSON");
            if msg.get("id") == Some(&json!(id)) {
                return line;
            }
            self.pending.push(msg);
        }
    }

    /// initialize + notifications/initialized.
    pub fn initialize(&mut self) -> Value {
        let r = self.request(0, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw-e2e", "version": "0"}}));
        assert!(r.get("result").is_some(), "initialize failed: {r}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    /// Closes stdin and waits (≤5 s) for the relay to exit.
    pub fn close(mut self) -> Option<std::process::ExitStatus> {
        self.stdin.take();
        let pid = self.child.id();
        let r = poll(Duration::from_secs(5), || {
            self.child.try_wait().ok().flatten()
        });
        if r.is_none() {
            kill_pid(pid, libc::SIGKILL);
            let _ = self.child.wait();
        }
        r
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        self.stdin.take();
        if self.child.try_wait().ok().flatten().is_none() {
            let pid = self.child.id();
            if poll(Duration::from_secs(2), || {
                self.child.try_wait().ok().flatten()
            })
            .is_none()
            {
                kill_pid(pid, libc::SIGKILL);
                let _ = self.child.wait();
            }
        }
    }
}

/// A JSON-RPC line channel over any pair of byte streams (e.g. named pipes).
pub struct LineChannel {
    writer: std::fs::File,
    lines: mpsc::Receiver<Vec<u8>>,
    pending: Vec<Value>,
}

impl LineChannel {
    pub fn new(writer: std::fs::File, reader: std::fs::File) -> LineChannel {
        LineChannel {
            writer,
            lines: spawn_line_reader(reader),
            pending: Vec::new(),
        }
    }

    pub fn send(&mut self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).unwrap();
        line.push(b'\n');
        self.writer.write_all(&line).expect("writing a line");
        self.writer.flush().unwrap();
    }

    pub fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        recv_id(
            &self.lines,
            &mut self.pending,
            &json!(id),
            Duration::from_secs(20),
        )
    }

    /// As [`RawClient::recv_where`].
    pub fn recv_where(
        &mut self,
        timeout: Duration,
        want: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        recv_where(&self.lines, &mut self.pending, timeout, want)
    }

    pub fn initialize(&mut self) -> Value {
        let r = self.request(0, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fifo-e2e", "version": "0"}}));
        assert!(r.get("result").is_some(), "initialize failed: {r}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }
}

fn spawn_line_reader(r: impl std::io::Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(r);
        loop {
            let mut line = Vec::new();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
    rx
}

fn recv_line(rx: &mpsc::Receiver<Vec<u8>>, timeout: Duration) -> Value {
    match rx.recv_timeout(timeout) {
        Ok(line) => serde_json::from_slice(&line).unwrap_or_else(|e| {
            panic!(
                "the relay wrote a line that is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&line)
            )
        }),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("no message from the relay within {timeout:?}")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the relay closed its stdout"),
    }
}

fn recv_where(
    rx: &mpsc::Receiver<Vec<u8>>,
    pending: &mut Vec<Value>,
    timeout: Duration,
    want: impl Fn(&Value) -> bool,
) -> Option<Value> {
    if let Some(i) = pending.iter().position(&want) {
        return Some(pending.remove(i));
    }
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        let line = match rx.recv_timeout(left) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => return None,
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the relay closed its stdout"),
        };
        let msg: Value = serde_json::from_slice(&line)
            .unwrap_or_else(|e| panic!("the relay wrote a line that is not JSON ({e})"));
        if want(&msg) {
            return Some(msg);
        }
        pending.push(msg);
    }
}

fn recv_id(
    rx: &mpsc::Receiver<Vec<u8>>,
    pending: &mut Vec<Value>,
    id: &Value,
    timeout: Duration,
) -> Value {
    if let Some(i) = pending.iter().position(|m| m.get("id") == Some(id)) {
        return pending.remove(i);
    }
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let msg = recv_line(rx, left.max(Duration::from_millis(1)));
        if msg.get("id") == Some(id) {
            return msg;
        }
        pending.push(msg);
    }
}

/// Results of `tools/call` through a raw channel: `structuredContent`, validated
/// against the `outputSchema` published in `tools/list`.
pub fn checked_structured(tools_list: &Value, name: &str, response: &Value) -> Value {
    let result = response
        .get("result")
        .unwrap_or_else(|| panic!("tools/call {name} failed: {response}"));
    assert_ne!(
        result.get("isError"),
        Some(&json!(true)),
        "tool {name} returned an error: {result}"
    );
    let structured = result
        .get("structuredContent")
        .cloned()
        .unwrap_or_else(|| panic!("no structuredContent from {name}: {result}"));
    let tools: HashMap<&str, &Value> = tools_list["result"]["tools"]
        .as_array()
        .expect("tools/list result")
        .iter()
        .map(|t| (t["name"].as_str().unwrap_or(""), t))
        .collect();
    let schema = tools
        .get(name)
        .and_then(|t| t.get("outputSchema"))
        .unwrap_or_else(|| panic!("{name} publishes no outputSchema"));
    if let Err(e) = validate(schema, &structured) {
        panic!("structuredContent of {name} does not validate against its outputSchema:\n{e}\ninstance: {structured:#}");
    }
    structured
}

/// The pane with `id` in a `list_panes` result.
pub fn pane<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["panes"]
        .as_array()
        .expect("panes array")
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("pane {id} not in list_panes: {list:#}"))
}

// ---------------------------------------------------------------------------
// A relay running inside a pane (for caller-pane tests)
// ---------------------------------------------------------------------------

pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// POSIX `mkfifo -m 600` (rustix has no `mkfifoat` on macOS).
pub fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo")
        .args(["-m", "600"])
        .arg(path)
        .status()
        .unwrap_or_else(|e| panic!("mkfifo {}: {e}", path.display()));
    assert!(st.success(), "mkfifo {}: {st}", path.display());
}

/// Opens a fifo end in a thread (opening blocks until the other end is opened).
pub fn open_fifo(path: &Path, write: bool) -> mpsc::Receiver<std::fs::File> {
    let (tx, rx) = mpsc::channel();
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let f = if write {
            std::fs::OpenOptions::new().write(true).open(&path)
        } else {
            std::fs::File::open(&path)
        };
        let _ = tx.send(f.expect("opening fifo"));
    });
    rx
}

/// A process started by `sh` in a new window of session `main`, running the
/// shell command `command` with its stdin and stdout on two FIFOs and its
/// stderr in a file: returns the pane, the writer of its stdin, the reader of
/// its stdout, and the stderr file. `outlive_pane` as in [`PaneRelay::start`].
pub fn spawn_in_pane(
    srv: &TmuxServer,
    label: &str,
    command: &str,
    outlive_pane: bool,
) -> (String, std::fs::File, std::fs::File, PathBuf) {
    let dir = srv.dir();
    let (fin, fout, ferr) = (
        dir.join(format!("{label}.in")),
        dir.join(format!("{label}.out")),
        dir.join(format!("{label}.err")),
    );
    mkfifo(&fin);
    mkfifo(&fout);
    let script = dir.join(format!("{label}.sh"));
    let (before, after) = if outlive_pane {
        ("trap '' HUP\n", "")
    } else {
        ("", "echo \"relay exited $?\"\nexec sleep 1000\n")
    };
    std::fs::write(
        &script,
        format!(
            "{before}{command} <{} >{} 2>{}\n{after}",
            sh_quote(fin.to_str().unwrap()),
            sh_quote(fout.to_str().unwrap()),
            sh_quote(ferr.to_str().unwrap())
        ),
    )
    .unwrap();
    let w = open_fifo(&fin, true);
    let r = open_fifo(&fout, false);
    let pane = srv
        .tmux(&[
            "new-window",
            "-d",
            "-t",
            "main:",
            "-P",
            "-F",
            "#{pane_id}",
            &format!("sh {}", sh_quote(script.to_str().unwrap())),
        ])
        .trim()
        .to_string();
    let writer = w
        .recv_timeout(Duration::from_secs(10))
        .expect("the pane's process never opened its input fifo");
    let reader = r
        .recv_timeout(Duration::from_secs(10))
        .expect("the pane's process never opened its output fifo");
    (pane, writer, reader, ferr)
}

/// `tmux-mcp attach` running inside a new window of session `main`, as a child
/// of the pane's shell and without TMUX/TMUX_PANE in its environment (so only
/// process ancestry can tell the broker its pane), spoken to through two FIFOs.
pub struct PaneRelay {
    /// Initialized; `tools/list` was request id 1.
    pub channel: LineChannel,
    /// The `tools/list` response.
    pub tools: Value,
    /// The pane the relay runs in.
    pub pane: String,
    /// The relay's stderr.
    pub stderr: PathBuf,
}

impl PaneRelay {
    /// `outlive_pane`: the relay ignores SIGHUP so it survives its own pane
    /// being closed (and the pane ends with it); otherwise the pane stays open
    /// after the relay exits, printing `relay exited N`.
    pub fn start(srv: &TmuxServer, label: &str, extra: &[&str], outlive_pane: bool) -> PaneRelay {
        let extra: Vec<String> = extra.iter().map(|a| sh_quote(a)).collect();
        let command = format!(
            "unset TMUX TMUX_PANE\n{} attach -S {} {}",
            sh_quote(bin("tmux-mcp").to_str().unwrap()),
            sh_quote(srv.socket_str()),
            extra.join(" ")
        );
        let (pane, writer, reader, ferr) = spawn_in_pane(srv, label, &command, outlive_pane);
        let mut channel = LineChannel::new(writer, reader);
        channel.initialize();
        let tools = channel.request(1, "tools/list", json!({}));
        PaneRelay {
            channel,
            tools,
            pane,
            stderr: ferr,
        }
    }

    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

// ---------------------------------------------------------------------------
// Small shared helpers of the tool tests
// ---------------------------------------------------------------------------

/// The server generation, as `tmux_capabilities` reports it.
pub async fn generation(c: &McpClient) -> String {
    let cap = c.call("tmux_capabilities", json!({})).await;
    cap["data"]["server_identity"]["generation"]
        .as_str()
        .expect("server_identity.generation")
        .to_string()
}

/// A pane reference `{kind:"pane", id, generation}`.
pub fn pane_ref(generation: &str, id: &str) -> Value {
    json!({ "kind": "pane", "id": id, "generation": generation })
}

/// Starts a tmux client outside any pane (no `$TMUX`), its stdin held open so
/// it stays attached, its output dropped.
fn attached_client(cmd: &mut Command, what: &str) -> std::process::Child {
    cmd.env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// A control-mode client attached to `session` (stdin held open, so it stays
/// attached); killed on drop.
pub struct ControlClient(std::process::Child);

impl ControlClient {
    pub fn attach(srv: &TmuxServer, session: &str) -> ControlClient {
        let child = attached_client(
            Command::new("tmux").arg("-S").arg(srv.socket()).args([
                "-C",
                "attach-session",
                "-t",
                session,
            ]),
            "tmux -C attach",
        );
        let attached = || {
            srv.tmux(&[
                "display-message",
                "-p",
                "-t",
                &format!("{session}:"),
                "#{session_attached}",
            ])
            .trim()
                == "1"
        };
        poll(Duration::from_secs(5), || attached().then_some(()))
            .expect("the control client never attached");
        ControlClient(child)
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for ControlClient {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A terminal client (what a person runs) attached to `session`, on a
/// pseudo-terminal of `cols`×`rows` made by util-linux `script`; killed on drop.
pub struct TerminalClient {
    child: std::process::Child,
    /// The tmux client's pid (a child of `script`), as tmux reports it.
    pub pid: u32,
}

impl TerminalClient {
    pub fn attach(srv: &TmuxServer, session: &str, cols: u32, rows: u32) -> TerminalClient {
        let clients = || -> Vec<u32> {
            let out = srv.tmux(&["list-clients", "-F", "#{client_pid} #{client_control_mode}"]);
            out.lines()
                .filter_map(|l| l.strip_suffix(" 0"))
                .filter_map(|p| p.parse().ok())
                .collect()
        };
        let before = clients();
        let inner = format!(
            "stty cols {cols} rows {rows}; exec tmux -S '{}' attach-session -t '{session}'",
            srv.socket().display()
        );
        let child = attached_client(
            Command::new("script")
                .args(["-qfec", &inner, "/dev/null"])
                .env("TERM", "xterm-256color"),
            "script (util-linux) running tmux attach",
        );
        let pid = poll(Duration::from_secs(5), || {
            clients().into_iter().find(|p| !before.contains(p))
        })
        .expect("the terminal client never attached");
        TerminalClient { child, pid }
    }
}

impl Drop for TerminalClient {
    fn drop(&mut self) {
        // The tmux client first: killing `script` alone leaves it to notice the
        // closed terminal later.
        kill_pid(self.pid, libc::SIGTERM);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A file trap hooks append lines to, and the hook command that writes `fired`.
///
/// A test sets [`HookTrap::command`] as a hook and checks that it never ran.
/// Checking an empty file after a pause proves nothing (the hook may be slow,
/// or the trap broken), so the check is [`HookTrap::before_sentinel`]: after the
/// calls under test, the test runs one tmux command that *does* fire a hook
/// entry writing a sentinel line into the same file (for example
/// [`HookTrap::fire_sentinel`]), waits for that line and looks at what arrived
/// before it.
pub struct HookTrap {
    pub file: PathBuf,
    pub command: String,
    /// Bytes of `file` already accounted for by an earlier sentinel.
    seen: std::cell::Cell<usize>,
    sentinels: AtomicU64,
}

impl HookTrap {
    pub fn new(srv: &TmuxServer) -> HookTrap {
        Self::at(srv.dir().join("hook-fired"))
    }

    /// A trap on `file` (for tests that arm many hooks, each writing its name).
    pub fn at(file: PathBuf) -> HookTrap {
        let command = Self::command_for(&file, "fired");
        HookTrap {
            file,
            command,
            seen: std::cell::Cell::new(0),
            sentinels: AtomicU64::new(0),
        }
    }

    /// Sets `after-<command>` for every tmux command, and `command-error` (which
    /// any failing command runs; tmux has it from 3.5), except those named in
    /// `except`, which are unset; each writes its own name into the file.
    /// Returns the hooks armed.
    pub fn arm_every_after_hook(&self, srv: &TmuxServer, except: &[&str]) -> Vec<String> {
        let names = srv.tmux(&["list-commands", "-F", "#{command_list_name}"]);
        let mut armed = Vec::new();
        let hooks = names
            .split_whitespace()
            .map(|name| format!("after-{name}"))
            .chain(["command-error".to_string()]);
        for hook in hooks {
            if except.contains(&hook.as_str()) {
                let _ = srv.try_tmux(&["set-hook", "-gu", &hook]);
                continue;
            }
            if srv
                .try_tmux(&["set-hook", "-g", &hook, &self.command_writing(&hook)])
                .status
                .success()
            {
                armed.push(hook);
            }
        }
        armed
    }

    /// A hook command appending the line `line` (no quotes or spaces) to the file.
    pub fn command_writing(&self, line: &str) -> String {
        Self::command_for(&self.file, line)
    }

    fn command_for(file: &Path, line: &str) -> String {
        assert!(
            !line.is_empty()
                && line
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "trap line {line:?} must be a plain word"
        );
        format!("run-shell 'echo {line} >> {}'", file.display())
    }

    /// Everything in the file so far ("" when no hook ever ran).
    pub fn fired(&self) -> String {
        std::fs::read_to_string(&self.file).unwrap_or_default()
    }

    /// Empties the file (call it only after a sentinel: then nothing is still
    /// on its way into it).
    pub fn clear(&self) {
        std::fs::write(&self.file, "")
            .unwrap_or_else(|e| panic!("emptying {}: {e}", self.file.display()));
        self.seen.set(0);
    }

    /// Waits (up to 10 s) until the line `sentinel` arrives in the file and
    /// returns what arrived before it since the previous sentinel (or the
    /// start). Panics, quoting the file, when the sentinel never comes: then
    /// the trap's path is broken and an empty file would have proved nothing.
    pub fn before_sentinel(&self, sentinel: &str) -> String {
        let seen = self.seen.get();
        let found = poll(Duration::from_secs(10), || {
            let text = self.fired();
            let rest = text.get(seen..)?;
            let mut at = 0;
            for line in rest.split_inclusive('\n') {
                if line.strip_suffix('\n') == Some(sentinel) {
                    return Some((rest[..at].to_string(), seen + at + line.len()));
                }
                at += line.len();
            }
            None
        });
        let Some((before, end)) = found else {
            panic!("the sentinel line {sentinel:?} never reached the hook trap {} within 10 s; it holds: {:?}", self.file.display(), self.fired());
        };
        self.seen.set(end);
        before
    }

    /// Sets the global hook entry `hook` to write a fresh sentinel line, runs
    /// `tmux ARGS` (a command that fires `hook`), waits for the sentinel,
    /// unsets the entry again and returns what arrived before the sentinel
    /// (see [`HookTrap::before_sentinel`]). `args` must reach the global entry:
    /// in tmux 3.3a a session that has its own array of `hook` — even one
    /// emptied with `set-hook -u -t S hook[N]` — masks the global one. Setting a
    /// hook fires `after-set-hook`, so a test that traps that hook builds its
    /// sentinel from [`HookTrap::command_writing`] instead.
    pub fn fire_sentinel(&self, srv: &TmuxServer, hook: &str, args: &[&str]) -> String {
        let line = format!(
            "sentinel-{}",
            self.sentinels.fetch_add(1, Ordering::Relaxed)
        );
        srv.tmux(&["set-hook", "-g", hook, &self.command_writing(&line)]);
        srv.tmux(args);
        let before = self.before_sentinel(&line);
        srv.tmux(&["set-hook", "-gu", hook]);
        before
    }
}

// ---------------------------------------------------------------------------
// Contract files and seed pages in the repository
// ---------------------------------------------------------------------------

/// The text of `broker/contracts/<file>`; panics naming the path when the file
/// is missing (a fresh clone has it: it is what the broker publishes).
pub fn contract_text(file: &str) -> String {
    let p = repo_root().join("broker/contracts").join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| {
        panic!(
            "contract file {} is missing or unreadable: {e}",
            p.display()
        )
    })
}

/// `broker/contracts/<file>` parsed (key order kept: `preserve_order`).
pub fn contract_json(file: &str) -> Value {
    serde_json::from_str(&contract_text(file))
        .unwrap_or_else(|e| panic!("broker/contracts/{file} is not JSON: {e}"))
}

/// The text of the seed page `tests/seeds/<file>` (copies of `shared/seeds/`;
/// see tests/seeds/README.md); panics naming the path when it is missing.
pub fn seed_text(file: &str) -> String {
    let p = repo_root().join("tests/seeds").join(file);
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("seed page {} is missing or unreadable: {e}", p.display()))
}

// ---------------------------------------------------------------------------
// A pane whose output the test writes
// ---------------------------------------------------------------------------

pub const PANE_PY: &str = r#"import sys
fifo = sys.argv[1]
out = sys.stdout.buffer
while True:
    with open(fifo, "rb") as f:
        for line in f:
            line = line.strip()
            if line:
                out.write(bytes.fromhex(line.decode()))
                out.flush()
"#;

/// A pane running [`PANE_PY`]; `emit` writes bytes to its terminal and waits
/// until tmux has processed them (an OSC 2 title marker written last).
pub struct PaneWriter {
    pub id: String,
    fifo: std::fs::File,
    seq: u64,
}

impl PaneWriter {
    /// `new-session -d -s NAME -x W -y H` running the writer program.
    pub fn new_session(srv: &TmuxServer, name: &str, w: u16, h: u16) -> PaneWriter {
        let (script, fifo) = Self::files(srv, name);
        let rx = open_fifo(&fifo, true);
        let cmd = format!(
            "exec python3 {} {}",
            sh_quote(script.to_str().unwrap()),
            sh_quote(fifo.to_str().unwrap())
        );
        let id = srv
            .tmux(&[
                "new-session",
                "-d",
                "-s",
                name,
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
                "-P",
                "-F",
                "#{pane_id}",
                &cmd,
            ])
            .trim()
            .to_string();
        Self::finish(srv, id, rx)
    }

    /// `new-window -d` (in session `main`) running the writer program.
    pub fn new_window(srv: &TmuxServer, label: &str) -> PaneWriter {
        let (script, fifo) = Self::files(srv, label);
        let rx = open_fifo(&fifo, true);
        let cmd = format!(
            "exec python3 {} {}",
            sh_quote(script.to_str().unwrap()),
            sh_quote(fifo.to_str().unwrap())
        );
        let id = srv
            .tmux(&[
                "new-window",
                "-d",
                "-t",
                "main:",
                "-P",
                "-F",
                "#{pane_id}",
                &cmd,
            ])
            .trim()
            .to_string();
        Self::finish(srv, id, rx)
    }

    fn files(srv: &TmuxServer, label: &str) -> (PathBuf, PathBuf) {
        let script = srv.dir().join(format!("pane-{label}.py"));
        std::fs::write(&script, PANE_PY).unwrap();
        let fifo = srv.dir().join(format!("fifo-{label}"));
        mkfifo(&fifo);
        (script, fifo)
    }

    fn finish(srv: &TmuxServer, id: String, rx: mpsc::Receiver<std::fs::File>) -> PaneWriter {
        let fifo = rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| {
                panic!(
                    "the pane program in {id} never opened its fifo: {}",
                    srv.tmux(&[
                        "list-panes",
                        "-a",
                        "-F",
                        "#{pane_id} #{pane_dead} #{pane_current_command}"
                    ])
                )
            });
        let mut w = PaneWriter { id, fifo, seq: 0 };
        w.emit(srv, b"");
        w
    }

    pub fn emit(&mut self, srv: &TmuxServer, bytes: &[u8]) {
        self.seq += 1;
        let marker = format!("s{}-{}", self.seq, std::process::id());
        let mut all = bytes.to_vec();
        all.extend_from_slice(format!("\x1b]2;{marker}\x07").as_bytes());
        let hex: String = all.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(self.fifo, "{hex}").expect("writing to the pane fifo");
        self.fifo.flush().unwrap();
        let seen = poll(Duration::from_secs(5), || {
            (srv.tmux(&["display-message", "-p", "-t", &self.id, "#{pane_title}"])
                .trim()
                == marker)
                .then_some(())
        });
        assert!(
            seen.is_some(),
            "pane {} did not process update {marker} within 5 s",
            self.id
        );
    }

    pub fn size(&self, srv: &TmuxServer) -> (usize, usize) {
        let s = srv.tmux(&[
            "display-message",
            "-p",
            "-t",
            &self.id,
            "#{pane_width} #{pane_height}",
        ]);
        let (w, h) = s.trim().split_once(' ').unwrap();
        (w.parse().unwrap(), h.parse().unwrap())
    }
}

/// The key binding's pasted line (`tmux-mcp cursor`): the `capture_since`
/// arguments and the `tmux_capture` arguments it names.
pub fn parse_handoff(line: &str) -> (Value, Value) {
    let rest = line
        .strip_prefix("tmux-mcp: pane ")
        .unwrap_or_else(|| panic!("unexpected hand-off text {line:?}"));
    let since = rest
        .split_once(" — call capture_since ")
        .map(|x| x.1)
        .unwrap_or_else(|| panic!("the hand-off text names no capture_since call: {line:?}"));
    let (since, capture) = since
        .split_once(" (or tmux_capture ")
        .unwrap_or_else(|| panic!("the hand-off text names no tmux_capture call: {line:?}"));
    let capture = capture
        .strip_suffix(')')
        .unwrap_or_else(|| panic!("unterminated tmux_capture arguments: {line:?}"));
    let parse = |s: &str| {
        serde_json::from_str::<Value>(s)
            .unwrap_or_else(|e| panic!("hand-off arguments are not JSON ({e}): {s:?} in {line:?}"))
    };
    (parse(since), parse(capture))
}

// ---------------------------------------------------------------------------
// A raw-mode byte reader (what exactly reached a pane's program)
// ---------------------------------------------------------------------------

/// A raw-mode byte reader in a new window: appends every byte it reads to
/// `out` and echoes it in hex on the screen (one chunk per line). Returns its
/// pane id once it is in raw mode.
pub fn start_reader(srv: &TmuxServer) -> (String, PathBuf) {
    start_reader_as(srv, "reader", false)
}

/// [`start_reader`] with files named after `label`; with `bracketed_paste` the
/// reader first turns bracketed paste on (`ESC [ ? 2004 h`), as shells do.
pub fn start_reader_as(srv: &TmuxServer, label: &str, bracketed_paste: bool) -> (String, PathBuf) {
    let dir = srv.dir();
    let script = dir.join(format!("{label}.py"));
    let out = dir.join(format!("{label}.bytes"));
    let ready = dir.join(format!("{label}.ready"));
    std::fs::write(
        &script,
        format!(
            "import os, sys, tty\n\
             tty.setraw(0)\n\
             {}\
             out = open(sys.argv[1], 'ab', buffering=0)\n\
             open(sys.argv[2], 'w').close()\n\
             while True:\n\
             \x20   b = os.read(0, 4096)\n\
             \x20   if not b: break\n\
             \x20   out.write(b)\n\
             \x20   os.write(1, (b.hex(' ') + '\\r\\n').encode())\n",
            if bracketed_paste {
                "os.write(1, b'\\x1b[?2004h')\n"
            } else {
                ""
            }
        ),
    )
    .unwrap();
    let cmd = format!(
        "python3 {} {} {}",
        script.display(),
        out.display(),
        ready.display()
    );
    let id = srv
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", &cmd])
        .trim()
        .to_string();
    poll(Duration::from_secs(10), || ready.exists().then_some(()))
        .expect("the raw reader did not start");
    (id, out)
}

// ---------------------------------------------------------------------------
// A second local user
// ---------------------------------------------------------------------------

/// A local user made for one test, removed (with what it made) when dropped.
pub struct OtherUser {
    pub name: String,
    /// Directories removed (whole) when the user is.
    pub made: Vec<PathBuf>,
}

/// An administration command by name, from `/usr/sbin` or `/sbin` when
/// `PATH` lacks them (as it may for a user's shell).
pub fn sbin(name: &str) -> PathBuf {
    ["/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from(name))
}

impl OtherUser {
    /// `None` where users cannot be made here (not root, no useradd).
    pub fn make() -> Option<OtherUser> {
        // Two tests of one process make two users.
        static MADE: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "tmcp{}u{}",
            std::process::id() % 100_000,
            MADE.fetch_add(1, Ordering::Relaxed)
        );
        let ok = std::process::Command::new(sbin("useradd"))
            .args(["-M", "-r", "-s", "/bin/sh", &name])
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| OtherUser {
            name,
            made: Vec::new(),
        })
    }

    /// Runs `script` under /bin/sh as this user; its success.
    pub fn sh(&mut self, script: &str) -> bool {
        std::process::Command::new(sbin("runuser"))
            .args(["-u", &self.name, "--", "/bin/sh", "-c", script])
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for OtherUser {
    fn drop(&mut self) {
        for p in &self.made {
            let _ = std::fs::remove_dir_all(p);
        }
        let _ = std::process::Command::new(sbin("userdel"))
            .arg(&self.name)
            .status();
    }
}
