//! Entity references, as every tool takes and returns them: the kind of an
//! entity (session `$N`, window `@N`, pane `%N`), the `{kind, id,
//! generation}` reference and its schema (docs/spec.md A.0.1), and the typed
//! references the tools' `Args` hold ([`PaneRef`], [`SessionRef`],
//! [`WindowRef`], [`AnyRef`]). Their derived schemas equal [`ref_schema`] of
//! their kind; a unit test keeps them equal. Finding what a reference names
//! is the resolver's (`target::resolver`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Session,
    Window,
    Pane,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Session => "session",
            Kind::Window => "window",
            Kind::Pane => "pane",
        }
    }

    /// The tmux command that ends an entity of this kind.
    pub fn kill_command(self) -> &'static str {
        match self {
            Kind::Session => "kill-session",
            Kind::Window => "kill-window",
            Kind::Pane => "kill-pane",
        }
    }

    fn id_pattern(self) -> &'static str {
        match self {
            Kind::Session => crate::toolkit::target::ids::SESSION_ID,
            Kind::Window => crate::toolkit::target::ids::WINDOW_ID,
            Kind::Pane => crate::toolkit::target::ids::PANE_ID,
        }
    }

    /// The kind of a printed tmux id (`$3`, `@7`, `%12`), checked for syntax.
    pub fn of_id(id: &str) -> Option<Kind> {
        let kind = match id.as_bytes().first()? {
            b'$' => Kind::Session,
            b'@' => Kind::Window,
            b'%' => Kind::Pane,
            _ => return None,
        };
        let digits = &id[1..];
        (!digits.is_empty() && id.len() <= 32 && digits.bytes().all(|b| b.is_ascii_digit()))
            .then_some(kind)
    }
}

/// `{kind, id, generation}` schema of one entity kind (A.0.1 syntax).
pub fn ref_schema(kind: Kind) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["kind", "id", "generation"],
        "properties": {
            "kind": { "const": kind.as_str() },
            "id": { "type": "string", "pattern": kind.id_pattern(), "maxLength": 32 },
            "generation": { "type": "string", "minLength": 1, "maxLength": 128 }
        }
    })
}

/// Any of the three entity references.
pub fn any_ref_schema() -> Value {
    json!({ "oneOf": [ref_schema(Kind::Session), ref_schema(Kind::Window), ref_schema(Kind::Pane)] })
}

// A pane reference as a typed value (its derived schema equals
// `ref_schema(Kind::Pane)`; a unit test keeps the two equal). A plain comment,
// not a doc comment: schemars would publish a doc comment as the schema's
// description, in every tool that takes or returns one.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PaneRef {
    pub kind: PaneKind,
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID), length(max = 32))]
    pub id: String,
    #[schemars(length(min = 1, max = 128))]
    pub generation: String,
}

#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub enum PaneKind {
    #[serde(rename = "pane")]
    Pane,
}

impl PaneRef {
    /// The kind, id and generation, as the resolver takes them.
    pub fn parts(&self) -> (Kind, &str, &str) {
        (Kind::Pane, &self.id, &self.generation)
    }

    pub fn new(id: &str, generation: &str) -> PaneRef {
        PaneRef {
            kind: PaneKind::Pane,
            id: id.to_string(),
            generation: generation.to_string(),
        }
    }
}

pub fn reference(kind: Kind, id: &str, generation: &str) -> Value {
    json!({ "kind": kind.as_str(), "id": id, "generation": generation })
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionRef {
    pub kind: SessionKind,
    #[schemars(regex(pattern = crate::toolkit::target::ids::SESSION_ID), length(max = 32))]
    pub id: String,
    #[schemars(length(min = 1, max = 128))]
    pub generation: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
pub enum SessionKind {
    #[serde(rename = "session")]
    Session,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowRef {
    pub kind: WindowKind,
    #[schemars(regex(pattern = crate::toolkit::target::ids::WINDOW_ID), length(max = 32))]
    pub id: String,
    #[schemars(length(min = 1, max = 128))]
    pub generation: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
pub enum WindowKind {
    #[serde(rename = "window")]
    Window,
}

impl SessionRef {
    /// The kind, id and generation, as the resolver takes them.
    pub fn parts(&self) -> (Kind, &str, &str) {
        (Kind::Session, &self.id, &self.generation)
    }

    pub fn new(id: &str, generation: &str) -> SessionRef {
        SessionRef {
            kind: SessionKind::Session,
            id: id.to_string(),
            generation: generation.to_string(),
        }
    }
}

impl WindowRef {
    /// The kind, id and generation, as the resolver takes them.
    pub fn parts(&self) -> (Kind, &str, &str) {
        (Kind::Window, &self.id, &self.generation)
    }

    pub fn new(id: &str, generation: &str) -> WindowRef {
        WindowRef {
            kind: WindowKind::Window,
            id: id.to_string(),
            generation: generation.to_string(),
        }
    }
}

// Any of the three references (its schema accepts exactly one kind each; as
// an argument, the `kind` decides which). Not a doc comment, which schemars
// would publish (as `PaneRef`'s).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AnyRef {
    Session(SessionRef),
    Window(WindowRef),
    Pane(PaneRef),
}

impl AnyRef {
    /// The kind, id and generation, whichever the variant.
    pub fn parts(&self) -> (Kind, &str, &str) {
        match self {
            AnyRef::Session(r) => r.parts(),
            AnyRef::Window(r) => r.parts(),
            AnyRef::Pane(r) => r.parts(),
        }
    }

    pub fn new(kind: Kind, id: &str, generation: &str) -> AnyRef {
        use Kind;
        match kind {
            Kind::Session => AnyRef::Session(SessionRef::new(id, generation)),
            Kind::Window => AnyRef::Window(WindowRef::new(id, generation)),
            Kind::Pane => AnyRef::Pane(PaneRef::new(id, generation)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolkit::schemas::derived::schema_of;
    use serde_json::json;

    #[test]
    fn kinds_of_ids() {
        assert_eq!(Kind::of_id("$12"), Some(Kind::Session));
        assert_eq!(Kind::of_id("@0"), Some(Kind::Window));
        assert_eq!(Kind::of_id("%3"), Some(Kind::Pane));
        assert_eq!(Kind::of_id("%"), None);
        assert_eq!(Kind::of_id("%3x"), None);
    }

    #[test]
    fn typed_pane_ref_has_the_published_schema() {
        let derived = crate::toolkit::schemas::derived::schema_of::<PaneRef>();
        let v = jsonschema::validator_for(&derived).unwrap();
        let hand = jsonschema::validator_for(&ref_schema(Kind::Pane)).unwrap();
        for r in [
            json!({ "kind": "pane", "id": "%3", "generation": "g" }),
            json!({ "kind": "pane", "id": "3", "generation": "g" }),
            json!({ "kind": "window", "id": "%3", "generation": "g" }),
            json!({ "kind": "pane", "id": "%3", "generation": "" }),
            json!({ "kind": "pane", "id": "%3" }),
        ] {
            assert_eq!(v.is_valid(&r), hand.is_valid(&r), "{r}");
        }
        // A published output schema does not forbid other fields
        // (`derived::lean_output`); the serialized type never has one.
        let extra = json!({ "kind": "pane", "id": "%3", "generation": "g", "x": 1 });
        assert!(v.is_valid(&extra) && !hand.is_valid(&extra));
        assert_eq!(
            serde_json::to_value(PaneRef::new("%3", "g")).unwrap(),
            reference(Kind::Pane, "%3", "g")
        );
    }

    #[test]
    fn typed_refs_have_the_published_schemas() {
        for (kind, derived, other) in [
            (Kind::Session, schema_of::<SessionRef>(), "window"),
            (Kind::Window, schema_of::<WindowRef>(), "session"),
        ] {
            let v = jsonschema::validator_for(&derived).unwrap();
            let hand = jsonschema::validator_for(&ref_schema(kind)).unwrap();
            let k = kind.as_str();
            let id = if kind == Kind::Session { "$3" } else { "@3" };
            for r in [
                json!({ "kind": k, "id": id, "generation": "g" }),
                json!({ "kind": k, "id": "3", "generation": "g" }),
                json!({ "kind": other, "id": id, "generation": "g" }),
                json!({ "kind": k, "id": "%3", "generation": "g" }),
                json!({ "kind": k, "id": id, "generation": "" }),
                json!({ "kind": k, "id": id }),
            ] {
                assert_eq!(v.is_valid(&r), hand.is_valid(&r), "{k}: {r}");
            }
            // A published output schema does not forbid other fields
            // (`derived::lean_output`); the serialized type never has one.
            let extra = json!({ "kind": k, "id": id, "generation": "g", "x": 1 });
            assert!(v.is_valid(&extra) && !hand.is_valid(&extra), "{k}");
        }
        assert_eq!(
            serde_json::to_value(SessionRef::new("$3", "g")).unwrap(),
            reference(Kind::Session, "$3", "g")
        );
        assert_eq!(
            serde_json::to_value(WindowRef::new("@3", "g")).unwrap(),
            reference(Kind::Window, "@3", "g")
        );
        for kind in [Kind::Session, Kind::Window, Kind::Pane] {
            let id = match kind {
                Kind::Session => "$1",
                Kind::Window => "@1",
                Kind::Pane => "%1",
            };
            assert_eq!(
                serde_json::to_value(AnyRef::new(kind, id, "g")).unwrap(),
                reference(kind, id, "g")
            );
        }
    }
}
