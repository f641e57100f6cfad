//! A record as a read's `detail` argument asks for it: whole (`detail: full`)
//! or lean (the default), and the one schema of the two.
//!
//! The schema tells the two shapes apart by one property that only one of
//! them has, with `if`/`then`/`else`, so a validating client checks each
//! record against one shape. With `anyOf` it tried the full shape first and
//! built its errors for every lean record: the official Python SDK's own
//! check of a brief listing of 1,001 panes took 180 ms that way, 62 ms this
//! way (the full listing 247 -> 173 ms; measured with the SDK's
//! `jsonschema.validate`). The same results validate.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use std::borrow::Cow;

/// A record whole (`F`) or lean (`L`), serialized as the record itself. A
/// listing's records are all one or all the other: its tool builds them by
/// one `match` on `detail`.
#[derive(Serialize)]
#[serde(untagged)]
pub enum Record<F, L> {
    Full(F),
    Lean(L),
}

/// The property that tells a lean record from a whole one.
pub enum Mark {
    /// Only the lean record has it (a lean pane's `at`; a whole one places
    /// the pane with `placements`).
    LeanHas(&'static str),
    /// Only the whole record has it (a whole session's `ref`).
    FullHas(&'static str),
}

/// A lean record's type: which property marks it (see [`Mark`]).
pub trait Lean: JsonSchema {
    const MARK: Mark;
}

impl<T: Lean> Lean for Box<T> {
    const MARK: Mark = T::MARK;
}

impl<F: JsonSchema, L: Lean> JsonSchema for Record<F, L> {
    fn schema_name() -> Cow<'static, str> {
        format!("Record_{}_or_{}", F::schema_name(), L::schema_name()).into()
    }

    /// Always inline: the published schemas name no `$defs` entry for it.
    fn inline_schema() -> bool {
        true
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        // The lean shape first: the order of the `$defs` they land in.
        let lean = g.subschema_for::<L>();
        let full = g.subschema_for::<F>();
        match L::MARK {
            Mark::LeanHas(p) => {
                schemars::json_schema!({ "if": { "required": [p] }, "then": lean, "else": full })
            }
            Mark::FullHas(p) => {
                schemars::json_schema!({ "if": { "required": [p] }, "then": full, "else": lean })
            }
        }
    }
}
