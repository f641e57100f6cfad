//! The hook-free pane feed.
//!
//! tmux runs a user's `after-list-panes` (… `after-display-message`,
//! `after-show-options`) hook after each of those commands, so the broker never
//! uses them to read. Instead it asks tmux to `run-shell` the helper
//! `tmux-mcp feed`, whose standard input is a here-document holding a
//! format-expanded `#{S:#{W:#{P:…}}}` loop. `run-shell` fires no hook; the format
//! is expanded by tmux inside its own command queue, so the table is one
//! consistent read. The here-document is quoted, so the shell expands nothing in
//! it, and its delimiter is random, so no pane text can end it early.
//!
//! Fields are separated by ASCII US (0x1f) and records by RS (0x1e); tmux's
//! `s///` modifier replaces those two bytes inside free-text fields, so a window
//! name cannot shift the columns.

use crate::sys;
use crate::tmux::{format_literal, shell_quote};
use crate::wire::{PaneRow, PaneTable, ServerRow};
use std::path::Path;

pub const US: char = '\u{1f}';
pub const RS: char = '\u{1e}';

/// Server-wide fields, in wire order.
const SERVER_FIELDS: &[&str] = &["pid", "start_time", "version", "socket_path", "@mcp-broker-socket", "@mcp-enable-tools", "@mcp-safety", "@mcp-toolset"];

/// Per-placement fields, in wire order. `true` marks free text that gets sanitised.
const PANE_FIELDS: &[(&str, bool)] = &[
    ("session_id", false),
    ("session_name", true),
    ("window_id", false),
    ("window_index", false),
    ("window_name", true),
    ("window_active", false),
    ("pane_id", false),
    ("pane_index", false),
    ("pane_active", false),
    ("pane_pid", false),
    ("pane_dead", false),
    ("pane_dead_status", false),
    ("pane_width", false),
    ("pane_height", false),
    ("history_size", false),
    ("history_limit", false),
    ("pane_current_command", true),
    ("pane_current_path", true),
    ("pane_title", true),
    ("pane_tty", true),
    ("session_created", false),
    ("session_attached", false),
    ("session_windows", false),
    ("window_width", false),
    ("window_height", false),
    ("window_panes", false),
    ("window_layout", true),
    ("cursor_x", false),
    ("cursor_y", false),
    ("pane_in_mode", false),
    // Empty unless the pane is in copy mode.
    ("scroll_position", false),
    ("window_zoomed_flag", false),
];

/// `#{name}`, or for free text `name` with the separators replaced (so a
/// value cannot shift columns or rows); other hook-free format reads use it too.
pub fn field(name: &str, free_text: bool) -> String {
    if free_text {
        // Replace the two separator bytes (and NL, so rows stay one line) with '?'.
        format!("#{{s/[{US}{RS}\n]/?/:{name}}}")
    } else {
        format!("#{{{name}}}")
    }
}

/// The tmux format that expands to the whole table.
pub fn table_format() -> String {
    let header: Vec<String> = SERVER_FIELDS.iter().map(|f| field(f, true)).collect();
    let row: Vec<String> = PANE_FIELDS.iter().map(|(f, t)| field(f, *t)).collect();
    format!("{}{RS}#{{S:#{{W:#{{P:{}{RS}}}}}}}", header.join(&US.to_string()), row.join(&US.to_string()))
}

/// The `run-shell` argument that makes tmux hand the table to the helper.
pub fn run_shell_command(helper: &Path, broker_socket: &Path, req: u64) -> String {
    let delim = format!("TMUXMCP_{}", sys::random_hex(8));
    let head = format!(
        "exec {} feed --broker {} --req {req} <<'{delim}'",
        shell_quote(&helper.display().to_string()),
        shell_quote(&broker_socket.display().to_string()),
    );
    // Only the table format may be expanded; everything else is literal.
    format!("{}\n{}\n{}\n", format_literal(&head), table_format(), format_literal(&delim))
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParseError {
    #[error("the table has no server header")]
    NoHeader,
    #[error("server header has {0} fields, expected {expected}", expected = SERVER_FIELDS.len())]
    Header(usize),
    #[error("row {row} has {got} fields, expected {expected}", expected = PANE_FIELDS.len())]
    Fields { row: usize, got: usize },
    #[error("row {row}: field {field} = {value:?} is not a valid number")]
    Number { row: usize, field: &'static str, value: String },
}

/// Parses what tmux expanded (the helper's standard input).
pub fn parse(text: &str) -> Result<PaneTable, ParseError> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let mut records = text.split(RS);
    let header = records.next().filter(|h| !h.is_empty()).ok_or(ParseError::NoHeader)?;
    let h: Vec<&str> = header.split(US).collect();
    if h.len() != SERVER_FIELDS.len() {
        return Err(ParseError::Header(h.len()));
    }
    let server = ServerRow {
        pid: num(0, "pid", h[0])?,
        start_time: num(0, "start_time", h[1])?,
        version: h[2].to_string(),
        socket_path: h[3].to_string(),
        broker_option: h[4].to_string(),
        enable_tools_option: h[5].to_string(),
        safety_option: h[6].to_string(),
        toolset_option: h[7].to_string(),
    };
    let mut rows = Vec::new();
    for (i, rec) in records.enumerate() {
        if rec.is_empty() {
            continue;
        }
        let f: Vec<&str> = rec.split(US).collect();
        if f.len() != PANE_FIELDS.len() {
            return Err(ParseError::Fields { row: i, got: f.len() });
        }
        rows.push(PaneRow {
            session_id: f[0].to_string(),
            session_name: f[1].to_string(),
            window_id: f[2].to_string(),
            window_index: num(i, "window_index", f[3])?,
            window_name: f[4].to_string(),
            window_active: f[5] == "1",
            pane_id: f[6].to_string(),
            pane_index: num(i, "pane_index", f[7])?,
            pane_active: f[8] == "1",
            pane_pid: num(i, "pane_pid", f[9])?,
            pane_dead: f[10] == "1",
            pane_dead_status: if f[11].is_empty() { None } else { Some(num(i, "pane_dead_status", f[11])?) },
            width: num(i, "pane_width", f[12])?,
            height: num(i, "pane_height", f[13])?,
            history_size: num(i, "history_size", f[14])?,
            history_limit: num(i, "history_limit", f[15])?,
            current_command: f[16].to_string(),
            current_path: f[17].to_string(),
            title: f[18].to_string(),
            tty: f[19].to_string(),
            session_created: num(i, "session_created", f[20])?,
            session_attached: num(i, "session_attached", f[21])?,
            session_windows: num(i, "session_windows", f[22])?,
            window_width: num(i, "window_width", f[23])?,
            window_height: num(i, "window_height", f[24])?,
            window_panes: num(i, "window_panes", f[25])?,
            window_layout: f[26].to_string(),
            cursor_x: num_or_zero(i, "cursor_x", f[27])?,
            cursor_y: num_or_zero(i, "cursor_y", f[28])?,
            pane_in_mode: num_or_zero(i, "pane_in_mode", f[29])?,
            scroll_position: num_or_zero(i, "scroll_position", f[30])?,
            window_zoomed: f[31] == "1",
        });
    }
    Ok(PaneTable { server, rows })
}

fn num<T: std::str::FromStr>(row: usize, field: &'static str, value: &str) -> Result<T, ParseError> {
    value.parse().map_err(|_| ParseError::Number { row, field, value: value.to_string() })
}

/// A number that tmux leaves empty when it does not apply (0 then).
fn num_or_zero<T: std::str::FromStr + Default>(row: usize, field: &'static str, value: &str) -> Result<T, ParseError> {
    if value.is_empty() {
        Ok(T::default())
    } else {
        num(row, field, value)
    }
}

/// What `list-commands -F` printed, with the row and field separators back:
/// tmux 3.4 and 3.5 print command output strvis-escaped, so the separators
/// arrive as `\037` and `\036`. A free-text value holding that literal text
/// changes a row's field count, which the parsers refuse, so it cannot shift a
/// column silently (the registry itself reads through the run-shell feed on
/// those versions, which is not escaped).
pub fn unvis_separators(version: &str, text: &str) -> String {
    let escaped = crate::tmux::version_at_least(version, 3, 4) && !crate::tmux::version_at_least(version, 3, 6);
    if escaped {
        text.replace("\\037", &US.to_string()).replace("\\036", &RS.to_string())
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pane: &str, sess: &str) -> String {
        let f = [sess, "main", "@1", "0", "zsh", "1", pane, "0", "1", "123", "0", "", "80", "24", "5", "2000", "zsh", "/tmp", "host", "/dev/pts/3", "1700000000", "1", "2", "80", "24", "1", "b25d,80x24,0,0,0", "7", "3", "0", "", "0"];
        f.join(&US.to_string())
    }

    #[test]
    fn parses_header_and_rows() {
        let text = format!("42{US}1700000000{US}3.3a{US}/tmp/s{US}{US}tmux_capture{US}mutating{US}python{RS}{}{RS}{}{RS}\n", row("%1", "$0"), row("%1", "$2"));
        let t = parse(&text).unwrap();
        assert_eq!(t.server.pid, 42);
        assert_eq!(t.server.version, "3.3a");
        assert_eq!(t.server.broker_option, "");
        assert_eq!(t.server.enable_tools_option, "tmux_capture");
        assert_eq!((t.server.safety_option.as_str(), t.server.toolset_option.as_str()), ("mutating", "python"));
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[1].session_id, "$2");
        assert_eq!(t.rows[0].pane_pid, 123);
        assert_eq!(t.rows[0].pane_dead_status, None);
        assert_eq!(t.rows[0].current_path, "/tmp");
        assert_eq!((t.rows[0].cursor_x, t.rows[0].cursor_y, t.rows[0].pane_in_mode), (7, 3, 0));
        assert_eq!(t.rows[0].scroll_position, 0, "empty outside copy mode");
        assert!(!t.rows[0].window_zoomed);
    }

    #[test]
    fn rejects_misaligned_rows_and_bad_numbers() {
        let text = format!("42{US}1{US}3.3a{US}/s{US}{US}{US}{US}{RS}a{US}b{RS}");
        assert_eq!(parse(&text), Err(ParseError::Fields { row: 0, got: 2 }));
        let bad = row("%1", "$0").replace("123", "x");
        let text = format!("42{US}1{US}3.3a{US}/s{US}{US}{US}{US}{RS}{bad}{RS}");
        assert!(matches!(parse(&text), Err(ParseError::Number { field: "pane_pid", .. })));
        assert_eq!(parse(""), Err(ParseError::NoHeader));
    }

    #[test]
    fn run_shell_command_escapes_hashes_outside_the_format() {
        let cmd = run_shell_command(Path::new("/opt/#x/tmux-mcp"), Path::new("/run/b.sock"), 7);
        assert!(cmd.starts_with("exec '/opt/##x/tmux-mcp' feed --broker '/run/b.sock' --req 7 <<'TMUXMCP_"));
        assert!(cmd.contains("#{S:#{W:#{P:"));
        let lines: Vec<&str> = cmd.lines().collect();
        let delim = lines.last().unwrap();
        assert!(lines[0].ends_with(&format!("<<'{delim}'")));
    }
}
