//! `resize_pane` (libtmux family, mutating tier): one of three changes to a
//! pane's size — an absolute `width`/`height` (`resize-pane -x/-y`), an
//! `adjust` by cells in one direction (`-U/-D/-L/-R N`), or `zoom` (the pane
//! filling its window). tmux's `-Z` toggles; `zoom` states what the caller
//! wants and is sent only when the window is not in that state already, so a
//! repeated call never undoes the first. Sizes are limited by the window:
//! the result reports the size tmux actually gave.

use crate::guarded;
use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::action::{self, SelfRule};
use crate::toolkit::libtmux::arrange::{self, PaneAction};
use crate::toolkit::libtmux::wording;
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::schemas::patterns::INT_MAX;
use crate::toolkit::target::ids::{Generation, PaneId};
use schemars::JsonSchema;
use serde::Deserialize;

pub const SPEC: ToolSpec = ToolSpec::new(
    "resize_pane",
    Annotations::mutating("Resize pane", false),
    input_of::<Args>,
    schema_of::<PaneAction>,
    |c| c.run(call),
)
.description("Resize a pane with one of: width and/or height, adjust (move a border), zoom.")
.details("Resize a pane: give exactly one of width and/or height (cells; limited by the window), adjust {direction: up|down|left|right, cells} (move the pane's border), or zoom (true: the pane fills its window, false: back to the layout; sent only when the window's zoom state differs, tmux's -Z being a toggle). Optional generation. Returns the pane and window records read back from tmux (the size tmux gave) and whether the window is zoomed.");

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
    generation: Option<Generation>,
    /// Cells.
    #[schemars(range(min = 1, max = INT_MAX))]
    width: Option<i64>,
    /// Cells.
    #[schemars(range(min = 1, max = INT_MAX))]
    height: Option<i64>,
    adjust: Option<Adjust>,
    /// true: the pane fills its window; false: unzoom.
    zoom: Option<bool>,
}
guarded!(Args, pane_id);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Adjust {
    direction: Border,
    /// How far to move the border.
    #[schemars(range(min = 1, max = INT_MAX))]
    cells: i64,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Border {
    Up,
    Down,
    Left,
    Right,
}

impl Border {
    fn as_str(self) -> &'static str {
        match self {
            Border::Up => "up",
            Border::Down => "down",
            Border::Left => "left",
            Border::Right => "right",
        }
    }
}

/// The tmux commands of one resize (argv each), and a phrase for the text.
fn commands(
    a: &Args,
    pane: &str,
    window_zoomed: bool,
    pane_active: bool,
) -> Result<(Vec<Vec<String>>, String), ToolOutput> {
    let sized = a.width.is_some() || a.height.is_some();
    let modes =
        usize::from(sized) + usize::from(a.adjust.is_some()) + usize::from(a.zoom.is_some());
    if modes != 1 {
        return Err(wording::action_error("Arguments width/height, adjust, zoom: give exactly one of them (width and height may go together).", Delivery::NotSent));
    }
    let base = || vec!["resize-pane".to_string(), "-t".into(), pane.to_string()];
    if sized {
        let mut cmd = base();
        if let Some(w) = a.width {
            cmd.extend(["-x".into(), w.to_string()]);
        }
        if let Some(h) = a.height {
            cmd.extend(["-y".into(), h.to_string()]);
        }
        return Ok((vec![cmd], "resized".into()));
    }
    if let Some(adj) = &a.adjust {
        let flag = match adj.direction {
            Border::Up => "-U",
            Border::Down => "-D",
            Border::Left => "-L",
            Border::Right => "-R",
        };
        let mut cmd = base();
        cmd.extend([flag.into(), adj.cells.to_string()]);
        return Ok((
            vec![cmd],
            format!("border moved {} by {}", adj.direction.as_str(), adj.cells),
        ));
    }
    let want = a.zoom.unwrap_or(false);
    let toggle = || {
        let mut cmd = base();
        cmd.push("-Z".into());
        cmd
    };
    // A zoomed window shows its active pane; zooming another pane of it means
    // unzooming first, then zooming that pane.
    Ok(match (want, window_zoomed, pane_active) {
        (true, true, true) => (Vec::new(), "already zoomed; nothing sent".into()),
        (true, true, false) => (
            vec![toggle(), toggle()],
            "zoomed (the window was zoomed on another pane)".into(),
        ),
        (true, false, _) => (vec![toggle()], "zoomed".into()),
        (false, true, _) => (vec![toggle()], "unzoomed".into()),
        (false, false, _) => (Vec::new(), "window not zoomed; nothing sent".into()),
    })
}

async fn call(session: &Session, a: Args) -> Result<ToolOutput, ToolOutput> {
    // Argument conflicts are refused before the target is even read.
    commands(&a, &a.pane_id, false, true)?;
    let t = action::target_of(session, &a, SelfRule::Allowed).await?;
    let Some(pane) = t.pane() else {
        return Err(wording::action_error(
            &format!("{} is not a pane.", t.id),
            Delivery::NotSent,
        ));
    };
    let (cmds, what) = commands(&a, &t.id, pane.window_zoomed, pane.active)?;
    for cmd in &cmds {
        let argv: Vec<&str> = cmd.iter().map(String::as_str).collect();
        action::run(session, &argv).await?;
    }
    let after = arrange::read_back(session, "resized the pane").await?;
    let now = after.pane(session, &t.id)?;
    let text = format!(
        "Pane {}: {what}; now {}x{}{}.",
        t.id,
        now.width,
        now.height,
        if now.window_zoomed {
            ", window zoomed"
        } else {
            ""
        }
    );
    after.pane_action(session, &t.id, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn args(v: Value) -> Args {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn exactly_one_mode_and_zoom_is_stated_not_toggled() {
        for bad in [
            json!({ "paneId": "%1" }),
            json!({ "paneId": "%1", "width": 3, "zoom": true }),
            json!({ "paneId": "%1", "adjust": { "direction": "up", "cells": 1 }, "height": 2 }),
        ] {
            let e = commands(&args(bad), "%1", false, true).unwrap_err();
            assert!(
                e.text.contains("give exactly one of them")
                    && e.text.ends_with("Nothing was sent to tmux."),
                "{}",
                e.text
            );
        }
        let (c, _) = commands(
            &args(json!({ "paneId": "%1", "width": 30, "height": 5 })),
            "%1",
            false,
            true,
        )
        .unwrap();
        assert_eq!(c, [["resize-pane", "-t", "%1", "-x", "30", "-y", "5"]]);
        let (c, _) = commands(
            &args(json!({ "paneId": "%1", "adjust": { "direction": "left", "cells": 4 } })),
            "%1",
            false,
            true,
        )
        .unwrap();
        assert_eq!(c, [["resize-pane", "-t", "%1", "-L", "4"]]);
        let zoom = |want: bool, zoomed: bool, active: bool| {
            commands(
                &args(json!({ "paneId": "%1", "zoom": want })),
                "%1",
                zoomed,
                active,
            )
            .unwrap()
            .0
            .len()
        };
        assert_eq!(
            (
                zoom(true, false, false),
                zoom(true, true, true),
                zoom(true, true, false)
            ),
            (1, 0, 2)
        );
        assert_eq!((zoom(false, true, true), zoom(false, false, true)), (1, 0));
    }
}
