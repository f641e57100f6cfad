//! Typed session and window references for the libtmux family's typed tools
//! (the pane one is `refs::PaneRef`). Their derived schemas equal
//! `refs::ref_schema` of their kind; a unit test keeps them equal.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionRef {
    pub kind: SessionKind,
    #[schemars(regex(pattern = super::ids::SESSION_ID), length(max = 32))]
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
    #[schemars(regex(pattern = super::ids::WINDOW_ID), length(max = 32))]
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
    /// The kind, id and generation, as `refs::resolve` takes them.
    pub fn parts(&self) -> (super::refs::Kind, &str, &str) {
        (super::refs::Kind::Session, &self.id, &self.generation)
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
    /// The kind, id and generation, as `refs::resolve` takes them.
    pub fn parts(&self) -> (super::refs::Kind, &str, &str) {
        (super::refs::Kind::Window, &self.id, &self.generation)
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
// would publish (as `refs::PaneRef`'s).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AnyRef {
    Session(SessionRef),
    Window(WindowRef),
    Pane(super::refs::PaneRef),
}

impl AnyRef {
    /// The kind, id and generation, whichever the variant.
    pub fn parts(&self) -> (super::refs::Kind, &str, &str) {
        match self {
            AnyRef::Session(r) => r.parts(),
            AnyRef::Window(r) => r.parts(),
            AnyRef::Pane(r) => r.parts(),
        }
    }

    pub fn new(kind: super::refs::Kind, id: &str, generation: &str) -> AnyRef {
        use super::refs::Kind;
        match kind {
            Kind::Session => AnyRef::Session(SessionRef::new(id, generation)),
            Kind::Window => AnyRef::Window(WindowRef::new(id, generation)),
            Kind::Pane => AnyRef::Pane(super::refs::PaneRef::new(id, generation)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolkit::refs::{ref_schema, reference, Kind};
    use crate::toolkit::typed::schema_of;
    use serde_json::json;

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
            // (`typed::lean_output`); the serialized type never has one.
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
