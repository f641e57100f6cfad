//! Shell integration (`tmux-mcp shell-init`) with the real shells: bash, zsh
//! and fish, each started without its rc files in a pane of a private tmux
//! server, enrolled as a person would (the eval line typed at its prompt).
//! What the shell reports reaches `get_pane_info` (at its prompt, running a
//! command) and `get_commands` (the person's failing command, its status and
//! the exact rows it printed); `--check` says the pane is enrolled; a pane
//! not enrolled is refused with how to enroll; enrolment and marks fire no
//! tmux hook.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use tmux_mcp_e2e::*;

/// A pane running `shell` without rc files (a fixed one-line prompt), its id.
fn shell_pane(srv: &TmuxServer, shell: &str) -> String {
    let home = srv.scratch(&format!("home-{shell}"));
    std::fs::create_dir_all(&home).unwrap();
    let h = home.to_str().unwrap();
    let argv = match shell {
        "bash" => "bash --norc --noprofile -i",
        "zsh" => "zsh -f -i",
        _ => "fish --no-config -i",
    };
    // As a person's pane has it: TMUX and TMUX_PANE, nothing else of ours.
    let line = format!(
        "exec env -i HOME={h} XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data \
         TERM=xterm-256color PATH=/usr/local/bin:/usr/bin:/bin 'PS1=$ ' 'PROMPT=$ ' \
         TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\" {argv}"
    );
    let args = ["new-window", "-d", "-P", "-F", "#{pane_id}", &line];
    let id = srv.tmux(&args).trim().to_string();
    poll(Duration::from_secs(10), || {
        let named = srv
            .tmux(&[
                "display-message",
                "-p",
                "-t",
                &id,
                "#{pane_current_command}",
            ])
            .trim()
            == shell;
        let prompt = !srv
            .tmux(&["capture-pane", "-p", "-t", &id])
            .trim()
            .is_empty();
        (named && prompt).then_some(())
    })
    .unwrap_or_else(|| panic!("{shell} did not start in {id}"));
    id
}

fn type_line(srv: &TmuxServer, pane: &str, line: &str) {
    srv.tmux(&["send-keys", "-t", pane, "-l", line]);
    srv.tmux(&["send-keys", "-t", pane, "Enter"]);
}

fn enroll_line(shell: &str) -> String {
    let bin = bin("tmux-mcp");
    let bin = bin.to_str().unwrap();
    match shell {
        "fish" => format!("{bin} shell-init fish | source"),
        s => format!("eval \"$({bin} shell-init {s})\""),
    }
}

async fn shell_of(c: &McpClient, pane: &str) -> Option<Value> {
    let info = c.call("get_pane_info", json!({ "paneId": pane })).await;
    info["pane"].get("shell").cloned()
}

async fn wait_shell(
    c: &McpClient,
    srv: &TmuxServer,
    pane: &str,
    want: impl Fn(&Value) -> bool,
) -> Value {
    for _ in 0..400 {
        if let Some(s) = shell_of(c, pane).await {
            if want(&s) {
                return s;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{pane}: the shell never reached the state: {:?}; the pane shows:\n{}",
        shell_of(c, pane).await,
        srv.tmux(&["capture-pane", "-p", "-t", pane])
    );
}

async fn enrolled_shell_reports_its_commands(shell: &str) {
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    let c = McpClient::attach(
        &srv,
        &["--scope", "server", "--enable-tool", "get_commands"],
    )
    .await;
    let pane = shell_pane(&srv, shell);
    // Not enrolled yet: no shell in its record, get_commands says how.
    assert_eq!(shell_of(&c, &pane).await, None);
    let refused = c.call_raw("get_commands", json!({ "paneId": pane })).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let text = format!("{:?}", refused.content);
    assert!(
        text.contains("no enrolled shell") && text.contains("shell-init"),
        "{text}"
    );

    // Every hook but those of the commands this test types and reads with
    // (the broker's own captures fire none: with after-capture-pane set it
    // would capture nothing).
    // Arming is set-hook, so after-set-hook is left out too.
    let armed = trap.arm_every_after_hook(
        &srv,
        &["after-send-keys", "after-capture-pane", "after-set-hook"],
    );
    type_line(&srv, &pane, &enroll_line(shell));
    let s = wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    assert_eq!(s["name"], json!(shell), "{s:#}");

    // The person's failing command: its status and exactly what it printed.
    let failing = "sh -c 'echo out-a; echo out-b >&2; exit 3'";
    type_line(&srv, &pane, failing);
    let mut got = Value::Null;
    for _ in 0..200 {
        got = c
            .call("get_commands", json!({ "paneId": pane, "limit": 1 }))
            .await;
        if got["commands"][0].get("lines").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let last = &got["commands"][0];
    assert_eq!(last["command"], json!(failing), "{got:#}");
    assert_eq!(last["exitStatus"], json!(3), "{got:#}");
    assert_eq!(last["lines"], json!(["out-a", "out-b"]), "{got:#}");
    assert!(
        last["endedAt"].as_f64() >= last["startedAt"].as_f64(),
        "{got:#}"
    );
    assert_eq!(got["shell"]["lastStatus"], json!(3), "{got:#}");

    // A command running: the pane says which, then the prompt again.
    type_line(&srv, &pane, "sleep 30");
    let s = wait_shell(&c, &srv, &pane, |s| s["state"] == "running").await;
    assert_eq!(s["command"], json!("sleep 30"), "{s:#}");
    srv.tmux(&["send-keys", "-t", &pane, "C-c"]);
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;

    // Older commands page with `before`, newest first.
    type_line(&srv, &pane, "echo second");
    let all = loop {
        let all = c
            .call("get_commands", json!({ "paneId": pane, "limit": 20 }))
            .await;
        if all["commands"][0]["command"] == "echo second"
            && all["commands"][0].get("lines").is_some()
        {
            break all;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let texts: Vec<&str> = all["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["command"].as_str().unwrap())
        .collect();
    let at = texts.iter().position(|t| *t == failing).unwrap();
    assert_eq!(
        &texts[..at + 1],
        &["echo second", "sleep 30", failing],
        "{all:#}"
    );
    assert_eq!(all["commands"][0]["lines"], json!(["second"]), "{all:#}");
    let seq = all["commands"][0]["seq"].as_u64().unwrap();
    let older = c
        .call(
            "get_commands",
            json!({ "paneId": pane, "limit": 1, "before": seq }),
        )
        .await;
    assert_eq!(
        older["commands"][0]["command"],
        json!("sleep 30"),
        "{older:#}"
    );
    assert_eq!(older["more"], json!(true), "{older:#}");

    // The person can check their pane.
    let bin = bin("tmux-mcp");
    type_line(
        &srv,
        &pane,
        &format!("{} shell-init --check", bin.display()),
    );
    poll(Duration::from_secs(10), || {
        srv.tmux(&["capture-pane", "-p", "-t", &pane])
            .contains(&format!("enrolled: {shell} (pid"))
            .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "--check: {}",
            srv.tmux(&["capture-pane", "-p", "-t", &pane])
        )
    });
    // A sentinel through the trap's own path: whatever fired came before it.
    let fired = trap.fire_sentinel(&srv, "after-send-keys", &["send-keys", "-t", &pane, ""]);
    assert_eq!(fired, "", "hooks fired ({} armed)", armed.len());
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_enrolled_reports_its_commands() {
    enrolled_shell_reports_its_commands("bash").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_enrolled_reports_its_commands() {
    enrolled_shell_reports_its_commands("zsh").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fish_enrolled_reports_its_commands() {
    enrolled_shell_reports_its_commands("fish").await;
}

fn screen(srv: &TmuxServer, pane: &str) -> String {
    srv.tmux(&["capture-pane", "-p", "-t", pane])
}

/// Waits until the pane's last non-empty row satisfies `want`.
fn wait_row(srv: &TmuxServer, pane: &str, want: impl Fn(&str) -> bool) -> String {
    poll(Duration::from_secs(10), || {
        let s = screen(srv, pane);
        let last = s.lines().rev().find(|l| !l.trim().is_empty())?.to_string();
        want(&last).then_some(last)
    })
    .unwrap_or_else(|| panic!("{pane}: {}", screen(srv, pane)))
}

/// Clears the pane (`clear` typed) and waits until the screen holds only
/// the prompt; that row.
fn cleared(srv: &TmuxServer, pane: &str) -> String {
    type_line(srv, pane, "clear");
    poll(Duration::from_secs(10), || {
        let s = screen(srv, pane);
        let rows: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
        match rows[..] {
            [one] if one.trim_end().ends_with(['$', '>', '#']) => Some(one.to_string()),
            _ => None,
        }
    })
    .unwrap_or_else(|| panic!("{pane} never showed only its prompt: {}", screen(srv, pane)))
}

/// `run_command` in an enrolled shell sends only a key chord: the pane shows
/// the prompt, the command and its output; the person's half-typed line is
/// given back; `$?` is the command's; nothing enters history; builtins see
/// the terminal; `cd` persists; two agents' runs do not interleave.
async fn enrolled_run_command(shell: &str) {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &["--scope", "server", "--safety", "mutating"]).await;
    let other = McpClient::attach(&srv, &["--scope", "server", "--safety", "mutating"]).await;
    let pane = shell_pane(&srv, shell);
    type_line(&srv, &pane, &enroll_line(shell));
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    let _ = cleared(&srv, &pane);
    // The person has started a line.
    srv.tmux(&["send-keys", "-t", &pane, "-l", "echo person-text"]);
    wait_row(&srv, &pane, |l| l.ends_with("echo person-text"));

    let command = "echo agent-ran; sh -c 'exit 4'";
    let got = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": command, "timeoutMs": 5000 }),
        )
        .await;
    assert_eq!(got["state"], json!("done"), "{got:#}");
    assert_eq!(got["exitStatus"], json!(4), "{got:#}");
    assert_eq!(got["output"]["text"], json!("agent-ran\n"), "{got:#}");
    // Given back, and the pane shows nothing but prompt, command and output.
    wait_row(&srv, &pane, |l| l.ends_with("echo person-text"));
    let shown = screen(&srv, &pane);
    let rows: Vec<&str> = shown.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        rows.len() == 3,
        "prompt+command, output, prompt+person's line:\n{shown}"
    );
    assert!(rows[0].ends_with(command), "{shown}");
    assert_eq!(rows[1], "agent-ran", "{shown}");
    assert!(!shown.contains("9400") && !shown.contains(">/"), "{shown}");

    // $? is the command's; the agent's line is not in history.
    srv.tmux(&["send-keys", "-t", &pane, "C-u"]);
    let probe = match shell {
        "fish" => "echo st=$status hist=(history search --contains agent-r | string match -r 'agent-r[a]n' | count)",
        "zsh" => "echo st=$? hist=$(fc -ln 1 | grep -c 'agent-r[a]n')",
        _ => "echo st=$? hist=$(history | grep -c 'agent-r[a]n')",
    };
    type_line(&srv, &pane, probe);
    poll(Duration::from_secs(10), || {
        screen(&srv, &pane).contains("st=4 hist=0").then_some(())
    })
    .unwrap_or_else(|| panic!("{}", screen(&srv, &pane)));

    // Builtins see the terminal; cd persists in the person's shell.
    let tty = c
        .call("run_command", json!({ "paneId": pane, "command": "test -t 1 && echo on-a-tty; cd /", "timeoutMs": 5000 }))
        .await;
    assert_eq!(tty["output"]["text"], json!("on-a-tty\n"), "{tty:#}");
    let s = wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    assert_eq!(s["cwd"], json!("/"), "{s:#}");

    // Two agents at once: the second waits for the first; nothing interleaves.
    let (a, b) = tokio::join!(
        c.call(
            "run_command",
            json!({ "paneId": pane, "command": "sleep 1; echo first", "timeoutMs": 5000 })
        ),
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            other
                .call(
                    "run_command",
                    json!({ "paneId": pane, "command": "echo second", "timeoutMs": 5000 }),
                )
                .await
        }
    );
    assert_eq!(
        (&a["output"]["text"], &a["exitStatus"]),
        (&json!("first\n"), &json!(0)),
        "{a:#}"
    );
    assert_eq!(
        (&b["output"]["text"], &b["exitStatus"]),
        (&json!("second\n"), &json!(0)),
        "{b:#}"
    );
    c.close().await;
    other.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_enrolled_run_command_types_nothing_but_a_chord() {
    enrolled_run_command("bash").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_enrolled_run_command_types_nothing_but_a_chord() {
    enrolled_run_command("zsh").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fish_enrolled_run_command_types_nothing_but_a_chord() {
    enrolled_run_command("fish").await;
}

async fn job_until(c: &McpClient, id: &str, state: &str) -> Value {
    for _ in 0..200 {
        let j = c.call("get_job", json!({ "jobId": id })).await;
        if j["state"] == state {
            return j;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("job {id} never reached {state}");
}

/// What goes wrong mid-run: the broker killed with -9 (the next one reads
/// the shell's marks anew: the shell is at its prompt and the run is among
/// its commands; a new run works), then the shell killed (the job is lost,
/// saying why). No hook fires for enrolment, marks or runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_survives_what_dies_around_it() {
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    let c = McpClient::attach(
        &srv,
        &[
            "--scope",
            "server",
            "--safety",
            "mutating",
            "--enable-tool",
            "get_commands",
        ],
    )
    .await;
    let pane = shell_pane(&srv, "zsh");
    let armed = trap.arm_every_after_hook(
        &srv,
        &["after-send-keys", "after-capture-pane", "after-set-hook"],
    );
    type_line(&srv, &pane, &enroll_line("zsh"));
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;

    let first = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "sleep 1; echo slept", "detach": true }),
        )
        .await;
    wait_shell(&c, &srv, &pane, |s| s["state"] == "running").await;
    kill_pid(srv.wait_for_one_broker(Duration::from_secs(5)), 9);
    // The relay starts the next broker (a request in flight when the broker
    // died is answered with an error saying so); it reads the marks anew.
    for _ in 0..100 {
        let mut args = serde_json::Map::new();
        args.insert("paneId".into(), json!(pane));
        let params = rmcp::model::CallToolRequestParams::new("get_pane_info").with_arguments(args);
        if c.peer().call_tool(params).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let s = wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    assert_eq!(s["lastStatus"], json!(0), "{s:#}");
    let listed = c
        .call("get_commands", json!({ "paneId": pane, "limit": 1 }))
        .await;
    assert_eq!(
        listed["commands"][0]["command"],
        json!("sleep 1; echo slept"),
        "{listed:#}"
    );
    assert_eq!(listed["commands"][0]["exitStatus"], json!(0), "{listed:#}");
    let gone = c
        .call_raw("get_job", json!({ "jobId": first["jobId"] }))
        .await;
    assert_eq!(
        gone.is_error,
        Some(true),
        "the job went with its broker: {gone:?}"
    );
    let again = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo after-restart", "timeoutMs": 5000 }),
        )
        .await;
    assert_eq!(
        again["output"]["text"],
        json!("after-restart\n"),
        "{again:#}"
    );

    // The shell dies mid-run: the job is lost, and says why.
    let run = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "sleep 30", "detach": true }),
        )
        .await;
    let s = wait_shell(&c, &srv, &pane, |s| s["state"] == "running").await;
    kill_pid(s["pid"].as_u64().unwrap() as u32, 9);
    let lost = job_until(&c, run["jobId"].as_str().unwrap(), "lost").await;
    assert!(
        lost["lostReason"]
            .as_str()
            .unwrap()
            .contains("shell exited"),
        "{lost:#}"
    );
    let fired = trap.fire_sentinel(&srv, "after-send-keys", &["send-keys", "-t", "main", ""]);
    assert_eq!(fired, "", "hooks fired ({} armed)", armed.len());
    c.close().await;
}

/// `tmux_run`: an authored script in an enrolled shell's idle, empty editor;
/// stdout and stderr apart, the status or signal, the authorization; nothing
/// on the pane; refused (nothing run) while the person has text in the
/// editor; overflow an error; a script past its timeout stopped.
async fn tmux_run_in(shell: &str) {
    let srv = TmuxServer::start();
    let c = McpClient::attach(
        &srv,
        &[
            "--scope",
            "server",
            "--safety",
            "destructive",
            "--enable-tool",
            "tmux_run",
        ],
    )
    .await;
    let generation = generation(&c).await;
    let pane = shell_pane(&srv, shell);
    let target = pane_ref(&generation, &pane);
    // Not enrolled: refused, saying how.
    let refused = c
        .call_envelope("tmux_run", json!({ "target": target, "script": "true" }))
        .await;
    let text = refused.expect_error("unsupported", "not_sent");
    assert!(text.contains("shell-init"), "{text}");

    type_line(&srv, &pane, &enroll_line(shell));
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    let idle = cleared(&srv, &pane);
    let before = screen(&srv, &pane);

    let script = "echo out; echo err >&2; pwd; exit 3";
    let ran = c
        .call_envelope("tmux_run", json!({ "target": target, "script": script }))
        .await;
    let d = ran.data();
    assert_eq!(
        d["completion"],
        json!({ "state": "exited", "exit_status": 3 }),
        "{d:#}"
    );
    let cwd = shell_of(&c, &pane).await.unwrap()["cwd"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        d["stdout"],
        json!({ "encoding": "utf-8", "data": format!("out\n{cwd}\n"), "bytes": 5 + cwd.len(), "truncated": false }),
        "{d:#}"
    );
    assert_eq!(d["stderr"]["data"], json!("err\n"), "{d:#}");
    let a = &d["authorization"];
    assert_eq!(
        (a["pane_id"].as_str(), a["server_generation"].as_str()),
        (Some(pane.as_str()), Some(generation.as_str())),
        "{a:#}"
    );
    // The digest as coreutils computes it.
    let file = srv.scratch("script");
    std::fs::write(&file, script).unwrap();
    let sum = std::process::Command::new("sha256sum")
        .arg(&file)
        .output()
        .unwrap();
    let hex = String::from_utf8_lossy(&sum.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert_eq!(a["script_digest"], json!(format!("sha256:{hex}")), "{a:#}");
    assert_eq!(
        a["enrollment_generation"].as_str().unwrap().len(),
        32,
        "{a:#}"
    );
    assert_eq!(
        screen(&srv, &pane),
        before,
        "the pane shows nothing of the run"
    );

    let killed = c
        .call_envelope(
            "tmux_run",
            json!({ "target": target, "script": "kill -TERM $$" }),
        )
        .await;
    assert_eq!(
        killed.data()["completion"]["signal"],
        json!(15),
        "{:#}",
        killed.structured
    );

    let big = c
        .call_envelope("tmux_run", json!({ "target": target, "script": "i=0; while [ $i -lt 200 ]; do echo 0123456789; i=$((i+1)); done", "max_output_bytes": 1000 }))
        .await;
    big.expect_error("capacity", "observed");

    // A sleep of its own length per shell (the three tests run at once).
    let sleep = match shell {
        "bash" => "sleep 31",
        "zsh" => "sleep 32",
        _ => "sleep 33",
    };
    let slow = c
        .call_envelope(
            "tmux_run",
            json!({ "target": target, "script": format!("{sleep}; echo never"), "timeout_ms": 500 }),
        )
        .await;
    slow.expect_error("deadline", "observed");
    // The script's own child went with it.
    let argv: Vec<&str> = sleep.split(' ').collect();
    let running = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .any(|pid| cmdline(pid) == argv)
    };
    let gone = poll(Duration::from_secs(5), || (!running()).then_some(()));
    assert!(gone.is_some(), "the script's {sleep} was left running");

    // The person's text in the editor: nothing runs, the text stays.
    let marker = srv.dir().join(format!("ran-{shell}"));
    srv.tmux(&["send-keys", "-t", &pane, "-l", "echo half"]);
    wait_row(&srv, &pane, |l| l.ends_with("echo half"));
    let busy = c
        .call_envelope(
            "tmux_run",
            json!({ "target": target, "script": format!("touch {}", marker.display()) }),
        )
        .await;
    let why = busy.expect_error("policy_denied", "observed");
    assert!(why.contains("person's text"), "{why}");
    assert!(!marker.exists(), "the script ran into a busy editor");
    assert!(
        wait_row(&srv, &pane, |l| l.ends_with("echo half")).starts_with(idle.trim_end()),
        "{}",
        screen(&srv, &pane)
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_tmux_run_passes_its_contract() {
    tmux_run_in("zsh").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_tmux_run_passes_its_contract() {
    tmux_run_in("bash").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fish_tmux_run_passes_its_contract() {
    tmux_run_in("fish").await;
}

/// A `tmux_run` that runs for seconds reports progress once a second when the
/// call has a `progressToken` (MCP: every call that can block does, as the
/// waits do), and none without one.
#[tokio::test(flavor = "multi_thread")]
async fn tmux_run_reports_progress_while_the_script_runs() {
    let srv = TmuxServer::start();
    let flags = [
        "--scope",
        "server",
        "--safety",
        "destructive",
        "--enable-tool",
        "tmux_run",
    ];
    let c = McpClient::attach(&srv, &flags).await;
    let generation = generation(&c).await;
    let pane = shell_pane(&srv, "bash");
    type_line(&srv, &pane, &enroll_line("bash"));
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    cleared(&srv, &pane);
    let mut raw = RawClient::attach(&srv, &flags);
    raw.initialize();
    let target = pane_ref(&generation, &pane);
    let args = json!({ "target": target, "script": "sleep 2.5" });
    raw.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "tmux_run", "arguments": args, "_meta": {"progressToken": "tr-1"}}}));
    let ran = raw.recv_id(&json!(1), Duration::from_secs(20));
    assert_eq!(
        ran["result"]["structuredContent"]["ok"],
        json!(true),
        "{ran}"
    );
    let progress = raw.take_kept(|m| m["method"] == json!("notifications/progress"));
    assert!(progress.len() >= 2, "{progress:?}");
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progressToken"] == json!("tr-1")),
        "{progress:?}"
    );
    raw.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "tmux_run", "arguments": {"target": target, "script": "sleep 1.5"}}}));
    let ran = raw.recv_id(&json!(2), Duration::from_secs(20));
    assert_eq!(
        ran["result"]["structuredContent"]["ok"],
        json!(true),
        "{ran}"
    );
    assert!(raw
        .take_kept(|m| m["method"] == json!("notifications/progress"))
        .is_empty());
    raw.close();
    c.close().await;
}

/// Outside tmux the snippet is a comment (nothing to enroll), and `--check`
/// says the shell is not enrolled (exit 1); a shell tmux-mcp does not enroll
/// (dash) is refused by name.
#[test]
fn outside_tmux_shell_init_is_inert() {
    for shell in ["bash", "zsh", "fish"] {
        let out = tmux_mcp(&["shell-init", shell])
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{shell}: {out:?}");
        assert!(
            text.lines().all(|l| l.starts_with('#')) && text.contains("not in a tmux pane"),
            "{shell}: {text}"
        );
    }
    let check = tmux_mcp(&["shell-init", "--check"])
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(1), "{check:?}");
    assert!(
        String::from_utf8_lossy(&check.stdout).starts_with("not enrolled"),
        "{check:?}"
    );
    let dash = tmux_mcp(&["shell-init", "dash"]).output().unwrap();
    assert!(!dash.status.success(), "{dash:?}");
    assert!(
        String::from_utf8_lossy(&dash.stderr).contains("dash"),
        "{dash:?}"
    );
}

/// A broker stopped while its server lives leaves no empty marks directory
/// behind, and keeps one holding an enrolled shell's file for the next
/// broker; the server's end removes it.
#[tokio::test(flavor = "multi_thread")]
async fn the_marks_directory_goes_when_empty_and_stays_while_it_holds_marks() {
    let mut srv = TmuxServer::start();
    let sock = srv.start_broker();
    let marks = PathBuf::from(sock.to_string_lossy().replace(".sock", ".sh"));
    // Made right after the broker starts listening.
    poll(Duration::from_secs(5), || marks.is_dir().then_some(()))
        .unwrap_or_else(|| panic!("no marks directory {}", marks.display()));
    let stop = |srv: &TmuxServer| {
        let pid = srv.wait_for_one_broker(Duration::from_secs(5));
        kill_pid(pid, libc::SIGTERM);
        poll(Duration::from_secs(10), || (!pid_alive(pid)).then_some(()))
            .expect("the broker did not stop");
    };
    stop(&srv);
    assert!(!marks.exists(), "an empty marks directory was left");

    srv.start_broker();
    poll(Duration::from_secs(5), || marks.is_dir().then_some(())).expect("made again");
    let file = marks.join("%0");
    std::fs::write(&file, "I\tzsh\t1\t\t\t/\t5.9\n").unwrap();
    stop(&srv);
    assert!(
        file.exists(),
        "an enrolled shell's marks went with the broker"
    );
    // The next broker serves them; the server's end removes them.
    srv.start_broker();
    let pid = srv.wait_for_one_broker(Duration::from_secs(5));
    srv.kill_server();
    poll(Duration::from_secs(10), || (!pid_alive(pid)).then_some(()))
        .expect("the broker outlived its server");
    assert!(!marks.exists(), "the marks directory outlived the server");
}
