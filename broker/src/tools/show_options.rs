//! `show_options` (libtmux family): option values read without firing a hook.
//!
//! `show-options` runs the user's `after-show-options` hook, so values are read
//! by format expansion instead (`Registry::expand_format`, `list-commands -F`,
//! which has no after-hook). In tmux's `format_find` (3.3a–3.7c) a format key
//! is looked up as an option first: server options, then the pane's, the
//! window's, the global window options, the session's and the global session
//! options, each with inheritance; an array element is read as `name[N]`. The
//! value is the option's string form, not format-expanded, with flags in
//! their numeric form (`1`/`0`, `options_to_string(…, numeric)`). Only when no option
//! of that name exists does the lookup fall through to format variables and
//! the environment, so names are restricted to what can only be options:
//! `@user` options, names holding a `-`, and the six one-word options of every
//! tmux from 3.3a to 3.7c. What formats cannot tell: an empty value from an
//! unset or unknown option.
//!
//! The context comes from tmux's own loops: `#{S:…}` (a session, its current
//! window and active pane), `#{S:#{W:…}}` (a window) and `#{S:#{W:#{P:…}}}` (a
//! pane), filtered to the id asked for; no context means the global values.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::records::options::{
    context, escaped_note, expand_keys, ContextRecord, NamedValue,
};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::{PaneId, SessionFilter, WindowId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const SPEC: ToolSpec = ToolSpec::new(
    "show_options",
    Annotations::read_only("Show options"),
    input_of::<Args>,
    schema_of::<Shown>,
    |c| c.run(call),
)
.description("Read tmux option values, globally or as a session, window or pane sees them; a flag reads 1 or 0.")
.details("Read tmux option values by name without firing a hook (format expansion, never show-options): globally, or as one session, window (its active pane) or pane sees them (with inheritance). Names: @user options, tmux options (e.g. history-limit, status-format[0], mouse). Values are tmux's format form: a flag option reads 1 or 0 (show-options prints on/off); an empty value may also mean unset or unknown. Read-only.")
.listed(crate::toolkit::call::spec::Listed::OptIn)
.sample(|s| json!({"names": ["status", "history-limit"], "pane": s.pane}));

/// The one-word options (no `-`) of tmux 3.3a–3.7c; every other table option
/// has a `-`, which no format variable has.
const ONE_WORD: &[&str] = &[
    "backspace",
    "editor",
    "mouse",
    "prefix",
    "prefix2",
    "status",
];

/// A user option, a name with a `-` or a [`ONE_WORD`] option; either of the
/// latter two optionally with an array index.
fn name_pattern() -> String {
    format!(
        r"^(@[A-Za-z0-9_-]{{1,128}}|([a-z0-9]+(-[a-z0-9]+)+|{})(\[[0-9]{{1,5}}\])?)$",
        ONE_WORD.join("|")
    )
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// e.g. @my-option, history-limit, status-format[0].
    #[schemars(length(min = 1, max = 64), inner(regex(pattern = name_pattern()), length(max = 160)))]
    names: Vec<String>,
    session: Option<SessionFilter>,
    window: Option<WindowId>,
    pane: Option<PaneId>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Shown {
    context: ContextRecord,
    options: Vec<NamedValue>,
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let ctx = context(
        session,
        args.session.as_deref(),
        args.window.as_deref(),
        args.pane.as_deref(),
    )
    .await?;
    let keys: Vec<&str> = args.names.iter().map(String::as_str).collect();
    let values = expand_keys(session, &ctx, &keys).await?;
    let version = session.broker.tmux_version();
    let options: Vec<NamedValue> = args
        .names
        .iter()
        .zip(values)
        .map(|(n, v)| NamedValue {
            name: n.clone(),
            readable: true,
            note: escaped_note(&version, &v),
            value: Some(v),
        })
        .collect();
    let text = options
        .iter()
        .map(|o| format!("{} {}", o.name, o.value.as_deref().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(ToolOutput::typed(
        &Shown {
            context: ctx.record(),
            options,
        },
        text,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_only_what_cannot_be_a_format_variable() {
        let re = regex_lite(&name_pattern());
        for ok in [
            "@x",
            "@my-opt_2",
            "history-limit",
            "status-format[0]",
            "mouse",
            "status",
            "prefix2",
            "status[1]",
        ] {
            assert!(re.is_valid(&json!(ok)), "{ok}");
        }
        for bad in [
            "host",
            "pane_id",
            "pid",
            "version",
            "history_limit",
            "@",
            "x-",
            "#{host}",
            "a-b}",
            "status-left,",
            "History-limit",
            "editorx",
        ] {
            assert!(!re.is_valid(&json!(bad)), "{bad}");
        }
        assert!(ONE_WORD
            .iter()
            .all(|w| !w.contains('-') && re.is_valid(&json!(w))));
    }

    fn regex_lite(p: &str) -> jsonschema::Validator {
        jsonschema::validator_for(&json!({ "type": "string", "pattern": p })).unwrap()
    }
}
