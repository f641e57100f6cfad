//! `kill_pane`, `kill_window`, `kill_session` (libtmux family, destructive
//! tier): `kill-pane|kill-window|kill-session -t ID`, by id only. Like
//! `tmux_close`, these never end the tmux server: killing what holds every
//! remaining pane is refused, with no switch to allow it (the person's server
//! is theirs to stop). Unlike `tmux_close`, the agent's own pane, its window
//! and its session are never killed, whatever the flags (`SelfRule::Never`).

use crate::guarded;
use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::confirm::{self, Ask};
use crate::toolkit::call::spec::{Annotations, Call, CallFuture, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::action::{self, SelfRule};
use crate::toolkit::libtmux::arrange::{Killed, KilledRef};
use crate::toolkit::libtmux::wording;
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::{Generation, Guarded, PaneId, SessionId, WindowId};
use crate::toolkit::target::references::{PaneRef, SessionRef, WindowRef};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;

pub const KILL_PANE: ToolSpec = ToolSpec::new(
    "kill_pane",
    Annotations::destructive("Kill pane"),
    input_of::<KillPaneArgs>,
    schema_of::<Killed<PaneRef>>,
    |c| kill::<PaneRef, KillPaneArgs>(c),
)
.description("Kill a pane and its process, by id. Never the agent's own pane or the server's last pane.")
.details("Kill a pane and its process (kill-pane -t paneId, by id only). Optional generation. Refused for the agent's own pane and for the server's last pane (that would end the tmux server). Returns the killed pane's reference.");

pub const KILL_WINDOW: ToolSpec = ToolSpec::new(
    "kill_window",
    Annotations::destructive("Kill window"),
    input_of::<KillWindowArgs>,
    schema_of::<Killed<WindowRef>>,
    |c| kill::<WindowRef, KillWindowArgs>(c),
)
.description("Kill a window with its panes and processes, by id. Never the agent's own window or the server's last.")
.details("Kill a window, its panes and their processes (kill-window -t windowId, by id only). Optional generation. Refused for the window holding the agent's own pane and for a window holding every remaining pane (that would end the tmux server). Returns the killed window's reference, its name and the panes that closed.");

pub const KILL_SESSION: ToolSpec = ToolSpec::new(
    "kill_session",
    Annotations::destructive("Kill session"),
    input_of::<KillSessionArgs>,
    schema_of::<Killed<SessionRef>>,
    |c| kill::<SessionRef, KillSessionArgs>(c),
)
.description("Kill a session, by id; windows only in it close with their panes. Never the agent's own session or the last one.")
.details("Kill a session (kill-session -t sessionId, by id only); windows linked only into it close with their panes and processes. Optional generation. Refused for a session holding the agent's own pane and for the last session (that would end the tmux server). Returns the killed session's reference, its name and the panes that closed.");

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KillPaneArgs {
    pane_id: PaneId,
    generation: Option<Generation>,
}
guarded!(KillPaneArgs, pane_id);

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KillWindowArgs {
    window_id: WindowId,
    generation: Option<Generation>,
}
guarded!(KillWindowArgs, window_id);

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KillSessionArgs {
    session_id: SessionId,
    generation: Option<Generation>,
}
guarded!(KillSessionArgs, session_id);

/// `run` of the kill tool whose arguments are `A` and whose target is an `R`.
fn kill<'a, R: KilledRef, A: DeserializeOwned + Guarded + Send + 'a>(
    c: Call<'a>,
) -> CallFuture<'a> {
    let ask = c.ask.clone();
    c.run(move |session, a: A| async move { call::<R>(session, &ask, &a).await })
}

async fn call<R: KilledRef>(
    session: &Session,
    ask: &Ask,
    a: &dyn Guarded,
) -> Result<ToolOutput, ToolOutput> {
    let t = action::target_of(session, a, SelfRule::Never).await?;
    // The same rule as tmux_close: the server's last panes are never killed,
    // since tmux exits with them.
    if t.panes.len() >= t.all_panes {
        return Err(wording::action_error(
            &format!("{} {} holds every remaining pane of the tmux server; killing it would end the server, which these tools never do.", t.kind.as_str(), t.id),
            Delivery::NotSent,
        ));
    }
    let command = t.kind.kill_command();
    let name = t.name().map(str::to_string);
    let tool = format!("kill_{}", t.kind.as_str());
    confirm::ask(ask, &tool, &action::ending("Kill", &t), |m| {
        wording::action_error(m, Delivery::NotSent)
    })
    .await?;
    action::run(session, &[command, "-t", &t.id]).await?;
    let generation = session.generation();
    // A session's windows that are linked into another session as well stay;
    // when the table cannot be read back, every pane it held is reported.
    let closed: Vec<PaneRef> = match session.broker.registry.refresh().await {
        Ok(snap) => t
            .panes
            .iter()
            .filter(|p| !snap.panes.iter().any(|q| q.id == p.id))
            .map(|p| PaneRef::new(&p.id, generation))
            .collect(),
        Err(_) => t
            .panes
            .iter()
            .map(|p| PaneRef::new(&p.id, generation))
            .collect(),
    };
    let text = format!(
        "Killed {} {}{}; {} pane(s) closed: {}.",
        t.kind.as_str(),
        t.id,
        name.as_deref()
            .map(|n| format!(" ({n:?})"))
            .unwrap_or_default(),
        closed.len(),
        closed
            .iter()
            .map(|p| p.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let out = Killed {
        generation: generation.to_string(),
        killed: R::new(&t.id, generation),
        name,
        panes_closed: closed,
    };
    Ok(ToolOutput::typed(&out, text))
}
