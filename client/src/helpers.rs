//! The helpers tmux runs: `feed` (run-shell, hook-free pane table) and `cursor`
//! (the key binding). Neither prints into a pane.

use crate::locate;
use crate::locate::ServerArgs;
use anyhow::bail;
use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;
use tmux_mcp_core::feed;
use tmux_mcp_core::tmux::Tmux;
use tmux_mcp_core::wire::connect;
use tmux_mcp_core::wire::{CursorRequest, FeedMsg, Hello, Reply};

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
        log_problem(
            broker,
            &format!("feed {req}: could not deliver the table: {e}"),
        );
    }
}

fn log_problem(broker: &Path, line: &str) {
    let log = broker.with_extension("log");
    if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(log) {
        let _ = writeln!(f, "tmux-mcp helper: {line}");
    }
}

/// The pasted hand-off line, e.g. `tmux-mcp: pane %3 handed over — call
/// capture_since {"paneId":"%3","cursor":"…","server":"work"} (or
/// tmux_capture {"target":…,"cursor":"…","server":"work"})`. The pane id is
/// the reference's (the key binding may name the pane otherwise). `server` is
/// the key `list_servers` gives the pane's server (`sockets::key_of`): the
/// key binding cannot know which server the agent runs on, and naming its
/// own server is the same as naming none (spec B.7), so it is always said.
fn handoff_text(
    pane: &str,
    server: &str,
    reference: &str,
    cursor: Option<&str>,
    note: Option<&str>,
) -> String {
    let id = serde_json::from_str::<serde_json::Value>(reference)
        .ok()
        .and_then(|r| r["id"].as_str().map(str::to_string));
    let pane = id.as_deref().unwrap_or(pane);
    // A path may hold a quote or a backslash: written as a JSON string.
    let server = serde_json::Value::from(server);
    match (cursor, note) {
        (Some(cur), _) => format!("tmux-mcp: pane {pane} handed over — call capture_since {{\"paneId\":\"{pane}\",\"cursor\":\"{cur}\",\"server\":{server}}} (or tmux_capture {{\"target\":{reference},\"cursor\":\"{cur}\",\"server\":{server}}})"),
        (None, Some(note)) => format!("tmux-mcp: pane {pane} handed over — call capture_pane {{\"paneId\":\"{pane}\",\"server\":{server}}} ({note})"),
        (None, None) => format!("tmux-mcp: pane {pane} handed over — call capture_pane {{\"paneId\":\"{pane}\",\"server\":{server}}}"),
    }
}

/// `prefix + A`: ask the broker for the pane's reference, store it in the paste
/// buffer `mcp-cursor`, and show it in the status line — each only when the
/// person has no hook on that command (`after-set-buffer`,
/// `after-display-message`), which the broker checked hook-free. The line is
/// also printed on stdout. Exits 0 when the pane was handed over and the line
/// reached the person, 2 when the broker refused (a capture hook is set, no
/// such pane), 3 when it was handed over but neither way to show it is free.
pub fn cursor(server: &ServerArgs, pane: &str) -> anyhow::Result<ExitCode> {
    let (id, sock) = locate::ensure(server)?;
    let (_, reply) = connect(
        &sock,
        &Hello::Cursor(CursorRequest {
            pane_id: pane.to_string(),
        }),
    )?;
    let tmux = Tmux::new(&id.socket_path);
    let c = match reply {
        Reply::Cursor(c) => c,
        // The broker could not even read the table: nothing was checked, so
        // nothing is shown (it could run a hook); the reason goes to stderr.
        Reply::Refused { reason } => bail!("{reason}"),
        other => bail!("unexpected broker reply {other:?}"),
    };
    let can_show = !c.hooked.iter().any(|h| h == "after-display-message");
    let can_copy = !c.hooked.iter().any(|h| h == "after-set-buffer");
    let show = |message: &str| {
        let message = message.replace('#', "##");
        tmux.run_blocking(&["display-message", "-t", pane, "-d", "10000", &message])
    };
    if let Some(reason) = &c.refused {
        eprintln!("tmux-mcp: {reason}");
        if can_show {
            show(&format!("tmux-mcp: {reason}"))?;
        }
        return Ok(ExitCode::from(2));
    }
    // The text a person pastes to an agent: one line saying what to call
    // (capture_since is on by default), then the tmux_capture arguments for
    // agents that enabled that tool.
    let key = tmux_mcp_core::sockets::key_of(&id.socket_path);
    let text = handoff_text(
        pane,
        &key,
        &c.reference,
        c.cursor.as_deref(),
        c.note.as_deref(),
    );
    println!("{text}");
    if can_copy {
        tmux.run_blocking(&["set-buffer", "-b", "mcp-cursor", "--", &text])?;
    }
    match (can_show, can_copy) {
        (true, true) => drop(show(&format!("{text}  (copied to buffer mcp-cursor)"))?),
        (true, false) => drop(show(&format!("{text}  (not copied: an after-set-buffer hook is set, and storing it would run that hook)"))?),
        (false, true) => {}
        (false, false) => {
            eprintln!("tmux-mcp: pane {pane} handed over, but after-set-buffer and after-display-message hooks are set: the line is neither copied nor shown, since either would run a hook; it is on stdout");
            return Ok(ExitCode::from(3));
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::handoff_text;

    /// The line names the pane's server in both calls' arguments, as JSON
    /// (a path's quote escaped), and stays one line.
    #[test]
    fn the_handoff_line_names_the_server_in_each_call() {
        let reference = r#"{"kind":"pane","id":"%3","generation":"g"}"#;
        let line = handoff_text("%9", "work", reference, Some("c0ffee"), None);
        assert_eq!(
            line,
            r#"tmux-mcp: pane %3 handed over — call capture_since {"paneId":"%3","cursor":"c0ffee","server":"work"} (or tmux_capture {"target":{"kind":"pane","id":"%3","generation":"g"},"cursor":"c0ffee","server":"work"})"#
        );
        let odd = handoff_text("%3", "/run/a\"b.sock", reference, None, None);
        assert!(
            odd.ends_with(r#"capture_pane {"paneId":"%3","server":"/run/a\"b.sock"}"#),
            "{odd}"
        );
    }
}
