//! `show_hooks` (libtmux family): the hook entries set globally or on one
//! session, window or pane, read with `show-hooks`. tmux marks `show-hooks`
//! as a command with an after-hook, but no `after-show-hooks` hook exists in
//! its table (3.3a–3.7c), so it can never fire one; see `tmux_mcp_core::hooks`. The
//! broker never sets or changes a hook.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::records::options::{context, escaped_note, ContextKind, ContextRecord};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::{PaneId, SessionFilter, WindowId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const SPEC: ToolSpec = ToolSpec::new(
    "show_hooks",
    Annotations::read_only("Show hooks"),
    input_of::<Args>,
    schema_of::<Shown>,
    |c| c.run(call),
)
.description("The tmux hooks set globally or on a session, window or pane.")
.details("List the tmux hook entries (name, array index, command) set globally (session and window hooks) or set on one session, window or pane itself (not inherited), read with show-hooks, which fires no hook. Read-only; never changes a hook.")
.listed(crate::toolkit::call::spec::Listed::OptIn)
.sample(|_| json!({}));

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    session: Option<SessionFilter>,
    window: Option<WindowId>,
    pane: Option<PaneId>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Shown {
    context: ContextRecord,
    hooks: Vec<HookEntry>,
}

#[derive(Serialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HookEntry {
    name: String,
    index: u32,
    /// The command as tmux prints it.
    command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// `show-hooks` prints `NAME[I] COMMAND` per entry and a bare `NAME` for a hook
/// with none (see `tmux_mcp_core::hooks::has_entry`).
fn parse(text: &str, version: &str) -> Vec<HookEntry> {
    text.lines()
        .filter_map(|l| {
            let (head, command) = l.split_once(' ').unwrap_or((l, ""));
            let (name, rest) = head.split_once('[')?;
            let index = rest.strip_suffix(']')?.parse().ok()?;
            Some(HookEntry {
                name: name.to_string(),
                index,
                command: command.to_string(),
                note: escaped_note(version, command),
            })
        })
        .collect()
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let ctx = context(
        session,
        args.session.as_deref(),
        args.window.as_deref(),
        args.pane.as_deref(),
    )
    .await?;
    let id = ctx.id.clone().unwrap_or_default();
    // The entity may go between the context read and this one: the read
    // runs only while it exists (else a failing show-hooks would run the
    // person's command-error hook, tmux >= 3.5).
    let flag = match ctx.kind {
        ContextKind::Global | ContextKind::Session => "",
        ContextKind::Window => " -w",
        ContextKind::Pane => " -p",
    };
    let cmd: Vec<String> = match ctx.kind {
        ContextKind::Global => ["show-hooks", "-g", ";", "show-hooks", "-gw"]
            .map(String::from)
            .to_vec(),
        _ => tmux_mcp_core::hooks::while_exists(
            &id,
            &format!("show-hooks{flag} -t '{id}'"),
            Some(&tmux_mcp_core::hooks::print_gone()),
        ),
    };
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let text = session.broker.registry.run_tmux(&cmd).await.map_err(|e| {
        ToolOutput::libtmux_error(format!(
            "Could not read the hooks from tmux: {e}. Nothing was changed."
        ))
    })?;
    if text
        .lines()
        .any(|l| l == tmux_mcp_core::hooks::gone_marker())
    {
        return Err(ToolOutput::libtmux_error(format!(
            "{id} no longer exists; nothing was read. Nothing was changed."
        )));
    }
    let hooks = parse(&text, &session.broker.tmux_version());
    let summary = if hooks.is_empty() {
        "no hook entries".to_string()
    } else {
        hooks
            .iter()
            .map(|h| format!("{}[{}] {}", h.name, h.index, h.command))
            .collect::<Vec<_>>()
            .join("\n")
    };
    Ok(ToolOutput::typed(
        &Shown {
            context: ctx.record(),
            hooks,
        },
        summary,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_parsed_and_unset_names_skipped() {
        let h = parse("after-bind-key\nafter-new-window[0] run-shell \"echo a;b\"\nafter-new-window[3] display-message x\npane-exited[12]\n", "3.3a");
        assert_eq!(h.len(), 3);
        assert_eq!(
            (h[0].name.as_str(), h[0].index, h[0].command.as_str()),
            ("after-new-window", 0, "run-shell \"echo a;b\"")
        );
        assert_eq!((h[2].index, h[2].command.as_str()), (12, ""));
        assert!(
            parse("after-x[0] run-shell \\033", "3.5a")[0]
                .note
                .is_some()
                && parse("after-x[0] run-shell \\033", "3.7c")[0]
                    .note
                    .is_none()
        );
    }
}
