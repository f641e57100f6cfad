//! How the libtmux family's input and arrange tools act on tmux: a target
//! named by its id (and, when the caller has it, the generation it was read
//! under), resolved on a fresh read, checked against this session's scope and
//! the self-protection rule, then tmux commands whose failures say whether
//! anything reached tmux. The seed family does the same through `seed::mutation` with
//! its envelope; both share `resolver::find` and `tmux_command::run_command`.
//!
//! [`typing_target`] is the target of a tool that types, refused when the
//! pane is dead. [`pane_flags`] reads a pane's boolean formats hook-free,
//! through `if-shell -F` and `list-commands -F`.

use crate::session::Session;
use crate::toolkit::acting::tmux_command;
use crate::toolkit::acting::tmux_command::Failure;
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::seed::envelope::Delivery;
use crate::toolkit::target::references::Kind;
use crate::toolkit::target::resolver;
use crate::toolkit::target::resolver::{Refusal, Target};

/// What a tool may do to the agent's own pane (the pane the relay runs in),
/// its window and its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelfRule {
    /// Typing into it (keys, paste, commands): only with `--allow-self`.
    Typing,
    /// Killing or respawning it: never, whatever the flags.
    Never,
    /// Selecting, resizing, renaming: harmless to the agent, allowed.
    Allowed,
}

/// The sentence that ends every error of the family: what reached tmux.
pub fn delivery_sentence(d: Delivery) -> &'static str {
    match d {
        Delivery::NotSent => "Nothing was sent to tmux.",
        Delivery::PossiblySent => "The command may have reached tmux.",
        Delivery::Observed => "tmux received the command.",
    }
}

/// A family error with its delivery sentence.
pub fn error(message: &str, delivery: Delivery) -> ToolOutput {
    ToolOutput::libtmux_error(format!(
        "{} {}",
        message.trim_end(),
        delivery_sentence(delivery)
    ))
}

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
    let mut out = error(&format!("{}{hint}", r.message()), Delivery::NotSent);
    out.refusal = r.kind();
    out
}

pub fn failed(f: &Failure) -> ToolOutput {
    // The transport messages already say what may have happened; keep one
    // sentence about delivery at the end.
    let message = f.message.trim_end_matches(" Nothing was sent.");
    error(message, f.delivery)
}

/// Resolves `id` (its kind from its sigil) for an action under `rule`.
pub async fn target(
    session: &Session,
    id: &str,
    generation: Option<&str>,
    rule: SelfRule,
) -> Result<Target, ToolOutput> {
    let Some(kind) = Kind::of_id(id) else {
        return Err(error(
            &format!("{id:?} is not a tmux id ($N session, @N window, %N pane)."),
            Delivery::NotSent,
        ));
    };
    let target = resolver::find(session, kind, id, generation)
        .await
        .map_err(|r| refused(&r))?;
    if target.holds_caller(session) {
        let what = match kind {
            Kind::Pane => "is the agent's own pane",
            Kind::Window => "holds the agent's own pane",
            Kind::Session => "holds the agent's own pane",
        };
        match rule {
            SelfRule::Never => return Err(error(&format!("{} {id} {what} (the pane the MCP relay runs in); it is never killed or respawned by an agent.", kind.as_str()), Delivery::NotSent)),
            SelfRule::Typing if !session.allow_self => {
                return Err(error(&format!("{} {id} {what} (the pane the MCP relay runs in); typing into it needs `tmux-mcp attach --allow-self`.", kind.as_str()), Delivery::NotSent));
            }
            _ => {}
        }
    }
    Ok(target)
}

/// The pane `id` for a tool that types into it: [`target`] under
/// [`SelfRule::Typing`], and refused when dead (remain-on-exit keeps the pane
/// but nothing reads its input). Nothing is sent when it refuses.
pub async fn typing_target(
    session: &Session,
    id: &str,
    generation: Option<&str>,
) -> Result<Target, ToolOutput> {
    let target = target(session, id, generation, SelfRule::Typing).await?;
    if target.panes[0].dead {
        return Err(error(&format!("Pane {id} is dead (its program exited and remain-on-exit keeps it); nothing would read the input."), Delivery::NotSent));
    }
    Ok(target)
}

/// Boolean formats of one pane, read in one hook-free round trip: each is an
/// `if-shell -F -t PANE FORMAT` (tmux runs no hook for if-shell) whose branch
/// prints `i=1` or `i=0` with `list-commands -F` (no hook either). A format that
/// expands to neither 1 nor 0 (unknown to this tmux) reads as `None`.
pub async fn pane_flags(
    session: &Session,
    id: &str,
    formats: &[&str],
) -> Result<Vec<Option<bool>>, ToolOutput> {
    let mut args: Vec<String> = Vec::new();
    for (i, f) in formats.iter().enumerate() {
        for (value, cond) in [
            ("1", format!("#{{==:{f},1}}")),
            ("0", format!("#{{==:{f},0}}")),
        ] {
            if !args.is_empty() {
                args.push(";".into());
            }
            args.extend([
                "if-shell".into(),
                "-F".into(),
                "-t".into(),
                id.to_string(),
                cond,
                format!("list-commands -F {i}={value} list-commands"),
            ]);
        }
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = session.broker.registry.run_tmux(&argv).await.map_err(|e| {
        error(
            &format!("Reading pane {id}'s state failed: {e}."),
            Delivery::NotSent,
        )
    })?;
    Ok((0..formats.len())
        .map(|i| {
            let line = |v: &str| out.lines().any(|l| l == format!("{i}={v}"));
            if line("1") {
                Some(true)
            } else if line("0") {
                Some(false)
            } else {
                None
            }
        })
        .collect())
}

/// Runs one tmux command of an action; the error says what reached tmux.
pub async fn run(session: &Session, argv: &[&str]) -> Result<String, ToolOutput> {
    tmux_command::run_command(&session.broker, argv)
        .await
        .map_err(|f| failed(&f))
}

/// The question for ending `t` (`verb`: "Kill", "Close"): what it is, and
/// every pane that closes with the program it runs.
pub fn ending(verb: &str, t: &Target) -> String {
    let what = format!("{} {}{}", t.kind.as_str(), t.id, quoted(t.name()));
    let panes: Vec<String> = t.panes.iter().map(pane_line).collect();
    format!(
        "{verb} {what}? {} pane(s) close, ending what runs there: {}.",
        panes.len(),
        panes.join("; ")
    )
}

/// A pane as the person knows it: id, place, program and pid.
pub fn pane_line(p: &tmux_mcp_engine::registry::Pane) -> String {
    let place = p
        .placements
        .first()
        .map(|pl| format!(" in {}:{}", pl.session_name, pl.window_index))
        .unwrap_or_default();
    if p.dead {
        format!("{}{place} (dead)", p.id)
    } else {
        format!("{}{place} running {} (pid {})", p.id, p.command, p.pid)
    }
}

fn quoted(name: Option<&str>) -> String {
    name.map(|n| format!(" ({n:?})")).unwrap_or_default()
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
        let e = error(
            "tmux send-keys exited with status 1: bad key",
            Delivery::Observed,
        );
        assert!(e.text.ends_with("tmux received the command."), "{}", e.text);
    }
}
