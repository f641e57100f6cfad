//! `build_workspace` (libtmux family, mutating): a new session with its
//! windows and panes, each pane's program and each window's layout, from one
//! document in the shape tmuxp and tmuxinator files have (a session, its
//! windows, their panes), and every reference back.
//!
//! Everything is checked before anything is sent (names, programs and their
//! directories, layouts, the document's size). Then, through the same
//! commands as `create_session`, `split_window` and `create_window`
//! (`toolkit::acting::launch::spawn`): `new-session -d` with the first window's first pane,
//! `split-window -d` for each further pane of a window and `select-layout`
//! once its panes exist, `new-window -d` for each further window. If any
//! step fails, the session it created is killed (and nothing else: the
//! workspace is a new session, so everything made is in it); the error says
//! what reached tmux. A new session is outside a session-scoped agent's view,
//! so it needs `--scope server`, as `create_session` does.

use crate::session::Session;
use crate::toolkit::acting::launch::{spawn, Create};
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::{Annotations, Call, CallFuture, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::action;
use crate::toolkit::libtmux::arrange::{self, Name, ProgramArgs};
use crate::toolkit::libtmux::wording;
use crate::toolkit::records::graph::{PaneRecord, SessionRecord, WindowRecord};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::schemas::patterns::INT_MAX;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tmux_mcp_core::wire::Scope;

pub const SPEC: ToolSpec = ToolSpec::new(
    "build_workspace",
    Annotations::mutating("Build a workspace", false),
    input_of::<Args>,
    schema_of::<Built>,
    run,
)
.description("Create a session with its windows, panes, programs and layouts from one document; on failure closes what it created.")
.details("Create a new detached session from one document in the tmuxp/tmuxinator shape: session (its name), optional cwd (every pane's directory unless the pane sets its own), width, height, and windows: [{name, layout, panes: [{argv | shell, cwd, env}]}] (1-32 windows of 1-32 panes; a pane with neither argv nor shell runs the default command). layout is even-horizontal, even-vertical, main-horizontal, main-vertical or tiled. Everything is checked before anything is sent; then new-session, split-window per further pane, select-layout, new-window per further window. Returns the session, each window and each pane as the list tools describe them (references {kind, id, generation}). If a step fails, the session it created is killed (nothing else is touched) and the error says so. Needs --scope server. Mutating tier.");

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
struct Args {
    /// The new session's name (tmux up to 3.5 turns `.` and `:` into `_`).
    session: Name,
    /// Every pane's directory, unless the pane sets its own.
    cwd: Option<String>,
    /// Cells.
    #[schemars(range(min = 1, max = INT_MAX))]
    width: Option<i64>,
    /// Cells.
    #[schemars(range(min = 1, max = INT_MAX))]
    height: Option<i64>,
    #[schemars(length(min = 1, max = 32))]
    windows: Vec<WindowDoc>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
struct WindowDoc {
    name: Option<Name>,
    layout: Option<Layout>,
    #[schemars(length(min = 1, max = 32))]
    panes: Vec<PaneDoc>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
struct PaneDoc {
    #[serde(flatten)]
    program: ProgramArgs,
}

/// tmux's preset layouts.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum Layout {
    EvenHorizontal,
    EvenVertical,
    MainHorizontal,
    MainVertical,
    Tiled,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Layout::EvenHorizontal => "even-horizontal",
            Layout::EvenVertical => "even-vertical",
            Layout::MainHorizontal => "main-horizontal",
            Layout::MainVertical => "main-vertical",
            Layout::Tiled => "tiled",
        }
    }
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Built {
    generation: String,
    session: SessionRecord,
    windows: Vec<BuiltWindow>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BuiltWindow {
    /// The window's id, as tmux printed it on creating it.
    #[schemars(regex(pattern = crate::toolkit::target::ids::WINDOW_ID))]
    id: String,
    /// The window as the list tools describe it; absent when it is gone
    /// (every pane's program exited at once and tmux closed it).
    #[serde(skip_serializing_if = "Option::is_none")]
    window: Option<WindowRecord>,
    /// Its panes that exist, in the document's order (a pane kept by
    /// remain-on-exit after its program exited is here, dead, with its status).
    panes: Vec<PaneRecord>,
    /// Its panes whose program exited at once and that tmux closed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    gone_panes: Vec<String>,
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    let raw = c.args.clone();
    c.run(move |session, a| async move { build(session, &raw, a).await })
}

/// A pane's checked command tail and the directory asked for.
type Tail = (Vec<String>, Option<std::path::PathBuf>);

async fn build(session: &Session, raw: &Value, mut a: Args) -> Result<ToolOutput, ToolOutput> {
    if session.scope != Scope::Server {
        return Err(wording::action_error("With --scope session the agent acts only in its own tmux session, and the workspace is a new session outside it; attach with --scope server to build one.", Delivery::NotSent));
    }
    // Every pane's program checked (and its directory resolved) first.
    let mut tails: Vec<Vec<Tail>> = Vec::new();
    for (w, win) in a.windows.iter_mut().enumerate() {
        let mut panes = Vec::new();
        for (p, pane) in win.panes.iter_mut().enumerate() {
            pane.program.default_cwd(a.cwd.as_deref());
            let tail = arrange::program_tail(session, raw, &pane.program).map_err(|e| {
                ToolOutput::libtmux_error(format!("In windows/{w}/panes/{p}: {}", e.text))
            })?;
            panes.push(tail);
        }
        tails.push(panes);
    }
    let mut made: Option<String> = None;
    let built = match create(session, &a, &tails, &mut made).await {
        Ok(ids) => {
            // A program that fails at once (it exits while tmux still reports
            // success) is gone a few milliseconds later: read back after that,
            // so the result says what exists.
            tokio::time::sleep(EXIT_GRACE).await;
            report(session, made.as_deref().unwrap_or_default(), &ids).await
        }
        Err(e) => Err(e),
    };
    let e = match built {
        Ok(out) => return Ok(out),
        Err(e) => e,
    };
    let Some(id) = made else { return Err(e) };
    // Everything made is in the new session: closing it undoes all.
    let undo = match action::run(session, &["kill-session", "-t", &id]).await {
        Ok(_) => {
            format!(" The session it had created ({id}) was killed; nothing else was touched.")
        }
        Err(k) => format!(
            " Killing the session it had created ({id}) failed too (it may be gone already): {}",
            k.text
        ),
    };
    crate::toolkit::acting::tmux_command::refresh_after(&session.broker).await;
    Err(ToolOutput::libtmux_error(format!(
        "Building the workspace failed: {}{undo}",
        e.text
    )))
}

/// How long programs may take to fail at once before the workspace is read back.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(60);
/// How long a dead pane's exit status is waited for: tmux reaps the
/// program when its event loop gets to the SIGCHLD, later under load (once,
/// in a full test run on tmux 3.3a, later than 500 ms).
const STATUS_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The built workspace as it is now: every window and pane that exists as
/// the list tools describe it (a dead pane that remain-on-exit keeps, dead
/// with its exit status), and the ids of those whose program exited at once
/// and that tmux closed. An error when nothing of it is left.
async fn report(session: &Session, session_id: &str, ids: &Made) -> Result<ToolOutput, ToolOutput> {
    // tmux marks a pane dead when its terminal closes and learns the exit
    // status when it reaps the process, a moment later: read again until
    // every dead pane has its status (at most STATUS_WAIT).
    let mut after = arrange::read_back(session, "built the workspace").await?;
    let until = std::time::Instant::now() + STATUS_WAIT;
    while std::time::Instant::now() < until
        && ids.iter().flat_map(|(_, p)| p).any(|p| {
            after
                .pane_record(session, p)
                .is_ok_and(|r| r.is_dead() && !r.has_dead_status())
        })
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        after = arrange::read_back(session, "built the workspace").await?;
    }
    let mut windows = Vec::new();
    for (window, panes) in ids {
        let mut records = Vec::new();
        let mut gone = Vec::new();
        for p in panes {
            match after.pane_record(session, p) {
                Ok(r) => records.push(r),
                Err(_) => gone.push(p.clone()),
            }
        }
        windows.push(BuiltWindow {
            id: window.clone(),
            window: after.window_record(session, window).ok(),
            panes: records,
            gone_panes: gone,
        });
    }
    if windows.iter().all(|w| w.window.is_none()) {
        return Err(wording::action_error(&format!("every pane's program exited at once, and tmux closed the session ({session_id}) with them: {}", ids.iter().flat_map(|(_, p)| p).cloned().collect::<Vec<_>>().join(" ")), Delivery::Observed));
    }
    let out = Built {
        generation: session.generation().to_string(),
        session: after.session_record(session, session_id)?,
        windows,
    };
    let panes: usize = out.windows.iter().map(|w| w.panes.len()).sum();
    let shown = |w: &BuiltWindow| {
        let mut ids: Vec<String> = w.panes.iter().map(|p| p.id().to_string()).collect();
        ids.extend(
            w.gone_panes
                .iter()
                .map(|p| format!("{p} (gone: its program exited at once)")),
        );
        let window = if w.window.is_some() {
            w.id.clone()
        } else {
            format!("{} (gone)", w.id)
        };
        format!("{window} [{}]", ids.join(" "))
    };
    let dead: Vec<String> = out
        .windows
        .iter()
        .flat_map(|w| &w.panes)
        .filter(|p| p.is_dead())
        .map(|p| p.id().to_string())
        .collect();
    let mut text = format!(
        "Built session {session_id} ({:?}): {} window(s), {panes} pane(s): {}.",
        after.session_name(session_id),
        out.windows.iter().filter(|w| w.window.is_some()).count(),
        out.windows.iter().map(shown).collect::<Vec<_>>().join(", ")
    );
    if !dead.is_empty() {
        text.push_str(&format!(
            " Dead (their program exited; remain-on-exit keeps them): {}.",
            dead.join(" ")
        ));
    }
    Ok(ToolOutput::typed(&out, text))
}

/// The least the other panes of a main layout keep beside (columns) or
/// below (rows) the main pane before it is sized for the window.
const MAIN_LAYOUT_ROOM: (u32, u32) = (20, 6);

/// A main layout sizes its main pane by `main-pane-width` (80 columns by
/// default) or `main-pane-height` (24 rows), whatever the window's size: in
/// an 80-column window main-vertical leaves the other panes one column.
/// Where the option leaves them less than [`MAIN_LAYOUT_ROOM`], the main pane
/// (the window's first) takes half the window instead (`resize-pane`; no
/// option is changed).
async fn size_main_pane(
    session: &Session,
    (session_id, window): (&str, &str),
    main: &str,
    layout: Layout,
) -> Result<(), ToolOutput> {
    let (vertical, flag) = match layout {
        Layout::MainVertical => (true, "-x"),
        Layout::MainHorizontal => (false, "-y"),
        _ => return Ok(()),
    };
    let body = "#{window_width} #{window_height} #{main-pane-width} #{main-pane-height}|";
    let format = tmux_mcp_core::tmux::quote::in_pane(session_id, window, main, body);
    let out = action::run(session, &["list-commands", "-F", &format, "list-commands"]).await?;
    let Some(want) = main_size(out.split('|').next().unwrap_or_default(), vertical) else {
        return Ok(());
    };
    action::run(
        session,
        &["resize-pane", "-t", main, flag, &want.to_string()],
    )
    .await?;
    Ok(())
}

/// From `"W H main-pane-width main-pane-height"` (a size may be `N%` from
/// tmux 3.4): half the window's width (`vertical`) or height when the
/// option's size leaves the other panes less than [`MAIN_LAYOUT_ROOM`];
/// `None` when it leaves enough, or the values do not read.
fn main_size(values: &str, vertical: bool) -> Option<u32> {
    let v: Vec<&str> = values.split_whitespace().collect();
    let [w, h, mw, mh] = v[..] else { return None };
    let (total, option, room) = if vertical {
        (w.parse::<u32>().ok()?, mw, MAIN_LAYOUT_ROOM.0)
    } else {
        (h.parse::<u32>().ok()?, mh, MAIN_LAYOUT_ROOM.1)
    };
    let main = match option.strip_suffix('%') {
        Some(pct) => total * pct.parse::<u32>().ok()? / 100,
        None => option.parse().ok()?,
    };
    (total.saturating_sub(main) < room).then_some(total / 2)
}

/// What was made: per window, its id and its pane ids (the session's id is
/// in `made`).
type Made = Vec<(String, Vec<String>)>;

/// Sends the commands in order; `made` holds the new session's id as soon as
/// it exists (for the caller's undo).
async fn create(
    session: &Session,
    a: &Args,
    tails: &[Vec<Tail>],
    made: &mut Option<String>,
) -> Result<Made, ToolOutput> {
    let mut out: Made = Vec::new();
    for (w, (win, panes)) in a.windows.iter().zip(tails).enumerate() {
        let (first, cwd) = &panes[0];
        let (window, pane) = if w == 0 {
            let what = Create::Session {
                name: Some(a.session.to_string()),
                window_name: win.name.as_deref().map(str::to_string),
                width: a.width,
                height: a.height,
            };
            let cmd = what.argv(what.made(), first.iter().cloned());
            let (ids, _) = spawn(session, &cmd, what.made(), cwd.as_deref()).await?;
            *made = Some(ids[0].clone());
            (ids[1].clone(), ids[2].clone())
        } else {
            let what = Create::Window {
                session: made.clone().unwrap_or_default(),
                index: None,
                name: win.name.as_deref().map(str::to_string),
                select: false,
            };
            let cmd = what.argv(what.made(), first.iter().cloned());
            let (ids, _) = spawn(session, &cmd, what.made(), cwd.as_deref()).await?;
            (ids[0].clone(), ids[1].clone())
        };
        let mut pane_ids = vec![pane];
        for (tail, cwd) in &panes[1..] {
            // Each split divides the pane made last; the layout evens them.
            let what = Create::Split {
                pane: pane_ids.last().cloned().unwrap_or_default(),
                side: None,
                size: None,
                select: false,
            };
            let cmd = what.argv(what.made(), tail.iter().cloned());
            let (ids, _) = spawn(session, &cmd, what.made(), cwd.as_deref()).await?;
            pane_ids.push(ids[1].clone());
        }
        if let Some(layout) = win.layout {
            action::run(session, &["select-layout", "-t", &window, layout.name()]).await?;
            if pane_ids.len() > 1 {
                let at = (made.as_deref().unwrap_or_default(), window.as_str());
                size_main_pane(session, at, &pane_ids[0], layout).await?;
            }
        }
        out.push((window, pane_ids));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_main_pane_takes_half_a_window_its_option_would_fill() {
        // tmux's defaults in an 80x24 window: the others would get 1 column, 1 row.
        assert_eq!(main_size("80 24 80 24", true), Some(40));
        assert_eq!(main_size("80 24 80 24", false), Some(12));
        // A wide window leaves room: tmux's sizing stands.
        assert_eq!(main_size("200 50 80 24", true), None);
        assert_eq!(main_size("200 50 80 24", false), None);
        assert_eq!(main_size("100 30 95% 50%", true), Some(50));
        assert_eq!(main_size("100 30 60% 50%", true), None);
        assert_eq!(main_size("garbled", true), None);
    }
}
