//! `select_pane`, `select_window` (libtmux family, mutating tier): make a pane
//! its window's active pane (`select-pane -t %N`), or a window its session's
//! current window (`select-window -t @N`); the result is read back from a
//! fresh table. Selecting the agent's own pane or window is harmless to it.

use crate::guarded;
use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::action::{self, SelfRule};
use crate::toolkit::libtmux::arrange::{self, PaneAction, WindowAction};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::{Generation, PaneId, WindowId};
use schemars::JsonSchema;
use serde::Deserialize;

pub const SELECT_PANE: ToolSpec = ToolSpec::new(
    "select_pane",
    Annotations::mutating("Select pane", true),
    input_of::<PaneArgs>,
    schema_of::<PaneAction>,
    |c| c.run(select_pane),
)
.description("Make a pane its window's active pane.")
.details("Make a pane the active pane of its window (select-pane -t paneId). Optional generation. Returns the pane and window records read back from tmux (window.activePaneId is the pane) and whether the window is zoomed. It does not change which window a session shows; see select_window.");

pub const SELECT_WINDOW: ToolSpec = ToolSpec::new(
    "select_window",
    Annotations::mutating("Select window", true),
    input_of::<WindowArgs>,
    schema_of::<WindowAction>,
    |c| c.run(select_window),
)
.description("Make a window its session's current window.")
.details("Make a window the current window of its session (select-window -t windowId). Optional generation. Returns the window record read back from tmux (links[].active says in which session it is current).");

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaneArgs {
    pane_id: PaneId,
    generation: Option<Generation>,
}
guarded!(PaneArgs, pane_id);

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WindowArgs {
    window_id: WindowId,
    generation: Option<Generation>,
}
guarded!(WindowArgs, window_id);

async fn select_pane(session: &Session, a: PaneArgs) -> Result<ToolOutput, ToolOutput> {
    let t = action::target_of(session, &a, SelfRule::Allowed).await?;
    action::run(session, &["select-pane", "-t", &t.id]).await?;
    let after = arrange::read_back(session, "selected the pane").await?;
    let text = format!("Pane {} is the active pane of its window.", t.id);
    after.pane_action(session, &t.id, text)
}

async fn select_window(session: &Session, a: WindowArgs) -> Result<ToolOutput, ToolOutput> {
    let t = action::target_of(session, &a, SelfRule::Allowed).await?;
    action::run(session, &["select-window", "-t", &t.id]).await?;
    let after = arrange::read_back(session, "selected the window").await?;
    let out = WindowAction {
        generation: session.generation().to_string(),
        window: after.window_record(session, &t.id)?,
    };
    Ok(ToolOutput::typed(
        &out,
        format!(
            "Window {} ({:?}) is the current window of its session.",
            t.id,
            after.window_name(&t.id)
        ),
    ))
}
