//! Schemas derived from Rust types: a tool's input schema from its `Args`
//! (decoded by `call::args`), its output schema from the type it serializes,
//! so the published schema and the result cannot drift apart.
//!
//! [`input_of`] derives a tool's input schema from its `Args` (schemars): an
//! `Option` field is optional, not nullable. [`schema_of`] derives the
//! output schema from the result type. [`nullable_input_of`] is the Python
//! family's: an `Option` is published `anyOf [T, null]` with `default: null`,
//! the shape pydantic gives libtmux-mcp's. `libtmux::python::nullable`
//! decodes such a field (absent: its default; `null`: none, which for a limit
//! means no limit).
//!
//! Architecture invariant: every tool's arguments are described once, by
//! its `Args`; no tool reads raw `args[…]`. The contracts are published byte
//! for byte: `capture_pane`, `snapshot_pane` and `tmux_capture`, and the
//! Python `capture_pane`. A unit test checks each against its `Args`.
//!
//! `tools/list` is paid for in every agent's context, so it publishes lean
//! schemas: [`lean_input`] and [`open_objects`] (see `publish`), and
//! [`lean_output`].

use crate::toolkit::schemas::patterns;
use schemars::JsonSchema;
use serde_json::Value;

/// The JSON Schema of `T` (draft 2020-12), as published in `tools/list`.
/// Derived types are structs, so the root is `type: object` as MCP clients need.
///
/// Subschemas are inlined rather than `$ref`s into `$defs`: the same schema,
/// but clients validate every result against it (the Python SDK does, with
/// `jsonschema`), and resolving a `$ref` per record costs them about as much as
/// checking the record (a 1,001-pane `list_panes` took half the time to
/// validate inlined; `tests/bench/listing.rs`).
///
/// Published lean ([`lean_output`]): no `$schema`, titles or descriptions.
pub fn schema_of<T: JsonSchema>() -> Value {
    let schema = data_schema_of::<T>();
    debug_assert_eq!(
        schema["type"], "object",
        "a tool's schema root must be an object"
    );
    schema
}

/// Drops what a derived output schema carries for the Rust reader and no
/// client acts on: `title`s (the types' names) and `description`s (their doc
/// comments), at every depth, `additionalProperties: false` (the records
/// are serialized from typed structs, so no other field can appear; a client
/// validating a result loses nothing), `minimum: 0` of an integer (an
/// unsigned Rust type's range, restated) and `maxLength` of a string (the
/// length bound an id or generation has as an *argument*; a result is never
/// refused for it). What is published stays true of every result. An output schema is for validating a result;
/// `tools/list` is paid for in every agent's context, so it carries only the
/// shape (the meaning of each field is in the tool's reference,
/// `tmux://tool/{name}`, and docs/spec.md). A property that is *named*
/// `title` or `description` is a schema (an object), never a string, so it stays.
///
/// Two rewrites validate exactly the same results in fewer bytes: a string
/// `enum` loses the `type: string` beside it (every value is a string), and an
/// `enum` of one value is that `const`.
pub fn lean_output(schema: &mut Value) {
    match schema {
        Value::Object(m) => {
            let integer = m.get("type") == Some(&Value::from("integer"));
            let string = m.get("type") == Some(&Value::from("string"));
            let strings = m
                .get("enum")
                .and_then(Value::as_array)
                .is_some_and(|e| e.iter().all(Value::is_string));
            m.retain(|k, v| {
                !(matches!(k.as_str(), "title" | "description") && v.is_string()
                    || k == "additionalProperties" && v == &Value::Bool(false)
                    || integer && k == "minimum" && v == &Value::from(0)
                    || string && k == "maxLength" && v.is_u64()
                    || string && strings && k == "type")
            });
            if let Some(Value::Array(one)) = m.get("enum") {
                if let [only] = one.as_slice() {
                    let only = only.clone();
                    m.remove("enum");
                    m.insert("const".into(), only);
                }
            }
            m.values_mut().for_each(lean_output);
        }
        Value::Array(a) => a.iter_mut().for_each(lean_output),
        _ => {}
    }
}

/// The input schema of a tool's `Args` (draft 2020-12), as published in
/// `tools/list` and enforced before the tool runs: the one description of a
/// tool's arguments, so the schema and the decoding cannot disagree.
///
/// Field descriptions are the fields' doc comments, with the source's line
/// wrapping undone (a blank line stays a paragraph break). An `Option` field is
/// optional, not nullable: `null` is refused by the schema as before (schemars
/// would publish `["string", "null"]`). The root carries no `title` or
/// `description` (the struct's name and doc comment are for its readers; the
/// tool's description is the tool's) and no `$schema` (MCP's default dialect
/// is 2020-12).
pub fn input_of<T: JsonSchema>() -> Value {
    derived_input::<T>(Nulls::Refused)
}

/// [`input_of`] for the Python family (`--toolset python`), whose arguments
/// take `null` as "not given", as tmux-python/libtmux-mcp's do: an `Option`
/// field with `#[serde(default)]` is published nullable with `default: null`
/// (a field whose default is a value, like a limit, publishes that value),
/// and the root refuses unknown arguments (`additionalProperties: false`,
/// which serde's `deny_unknown_fields` cannot say beside the family's
/// flattened selectors).
pub fn nullable_input_of<T: JsonSchema>() -> Value {
    let mut schema = derived_input::<T>(Nulls::Accepted);
    schema["additionalProperties"] = Value::Bool(false);
    schema
}

#[derive(Clone, Copy, PartialEq)]
enum Nulls {
    Refused,
    Accepted,
}

fn derived_input<T: JsonSchema>(nulls: Nulls) -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = serde_json::to_value(settings.into_generator().into_root_schema_for::<T>())
        .expect("a derived schema is JSON");
    debug_assert_eq!(
        schema["type"], "object",
        "a tool's input root must be an object"
    );
    if let Some(m) = schema.as_object_mut() {
        m.remove("title");
        m.remove("description");
        // Some clients (OpenAI's function calling among them) want
        // `properties` on every object schema, even an empty one; a root of
        // variants has them in each variant (as the seed contracts do).
        if !m.contains_key("oneOf") && !m.contains_key("anyOf") {
            m.entry("properties")
                .or_insert_with(|| Value::Object(Default::default()));
        }
    }
    input_shape(&mut schema, nulls);
    standard_formats(&mut schema);
    schema
}

/// What [`input_of`] changes in schemars' output, at any depth: `null` out of
/// every type list and default (unless the family accepts nulls), and
/// descriptions unwrapped.
fn input_shape(schema: &mut Value, nulls: Nulls) {
    match schema {
        Value::Object(m) if nulls == Nulls::Accepted => {
            if let Some(Value::String(d)) = m.get_mut("description") {
                *d = unwrap_doc(d);
            }
            nullable_as_any_of(m);
            m.values_mut().for_each(|v| input_shape(v, nulls));
        }
        Value::Array(a) if nulls == Nulls::Accepted => {
            a.iter_mut().for_each(|v| input_shape(v, nulls))
        }
        Value::Object(m) => {
            if let Some(Value::Array(types)) = m.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    m.insert("type".into(), only);
                }
            }
            // `Option<Enum>` is `anyOf: [enum, {const: null}]` or a `null` in
            // the enum's values.
            if let Some(Value::Array(vs)) = m.get_mut("enum") {
                vs.retain(|v| !v.is_null());
            }
            if let Some(Value::Array(any)) = m.get("anyOf") {
                let rest: Vec<&Value> = any
                    .iter()
                    .filter(|v| {
                        v.get("type") != Some(&Value::from("null"))
                            && v.get("const") != Some(&Value::Null)
                    })
                    .collect();
                if rest.len() == 1 && any.len() == 2 {
                    let inner = rest[0].clone();
                    m.remove("anyOf");
                    if let Value::Object(inner) = inner {
                        for (k, v) in inner {
                            m.entry(k).or_insert(v);
                        }
                    }
                }
            }
            // An `Option` field's default is `None`, which the schema (no
            // `null`) does not allow: not a default to publish.
            if m.get("default") == Some(&Value::Null) {
                m.remove("default");
            }
            if let Some(Value::String(d)) = m.get_mut("description") {
                *d = unwrap_doc(d);
            }
            m.values_mut().for_each(|v| input_shape(v, nulls));
        }
        Value::Array(a) => a.iter_mut().for_each(|v| input_shape(v, nulls)),
        _ => {}
    }
}

/// `type: [T, "null"]` as `anyOf: [{type: T, <T's keywords>}, {type: null}]`,
/// the shape pydantic gives an `Optional` (what tmux-python/libtmux-mcp
/// publishes, and what clients that take one `type` per schema, Gemini's
/// among them, can read); `description` and `default` stay outside.
fn nullable_as_any_of(m: &mut serde_json::Map<String, Value>) {
    let Some(Value::Array(types)) = m.get("type") else {
        return;
    };
    let [t, null] = types.as_slice() else { return };
    if null != "null" {
        return;
    }
    let mut inner = serde_json::Map::new();
    inner.insert("type".into(), t.clone());
    m.remove("type");
    let keys: Vec<String> = m
        .keys()
        .filter(|k| !matches!(k.as_str(), "description" | "default"))
        .cloned()
        .collect();
    for k in keys {
        if let Some(v) = m.remove(&k) {
            inner.insert(k, v);
        }
    }
    m.insert(
        "anyOf".into(),
        serde_json::json!([Value::Object(inner), { "type": "null" }]),
    );
}

/// Patterns that only keep control characters (or NUL) out of a string: the
/// broker refuses those by name; they tell a model nothing it would send.
const CONTROL_ONLY_PATTERNS: &[&str] = &[
    patterns::NO_NUL,
    patterns::NO_CONTROL,
    patterns::NO_CONTROL_BUT_LF,
];

/// Size bounds [`lean_input`] leaves to the enforced schema (with `maximum`).
const SIZE_BOUNDS: &[&str] = &[
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "maxProperties",
];

/// A default that says no more than an absent value does: off, none, empty.
fn absent_means(v: &Value) -> bool {
    v == &Value::Bool(false)
        || v.as_array().is_some_and(Vec::is_empty)
        || v.as_object().is_some_and(serde_json::Map::is_empty)
}

/// The published form of an enforced input schema, at every depth: each
/// `description` cut to its first paragraph (the rest of a field's doc comment
/// is in the tool's reference), and none of the keywords that only say how the
/// broker stores or screens a value: control-character-only `pattern`s, the
/// upper bounds of numbers (`maximum`: machine limits, and caps such as a
/// timeout's hour, which the request timeout clamps long before) and the size
/// bounds of strings, arrays and maps (`minLength`, `maxLength`, `minItems`,
/// `maxItems`, `maxProperties`): a call a model would make never meets them,
/// and one that does is told which field and which bound. Also `type: string`
/// beside a `const` or `enum` of strings. Lower bounds of
/// numbers stay (they say what is valid). Only keywords are removed, never added,
/// so every input the enforced schema accepts this one accepts too: it stays
/// true, and what it leaves out is refused by the broker naming the field and
/// listed in the tool's reference (`tmux://tool/{name}`).
pub fn lean_input(schema: &mut Value) {
    match schema {
        Value::Object(m) => {
            if let Some(Value::String(d)) = m.get_mut("description") {
                if let Some((first, _)) = d.split_once("\n\n") {
                    *d = first.to_string();
                }
            }
            let string = m.get("type") == Some(&Value::from("string"));
            let control_only = m
                .get("pattern")
                .and_then(Value::as_str)
                .is_some_and(|p| CONTROL_ONLY_PATTERNS.contains(&p));
            if control_only {
                m.remove("pattern");
            }
            m.retain(|k, v| {
                !(SIZE_BOUNDS.contains(&k.as_str()) && v.is_u64()
                    || k == "maximum" && v.is_number())
            });
            // `type: string` beside a `const` or `enum` of strings says
            // nothing the values do not (schemars writes both).
            let strings_only = m.get("const").is_some_and(Value::is_string)
                || m.get("enum")
                    .and_then(Value::as_array)
                    .is_some_and(|vs| vs.iter().all(Value::is_string));
            if string && strings_only {
                m.remove("type");
            }
            // `type: object` in a branch of an object's `anyOf`/`oneOf`/`allOf`
            // says what the object's own `type` does.
            if m.get("type") == Some(&Value::from("object")) {
                for key in ["anyOf", "oneOf", "allOf"] {
                    if let Some(Value::Array(branches)) = m.get_mut(key) {
                        for b in branches.iter_mut().filter_map(Value::as_object_mut) {
                            if b.get("type") == Some(&Value::from("object")) {
                                b.remove("type");
                            }
                        }
                    }
                }
            }
            for (k, v) in m.iter_mut() {
                // A property named `pattern`/`maximum` is a schema (an object),
                // so it is walked, never removed, like any other.
                if k == "properties" {
                    if let Value::Object(props) = v {
                        props.values_mut().for_each(lean_input);
                    }
                } else {
                    lean_input(v);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(lean_input),
        _ => {}
    }
}

/// Leaves out `additionalProperties: false` at every depth but beneath a
/// `oneOf`, where it may be what keeps the variants apart (an input that two
/// variants accepted would be refused). Elsewhere leaving it out only accepts
/// more, so a published schema made with it still accepts all that the
/// enforced one does. Also a `default` that says what an absent value means
/// anyway (`false`, `[]`, `{}`; annotations, never validated).
pub fn open_objects(schema: &mut Value) {
    match schema {
        Value::Object(m) => {
            if m.get("additionalProperties") == Some(&Value::Bool(false)) {
                m.remove("additionalProperties");
            }
            if m.get("default").is_some_and(absent_means) {
                m.remove("default");
            }
            for (k, v) in m.iter_mut() {
                match k.as_str() {
                    "oneOf" => {}
                    "properties" => {
                        if let Value::Object(props) = v {
                            props.values_mut().for_each(open_objects);
                        }
                    }
                    "const" | "enum" | "default" | "examples" => {}
                    _ => open_objects(v),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(open_objects),
        _ => {}
    }
}

/// A doc comment as one paragraph per blank-line-separated block.
fn unwrap_doc(doc: &str) -> String {
    doc.split("\n\n")
        .map(|p| p.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The `format` values JSON Schema 2020-12 defines; schemars also writes its
/// own (`uint64`, `int32`, `double` …), which strict clients flag (Gemini CLI
/// and the TypeScript SDK warn about each, MCP Inspector `--strict` too).
pub(crate) const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Removes every non-standard `format` from `schema`, at any depth. What an
/// integer format said about range stays true without it: a derived schema of
/// an unsigned type keeps its `minimum: 0`, and inputs are bounded by
/// [`bound_integers`].
pub fn standard_formats(schema: &mut Value) {
    match schema {
        Value::Object(m) => {
            if m.get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
            {
                m.remove("format");
            }
            m.values_mut().for_each(standard_formats);
        }
        Value::Array(a) => a.iter_mut().for_each(standard_formats),
        _ => {}
    }
}

/// Gives every `integer` of an input schema the bounds the broker can hold
/// (`u64` when it cannot be negative, else `i64`), so a value beyond them is
/// refused by name by the published schema instead of failing to decode.
pub fn bound_integers(schema: &mut Value) {
    match schema {
        Value::Object(m) => {
            let integer = match m.get("type") {
                Some(Value::String(t)) => t == "integer",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
                _ => false,
            };
            if integer {
                let unsigned = m
                    .get("minimum")
                    .and_then(Value::as_f64)
                    .is_some_and(|min| min >= 0.0)
                    || m.get("exclusiveMinimum")
                        .and_then(Value::as_f64)
                        .is_some_and(|min| min >= -1.0);
                if !m.contains_key("maximum") && !m.contains_key("exclusiveMaximum") {
                    m.insert(
                        "maximum".into(),
                        if unsigned {
                            Value::from(u64::MAX)
                        } else {
                            Value::from(i64::MAX)
                        },
                    );
                }
                if !m.contains_key("minimum") && !m.contains_key("exclusiveMinimum") {
                    m.insert("minimum".into(), Value::from(i64::MIN));
                }
            }
            m.values_mut().for_each(bound_integers);
        }
        Value::Array(a) => a.iter_mut().for_each(bound_integers),
        _ => {}
    }
}

/// The schema of `T` for use inside another schema (the seed family's
/// envelope `data`): subschemas inlined, no `$schema`/`title` of its own.
pub fn data_schema_of<T: JsonSchema>() -> Value {
    // Not `schema_of`: a data schema may be a `anyOf` of variants (tmux_wait).
    let settings =
        schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let mut schema = serde_json::to_value(settings.into_generator().into_root_schema_for::<T>())
        .expect("a derived schema is JSON");
    if let Some(m) = schema.as_object_mut() {
        m.remove("$schema");
    }
    lean_output(&mut schema);
    standard_formats(&mut schema);
    schema
}

/// A field that always holds one value, published as `{"const": …}`:
/// `constant!(Observed, "observed")` is a unit type serialized as `"observed"`.
#[macro_export]
macro_rules! constant {
    ($name:ident, $value:expr) => {
        #[derive(Debug, Clone, Copy, Default)]
        pub struct $name;

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(&$value, s)
            }
        }

        $crate::inline_schema!($name, { "const": $value });
    };
}

/// `inline_schema!(Name, { schema })`: `Name` publishes `schema`, inlined
/// wherever it is used (no `$defs` entry); for [`constant!`] and
/// `toolkit::target::ids`' text types.
#[macro_export]
macro_rules! inline_schema {
    ($name:ident, $schema:tt) => {
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!($schema)
            }
        }
    };
}

constant!(Observed, "observed");
constant!(ExitZero, 0);
constant!(Unobserved, "unobserved");

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    /// The Python family's shape: an `Option` is `anyOf [T, null]` with its
    /// keywords inside and `default: null` outside; unknown arguments refused.
    #[test]
    fn nullable_inputs_take_null_the_way_pydantic_publishes_it() {
        #[derive(serde::Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct A {
            /// Pane ID.
            #[serde(default)]
            #[schemars(regex(pattern = r"^%[0-9]+$"))]
            pane_id: Option<String>,
            #[serde(default = "five")]
            #[schemars(range(min = 1))]
            limit: Option<u32>,
        }
        fn five() -> Option<u32> {
            Some(5)
        }
        let s = nullable_input_of::<A>();
        assert_eq!(
            s["properties"]["pane_id"],
            serde_json::json!({
                "description": "Pane ID.",
                "default": null,
                "anyOf": [{ "type": "string", "pattern": "^%[0-9]+$" }, { "type": "null" }]
            })
        );
        assert_eq!(s["properties"]["limit"]["default"], 5);
        assert_eq!(s["properties"]["limit"]["anyOf"][0]["minimum"], 1);
        assert_eq!(s["additionalProperties"], false);
        let v = jsonschema::validator_for(&s).unwrap();
        assert!(v.is_valid(&serde_json::json!({ "pane_id": null, "limit": null })));
        assert!(!v.is_valid(&serde_json::json!({ "pane_id": "x" })));
        assert!(!v.is_valid(&serde_json::json!({ "other": 1 })));
    }

    #[derive(Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        delivery: Observed,
        status: ExitZero,
        target: crate::toolkit::target::references::PaneRef,
    }

    #[test]
    fn data_schemas_are_inline_and_constants_are_consts() {
        let s = data_schema_of::<Sample>();
        assert!(
            s.get("$schema").is_none() && s.get("$defs").is_none(),
            "{s}"
        );
        assert_eq!(
            s["properties"]["delivery"],
            serde_json::json!({ "const": "observed" })
        );
        assert_eq!(s["properties"]["status"], serde_json::json!({ "const": 0 }));
        assert!(
            s["properties"]["target"]["properties"]["id"].is_object(),
            "nested types are inlined: {s}"
        );
        let v = serde_json::to_value(Sample {
            delivery: Observed,
            status: ExitZero,
            target: crate::toolkit::target::references::PaneRef::new("%1", "g"),
        })
        .unwrap();
        assert!(jsonschema::validator_for(&s).unwrap().is_valid(&v), "{v}");
        assert_eq!(v["delivery"], "observed");
        assert_eq!(v["status"], 0);
        let wrong = serde_json::json!({ "delivery": "observed", "status": 0, "target": { "kind": "window", "id": "%1", "generation": "g" } });
        assert!(!jsonschema::validator_for(&s).unwrap().is_valid(&wrong));
    }

    /// Inlined, and still the same constraints as the `$ref` form.
    #[test]
    fn schemas_are_inlined_and_equivalent() {
        #[derive(JsonSchema, Serialize)]
        #[allow(dead_code)]
        struct Inner {
            #[schemars(regex(pattern = r"^%[0-9]+$"))]
            id: String,
        }
        #[derive(JsonSchema, Serialize)]
        #[allow(dead_code)]
        #[serde(deny_unknown_fields)]
        struct Outer {
            items: Vec<Inner>,
            one: Inner,
        }
        let inlined = schema_of::<Outer>();
        assert!(
            !inlined.to_string().contains("$ref") && inlined.get("$defs").is_none(),
            "{inlined}"
        );
        let referenced = serde_json::to_value(schemars::schema_for!(Outer)).unwrap();
        assert!(
            referenced.to_string().contains("$ref"),
            "premise: the default form uses $ref"
        );
        let (a, b) = (
            jsonschema::validator_for(&inlined).unwrap(),
            jsonschema::validator_for(&referenced).unwrap(),
        );
        for v in [
            serde_json::json!({ "items": [{ "id": "%1" }], "one": { "id": "%2" } }),
            serde_json::json!({ "items": [{ "id": "1" }], "one": { "id": "%2" } }),
            serde_json::json!({ "items": [], "one": { "id": "x" } }),
            serde_json::json!({ "items": [{}], "one": { "id": "%2" } }),
        ] {
            assert_eq!(a.is_valid(&v), b.is_valid(&v), "{v}");
        }
        // The one difference: a published output schema does not forbid
        // fields the type never serializes (`lean_output`).
        let more = serde_json::json!({ "items": [], "one": { "id": "%2" }, "more": 1 });
        assert!(a.is_valid(&more) && !b.is_valid(&more));
    }
}
