//! The ids the tools take — pane `%N`, window `@N`, session `$N` — and the
//! generation that guards them: one type and one pattern each, so every input
//! schema spells them the same way and every output schema uses the same
//! patterns ([`PANE_ID`], [`WINDOW_ID`], [`SESSION_ID`]).
//!
//! The types only carry the text: the published schema (derived from them by
//! [`crate::toolkit::schemas::derived::input_of`]) is checked before a tool runs, so a value that
//! reaches a tool already has the shape.

/// A pane id as tmux prints `#{pane_id}`.
pub const PANE_ID: &str = "^%[0-9]+$";
/// A window id as tmux prints `#{window_id}`.
pub const WINDOW_ID: &str = "^@[0-9]+$";
/// A session id as tmux prints `#{session_id}`.
pub const SESSION_ID: &str = "^\\$[0-9]+$";
/// Any of the three, where the record's kind says which.
pub const ANY_ID: &str = "^[%@$][0-9]+$";
/// Longest name accepted (a session's, a key's): a bound the broker stores
/// values under, not one a real name reaches, so it is enforced but not
/// published (`derived::lean_input`).
pub const NAME_MAX: usize = 256;
/// Longest id accepted (tmux's ids are a sigil and a `u32`).
const ID_MAX: usize = 32;

/// `text_type!(Name, { schema })`: a string argument that publishes `schema`
/// (inlined wherever it is used) and reads as a `&str`.
macro_rules! text_type {
    ($(#[$doc:meta])* $name:ident, $schema:tt) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        $crate::inline_schema!($name, $schema);
    };
}
pub(crate) use text_type;

text_type!(
    /// `%N`: a pane, by the id tmux gave it.
    PaneId,
    { "type": "string", "pattern": PANE_ID, "maxLength": ID_MAX }
);
text_type!(
    /// `@N`: a window, by the id tmux gave it.
    WindowId,
    { "type": "string", "pattern": WINDOW_ID, "maxLength": ID_MAX }
);
text_type!(
    /// `$N`: a session, by the id tmux gave it.
    SessionId,
    { "type": "string", "pattern": SESSION_ID, "maxLength": ID_MAX }
);
text_type!(
    /// The generation an id was read under (every read returns it). When
    /// given and not this tmux server's, nothing is sent: an id from a server
    /// that has since restarted never reaches whatever reuses it.
    Generation,
    { "type": "string", "minLength": 1, "maxLength": 128 }
);
text_type!(
    /// A session filter: its id (`$1`) or its name.
    SessionFilter,
    { "type": "string", "minLength": 1, "maxLength": NAME_MAX, "description": "Its id ($1) or name." }
);

/// Arguments that name one entity by id, optionally guarded by a generation
/// (`kill_pane`'s `paneId`, `rename_window`'s `windowId` …).
pub trait Guarded: Sync {
    fn id(&self) -> &str;
    fn generation(&self) -> Option<&str>;
}

/// `guarded!(Args, pane_id)`: `Args` names its entity by `pane_id` and
/// carries `generation: Option<Generation>`.
#[macro_export]
macro_rules! guarded {
    ($args:ty, $field:ident) => {
        impl $crate::toolkit::target::ids::Guarded for $args {
            fn id(&self) -> &str {
                &self.$field
            }
            fn generation(&self) -> Option<&str> {
                self.generation.as_deref()
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolkit::schemas::derived::input_of;
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sample {
        /// The pane, e.g. %3
        /// (see list_panes).
        pane_id: PaneId,
        generation: Option<Generation>,
        window: Option<WindowId>,
    }

    #[test]
    fn ids_publish_one_pattern_and_options_stay_non_nullable() {
        let s = input_of::<Sample>();
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "paneId": { "type": "string", "pattern": PANE_ID, "maxLength": 32, "description": "The pane, e.g. %3 (see list_panes)." },
                    "generation": { "type": "string", "minLength": 1, "maxLength": 128 },
                    "window": { "type": "string", "pattern": WINDOW_ID, "maxLength": 32 }
                },
                "additionalProperties": false,
                "required": ["paneId"]
            })
        );
        let v = jsonschema::validator_for(&s).unwrap();
        assert!(v.is_valid(&json!({ "paneId": "%3" })));
        assert!(!v.is_valid(&json!({ "paneId": "3" })));
        assert!(!v.is_valid(&json!({ "paneId": "%3", "generation": null })));
        let a: Sample =
            serde_json::from_value(json!({ "paneId": "%3", "generation": "g" })).unwrap();
        assert_eq!((&*a.pane_id, a.generation.as_deref()), ("%3", Some("g")));
    }
}
