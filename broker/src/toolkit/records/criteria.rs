//! The `libtmux-ruby.where` v1 criteria language of `tmux_snapshot`
//! (docs/spec.md A.2.3): the compiler that checks a criteria document
//! completely before anything is read, its evaluation, and the JSON Schema
//! published as `tmux_capabilities.criteria_schema`.
//!
//! One static catalog ([`FIELDS`], [`RELATIONS`]) drives all three and the
//! record graph (`graph::Graph`) a filter runs on ([`Related`]), so the
//! published schema, the checks, the graph and the evaluation cannot drift
//! apart.

use serde_json::{json, Map, Value};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Entity {
    Session,
    Window,
    Pane,
    WindowLink,
    Client,
}

pub const ENTITIES: [Entity; 5] = [
    Entity::Session,
    Entity::Window,
    Entity::Pane,
    Entity::WindowLink,
    Entity::Client,
];

impl Entity {
    pub fn parse(s: &str) -> Option<Entity> {
        ENTITIES.into_iter().find(|e| e.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Entity::Session => "session",
            Entity::Window => "window",
            Entity::Pane => "pane",
            Entity::WindowLink => "window_link",
            Entity::Client => "client",
        }
    }

    pub fn names() -> Vec<&'static str> {
        ENTITIES.iter().map(|e| e.as_str()).collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Int,
    Text,
    Bool,
}

pub struct Field {
    pub entity: Entity,
    pub name: &'static str,
    pub ty: Ty,
    pub nullable: bool,
}

const fn f(entity: Entity, name: &'static str, ty: Ty, nullable: bool) -> Field {
    Field {
        entity,
        name,
        ty,
        nullable,
    }
}

use Entity as E;

/// Every record field, by wire name (A.2.3 "Record fields").
pub const FIELDS: &[Field] = &[
    f(E::Session, "id", Ty::Text, false),
    f(E::Session, "name", Ty::Text, false),
    f(E::Session, "created", Ty::Int, false),
    f(E::Session, "attached", Ty::Int, false),
    f(E::Session, "windowCount", Ty::Int, false),
    f(E::Window, "id", Ty::Text, false),
    f(E::Window, "name", Ty::Text, false),
    f(E::Window, "width", Ty::Int, false),
    f(E::Window, "height", Ty::Int, false),
    f(E::Window, "paneCount", Ty::Int, false),
    f(E::Window, "layout", Ty::Text, false),
    f(E::Pane, "id", Ty::Text, false),
    f(E::Pane, "windowId", Ty::Text, false),
    f(E::Pane, "index", Ty::Int, false),
    f(E::Pane, "pid", Ty::Int, false),
    f(E::Pane, "currentCommand", Ty::Text, false),
    f(E::Pane, "currentPath", Ty::Text, true),
    f(E::Pane, "title", Ty::Text, false),
    f(E::Pane, "active", Ty::Bool, false),
    f(E::Pane, "dead", Ty::Bool, false),
    f(E::Pane, "deadStatus", Ty::Int, true),
    f(E::Pane, "width", Ty::Int, false),
    f(E::Pane, "height", Ty::Int, false),
    f(E::WindowLink, "sessionId", Ty::Text, false),
    f(E::WindowLink, "windowId", Ty::Text, false),
    f(E::WindowLink, "index", Ty::Int, false),
    f(E::WindowLink, "active", Ty::Bool, false),
    f(E::Client, "name", Ty::Text, false),
    f(E::Client, "pid", Ty::Int, false),
    f(E::Client, "created", Ty::Int, false),
    f(E::Client, "tty", Ty::Text, true),
    f(E::Client, "sessionId", Ty::Text, true),
    f(E::Client, "width", Ty::Int, false),
    f(E::Client, "height", Ty::Int, true),
    f(E::Client, "readOnly", Ty::Bool, false),
    f(E::Client, "utf8", Ty::Bool, false),
    f(E::Client, "controlMode", Ty::Bool, false),
];

pub struct Relation {
    pub from: Entity,
    pub name: &'static str,
    pub to: Entity,
    /// To-many relations take `some`/`every`/`none`; to-one take `is`/`isNot`.
    pub many: bool,
    /// A to-one relation that may be absent (`is: null` allowed).
    pub nullable: bool,
}

const fn r(from: Entity, name: &'static str, to: Entity, many: bool, nullable: bool) -> Relation {
    Relation {
        from,
        name,
        to,
        many,
        nullable,
    }
}

/// A.2.3 "Relations".
pub const RELATIONS: &[Relation] = &[
    r(E::Session, "windows", E::Window, true, false),
    r(E::Session, "windowLinks", E::WindowLink, true, false),
    r(E::Session, "panes", E::Pane, true, false),
    r(E::Session, "currentWindow", E::Window, false, false),
    r(E::Window, "panes", E::Pane, true, false),
    r(E::Window, "windowLinks", E::WindowLink, true, false),
    r(E::Window, "activePane", E::Pane, false, false),
    r(E::Pane, "window", E::Window, false, false),
    r(E::WindowLink, "session", E::Session, false, false),
    r(E::WindowLink, "window", E::Window, false, false),
    r(E::Client, "session", E::Session, false, true),
];

const MANY_OPS: &[&str] = &["some", "every", "none"];
const ONE_OPS: &[&str] = &["is", "isNot"];
const COMBINATORS: &[&str] = &["and", "or", "not"];

fn field(entity: Entity, name: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.entity == entity && f.name == name)
}

fn relation(entity: Entity, name: &str) -> Option<(usize, &'static Relation)> {
    RELATIONS
        .iter()
        .enumerate()
        .find(|(_, r)| r.from == entity && r.name == name)
}

pub const MAX_DEPTH: usize = 32;
pub const MAX_NODES: usize = 2048;
pub const MAX_STRING_BYTES: usize = 65_536;
pub const MAX_TOTAL_BYTES: usize = 262_144;
pub const MAX_IN_MEMBERS: usize = 1024;

// ---------------------------------------------------------------------------
// What a filter reads
// ---------------------------------------------------------------------------

/// What a compiled [`Filter`] is evaluated on: the records of each entity
/// and, for each relation, the related records of each record (the record
/// graph, `graph::Graph`).
pub trait Related {
    /// The wire fields of record `i` of entity `e`.
    fn fields(&self, e: Entity, i: usize) -> &Value;
    /// The indexes of the records that `RELATIONS[relation]` relates record
    /// `i` of its `from` entity to.
    fn related(&self, relation: usize, i: usize) -> &[usize];
}

// ---------------------------------------------------------------------------
// Compiled filters
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantifier {
    Some,
    Every,
    None,
}

#[derive(Debug)]
pub enum Filter {
    All(Vec<Filter>),
    Any(Vec<Filter>),
    Not(Box<Filter>),
    Field {
        name: &'static str,
        ops: Vec<(&'static str, Value)>,
    },
    Many {
        relation: usize,
        quantifier: Quantifier,
        filter: Box<Filter>,
    },
    /// `is` (or `isNot` when `negate`): the related record matches `filter`;
    /// `filter: None` means `null` (no related record).
    One {
        relation: usize,
        negate: bool,
        filter: Option<Box<Filter>>,
    },
}

impl Filter {
    pub fn everything() -> Filter {
        Filter::All(Vec::new())
    }

    /// Whether record `i` of entity `e` of `g` matches.
    pub fn matches<G: Related>(&self, g: &G, e: Entity, i: usize) -> bool {
        match self {
            Filter::All(fs) => fs.iter().all(|f| f.matches(g, e, i)),
            Filter::Any(fs) => fs.iter().any(|f| f.matches(g, e, i)),
            Filter::Not(f) => !f.matches(g, e, i),
            Filter::Field { name, ops } => {
                let v = &g.fields(e, i)[*name];
                ops.iter().all(|(op, arg)| apply(op, v, arg))
            }
            Filter::Many {
                relation,
                quantifier,
                filter,
            } => {
                let to = RELATIONS[*relation].to;
                let mut related = g
                    .related(*relation, i)
                    .iter()
                    .map(|&j| filter.matches(g, to, j));
                match quantifier {
                    Quantifier::Some => related.any(|m| m),
                    Quantifier::Every => related.all(|m| m),
                    Quantifier::None => !related.any(|m| m),
                }
            }
            Filter::One {
                relation,
                negate,
                filter,
            } => {
                let to = RELATIONS[*relation].to;
                let related = g.related(*relation, i).first().copied();
                let holds = match (related, filter) {
                    (None, None) => true,
                    (Some(j), Some(f)) => f.matches(g, to, j),
                    _ => false,
                };
                holds != *negate
            }
        }
    }
}

/// Comparisons with null are false; null equals only null.
fn apply(op: &str, v: &Value, arg: &Value) -> bool {
    match op {
        "equals" => v == arg,
        "not" => v != arg,
        "in" => arg.as_array().is_some_and(|a| a.contains(v)),
        "lt" => v.as_i64().zip(arg.as_i64()).is_some_and(|(a, b)| a < b),
        "lte" => v.as_i64().zip(arg.as_i64()).is_some_and(|(a, b)| a <= b),
        "gt" => v.as_i64().zip(arg.as_i64()).is_some_and(|(a, b)| a > b),
        "gte" => v.as_i64().zip(arg.as_i64()).is_some_and(|(a, b)| a >= b),
        "contains" => v
            .as_str()
            .zip(arg.as_str())
            .is_some_and(|(a, b)| a.contains(b)),
        "startsWith" => v
            .as_str()
            .zip(arg.as_str())
            .is_some_and(|(a, b)| a.starts_with(b)),
        "endsWith" => v
            .as_str()
            .zip(arg.as_str())
            .is_some_and(|(a, b)| a.ends_with(b)),
        _ => false,
    }
}

fn operators(ty: Ty) -> &'static [&'static str] {
    match ty {
        Ty::Bool => &["equals", "not", "in"],
        Ty::Int => &["equals", "not", "in", "lt", "lte", "gt", "gte"],
        Ty::Text => &["equals", "not", "in", "contains", "startsWith", "endsWith"],
    }
}

fn ty_name(ty: Ty) -> &'static str {
    match ty {
        Ty::Int => "an integer",
        Ty::Text => "a string",
        Ty::Bool => "a boolean",
    }
}

fn is_ty(v: &Value, ty: Ty) -> bool {
    match ty {
        Ty::Int => v.is_i64() || v.is_u64(),
        Ty::Text => v.is_string(),
        Ty::Bool => v.is_boolean(),
    }
}

/// Compiles `criteria` for a query of `entity`. Every branch is checked, the
/// inactive ones too; the error names the path within `criteria` and what was
/// expected there, never the value sent.
pub fn compile(entity: Entity, criteria: Option<&Value>) -> Result<Filter, String> {
    let Some(c) = criteria else {
        return Ok(Filter::everything());
    };
    if c["entity"] != entity.as_str() {
        return Err(format!(
            "criteria.entity must be {:?}, the entity of the query",
            entity.as_str()
        ));
    }
    let total = c.to_string().len();
    if total > MAX_TOTAL_BYTES {
        return Err(format!(
            "criteria hold {total} bytes of JSON; at most {MAX_TOTAL_BYTES} are accepted"
        ));
    }
    let mut nodes = 0;
    compile_where(entity, &c["where"], "criteria.where", 0, &mut nodes)
}

fn compile_where(
    entity: Entity,
    w: &Value,
    path: &str,
    depth: usize,
    nodes: &mut usize,
) -> Result<Filter, String> {
    *nodes += 1;
    if depth > MAX_DEPTH {
        return Err(format!("{path}: criteria nest deeper than {MAX_DEPTH}"));
    }
    if *nodes > MAX_NODES {
        return Err(format!("{path}: criteria have more than {MAX_NODES} nodes"));
    }
    let obj = w
        .as_object()
        .ok_or(format!("{path}: a where clause must be an object"))?;
    let mut all = Vec::new();
    for (k, v) in obj {
        let here = format!("{path}.{k}");
        match k.as_str() {
            "and" | "or" => {
                let items = v
                    .as_array()
                    .ok_or(format!("{here}: expected an array of where clauses"))?;
                let compiled = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        compile_where(entity, item, &format!("{here}[{i}]"), depth + 1, nodes)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                all.push(if k == "and" {
                    Filter::All(compiled)
                } else {
                    Filter::Any(compiled)
                });
            }
            "not" => all.push(Filter::Not(Box::new(compile_where(
                entity,
                v,
                &here,
                depth + 1,
                nodes,
            )?))),
            name => {
                if let Some(fld) = field(entity, name) {
                    all.push(compile_field(fld, v, &here)?);
                } else if let Some((ri, rel)) = relation(entity, name) {
                    all.push(compile_relation(ri, rel, v, &here, depth, nodes)?);
                } else {
                    let known: Vec<&str> = FIELDS
                        .iter()
                        .filter(|f| f.entity == entity)
                        .map(|f| f.name)
                        .chain(
                            RELATIONS
                                .iter()
                                .filter(|r| r.from == entity)
                                .map(|r| r.name),
                        )
                        .collect();
                    return Err(format!(
                        "{here}: {} has no field or relation {name:?} (known: {}, and, or, not)",
                        entity.as_str(),
                        known.join(", ")
                    ));
                }
            }
        }
    }
    Ok(Filter::All(all))
}

fn check_literal(fld: &Field, v: &Value, path: &str) -> Result<(), String> {
    if v.is_null() {
        return if fld.nullable {
            Ok(())
        } else {
            Err(format!(
                "{path}: {} is never null; expected {}",
                fld.name,
                ty_name(fld.ty)
            ))
        };
    }
    if !is_ty(v, fld.ty) {
        return Err(format!(
            "{path}: {} is {}; expected {}{}",
            fld.name,
            ty_name(fld.ty),
            ty_name(fld.ty),
            if fld.nullable { " or null" } else { "" }
        ));
    }
    if let Some(s) = v.as_str() {
        if s.len() > MAX_STRING_BYTES {
            return Err(format!(
                "{path}: strings are at most {MAX_STRING_BYTES} bytes"
            ));
        }
    }
    Ok(())
}

fn compile_field(fld: &'static Field, v: &Value, path: &str) -> Result<Filter, String> {
    let ops: Vec<(&'static str, Value)> = match v {
        Value::Object(m) => {
            if m.is_empty() {
                return Err(format!(
                    "{path}: an operator object needs at least one of {}",
                    operators(fld.ty).join(", ")
                ));
            }
            let mut ops = Vec::new();
            for (op, arg) in m {
                let here = format!("{path}.{op}");
                let Some(&known) = operators(fld.ty).iter().find(|o| **o == op) else {
                    return Err(format!(
                        "{here}: operator {op:?} does not apply to {} ({}); use one of {}",
                        fld.name,
                        ty_name(fld.ty),
                        operators(fld.ty).join(", ")
                    ));
                };
                match known {
                    "in" => {
                        let members = arg.as_array().ok_or(format!("{here}: expected an array"))?;
                        if members.len() > MAX_IN_MEMBERS {
                            return Err(format!("{here}: at most {MAX_IN_MEMBERS} members"));
                        }
                        for (i, m) in members.iter().enumerate() {
                            check_literal(fld, m, &format!("{here}[{i}]"))?;
                        }
                    }
                    "equals" | "not" => check_literal(fld, arg, &here)?,
                    // Ordering and text operators take a value, never null.
                    _ => {
                        if !is_ty(arg, fld.ty) {
                            return Err(format!("{here}: expected {}", ty_name(fld.ty)));
                        }
                        check_literal(fld, arg, &here)?;
                    }
                }
                ops.push((known, arg.clone()));
            }
            ops
        }
        lit => {
            check_literal(fld, lit, path)?;
            vec![("equals", lit.clone())]
        }
    };
    Ok(Filter::Field {
        name: fld.name,
        ops,
    })
}

fn compile_relation(
    ri: usize,
    rel: &Relation,
    v: &Value,
    path: &str,
    depth: usize,
    nodes: &mut usize,
) -> Result<Filter, String> {
    let allowed = if rel.many { MANY_OPS } else { ONE_OPS };
    let m = v.as_object().filter(|m| !m.is_empty()).ok_or(format!(
        "{path}: a relation takes an object with one or more of {}",
        allowed.join(", ")
    ))?;
    let mut all = Vec::new();
    for (op, arg) in m {
        let here = format!("{path}.{op}");
        if !allowed.contains(&op.as_str()) {
            return Err(format!(
                "{here}: {} is a to-{} relation; use {}",
                rel.name,
                if rel.many { "many" } else { "one" },
                allowed.join(", ")
            ));
        }
        if rel.many {
            let quantifier = match op.as_str() {
                "some" => Quantifier::Some,
                "every" => Quantifier::Every,
                _ => Quantifier::None,
            };
            all.push(Filter::Many {
                relation: ri,
                quantifier,
                filter: Box::new(compile_where(rel.to, arg, &here, depth + 1, nodes)?),
            });
        } else {
            let filter = if arg.is_null() {
                if !rel.nullable {
                    return Err(format!(
                        "{here}: {} always exists, so null is not allowed",
                        rel.name
                    ));
                }
                None
            } else {
                Some(Box::new(compile_where(
                    rel.to,
                    arg,
                    &here,
                    depth + 1,
                    nodes,
                )?))
            };
            all.push(Filter::One {
                relation: ri,
                negate: op == "isNot",
                filter,
            });
        }
    }
    Ok(Filter::All(all))
}

// ---------------------------------------------------------------------------
// The published JSON Schema
// ---------------------------------------------------------------------------

fn def_name(e: Entity) -> String {
    format!("where_{}", e.as_str())
}

fn scalar(ty: Ty, nullable: bool) -> Value {
    let base = match ty {
        Ty::Int => "integer",
        Ty::Text => "string",
        Ty::Bool => "boolean",
    };
    let mut s = if nullable {
        json!({ "type": [base, "null"] })
    } else {
        json!({ "type": base })
    };
    if ty == Ty::Text {
        s["maxLength"] = json!(MAX_STRING_BYTES);
    }
    s
}

fn predicate(fld: &Field) -> Value {
    let lit = scalar(fld.ty, fld.nullable);
    let value = scalar(fld.ty, false);
    let mut ops = Map::new();
    for op in operators(fld.ty) {
        let s = match *op {
            "equals" | "not" => lit.clone(),
            "in" => json!({ "type": "array", "maxItems": MAX_IN_MEMBERS, "items": lit }),
            _ => value.clone(),
        };
        ops.insert(op.to_string(), s);
    }
    json!({ "oneOf": [lit, { "type": "object", "additionalProperties": false, "minProperties": 1, "properties": ops }] })
}

fn where_schema(e: Entity) -> Value {
    let me = json!({ "$ref": format!("#/$defs/{}", def_name(e)) });
    let mut props = Map::new();
    for fld in FIELDS.iter().filter(|f| f.entity == e) {
        props.insert(fld.name.to_string(), predicate(fld));
    }
    for rel in RELATIONS.iter().filter(|r| r.from == e) {
        let target = json!({ "$ref": format!("#/$defs/{}", def_name(rel.to)) });
        let mut ops = Map::new();
        for op in if rel.many { MANY_OPS } else { ONE_OPS } {
            let s = if !rel.many && rel.nullable {
                json!({ "oneOf": [target, { "type": "null" }] })
            } else {
                target.clone()
            };
            ops.insert(op.to_string(), s);
        }
        props.insert(rel.name.to_string(), json!({ "type": "object", "additionalProperties": false, "minProperties": 1, "properties": ops }));
    }
    for c in COMBINATORS {
        let s = if *c == "not" {
            me.clone()
        } else {
            json!({ "type": "array", "items": me })
        };
        props.insert(c.to_string(), s);
    }
    json!({ "type": "object", "additionalProperties": false, "properties": props })
}

/// The JSON Schema of a criteria document (`tmux_capabilities.criteria_schema`).
/// It states shape and types; the limits on depth and node count are checked by
/// the broker and given in `description`.
pub fn schema() -> Value {
    let mut defs = Map::new();
    for e in ENTITIES {
        defs.insert(def_name(e), where_schema(e));
    }
    let variants: Vec<Value> = ENTITIES
        .iter()
        .map(|e| json!({ "properties": { "entity": { "const": e.as_str() }, "where": { "$ref": format!("#/$defs/{}", def_name(*e)) } } }))
        .collect();
    let mut s = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "libtmux-ruby.where criteria, version 1",
        "description": format!("Criteria for tmux_snapshot. where maps field wire names to a literal (equals) or an operator object, relation names to {{some|every|none}} (to-many) or {{is|isNot}} (to-one) with a where clause of the related entity, and and/or (arrays) / not. Null equals only null; comparisons with null are false. Limits: depth {MAX_DEPTH}, {MAX_NODES} where clauses, strings {MAX_STRING_BYTES} bytes, {MAX_TOTAL_BYTES} bytes in all."),
    });
    for (k, v) in envelope_schema().as_object().expect("an object schema") {
        s[k] = v.clone();
    }
    s["oneOf"] = Value::Array(variants);
    s["$defs"] = Value::Object(defs);
    s
}

/// The criteria envelope alone (`where` only required to be an object): what
/// `tmux_snapshot`'s input schema checks, so that a bad clause is reported by
/// [`compile`] as `invalid_filter` (A.0.3) rather than as invalid input.
pub fn envelope_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["profile", "version", "entity", "where"],
        "properties": {
            "profile": { "const": "libtmux-ruby.where" },
            "version": { "const": 1 },
            "entity": { "enum": Entity::names() },
            "where": { "type": "object" }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolkit::records::graph::Graph;
    use tmux_mcp_engine::registry::Pane;
    use tmux_mcp_engine::registry::Placement;

    fn crit(entity: &str, w: Value) -> Value {
        json!({ "profile": "libtmux-ruby.where", "version": 1, "entity": entity, "where": w })
    }

    fn pane(
        id: &str,
        window: &str,
        active: bool,
        command: &str,
        places: &[(&str, i64, bool)],
    ) -> Pane {
        Pane {
            window_name: format!("w{window}"),
            active,
            history_limit: 0,
            command: command.into(),
            placements: places
                .iter()
                .map(|(s, idx, act)| Placement {
                    session_id: s.to_string(),
                    session_name: format!("n{s}"),
                    window_index: *idx,
                    window_active: *act,
                    session_created: 0,
                    session_attached: 0,
                    session_windows: 1,
                })
                .collect(),
            ..Pane::sample(id, window)
        }
    }

    fn graph() -> Graph {
        let panes = [
            pane("%0", "@0", true, "zsh", &[("$0", 0, true)]),
            pane("%1", "@0", false, "vim", &[("$0", 0, true)]),
            pane(
                "%2",
                "@1",
                true,
                "top",
                &[("$0", 1, false), ("$1", 0, true)],
            ),
        ];
        Graph::build(panes.iter(), &[], "g")
    }

    fn ids(g: &Graph, e: Entity, c: Value) -> Vec<String> {
        let f = compile(e, Some(&c)).unwrap();
        g.select(e, &f)
            .iter()
            .map(|r| r.reference["id"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn field_predicates_and_combinators() {
        let g = graph();
        assert_eq!(
            ids(
                &g,
                E::Pane,
                crit("pane", json!({ "currentCommand": { "startsWith": "v" } }))
            ),
            ["%1"]
        );
        assert_eq!(
            ids(
                &g,
                E::Pane,
                crit("pane", json!({ "or": [{ "id": "%0" }, { "id": "%2" }] }))
            ),
            ["%0", "%2"]
        );
        assert_eq!(
            ids(
                &g,
                E::Pane,
                crit("pane", json!({ "not": { "active": true } }))
            ),
            ["%1"]
        );
        // Null equals only null; comparisons with null are false.
        assert_eq!(
            ids(&g, E::Pane, crit("pane", json!({ "deadStatus": null }))).len(),
            3
        );
        assert!(ids(
            &g,
            E::Pane,
            crit("pane", json!({ "deadStatus": { "lt": 5 } }))
        )
        .is_empty());
    }

    #[test]
    fn relations_follow_the_graph() {
        let g = graph();
        // (entity, where, the ids selected)
        let cases: [(E, &str, &[&str]); 11] = [
            (
                E::Pane,
                r#"{ "window": { "is": { "id": "@1" } } }"#,
                &["%2"],
            ),
            (
                E::Pane,
                r#"{ "window": { "isNot": { "id": "@1" } } }"#,
                &["%0", "%1"],
            ),
            (
                E::Window,
                r#"{ "panes": { "some": { "currentCommand": "vim" } } }"#,
                &["@0"],
            ),
            (
                E::Window,
                r#"{ "panes": { "every": { "active": true } } }"#,
                &["@1"],
            ),
            (
                E::Window,
                r#"{ "panes": { "none": { "currentCommand": "top" } } }"#,
                &["@0"],
            ),
            (
                E::Window,
                r#"{ "activePane": { "is": { "currentCommand": "zsh" } } }"#,
                &["@0"],
            ),
            (
                E::Session,
                r#"{ "windows": { "some": { "id": "@0" } } }"#,
                &["$0"],
            ),
            (
                E::Session,
                r#"{ "currentWindow": { "is": { "id": "@1" } } }"#,
                &["$1"],
            ),
            (
                E::Session,
                r#"{ "panes": { "some": { "currentCommand": "top" } } }"#,
                &["$0", "$1"],
            ),
            (
                E::WindowLink,
                r#"{ "session": { "is": { "id": "$1" } } }"#,
                &["@1"],
            ),
            (
                E::Window,
                r#"{ "windowLinks": { "some": { "sessionId": "$1" } } }"#,
                &["@1"],
            ),
        ];
        for (e, w, want) in cases {
            let c = crit(e.as_str(), serde_json::from_str(w).unwrap());
            assert_eq!(ids(&g, e, c), want, "{} where {w}", e.as_str());
        }
    }

    #[test]
    fn wrong_types_and_unknown_names_are_invalid_filters_naming_the_path() {
        let bad = |e: Entity, c: Value| compile(e, Some(&c)).unwrap_err();
        assert!(bad(E::Window, crit("window", json!({ "width": "wide" })))
            .starts_with("criteria.where.width:"));
        assert!(bad(
            E::Pane,
            crit("pane", json!({ "dead": { "in": [true, "no"] } }))
        )
        .contains("criteria.where.dead.in[1]"));
        assert!(bad(
            E::Pane,
            crit("pane", json!({ "width": { "contains": "8" } }))
        )
        .contains("does not apply"));
        assert!(bad(E::Pane, crit("pane", json!({ "title": null }))).contains("never null"));
        assert!(bad(E::Pane, crit("pane", json!({ "window": { "some": {} } }))).contains("to-one"));
        assert!(
            bad(E::Pane, crit("pane", json!({ "window": { "is": null } })))
                .contains("null is not allowed")
        );
        assert!(
            bad(
                E::Pane,
                crit("pane", json!({ "or": [{ "id": "%0" }, { "nope": 1 }] }))
            )
            .contains("criteria.where.or[1].nope"),
            "inactive branches are checked too"
        );
        assert!(bad(E::Window, crit("pane", json!({}))).contains("criteria.entity"));
        assert!(
            compile(
                E::Client,
                Some(&crit("client", json!({ "session": { "is": null } })))
            )
            .is_ok(),
            "client.session is nullable"
        );
        let mut deep = json!({ "id": "%0" });
        for _ in 0..40 {
            deep = json!({ "not": deep });
        }
        assert!(bad(E::Pane, crit("pane", deep)).contains("deeper"));
    }

    #[test]
    fn the_published_schema_agrees_with_the_compiler() {
        let schema = schema();
        let v = jsonschema::validator_for(&schema).expect("criteria schema compiles");
        let samples = [
            (
                E::Pane,
                crit(
                    "pane",
                    json!({ "width": { "gte": 80 }, "or": [{ "currentCommand": { "startsWith": "vi" } }, { "title": { "contains": "log" } }] }),
                ),
            ),
            (
                E::Pane,
                crit(
                    "pane",
                    json!({ "window": { "is": { "panes": { "every": { "dead": false } } } } }),
                ),
            ),
            (
                E::Session,
                crit(
                    "session",
                    json!({ "currentWindow": { "isNot": { "name": "x" } }, "not": { "attached": 0 } }),
                ),
            ),
            (
                E::Client,
                crit("client", json!({ "session": { "is": null }, "tty": null })),
            ),
            (E::Window, crit("window", json!({ "width": "wide" }))),
            (E::Pane, crit("pane", json!({ "window": { "is": null } }))),
            (
                E::Pane,
                crit("pane", json!({ "width": { "contains": "8" } })),
            ),
            (E::Pane, crit("pane", json!({ "nope": 1 }))),
            (
                E::Pane,
                crit("pane", json!({ "dead": { "in": [true, 1] } })),
            ),
            (
                E::Session,
                crit("session", json!({ "windows": { "is": {} } })),
            ),
            (
                E::Pane,
                crit("pane", json!({ "deadStatus": { "gt": null } })),
            ),
            (E::Window, crit("window", json!({ "panes": {} }))),
        ];
        for (e, c) in samples {
            assert_eq!(
                v.is_valid(&c),
                compile(e, Some(&c)).is_ok(),
                "schema and compiler disagree on {c}"
            );
        }
    }
}
