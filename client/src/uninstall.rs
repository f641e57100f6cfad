//! `tmux-mcp uninstall`: take the plugin out of a running tmux server without
//! restarting it — the key binding it made, every `@mcp-*` option, and the
//! broker. The same rules as everywhere: no hook of the person's runs, so a
//! step whose command has a hook set (`after-unbind-key`, `after-set-option`,
//! globally or in a session; checked with `show-hooks`, which fires none) is
//! left out and named. Reads go through `list-commands -F` formats.

use crate::locate;
use crate::locate::ServerArgs;
use anyhow::Context;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tmux_mcp_core::platform::process_table;
use tmux_mcp_core::server::ServerIdentity;
use tmux_mcp_core::tmux::Tmux;

/// Every option the plugin or the broker reads or writes.
const OPTIONS: &[&str] = &[
    "@mcp-state",
    "@mcp-status",
    "@mcp-broker-socket",
    "@mcp-cursor-key",
    "@mcp-cursor-key-bound",
    "@mcp-bin-dir",
    "@mcp-autostart",
    "@mcp-install",
    "@mcp-safety",
    "@mcp-toolset",
    "@mcp-request-timeout",
    "@mcp-enable-tools",
    "@mcp-confirm",
    "@mcp-scope",
    "@mcp-sockets",
    "@mcp-hosts",
    "@mcp-ssh-command",
    "@mcp-remote-attach",
];

pub fn uninstall(args: &ServerArgs) -> anyhow::Result<ExitCode> {
    let id = locate::server(args)?;
    let tmux = Tmux::new(&id.socket_path);
    let sessions: Vec<String> = expand(&tmux, "#{S:#{session_id} }")?
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let mut left = Vec::new();
    stop_broker(&id, &mut left);
    unbind_cursor_key(&tmux, &sessions, &mut left)?;
    unset_options(&tmux, &sessions, &mut left)?;
    if left.is_empty() {
        println!("tmux-mcp is out of this tmux server; remove its line from tmux.conf so the next start does not load it again");
        return Ok(ExitCode::SUCCESS);
    }
    for l in &left {
        eprintln!("tmux-mcp uninstall: {l}");
    }
    Ok(ExitCode::from(3))
}

/// A format expanded by tmux: every read goes through `list-commands -F`,
/// which fires no hook.
fn expand(tmux: &Tmux, format: &str) -> anyhow::Result<String> {
    tmux.run_blocking(&["list-commands", "-F", format, "list-commands"])
        .context("reading from tmux")
}

/// Whether hook `name` is set globally or in any of `sessions`: a step whose
/// command would run a hook of the person's is left out. Asked with
/// `show-hooks`, which fires none.
fn hooked(tmux: &Tmux, sessions: &[String], name: &str) -> anyhow::Result<bool> {
    let mut argv: Vec<String> = vec!["show-hooks".into(), "-g".into(), name.into()];
    for s in sessions {
        argv.push(";".into());
        argv.extend(tmux_mcp_core::hooks::while_exists(
            s,
            &format!("show-hooks -t '{s}' {name}"),
            None,
        ));
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    Ok(tmux_mcp_core::hooks::has_entry(
        &tmux.run_blocking(&argv)?,
        name,
    ))
}

/// The broker first: it stops at SIGTERM (agents on it get their in-flight
/// answers), and a new one is not started by anything but the plugin. What
/// could not be done is pushed to `left`.
fn stop_broker(id: &ServerIdentity, left: &mut Vec<String>) {
    match locate::find(id).map(|sock| (crate::doctor::fetch_status(&sock), sock)) {
        Some((Ok(s), sock)) => {
            let started = process_table::stat(s.broker_pid).map(|st| st.start_ticks);
            match tmux_mcp_core::sys::terminate(s.broker_pid) {
                Ok(()) => {
                    println!("stopped the broker (pid {})", s.broker_pid);
                    // A broker stopped while its server lives keeps its log
                    // (for whoever looks into why it stopped); uninstall takes
                    // it too, once the broker has gone.
                    let log = sock.with_extension("log");
                    if gone(s.broker_pid, started.ok(), Duration::from_secs(3)) {
                        if std::fs::remove_file(&log).is_ok() {
                            println!("removed its log {}", log.display());
                        }
                    } else {
                        left.push(format!(
                            "the broker (pid {}) did not exit within 3 s; its log {} stays",
                            s.broker_pid,
                            log.display()
                        ));
                    }
                }
                Err(e) => left.push(format!(
                    "the broker (pid {}) could not be signalled: {e}",
                    s.broker_pid
                )),
            }
        }
        Some((Err(e), _)) => left.push(format!("the broker did not answer: {e}")),
        None => println!("no broker was running"),
    }
}

/// The key binding the plugin made (`@mcp-cursor-key-bound`), unbound unless
/// an `after-unbind-key` hook would run.
fn unbind_cursor_key(
    tmux: &Tmux,
    sessions: &[String],
    left: &mut Vec<String>,
) -> anyhow::Result<()> {
    let bound = expand(tmux, "#{@mcp-cursor-key-bound}")?.trim().to_string();
    if bound.is_empty() {
        println!("no key binding of the plugin's");
    } else if hooked(tmux, sessions, "after-unbind-key")? {
        left.push(format!(
            "key {bound} stays bound: an after-unbind-key hook is set and unbinding would run it"
        ));
    } else {
        tmux.run_blocking(&["unbind-key", "--", &bound])
            .with_context(|| format!("unbinding key {bound}"))?;
        println!("unbound key {bound} (prefix table)");
    }
    Ok(())
}

/// Every `@mcp-*` option unset in one command, unless an `after-set-option`
/// hook would run.
fn unset_options(tmux: &Tmux, sessions: &[String], left: &mut Vec<String>) -> anyhow::Result<()> {
    if hooked(tmux, sessions, "after-set-option")? {
        left.push("the @mcp-* options stay: an after-set-option hook is set and unsetting an option would run it".into());
    } else {
        let mut argv: Vec<&str> = Vec::new();
        for (i, o) in OPTIONS.iter().enumerate() {
            if i > 0 {
                argv.push(";");
            }
            // -q: an option that was never set is no error. @mcp-broker-socket is a server option.
            argv.extend(if *o == "@mcp-broker-socket" {
                ["set-option", "-squ", o]
            } else {
                ["set-option", "-gqu", o]
            });
        }
        tmux.run_blocking(&argv)
            .context("unsetting the @mcp-* options")?;
        println!("unset the @mcp-* options");
    }
    Ok(())
}

/// Whether process `pid` (started at `start_ticks`, when known) has ended, or
/// is only a zombie, within `within`.
fn gone(pid: u32, start_ticks: Option<u64>, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        let ended = process_table::stat(pid).map_or(true, |st| {
            st.state == 'Z' || start_ticks.is_some_and(|t| t != st.start_ticks)
        });
        if ended {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
