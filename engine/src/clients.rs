//! The clients attached to the tmux server, read hook-free.
//!
//! `list-clients` runs the user's `after-list-clients` hook, so the broker never
//! uses it. From tmux 3.5 the format language has a client loop (`#{L:…}`),
//! expanded inside tmux's own queue like the pane table; before 3.5 there is no
//! hook-free way to read clients and callers are told so ([`Unavailable`]).
//!
//! Only clients attached to a session are expanded (`#{?client_session,…,}`):
//! tmux 3.5a dereferences a NULL name, tty or terminal of a client that is still
//! connecting (a command client mid-handshake, e.g. another agent's read) and
//! the server crashes; 3.7c does not. Measured: 3 of 3 unguarded runs of 400
//! expansions beside 400 connecting clients killed a 3.5a server, 0 guarded.
//! Command clients (the broker's own connections among them) are therefore
//! never listed: they have no session and nobody looks at them.
//!
//! [`watchers_format`], expanded beside a capture, names the sessions through
//! which a person sees a pane (`snapshot_pane`'s `isAttended`).

use crate::registry::{Pane, Placement, Registry};
use std::collections::HashSet;
use tmux_mcp_core::feed::{field, unvis_separators, RS, US};
use tmux_mcp_core::tmux::quote::format_operand;

/// One attached client.
#[derive(Debug, Clone, PartialEq)]
pub struct Client {
    pub name: String,
    pub tty: String,
    pub pid: u32,
    /// Seconds since the epoch (`#{client_created}`).
    pub created: u64,
    pub termname: String,
    /// `None` when tmux reports no size (a control client that set none).
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub session_id: String,
    pub session_name: String,
    pub readonly: bool,
    pub utf8: bool,
    pub control_mode: bool,
}

/// Why the clients cannot be read on this server.
#[derive(Debug, Clone, PartialEq)]
pub struct Unavailable(pub String);

/// Per-client fields of the loop, in [`Client`] order; `true` marks free text.
const FIELDS: &[(&str, bool)] = &[
    ("client_name", true),
    ("client_tty", true),
    ("client_pid", false),
    ("client_created", false),
    ("client_termname", true),
    ("client_width", false),
    ("client_height", false),
    ("session_id", false),
    ("client_session", true),
    ("client_readonly", false),
    ("client_utf8", false),
    ("client_control_mode", false),
];

/// Whether `version` can read clients hook-free (the `L:` loop).
pub fn readable(version: &str) -> Result<(), Unavailable> {
    if tmux_mcp_core::tmux::version_at_least(version, 3, 5) {
        Ok(())
    } else {
        Err(Unavailable(format!(
            "tmux {version} has no client loop in formats (L:, tmux >= 3.5), and list-clients would run the after-list-clients hook; tmux-mcp does not guess"
        )))
    }
}

/// The format that expands to one record per attached client.
pub fn format() -> String {
    let row: Vec<String> = FIELDS.iter().map(|(f, t)| field(f, *t)).collect();
    format!(
        "#{{L:#{{?client_session,{}{RS},}}}}",
        row.join(&US.to_string())
    )
}

/// A format that expands to the ids of the sessions through which a person
/// sees pane `pane_id` of window `window_id`, each followed by a space: a client
/// not in control mode shows that window (its session's current window), and
/// the window is not zoomed or the pane is the zoomed one (B.2.2). Expanded in
/// a pane's own command queue beside its capture (no extra round trip), with no
/// session or pane of its own: tmux gives each client of the loop the outer
/// session, window and pane when there are some, and the client's own only
/// when there are none. tmux >= 3.5 only.
pub fn watchers_format(pane_id: &str, window_id: &str) -> String {
    let (p, w) = (format_operand(pane_id), format_operand(window_id));
    let id = "#{session_id} ";
    format!("#{{L:#{{?client_session,#{{?client_control_mode,,#{{?#{{==:#{{window_id}},{w}}},#{{?window_zoomed_flag,#{{?#{{==:#{{pane_id}},{p}}},{id},}},{id}}},}}}},}}}}")
}

/// The clients in what [`format`] expanded to (`version` decides how tmux
/// printed the separator bytes).
pub fn parse(version: &str, expanded: &str) -> Result<Vec<Client>, String> {
    let text = unvis_separators(version, expanded);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let mut out = Vec::new();
    for rec in text.split(RS).filter(|r| !r.is_empty()) {
        let f: Vec<&str> = rec.split(US).collect();
        if f.len() != FIELDS.len() {
            return Err(format!(
                "a client row has {} fields, expected {}",
                f.len(),
                FIELDS.len()
            ));
        }
        if f[7].is_empty() {
            continue;
        }
        let num = |i: usize| {
            f[i].parse::<u64>()
                .map_err(|_| format!("client field {} is not a number: {:?}", FIELDS[i].0, f[i]))
        };
        let small = |i: usize| {
            num(i).and_then(|n| {
                u32::try_from(n)
                    .map_err(|_| format!("client field {} is out of range", FIELDS[i].0))
            })
        };
        let size = |i: usize| {
            if f[i].is_empty() {
                Ok(None)
            } else {
                small(i).map(Some)
            }
        };
        out.push(Client {
            name: f[0].to_string(),
            tty: f[1].to_string(),
            pid: small(2)?,
            created: num(3)?,
            termname: f[4].to_string(),
            width: size(5)?,
            height: size(6)?,
            session_id: f[7].to_string(),
            session_name: f[8].to_string(),
            readonly: f[9] == "1",
            utf8: f[10] == "1",
            control_mode: f[11] == "1",
        });
    }
    // The reference order: by (pid, created, name).
    out.sort_by(|a, b| (a.pid, a.created, &a.name).cmp(&(b.pid, b.created, &b.name)));
    Ok(out)
}

/// Whether a person sees `pane` (B.2.2): its window is the current window of
/// a session `watched` says a person's client is attached to, and the window
/// is not zoomed or the pane is the zoomed (active) one. The one rule behind
/// `snapshot_pane`'s `isAttended` (before tmux 3.5) and `list_sessions`'
/// attended panes; from 3.5 `snapshot_pane` asks tmux the same thing per client
/// ([`watchers_format`]).
pub fn shown(pane: &Pane, watched: impl Fn(&Placement) -> bool) -> bool {
    let current = pane
        .placements
        .iter()
        .any(|pl| pl.window_active && watched(pl));
    current && (!pane.window_zoomed || pane.active)
}

/// The sessions a person is attached to: those of the clients not in control
/// mode (a control-mode client is a program, not a person).
pub fn watched_sessions(clients: &[Client]) -> HashSet<String> {
    clients
        .iter()
        .filter(|c| !c.control_mode)
        .map(|c| c.session_id.clone())
        .collect()
}

/// The attached clients of the server (`version` as the table reported it),
/// in one hook-free expansion.
pub async fn read(registry: &Registry, version: &str) -> Result<Vec<Client>, Unavailable> {
    readable(version)?;
    let expanded = registry
        .expand_format(&format())
        .await
        .map_err(|e| Unavailable(format!("reading the clients failed: {e}")))?;
    parse(version, &expanded).map_err(|e| Unavailable(format!("reading the clients failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pid: &str, sid: &str) -> String {
        [
            "/dev/pts/4",
            "/dev/pts/4",
            pid,
            "1700000000",
            "xterm",
            "80",
            "24",
            sid,
            "main",
            "0",
            "1",
            "1",
        ]
        .join(&US.to_string())
    }

    #[test]
    fn rows_parse_sorted_and_command_clients_are_left_out() {
        let text = format!(
            "{}{RS}{}{RS}{}{RS}\n",
            row("90", "$0"),
            row("77", ""),
            row("12", "$1")
        );
        let c = parse("3.7c", &text).unwrap();
        assert_eq!(
            c.iter().map(|c| c.pid).collect::<Vec<_>>(),
            vec![12, 90],
            "sorted by pid; the sessionless client left out"
        );
        assert_eq!(
            (
                c[1].session_id.as_str(),
                c[1].control_mode,
                c[1].readonly,
                c[1].utf8,
                c[1].created
            ),
            ("$0", true, false, true, 1_700_000_000)
        );
        assert!(parse("3.7c", &format!("a{US}b{RS}")).is_err());
        assert!(
            format().starts_with("#{L:#{?client_session,#{s/"),
            "{}",
            format()
        );
    }

    #[test]
    fn tmux_3_4_and_3_5_escape_the_separators() {
        let escaped = format!("{}{RS}", row("1", "$1"))
            .replace(US, "\\037")
            .replace(RS, "\\036");
        assert_eq!(parse("3.5a", &escaped).unwrap().len(), 1);
        assert!(
            parse("3.7c", &escaped).is_err(),
            "3.6+ prints the bytes as they are"
        );
    }

    #[test]
    fn clients_are_readable_from_3_5() {
        assert!(readable("3.3a").is_err());
        assert!(readable("3.4").is_err());
        assert!(readable("3.5a").is_ok());
        assert!(readable("next-3.8").is_ok());
    }

    #[test]
    fn the_watchers_format_is_balanced_and_names_both_ids() {
        let f = watchers_format("%3", "@2");
        assert_eq!(f.matches("#{").count(), f.matches('}').count(), "{f}");
        assert!(
            f.contains("#{==:#{window_id},@2}") && f.contains("#{==:#{pane_id},%3}"),
            "{f}"
        );
        assert!(
            !f.contains('\'') && !f.contains('\n'),
            "usable beside a capture: {f}"
        );
        let mut depth = 0;
        for (i, c) in f.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' => assert!(depth > 0, "a top-level comma at {i}: {f}"),
                _ => {}
            }
        }
    }
}
