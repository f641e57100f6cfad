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

use super::criteria::Entity;
use super::ids::{PaneId, SessionFilter, WindowId};
use super::list_sessions::{self, fields, LinkFields};
use super::typed::input_of;
use super::typed::schema_of;
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tmux_mcp_core::feed::unvis_separators;
use tmux_mcp_core::feed::{field, RS, US};

pub const SPEC: ToolSpec = ToolSpec {
    name: "show_options",
    family: Family::Libtmux,
    description: "Read tmux option values, globally or as a session, window or pane sees them; a flag reads 1 or 0.",
    details: "Read tmux option values by name without firing a hook (format expansion, never show-options): globally, or as one session, window (its active pane) or pane sees them (with inheritance). Names: @user options, tmux options (e.g. history-limit, status-format[0], mouse). Values are tmux's format form: a flag option reads 1 or 0 (show-options prints on/off); an empty value may also mean unset or unknown. Read-only.",
    annotations: Annotations::read_only("Show options"),
    listed: super::Listed::OptIn,
    input_schema: input_of::<Args>,
    output_schema: schema_of::<Shown>,
    run,
};

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

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ContextRecord {
    pub kind: ContextKind,
    /// The session, window or pane id; absent for global values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

#[derive(Serialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(super) enum ContextKind {
    Global,
    Session,
    Window,
    Pane,
}

/// One value read by name (shared with `show_environment`).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct NamedValue {
    pub name: String,
    /// Whether the value could be read hook-free; when not, `value` is null and
    /// `note` says why.
    pub readable: bool,
    pub value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Where values are read: global, or one entity this agent may see, reached
/// through one session this agent may see (a window linked into several
/// sessions is read through the first visible one, so no other session's
/// options show).
pub(super) struct Context {
    pub kind: ContextKind,
    pub id: Option<String>,
    session_id: String,
    window_id: String,
}

impl Context {
    fn global() -> Context {
        Context {
            kind: ContextKind::Global,
            id: None,
            session_id: String::new(),
            window_id: String::new(),
        }
    }

    pub fn record(&self) -> ContextRecord {
        ContextRecord {
            kind: self.kind,
            id: self.id.clone(),
        }
    }

    /// The format that expands `row` (then RS) once for the context.
    fn wrap(&self, row: &str) -> String {
        use tmux_mcp_core::tmux::quote::{in_pane, when_equal};
        let row = format!("{row}{RS}");
        let session =
            |r: String| format!("#{{S:{}}}", when_equal("session_id", &self.session_id, &r));
        match self.kind {
            ContextKind::Global => row,
            ContextKind::Session => session(row),
            ContextKind::Window => session(format!(
                "#{{W:{}}}",
                when_equal("window_id", &self.window_id, &row)
            )),
            ContextKind::Pane => in_pane(
                &self.session_id,
                &self.window_id,
                self.id.as_deref().unwrap_or_default(),
                &row,
            ),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PaneWindow {
    id: String,
    window_id: String,
}

/// The context `session`/`window`/`pane` name (at most one), resolved in what
/// this agent may see. Two given are refused before anything is read.
pub(super) async fn context(
    session: &Session,
    s: Option<&str>,
    w: Option<&str>,
    p: Option<&str>,
) -> Result<Context, ToolOutput> {
    let given: Vec<&str> = [("session", s), ("window", w), ("pane", p)]
        .iter()
        .filter(|(_, v)| v.is_some())
        .map(|(k, _)| *k)
        .collect();
    if given.len() > 1 {
        return Err(ToolOutput::libtmux_error(format!(
            "Arguments {}: give at most one context. Nothing was sent to tmux.",
            given.join(" and ")
        )));
    }
    if given.is_empty() {
        return Ok(Context::global());
    }
    let (_, g) = list_sessions::graph(session).await?;
    if let Some(s) = s {
        let id = list_sessions::resolve_session(&g, "session", s)?;
        return Ok(Context {
            kind: ContextKind::Session,
            id: Some(id.clone()),
            session_id: id,
            window_id: String::new(),
        });
    }
    let links: Vec<LinkFields> = g.records(Entity::WindowLink).iter().map(fields).collect();
    let via = |window: &str| {
        links
            .iter()
            .find(|l| l.window_id == window)
            .map(|l| l.session_id.clone())
    };
    let missing = |field: &str, id: &str| {
        ToolOutput::libtmux_error(format!("Argument {field}: no {field} {id} is visible to this agent. Call list_{field}s for the ones it may see."))
    };
    if let Some(w) = w {
        let sid = via(w).ok_or_else(|| missing("window", w))?;
        return Ok(Context {
            kind: ContextKind::Window,
            id: Some(w.to_string()),
            session_id: sid,
            window_id: w.to_string(),
        });
    }
    let p = p.unwrap_or_default();
    let pane = g
        .records(Entity::Pane)
        .iter()
        .map(fields::<PaneWindow>)
        .find(|r| r.id == p)
        .ok_or_else(|| missing("pane", p))?;
    let sid = via(&pane.window_id).ok_or_else(|| missing("pane", p))?;
    Ok(Context {
        kind: ContextKind::Pane,
        id: Some(p.to_string()),
        session_id: sid,
        window_id: pane.window_id,
    })
}

/// The values of format keys `keys` in `ctx`, in order: one hook-free
/// expansion. Free-text sanitising replaces US, RS and LF in a value with `?`.
pub(super) async fn expand_keys(
    session: &Session,
    ctx: &Context,
    keys: &[&str],
) -> Result<Vec<String>, ToolOutput> {
    let row: Vec<String> = keys.iter().map(|k| field(k, true)).collect();
    let format = ctx.wrap(&row.join(&US.to_string()));
    let broker = &session.broker;
    let text = broker.registry.expand_format(&format).await.map_err(|e| {
        ToolOutput::libtmux_error(format!(
            "Could not read from tmux: {e}. Nothing was changed."
        ))
    })?;
    let text = unvis_separators(&broker.tmux_version(), &text);
    let Some(first) = text.split(RS).next().filter(|_| text.contains(RS)) else {
        let what = ctx.id.as_deref().unwrap_or("the server");
        return Err(ToolOutput::libtmux_error(format!(
            "{what} no longer exists; nothing was read."
        )));
    };
    let values: Vec<String> = first.split(US).map(str::to_string).collect();
    if values.len() != keys.len() {
        return Err(ToolOutput::libtmux_error(format!("tmux expanded {} value(s) for {} name(s) (a value holding tmux 3.4–3.5's escaped separator text?); nothing is reported.", values.len(), keys.len())));
    }
    Ok(values)
}

/// On tmux 3.4–3.5 control bytes in a value arrive as strvis `\NNN` escapes
/// and a backslash as itself, so a value holding a backslash is ambiguous.
pub(super) fn escaped_note(version: &str, value: &str) -> Option<String> {
    let escaped = tmux_mcp_core::tmux::version_at_least(version, 3, 4)
        && !tmux_mcp_core::tmux::version_at_least(version, 3, 6);
    (escaped && value.contains('\\')).then(|| format!("tmux {version} prints control characters as \\NNN escapes; this value holds a backslash, which may be one"))
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    c.run_fallible(call)
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

    #[test]
    fn contexts_wrap_rows_in_tmux_loops() {
        let c = Context {
            kind: ContextKind::Pane,
            id: Some("%3".into()),
            session_id: "$1".into(),
            window_id: "@2".into(),
        };
        assert_eq!(c.wrap("R"), format!("#{{S:#{{?#{{==:#{{session_id}},$1}},#{{W:#{{?#{{==:#{{window_id}},@2}},#{{P:#{{?#{{==:#{{pane_id}},%3}},R{RS},}}}},}}}},}}}}"));
        assert_eq!(Context::global().wrap("R"), format!("R{RS}"));
    }
}
