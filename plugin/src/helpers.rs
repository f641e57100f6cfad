//! The helpers tmux runs: `feed` (run-shell, hook-free pane table) and `cursor`
//! (the key binding). Neither prints into a pane.

use crate::{locate, ServerArgs};
use anyhow::bail;
use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;
use tmux_mcp::wire::connect;
use tmux_mcp::feed;
use tmux_mcp::tmux::Tmux;
use tmux_mcp::wire::{CursorRequest, FeedMsg, Hello, Reply};

/// Reads the expanded table from stdin and hands it to the broker. Prints
/// nothing (run-shell would show it in a pane); problems go to the broker's log.
pub fn feed(broker: &Path, req: u64) {
    let mut raw = Vec::new();
    let table = match std::io::stdin().read_to_end(&mut raw) {
        Err(e) => Err(format!("reading stdin: {e}")),
        Ok(_) => feed::parse(&raw).map_err(|e| e.to_string()),
    };
    let msg = Hello::Feed(FeedMsg { req, table });
    if let Err(e) = connect(broker, &msg) {
        log_problem(broker, &format!("feed {req}: could not deliver the table: {e}"));
    }
}

fn log_problem(broker: &Path, line: &str) {
    let log = broker.with_extension("log");
    if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(log) {
        let _ = writeln!(f, "tmux-mcp helper: {line}");
    }
}

/// The pasted hand-off line, e.g. `tmux-mcp: pane %3 handed over — call
/// capture_since {"paneId":"%3","cursor":"…"} (or tmux_capture {"target":…,"cursor":"…"})`.
/// The pane id is the reference's (the key binding may name the pane otherwise).
fn handoff_text(pane: &str, reference: &str, cursor: Option<&str>, note: Option<&str>) -> String {
    let id = serde_json::from_str::<serde_json::Value>(reference).ok().and_then(|r| r["id"].as_str().map(str::to_string));
    let pane = id.as_deref().unwrap_or(pane);
    match (cursor, note) {
        (Some(cur), _) => format!("tmux-mcp: pane {pane} handed over — call capture_since {{\"paneId\":\"{pane}\",\"cursor\":\"{cur}\"}} (or tmux_capture {{\"target\":{reference},\"cursor\":\"{cur}\"}})"),
        (None, Some(note)) => format!("tmux-mcp: pane {pane} handed over — call capture_pane {{\"paneId\":\"{pane}\"}} ({note})"),
        (None, None) => format!("tmux-mcp: pane {pane} handed over — call capture_pane {{\"paneId\":\"{pane}\"}}"),
    }
}

/// `prefix + A`: ask the broker for the pane's reference, store it in the paste
/// buffer `mcp-cursor`, and show it in the status line.
pub fn cursor(server: &ServerArgs, pane: &str) -> anyhow::Result<ExitCode> {
    let (id, sock) = locate::ensure(server)?;
    let (_, reply) = connect(&sock, &Hello::Cursor(CursorRequest { pane_id: pane.to_string() }))?;
    let tmux = Tmux::new(&id.socket_path);
    let text = match reply {
        // The text a person pastes to an agent: one line saying what to call
        // (capture_since is on by default), then the tmux_capture arguments for
        // agents that enabled that tool.
        Reply::Cursor(c) => handoff_text(pane, &c.reference, c.cursor.as_deref(), c.note.as_deref()),
        Reply::Refused { reason } => {
            let _ = tmux.run_blocking(&["display-message", "-t", pane, &format!("tmux-mcp: {reason}")]);
            bail!("{reason}");
        }
        other => bail!("unexpected broker reply {other:?}"),
    };
    tmux.run_blocking(&["set-buffer", "-b", "mcp-cursor", "--", &text])?;
    let shown = text.replace('#', "##");
    tmux.run_blocking(&["display-message", "-t", pane, "-d", "10000", &format!("{shown}  (copied to buffer mcp-cursor)")])?;
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}
