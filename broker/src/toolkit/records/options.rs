//! Reading tmux's configuration without firing a hook: values by format
//! expansion (`Registry::expand_format`), in the context of a session, window
//! or pane found from tmux's own loops (`#{S:…}`, `#{S:#{W:…}}`,
//! `#{S:#{W:#{P:…}}}`), or globally. `show_options`, `show_environment` and
//! `show_hooks` read through here; `tools/show_options.rs` says why formats.

use crate::session::Session;
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::records::criteria::Entity;
use crate::toolkit::records::graph::{self, fields, LinkFields};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tmux_mcp_core::feed::unvis_separators;
use tmux_mcp_core::feed::{field, RS, US};

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContextRecord {
    pub kind: ContextKind,
    /// The session, window or pane id; absent for global values.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::toolkit::target::ids::ANY_ID))]
    pub id: Option<String>,
}

#[derive(Serialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ContextKind {
    Global,
    Session,
    Window,
    Pane,
}

/// One value read by name (shared with `show_environment`).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamedValue {
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
pub struct Context {
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
pub async fn context(
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
    let (_, g) = graph::fresh(session).await?;
    if let Some(s) = s {
        let id = graph::resolve_session(&g, "session", s)?;
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
pub async fn expand_keys(
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
pub fn escaped_note(version: &str, value: &str) -> Option<String> {
    let escaped = tmux_mcp_core::tmux::version_at_least(version, 3, 4)
        && !tmux_mcp_core::tmux::version_at_least(version, 3, 6);
    (escaped && value.contains('\\')).then(|| format!("tmux {version} prints control characters as \\NNN escapes; this value holds a backslash, which may be one"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
