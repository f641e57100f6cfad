//! `tmux-mcp status` and `tmux-mcp doctor`: what the broker says about itself,
//! and every precondition checked from the outside with a plain verdict.

use crate::locate;
use crate::locate::ServerArgs;
use anyhow::bail;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::ExitCode;
use tmux_mcp_core::platform::{self, process_table};
use tmux_mcp_core::process::Backend;
use tmux_mcp_core::tmux::Tmux;
use tmux_mcp_core::wire::connect;
use tmux_mcp_core::wire::{Hello, Reply, StatusReply};
use tmux_mcp_core::{feed, hooks, paths, server, sys};

pub fn fetch_status(sock: &std::path::Path) -> anyhow::Result<StatusReply> {
    match connect(sock, &Hello::Status)?.1 {
        Reply::Status(s) => Ok(*s),
        Reply::Refused { reason } => bail!("the broker refused: {reason}"),
        other => bail!("unexpected broker reply {other:?}"),
    }
}

/// `tmux-mcp status`: what the broker says about itself, in lines a person
/// reads or (`--json`) as one object.
pub fn status(args: &ServerArgs, json: bool) -> anyhow::Result<ExitCode> {
    let id = locate::server(args)?;
    let Some(sock) = locate::find(&id) else {
        bail!(
            "no broker runs for the tmux server at {} (start one with `tmux-mcp start`)",
            id.socket_path.display()
        );
    };
    let s = fetch_status(&sock)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&status_json(&s))?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("broker        pid {} at {}", s.broker_pid, s.broker_socket);
    println!(
        "tmux server   pid {} started {} ({}), version {}",
        s.server_pid,
        when(s.server_start_time, unix_now()),
        s.tmux_socket,
        s.tmux_version
    );
    println!("generation    {}", s.generation);
    println!(
        "uptime        {:.1} s; sessions open {} (served {})",
        s.uptime_seconds, s.sessions_open, s.sessions_served
    );
    print_panes(&s, fresh_table(&id.socket_path));
    println!("option        @mcp-broker-socket {}", s.option_published);
    println!("tools         {}", s.enabled_tools.join(", "));
    println!("tmux access   {}", s.tmux_access);
    print_tmux_counts(&s);
    println!(
        "retained      {} cursors and pages, {:.1} MiB",
        s.retained_entries,
        s.retained_bytes as f64 / (1024.0 * 1024.0)
    );
    println!("log           {}", s.log_file);
    Ok(ExitCode::SUCCESS)
}

/// The panes line and one line a pane: what tmux has now, with the identity
/// the broker holds for each, or (when tmux's answer does not parse) the
/// broker's own table. Its own step: a table of its own, half the status.
fn print_panes(s: &StatusReply, table: Option<tmux_mcp_core::wire::PaneTable>) {
    match table {
        // The broker's table is as old as its last read (an agent's call
        // refreshes it), so list what tmux has now, with the identity the
        // broker holds for each pane it has seen.
        Some(table) => {
            let mut seen = std::collections::HashSet::new();
            let rows: Vec<_> = table
                .rows
                .iter()
                .filter(|r| seen.insert(r.pane_id.clone()))
                .collect();
            println!("panes         {} in tmux now; the broker's table has {} ({} with a process identity)", rows.len(), s.panes, s.panes_tracked);
            for r in rows {
                let place = format!("{}:{}.{}", r.session_name, r.window_index, r.pane_index);
                match s.processes.iter().find(|p| p.pane_id == r.pane_id) {
                    Some(p) => println!(
                        "  {:<6} {:<14} pid {:<8} {:<9} {}  {}{}",
                        r.pane_id,
                        place,
                        p.pid,
                        p.state,
                        p.process_generation.as_deref().unwrap_or("-"),
                        r.current_command,
                        p.note
                            .as_deref()
                            .map(|n| format!("  ({n})"))
                            .unwrap_or_default()
                    ),
                    None => println!(
                        "  {:<6} {:<14} pid {:<8} {:<9} (not yet in the broker's table)  {}",
                        r.pane_id,
                        place,
                        r.pane_pid,
                        if r.pane_dead { "dead" } else { "running" },
                        r.current_command
                    ),
                }
            }
        }
        None => {
            println!("panes         {} ({} with a process identity; the broker's table as of its last read)", s.panes, s.panes_tracked);
            for p in &s.processes {
                println!(
                    "  {:<6} pid {:<8} {:<9} {}{}",
                    p.pane_id,
                    p.pid,
                    p.state,
                    p.process_generation.as_deref().unwrap_or("-"),
                    p.note
                        .as_deref()
                        .map(|n| format!("  ({n})"))
                        .unwrap_or_default()
                );
            }
        }
    }
}

/// The tmux line: connections and commands, each per tool call (each
/// invocation is one connection carrying one command list).
fn print_tmux_counts(s: &StatusReply) {
    let per_call = |n: u64| {
        if s.tool_calls > 0 {
            format!(" ({:.2} per tool call)", n as f64 / s.tool_calls as f64)
        } else {
            String::new()
        }
    };
    match s.tmux_connections {
        Some(n) => println!(
            "tmux          {n} connections{}, {} commands{}; {} tool calls",
            per_call(n),
            s.tmux_commands,
            per_call(s.tmux_commands),
            s.tool_calls
        ),
        // A broker older than the split counted connections as commands.
        None => println!(
            "tmux          {} connections{} (this broker does not count commands); {} tool calls",
            s.tmux_commands,
            per_call(s.tmux_commands),
            s.tool_calls
        ),
    }
}

/// The pane table as tmux has it now, read the broker's hook-free way
/// (`list-commands -F`: tmux expands the table format and runs no hook).
/// `None` when this tmux's answer does not parse (the broker then feeds
/// through `run-shell`, which needs the broker; its table is shown instead).
fn fresh_table(socket: &std::path::Path) -> Option<tmux_mcp_core::wire::PaneTable> {
    let out = Tmux::new(socket)
        .run_blocking(&[
            "list-commands",
            "-F",
            &feed::table_format(),
            "list-commands",
        ])
        .ok()?;
    // tmux 3.4-3.5 escape the separators in command output.
    feed::parse(&out)
        .ok()
        .or_else(|| feed::parse(feed::unvis_separators("3.5", &out)).ok())
}

fn status_json(s: &StatusReply) -> serde_json::Value {
    serde_json::json!({
        "broker_pid": s.broker_pid, "broker_socket": s.broker_socket, "tmux_socket": s.tmux_socket,
        "generation": s.generation, "server_pid": s.server_pid, "server_start_time": s.server_start_time,
        "tmux_version": s.tmux_version, "uptime_seconds": s.uptime_seconds,
        "sessions_served": s.sessions_served, "sessions_open": s.sessions_open,
        "panes": s.panes, "panes_tracked": s.panes_tracked,
        "processes": s.processes.iter().map(|p| serde_json::json!({"pane_id": p.pane_id, "pid": p.pid, "process_generation": p.process_generation, "state": p.state, "note": p.note})).collect::<Vec<_>>(),
        "option_published": s.option_published, "tmux_connections": s.tmux_connections.unwrap_or(s.tmux_commands), "tmux_commands": s.tmux_commands, "tool_calls": s.tool_calls, "retained_entries": s.retained_entries, "retained_bytes": s.retained_bytes, "tmux_access": s.tmux_access,
        "enabled_tools": s.enabled_tools, "log_file": s.log_file,
    })
}

struct Report {
    problems: usize,
}

impl Report {
    fn line(&mut self, ok: bool, what: &str, detail: impl AsRef<str>) {
        if !ok {
            self.problems += 1;
        }
        println!(
            "[{}] {what}: {}",
            if ok { " ok " } else { "FAIL" },
            detail.as_ref()
        );
    }
    fn note(&self, what: &str, detail: impl AsRef<str>) {
        println!("[info] {what}: {}", detail.as_ref());
    }
}

/// `tmux-mcp doctor`: every precondition, checked from the outside, a
/// verdict line each; fails when any check does.
pub fn doctor(args: &ServerArgs) -> anyhow::Result<ExitCode> {
    let mut r = Report { problems: 0 };
    let sock = locate::tmux_socket(args)?;
    let tmux = Tmux::new(&sock);
    check_tmux_binary(&mut r, &tmux);
    let probe = match server::probe(&sock) {
        Ok(p) => p,
        Err(e) => {
            r.line(false, "tmux server", e.to_string());
            return Ok(ExitCode::FAILURE);
        }
    };
    let id = &probe.identity;
    r.line(
        true,
        "tmux server",
        format!(
            "pid {} at {}, started {}, generation {}",
            id.pid,
            id.socket_path.display(),
            when(id.start_time, unix_now()),
            id.generation
        ),
    );
    check_process_identity(&mut r, &probe);
    check_capture_hook(&mut r, &tmux);
    check_broker(&mut r, id)?;
    check_runtime_dir(&mut r);
    Ok(if r.problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Whether the tmux binary runs, and its version.
fn check_tmux_binary(r: &mut Report, tmux: &Tmux) {
    match std::process::Command::new(&tmux.bin).arg("-V").output() {
        Ok(o) => r.line(
            o.status.success(),
            "tmux",
            String::from_utf8_lossy(&o.stdout).trim(),
        ),
        Err(e) => r.line(
            false,
            "tmux",
            format!("{} not runnable: {e}", tmux.bin.display()),
        ),
    }
}

/// What process identity needs of the platform: the exit descriptor, the
/// server's own (race-free) one, the identity backend, the process table.
fn check_process_identity(r: &mut Report, probe: &server::Probe) {
    let ib = platform::IDENTITY_BACKEND;
    r.line(
        platform::exit_fd(std::process::id()).is_ok(),
        ib.exit_call(),
        "needed for process identity and exit watching",
    );
    r.line(
        probe.pidfd.is_some(),
        ib.peer_exit_call(),
        if probe.pidfd.is_some() {
            "supported (the server's exit descriptor, race-free)".to_string()
        } else {
            format!("unsupported; the broker falls back to {}", ib.exit_call())
        },
    );
    let backend = Backend::detect(probe.identity.pid);
    r.line(
        backend.unavailable.is_none(),
        "process identity",
        backend
            .unavailable
            .as_ref()
            .map(|e| e.to_string())
            .unwrap_or_else(|| ib.requirement().into()),
    );
    r.line(
        process_table::readable(),
        process_table::SOURCE,
        "the process table (parents, terminals, start times)",
    );
}

/// Whether a global `after-capture-pane` hook would make captures refused
/// (`show-hooks` fires no hook).
fn check_capture_hook(r: &mut Report, tmux: &Tmux) {
    let global = tmux
        .run_blocking(&["show-hooks", "-g", "after-capture-pane"])
        .unwrap_or_default();
    let hooked = hooks::has_entry(&global, "after-capture-pane");
    r.line(
        !hooked,
        "after-capture-pane (global)",
        if hooked {
            "set: captures will be refused while it is"
        } else {
            "not set"
        },
    );
}

/// The broker of this server: its socket's and runtime dir's modes and
/// owner, and what it answers about itself.
fn check_broker(r: &mut Report, id: &server::ServerIdentity) -> anyhow::Result<()> {
    match locate::find(id) {
        None => r.line(
            false,
            "broker",
            "not running (the plugin or `tmux-mcp attach` starts it)",
        ),
        Some(bsock) => {
            let md = std::fs::metadata(&bsock)?;
            let dmd = std::fs::metadata(bsock.parent().unwrap_or(std::path::Path::new("/")))?;
            r.line(
                md.permissions().mode() & 0o777 == 0o600 && md.uid() == sys::current_uid(),
                "broker socket",
                format!(
                    "{} mode {:o}",
                    bsock.display(),
                    md.permissions().mode() & 0o777
                ),
            );
            r.line(
                dmd.permissions().mode() & 0o777 == 0o700 && dmd.uid() == sys::current_uid(),
                "runtime dir",
                format!("mode {:o}", dmd.permissions().mode() & 0o777),
            );
            match fetch_status(&bsock) {
                Ok(s) => {
                    r.line(
                        true,
                        "broker",
                        format!(
                            "pid {}, {} session(s) open, {} pane(s)",
                            s.broker_pid, s.sessions_open, s.panes
                        ),
                    );
                    for (pane, why) in &s.panes_untracked {
                        r.note("no process_generation", format!("{pane}: {why}"));
                    }
                    r.note("@mcp-broker-socket", &s.option_published);
                    r.note("log", &s.log_file);
                }
                Err(e) => r.line(false, "broker", format!("not answering: {e}")),
            }
        }
    }
    Ok(())
}

/// Which directory a broker started now would use, and every candidate it
/// would pass over with the reason (nothing is created here).
fn check_runtime_dir(r: &mut Report) {
    let plan = paths::RuntimeEnv::current().plan(false);
    for (dir, why) in &plan.refused {
        r.note("runtime dir refused", format!("{} {why}", dir.display()));
    }
    if plan.refused_more > 0 {
        r.note(
            "runtime dir refused",
            format!("and {} more", plan.refused_more),
        );
    }
    match &plan.chosen {
        Some(dir) => r.note(
            "runtime dir for a new broker",
            format!(
                "{}{}",
                dir.display(),
                if dir.is_dir() {
                    ""
                } else {
                    " (will be created, mode 0700)"
                }
            ),
        ),
        None => r.line(
            false,
            "runtime dir",
            "every candidate was refused; a broker cannot start",
        ),
    }
    r.note(
        "runtime dirs searched",
        paths::runtime_dir_candidates()
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    );
}

/// Seconds since the Unix epoch now (0 if the clock is before it).
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An instant a person reads: UTC in ISO 8601 and how long ago, e.g.
/// `2026-12-06T03:02:54Z (4 min ago)`.
pub fn when(epoch: u64, now: u64) -> String {
    format!("{} ({})", iso_utc(epoch), ago(epoch, now))
}

/// `YYYY-MM-DDThh:mm:ssZ` of a Unix time (the proleptic Gregorian calendar;
/// days to a civil date as in Howard Hinnant's `civil_from_days`).
fn iso_utc(epoch: u64) -> String {
    let (days, secs) = (epoch / 86_400, epoch % 86_400);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}

/// How long before `now` `epoch` was, in the largest units that say it.
fn ago(epoch: u64, now: u64) -> String {
    let Some(d) = now.checked_sub(epoch) else {
        return format!("{} s from now: the clock changed", epoch - now);
    };
    match d {
        0..=59 => format!("{d} s ago"),
        60..=3_599 => format!("{} min ago", d / 60),
        3_600..=86_399 => format!("{} h {} min ago", d / 3_600, d % 3_600 / 60),
        _ => format!("{} d {} h ago", d / 86_400, d % 86_400 / 3_600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_time_reads_as_utc_and_how_long_ago() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00Z");
        // The epoch the issue saw printed raw.
        assert_eq!(iso_utc(1_796_524_072), "2026-12-06T02:27:52Z");
        // Leap days and the ends of years and centuries.
        assert_eq!(iso_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso_utc(1_709_208_000), "2024-02-29T12:00:00Z");
        assert_eq!(iso_utc(1_735_689_599), "2024-12-31T23:59:59Z");
        assert_eq!(iso_utc(4_102_444_800), "2100-01-01T00:00:00Z");
        assert_eq!(ago(100, 100), "0 s ago");
        assert_eq!(ago(100, 159), "59 s ago");
        assert_eq!(ago(0, 4 * 60 + 59), "4 min ago");
        assert_eq!(ago(0, 2 * 3_600 + 5 * 60), "2 h 5 min ago");
        assert_eq!(ago(0, 3 * 86_400 + 7_200), "3 d 2 h ago");
        assert_eq!(ago(10, 4), "6 s from now: the clock changed");
        assert_eq!(
            when(1_796_524_072, 1_796_524_072 + 240),
            "2026-12-06T02:27:52Z (4 min ago)"
        );
    }
}
