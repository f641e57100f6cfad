//! `show_environment` (libtmux family): environment variables by name, read
//! without firing a hook. `show-environment` runs `after-show-environment`,
//! so values come from format expansion (see `show_options`): tmux's
//! `format_find` falls back to the session's environment, then the global
//! one, for a key that is neither an option nor a format variable. Those are
//! lower case (options: `a-b`, `@x`; formats: `a_b`), so a name holding an
//! upper-case letter can only be a variable; any other name is reported
//! unreadable rather than read as something else. Formats cannot list the
//! environment, or tell an unset variable from an empty one.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::records::options::{
    context, escaped_note, expand_keys, ContextRecord, NamedValue,
};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::SessionFilter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const SPEC: ToolSpec = ToolSpec::new(
    "show_environment",
    Annotations::read_only("Show environment"),
    input_of::<Args>,
    schema_of::<Shown>,
    |c| c.run(call),
)
.description("Read tmux environment variables, globally or as a session sees them (names with an upper-case letter).")
.details("Read tmux environment variables by name without firing a hook (format expansion, never show-environment): the global environment, or as one session sees it (its own, then the global). Names holding an upper-case letter (PATH, LANG …) can be read; an all-lower-case name is reported unreadable, since tmux would read a format or option of that name instead. An empty value may also mean unset. Read-only.")
.listed(crate::toolkit::call::spec::Listed::OptIn)
.sample(|_| json!({"names": ["PATH"]}));

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// e.g. PATH.
    #[schemars(
        length(min = 1, max = 64),
        inner(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]{0,255}$"))
    )]
    names: Vec<String>,
    ///
    /// Its environment, then the global one.
    session: Option<SessionFilter>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Shown {
    context: ContextRecord,
    variables: Vec<NamedValue>,
}

/// Whether `name` can only be an environment variable to `format_find`.
fn readable(name: &str) -> bool {
    name.bytes().any(|b| b.is_ascii_uppercase())
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let ctx = context(session, args.session.as_deref(), None, None).await?;
    let keys: Vec<&str> = args
        .names
        .iter()
        .map(String::as_str)
        .filter(|n| readable(n))
        .collect();
    let mut values = if keys.is_empty() {
        Vec::new()
    } else {
        expand_keys(session, &ctx, &keys).await?
    }
    .into_iter();
    let version = session.broker.tmux_version();
    let variables: Vec<NamedValue> = args
        .names
        .iter()
        .map(|n| {
            if !readable(n) {
                return NamedValue { name: n.clone(), readable: false, value: None, note: Some("not read: an all-lower-case name may be a tmux format variable or option, which a format reads instead of the environment".into()) };
            }
            let v = values.next().unwrap_or_default();
            NamedValue { name: n.clone(), readable: true, note: escaped_note(&version, &v), value: Some(v) }
        })
        .collect();
    let text = variables
        .iter()
        .map(|v| {
            format!(
                "{}={}",
                v.name,
                v.value.as_deref().unwrap_or("(unreadable)")
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    Ok(ToolOutput::typed(
        &Shown {
            context: ctx.record(),
            variables,
        },
        text,
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_names_with_an_upper_case_letter_are_read() {
        assert!(super::readable("PATH") && super::readable("Foo_bar") && super::readable("_X1"));
        assert!(
            !super::readable("host")
                && !super::readable("pane_id")
                && !super::readable("_")
                && !super::readable("x1")
        );
    }
}
