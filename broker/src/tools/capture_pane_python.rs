//! `capture_pane` as tmux-python/libtmux-mcp spells it (`--toolset python`,
//! docs/spec.md C.1, seed 004): snake_case arguments, the pane found from
//! `pane_id`, else `window_id`, else `session_id` / `session_name` / the first
//! session (its first window, that window's first pane); `capture-pane -p` with
//! `-S`/`-E` only when given; trailing empty lines removed; more than
//! `max_lines` (default 500, `null` for no limit) keeps the last ones under a
//! `[... truncated K lines ...]` header. The result is one string
//! (`{"result": …}`, as FastMCP wraps a string).
//!
//! The read is ours, not the reference's: the same guarded, hook-refusing
//! `capture-pane` as every capture (`observe::capture_range`), and only panes
//! this session may see. Where the reference has quirks, we do not copy them:
//! `max_lines` <= 0 is an input error (C.1 quirks).

use super::read;
use super::read::fail;
use super::typed::schema_of;
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::OnceLock;
use tmux_mcp_engine::lines::decode_lines;
use tmux_mcp_engine::observe;
use tmux_mcp_engine::registry::{numeric_id, Pane};

pub const SPEC: ToolSpec = ToolSpec {
    name: "capture_pane",
    family: Family::Libtmux,
    description: "Capture the visible contents of a tmux pane (terminal scrollback).\n\nUse for tmux pane output — ‘capture the build log’, ‘what did the server print’ — not editor file contents. The tool for reading what is displayed in a terminal; use search_panes to search across multiple panes at once.\n\nOutput is tail-preserved: when the capture exceeds max_lines the oldest lines are dropped and the returned string is prefixed with a single [... truncated K lines ...] header line so the agent can tell truncation occurred and re-request with a narrower start/end window or a larger max_lines if needed. Pass max_lines=None to disable truncation entirely.",
    details: "",
    annotations: Annotations::read_only("Capture pane"),
    listed: super::Listed::AtTier,
    input_schema,
    output_schema: schema_of::<Captured>,
    run,
};

/// The seed's default `max_lines` (`CAPTURE_DEFAULT_MAX_LINES`).
const DEFAULT_MAX_LINES: i64 = 500;

/// The reference's middleware cuts results above this many bytes, keeping the tail.
const MAX_RESULT_BYTES: usize = 1_000_000;

fn input_schema() -> Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| {
        serde_json::from_str(include_str!(
            "../../contracts/capture_pane.python.input.json"
        ))
        .expect("contract parses")
    })
    .clone()
}

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Captured {
    /// The captured lines joined with LF, after the truncation header if any.
    result: String,
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    c.run_typed(call)
}

/// The Python family's way to name a pane and its server: every field
/// nullable, `null` the same as absent (the contract's defaults).
#[derive(Deserialize, Default, schemars::JsonSchema)]
pub(super) struct PaneSelector {
    /// Pane ID (e.g. '%1').
    #[serde(default)]
    pub pane_id: Option<String>,
    /// Window ID for pane resolution.
    #[serde(default)]
    pub window_id: Option<String>,
    /// Session ID (e.g. '$1') for pane resolution.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Session name for pane resolution.
    #[serde(default)]
    pub session_name: Option<String>,
    #[serde(flatten)]
    pub server: ServerArg,
}

impl PaneSelector {
    /// Whether any field names a pane (else the first session's is meant).
    pub fn targeted(&self) -> bool {
        self.pane_id.is_some()
            || self.window_id.is_some()
            || self.session_id.is_some()
            || self.session_name.is_some()
    }
}

/// `socket_name`: the tmux server the caller means (checked against ours).
#[derive(Deserialize, Default, schemars::JsonSchema)]
pub(super) struct ServerArg {
    /// tmux socket name.
    #[serde(default)]
    pub socket_name: Option<String>,
}

/// A nullable argument whose absence is its field's `default`: `null` is
/// `None` (for a limit: no limit), so it cannot be mistaken for absent.
pub(super) fn nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

/// The arguments (the contract has checked them).
#[derive(Deserialize)]
struct Args {
    #[serde(flatten)]
    pane: PaneSelector,
    start: Option<i64>,
    end: Option<i64>,
    #[serde(default = "default_max_lines", deserialize_with = "nullable")]
    max_lines: Option<i64>,
}

fn default_max_lines() -> Option<i64> {
    Some(DEFAULT_MAX_LINES)
}

/// C.0 errors: the message, a newline and the suggestion; nothing reached tmux.
fn not_found(what: &str, suggestion: &str) -> ToolOutput {
    ToolOutput::libtmux_error(format!("{what}\n{suggestion}"))
}

/// A Python limit, decoded (absent: its default; `null`: no limit): a
/// positive integer or no limit (≤ 0 is refused, unlike the reference's quirks).
pub(super) fn positive_limit(
    tool: &str,
    key: &str,
    limit: Option<i64>,
) -> Result<Option<i64>, ToolOutput> {
    match limit {
        Some(n) if n <= 0 => Err(ToolOutput::libtmux_error(format!("Invalid arguments for {tool}: {key} must be a positive integer, or null for no limit. Nothing was sent to tmux."))),
        other => Ok(other),
    }
}

/// `socket_name`, when given, must name the server this broker serves.
pub(super) fn check_socket(session: &Session, server: &ServerArg) -> Result<(), ToolOutput> {
    if let Some(name) = &server.socket_name {
        let ours = session
            .broker
            .identity
            .socket_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if *name != ours {
            return Err(ToolOutput::libtmux_error(format!(
                "socket_name {name:?} names another tmux server: this MCP server serves the one on socket {ours:?} (attach with -L NAME to reach another). Nothing was sent to tmux."
            )));
        }
    }
    Ok(())
}

async fn call(session: &Session, args: Args) -> ToolOutput {
    let max_lines = match positive_limit("capture_pane", "max_lines", args.max_lines) {
        Ok(m) => m,
        Err(e) => return e,
    };
    if let Err(e) = check_socket(session, &args.pane.server) {
        return e;
    }
    let pane = match resolve(session, &args.pane).await {
        Ok(p) => p,
        Err(e) => return e,
    };
    let id = pane.id.clone();
    let out = match observe::capture_range(&session.broker, pane, args.start, args.end, false).await
    {
        Ok((_, out)) => out,
        Err(e) => return read::observe_failure(&id, &e),
    };
    let lines = decode_lines(&out);
    let text = match max_lines {
        Some(m) if lines.len() as i64 > m => {
            let keep = m as usize;
            format!(
                "[... truncated {} lines ...]\n{}",
                lines.len() - keep,
                lines[lines.len() - keep..].join("\n")
            )
        }
        _ => lines.join("\n"),
    };
    let text = limit_bytes(text);
    ToolOutput::typed(
        &Captured {
            result: text.clone(),
        },
        text,
    )
}

/// The reference's result limiter: above [`MAX_RESULT_BYTES`], keep the tail
/// (whole characters) under a `[... truncated N bytes ...]` line.
fn limit_bytes(text: String) -> String {
    if text.len() <= MAX_RESULT_BYTES {
        return text;
    }
    let mut cut = text.len() - MAX_RESULT_BYTES;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    format!("[... truncated {cut} bytes ...]\n{}", &text[cut..])
}

/// C.0 pane resolution over the panes this session may see: `pane_id`, else
/// `window_id`'s first pane, else the first pane of the first window of the
/// session named by `session_id`, then `session_name`, else of the first session.
pub(super) async fn resolve(session: &Session, by: &PaneSelector) -> Result<Pane, ToolOutput> {
    if let Some(id) = by.pane_id.as_deref() {
        return match read::resolve(session, id, session.read_freshness()).await {
            Ok(p) => Ok(p),
            Err(_) if !id.starts_with('%') => Err(not_found(
                &format!("Pane not found: {id}"),
                "Pane ids look like %1. Call list_panes to discover valid pane ids.",
            )),
            Err(e) => Err(e),
        };
    }
    let snap = session.broker.registry.refresh().await.map_err(|e| {
        fail(
            &format!("Could not read the pane table from tmux: {e}."),
            Some("Nothing was sent to the pane."),
        )
    })?;
    let visible: Vec<Pane> = session.visible(&snap).map(|p| p.into_owned()).collect();
    let first_pane = |panes: Vec<&Pane>| panes.into_iter().min_by_key(|p| p.index).cloned();
    if let Some(w) = by.window_id.as_deref() {
        return first_pane(visible.iter().filter(|p| p.window_id == w).collect()).ok_or_else(
            || {
                not_found(
                    &format!("Object not found: window {w}"),
                    "Call list_windows to discover valid window ids.",
                )
            },
        );
    }
    // Sessions as tmux lists them (by name), each with its placements.
    let mut sessions: Vec<(&str, &str)> = visible
        .iter()
        .flat_map(|p| {
            p.placements
                .iter()
                .map(|pl| (pl.session_name.as_str(), pl.session_id.as_str()))
        })
        .collect();
    sessions.sort();
    sessions.dedup();
    let chosen = if let Some(sid) = by.session_id.as_deref() {
        sessions
            .iter()
            .find(|(_, id)| *id == sid)
            .ok_or_else(|| {
                not_found(
                    &format!("Object not found: session {sid}"),
                    "Call list_sessions to discover valid session ids.",
                )
            })?
            .1
    } else if let Some(name) = by.session_name.as_deref() {
        sessions
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| {
                not_found(
                    &format!("Object not found: session {name:?}"),
                    "Call list_sessions to discover valid session names.",
                )
            })?
            .1
    } else {
        sessions
            .first()
            .ok_or_else(|| {
                not_found(
                    "Object not found: no session",
                    "This MCP session can see no tmux session.",
                )
            })?
            .1
    };
    // The session's first window (lowest index), then its first pane.
    let window = visible
        .iter()
        .flat_map(|p| {
            p.placements
                .iter()
                .filter(|pl| pl.session_id == chosen)
                .map(move |pl| (pl.window_index, numeric_id(&p.window_id), &p.window_id))
        })
        .min()
        .map(|(_, _, w)| w.clone())
        .ok_or_else(|| {
            not_found(
                &format!("Object not found: session {chosen} has no window"),
                "Call list_windows.",
            )
        })?;
    first_pane(visible.iter().filter(|p| p.window_id == window).collect()).ok_or_else(|| {
        not_found(
            &format!("Object not found: window {window} has no pane"),
            "Call list_panes.",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Absent is the contract's default, `null` is too for a selector but is
    /// "no limit" for max_lines; every contract property has a field.
    #[test]
    fn args_decode_nulls_as_the_contract_means_them() {
        let decode = |v: Value| super::super::typed::decode::<Args>(&v).unwrap();
        let a = decode(json!({}));
        assert_eq!(
            (a.max_lines, a.start, a.end),
            (Some(DEFAULT_MAX_LINES), None, None)
        );
        assert!(!a.pane.targeted() && a.pane.server.socket_name.is_none());
        let a = decode(json!({ "max_lines": null, "pane_id": null, "start": -100.0, "end": 5 }));
        assert_eq!((a.max_lines, a.start, a.end), (None, Some(-100), Some(5)));
        assert!(!a.pane.targeted());
        let a = decode(json!({ "session_name": "w", "socket_name": "s", "max_lines": 3 }));
        assert_eq!(a.max_lines, Some(3));
        assert_eq!(
            (
                a.pane.session_name.as_deref(),
                a.pane.server.socket_name.as_deref()
            ),
            (Some("w"), Some("s"))
        );
        assert!(a.pane.targeted());
        assert!(positive_limit("capture_pane", "max_lines", Some(0)).is_err());
        assert_eq!(
            positive_limit("capture_pane", "max_lines", None).ok(),
            Some(None)
        );
        // Each property the contract names is decoded (a value of the wrong
        // type for a known field fails; an unknown field would be ignored).
        super::super::typed::assert_every_property_decoded::<Args>(&input_schema(), json!({}));
    }

    #[test]
    fn the_byte_limiter_keeps_the_tail_in_whole_characters() {
        assert_eq!(limit_bytes("abc".into()), "abc");
        let text = "é".repeat(MAX_RESULT_BYTES); // 2 bytes each
        let out = limit_bytes(text.clone());
        let (head, tail) = out.split_once('\n').unwrap();
        assert_eq!(
            head,
            format!("[... truncated {} bytes ...]", MAX_RESULT_BYTES)
        );
        assert_eq!(tail.len(), MAX_RESULT_BYTES);
        assert!(text.ends_with(tail));
    }
}
