//! The libtmux family's words at its edge: the two shapes of its errors (an
//! action's, which ends with what reached tmux, [`action_error`]; a read's,
//! a reason and a hint, [`read_error`]), and the one target resolver and one
//! tmux command in those words ([`target`], [`refused`], [`failed`]). The seed
//! family's edge is `seed::mutation`; both word the same `resolver::find` and
//! `tmux_command::run_command`.
//!
//! Its results are built by `ToolOutput::libtmux_error` (text only) and
//! `ToolOutput::typed`.

use crate::session::Session;
use crate::toolkit::acting::tmux_command::{Delivery, Failure};
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::target::references::Kind;
use crate::toolkit::target::resolver::{self, Refusal, Target};

/// The sentence that ends every error of the family: what reached tmux.
pub fn delivery_sentence(d: Delivery) -> &'static str {
    match d {
        Delivery::NotSent => "Nothing was sent to tmux.",
        Delivery::PossiblySent => "The command may have reached tmux.",
        Delivery::Observed => "tmux received the command.",
    }
}

/// An action's error: `message`, then what reached tmux ([`delivery_sentence`]).
pub fn action_error(message: &str, delivery: Delivery) -> ToolOutput {
    ToolOutput::libtmux_error(format!(
        "{} {}",
        message.trim_end(),
        delivery_sentence(delivery)
    ))
}

/// A read's error (docs/spec.md B.0): `reason` + blank line + `hint`, no
/// structured content.
pub fn read_error(reason: &str, hint: Option<&str>) -> ToolOutput {
    ToolOutput::libtmux_error(match hint {
        Some(h) => format!("{reason}\n\n{h}"),
        None => reason.to_string(),
    })
}

/// The family's words for a [`Refusal`] of the one target resolver.
pub fn refused(r: &Refusal) -> ToolOutput {
    let hint = match r {
        Refusal::Gone {
            kind: Kind::Pane, ..
        } => " Call list_panes for the current ids.",
        Refusal::Gone {
            kind: Kind::Window, ..
        } => " Call list_windows for the current ids.",
        Refusal::Gone {
            kind: Kind::Session,
            ..
        } => " Call list_sessions for the current ids.",
        Refusal::Generation => " Read the ids again (list_panes) on this server.",
        _ => "",
    };
    let mut out = action_error(&format!("{}{hint}", r.message()), Delivery::NotSent);
    out.refusal = r.kind();
    out
}

/// The family's words for a tmux command's [`Failure`].
pub fn failed(f: &Failure) -> ToolOutput {
    // The transport messages already say what may have happened; keep one
    // sentence about delivery at the end.
    let message = f.message.trim_end_matches(" Nothing was sent.");
    action_error(message, f.delivery)
}

/// The target `id` names (its kind from its sigil): the one resolver,
/// `resolver::find`, its refusals in the family's words ([`refused`]).
/// Nothing is sent when it refuses. Reading tools (the waits) take it as it
/// is; acting tools through `action::target`, which adds the self rule.
pub async fn target(
    session: &Session,
    id: &str,
    generation: Option<&str>,
) -> Result<Target, ToolOutput> {
    let Some(kind) = Kind::of_id(id) else {
        return Err(action_error(
            &format!("{id:?} is not a tmux id ($N session, @N window, %N pane)."),
            Delivery::NotSent,
        ));
    };
    resolver::find(session, kind, id, generation)
        .await
        .map_err(|r| refused(&r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_end_with_what_reached_tmux() {
        let e = failed(&Failure {
            code: "transport_error",
            message: "tmux could not be reached for send-keys: x. Nothing was sent.".into(),
            delivery: Delivery::NotSent,
        });
        assert_eq!(
            e.text,
            "tmux could not be reached for send-keys: x. Nothing was sent to tmux."
        );
        assert!(e.is_error && e.structured.is_none());
        let e = refused(&Refusal::Gone {
            kind: Kind::Pane,
            id: "%9".into(),
        });
        assert_eq!(e.text, "pane %9 does not exist (any more). Call list_panes for the current ids. Nothing was sent to tmux.");
        let e = action_error(
            "tmux send-keys exited with status 1: bad key",
            Delivery::Observed,
        );
        assert!(e.text.ends_with("tmux received the command."), "{}", e.text);
    }
}
