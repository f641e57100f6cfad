//! MCP prompts: the tasks people bring to a tmux agent, as messages that name
//! the tools to use (docs/spec.md A.0.10).
//!
//! A prompt is one [`PromptSpec`], registered once in [`CATALOG`]: its typed
//! arguments (each says what it names, for `completion/complete`) and how its
//! message reads. `prompts/get` checks every argument before it renders — a
//! pane must exist and be visible to the session — so an agent is never told
//! to act on something it cannot reach. A session lists only the prompts whose
//! tools it may call. Nothing here sends a command to tmux.

mod catalog;

use crate::completion::{self, Kind};
use crate::session::Session;
use std::collections::HashMap;

pub use catalog::CATALOG;

/// A prompt, whole.
pub struct PromptSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub arguments: &'static [Argument],
    /// The tools its message tells the agent to call: listed only when the
    /// session may call each of them.
    pub tools: &'static [&'static str],
    /// The message, from arguments already checked.
    pub render: fn(&Given) -> String,
}

pub struct Argument {
    pub name: &'static str,
    pub description: &'static str,
    pub required: bool,
    pub kind: Kind,
    /// Longest value accepted, in bytes.
    pub max_len: usize,
}

/// The arguments of one `prompts/get`, checked.
pub struct Given {
    values: HashMap<String, String>,
    /// Whether the pane was handed over with the key binding through the
    /// `cursor` given (then readable whatever the session's scope).
    pub handed_over: bool,
}

impl Given {
    /// The value of argument `name`, if given (required ones always are).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The value of a required argument.
    pub fn arg(&self, name: &str) -> &str {
        self.get(name).unwrap_or_default()
    }
}

/// Why a prompt could not be rendered (JSON-RPC invalid params: nothing was
/// sent to tmux).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptError {
    /// The argument at fault, if one is.
    pub argument: Option<String>,
    pub message: String,
}

impl PromptError {
    fn at(argument: &str, message: String) -> PromptError {
        PromptError {
            argument: Some(argument.to_string()),
            message: format!("argument {argument:?}: {message}"),
        }
    }
}

/// The prompts `session` lists (and may get), in catalog order.
pub fn visible(session: &Session) -> impl Iterator<Item = &'static PromptSpec> + '_ {
    CATALOG
        .iter()
        .filter(|p| p.tools.iter().all(|t| session.enabled.contains(*t)))
}

/// Prompt `name` if `session` lists it, else why not.
pub fn find(session: &Session, name: &str) -> Result<&'static PromptSpec, PromptError> {
    if let Some(p) = visible(session).find(|p| p.name == name) {
        return Ok(p);
    }
    let listed: Vec<&str> = visible(session).map(|p| p.name).collect();
    let message = match CATALOG.iter().find(|p| p.name == name) {
        Some(p) => {
            let missing: Vec<&str> = p
                .tools
                .iter()
                .copied()
                .filter(|t| !session.enabled.contains(*t))
                .collect();
            format!(
                "prompt {name:?} needs {} which this session cannot call; prompts/list names the prompts it can get: {}",
                missing.join(", "),
                listed.join(", ")
            )
        }
        None => format!(
            "no prompt {name:?}; prompts/list names the prompts: {}",
            listed.join(", ")
        ),
    };
    Err(PromptError {
        argument: None,
        message,
    })
}

impl PromptSpec {
    pub fn argument(&self, name: &str) -> Option<&'static Argument> {
        self.arguments.iter().find(|a| a.name == name)
    }

    /// Checks `given` (names, presence, length, and that every pane, window
    /// and session named exists and is visible) and renders the message.
    pub async fn get(
        &self,
        session: &Session,
        given: HashMap<String, String>,
    ) -> Result<String, PromptError> {
        if let Some(unknown) = given.keys().find(|k| self.argument(k).is_none()) {
            let known: Vec<&str> = self.arguments.iter().map(|a| a.name).collect();
            return Err(PromptError::at(
                unknown,
                format!(
                    "prompt {:?} takes no such argument (it takes: {})",
                    self.name,
                    known.join(", ")
                ),
            ));
        }
        // An empty value is no value (a form's field left blank).
        let values: HashMap<String, String> =
            given.into_iter().filter(|(_, v)| !v.is_empty()).collect();
        for a in self.arguments {
            match values.get(a.name) {
                None if a.required => {
                    return Err(PromptError::at(a.name, "required, and not given".into()))
                }
                Some(v) if v.len() > a.max_len => {
                    return Err(PromptError::at(
                        a.name,
                        format!("{} bytes; at most {} are accepted", v.len(), a.max_len),
                    ))
                }
                Some(v) if v.contains('\0') => {
                    return Err(PromptError::at(a.name, "contains a NUL character".into()))
                }
                _ => {}
            }
        }
        let handed_over = match (values.get("pane"), values.get("cursor")) {
            (Some(p), Some(c)) => crate::resources::handed_over(session, p, c),
            _ => false,
        };
        if values.contains_key("cursor") && !handed_over {
            return Err(PromptError::at(
                "cursor",
                format!(
                    "not a hand-off cursor of pane {} (prefix + A prints one in the line it hands over)",
                    values.get("pane").map_or("?", String::as_str)
                ),
            ));
        }
        let given = Given {
            values,
            handed_over,
        };
        self.check_targets(session, &given).await?;
        Ok((self.render)(&given))
    }

    /// Every pane, window and session named exists and the session may see it
    /// (a handed-over pane is visible to every agent).
    async fn check_targets(&self, session: &Session, given: &Given) -> Result<(), PromptError> {
        let named: Vec<&Argument> = self
            .arguments
            .iter()
            .filter(|a| given.get(a.name).is_some())
            .filter(|a| matches!(a.kind, Kind::Pane | Kind::Window | Kind::SessionName))
            .collect();
        if named.is_empty() {
            return Ok(());
        }
        let mut snap = completion::table(session)
            .await
            .map_err(|e| PromptError::at(named[0].name, e))?;
        for a in named {
            let v = given.arg(a.name);
            let (sigil, what) = match a.kind {
                Kind::Pane => (Some('%'), "pane"),
                Kind::Window => (Some('@'), "window"),
                _ => (None, "session named"),
            };
            if let Some(sigil) = sigil.filter(|s| !is_id(v, *s)) {
                return Err(PromptError::at(
                    a.name,
                    format!("{v:?} is not a {what} id ({sigil}N)"),
                ));
            }
            let mut found = exists(session, &snap, a.kind, v, given.handed_over);
            if !found {
                // Made since the table was read? Read it again before refusing.
                if let Ok(fresh) = session.broker.registry.refresh().await {
                    snap = fresh;
                    found = exists(session, &snap, a.kind, v, given.handed_over);
                }
            }
            if !found {
                return Err(PromptError::at(
                    a.name,
                    format!("no {what} {v:?} that this session may see (completion/complete offers the ones it may)"),
                ));
            }
        }
        Ok(())
    }
}

/// `v` is `sigil` followed by digits, as tmux prints an id.
fn is_id(v: &str, sigil: char) -> bool {
    v.strip_prefix(sigil)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn exists(
    session: &Session,
    snap: &tmux_mcp_engine::registry::Snapshot,
    kind: Kind,
    v: &str,
    handed_over: bool,
) -> bool {
    match kind {
        Kind::Pane => snap
            .pane(v)
            .is_some_and(|p| handed_over || session.can_see(p)),
        Kind::Window => session.visible(snap).any(|p| p.window_id == v),
        Kind::SessionName => session
            .visible(snap)
            .any(|p| p.placements.iter().any(|pl| pl.session_name == v)),
        Kind::Tool | Kind::Free => true,
    }
}
