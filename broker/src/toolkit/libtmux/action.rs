//! How the libtmux family's input and arrange tools act on tmux: a target
//! named by its id (and, when the caller has it, the generation it was read
//! under), found by the family's [`wording::target`] and checked against the
//! self-protection rule, then tmux commands whose failures say whether
//! anything reached tmux ([`wording::failed`]). The seed family does the same
//! at its edge, `seed::mutation`.
//!
//! [`typing_target`] is the target of a tool that types, refused when the
//! pane is dead. [`pane_flags`] reads a pane's boolean formats hook-free,
//! through `if-shell -F` and `list-commands -F`.

use crate::session::Session;
use crate::toolkit::acting::tmux_command::{self, Delivery};
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::libtmux::wording::{self, action_error};
use crate::toolkit::target::ids::Guarded;
use crate::toolkit::target::references::Kind;
use crate::toolkit::target::resolver::Target;

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

/// Resolves `id` (its kind from its sigil) for an action under `rule`: the
/// family's [`wording::target`], then the self rule.
pub async fn target_under(
    session: &Session,
    id: &str,
    generation: Option<&str>,
    rule: SelfRule,
) -> Result<Target, ToolOutput> {
    let target = wording::target(session, id, generation).await?;
    let kind = target.kind;
    if target.holds_caller(session) {
        let what = match kind {
            Kind::Pane => "is the agent's own pane",
            Kind::Window => "holds the agent's own pane",
            Kind::Session => "holds the agent's own pane",
        };
        match rule {
            SelfRule::Never => return Err(action_error(&format!("{} {id} {what} (the pane the MCP relay runs in); it is never killed or respawned by an agent.", kind.as_str()), Delivery::NotSent)),
            SelfRule::Typing if !session.allow_self => {
                return Err(action_error(&format!("{} {id} {what} (the pane the MCP relay runs in); typing into it needs `tmux-mcp attach --allow-self`.", kind.as_str()), Delivery::NotSent));
            }
            _ => {}
        }
    }
    Ok(target)
}

/// [`target_under`] `rule` the entity `args` name, guarded by their
/// generation.
pub async fn target_of(
    session: &Session,
    args: &dyn Guarded,
    rule: SelfRule,
) -> Result<Target, ToolOutput> {
    target_under(session, args.id(), args.generation(), rule).await
}

/// The pane `id` for a tool that types into it: [`target_under`] the rule
/// [`SelfRule::Typing`], and refused when dead (remain-on-exit keeps the pane
/// but nothing reads its input). Nothing is sent when it refuses.
pub async fn typing_target(
    session: &Session,
    id: &str,
    generation: Option<&str>,
) -> Result<Target, ToolOutput> {
    let target = target_under(session, id, generation, SelfRule::Typing).await?;
    if target.panes[0].dead {
        return Err(action_error(&format!("Pane {id} is dead (its program exited and remain-on-exit keeps it); nothing would read the input."), Delivery::NotSent));
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
        action_error(
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
        .map_err(|f| wording::failed(&f))
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
