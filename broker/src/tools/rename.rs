//! `rename_session`, `rename_window` (libtmux family, mutating tier):
//! `rename-session` / `rename-window -t ID -- NAME`, the name protected from
//! format expansion and `;` splitting, control characters refused before
//! anything is sent. The result carries the name read back from tmux, which
//! may rewrite it (up to 3.5, `.` and `:` in session names become `_`; 3.7
//! keeps them).
//! tmux itself turns `automatic-rename` off for a window renamed this way.

use crate::guarded;
use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, Call, CallFuture, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::action::{self, SelfRule};
use crate::toolkit::libtmux::arrange::{self, Name, SessionAction, WindowAction};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::{Generation, Guarded, SessionId, WindowId};
use crate::toolkit::target::references::Kind;
use schemars::JsonSchema;
use serde::Deserialize;
use tmux_mcp_core::tmux::quote;

pub const RENAME_SESSION: ToolSpec = ToolSpec::new(
    "rename_session",
    Annotations::mutating("Rename session", true),
    input_of::<SessionArgs>,
    schema_of::<SessionAction>,
    run_rename_session,
)
.description("Rename a session; returns the name tmux gave.")
.details("Rename a session (rename-session -t sessionId). Optional generation. Returns the session record read back from tmux with the name tmux gave (tmux up to 3.5 turns `.` and `:` into `_`). Control characters are refused; a name another session has is refused by tmux.");

pub const RENAME_WINDOW: ToolSpec = ToolSpec::new(
    "rename_window",
    Annotations::mutating("Rename window", true),
    input_of::<WindowArgs>,
    schema_of::<WindowAction>,
    run_rename_window,
)
.description("Rename a window (tmux then stops renaming it automatically).")
.details("Rename a window (rename-window -t windowId; tmux then stops renaming it automatically). Optional generation. Returns the window record read back from tmux with the name tmux gave. Control characters are refused.");

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SessionArgs {
    session_id: SessionId,
    generation: Option<Generation>,
    name: Name,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WindowArgs {
    window_id: WindowId,
    generation: Option<Generation>,
    name: Name,
}

fn run_rename_session(c: Call<'_>) -> CallFuture<'_> {
    c.run(|session, a: SessionArgs| async move {
        rename(session, &a, &a.name, "rename-session").await
    })
}

fn run_rename_window(c: Call<'_>) -> CallFuture<'_> {
    c.run(
        |session, a: WindowArgs| async move { rename(session, &a, &a.name, "rename-window").await },
    )
}

guarded!(SessionArgs, session_id);
guarded!(WindowArgs, window_id);

async fn rename(
    session: &Session,
    a: &dyn Guarded,
    asked: &str,
    command: &str,
) -> Result<ToolOutput, ToolOutput> {
    let t = action::target_of(session, a, SelfRule::Allowed).await?;
    let name = quote::format_arg(asked);
    action::run(session, &[command, "-t", &t.id, "--", &name]).await?;
    let after = arrange::read_back(session, &format!("ran {command}")).await?;
    let generation = session.generation().to_string();
    let renamed = |what, given: String| renamed_text(what, &t.id, asked, &given);
    if t.kind == Kind::Session {
        let text = renamed("Session", after.session_name(&t.id));
        let out = SessionAction {
            generation,
            session: after.session_record(session, &t.id)?,
        };
        Ok(ToolOutput::typed(&out, text))
    } else {
        let text = renamed("Window", after.window_name(&t.id));
        let out = WindowAction {
            generation,
            window: after.window_record(session, &t.id)?,
        };
        Ok(ToolOutput::typed(&out, text))
    }
}

fn renamed_text(what: &str, id: &str, asked: &str, given: &str) -> String {
    if asked == given {
        format!("{what} {id} is now named {given:?}.")
    } else {
        format!("{what} {id} is now named {given:?} (tmux rewrote the name asked for, {asked:?}).")
    }
}
