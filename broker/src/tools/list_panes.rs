//! `list_panes` (libtmux family): every pane this session may see, with its
//! entity reference, placements, process and whether it is the caller's pane.

use super::refs::{self, Kind};
use super::{Family, ToolOutput, Annotations, Call, CallFuture, ToolSpec};
use crate::registry::{numeric_id, Pane};
use crate::session::Session;
use serde_json::{json, Value};

pub const SPEC: ToolSpec = ToolSpec {
    name: "list_panes",
    family: Family::Libtmux,
    description: "List tmux panes with their stable reference {kind, id, generation}, the sessions and window indexes they are placed in, pid, process generation, dead flag, size, current command and directory, and whether a pane is the caller's own. Optionally only the panes of one session (id like $1, or name). Read-only.",
    annotations: Annotations::read_only("List panes", true),
    seed_annotations: None,
    opt_in: false,
    input_schema,
    output_schema,
    run,
};


fn input_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "session": { "type": "string", "minLength": 1, "maxLength": 256, "description": "Only panes placed in this session: its id ($1) or its name." }
        }
    })
}

fn output_schema() -> Value {
    let int = json!({ "type": "integer", "minimum": 0 });
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["generation", "scope", "callerPaneId", "panes"],
        "properties": {
            "generation": { "type": "string" },
            "scope": { "enum": ["session", "server"] },
            "callerPaneId": { "type": ["string", "null"] },
            "panes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["ref", "id", "index", "windowId", "windowName", "active", "title", "pid", "processGeneration", "processState", "dead", "deadStatus", "width", "height", "historySize", "command", "cwd", "placements", "isCallerPane"],
                    "properties": {
                        "ref": refs::ref_schema(Kind::Pane),
                        "id": { "type": "string", "pattern": "^%[0-9]+$" },
                        "index": { "type": "integer" },
                        "windowId": { "type": "string", "pattern": "^@[0-9]+$" },
                        "windowName": { "type": "string" },
                        "active": { "type": "boolean" },
                        "title": { "type": "string" },
                        "pid": int,
                        "processGeneration": { "type": ["string", "null"], "pattern": "^[a-f0-9]{32}$" },
                        "processState": { "enum": ["running", "exited", "dead", "untracked"] },
                        "processNote": { "type": "string" },
                        "dead": { "type": "boolean" },
                        "deadStatus": { "type": ["integer", "null"] },
                        "width": int,
                        "height": int,
                        "historySize": int,
                        "command": { "type": "string" },
                        "cwd": { "type": "string" },
                        "placements": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "additionalProperties": false,
                                "required": ["sessionId", "sessionName", "index", "windowActive"],
                                "properties": {
                                    "sessionId": { "type": "string", "pattern": "^\\$[0-9]+$" },
                                    "sessionName": { "type": "string" },
                                    "index": { "type": "integer" },
                                    "windowActive": { "type": "boolean" }
                                }
                            }
                        },
                        "isCallerPane": { "type": "boolean" }
                    }
                }
            }
        }
    })
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move { call(c.session, &c.args).await })
}

pub async fn call(session: &Session, args: &Value) -> ToolOutput {
    let snap = match session.broker.registry.refresh().await {
        Ok(s) => s,
        Err(e) => return ToolOutput::libtmux_error(format!("Could not read the pane table from tmux: {e}. Nothing was changed.")),
    };
    let wanted = args.get("session").and_then(Value::as_str);
    let visible: Vec<_> = session.visible(&snap).collect();
    if let Some(w) = wanted {
        let known = visible.iter().flat_map(|p| &p.placements).any(|pl| pl.session_id == w || pl.session_name == w);
        if !known {
            return ToolOutput::libtmux_error(format!("Argument session: no session with id or name {w:?} is visible. Call list_panes without it to see the sessions."));
        }
    }
    let panes: Vec<Value> = visible
        .iter()
        .filter(|p| wanted.is_none_or(|w| p.placements.iter().any(|pl| pl.session_id == w || pl.session_name == w)))
        .map(|p| pane_json(session, p))
        .collect();
    let text = summary(session, &panes);
    let structured = json!({
        "generation": session.generation(),
        "scope": match session.scope { crate::wire::Scope::Session => "session", crate::wire::Scope::Server => "server" },
        "callerPaneId": session.caller_pane,
        "panes": panes,
    });
    ToolOutput { structured: Some(structured), text, is_error: false }
}

fn pane_json(session: &Session, p: &Pane) -> Value {
    let st = p.process_status();
    let mut v = json!({
        "ref": refs::reference(Kind::Pane, &p.id, session.generation()),
        "id": p.id,
        "index": p.index,
        "windowId": p.window_id,
        "windowName": p.window_name,
        "active": p.active,
        "title": p.title,
        "pid": p.pid,
        "processGeneration": st.process_generation,
        "processState": st.state,
        "dead": p.dead,
        "deadStatus": p.dead_status,
        "width": p.width,
        "height": p.height,
        "historySize": p.history_size,
        "command": p.command,
        "cwd": p.cwd,
        "placements": p.placements.iter().map(|pl| json!({ "sessionId": pl.session_id, "sessionName": pl.session_name, "index": pl.window_index, "windowActive": pl.window_active })).collect::<Vec<_>>(),
        "isCallerPane": session.is_caller(&p.id),
    });
    if let Some(note) = st.note {
        v["processNote"] = json!(note);
    }
    v
}

/// One line per pane for clients that show only text.
fn summary(session: &Session, panes: &[Value]) -> String {
    let mut lines = vec![format!("{} pane(s), generation {}", panes.len(), session.generation())];
    let mut sorted: Vec<&Value> = panes.iter().collect();
    sorted.sort_by_key(|p| numeric_id(p["id"].as_str().unwrap_or("")));
    for p in sorted {
        let places: Vec<String> = p["placements"].as_array().into_iter().flatten().map(|pl| format!("{}:{}", pl["sessionName"].as_str().unwrap_or(""), pl["index"])).collect();
        lines.push(format!(
            "{} {} {}x{} pid {} {}{}{}",
            p["id"].as_str().unwrap_or(""),
            places.join(","),
            p["width"],
            p["height"],
            p["pid"],
            p["command"].as_str().unwrap_or(""),
            if p["dead"] == true { " [dead]" } else { "" },
            if p["isCallerPane"] == true { " [caller]" } else { "" },
        ));
    }
    lines.join("\n")
}
