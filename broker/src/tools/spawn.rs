//! `create_session`, `create_window`, `split_window` (libtmux family, mutating
//! tier): `new-session -d` / `new-window` / `split-window` with the program as
//! argv (never a shell string unless the caller gives `shell`), `-P -F`
//! printing the new ids, then the new entities read back from a fresh table,
//! so names are the ones tmux gave. A new session would be outside a
//! session-scoped agent's view, so only a server-scoped one may create one.

use crate::guarded;
use crate::session::Session;
use crate::toolkit::acting::launch::{spawn, Create, Side};
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::{Annotations, Call, CallFuture, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::action::{self, SelfRule};
use crate::toolkit::libtmux::arrange::{self, Name, ProgramArgs, Spawned};
use crate::toolkit::libtmux::wording;
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::schemas::patterns::INT_MAX;
use crate::toolkit::target::ids::{Generation, PaneId, SessionId};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tmux_mcp_core::wire::Scope;

pub const CREATE_SESSION: ToolSpec = ToolSpec::new(
    "create_session",
    Annotations::mutating("Create session", false),
    input_of::<SessionArgs>,
    schema_of::<Spawned>,
    run_create_session,
)
.description("Create a detached session running argv (or shell, or the default command); needs --scope server.")
.details("Create a detached tmux session (new-session -d) running argv (executed directly; `shell` for a command line through the shell; neither: the user's default command). Optional name, windowName, width, height, cwd, env. Returns the new session, window and pane records (references {kind, id, generation}) and the names tmux gave (tmux up to 3.5 turns `.` and `:` in session names into `_`). Needs --scope server: a new session is outside a session-scoped agent's view.");

pub const CREATE_WINDOW: ToolSpec = ToolSpec::new(
    "create_window",
    Annotations::mutating("Create window", false),
    input_of::<WindowArgs>,
    schema_of::<Spawned>,
    run_create_window,
)
.description("Create a window in a session running argv (or shell, or the default command).")
.details("Create a window in a session (new-window -t sessionId:) running argv (executed directly; `shell` for a command line through the shell; neither: the user's default command). Optional name, index (must be free), select (make it the session's current window; default false), cwd, env, generation. Returns the session, the new window and its pane (references {kind, id, generation}) with the name tmux gave.");

pub const SPLIT_WINDOW: ToolSpec = ToolSpec::new(
    "split_window",
    Annotations::mutating("Split window", false),
    input_of::<SplitArgs>,
    schema_of::<Spawned>,
    run_split_window,
)
.description("Split a pane; the new pane runs argv (or shell, or the default command).")
.details("Split a pane (split-window -t paneId) into a new pane placed right, left, below or above it, running argv (executed directly; `shell` for a command line through the shell; neither: the user's default command). Optional size (cells, or \"N%\" of the pane), select (make the new pane active; default false), cwd, env, generation. Returns the new pane and its window (references {kind, id, generation}).");

// `schemars(deny_unknown_fields)`, not serde's: serde refuses unknown
// fields only without `flatten`, and the published schema has refused them
// before the arguments are decoded.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
struct SessionArgs {
    /// Default: tmux's (a number).
    ///
    /// tmux up to 3.5 turns `.` and `:` into `_`; the result has the real one.
    name: Option<Name>,
    window_name: Option<Name>,
    /// Cells.
    #[schemars(range(min = 1, max = INT_MAX))]
    width: Option<i64>,
    /// Cells.
    #[schemars(range(min = 1, max = INT_MAX))]
    height: Option<i64>,
    #[serde(flatten)]
    program: ProgramArgs,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
struct WindowArgs {
    session_id: SessionId,
    generation: Option<Generation>,
    name: Option<Name>,
    /// Must be free. Default: the next free one.
    #[schemars(range(min = 0, max = INT_MAX))]
    index: Option<i64>,
    /// Make it the session's current window.
    #[serde(default)]
    select: bool,
    #[serde(flatten)]
    program: ProgramArgs,
}
guarded!(WindowArgs, session_id);

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
struct SplitArgs {
    pane_id: PaneId,
    generation: Option<Generation>,
    direction: Direction,
    size: Option<Size>,
    /// Make it the window's active pane.
    #[serde(default)]
    select: bool,
    #[serde(flatten)]
    program: ProgramArgs,
}
guarded!(SplitArgs, pane_id);

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Direction {
    Right,
    Left,
    Below,
    Above,
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Direction::Right => "right",
            Direction::Left => "left",
            Direction::Below => "below",
            Direction::Above => "above",
        })
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum Size {
    /// Cells.
    Cells(#[schemars(range(min = 1, max = INT_MAX))] i64),
    /// A percentage of the split pane, e.g. "30%".
    Percent(#[schemars(regex(pattern = r"^(?:[1-9][0-9]?|100)%$"))] String),
}

fn run_create_session(c: Call<'_>) -> CallFuture<'_> {
    let raw = c.args.clone();
    c.run(move |session, a| async move { create_session(session, &raw, a).await })
}

fn run_create_window(c: Call<'_>) -> CallFuture<'_> {
    let raw = c.args.clone();
    c.run(move |session, a| async move { create_window(session, &raw, a).await })
}

fn run_split_window(c: Call<'_>) -> CallFuture<'_> {
    let raw = c.args.clone();
    c.run(move |session, a| async move { split_window(session, &raw, a).await })
}

async fn create_session(
    session: &Session,
    raw: &Value,
    a: SessionArgs,
) -> Result<ToolOutput, ToolOutput> {
    if session.scope != Scope::Server {
        return Err(wording::action_error("With --scope session the agent acts only in its own tmux session, and a new session would be outside it; attach with --scope server to create sessions.", Delivery::NotSent));
    }
    let what = Create::Session {
        name: a.name.as_deref().map(str::to_string),
        window_name: a.window_name.as_deref().map(str::to_string),
        width: a.width,
        height: a.height,
    };
    let program = arrange::program_tail(session, raw, &a.program)?;
    let (ids, after) = create(session, &what, program, "created the session").await?;
    let text = format!(
        "Created session {} ({:?}) with window {} and pane {}.",
        ids[0],
        after.session_name(&ids[0]),
        ids[1],
        ids[2]
    );
    result(session, &after, Some(&ids[0]), &ids[1], &ids[2], text)
}

async fn create_window(
    session: &Session,
    raw: &Value,
    a: WindowArgs,
) -> Result<ToolOutput, ToolOutput> {
    let program = arrange::program_tail(session, raw, &a.program)?;
    let parent = action::target_of(session, &a, SelfRule::Allowed).await?;
    let what = Create::Window {
        session: parent.id.clone(),
        index: a.index,
        name: a.name.as_deref().map(str::to_string),
        select: a.select,
    };
    let (ids, after) = create(session, &what, program, "created the window").await?;
    let text = format!(
        "Created window {} ({:?}) in session {} with pane {}.",
        ids[0],
        after.window_name(&ids[0]),
        parent.id,
        ids[1]
    );
    result(session, &after, Some(&parent.id), &ids[0], &ids[1], text)
}

async fn split_window(
    session: &Session,
    raw: &Value,
    a: SplitArgs,
) -> Result<ToolOutput, ToolOutput> {
    let program = arrange::program_tail(session, raw, &a.program)?;
    let parent = action::target_of(session, &a, SelfRule::Allowed).await?;
    let what = Create::Split {
        pane: parent.id.clone(),
        side: Some(match a.direction {
            Direction::Right => Side::Right,
            Direction::Left => Side::Left,
            Direction::Below => Side::Below,
            Direction::Above => Side::Above,
        }),
        size: a.size.as_ref().map(|s| match s {
            Size::Cells(n) => n.to_string(),
            Size::Percent(p) => p.clone(),
        }),
        select: a.select,
    };
    let (ids, after) = create(session, &what, program, "split the pane").await?;
    let text = format!(
        "Split pane {}: new pane {} ({}) in window {}.",
        parent.id, ids[1], a.direction, ids[0]
    );
    result(session, &after, None, &ids[0], &ids[1], text)
}

/// Creates `what` running `program` (its argv tail and directory) and reads
/// tmux back (`done`: what the read-back says was done): the new ids.
async fn create(
    session: &Session,
    what: &Create,
    (tail, cwd): (Vec<String>, Option<PathBuf>),
    done: &str,
) -> Result<(Vec<String>, arrange::After), ToolOutput> {
    let cmd = what.argv(what.made(), tail);
    let (ids, pid) = spawn(session, &cmd, what.made(), cwd.as_deref()).await?;
    let after = read_back_spawned(session, done, pid).await?;
    Ok((ids, after))
}

/// How long a read-back waits for a new pane's process to exec its program.
const EXEC_WAIT: Duration = Duration::from_millis(500);

/// The table read back after a create. tmux prints the new ids (and the new
/// pane's pid) once it has forked the pane's process, which may not have
/// exec'd its program yet; until it has, tmux reads the pane's command as the
/// forked server's own ("tmux", seen under load). So the table is read once
/// the process no longer runs the server's executable, checked before the
/// read (a check after it could pass on a read that came before the exec), for
/// at most [`EXEC_WAIT`] (a program that is tmux itself waits that long).
async fn read_back_spawned(
    session: &Session,
    what: &str,
    pid: Option<u32>,
) -> Result<arrange::After, ToolOutput> {
    let server = session.broker.identity.pid;
    let deadline = Instant::now() + EXEC_WAIT;
    while let Some(pid) = pid {
        if tmux_mcp_core::platform::process_table::same_executable(pid, server) != Some(true)
            || Instant::now() >= deadline
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    arrange::read_back(session, what).await
}

fn result(
    session: &Session,
    after: &arrange::After,
    session_id: Option<&str>,
    window_id: &str,
    pane_id: &str,
    text: String,
) -> Result<ToolOutput, ToolOutput> {
    let out = Spawned {
        generation: session.generation().to_string(),
        session: session_id
            .map(|s| after.session_record(session, s))
            .transpose()?,
        window: after.window_record(session, window_id)?,
        pane: after.pane_record(session, pane_id)?,
    };
    Ok(ToolOutput::typed(&out, text))
}
