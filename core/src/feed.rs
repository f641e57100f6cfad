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
//! Fields are separated by ASCII US (0x1f) and records by RS (0x1e). Free text
//! is either counted (`#{n:x}:#{x}`, read by byte length) or passed through
//! tmux's `s///` modifier, which replaces those two bytes, so a window name
//! cannot shift the columns (see [`table_format`]).
//!
//! A listing page reads a shaped table ([`Shape`]: how deep, which
//! sessions). [`parse`] reads the table; [`run_shell_command`] spells the
//! `run-shell` here-document.

use crate::sys;
use crate::tmux::{format_literal, shell_quote};
pub use crate::wire::Depth;
use crate::wire::{PaneRow, PaneTable, ServerRow};
use std::path::Path;

pub const US: char = '\u{1f}';
pub const RS: char = '\u{1e}';

/// Server-wide fields, in wire order.
const SERVER_FIELDS: &[&str] = &[
    "pid",
    "start_time",
    "version",
    "socket_path",
    "@mcp-broker-socket",
    "@mcp-enable-tools",
    "@mcp-safety",
    "@mcp-toolset",
    "@mcp-request-timeout",
    "@mcp-confirm",
    "@mcp-scope",
];

/// How a field is printed and read back.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Printed as is: ids, numbers, flags, and text tmux itself makes (the
    /// layout string, the `/dev/pts/N` path), none of which can hold a separator.
    Plain,
    /// Free text printed as `LENGTH:TEXT` (`#{n:…}` is its length in bytes), so
    /// any byte can be in it; the parser takes exactly that many bytes, then
    /// replaces the separators and NL with `?` (a byte scan). Cheaper in tmux
    /// than `s///`, which compiles a regex for every value, but it expands the
    /// value twice: used where that second expansion is cheap.
    Counted,
    /// Free text passed through tmux's `s/[US RS NL]/?/` (see [`field`]): the
    /// value is expanded once, which is cheaper for the two fields that read
    /// `/proc` on every expansion (current command and path). Printed as is
    /// in a [`Spelling::Bare`] read; never a record's last field, so a
    /// separator inside always changes the record's field count.
    Replaced,
}

/// How a read prints the `Replaced` fields (current command and path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// Through `s/[US RS NL]/?/`: no value can shift a column, nor end a line
    /// of the run-shell feed's here-document. What the run-shell feed and
    /// every one-off read (the start-up probe, `doctor`) use.
    Careful,
    /// As is: tmux compiles no regex per value, ~4 ms less of its time per
    /// read of 1,000 panes. A value holding US or RS makes its record's field
    /// count wrong, which the parser refuses, and the reader then reads again
    /// `Careful`; a NL is read as `?`. Only for `list-commands` output.
    Bare,
}
use Kind::{Counted, Plain, Replaced};

/// Session fields, printed once per session (in the `#{S:…}` part).
const SESSION_FIELDS: &[(&str, Kind)] = &[
    ("session_id", Plain),
    ("session_name", Counted),
    ("session_created", Plain),
    ("session_attached", Plain),
    ("session_windows", Plain),
];

/// Window fields, printed once per window link (in the `#{W:…}` part). The
/// pane count is not among them: it is the number of pane records that follow
/// (`window_panes` counts the list the `#{P:…}` loop walks).
const WINDOW_FIELDS: &[(&str, Kind)] = &[
    ("window_id", Plain),
    ("window_index", Plain),
    ("window_name", Counted),
    ("window_active", Plain),
    ("window_width", Plain),
    ("window_height", Plain),
    ("window_layout", Plain),
    ("window_zoomed_flag", Plain),
];

/// Pane fields, printed once per pane placement (in the `#{P:…}` part).
const PANE_FIELDS: &[(&str, Kind)] = &[
    ("pane_id", Plain),
    ("pane_index", Plain),
    ("pane_active", Plain),
    ("pane_pid", Plain),
    ("pane_width", Plain),
    ("pane_height", Plain),
    ("history_size", Plain),
    ("history_limit", Plain),
    ("pane_current_command", Replaced),
    ("pane_current_path", Replaced),
    ("pane_title", Counted),
    ("pane_tty", Plain),
    ("cursor_x", Plain),
    ("cursor_y", Plain),
    ("pane_in_mode", Plain),
    // Empty unless the pane is in copy mode.
    ("scroll_position", Plain),
];

/// A session above panes read brief or placed: what names it.
const SHORT_SESSION_FIELDS: &[(&str, Kind)] = &[("session_id", Plain), ("session_name", Counted)];

/// A window above panes read brief or placed: what places a pane in it.
const SHORT_WINDOW_FIELDS: &[(&str, Kind)] = &[("window_id", Plain), ("window_index", Plain)];

/// A pane read brief (`b` records): what `list_panes`' brief detail shows,
/// then the dead field.
const BRIEF_PANE_FIELDS: &[(&str, Kind)] = &[
    ("pane_id", Plain),
    ("pane_index", Plain),
    ("pane_pid", Plain),
    ("pane_current_command", Replaced),
    ("pane_current_path", Replaced),
];

/// `pane_dead` and `pane_dead_status` in one field (one expansion for a live
/// pane): empty while the pane lives, `D` then the exit status (empty when it
/// was killed by a signal) once it is dead.
const DEAD_FIELD: &str = "#{?pane_dead,D#{pane_dead_status},}";

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

fn spec(name: &str, kind: Kind, spelling: Spelling) -> String {
    match kind {
        Plain => field(name, false),
        Replaced => field(name, spelling == Spelling::Careful),
        Counted => format!("#{{n:{name}}}:#{{{name}}}"),
    }
}

/// One record: its tag, then its fields, each ended by US, the last by RS.
fn record(tag: char, fields: impl Iterator<Item = String>) -> String {
    let mut s = tag.to_string();
    for f in fields {
        s.push(US);
        s.push_str(&f);
    }
    s.push(RS);
    s
}

/// The tmux format that expands to the whole table: the server header, then
/// for each session an `S` record, for each of its windows a `W` record and
/// for each pane of that window a `P` record. Each field is printed at the
/// level it belongs to, so a session's fields are expanded once per session,
/// not once per pane.
pub fn table_format() -> String {
    shaped_format(&Shape::FULL, Spelling::Careful)
}

/// How much of the table a read expands. Every pane is in every read (a
/// listing's total and cursor need them all); what costs tmux is the fields,
/// above all `pane_current_command` and `pane_current_path`, which read
/// `/proc` for each pane: on 1,000 panes the whole table is ~50 ms of tmux's
/// time, the panes of ten sessions in full and the rest placed ~9 ms.
#[derive(Debug, Clone, Copy)]
pub struct Shape<'a> {
    /// What is read of the panes of the sessions in `only`.
    pub depth: Depth,
    /// The sessions (ids) whose panes are read at `depth`; every other pane
    /// is read `Placed`. `None`: every session.
    pub only: Option<&'a [String]>,
}

impl Shape<'_> {
    /// The whole table.
    pub const FULL: Shape<'static> = Shape {
        depth: Depth::Full,
        only: None,
    };
}

/// Session, window and pane records at `depth`: `S`/`W`/`P` in full; `s`
/// (id, name) and `w` (id, index) above a brief `b` or a placed `p` pane.
fn session_body(depth: Depth, spelling: Spelling) -> String {
    let spec = |(f, k): &(&str, Kind)| spec(f, *k, spelling);
    let short_s = record('s', SHORT_SESSION_FIELDS.iter().map(spec));
    let short_w = record('w', SHORT_WINDOW_FIELDS.iter().map(spec));
    let (s, w, p) = match depth {
        Depth::Full => (
            record('S', SESSION_FIELDS.iter().map(spec)),
            record('W', WINDOW_FIELDS.iter().map(spec)),
            record(
                'P',
                PANE_FIELDS
                    .iter()
                    .map(spec)
                    .chain(std::iter::once(DEAD_FIELD.to_string())),
            ),
        ),
        Depth::Brief => (
            short_s,
            short_w,
            record(
                'b',
                BRIEF_PANE_FIELDS
                    .iter()
                    .map(spec)
                    .chain(std::iter::once(DEAD_FIELD.to_string())),
            ),
        ),
        Depth::Placed => (
            short_s,
            short_w,
            record('p', std::iter::once(field("pane_id", false))),
        ),
    };
    format!("{s}#{{W:{w}#{{P:{p}}}}}")
}

/// The most sessions a shape names one by one (about 3 kB of pattern); a
/// shape naming more reads every session at its depth.
pub const ONLY_MAX: usize = 500;

/// The table format of `shape` (see [`table_format`]). With `only`, each
/// session's records are chosen by one regex match on its id, so the panes
/// outside it cost tmux the placed records only.
pub fn shaped_format(shape: &Shape, spelling: Spelling) -> String {
    let header: Vec<String> = SERVER_FIELDS.iter().map(|f| field(f, true)).collect();
    let body = match shape.only {
        None => session_body(shape.depth, spelling),
        Some(only) => {
            // Ids are `$N`; anything else (never from tmux) matches nothing.
            let numbers: Vec<&str> = only
                .iter()
                .filter_map(|id| id.strip_prefix('$'))
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .collect();
            if numbers.is_empty() || shape.depth == Depth::Placed {
                session_body(Depth::Placed, spelling)
            } else if numbers.len() > ONLY_MAX {
                // The command must stay far within tmux's message size (16 kB).
                session_body(shape.depth, spelling)
            } else {
                format!(
                    "#{{?#{{m/r:^\\$({})$,#{{session_id}}}},{},{}}}",
                    numbers.join("|"),
                    session_body(shape.depth, spelling),
                    session_body(Depth::Placed, spelling)
                )
            }
        }
    };
    format!("{}{RS}#{{S:{body}}}", header.join(&US.to_string()))
}

/// The `run-shell` argument that makes tmux hand the table to the helper.
pub fn run_shell_command(helper: &Path, broker_socket: &Path, req: u64, format: &str) -> String {
    let delim = format!("TMUXMCP_{}", sys::random_hex(8));
    let head = format!(
        "exec {} feed --broker {} --req {req} <<'{delim}'",
        shell_quote(&helper.display().to_string()),
        shell_quote(&broker_socket.display().to_string()),
    );
    // Only the table format may be expanded; everything else is literal.
    format!(
        "{}\n{}\n{}\n",
        format_literal(&head),
        format,
        format_literal(&delim)
    )
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParseError {
    #[error("the table has no server header")]
    NoHeader,
    #[error("server header has {0} fields, expected {expected}", expected = SERVER_FIELDS.len())]
    Header(usize),
    #[error("record {row}: {why}")]
    Record { row: usize, why: String },
    #[error("record {row}: field {field} = {value:?} is not a valid number")]
    Number {
        row: usize,
        field: &'static str,
        value: String,
    },
}

const US_B: u8 = US as u8;
const RS_B: u8 = RS as u8;

/// A cursor over the records after the header.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    row: usize,
}

impl<'a> Reader<'a> {
    fn bad(&self, why: impl Into<String>) -> ParseError {
        ParseError::Record {
            row: self.row,
            why: why.into(),
        }
    }

    /// One field of `kind` and the byte that ended it (US or RS).
    fn field(&mut self, name: &str, kind: Kind) -> Result<(&'a [u8], u8), ParseError> {
        let rest = &self.b[self.pos..];
        let (value, used) = match kind {
            Plain | Replaced => {
                let end = rest
                    .iter()
                    .position(|&c| c == US_B || c == RS_B)
                    .ok_or_else(|| self.bad(format!("{name} is not ended")))?;
                (&rest[..end], end)
            }
            Counted => {
                let colon = rest
                    .iter()
                    .take(21)
                    .position(|&c| c == b':')
                    .ok_or_else(|| self.bad(format!("{name} has no length")))?;
                let len: usize = std::str::from_utf8(&rest[..colon])
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| self.bad(format!("{name} has no valid length")))?;
                let start = colon + 1;
                if rest.len() < start + len + 1 {
                    return Err(self.bad(format!("{name} is longer than the table")));
                }
                (&rest[start..start + len], start + len)
            }
        };
        let end = rest[used];
        if end != US_B && end != RS_B {
            return Err(self.bad(format!("{name} is not followed by a separator")));
        }
        self.pos += used + 1;
        Ok((value, end))
    }

    /// The fields of one record, after its tag, as byte strings.
    fn record(
        &mut self,
        fields: &[(&str, Kind)],
        extra: usize,
    ) -> Result<Vec<&'a [u8]>, ParseError> {
        if self.b.get(self.pos) != Some(&US_B) {
            return Err(self.bad("the tag is not followed by a separator"));
        }
        self.pos += 1;
        let n = fields.len() + extra;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let (name, kind) = fields.get(i).copied().unwrap_or(("pane_dead", Plain));
            let (v, end) = self.field(name, kind)?;
            out.push(v);
            let want = if i + 1 == n { RS_B } else { US_B };
            if end != want {
                return Err(self.bad(format!(
                    "{} fields, expected {n}",
                    if end == RS_B {
                        (i + 1).to_string()
                    } else {
                        format!("more than {n}")
                    }
                )));
            }
        }
        Ok(out)
    }
}

fn text(v: &[u8]) -> String {
    String::from_utf8_lossy(v).into_owned()
}

/// Free text (read by length, or a `Replaced` field): the separators and NL
/// become `?`, as tmux's `s///` does in a careful read, so no consumer sees them.
fn counted_text(v: &[u8]) -> String {
    if v.iter().any(|&c| c == US_B || c == RS_B || c == b'\n') {
        let clean: Vec<u8> = v
            .iter()
            .map(|&c| {
                if c == US_B || c == RS_B || c == b'\n' {
                    b'?'
                } else {
                    c
                }
            })
            .collect();
        text(&clean)
    } else {
        text(v)
    }
}

fn num<T: std::str::FromStr>(
    row: usize,
    field: &'static str,
    value: &[u8],
) -> Result<T, ParseError> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| ParseError::Number {
            row,
            field,
            value: text(value),
        })
}

/// A number that tmux leaves empty when it does not apply (0 then).
fn num_or_zero<T: std::str::FromStr + Default>(
    row: usize,
    field: &'static str,
    value: &[u8],
) -> Result<T, ParseError> {
    if value.is_empty() {
        Ok(T::default())
    } else {
        num(row, field, value)
    }
}

struct SessionPart {
    id: String,
    name: String,
    created: u64,
    attached: u64,
    windows: u64,
}

struct WindowPart {
    id: String,
    index: i64,
    name: String,
    active: bool,
    width: u32,
    height: u32,
    layout: String,
    zoomed: bool,
}

/// `D` and the exit status (none when killed by a signal) for a dead pane,
/// empty for a live one (see [`DEAD_FIELD`]).
fn dead_field(row: usize, v: &[u8]) -> Result<(bool, Option<i32>), ParseError> {
    match v.split_first() {
        None => Ok((false, None)),
        Some((b'D', [])) => Ok((true, None)),
        Some((b'D', status)) => Ok((true, Some(num(row, "pane_dead_status", status)?))),
        Some(_) => Err(ParseError::Number {
            row,
            field: "pane_dead",
            value: text(v),
        }),
    }
}

/// A row with what its session and window records gave; the pane's own
/// fields are filled by its record.
fn placed_row(s: &SessionPart, w: &WindowPart) -> PaneRow {
    PaneRow {
        depth: Depth::Placed,
        session_id: s.id.clone(),
        session_name: s.name.clone(),
        window_id: w.id.clone(),
        window_index: w.index,
        window_name: w.name.clone(),
        window_active: w.active,
        pane_id: String::new(),
        pane_index: 0,
        pane_active: false,
        pane_pid: 0,
        pane_dead: false,
        pane_dead_status: None,
        width: 0,
        height: 0,
        history_size: 0,
        history_limit: 0,
        current_command: String::new(),
        current_path: String::new(),
        title: String::new(),
        tty: String::new(),
        session_created: s.created,
        session_attached: s.attached,
        session_windows: s.windows,
        window_width: w.width,
        window_height: w.height,
        window_panes: 0,
        window_layout: w.layout.clone(),
        cursor_x: 0,
        cursor_y: 0,
        pane_in_mode: 0,
        scroll_position: 0,
        window_zoomed: w.zoomed,
    }
}

/// Parses what tmux expanded (`list-commands` output or the helper's standard
/// input), as bytes: counted fields are measured in bytes, and text that is
/// not UTF-8 is made so per field.
pub fn parse(input: impl AsRef<[u8]>) -> Result<PaneTable, ParseError> {
    let b = input.as_ref();
    let b = b.strip_suffix(b"\n").unwrap_or(b);
    let (server, head_end) = parse_header(b)?;
    let mut r = Reader {
        b,
        pos: (head_end + 1).min(b.len()),
        row: 0,
    };
    let mut rows: Vec<PaneRow> = Vec::new();
    let (mut session, mut window): (Option<SessionPart>, Option<WindowPart>) = (None, None);
    // Rows of the current window start here; its pane count is set when it ends.
    let mut window_start = 0;
    let close_window = |rows: &mut Vec<PaneRow>, start: usize| {
        let n = (rows.len() - start) as u64;
        rows[start..]
            .iter_mut()
            .for_each(|row| row.window_panes = n);
    };
    while r.pos < b.len() {
        let tag = b[r.pos];
        r.pos += 1;
        match tag {
            b'S' | b's' => {
                close_window(&mut rows, window_start);
                window = None;
                session = Some(session_record(&mut r, tag)?);
            }
            b'W' | b'w' => {
                if session.is_none() {
                    return Err(r.bad("a window record before any session record"));
                }
                close_window(&mut rows, window_start);
                window_start = rows.len();
                window = Some(window_record(&mut r, tag)?);
            }
            b'P' | b'b' | b'p' => {
                let (Some(s), Some(w)) = (&session, &window) else {
                    return Err(r.bad("a pane record before any window record"));
                };
                let row = pane_record(&mut r, tag, placed_row(s, w))?;
                rows.push(row);
            }
            other => return Err(r.bad(format!("unknown record tag {:?}", other as char))),
        }
        r.row += 1;
    }
    close_window(&mut rows, window_start);
    Ok(PaneTable { server, rows })
}

/// The server row, from the header before the first record separator, and
/// where that header ends. Its own step: the header is one fixed record, not
/// one of the tagged ones that follow.
fn parse_header(b: &[u8]) -> Result<(ServerRow, usize), ParseError> {
    let head_end = b.iter().position(|&c| c == RS_B).unwrap_or(b.len());
    if head_end == 0 {
        return Err(ParseError::NoHeader);
    }
    let header = String::from_utf8_lossy(&b[..head_end]);
    let h: Vec<&str> = header.split(US).collect();
    if h.len() != SERVER_FIELDS.len() {
        return Err(ParseError::Header(h.len()));
    }
    let server = ServerRow {
        pid: num(0, "pid", h[0].as_bytes())?,
        start_time: num(0, "start_time", h[1].as_bytes())?,
        version: h[2].to_string(),
        socket_path: h[3].to_string(),
        broker_option: h[4].to_string(),
        enable_tools_option: h[5].to_string(),
        safety_option: h[6].to_string(),
        toolset_option: h[7].to_string(),
        request_timeout_option: h[8].to_string(),
        confirm_option: h[9].to_string(),
        scope_option: h[10].to_string(),
    };
    Ok((server, head_end))
}

/// A session record: `S` (full) or `s` (id and name only, the shapes that
/// need no more).
fn session_record(r: &mut Reader<'_>, tag: u8) -> Result<SessionPart, ParseError> {
    let i = r.row;
    Ok(if tag == b'S' {
        let f = r.record(SESSION_FIELDS, 0)?;
        SessionPart {
            id: text(f[0]),
            name: counted_text(f[1]),
            created: num(i, "session_created", f[2])?,
            attached: num(i, "session_attached", f[3])?,
            windows: num(i, "session_windows", f[4])?,
        }
    } else {
        let f = r.record(SHORT_SESSION_FIELDS, 0)?;
        SessionPart {
            id: text(f[0]),
            name: counted_text(f[1]),
            created: 0,
            attached: 0,
            windows: 0,
        }
    })
}

/// A window record: `W` (full) or `w` (id and index only).
fn window_record(r: &mut Reader<'_>, tag: u8) -> Result<WindowPart, ParseError> {
    let i = r.row;
    Ok(if tag == b'W' {
        let f = r.record(WINDOW_FIELDS, 0)?;
        WindowPart {
            id: text(f[0]),
            index: num(i, "window_index", f[1])?,
            name: counted_text(f[2]),
            active: f[3] == b"1",
            width: num(i, "window_width", f[4])?,
            height: num(i, "window_height", f[5])?,
            layout: text(f[6]),
            zoomed: f[7] == b"1",
        }
    } else {
        let f = r.record(SHORT_WINDOW_FIELDS, 0)?;
        WindowPart {
            id: text(f[0]),
            index: num(i, "window_index", f[1])?,
            name: String::new(),
            active: false,
            width: 0,
            height: 0,
            layout: String::new(),
            zoomed: false,
        }
    })
}

/// A pane record: `P` (full), `b` (brief) or `p` (the id only), filled into
/// `row`, which its session and window records placed.
fn pane_record(r: &mut Reader<'_>, tag: u8, mut row: PaneRow) -> Result<PaneRow, ParseError> {
    let i = r.row;
    match tag {
        b'P' => {
            let f = r.record(PANE_FIELDS, 1)?;
            (row.pane_dead, row.pane_dead_status) = dead_field(i, f[16])?;
            row = PaneRow {
                depth: Depth::Full,
                pane_id: text(f[0]),
                pane_index: num(i, "pane_index", f[1])?,
                pane_active: f[2] == b"1",
                pane_pid: num(i, "pane_pid", f[3])?,
                width: num(i, "pane_width", f[4])?,
                height: num(i, "pane_height", f[5])?,
                history_size: num(i, "history_size", f[6])?,
                history_limit: num(i, "history_limit", f[7])?,
                current_command: counted_text(f[8]),
                current_path: counted_text(f[9]),
                title: counted_text(f[10]),
                tty: text(f[11]),
                cursor_x: num_or_zero(i, "cursor_x", f[12])?,
                cursor_y: num_or_zero(i, "cursor_y", f[13])?,
                pane_in_mode: num_or_zero(i, "pane_in_mode", f[14])?,
                scroll_position: num_or_zero(i, "scroll_position", f[15])?,
                ..row
            };
        }
        b'b' => {
            let f = r.record(BRIEF_PANE_FIELDS, 1)?;
            (row.pane_dead, row.pane_dead_status) = dead_field(i, f[5])?;
            row.depth = Depth::Brief;
            row.pane_id = text(f[0]);
            row.pane_index = num(i, "pane_index", f[1])?;
            row.pane_pid = num(i, "pane_pid", f[2])?;
            row.current_command = counted_text(f[3]);
            row.current_path = counted_text(f[4]);
        }
        _ => {
            let f = r.record(&[("pane_id", Plain)], 0)?;
            row.pane_id = text(f[0]);
        }
    }
    Ok(row)
}

/// What `list-commands -F` printed, with the row and field separators back:
/// tmux 3.4 and 3.5 print command output strvis-escaped, so the separators
/// arrive as `\037` and `\036`. A free-text value holding that literal text
/// changes a row's field count, which the parsers refuse, so it cannot shift a
/// column silently (the registry itself reads through the run-shell feed on
/// those versions, which is not escaped).
pub fn unvis_separators(version: &str, text: &str) -> String {
    let escaped = crate::tmux::version_at_least(version, 3, 4)
        && !crate::tmux::version_at_least(version, 3, 6);
    if escaped {
        text.replace("\\037", &US.to_string())
            .replace("\\036", &RS.to_string())
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "42\u{1f}1700000000\u{1f}3.3a\u{1f}/tmp/s\u{1f}\u{1f}tmux_capture\u{1f}mutating\u{1f}python\u{1f}30\u{1f}on\u{1f}session\u{1e}";

    fn rec(tag: char, fields: &[&str]) -> String {
        let mut s = tag.to_string();
        for f in fields {
            s.push(US);
            s.push_str(f);
        }
        s.push(RS);
        s
    }

    /// A counted field as tmux prints `#{n:x}:#{x}`.
    fn counted(v: &str) -> String {
        format!("{}:{v}", v.len())
    }

    fn sess(id: &str, name: &str) -> String {
        rec('S', &[id, &counted(name), "1700000000", "1", "2"])
    }

    fn win(id: &str, index: &str, name: &str) -> String {
        rec(
            'W',
            &[
                id,
                index,
                &counted(name),
                "1",
                "80",
                "24",
                "b25d,80x24,0,0,0",
                "0",
            ],
        )
    }

    fn pane(id: &str, pid: &str, dead: &str) -> String {
        rec(
            'P',
            &[
                id,
                "0",
                "1",
                pid,
                "80",
                "24",
                "5",
                "2000",
                "zsh",
                "/tmp",
                &counted("host"),
                "/dev/pts/3",
                "7",
                "3",
                "0",
                "",
                dead,
            ],
        )
    }

    #[test]
    fn parses_header_and_rows() {
        let nasty = "a\u{1f}b\u{1e}c\nd";
        let text = format!(
            "{HEAD}{}{}{}{}{}{}{}\n",
            sess("$0", nasty),
            win("@1", "0", "zsh"),
            pane("%1", "123", ""),
            pane("%2", "124", "D"),
            sess("$2", "two"),
            win("@1", "3", nasty),
            pane("%1", "123", "")
        );
        let t = parse(&text).unwrap();
        assert_eq!(t.server.pid, 42);
        assert_eq!(t.server.version, "3.3a");
        assert_eq!(t.server.broker_option, "");
        assert_eq!(t.server.enable_tools_option, "tmux_capture");
        assert_eq!(
            (
                t.server.safety_option.as_str(),
                t.server.toolset_option.as_str()
            ),
            ("mutating", "python")
        );
        assert_eq!(t.server.request_timeout_option, "30");
        assert_eq!(t.server.confirm_option, "on");
        assert_eq!(t.server.scope_option, "session");
        assert_eq!(t.rows.len(), 3);
        assert_eq!(
            t.rows[0].session_name, "a?b?c?d",
            "separators and NL in counted text become ?"
        );
        assert_eq!(
            (
                t.rows[2].session_id.as_str(),
                t.rows[2].window_index,
                t.rows[2].window_name.as_str()
            ),
            ("$2", 3, "a?b?c?d")
        );
        assert_eq!(t.rows[0].pane_pid, 123);
        assert_eq!(
            (t.rows[0].pane_dead, t.rows[0].pane_dead_status),
            (false, None)
        );
        assert_eq!(
            (t.rows[1].pane_dead, t.rows[1].pane_dead_status),
            (true, None),
            "dead by a signal: no status"
        );
        assert_eq!(
            (
                t.rows[0].window_panes,
                t.rows[1].window_panes,
                t.rows[2].window_panes
            ),
            (2, 2, 1),
            "pane count = pane records of the window"
        );
        assert_eq!(
            (t.rows[2].session_created, t.rows[2].session_windows),
            (1700000000, 2)
        );
        assert_eq!(t.rows[0].current_path, "/tmp");
        assert_eq!(t.rows[0].title, "host");
        assert_eq!(
            (
                t.rows[0].cursor_x,
                t.rows[0].cursor_y,
                t.rows[0].pane_in_mode
            ),
            (7, 3, 0)
        );
        assert_eq!(t.rows[0].scroll_position, 0, "empty outside copy mode");
        assert!(!t.rows[0].window_zoomed);
        let dead = parse(format!(
            "{HEAD}{}{}{}",
            sess("$0", "s"),
            win("@1", "0", "w"),
            pane("%1", "9", "D3")
        ))
        .unwrap();
        assert_eq!(
            (dead.rows[0].pane_dead, dead.rows[0].pane_dead_status),
            (true, Some(3))
        );
    }

    #[test]
    fn rejects_misaligned_rows_and_bad_numbers() {
        let head = format!("{HEAD}{}{}", sess("$0", "s"), win("@1", "0", "w"));
        let short = parse(format!("{head}{}", rec('P', &["%1", "0"])));
        assert!(
            matches!(&short, Err(ParseError::Record { row: 2, why }) if why.contains("2 fields")),
            "{short:?}"
        );
        let bad = pane("%1", "x", "");
        assert!(matches!(
            parse(format!("{head}{bad}")),
            Err(ParseError::Number {
                field: "pane_pid",
                ..
            })
        ));
        assert!(matches!(
            parse(format!("{head}{}", pane("%1", "1", "X"))),
            Err(ParseError::Number {
                field: "pane_dead",
                ..
            })
        ));
        // A length that does not match the text leaves no separator where one must be.
        let lying = rec('S', &["$0", "1:ab", "1", "1", "1"]);
        assert!(matches!(
            parse(format!("{HEAD}{lying}")),
            Err(ParseError::Record { row: 0, .. })
        ));
        let overrun = format!("{HEAD}S{US}$0{US}99:ab{RS}");
        assert!(matches!(
            parse(overrun),
            Err(ParseError::Record { row: 0, .. })
        ));
        assert!(
            matches!(
                parse(format!("{HEAD}{}", pane("%1", "1", ""))),
                Err(ParseError::Record { row: 0, .. })
            ),
            "a pane outside any window"
        );
        assert!(matches!(
            parse(format!("{HEAD}X{US}{RS}")),
            Err(ParseError::Record { row: 0, .. })
        ));
        assert_eq!(parse(""), Err(ParseError::NoHeader));
    }

    #[test]
    fn the_format_prints_each_field_at_its_level() {
        let f = table_format();
        let (s, rest) = f.split_once("#{S:").unwrap().1.split_once("#{W:").unwrap();
        let (w, p) = rest.split_once("#{P:").unwrap();
        assert!(s.contains("#{session_created}") && !s.contains("window_") && !s.contains("pane_"));
        assert!(w.contains("#{window_layout}") && !w.contains("session_") && !w.contains("pane_"));
        assert!(p.contains("#{pane_pid}") && !p.contains("session_") && !p.contains("window_"));
        assert!(w.contains("#{n:window_name}:#{window_name}"));
    }

    #[test]
    fn run_shell_command_escapes_hashes_outside_the_format() {
        let cmd = run_shell_command(
            Path::new("/opt/#x/tmux-mcp"),
            Path::new("/run/b.sock"),
            7,
            &table_format(),
        );
        assert!(cmd.starts_with(
            "exec '/opt/##x/tmux-mcp' feed --broker '/run/b.sock' --req 7 <<'TMUXMCP_"
        ));
        assert!(cmd.contains(&table_format()));
        let lines: Vec<&str> = cmd.lines().collect();
        let delim = lines.last().unwrap();
        assert!(lines[0].ends_with(&format!("<<'{delim}'")));
    }

    #[test]
    fn brief_and_placed_records_fill_what_they_read() {
        let text = format!(
            "{HEAD}{}{}{}{}{}{}{}",
            rec('s', &["$0", &counted("one")]),
            rec('w', &["@1", "4"]),
            rec('b', &["%1", "2", "123", "vim", "/src", ""]),
            rec('b', &["%2", "3", "124", "sh", "/", "D1"]),
            sess("$2", "two"),
            win("@5", "0", "w"),
            pane("%5", "9", "")
        );
        let t = parse(
            format!(
                "{text}{}{}",
                rec('s', &["$3", &counted("x")]),
                rec('w', &["@6", "1"])
            ) + &rec('p', &["%6"]),
        )
        .unwrap();
        let depths: Vec<Depth> = t.rows.iter().map(|r| r.depth).collect();
        assert_eq!(
            depths,
            [Depth::Brief, Depth::Brief, Depth::Full, Depth::Placed]
        );
        let b = &t.rows[0];
        assert_eq!(
            (
                b.session_name.as_str(),
                b.window_index,
                b.pane_index,
                b.pane_pid
            ),
            ("one", 4, 2, 123)
        );
        assert_eq!(
            (b.current_command.as_str(), b.current_path.as_str()),
            ("vim", "/src")
        );
        assert_eq!(
            (t.rows[1].pane_dead, t.rows[1].pane_dead_status),
            (true, Some(1))
        );
        assert_eq!((t.rows[0].window_panes, t.rows[1].window_panes), (2, 2));
        let p = &t.rows[3];
        assert_eq!(
            (
                p.pane_id.as_str(),
                p.session_id.as_str(),
                p.window_id.as_str(),
                p.window_index
            ),
            ("%6", "$3", "@6", 1)
        );
        assert_eq!(
            (p.pane_pid, p.current_command.as_str()),
            (0, ""),
            "a placed pane's own fields are not read"
        );
        assert!(
            matches!(
                parse(format!(
                    "{HEAD}{}{}{}",
                    sess("$0", "s"),
                    rec('w', &["@1"]),
                    rec('p', &["%1"])
                )),
                Err(ParseError::Record { row: 1, .. })
            ),
            "a short window record is refused"
        );
    }

    #[test]
    fn a_shape_reads_its_sessions_at_its_depth_and_places_the_rest() {
        let careful = |depth, only: &[String]| {
            shaped_format(
                &Shape {
                    depth,
                    only: Some(only),
                },
                Spelling::Careful,
            )
        };
        let full = shaped_format(&Shape::FULL, Spelling::Careful);
        assert_eq!(full, table_format());
        assert!(!full.contains("m/r") && !full.contains("\u{1e}p"));
        let only = ["$3".to_string(), "$12".to_string(), "bogus".to_string()];
        let f = careful(Depth::Brief, &only);
        assert!(f.contains("#{?#{m/r:^\\$(3|12)$,#{session_id}},s"), "{f}");
        assert!(f.contains(&format!("{RS}#{{P:b{US}#{{pane_id}}")), "{f}");
        assert!(f.contains(&format!("#{{P:p{US}#{{pane_id}}{RS}}}")), "{f}");
        assert!(
            !f.contains("pane_title") && !f.contains("window_layout"),
            "brief reads no more than it shows"
        );
        let none: [String; 0] = [];
        let placed = careful(Depth::Full, &none);
        assert!(
            !placed.contains("m/r") && !placed.contains("pane_pid"),
            "{placed}"
        );
        let many: Vec<String> = (0..=ONLY_MAX).map(|n| format!("${n}")).collect();
        let all = careful(Depth::Full, &many);
        assert_eq!(
            all,
            table_format(),
            "too many sessions to name: all of them"
        );
        let most = careful(Depth::Full, &many[..ONLY_MAX]);
        assert!(most.contains("m/r") && most.len() < 8_000, "{}", most.len());
    }

    /// A bare read prints the current command and path as they are: a
    /// separator inside must make the table unparsable (never shift a
    /// column), which holds because neither is a record's last field.
    #[test]
    fn a_separator_in_a_bare_field_makes_the_table_unparsable() {
        let bare = shaped_format(&Shape::FULL, Spelling::Bare);
        let brief_bare = shaped_format(
            &Shape {
                depth: Depth::Brief,
                only: None,
            },
            Spelling::Bare,
        );
        for (format, tag) in [(&bare, 'P'), (&brief_bare, 'b')] {
            let start = format.find(&format!("#{{P:{tag}{US}")).unwrap();
            let record = &format[start..];
            let record = &record[..record.find(RS).unwrap()];
            assert!(
                record.ends_with(DEAD_FIELD),
                "the dead field ends {record:?}"
            );
        }
        assert!(
            bare.contains("#{pane_current_path}")
                && !bare.contains(&field("pane_current_path", true))
        );
        assert!(table_format().contains(&field("pane_current_path", true)));
        let head = format!("{HEAD}{}{}", sess("$0", "s"), win("@1", "0", "w"));
        let brief = |cmd: &str, path: &str| {
            format!(
                "{HEAD}{}{}{}",
                rec('s', &["$0", &counted("s")]),
                rec('w', &["@1", "0"]),
                rec('b', &["%1", "0", "9", cmd, path, ""])
            )
        };
        for nasty in ["a\u{1f}b", "a\u{1e}b", "a\u{1e}P\u{1f}%9"] {
            let mut p = pane("%1", "9", "");
            p = p.replacen("/tmp", nasty, 1);
            assert!(
                parse(format!("{head}{p}")).is_err(),
                "{nasty:?} in a P record"
            );
            assert!(
                parse(brief("sh", nasty)).is_err(),
                "{nasty:?} as a brief path"
            );
            assert!(
                parse(brief(nasty, "/")).is_err(),
                "{nasty:?} as a brief command"
            );
        }
        let t = parse(brief("sh", "/a\nb")).unwrap();
        assert_eq!(t.rows[0].current_path, "/a?b", "a NL is read as ?");
    }
}
