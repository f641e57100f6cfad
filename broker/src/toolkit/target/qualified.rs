//! Ids of another server, qualified (issue 52): a libtmux-family result that
//! another server's broker gave writes each pane, window and session id as
//! `KEY:ID` (`work:%3`, `/run/ci/tmux.sock:@1`), KEY being the `server` the
//! call named, so that `%3` of one server is never taken for another's. A
//! call takes such an id back with `server` naming the same KEY (or the bare
//! id with it); without `server`, a qualified id is refused naming the server
//! to add. The split is at the last `:`, since an id holds none.
//!
//! Where the ids are is read from the schemas, never guessed from values: an
//! output's id fields are those whose published pattern is one of
//! [`QUALIFIABLE`] (the libtmux family's output schemas publish them, so a
//! client validating a result accepts a qualified id), an input's those whose
//! pattern is a bare id pattern. The seed family's references need no
//! qualifier: their `generation` names the server instance already, and the
//! seed contracts and `capture_pane`'s and `snapshot_pane`'s are published
//! byte for byte with bare patterns, so their ids stay bare.

use crate::toolkit::target::ids::{ANY_ID, PANE_ID, SESSION_ID, WINDOW_ID};
use serde_json::Value;

/// The bare id patterns and their qualifiable forms, as the libtmux family's
/// output schemas publish them.
const PATTERNS: [(&str, &str); 4] = [
    (PANE_ID, "^(?:.+:)?%[0-9]+$"),
    (WINDOW_ID, "^(?:.+:)?@[0-9]+$"),
    (SESSION_ID, "^(?:.+:)?\\$[0-9]+$"),
    (ANY_ID, "^(?:.+:)?[%@$][0-9]+$"),
];

/// The output patterns of an id that may be qualified.
pub const QUALIFIABLE: [&str; 4] = [PATTERNS[0].1, PATTERNS[1].1, PATTERNS[2].1, PATTERNS[3].1];

/// `schema` with every bare id pattern made qualifiable (a libtmux-family
/// output schema, as published).
pub fn qualifiable(mut schema: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(p)) = m.get_mut("pattern") {
                    if let Some((_, q)) = PATTERNS.iter().find(|(bare, _)| p == bare) {
                        *p = q.to_string();
                    }
                }
                m.values_mut().for_each(walk);
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut schema);
    schema
}

/// One step into a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Field(String),
    Each,
}

/// The places of a schema's id fields (each a path of steps).
#[derive(Debug, Default)]
pub struct IdFields(Vec<Vec<Step>>);

impl IdFields {
    /// Where `schema` holds a string with one of `patterns`: through
    /// `properties`, `items`, `$ref` to `$defs`, and every branch of
    /// `anyOf`/`oneOf`/`allOf`/`then`/`else`.
    pub fn of(schema: &Value, patterns: &[&str]) -> IdFields {
        let mut out = Vec::new();
        walk(schema, schema, &mut Vec::new(), patterns, &mut out, 0);
        out.dedup();
        IdFields(out)
    }

    /// Every id field of `schema` whose pattern is a bare id (an input; the
    /// libtmux contracts spell the digits `\d`).
    pub fn of_input(schema: &Value) -> IdFields {
        const CONTRACT_SPELLING: [&str; 3] = ["^%\\d+$", "^@\\d+$", "^\\$\\d+$"];
        let bare = PATTERNS.map(|(bare, _)| bare);
        IdFields::of(schema, &[&bare[..], &CONTRACT_SPELLING[..]].concat())
    }

    /// Every string at an id field of `v`, with the path it is at.
    fn visit(&self, v: &mut Value, f: &mut dyn FnMut(&str, &mut String)) {
        for path in &self.0 {
            at(v, path, &mut String::new(), f);
        }
    }

    /// Qualifies every bare id of `v` with `key`; returns the ids it
    /// qualified, bare.
    pub fn qualify(&self, v: &mut Value, key: &str) -> Vec<String> {
        let mut done = Vec::new();
        self.visit(v, &mut |_, s| {
            if is_bare(s) {
                done.push(s.clone());
                *s = format!("{key}:{s}");
            }
        });
        done.sort();
        done.dedup();
        done
    }

    /// Takes the qualifier `key` off every id of `args`; an id qualified
    /// with another key is refused, naming the argument.
    pub fn unqualify(&self, args: &mut Value, key: &str) -> Result<(), String> {
        let mut wrong = None;
        self.visit(args, &mut |path, s| match split(s) {
            Some((k, id)) if k == key => *s = id.to_string(),
            Some((k, _)) => {
                wrong.get_or_insert(format!(
                    "argument {path}: an id of server {k:?}, while the call names server {key:?}"
                ));
            }
            None => {}
        });
        wrong.map_or(Ok(()), Err)
    }

    /// A qualified id in `args` of a call that names no server: refused,
    /// saying which server to name.
    pub fn refuse_qualified(&self, args: &mut Value) -> Result<(), String> {
        let mut found = None;
        self.visit(args, &mut |path, s| {
            if let Some((k, _)) = split(s) {
                found.get_or_insert(format!(
                    "argument {path}: an id of server {k:?}; add \"server\": {k:?} to call that server"
                ));
            }
        });
        found.map_or(Ok(()), Err)
    }
}

/// `text` with each of `ids` qualified by `key` where it stands as a word
/// of its own: not inside a longer token (`50%3`, `%30`, `x@1`), and not
/// already qualified.
pub fn qualify_text(text: &str, ids: &[String], key: &str) -> String {
    let word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '%' | '@' | '$' | ':');
    // A listing of a few hundred panes has as many ids and tokens: a set,
    // not a scan of the ids per token.
    let ids: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    let mut prev: Option<char> = None;
    while let Some(i) = rest.find(['%', '@', '$']) {
        let (before, at) = rest.split_at(i);
        out.push_str(before);
        prev = before.chars().next_back().or(prev);
        let len = 1 + at[1..].bytes().take_while(u8::is_ascii_digit).count();
        let (token, after) = at.split_at(len);
        let standalone = !prev.is_some_and(word) && !after.chars().next().is_some_and(word);
        if standalone && ids.contains(token) {
            out.push_str(key);
            out.push(':');
        }
        out.push_str(token);
        prev = token.chars().next_back();
        rest = after;
    }
    out.push_str(rest);
    out
}

fn walk(
    root: &Value,
    node: &Value,
    path: &mut Vec<Step>,
    patterns: &[&str],
    out: &mut Vec<Vec<Step>>,
    depth: usize,
) {
    // Deep enough for every schema the tools publish; a recursive `$ref`
    // stops here.
    if depth > 24 {
        return;
    }
    let node = match node.get("$ref").and_then(Value::as_str) {
        Some(r) => match r
            .strip_prefix("#/$defs/")
            .and_then(|n| root["$defs"].get(n))
        {
            Some(def) => def,
            None => return,
        },
        None => node,
    };
    if node
        .get("pattern")
        .and_then(Value::as_str)
        .is_some_and(|p| patterns.contains(&p))
        && !out.contains(path)
    {
        out.push(path.clone());
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for sub in node
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk(root, sub, path, patterns, out, depth + 1);
        }
    }
    for key in ["then", "else", "items"] {
        if let Some(sub) = node.get(key) {
            let each = key == "items";
            if each {
                path.push(Step::Each);
            }
            walk(root, sub, path, patterns, out, depth + 1);
            if each {
                path.pop();
            }
        }
    }
    for (name, sub) in node
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        path.push(Step::Field(name.clone()));
        walk(root, sub, path, patterns, out, depth + 1);
        path.pop();
    }
}

/// Calls `f` on every string at `steps` below `v`; `shown` is the JSON
/// pointer walked so far.
fn at(v: &mut Value, steps: &[Step], shown: &mut String, f: &mut dyn FnMut(&str, &mut String)) {
    let Some((first, rest)) = steps.split_first() else {
        if let Value::String(s) = v {
            f(if shown.is_empty() { "/" } else { shown }, s);
        }
        return;
    };
    let len = shown.len();
    match (first, v) {
        (Step::Field(name), Value::Object(m)) => {
            if let Some(sub) = m.get_mut(name) {
                shown.push('/');
                shown.push_str(name);
                at(sub, rest, shown, f);
            }
        }
        (Step::Each, Value::Array(a)) => {
            for (i, sub) in a.iter_mut().enumerate() {
                shown.push_str(&format!("/{i}"));
                at(sub, rest, shown, f);
                shown.truncate(len);
            }
        }
        _ => {}
    }
    shown.truncate(len);
}

/// A bare tmux id: a sigil and digits.
fn is_bare(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(b'%' | b'@' | b'$')) && s.len() > 1 && b.all(|c| c.is_ascii_digit())
}

/// `KEY:ID` as (KEY, ID).
fn split(s: &str) -> Option<(&str, &str)> {
    let (k, id) = s.rsplit_once(':')?;
    (!k.is_empty() && is_bare(id)).then_some((k, id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "panes": {"type": "array", "items": {"$ref": "#/$defs/P"}},
                "callerPaneId": {"type": "string", "pattern": PANE_ID},
                "text": {"type": "string"}
            },
            "$defs": {"P": {"if": {"required": ["at"]},
                "then": {"properties": {"id": {"type": "string", "pattern": PANE_ID}}},
                "else": {"properties": {"windowId": {"anyOf": [
                    {"type": "string", "pattern": WINDOW_ID}, {"type": "null"}]}}}}}
        })
    }

    #[test]
    fn ids_are_qualified_where_the_schema_says_and_only_there() {
        let out = qualifiable(schema());
        let fields = IdFields::of(&out, &QUALIFIABLE);
        let mut v = json!({"panes": [{"id": "%1", "at": ["s:1.0"]}, {"windowId": "@2"}],
            "callerPaneId": "%0", "text": "%9"});
        fields.qualify(&mut v, "work");
        assert_eq!(
            v,
            json!({"panes": [{"id": "work:%1", "at": ["s:1.0"]}, {"windowId": "work:@2"}],
                "callerPaneId": "work:%0", "text": "%9"})
        );
        let validator = jsonschema::validator_for(&out).unwrap();
        assert!(
            validator.is_valid(&v),
            "the qualifiable schema accepts them"
        );
    }

    #[test]
    fn text_ids_are_qualified_only_as_words_of_their_own() {
        let ids = vec!["%3".to_string(), "@1".to_string()];
        assert_eq!(
            qualify_text("%3 main:1.0 bash (@1) 50%3 %30 x@1 %3: %4", &ids, "work"),
            "work:%3 main:1.0 bash (work:@1) 50%3 %30 x@1 %3: %4"
        );
        assert_eq!(qualify_text("%3,@1", &ids, "k"), "k:%3,k:@1");
        assert_eq!(qualify_text("50%", &ids, "k"), "50%");
    }

    #[test]
    fn inputs_take_their_own_server_s_ids_and_refuse_another_s() {
        let fields = IdFields::of_input(&schema());
        let mut args = json!({"callerPaneId": "a:b:%3", "text": "work:%3"});
        fields.unqualify(&mut args, "a:b").unwrap();
        assert_eq!(args, json!({"callerPaneId": "%3", "text": "work:%3"}));
        let mut args = json!({"callerPaneId": "other:%3"});
        let why = fields.unqualify(&mut args, "work").unwrap_err();
        assert!(
            why.contains("/callerPaneId") && why.contains("\"other\""),
            "{why}"
        );
        let why = fields.refuse_qualified(&mut args).unwrap_err();
        assert!(why.contains("add \"server\": \"other\""), "{why}");
        let mut bare = json!({"callerPaneId": "%3"});
        assert!(fields.refuse_qualified(&mut bare).is_ok());
    }
}
