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
    let argv = match shell {
        "bash" => "bash --norc --noprofile -i",
        "zsh" => "zsh -f -i",
        _ => "fish --no-config -i",
    };
    shell_pane_running(srv, shell, argv)
}

/// A new window running `argv`, the interactive `shell`, in a private home
/// with an empty configuration directory.
fn shell_pane_running(srv: &TmuxServer, shell: &str, argv: &str) -> String {
    require_program(shell, shell);
    let home = srv.scratch(&format!("home-{shell}"));
    std::fs::create_dir_all(&home).unwrap();
    let h = home.to_str().unwrap();
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

/// Types `line` into an enrolled shell and waits until it is back at its
/// prompt after running it: a later prompt than before typing (its state
/// reads `prompt` until the line's start is read).
async fn type_and_wait(srv: &TmuxServer, c: &McpClient, pane: &str, line: &str) {
    let before = shell_of(c, pane).await.and_then(|s| s["since"].as_f64());
    type_line(srv, pane, line);
    wait_shell(c, srv, pane, |s| {
        s["state"] == "prompt" && s["since"].as_f64() != before
    })
    .await;
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
    assert_eq!(
        tty["output"]["text"],
        json!("on-a-tty\n"),
        "{tty:#}\n{}",
        screen(&srv, &pane)
    );
    // The command's row shows the command only (fish drew its autosuggestion
    // after it: `cd /bin/`, and the output was not found below it).
    let shown = screen(&srv, &pane);
    let row = shown
        .lines()
        .find(|l| l.contains("test -t 1"))
        .unwrap_or_default();
    assert!(row.trim_end().ends_with("cd /"), "{shown}");
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
    // Only the captured streams are limited: the files a script writes are
    // whole (a `ulimit -f` cut them at max_output_bytes + 1 with a success).
    let files = c
        .call_envelope(
            "tmux_run",
            json!({ "target": target, "script": "d=$(mktemp -d); head -c 300000 /dev/zero >\"$d/a\"; cp \"$d/a\" \"$d/b\"; wc -c <\"$d/b\"; rm -r \"$d\"", "max_output_bytes": 1000 }),
        )
        .await;
    let d = files.data();
    assert_eq!(
        (
            &d["completion"]["exit_status"],
            d["stdout"]["data"].as_str().map(str::trim)
        ),
        (&json!(0), Some("300000")),
        "{d:#}"
    );
    // Over the limit on stderr, too, with the script's own status.
    let loud = c
        .call_envelope(
            "tmux_run",
            json!({ "target": target, "script": "head -c 5000 /dev/zero >&2; echo done", "max_output_bytes": 1000 }),
        )
        .await;
    let text = loud.expect_error("capacity", "observed");
    assert!(text.contains("stderr"), "{text}");

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

/// A private server, an agent of scope `server` with `flags`, and a pane
/// running `shell` that a person enrolled (the line typed at its prompt).
async fn enrolled(shell: &str, flags: &[&str]) -> (TmuxServer, McpClient, String) {
    enrolled_in(shell, None, flags).await
}

/// [`enrolled`], the shell started as `argv` when given.
async fn enrolled_in(
    shell: &str,
    argv: Option<&str>,
    flags: &[&str],
) -> (TmuxServer, McpClient, String) {
    let srv = TmuxServer::start();
    let all: Vec<&str> = ["--scope", "server"]
        .into_iter()
        .chain(flags.iter().copied())
        .collect();
    let c = McpClient::attach(&srv, &all).await;
    let pane = match argv {
        Some(argv) => shell_pane_running(&srv, shell, argv),
        None => shell_pane(&srv, shell),
    };
    type_line(&srv, &pane, &enroll_line(shell));
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    (srv, c, pane)
}

/// The text of a refused call (its content, joined).
fn refusal(r: &rmcp::model::CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "expected a refusal: {r:?}");
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The person is inside a here-document (`cat > FILE <<EOF`, a line typed,
/// not entered): the agent's command is refused by the shell itself, which
/// leaves its editor as it was, and the file holds only what the person
/// typed; at the primary prompt the same command runs.
async fn a_continuation_line_is_never_taken(shell: &str) {
    let (srv, c, pane) = enrolled(shell, &["--safety", "mutating"]).await;
    let _ = cleared(&srv, &pane);
    let file = srv.scratch(&format!("notes-{shell}.conf"));
    type_line(&srv, &pane, &format!("cat > {} <<EOF", file.display()));
    wait_row(&srv, &pane, |l| l.trim_end().ends_with('>'));
    srv.tmux(&["send-keys", "-t", &pane, "-l", "listen=8080"]);
    wait_row(&srv, &pane, |l| l.ends_with("listen=8080"));

    let got = c
        .call_raw(
            "run_command",
            json!({ "paneId": pane, "command": "echo AGENT-DID-IT", "timeoutMs": 5000 }),
        )
        .await;
    let text = refusal(&got);
    assert!(text.contains("continuation"), "{text}");
    // The person's line is untouched: finishing the here-document writes
    // exactly what they typed.
    wait_row(&srv, &pane, |l| l.ends_with("listen=8080"));
    srv.tmux(&["send-keys", "-t", &pane, "Enter"]);
    type_line(&srv, &pane, "EOF");
    let written = poll(Duration::from_secs(10), || {
        std::fs::read_to_string(&file)
            .ok()
            .filter(|s| !s.is_empty())
    });
    assert_eq!(
        written.as_deref(),
        Some("listen=8080\n"),
        "{}",
        screen(&srv, &pane)
    );
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    let ok = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo at-the-prompt", "timeoutMs": 5000 }),
        )
        .await;
    assert_eq!(
        (&ok["state"], &ok["output"]["text"]),
        (&json!("done"), &json!("at-the-prompt\n")),
        "{ok:#}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_a_continuation_line_is_never_taken() {
    a_continuation_line_is_never_taken("bash").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_a_continuation_line_is_never_taken() {
    a_continuation_line_is_never_taken("zsh").await;
}

/// A program the shell started without reporting it holds the terminal
/// (bash: the person's own DEBUG trap, so no command mark; zsh:
/// edit-command-line; fish: Alt-E, both from the line editor): the marks
/// say "at the prompt", the kernel says the foreground is another program,
/// so nothing is sent, and what the person then types is all the program
/// gets.
async fn nothing_is_sent_while_another_program_holds_the_terminal(shell: &str) {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &["--scope", "server", "--safety", "mutating"]).await;
    let pane = shell_pane(&srv, shell);
    let file = srv.scratch(&format!("edited-{shell}"));
    let f = file.display().to_string();
    // The "editor" is `tee`: it reads the terminal and writes the file.
    match shell {
        "bash" => type_line(&srv, &pane, "trap ': person' DEBUG"),
        "zsh" => type_line(&srv, &pane, &format!("VISUAL='tee -a {f}'; autoload -Uz edit-command-line; zle -N edit-command-line; bindkey '^X' edit-command-line")),
        // Alt-E's edit_command_buffer needs fish's config; a binding of
        // the person's own starts the program the same way.
        _ => type_line(&srv, &pane, &format!("bind \\ee 'tee -a {f}'")),
    }
    type_line(&srv, &pane, &enroll_line(shell));
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    let _ = cleared(&srv, &pane);
    match shell {
        "bash" => type_line(&srv, &pane, &format!("tee -a {f}")),
        "zsh" => {
            srv.tmux(&["send-keys", "-t", &pane, "C-x"]);
        }
        _ => {
            srv.tmux(&["send-keys", "-t", &pane, "M-e"]);
        }
    }
    poll(Duration::from_secs(10), || {
        (srv.tmux(&[
            "display-message",
            "-p",
            "-t",
            &pane,
            "#{pane_current_command}",
        ])
        .trim()
            == "tee")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("tee never held {pane}: {}", screen(&srv, &pane)));
    // The broker still believes the shell is at its prompt.
    let s = shell_of(&c, &pane).await.expect("enrolled");
    assert_eq!(s["state"], json!("prompt"), "{s:#}");

    let got = c
        .call_raw(
            "run_command",
            json!({ "paneId": pane, "command": "echo AGENT-DID-IT", "timeoutMs": 5000 }),
        )
        .await;
    let text = refusal(&got);
    assert!(
        text.contains("foreground") && text.contains("tee") && text.contains("Nothing was sent"),
        "{text}"
    );
    srv.tmux(&["send-keys", "-t", &pane, "-l", "person-typed"]);
    srv.tmux(&["send-keys", "-t", &pane, "Enter", "C-d"]);
    let written = poll(Duration::from_secs(10), || {
        std::fs::read_to_string(&file)
            .ok()
            .filter(|s| s.contains("person-typed"))
    })
    .unwrap_or_else(|| panic!("tee never wrote: {}", screen(&srv, &pane)));
    // fish leaves its terminal raw for a binding's program: `^M^D` come as
    // bytes; never the chord or the command.
    assert!(
        written.starts_with("person-typed")
            && !written.contains(['\x1b', '~'])
            && !written.contains("AGENT"),
        "{written:?}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_nothing_is_sent_while_another_program_holds_the_terminal() {
    nothing_is_sent_while_another_program_holds_the_terminal("bash").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_nothing_is_sent_while_another_program_holds_the_terminal() {
    nothing_is_sent_while_another_program_holds_the_terminal("zsh").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fish_nothing_is_sent_while_another_program_holds_the_terminal() {
    nothing_is_sent_while_another_program_holds_the_terminal("fish").await;
}

/// Waits until a row of the pane is exactly `line`.
fn shows_line(srv: &TmuxServer, pane: &str, line: &str) {
    poll(Duration::from_secs(10), || {
        screen(srv, pane).lines().any(|l| l == line).then_some(())
    })
    .unwrap_or_else(|| panic!("{pane} never showed {line:?}: {}", screen(srv, pane)));
}

/// A shell that inherited another pane's TMUX_PANE writes that pane's
/// marks: the pane's own program (here `tee`) is never sent the chord,
/// since the writer of the marks is not on the pane's terminal.
#[tokio::test(flavor = "multi_thread")]
async fn a_shell_with_an_inherited_tmux_pane_gets_nothing_sent_to_that_pane() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &["--scope", "server", "--safety", "mutating"]).await;
    let pane = shell_pane(&srv, "bash");
    let other = shell_pane(&srv, "bash");
    // The other pane's shell says it is `pane`'s, before and after the
    // pane's own shell enrolls: its marks never make the pane's record.
    type_line(&srv, &other, &format!("export TMUX_PANE={pane}"));
    type_line(&srv, &other, &enroll_line("bash"));
    wait_row(&srv, &other, |l| l == "$");
    type_line(&srv, &other, "echo impostor-1");
    shows_line(&srv, &other, "impostor-1");
    type_line(&srv, &pane, &enroll_line("bash"));
    let own: u64 = srv
        .tmux(&["display-message", "-p", "-t", &pane, "#{pane_pid}"])
        .trim()
        .parse()
        .unwrap();
    let s = wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    assert_eq!(s["pid"], json!(own), "{s:#}");
    type_line(&srv, &other, "sleep 1; echo impostor-2");
    shows_line(&srv, &other, "impostor-2");
    let s = shell_of(&c, &pane).await.expect("enrolled");
    assert_eq!(
        (&s["pid"], &s["state"]),
        (&json!(own), &json!("prompt")),
        "{s:#}"
    );
    let got = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo AGENT-DID-IT", "timeoutMs": 5000 }),
        )
        .await;
    assert_eq!(got["output"]["text"], json!("AGENT-DID-IT\n"), "{got:#}");
    // The other pane's screen got no chord.
    let shown = screen(&srv, &other);
    assert!(
        !shown.contains("AGENT") && !shown.contains("9400"),
        "{shown}"
    );

    // A program the pane's shell runs holds its terminal: refused, and the
    // program gets nothing.
    let file = srv.scratch("inherited");
    let f = file.display().to_string();
    type_line(&srv, &pane, &format!("tee -a {f}"));
    poll(Duration::from_secs(10), || {
        (srv.tmux(&[
            "display-message",
            "-p",
            "-t",
            &pane,
            "#{pane_current_command}",
        ])
        .trim()
            == "tee")
            .then_some(())
    })
    .expect("tee in the pane");
    let got = c
        .call_raw(
            "run_command",
            json!({ "paneId": pane, "command": "echo AGENT-DID-IT", "timeoutMs": 5000 }),
        )
        .await;
    let text = refusal(&got);
    assert!(text.contains("Nothing was sent"), "{text}");
    srv.tmux(&["send-keys", "-t", &pane, "-l", "person-typed"]);
    srv.tmux(&["send-keys", "-t", &pane, "Enter", "C-d"]);
    let written = poll(Duration::from_secs(10), || {
        std::fs::read_to_string(&file)
            .ok()
            .filter(|s| s.contains("person-typed"))
    });
    assert_eq!(written.as_deref(), Some("person-typed\n"));
    c.close().await;
}

/// `rm -rf ./cache # keep src` where the person's shell would not read `#`
/// as a comment (zsh's default; bash with interactive_comments off) is
/// refused with nothing run, so `src` survives; where it would, it runs.
async fn a_comment_means_what_the_shell_means(shell: &str) {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &["--scope", "server", "--safety", "mutating"]).await;
    let pane = shell_pane(&srv, shell);
    let dir = srv.scratch(&format!("comments-{shell}"));
    std::fs::create_dir_all(dir.join("cache")).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    type_line(&srv, &pane, &format!("cd {}", dir.display()));
    // Off before enrolling: the snippet itself must evaluate so.
    if shell == "bash" {
        type_line(&srv, &pane, "shopt -u interactive_comments");
    }
    type_line(&srv, &pane, &enroll_line(shell));
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    let command = "rm -rf ./cache # keep src";
    let got = c
        .call_raw(
            "run_command",
            json!({ "paneId": pane, "command": command, "timeoutMs": 5000 }),
        )
        .await;
    let text = refusal(&got);
    assert!(text.contains("comment"), "{text}");
    assert!(dir.join("cache").is_dir() && dir.join("src").is_dir());
    // Comments on: the same line runs and keeps src.
    let on = match shell {
        "bash" => "shopt -s interactive_comments",
        _ => "setopt interactive_comments",
    };
    type_and_wait(&srv, &c, &pane, on).await;
    let ran = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": command, "timeoutMs": 5000 }),
        )
        .await;
    assert_eq!(ran["exitStatus"], json!(0), "{ran:#}");
    assert!(!dir.join("cache").exists() && dir.join("src").is_dir());
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_a_comment_means_what_the_shell_means() {
    a_comment_means_what_the_shell_means("bash").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_a_comment_means_what_the_shell_means() {
    a_comment_means_what_the_shell_means("zsh").await;
}

/// The person presses Ctrl-C while an agent's script runs from the shell's
/// binding: the call says so at once (the script's SIGINT), not at its
/// deadline; the shell is left at its prompt, in its line editor, and the
/// next run works. A pane in copy mode gets nothing (the chord would go to
/// the mode and throw the person out of it).
async fn tmux_run_interrupted_and_copy_mode(shell: &str) {
    let (srv, c, pane) = enrolled(
        shell,
        &["--safety", "destructive", "--enable-tool", "tmux_run"],
    )
    .await;
    let target = pane_ref(&generation(&c).await, &pane);
    let _ = cleared(&srv, &pane);

    let started = std::time::Instant::now();
    let (ran, ()) = tokio::join!(
        c.call_envelope(
            "tmux_run",
            json!({ "target": target, "script": "sleep 20; echo never", "timeout_ms": 15000 }),
        ),
        async {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            srv.tmux(&["send-keys", "-t", &pane, "C-c"]);
        }
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "told after {:?}: {:#}",
        started.elapsed(),
        ran.structured
    );
    match ran.data().get("completion") {
        Some(done) => assert_eq!(done["signal"], json!(2), "{:#}", ran.structured),
        None => {
            let text = ran.expect_error("observation_lost", "observed");
            assert!(text.contains("interrupted"), "{text}");
        }
    }
    // Back in its editor: the next script runs.
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    let again = poll_async(Duration::from_secs(5), || async {
        let r = c
            .call_envelope(
                "tmux_run",
                json!({ "target": target, "script": "echo again" }),
            )
            .await;
        (r.data()["stdout"]["data"] == json!("again\n")).then_some(())
    })
    .await;
    assert!(again.is_some(), "{}", screen(&srv, &pane));
    assert!(
        !screen(&srv, &pane).contains("9400"),
        "{}",
        screen(&srv, &pane)
    );

    // A script that ignores SIGTERM is killed at its deadline, so it cannot
    // hold the person's prompt; the shell takes the next script.
    let stubborn = c
        .call_envelope(
            "tmux_run",
            json!({ "target": target, "script": "trap '' TERM; sleep 40", "timeout_ms": 1000 }),
        )
        .await;
    let text = stubborn.expect_error("deadline", "observed");
    assert!(
        text.contains("SIGKILL") && text.contains("ended with status"),
        "{text}"
    );
    let after = c
        .call_envelope(
            "tmux_run",
            json!({ "target": target, "script": "echo after" }),
        )
        .await;
    assert_eq!(after.data()["stdout"]["data"], json!("after\n"));

    srv.tmux(&["copy-mode", "-t", &pane]);
    let refused = c
        .call_envelope("tmux_run", json!({ "target": target, "script": "echo no" }))
        .await;
    let text = refused.expect_error("policy_denied", "not_sent");
    assert!(text.contains("copy mode"), "{text}");
    assert_eq!(
        srv.tmux(&["display-message", "-p", "-t", &pane, "#{pane_in_mode}"])
            .trim(),
        "1",
        "the person was thrown out of copy mode"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_tmux_run_interrupted_and_copy_mode() {
    tmux_run_interrupted_and_copy_mode("bash").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_tmux_run_interrupted_and_copy_mode() {
    tmux_run_interrupted_and_copy_mode("zsh").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fish_tmux_run_interrupted_and_copy_mode() {
    tmux_run_interrupted_and_copy_mode("fish").await;
}

/// bash: a PROMPT_COMMAND hook set after the shell-init line (appended,
/// prepended, or PROMPT_COMMAND overwritten, as rc files, prompt frameworks
/// and tools do) leaves run_command right: the status is the command's, the
/// run ends, and the next one is not refused as busy.
#[tokio::test(flavor = "multi_thread")]
async fn bash_prompt_command_hooks_after_the_line_keep_runs_right() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &["--scope", "server", "--safety", "mutating"]).await;
    for (n, hook) in [
        "PROMPT_COMMAND=\"$PROMPT_COMMAND; true\"",
        "PROMPT_COMMAND=\"true; $PROMPT_COMMAND\"",
        "PROMPT_COMMAND='true'",
        "PROMPT_COMMAND=(\"${PROMPT_COMMAND[@]}\" true)",
    ]
    .iter()
    .enumerate()
    {
        let pane = shell_pane(&srv, "bash");
        type_line(&srv, &pane, &enroll_line("bash"));
        wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
        type_line(&srv, &pane, hook);
        type_line(&srv, &pane, "echo hooked-$((40+2))");
        wait_row(&srv, &pane, |l| l.trim_end().ends_with('$'));
        let s = wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
        assert_eq!(s["state"], json!("prompt"), "{n} {hook}: {s:#}");
        for (command, status) in [("false", 1), ("echo x", 0), ("sh -c 'exit 3'", 3)] {
            let got = c
                .call(
                    "run_command",
                    json!({ "paneId": pane, "command": command, "timeoutMs": 5000 }),
                )
                .await;
            assert_eq!(
                (&got["state"], &got["exitStatus"]),
                (&json!("done"), &json!(status)),
                "{hook}: {command}: {got:#}\n{}",
                screen(&srv, &pane)
            );
        }
    }
    c.close().await;
}

/// The broker's runtime directory is removed while tmux and the broker run
/// (a /tmp cleaner), and another local user makes it again, with the marks
/// directory in it, open to all: the enrolled shell writes none of the
/// person's command lines there, the broker writes no request there and
/// makes no job directory there, and nothing is typed into either pane.
#[tokio::test(flavor = "multi_thread")]
async fn a_runtime_directory_made_again_by_another_user_is_never_used() {
    let Some(mut eve) = OtherUser::make() else {
        // As root (CI's machines) the user must be made; as another user it
        // cannot be, and the test says it did not run.
        assert!(
            !(rustix::process::getuid().is_root() && std::env::var_os("CI").is_some()),
            "as root, under CI, the test's second user must be made (useradd, runuser)"
        );
        eprintln!(
            "SKIPPED: a second local user cannot be made here (needs root, useradd and runuser)"
        );
        return;
    };
    // A base like /tmp (sticky, open to all), the test's own.
    let base = PathBuf::from(format!("/tmp/tmcp-xdg-{}", std::process::id()));
    std::fs::create_dir(&base).unwrap();
    eve.made.push(base.clone());
    std::fs::set_permissions(&base, std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
    let xdg = base.to_str().unwrap();

    let srv = TmuxServer::start();
    srv.tmux(&["set-environment", "-g", "XDG_RUNTIME_DIR", xdg]);
    let c = McpClient::attach_env(
        &srv,
        &["--scope", "server", "--safety", "mutating"],
        &[("XDG_RUNTIME_DIR", xdg)],
    )
    .await;
    let runtime = base.join("tmux-mcp");
    assert!(
        runtime.is_dir(),
        "the broker's runtime directory is {runtime:?}"
    );
    let generation = generation(&c).await;
    let marks = runtime.join(format!("srv-{}.sh", &generation[..16]));
    let pane_of = |n: &str| {
        let home = srv.scratch(&format!("home-{n}"));
        std::fs::create_dir_all(&home).unwrap();
        let line = format!(
            "exec env -i HOME={} TERM=xterm-256color PATH=/usr/local/bin:/usr/bin:/bin 'PS1=$ ' \
             XDG_RUNTIME_DIR={xdg} TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\" bash --norc --noprofile -i",
            home.display()
        );
        srv.tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", &line])
            .trim()
            .to_string()
    };
    let pane = pane_of("enrolled");
    let plain = pane_of("plain");
    wait_row(&srv, &pane, |l| l.ends_with('$'));
    wait_row(&srv, &plain, |l| l.ends_with('$'));
    type_line(&srv, &pane, &enroll_line("bash"));
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    assert!(marks.join(&pane).is_file(), "the shell writes to {marks:?}");
    let ok = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo before", "timeoutMs": 5000 }),
        )
        .await;
    assert_eq!(ok["output"]["text"], json!("before\n"), "{ok:#}");

    // The cleaner, then the other user.
    std::fs::remove_dir_all(&runtime).unwrap();
    assert!(
        eve.sh(&format!(
            "umask 0 && mkdir -m 777 {r} {m} && ln -s /etc/passwd {m}/{pane}.run.new",
            r = runtime.display(),
            m = marks.display()
        )),
        "the other user could not make the directories"
    );
    eve.made.push(runtime.clone());

    // The person's next command line is not written where she reads.
    type_line(&srv, &pane, "echo secret-$((6*7))");
    wait_row(&srv, &pane, |l| l.ends_with('$'));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let left: Vec<_> = std::fs::read_dir(&marks)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert_eq!(left.len(), 1, "only her symlink is there: {left:?}");

    for (p, what) in [(&pane, "enrolled"), (&plain, "typed")] {
        let before = screen(&srv, p);
        let got = c
            .call_raw(
                "run_command",
                json!({ "paneId": p, "command": "echo AGENT-DID-IT", "timeoutMs": 3000 }),
            )
            .await;
        // Refused with nothing sent: for the directory's sake, or (tmux
        // versions whose table the broker reads through `tmux-mcp feed`,
        // which reaches the broker through its socket in the runtime
        // directory, now gone) because the pane table cannot be read.
        let text = refusal(&got);
        assert!(
            text.contains("Nothing was sent") || text.contains("Nothing was typed"),
            "{what}: {text}"
        );
        assert_eq!(
            screen(&srv, p),
            before,
            "{what}: something reached the pane"
        );
    }
    let after: Vec<_> = std::fs::read_dir(&runtime)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert_eq!(
        after.len(),
        1,
        "the broker wrote into her directory: {after:?}"
    );
    assert!(std::fs::read_to_string("/etc/passwd")
        .unwrap()
        .contains("root:"));
    c.close().await;
}

/// The person types while an agent's command is handed to bash: their keys
/// never join the command (the take and the accept are one chord, read
/// before anything typed after it), so what ran is exactly the agent's.
#[tokio::test(flavor = "multi_thread")]
async fn bash_keys_typed_during_a_run_never_join_the_command() {
    let (srv, c, pane) = enrolled("bash", &["--safety", "mutating"]).await;
    let dir = srv.scratch("typed-during");
    std::fs::create_dir_all(&dir).unwrap();
    for round in 0..8 {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let typist = {
            let (stop, sock, pane) = (stop.clone(), srv.socket().to_path_buf(), pane.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::process::Command::new("tmux")
                        .arg("-S")
                        .arg(&sock)
                        .args(["send-keys", "-t", &pane, "-l", "Z"])
                        .status();
                }
            })
        };
        // What ran is told by what it made (the output rows are the
        // screen's, where the terminal echoes the person's keys too).
        let command = format!("touch {}/r{round}", dir.display());
        let got = c
            .call(
                "run_command",
                json!({ "paneId": pane, "command": command, "timeoutMs": 5000 }),
            )
            .await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        typist.join().unwrap();
        let mut made: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        made.sort();
        let want: Vec<String> = (0..=round).map(|r| format!("r{r}")).collect();
        assert_eq!(
            (&got["exitStatus"], &made),
            (&json!(0), &want),
            "round {round}: {got:#}\n{}",
            screen(&srv, &pane)
        );
        // The person's Zs are theirs: cleared before the next round.
        srv.tmux(&["send-keys", "-t", &pane, "C-e", "C-u"]);
        wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    }
    c.close().await;
}

/// A program of the person's forges a script's pid mark (`S`) naming an
/// unrelated process: at the deadline the broker stops only processes under
/// the run's shell, so the unrelated one lives.
#[tokio::test(flavor = "multi_thread")]
async fn a_forged_script_pid_gets_no_signal() {
    let (srv, c, pane) = enrolled(
        "bash",
        &["--safety", "destructive", "--enable-tool", "tmux_run"],
    )
    .await;
    let generation = generation(&c).await;
    let target = pane_ref(&generation, &pane);
    let mut victim = std::process::Command::new("sleep")
        .arg("61")
        .spawn()
        .unwrap();
    let file = srv.scratch("forged-file");
    let (ran, ()) = tokio::join!(
        c.call_envelope(
            "tmux_run",
            json!({ "target": target, "script": "sleep 4", "timeout_ms": 1500 }),
        ),
        async {
            // The run's id from its R mark, then an S mark of the victim.
            let (marks, r) = run_mark(&generation, &pane, |l| l.ends_with(" script"));
            let id = r[6].split(' ').next().unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            forge(&marks, &format!("S\tsh\t{}\t\t\t\t{id}\n", victim.id()));
            std::fs::write(&file, "written").unwrap();
        }
    );
    ran.expect_error("deadline", "observed");
    assert!(file.exists());
    assert!(
        victim.try_wait().unwrap().is_none(),
        "the unrelated process got the broker's signal"
    );
    victim.kill().unwrap();
    let _ = victim.wait();
    c.close().await;
}

/// The marks file of `pane` (its server's generation) once it holds an `R`
/// mark whose line satisfies `want`; that mark's fields.
fn run_mark(generation: &str, pane: &str, want: impl Fn(&str) -> bool) -> (PathBuf, Vec<String>) {
    let name = format!("srv-{}.sh", &generation[..16]);
    poll(Duration::from_secs(5), || {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("ls -d /tmp/tmux-mcp-*/{name} /run/user/*/tmux-mcp/{name} ${{XDG_RUNTIME_DIR:-/nonexistent}}/tmux-mcp/{name} 2>/dev/null"))
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|d| PathBuf::from(d).join(pane))
            .find_map(|f| {
                let text = std::fs::read_to_string(&f).ok()?;
                let r = text.lines().rev().find(|l| l.starts_with("R\t") && want(l))?;
                Some((f.clone(), r.split('\t').map(str::to_string).collect()))
            })
    })
    .expect("the run's R mark")
}

/// Appends a mark line another program of the person's wrote.
fn forge(marks: &std::path::Path, line: &str) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(marks)
        .unwrap()
        .write_all(line.as_bytes())
        .unwrap();
}

/// A program of the person's writes a `P` mark for an agent's run while its
/// command still runs (issue 48 item 11): the run ends only when the kernel
/// says the shell holds its terminal again, with the shell's own status.
#[tokio::test(flavor = "multi_thread")]
async fn a_forged_end_mark_does_not_end_a_run() {
    let (_srv, c, pane) = enrolled("bash", &["--safety", "mutating"]).await;
    let generation = generation(&c).await;
    let (ran, ()) = tokio::join!(
        c.call(
            "run_command",
            json!({ "paneId": pane, "command": "sleep 2; false", "timeoutMs": 10000 }),
        ),
        async {
            let (marks, r) = run_mark(&generation, &pane, |l| l.ends_with(" 1"));
            let id = r[6].split(' ').next().unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            forge(&marks, &format!("P\tbash\t{}\t\t0\t/\t{id}\n", r[2]));
        }
    );
    assert_eq!(ran["exitStatus"], json!(1), "{ran:#}");
    c.close().await;
}

/// Not enrolled, a here-document at a prompt framework's continuation
/// prompt (starship's `∙ `, or `... `): the typed path refuses with nothing
/// typed, and the file holds only what the person typed.
#[tokio::test(flavor = "multi_thread")]
async fn a_typed_run_is_refused_at_a_framework_s_continuation_prompt() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &["--scope", "server", "--safety", "mutating"]).await;
    for ps2 in ["∙ ", "... "] {
        let pane = shell_pane(&srv, "bash");
        type_line(&srv, &pane, &format!("PS2='{ps2}'"));
        let file = srv.scratch("framework-ps2");
        type_line(&srv, &pane, &format!("cat > {} <<EOF", file.display()));
        wait_row(&srv, &pane, |l| l == ps2.trim_end());
        let got = c
            .call_raw(
                "run_command",
                json!({ "paneId": pane, "command": "echo AGENT-DID-IT", "timeoutMs": 3000 }),
            )
            .await;
        let text = refusal(&got);
        assert!(text.contains("continuation"), "{ps2:?}: {text}");
        type_line(&srv, &pane, "listen=8080");
        type_line(&srv, &pane, "EOF");
        let written = poll(Duration::from_secs(10), || {
            std::fs::read_to_string(&file)
                .ok()
                .filter(|s| !s.is_empty())
        });
        assert_eq!(
            written.as_deref(),
            Some("listen=8080\n"),
            "{ps2:?}: {}",
            screen(&srv, &pane)
        );
    }
    c.close().await;
}

/// The agent's command starts a nested shell that enrolls too (its marks
/// make it the pane's shell for a while): the run's own shell still runs and
/// waits for it, so the run ends with its status, not as lost.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_that_starts_a_nested_enrolled_shell_is_not_lost() {
    let (srv, c, pane) = enrolled("bash", &["--safety", "mutating"]).await;
    let nested = format!(
        "bash --norc --noprofile -i -c 'eval \"$({} shell-init bash)\" 2>/dev/null; sleep 0.5; exit 7'",
        bin("tmux-mcp").display()
    );
    let got = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": nested, "timeoutMs": 8000 }),
        )
        .await;
    assert_eq!(
        (&got["state"], &got["exitStatus"]),
        (&json!("done"), &json!(7)),
        "{got:#}\n{}",
        screen(&srv, &pane)
    );
    c.close().await;
}

/// vi keys, visual mode (a selection): the chord is the shell's (bound in
/// every mode, so never read as keys: fish's `~` flipped a character's case)
/// and the shell refuses it, the line as it was. fish starts with the
/// system's configuration (the user's is empty): under `--no-config`, fish
/// 3.6's `fish_vi_key_bindings` reads keys and acts on none.
async fn visual_mode_is_refused_untouched(shell: &str) {
    let argv = (shell == "fish").then_some("fish -i");
    let (srv, c, pane) = enrolled_in(shell, argv, &["--safety", "mutating"]).await;
    type_and_wait(
        &srv,
        &c,
        &pane,
        if shell == "fish" {
            "fish_vi_key_bindings"
        } else {
            "bindkey -v"
        },
    )
    .await;
    std::thread::sleep(Duration::from_millis(300));
    srv.tmux(&["send-keys", "-t", &pane, "-l", "echo dry-run"]);
    wait_row(&srv, &pane, |l| l.ends_with("echo dry-run"));
    // Normal mode, to the start, then visual mode over a few characters.
    srv.tmux(&["send-keys", "-t", &pane, "Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    srv.tmux(&["send-keys", "-t", &pane, "-l", "0vll"]);
    std::thread::sleep(Duration::from_millis(300));
    let got = c
        .call_raw(
            "run_command",
            json!({ "paneId": pane, "command": "echo AGENT-DID-IT", "timeoutMs": 3000 }),
        )
        .await;
    let text = refusal(&got);
    assert!(text.contains("visual"), "{text}");
    srv.tmux(&["send-keys", "-t", &pane, "Escape"]);
    let row = wait_row(&srv, &pane, |l| l.contains("dry-run") || l.contains("DRY"));
    assert!(
        row.ends_with("echo dry-run"),
        "{row:?}\n{}",
        screen(&srv, &pane)
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_visual_mode_is_refused_untouched() {
    visual_mode_is_refused_untouched("zsh").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fish_visual_mode_is_refused_untouched() {
    visual_mode_is_refused_untouched("fish").await;
}

/// Not enrolled, zsh's options cannot be seen: a command line whose `#` its
/// lexer reads as a comment is refused with nothing typed (interactive zsh
/// would run `# keep src` as words); one whose `#` is inside a word runs.
#[tokio::test(flavor = "multi_thread")]
async fn zsh_typed_run_with_a_comment_is_refused() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, &["--scope", "server", "--safety", "mutating"]).await;
    let pane = shell_pane(&srv, "zsh");
    let dir = srv.scratch("typed-comments");
    std::fs::create_dir_all(dir.join("cache")).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    type_line(&srv, &pane, &format!("cd {}", dir.display()));
    wait_row(&srv, &pane, |l| l.trim_end().ends_with('$'));
    let got = c
        .call_raw(
            "run_command",
            json!({ "paneId": pane, "command": "rm -rf ./cache # keep src", "timeoutMs": 5000 }),
        )
        .await;
    let text = refusal(&got);
    assert!(
        text.contains("comment") && text.contains("Nothing was sent"),
        "{text}"
    );
    assert!(dir.join("cache").is_dir() && dir.join("src").is_dir());
    let ran = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo a#b '#c'", "timeoutMs": 5000 }),
        )
        .await;
    assert_eq!(ran["output"]["text"], json!("a#b #c\n"), "{ran:#}");
    c.close().await;
}

/// What an enrolled run prints is what the agent gets (issue 48 item 10): a
/// bash `for` loop's output, a command line longer than the pane is wide,
/// output without a final newline, output after `clear` (also when it runs
/// before the broker read the command line).
async fn enrolled_output_rows(shell: &str) {
    let srv = TmuxServer::start();
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
    let pane = shell_pane(&srv, shell);
    type_line(&srv, &pane, &enroll_line(shell));
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    let long = format!("echo {} && echo long-done", "x".repeat(150));
    let cases: Vec<(String, String)> = vec![
        (
            if shell == "fish" {
                "for i in 1 2 3; echo n$i; end".into()
            } else {
                "for i in 1 2 3; do echo n$i; done".into()
            },
            "n1\nn2\nn3\n".into(),
        ),
        (long.clone(), format!("{}\nlong-done\n", "x".repeat(150))),
    ];
    for round in 0..3 {
        for (command, want) in &cases {
            let got = c
                .call(
                    "run_command",
                    json!({ "paneId": pane, "command": command, "timeoutMs": 5000 }),
                )
                .await;
            // A row longer than the pane wraps: rows are joined as tmux
            // gives them (capture without -J), so compare without breaks.
            let text = got["output"]["text"]
                .as_str()
                .unwrap_or_default()
                .replace('\n', "");
            if text != want.replace('\n', "") {
                let cmds = c
                    .call("get_commands", json!({ "paneId": pane, "limit": 2 }))
                    .await;
                eprintln!("get_commands of the pane: {cmds:#}");
            }
            assert_eq!(
                text,
                want.replace('\n', ""),
                "{shell} round {round}: {command}: {got:#}\n{}",
                screen(&srv, &pane)
            );
        }
    }
    // Exactly what was printed: output without a final newline (bash draws
    // its prompt after it on the row, zsh and fish their own mark), output
    // that ends like zsh's mark, and output after `clear` (which empties the
    // history the output's start was counted in).
    let exact = [
        ("printf abc", "abc"),
        ("printf 'a\\nb'", "a\nb"),
        ("echo 100%", "100%\n"),
        ("sleep 0.3; clear; echo after-clear", "after-clear\n"),
        // A clear at once: gone before the broker read the command line.
        ("clear; echo fast-clear", "fast-clear\n"),
        ("echo y", "y\n"),
    ];
    for round in 0..2 {
        for (command, want) in exact {
            let got = c
                .call(
                    "run_command",
                    json!({ "paneId": pane, "command": command, "timeoutMs": 5000 }),
                )
                .await;
            assert_eq!(
                got["output"]["text"],
                json!(want),
                "{shell} round {round}: {command}: {got:#}\n{}",
                screen(&srv, &pane)
            );
            // get_commands says which rows came after a clear.
            let last = c
                .call("get_commands", json!({ "paneId": pane, "limit": 1 }))
                .await;
            let note = last["commands"][0]["outputNote"].as_str().unwrap_or("");
            assert_eq!(
                note.contains("cleared"),
                command.contains("clear"),
                "{shell} round {round}: {command}: {last:#}"
            );
        }
    }
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_enrolled_output_rows() {
    enrolled_output_rows("bash").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_enrolled_output_rows() {
    enrolled_output_rows("zsh").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fish_enrolled_output_rows() {
    enrolled_output_rows("fish").await;
}

/// A hook appended to PROMPT_COMMAND after enrolment that runs a program
/// (here `sleep`): the prompt that puts the hooks back in place does not
/// report that program as the person's command (the shell read "running"
/// until the next prompt, and runs were refused as busy), and a run then
/// gives the person's half-typed line back with no chord echoed over it.
#[tokio::test(flavor = "multi_thread")]
async fn bash_a_hook_appended_after_enrolment_runs_no_phantom_command() {
    let (srv, c, pane) = enrolled("bash", &["--safety", "mutating"]).await;
    type_and_wait(&srv, &c, &pane, "PROMPT_COMMAND+=$'\\nsleep 0.7'").await;
    let _ = cleared(&srv, &pane);
    srv.tmux(&["send-keys", "-t", &pane, "-l", "echo person-text"]);
    wait_row(&srv, &pane, |l| l.ends_with("echo person-text"));
    let got = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo agent-ran", "timeoutMs": 8000 }),
        )
        .await;
    assert_eq!(got["exitStatus"], json!(0), "{got:#}");
    wait_row(&srv, &pane, |l| l.ends_with("echo person-text"));
    let shown = screen(&srv, &pane);
    assert!(!shown.contains("9402") && !shown.contains("^["), "{shown}");
    c.close().await;
}

/// An agent's command of two lines (issue 48 item 9) is named by both, its
/// output is what it printed (not its second line as the editor drew it),
/// and it leaves no trace in the person's history: none of its lines in the
/// list (bash keeps each line apart), and Up right after the run recalls the
/// person's own last command (zsh keeps a line its hook refused for Up until
/// the next line, fish a line that starts with a space).
async fn an_agent_s_lines_leave_no_trace_in_history(shell: &str) {
    let (srv, c, pane) = enrolled(
        shell,
        &["--safety", "mutating", "--enable-tool", "get_commands"],
    )
    .await;
    type_line(&srv, &pane, "echo person-said");
    shows_line(&srv, &pane, "person-said");
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    let got = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo one\necho two", "timeoutMs": 5000 }),
        )
        .await;
    assert_eq!(
        (&got["exitStatus"], &got["output"]["text"]),
        (&json!(0), &json!("one\ntwo\n")),
        "{got:#}\n{}",
        screen(&srv, &pane)
    );
    let cmds = c
        .call("get_commands", json!({ "paneId": pane, "limit": 1 }))
        .await;
    assert_eq!(
        cmds["commands"][0]["command"],
        json!("echo one\necho two"),
        "{cmds:#}"
    );
    srv.tmux(&["send-keys", "-t", &pane, "Up"]);
    // (A wrong recall fails the wait, showing the screen.)
    wait_row(&srv, &pane, |l| l.ends_with("echo person-said"));
    srv.tmux(&["send-keys", "-t", &pane, "C-e", "C-u"]);
    let list = srv.dir().join(format!("history-{shell}"));
    let dump = match shell {
        "fish" => format!("history >{}", list.display()),
        _ => format!("fc -ln 1 >{}", list.display()),
    };
    type_line(&srv, &pane, &dump);
    let held = poll(Duration::from_secs(10), || {
        // One small write by the shell: whole once it names the command.
        let s = std::fs::read_to_string(&list).ok()?;
        s.contains("echo person-said").then_some(s)
    })
    .unwrap_or_else(|| panic!("{shell}: no history list in {}", list.display()));
    assert!(held.contains("echo person-said"), "{shell}: {held}");
    assert!(
        !held.contains("echo one") && !held.contains("echo two"),
        "{shell}: the agent's lines are in the person's history:\n{held}"
    );
    c.close().await;
}

/// The column of the pane's cursor.
fn cursor_x(srv: &TmuxServer, pane: &str) -> String {
    srv.tmux(&["display-message", "-p", "-t", pane, "#{cursor_x}"])
        .trim()
        .to_string()
}

/// The person has `echo kept` half-typed (the cursor two characters from
/// its end) when an agent's command runs, and types `echo typed` while it
/// runs: after the run the editor holds `echo typed` alone (the set-aside
/// line is not merged into it, nor lost); Enter runs `echo typed` alone, and
/// the set-aside line comes back at the next prompt, text and cursor; history
/// holds what the person entered only.
async fn a_line_typed_during_a_run_is_neither_lost_nor_merged(shell: &str) {
    let (srv, c, pane) = enrolled(shell, &["--safety", "mutating"]).await;
    let _ = cleared(&srv, &pane);
    srv.tmux(&["send-keys", "-t", &pane, "-l", "echo kept"]);
    wait_row(&srv, &pane, |l| l.ends_with("echo kept"));
    let end = cursor_x(&srv, &pane);
    srv.tmux(&["send-keys", "-t", &pane, "Left", "Left"]);
    let at = poll(Duration::from_secs(10), || {
        let x = cursor_x(&srv, &pane);
        (x != end).then_some(x)
    })
    .expect("the cursor never moved");

    // The agent's command runs until the test says (a file appears), so the
    // person's keys surely come while it runs: the terminal echoes them.
    let go = srv.scratch(&format!("go-{shell}"));
    let command = format!(
        "sh -c 'while [ ! -e {} ]; do sleep 0.05; done'; echo agent",
        go.display()
    );
    let job = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": command, "detach": true }),
        )
        .await;
    let id = job["jobId"].as_str().expect("a job id").to_string();
    wait_shell(&c, &srv, &pane, |s| s["state"] == "running").await;
    // Keys typed before the command holds the terminal in cooked mode are
    // queued unechoed (the shell's editor had echo off): wait for `sh`.
    let tty = srv
        .tmux(&["display-message", "-p", "-t", &pane, "#{pane_tty}"])
        .trim()
        .to_string();
    poll(Duration::from_secs(10), || {
        let fg = srv.tmux(&[
            "display-message",
            "-p",
            "-t",
            &pane,
            "#{pane_current_command}",
        ]);
        (fg.trim() == "sh" && tmux_mcp_engine::mirror::canonical(&tty).unwrap_or(false))
            .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the agent's sh never held the terminal: {}",
            screen(&srv, &pane)
        )
    });
    srv.tmux(&["send-keys", "-t", &pane, "-l", "echo typed"]);
    poll(Duration::from_secs(10), || {
        screen(&srv, &pane)
            .lines()
            .any(|l| l == "echo typed")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("the typed keys were not echoed: {}", screen(&srv, &pane)));
    std::fs::write(&go, "").unwrap();
    let done = job_until(&c, &id, "done").await;
    assert_eq!(done["exitStatus"], json!(0), "{done:#}");

    // The editor holds what the person typed, as typed, nothing else.
    let row = wait_row(&srv, &pane, |l| l.ends_with("echo typed"));
    assert!(!row.contains("kept"), "merged: {}", screen(&srv, &pane));
    srv.tmux(&["send-keys", "-t", &pane, "Enter"]);
    // `echo typed` ran alone; the set-aside line is back, cursor and all.
    let row = wait_row(&srv, &pane, |l| l.ends_with("echo kept"));
    let shown = screen(&srv, &pane);
    assert!(shown.lines().any(|l| l == "typed"), "{shown}");
    assert!(
        !row.contains("typed") && !shown.contains("keptecho"),
        "{shown}"
    );
    poll(Duration::from_secs(10), || {
        (cursor_x(&srv, &pane) == at).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the cursor is at {}, not {at}: {}",
            cursor_x(&srv, &pane),
            screen(&srv, &pane)
        )
    });

    // History: the person's `echo typed`, not their set-aside line nor the
    // agent's command.
    srv.tmux(&["send-keys", "-t", &pane, "C-e", "C-u"]);
    let _ = cleared(&srv, &pane);
    let probe = match shell {
        "fish" => "echo h=(history | grep -c 'echo k[e]pt')/(history | grep -c 'echo t[y]ped')/(history | grep -c 'a[g]ent')",
        "zsh" => "echo h=$(fc -ln 1 | grep -c 'echo k[e]pt')/$(fc -ln 1 | grep -c 'echo t[y]ped')/$(fc -ln 1 | grep -c 'a[g]ent')",
        _ => "echo h=$(history | grep -c 'echo k[e]pt')/$(history | grep -c 'echo t[y]ped')/$(history | grep -c 'a[g]ent')",
    };
    type_line(&srv, &pane, probe);
    poll(Duration::from_secs(10), || {
        screen(&srv, &pane).contains("h=0/1/0").then_some(())
    })
    .unwrap_or_else(|| panic!("{}", screen(&srv, &pane)));

    // Again, the typed line erased and an empty line entered: that prompt
    // gives the set-aside line back (fish runs no command for it).
    let _ = cleared(&srv, &pane);
    srv.tmux(&["send-keys", "-t", &pane, "-l", "echo again"]);
    wait_row(&srv, &pane, |l| l.ends_with("echo again"));
    let go = srv.scratch(&format!("go2-{shell}"));
    let command = format!(
        "sh -c 'while [ ! -e {} ]; do sleep 0.05; done'",
        go.display()
    );
    let job = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": command, "detach": true }),
        )
        .await;
    let id = job["jobId"].as_str().expect("a job id").to_string();
    wait_shell(&c, &srv, &pane, |s| s["state"] == "running").await;
    srv.tmux(&["send-keys", "-t", &pane, "-l", "echo other"]);
    poll(Duration::from_secs(10), || {
        screen(&srv, &pane)
            .lines()
            .any(|l| l == "echo other")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("the typed keys were not echoed: {}", screen(&srv, &pane)));
    std::fs::write(&go, "").unwrap();
    job_until(&c, &id, "done").await;
    wait_row(&srv, &pane, |l| l.ends_with("echo other"));
    srv.tmux(&["send-keys", "-t", &pane, "C-e", "C-u"]);
    wait_row(&srv, &pane, |l| !l.contains("echo other"));
    srv.tmux(&["send-keys", "-t", &pane, "Enter"]);
    let row = wait_row(&srv, &pane, |l| l.ends_with("echo again"));
    assert!(!row.contains("other"), "{}", screen(&srv, &pane));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_an_agent_s_lines_leave_no_trace_in_history() {
    an_agent_s_lines_leave_no_trace_in_history("bash").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_an_agent_s_lines_leave_no_trace_in_history() {
    an_agent_s_lines_leave_no_trace_in_history("zsh").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fish_an_agent_s_lines_leave_no_trace_in_history() {
    an_agent_s_lines_leave_no_trace_in_history("fish").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_a_line_typed_during_a_run_is_neither_lost_nor_merged() {
    a_line_typed_during_a_run_is_neither_lost_nor_merged("bash").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_a_line_typed_during_a_run_is_neither_lost_nor_merged() {
    a_line_typed_during_a_run_is_neither_lost_nor_merged("zsh").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fish_a_line_typed_during_a_run_is_neither_lost_nor_merged() {
    a_line_typed_during_a_run_is_neither_lost_nor_merged("fish").await;
}

/// A prompt that takes seconds to draw (PS1 running a program, as a git
/// prompt in a large repository does; issue 48 item 11): a call that comes
/// while it draws waits for the shell's editor, then runs, where it was
/// refused after 1.5 s with a reason that named `read`.
#[tokio::test(flavor = "multi_thread")]
async fn a_slow_prompt_is_waited_for() {
    let (srv, c, pane) = enrolled("bash", &["--safety", "mutating"]).await;
    type_line(&srv, &pane, "PS1='$(sleep 2.5)slow$ '");
    wait_row(&srv, &pane, |l| l == "slow$");
    wait_shell(&c, &srv, &pane, |s| s["state"] == "prompt").await;
    // An empty line: the next prompt draws for 2.5 s.
    srv.tmux(&["send-keys", "-t", &pane, "Enter"]);
    let got = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo slow-ok", "timeoutMs": 15000 }),
        )
        .await;
    assert_eq!(
        (&got["exitStatus"], &got["output"]["text"]),
        (&json!(0), &json!("slow-ok\n")),
        "{got:#}\n{}",
        screen(&srv, &pane)
    );
    c.close().await;
}

/// bash runs no binding while readline's history search (C-r) is open and
/// prints `bash_execute_unix_command: cannot find keymap for command` into
/// the pane (issue 48 item 11): the call is refused with nothing sent, the
/// search stays as the person left it, and once it is closed the run goes.
#[tokio::test(flavor = "multi_thread")]
async fn bash_a_history_search_gets_nothing_sent() {
    let (srv, c, pane) = enrolled("bash", &["--safety", "mutating"]).await;
    srv.tmux(&["send-keys", "-t", &pane, "C-r"]);
    wait_row(&srv, &pane, |l| l.starts_with("(reverse-i-search)"));
    let got = c
        .call_raw(
            "run_command",
            json!({ "paneId": pane, "command": "echo AGENT-DID-IT", "timeoutMs": 5000 }),
        )
        .await;
    let text = refusal(&got);
    assert!(
        text.contains("history search") && text.contains("Nothing was sent"),
        "{text}"
    );
    let shown = screen(&srv, &pane);
    assert!(
        !shown.contains("keymap") && !shown.contains("9400") && !shown.contains("AGENT"),
        "{shown}"
    );
    assert!(
        wait_row(&srv, &pane, |_| true).starts_with("(reverse-i-search)"),
        "{shown}"
    );
    srv.tmux(&["send-keys", "-t", &pane, "C-g"]);
    wait_row(&srv, &pane, |l| l == "$");
    let ran = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo after-search", "timeoutMs": 5000 }),
        )
        .await;
    assert_eq!(ran["output"]["text"], json!("after-search\n"), "{ran:#}");
    c.close().await;
}

/// vi keys (issue 48: emacs and vi keymaps): in insert mode and in normal
/// mode (after Escape) an enrolled shell runs the agent's command, and a
/// half-typed line is set aside and given back as it was.
async fn vi_keymap_runs(shell: &str) {
    let argv = (shell == "fish").then_some("fish -i");
    let (srv, c, pane) = enrolled_in(shell, argv, &["--safety", "mutating"]).await;
    type_and_wait(
        &srv,
        &c,
        &pane,
        match shell {
            "fish" => "fish_vi_key_bindings",
            "zsh" => "bindkey -v",
            _ => "set -o vi",
        },
    )
    .await;
    std::thread::sleep(Duration::from_millis(300));
    let run = |text: &'static str| {
        let c = &c;
        let pane = pane.clone();
        async move {
            c.call(
                "run_command",
                json!({ "paneId": pane, "command": format!("echo {text}"), "timeoutMs": 5000 }),
            )
            .await
        }
    };
    let insert = run("vi-insert").await;
    assert_eq!(
        insert["output"]["text"],
        json!("vi-insert\n"),
        "{insert:#}\n{}",
        screen(&srv, &pane)
    );
    srv.tmux(&["send-keys", "-t", &pane, "Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    let normal = run("vi-normal").await;
    assert_eq!(
        normal["output"]["text"],
        json!("vi-normal\n"),
        "{normal:#}\n{}",
        screen(&srv, &pane)
    );
    // A half-typed line, in insert mode (a new prompt may start in either):
    // set aside, then given back.
    srv.tmux(&["send-keys", "-t", &pane, "Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    srv.tmux(&["send-keys", "-t", &pane, "-l", "ihalf-typed"]);
    wait_row(&srv, &pane, |l| l.ends_with("half-typed"));
    let aside = run("vi-aside").await;
    assert_eq!(
        aside["output"]["text"],
        json!("vi-aside\n"),
        "{aside:#}\n{}",
        screen(&srv, &pane)
    );
    let row = wait_row(&srv, &pane, |l| l.ends_with("half-typed"));
    assert!(!row.contains("ihalf"), "{row:?}\n{}", screen(&srv, &pane));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_vi_keymap_runs() {
    vi_keymap_runs("bash").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_vi_keymap_runs() {
    vi_keymap_runs("zsh").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fish_vi_keymap_runs() {
    vi_keymap_runs("fish").await;
}

/// A broker started after an enrolled shell (issue 48 item 11: `@mcp-autostart
/// off`, or the broker still starting when the rc ran) learns of the shell
/// when it is asked, before anything is typed: the agent's command is run
/// through the shell's line editor, no wrapper line typed. A shell without
/// the snippet ignores the asking and gets the typed line as before.
async fn a_shell_enrolled_before_the_broker_is_asked(shell: &str) {
    let srv = TmuxServer::start();
    let pane = shell_pane(&srv, shell);
    let plain = shell_pane(&srv, shell);
    type_line(&srv, &pane, &enroll_line(shell));
    type_line(&srv, &pane, "echo enrolled-before");
    poll(Duration::from_secs(10), || {
        screen(&srv, &pane)
            .lines()
            .any(|l| l == "enrolled-before")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("{pane}: {}", screen(&srv, &pane)));
    std::thread::sleep(Duration::from_millis(300));
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
    assert_eq!(shell_of(&c, &pane).await, None, "known before it was asked");
    let got = c
        .call(
            "run_command",
            json!({ "paneId": pane, "command": "echo asked", "timeoutMs": 5000 }),
        )
        .await;
    let shown = screen(&srv, &pane);
    assert_eq!(got["output"]["text"], json!("asked\n"), "{got:#}\n{shown}");
    assert!(
        !shown.contains("2>&1"),
        "a wrapper line was typed:\n{shown}"
    );
    let s = shell_of(&c, &pane)
        .await
        .expect("the shell said it is enrolled");
    assert_eq!(s["name"], json!(shell), "{s:#}");
    // Answering is no command of the person's (bash's DEBUG trap fires
    // before a signal trap's commands too).
    let cmds = c.call("get_commands", json!({ "paneId": pane })).await;
    let texts: Vec<&str> = cmds["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["command"].as_str())
        .collect();
    assert_eq!(texts, ["echo asked"], "{cmds:#}");
    // Not enrolled: asked once, then typed into as before.
    for round in 0..2 {
        let got = c
            .call(
                "run_command",
                json!({ "paneId": plain, "command": "echo typed", "timeoutMs": 5000 }),
            )
            .await;
        assert_eq!(got["output"]["text"], json!("typed\n"), "{round}: {got:#}");
    }
    assert_eq!(shell_of(&c, &plain).await, None);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_enrolled_before_the_broker_is_asked() {
    a_shell_enrolled_before_the_broker_is_asked("bash").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zsh_enrolled_before_the_broker_is_asked() {
    a_shell_enrolled_before_the_broker_is_asked("zsh").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fish_enrolled_before_the_broker_is_asked() {
    a_shell_enrolled_before_the_broker_is_asked("fish").await;
}
