//! MCP resources (docs/spec.md A.0.9): what a client can read and subscribe to
//! without a tool call.
//!
//! | URI | content |
//! |---|---|
//! | `tmux://server` | JSON: `get_server_info` |
//! | `tmux://sessions` | JSON: `list_sessions` |
//! | `tmux://panes` | JSON: `list_panes` |
//! | `tmux://pane/{pane_id}` | text: the pane's visible screen (`capture_pane`: the same guarded read, refused while an `after-capture-pane` hook is set) |
//! | `tmux://pane/{pane_id}/info` | JSON: the pane's `list_panes` record |
//! | `tmux://tool/{name}` | Markdown: the tool's reference (its details and arguments, which `tools/list` keeps short) |
//!
//! Each is read through the read-only tool that reads the same thing, so a
//! resource has that tool's scope (a session-scoped agent sees only its
//! sessions), hook-freeness and errors. `{pane_id}` is tmux's `%N`, written
//! percent-encoded as RFC 6570 expands it (`tmux://pane/%253`); `%3` and `3`
//! are accepted too, and a subscription is answered with the URI as the client
//! wrote it.

use crate::completion::Kind;
use crate::session::Session;
use crate::toolkit::call::output::RefusalKind;
use crate::toolkit::call::spec::ToolOutput;
use crate::tools;
use serde_json::{json, Value};
use tmux_mcp_engine::lines;
use tmux_mcp_engine::observe::{self, Freshness, ObserveError};
use tmux_mcp_engine::retention::Retained;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    Server,
    Sessions,
    Panes,
    /// The visible screen of pane `%N`.
    Screen(String),
    /// The `list_panes` record of pane `%N`.
    Info(String),
    /// The visible screen of pane `%N`, handed over with the key binding:
    /// readable through its hand-off cursor whatever the reader's scope.
    Handed {
        pane: String,
        cursor: String,
    },
    /// The reference of tool `name` as this session's toolset spells it.
    Tool(String),
}

/// Why a resource could not be read.
#[derive(Debug, Clone)]
pub enum ReadError {
    /// No such resource: a malformed URI, a pane that does not exist (or no
    /// longer does), an unknown hand-off cursor.
    NotFound(String),
    /// A pane outside this session's scope (reads as not found, and says so).
    NotVisible(String),
    /// Refused so that a hook of the person's cannot run: an
    /// `after-capture-pane` hook is set. Nothing was sent.
    HookSet(String),
    /// It exists but could not be read now (tmux unreachable).
    Failed(String),
}

impl ReadError {
    /// The reason a client can act on (`data.reason` of the JSON-RPC error).
    pub fn reason(&self) -> &'static str {
        match self {
            ReadError::NotFound(_) => "not_found",
            ReadError::NotVisible(_) => "not_visible",
            ReadError::HookSet(_) => "hook_set",
            ReadError::Failed(_) => "tmux_unreachable",
        }
    }

    /// Why a read failed, from the text of the read-only tool that did it.
    /// A read tool's refusal, by its typed reason (never by its wording).
    fn from_tool(out: ToolOutput) -> ReadError {
        match out.refusal {
            Some(RefusalKind::OutOfScope) => ReadError::NotVisible(out.text),
            Some(RefusalKind::Gone) => ReadError::NotFound(out.text),
            Some(RefusalKind::CaptureHook) => ReadError::HookSet(out.text),
            Some(RefusalKind::StaleCursor) | None => ReadError::Failed(out.text),
        }
    }

    /// A failed observation of pane `pane`, by its kind.
    fn from_observe(pane: &str, e: &ObserveError) -> ReadError {
        let text = format!("pane {pane}: {}", e.why());
        match e {
            ObserveError::OutOfScope => ReadError::NotVisible(text),
            ObserveError::StaleTarget { .. } => ReadError::NotFound(text),
            ObserveError::HookSet { .. } => ReadError::HookSet(text),
            ObserveError::Unsupported { .. } | ObserveError::Transport { .. } => {
                ReadError::Failed(text)
            }
        }
    }
}

const PANE_PREFIX: &str = "tmux://pane/";
const TOOL_PREFIX: &str = "tmux://tool/";

impl Resource {
    pub fn parse(uri: &str) -> Result<Resource, ReadError> {
        match uri {
            "tmux://server" => return Ok(Resource::Server),
            "tmux://sessions" => return Ok(Resource::Sessions),
            "tmux://panes" => return Ok(Resource::Panes),
            _ => {}
        }
        let bad = || {
            ReadError::NotFound(format!("unknown resource {uri:?}: expected tmux://server, tmux://sessions, tmux://panes, tmux://pane/{{pane_id}}, tmux://pane/{{pane_id}}/info (pane_id %N, written %25N) or tmux://tool/{{name}}"))
        };
        if let Some(name) = uri.strip_prefix(TOOL_PREFIX) {
            return match tools::spec(name) {
                Some(t) => Ok(Resource::Tool(t.name.to_string())),
                None => Err(ReadError::NotFound(format!(
                    "no tool {name:?}: tmux://tool/{{name}} takes a tool name of tools/list"
                ))),
            };
        }
        let rest = uri.strip_prefix(PANE_PREFIX).ok_or_else(bad)?;
        let (rest, handoff) = match rest.split_once("?handoff=") {
            Some((r, c))
                if !c.is_empty()
                    && c.len() <= 64
                    && c.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
            {
                (r, Some(c.to_string()))
            }
            Some(_) => return Err(bad()),
            None => (rest, None),
        };
        let (id, info) = match rest.strip_suffix("/info") {
            Some(id) => (id, true),
            None => (rest, false),
        };
        let digits = id
            .strip_prefix("%25")
            .or_else(|| id.strip_prefix('%'))
            .unwrap_or(id);
        if digits.is_empty() || digits.len() > 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let pane = format!("%{digits}");
        Ok(match (info, handoff) {
            (true, None) => Resource::Info(pane),
            (false, None) => Resource::Screen(pane),
            (false, Some(cursor)) => Resource::Handed { pane, cursor },
            (true, Some(_)) => return Err(bad()),
        })
    }

    /// The URI this resource is listed under.
    pub fn uri(&self) -> String {
        match self {
            Resource::Server => "tmux://server".into(),
            Resource::Sessions => "tmux://sessions".into(),
            Resource::Panes => "tmux://panes".into(),
            Resource::Screen(p) => format!("{PANE_PREFIX}%25{}", &p[1..]),
            Resource::Info(p) => format!("{PANE_PREFIX}%25{}/info", &p[1..]),
            Resource::Handed { pane, cursor } => {
                format!("{PANE_PREFIX}%25{}?handoff={cursor}", &pane[1..])
            }
            Resource::Tool(name) => format!("{TOOL_PREFIX}{name}"),
        }
    }

    pub fn pane(&self) -> Option<&str> {
        match self {
            Resource::Screen(p) | Resource::Info(p) | Resource::Handed { pane: p, .. } => Some(p),
            _ => None,
        }
    }

    fn mime(&self) -> &'static str {
        match self {
            Resource::Screen(_) | Resource::Handed { .. } => "text/plain",
            Resource::Tool(_) => "text/markdown",
            _ => "application/json",
        }
    }
}

/// The fixed resources and one screen resource per pane this session may see,
/// as `resources/list` entries (`{uri, name, title, description, mimeType}`).
pub async fn list(session: &Session) -> Vec<Value> {
    let mut out = vec![
        entry(&Resource::Server, "server", "The tmux server", "This tmux server: version, socket, generation, the caller's pane, attached clients where readable hook-free, the broker."),
        entry(&Resource::Sessions, "sessions", "tmux sessions", "Every session this agent may see, with references (list_sessions)."),
        entry(&Resource::Panes, "panes", "tmux panes", "Every pane this agent may see, with references (list_panes). Subscribe for changes; notifications/resources/list_changed says when panes come and go."),
    ];
    if let Ok(snap) = session.broker.registry.refresh().await {
        for p in session.visible(&snap) {
            let place = p
                .placements
                .first()
                .map(|pl| format!("{}:{}", pl.session_name, pl.window_index))
                .unwrap_or_default();
            let r = Resource::Screen(p.id.clone());
            out.push(entry(&r, &format!("pane {}", p.id), &format!("pane {} ({place} {})", p.id, p.command), "The pane's visible screen as text; subscribe to hear when it changes (at most 4 updates a second)."));
        }
    }
    out
}

fn entry(r: &Resource, name: &str, title: &str, description: &str) -> Value {
    json!({ "uri": r.uri(), "name": name, "title": title, "description": description, "mimeType": r.mime() })
}

/// `resources/templates/list` entries.
/// A resource template and the one argument in it.
struct Template {
    uri: &'static str,
    name: &'static str,
    title: &'static str,
    description: &'static str,
    mime: &'static str,
    /// The `{argument}` in `uri` and what it names (for `completion/complete`).
    argument: (&'static str, Kind),
}

const TEMPLATES: &[Template] = &[
    Template {
        uri: "tmux://pane/{pane_id}",
        name: "pane screen",
        title: "A pane's visible screen",
        description: "The visible screen of pane {pane_id} (%N) as text, read like capture_pane: refused while an after-capture-pane hook is set.",
        mime: "text/plain",
        argument: ("pane_id", Kind::Pane),
    },
    Template {
        uri: "tmux://pane/{pane_id}/info",
        name: "pane info",
        title: "A pane's record",
        description: "The list_panes record of pane {pane_id} (%N): reference, placements, process, size, command, cwd, title.",
        mime: "application/json",
        argument: ("pane_id", Kind::Pane),
    },
    Template {
        uri: "tmux://tool/{name}",
        name: "tool reference",
        title: "A tool's reference",
        description: "Everything about tool {name} that tools/list keeps short: its rules, each argument's meaning, bounds and default.",
        mime: "text/markdown",
        argument: ("name", Kind::Tool),
    },
];

pub fn templates() -> Vec<Value> {
    TEMPLATES
        .iter()
        .map(|t| json!({ "uriTemplate": t.uri, "name": t.name, "title": t.title, "description": t.description, "mimeType": t.mime }))
        .collect()
}

/// What argument `arg` of the template `uri` names, or why there is none.
pub fn template_argument(uri: &str, arg: &str) -> Result<Kind, String> {
    let Some(t) = TEMPLATES.iter().find(|t| t.uri == uri) else {
        let known: Vec<&str> = TEMPLATES.iter().map(|t| t.uri).collect();
        return Err(format!(
            "no resource template {uri:?}; resources/templates/list names them: {}",
            known.join(", ")
        ));
    };
    if t.argument.0 != arg {
        return Err(format!(
            "resource template {uri:?} has no argument {arg:?} (it has {:?})",
            t.argument.0
        ));
    }
    Ok(t.argument.1)
}

/// Whether `cursor` is the key binding's hand-off cursor of `pane` (readable
/// by every agent: handing a pane over is the person's consent).
pub fn handed_over(session: &Session, pane: &str, cursor: &str) -> bool {
    matches!(session.broker.retained.get(cursor, &session.view()).as_deref(), Some(Retained::Cursor(e)) if e.handoff && e.pane_id == pane)
}

/// Reads `r` for `session`: (mime type, text).
pub async fn read(session: &Session, r: &Resource) -> Result<(&'static str, String), ReadError> {
    if let Resource::Handed { pane, cursor } = r {
        return read_handed(session, pane, cursor)
            .await
            .map(|text| (r.mime(), text));
    }
    if let Resource::Tool(name) = r {
        let t = tools::spec_in(session.toolset, name)
            .ok_or_else(|| ReadError::NotFound(format!("no tool {name:?}")))?;
        let note = (!session.enabled.contains(t.name)).then(|| {
            format!(
                "Not enabled in this session: {}",
                t.why_disabled(session.safety)
            )
        });
        return Ok((
            r.mime(),
            crate::toolkit::schemas::tool_doc::render(t, note.as_deref()),
        ));
    }
    let (tool, args) = match r {
        Resource::Server => ("get_server_info", json!({})),
        // The whole records: a resource is read by the application, which
        // wants every field (the tools' lean default is for a model).
        Resource::Sessions => ("list_sessions", json!({ "detail": "full" })),
        // Every pane in one read, as far as one page goes (`total` and
        // `nextCursor` say when a server has more).
        Resource::Panes => (
            "list_panes",
            json!({ "limit": crate::toolkit::records::paging::PAGE_MAX, "detail": "full" }),
        ),
        Resource::Screen(p) => ("capture_pane", json!({ "paneId": p })),
        Resource::Info(p) => ("get_pane_info", json!({ "paneId": p, "detail": "full" })),
        Resource::Handed { .. } | Resource::Tool(_) => unreachable!("read above"),
    };
    let out = tools::read_through(session, tool, args).await;
    if out.is_error {
        return Err(ReadError::from_tool(out));
    }
    let structured = out.structured.unwrap_or(Value::Null);
    let text = match r {
        Resource::Screen(_) => structured["text"].as_str().unwrap_or_default().to_string(),
        Resource::Info(_) => structured["pane"].to_string(),
        _ => structured.to_string(),
    };
    Ok((r.mime(), text))
}

/// The screen of a handed-over pane: the same guarded, hook-refusing read as
/// `capture_pane`, text decoded the same way, scope not applied.
async fn read_handed(session: &Session, pane: &str, cursor: &str) -> Result<String, ReadError> {
    if !handed_over(session, pane, cursor) {
        return Err(ReadError::NotFound(format!("no hand-off cursor {cursor:?} for pane {pane} (it expired, or the broker restarted): ask the person to press the hand-off key again")));
    }
    let broker = &session.broker;
    let p = observe::find_pane(broker, pane, Freshness::Cached)
        .await
        .map_err(|e| ReadError::NotFound(format!("pane {pane}: {}", e.why())))?;
    let (_, out) = observe::capture_range(broker, p, None, None, false)
        .await
        .map_err(|e| ReadError::from_observe(pane, &e))?;
    Ok(lines::decode_lines(&out).join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refused read is classified by its typed kind, never by its words:
    /// a message that mentions a hook is not a hook refusal, and a hook
    /// refusal worded anyhow is one.
    #[test]
    fn read_errors_follow_the_refusal_kind_not_the_text() {
        let out = |text: &str, kind| ToolOutput {
            refusal: kind,
            ..ToolOutput::libtmux_error(text)
        };
        let code = |e: ReadError| e.reason();
        assert_eq!(
            code(ReadError::from_tool(out(
                "an after-capture-pane hook is set",
                None
            ))),
            "tmux_unreachable"
        );
        assert_eq!(
            code(ReadError::from_tool(out(
                "refused",
                Some(RefusalKind::CaptureHook)
            ))),
            "hook_set"
        );
        assert_eq!(
            code(ReadError::from_tool(out(
                "No pane %9",
                Some(RefusalKind::Gone)
            ))),
            "not_found"
        );
        assert_eq!(
            code(ReadError::from_tool(out(
                "x",
                Some(RefusalKind::OutOfScope)
            ))),
            "not_visible"
        );
    }

    #[test]
    fn pane_uris_parse_in_every_spelling_and_list_encoded() {
        for uri in ["tmux://pane/%253", "tmux://pane/%3", "tmux://pane/3"] {
            assert_eq!(
                Resource::parse(uri).unwrap(),
                Resource::Screen("%3".into()),
                "{uri}"
            );
        }
        assert_eq!(
            Resource::parse("tmux://pane/%2512/info").unwrap(),
            Resource::Info("%12".into())
        );
        assert_eq!(Resource::Screen("%3".into()).uri(), "tmux://pane/%253");
        assert_eq!(
            Resource::parse(&Resource::Info("%7".into()).uri()).unwrap(),
            Resource::Info("%7".into())
        );
        let handed = Resource::parse("tmux://pane/%253?handoff=0123abcd").unwrap();
        assert_eq!(
            handed,
            Resource::Handed {
                pane: "%3".into(),
                cursor: "0123abcd".into()
            }
        );
        assert_eq!(Resource::parse(&handed.uri()).unwrap(), handed);
        for bad in [
            "tmux://pane/%253?handoff=",
            "tmux://pane/%253?handoff=a b",
            "tmux://pane/%253/info?handoff=abc",
        ] {
            assert!(Resource::parse(bad).is_err(), "{bad}");
        }
        for bad in [
            "tmux://pane/",
            "tmux://pane/%25",
            "tmux://pane/x1",
            "tmux://pane/1/screen",
            "tmux://other",
            "file:///etc/passwd",
            "tmux://pane/99999999999",
        ] {
            assert!(
                matches!(Resource::parse(bad), Err(ReadError::NotFound(_))),
                "{bad}"
            );
        }
    }
}
