//! `rename_session`, `rename_window` (libtmux family, mutating tier):
//! `rename-session` / `rename-window -t ID -- NAME`, the name protected from
//! format expansion and `;` splitting, control characters refused before
//! anything is sent. The result carries the name read back from tmux, which
//! may rewrite it (up to 3.5, `.` and `:` in session names become `_`; 3.7
//! keeps them).
//! tmux itself turns `automatic-rename` off for a window renamed this way.

use super::act::{self, SelfRule};
use super::arrange::{self, SessionAction, WindowAction};
use super::refs::{self, Kind};
use super::typed::schema_of;
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use serde::Deserialize;
use serde_json::{json, Value};

pub const RENAME_SESSION: ToolSpec = ToolSpec {
    name: "rename_session",
    family: Family::Libtmux,
    description: "Rename a session (rename-session -t sessionId). Optional generation. Returns the session record read back from tmux with the name tmux gave (tmux up to 3.5 turns `.` and `:` into `_`). Control characters are refused; a name another session has is refused by tmux.",
    annotations: Annotations::mutating("Rename session", true),
    opt_in: false,
    input_schema: rename_session_schema,
    output_schema: schema_of::<SessionAction>,
    run: run_rename_session,
};

pub const RENAME_WINDOW: ToolSpec = ToolSpec {
    name: "rename_window",
    family: Family::Libtmux,
    description: "Rename a window (rename-window -t windowId; tmux then stops renaming it automatically). Optional generation. Returns the window record read back from tmux with the name tmux gave. Control characters are refused.",
    annotations: Annotations::mutating("Rename window", true),
    opt_in: false,
    input_schema: rename_window_schema,
    output_schema: schema_of::<WindowAction>,
    run: run_rename_window,
};

fn schema(id_field: &str, kind: Kind, id_description: &str) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": [id_field, "name"],
        "properties": {
            id_field: act::id_schema(kind, id_description),
            "generation": act::generation_schema(),
            "name": arrange::name_schema("The new name.")
        }
    })
}

fn rename_session_schema() -> Value {
    schema(
        "sessionId",
        Kind::Session,
        "The session to rename, e.g. $1 (see list_sessions).",
    )
}

fn rename_window_schema() -> Value {
    schema(
        "windowId",
        Kind::Window,
        "The window to rename, e.g. @2 (see list_windows).",
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Args {
    /// `sessionId` or `windowId` (each tool's schema has one of them).
    #[serde(alias = "sessionId", alias = "windowId")]
    id: String,
    generation: Option<String>,
    name: String,
}

fn run_rename_session(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move {
        match c.parse::<Args>() {
            Ok(a) => rename(c.session, a, "rename-session")
                .await
                .unwrap_or_else(|e| e),
            Err(e) => e,
        }
    })
}

fn run_rename_window(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move {
        match c.parse::<Args>() {
            Ok(a) => rename(c.session, a, "rename-window")
                .await
                .unwrap_or_else(|e| e),
            Err(e) => e,
        }
    })
}

async fn rename(session: &Session, a: Args, command: &str) -> Result<ToolOutput, ToolOutput> {
    let id = &a.id;
    let t = act::target(session, id, a.generation.as_deref(), SelfRule::Allowed).await?;
    let name = refs::format_arg(&a.name);
    act::run(session, &[command, "-t", &t.id, "--", &name]).await?;
    let after = arrange::read_back(session, &format!("ran {command}")).await?;
    let generation = session.generation().to_string();
    if t.kind == Kind::Session {
        let given = after.session_name(&t.id);
        let out = SessionAction {
            generation,
            session: after.session_record(session, &t.id)?,
        };
        Ok(ToolOutput::typed(
            &out,
            renamed_text("Session", &t.id, &a.name, &given),
        ))
    } else {
        let given = after.window_name(&t.id);
        let out = WindowAction {
            generation,
            window: after.window_record(session, &t.id)?,
        };
        Ok(ToolOutput::typed(
            &out,
            renamed_text("Window", &t.id, &a.name, &given),
        ))
    }
}

fn renamed_text(what: &str, id: &str, asked: &str, given: &str) -> String {
    if asked == given {
        format!("{what} {id} is now named {given:?}.")
    } else {
        format!("{what} {id} is now named {given:?} (tmux rewrote the name asked for, {asked:?}).")
    }
}
