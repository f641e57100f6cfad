//! The msgpack messages spoken on the broker socket before MCP starts.
//!
//! Every connection to the broker opens with one length-prefixed msgpack frame
//! (`Envelope`) from the peer and one from the broker. The peer is one of:
//! the attach relay (after the reply, the stream carries MCP JSON-RPC lines), the
//! `feed` run-shell helper (pane table), the `cursor` key-binding helper, or
//! `status`. These types are defined here once and used by both crates.
//!
//! [`connect`] is the client side. [`is_live`] is the connect probe: the
//! broker's single-instance check and the relay's search use it.
//!
//! Frames are `u32` big-endian length + `rmp_serde::to_vec_named` bytes, so fields
//! are named on the wire and a newer peer can add optional fields.

use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};

/// Bumped when a message changes incompatibly. Both sides refuse other versions.
pub const WIRE_VERSION: u32 = 1;

/// Largest frame either side accepts (a pane table of thousands of panes fits).
pub const MAX_FRAME: usize = 8 * 1024 * 1024;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope<T> {
    pub version: u32,
    pub body: T,
}

/// First message from a peer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Hello {
    Mcp(McpHello),
    Feed(FeedMsg),
    Cursor(CursorRequest),
    Status,
}

/// The attach relay's opening: who is asking and what it may use.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct McpHello {
    /// A name for logs (the relay's parent process name).
    pub client_name: String,
    /// Extra tools to enable for this session (`--enable-tool`).
    pub enable_tools: Vec<String>,
    /// Requested scope; `None` means the default (session inside tmux, else server).
    pub scope: Option<Scope>,
    /// `--allow-self`: the caller's own pane may be typed into or closed.
    pub allow_self: bool,
    /// `$TMUX_PANE` of the relay, a hint only: the broker trusts process ancestry.
    pub tmux_pane_env: Option<String>,
    /// `--safety`: the highest tier of tools this session may use; `None` means
    /// `@mcp-safety`, else the broker's `--safety`, else read-only.
    #[serde(default)]
    pub safety: Option<Tier>,
    /// `--toolset`: whose spellings the libtmux family uses; `None` means
    /// `@mcp-toolset`, else the default.
    #[serde(default)]
    pub toolset: Option<Toolset>,
    /// `--confirm`: the kill, respawn and close tools ask the person first
    /// (MCP elicitation); `false` leaves it to `@mcp-confirm`.
    #[serde(default)]
    pub confirm: bool,
    /// Set when the session is opened by another server's broker for one of
    /// its agents (a tool call naming this server, issue 52): that server's
    /// socket path. With `scope` server such a session sees the whole
    /// server, and its tier is the stricter of `safety` (the agent's own) and
    /// this server's `@mcp-safety`, read-only when that is unset; with
    /// `scope` session (a session-scoped agent continuing the person's
    /// hand-off) it sees no pane and is read-only (broker `policy`).
    #[serde(default)]
    pub via: Option<String>,
}

/// Whose spellings of the libtmux family a session gets: the default
/// (libtmux-ts: camelCase) or tmux-python/libtmux-mcp's where they differ
/// (`capture_pane` with `pane_id`, `max_lines`, the truncation header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Toolset {
    #[default]
    Default,
    Python,
}

impl Toolset {
    pub fn as_str(self) -> &'static str {
        match self {
            Toolset::Default => "default",
            Toolset::Python => "python",
        }
    }

    pub fn parse(s: &str) -> Option<Toolset> {
        match s.trim() {
            "default" | "libtmux" | "typescript" => Some(Toolset::Default),
            "python" => Some(Toolset::Python),
            _ => None,
        }
    }
}

/// How much a tool may change (from its annotations): read-only, mutating
/// (changes state, nothing is lost) or destructive (input typed into
/// programs, entities killed). Ordered: a session at a tier may use every tool
/// at or below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    #[default]
    Readonly,
    Mutating,
    Destructive,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Readonly, Tier::Mutating, Tier::Destructive];

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Readonly => "readonly",
            Tier::Mutating => "mutating",
            Tier::Destructive => "destructive",
        }
    }

    /// The spelling of `@mcp-safety` and `--safety` (also accepts `read-only`).
    pub fn parse(s: &str) -> Option<Tier> {
        match s.trim() {
            "readonly" | "read-only" | "read_only" => Some(Tier::Readonly),
            "mutating" => Some(Tier::Mutating),
            "destructive" => Some(Tier::Destructive),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Session,
    Server,
}

/// A pane table from the `feed` helper, answering the broker's request `req`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FeedMsg {
    pub req: u64,
    pub table: Result<PaneTable, String>,
}

/// What tmux expanded for us: server facts plus one row per pane placement
/// (a pane whose window is linked into two sessions appears twice).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PaneTable {
    pub server: ServerRow,
    pub rows: Vec<PaneRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ServerRow {
    pub pid: u32,
    pub start_time: u64,
    pub version: String,
    pub socket_path: String,
    /// Current value of the `@mcp-broker-socket` server option ("" when unset).
    pub broker_option: String,
    /// Current value of `@mcp-enable-tools` (tools enabled for every session).
    pub enable_tools_option: String,
    /// Current value of `@mcp-safety` (the default tier of new sessions; "" when unset).
    #[serde(default)]
    pub safety_option: String,
    /// Current value of `@mcp-toolset` ("" when unset).
    #[serde(default)]
    pub toolset_option: String,
    /// Current value of `@mcp-request-timeout` (seconds; "" when unset).
    #[serde(default)]
    pub request_timeout_option: String,
    /// Current value of `@mcp-confirm` (`on`: every agent's destructive
    /// tools ask the person first; "" when unset).
    #[serde(default)]
    pub confirm_option: String,
    /// Current value of `@mcp-scope` (what an agent that says no `--scope`
    /// sees: `session` or `server`; "" when unset).
    #[serde(default)]
    pub scope_option: String,
}

/// How much of a pane a table read expanded (`feed::Shape`). Ordered: a pane
/// read at several placements takes its deepest row.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub enum Depth {
    /// Where it is only: pane id, its sessions (id, name), window id and index.
    Placed,
    /// What a brief listing shows: also pane index, pid, dead, command, path.
    Brief,
    /// Every field: what every reader but a listing page reads.
    #[default]
    Full,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PaneRow {
    /// The fields below that this read expanded; the rest are zero or empty.
    #[serde(default)]
    pub depth: Depth,
    pub session_id: String,
    pub session_name: String,
    pub window_id: String,
    pub window_index: i64,
    pub window_name: String,
    pub window_active: bool,
    pub pane_id: String,
    pub pane_index: i64,
    pub pane_active: bool,
    pub pane_pid: u32,
    pub pane_dead: bool,
    pub pane_dead_status: Option<i32>,
    pub width: u32,
    pub height: u32,
    pub history_size: u64,
    pub history_limit: u64,
    pub current_command: String,
    pub current_path: String,
    pub title: String,
    /// The pane's terminal (`/dev/pts/N`): its writes are the output events.
    pub tty: String,
    pub session_created: u64,
    pub session_attached: u64,
    pub session_windows: u64,
    pub window_width: u32,
    pub window_height: u32,
    pub window_panes: u64,
    pub window_layout: String,
    pub cursor_x: u32,
    pub cursor_y: u32,
    /// `pane_in_mode`: 1 while the pane is in copy (or another) mode.
    pub pane_in_mode: u32,
    /// `scroll_position` (copy mode only; 0 otherwise).
    pub scroll_position: i64,
    /// `window_zoomed_flag`.
    pub window_zoomed: bool,
}

/// The key binding's request: hand pane `pane_id` to an agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CursorRequest {
    pub pane_id: String,
}

/// First message from the broker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Reply {
    /// MCP may start; the stream now carries JSON-RPC lines.
    McpReady {
        session: u64,
    },
    FeedAccepted,
    Cursor(CursorReply),
    Status(Box<StatusReply>),
    Refused {
        reason: String,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CursorReply {
    /// The pane's reference as JSON text (`{"kind":"pane","id":..,"generation":..}`).
    pub reference: String,
    /// A tracking cursor when one could be made, else `None` with `note` saying why.
    pub cursor: Option<String>,
    pub note: Option<String>,
    /// Why the pane is not handed over (the helper says so and exits non-zero).
    #[serde(default)]
    pub refused: Option<String>,
    /// Which of the hooks the helper's own commands would fire are set
    /// (`after-set-buffer`, `after-display-message`, globally or in a
    /// session): the helper then leaves that command out.
    #[serde(default)]
    pub hooked: Vec<String>,
}

/// The hooks the key binding's helper would fire: `set-buffer` stores the
/// line, `display-message` shows it.
pub const HANDOFF_HOOKS: [&str; 2] = ["after-set-buffer", "after-display-message"];

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct StatusReply {
    pub broker_pid: u32,
    pub broker_socket: String,
    pub tmux_socket: String,
    pub generation: String,
    pub server_pid: u32,
    pub server_start_time: u64,
    pub tmux_version: String,
    pub uptime_seconds: f64,
    pub sessions_served: u64,
    pub sessions_open: u64,
    pub panes: u64,
    pub panes_tracked: u64,
    /// `(pane id, reason)` for panes without a process identity.
    pub panes_untracked: Vec<(String, String)>,
    pub option_published: String,
    /// How the broker reaches tmux (protocol client or exec; table read).
    pub tmux_access: String,
    /// tmux client invocations the broker has made since it started: each is
    /// one connection to the server carrying one command list (a capture's
    /// guard, hook check and rows travel together). A broker older than the
    /// field counted these as `tmux_commands` and sends none (`None`).
    #[serde(default)]
    pub tmux_connections: Option<u64>,
    /// The top-level tmux commands those lists carried (`a ; b` is two; the
    /// commands an `if-shell` runs are not counted).
    pub tmux_commands: u64,
    /// `tools/call` requests answered since it started (absent from a broker
    /// older than the field: 0).
    #[serde(default)]
    pub tool_calls: u64,
    /// Retained cursors and snapshot pages, and the heap bytes they hold
    /// (absent from a broker older than the field: 0).
    #[serde(default)]
    pub retained_entries: u64,
    #[serde(default)]
    pub retained_bytes: u64,
    /// Every pane's process as the broker sees it now, without asking tmux.
    pub processes: Vec<ProcessStatus>,
    pub log_file: String,
    pub enabled_tools: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct ProcessStatus {
    pub pane_id: String,
    pub pid: u32,
    pub process_generation: Option<String>,
    /// `running`, `exited`, `dead` (remain-on-exit) or `untracked`.
    pub state: String,
    pub note: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
    #[error("frame of {0} bytes exceeds the {MAX_FRAME}-byte limit")]
    TooLarge(usize),
    #[error("undecodable message: {0}")]
    Decode(String),
    #[error("wire version {0} is not {WIRE_VERSION}")]
    Version(u32),
}

pub fn encode<T: Serialize>(body: &T) -> Result<Vec<u8>, WireError> {
    let env = Envelope {
        version: WIRE_VERSION,
        body,
    };
    let payload = rmp_serde::to_vec_named(&env).map_err(|e| WireError::Decode(e.to_string()))?;
    if payload.len() > MAX_FRAME {
        return Err(WireError::TooLarge(payload.len()));
    }
    let mut out = Vec::with_capacity(4 + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

pub fn decode<T: for<'de> Deserialize<'de>>(payload: &[u8]) -> Result<T, WireError> {
    let env: Envelope<T> =
        rmp_serde::from_slice(payload).map_err(|e| WireError::Decode(e.to_string()))?;
    if env.version != WIRE_VERSION {
        return Err(WireError::Version(env.version));
    }
    Ok(env.body)
}

/// Blocking write of one frame (used by the helpers).
pub fn write_frame<T: Serialize>(w: &mut impl Write, body: &T) -> Result<(), WireError> {
    w.write_all(&encode(body)?)?;
    w.flush()?;
    Ok(())
}

/// Blocking read of one frame (used by the helpers).
pub fn read_frame<T: for<'de> Deserialize<'de>>(r: &mut impl Read) -> Result<T, WireError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(WireError::TooLarge(len));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf)?;
    decode(&buf)
}

/// Async read of one frame (used by the broker).
pub async fn read_frame_async<T, R>(r: &mut R) -> Result<T, WireError>
where
    T: for<'de> Deserialize<'de>,
    R: tokio::io::AsyncRead + Unpin,
{
    use tokio::io::AsyncReadExt;
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(WireError::TooLarge(len));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf).await?;
    decode(&buf)
}

pub async fn write_frame_async<T, W>(w: &mut W, body: &T) -> Result<(), WireError>
where
    T: Serialize,
    W: tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::AsyncWriteExt;
    w.write_all(&encode(body)?).await?;
    w.flush().await?;
    Ok(())
}

/// Whether a broker answers on `socket` (a live socket, not a stale file): a
/// connect probe, dropped at once, which the broker's accept loop takes as one.
pub fn is_live(socket: &std::path::Path) -> bool {
    std::os::unix::net::UnixStream::connect(socket).is_ok()
}

/// Connects to a broker and exchanges the hello; used by the helpers.
pub fn connect(
    socket: &std::path::Path,
    hello: &Hello,
) -> Result<(std::os::unix::net::UnixStream, Reply), WireError> {
    let mut s = std::os::unix::net::UnixStream::connect(socket)?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(15)))?;
    write_frame(&mut s, hello)?;
    let reply: Reply = read_frame(&mut s)?;
    s.set_read_timeout(None)?;
    Ok((s, reply))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trips_with_named_fields() {
        let hello = Hello::Mcp(McpHello {
            client_name: "x".into(),
            enable_tools: vec!["a".into()],
            scope: Some(Scope::Server),
            allow_self: false,
            tmux_pane_env: None,
            safety: Some(Tier::Mutating),
            toolset: None,
            confirm: true,
            via: None,
        });
        let bytes = encode(&hello).unwrap();
        let back: Hello = read_frame(&mut &bytes[..]).unwrap();
        match back {
            Hello::Mcp(h) => assert!(h.enable_tools == ["a"] && h.confirm),
            other => panic!("wrong variant {other:?}"),
        }
        // Named encoding: the field name is present in the payload.
        assert!(bytes.windows(12).any(|w| w == b"enable_tools"));
    }

    #[test]
    fn wrong_version_is_refused() {
        let env = Envelope {
            version: 99,
            body: Hello::Status,
        };
        let payload = rmp_serde::to_vec_named(&env).unwrap();
        assert!(matches!(
            decode::<Hello>(&payload),
            Err(WireError::Version(99))
        ));
    }

    #[test]
    fn oversized_length_prefix_is_refused_without_allocating() {
        let bytes = (u32::MAX).to_be_bytes();
        assert!(matches!(
            read_frame::<Hello>(&mut &bytes[..]),
            Err(WireError::TooLarge(_))
        ));
    }
}
