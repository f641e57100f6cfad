//! A tool's reference: what `tools/list` leaves out so that it stays small (it
//! is paid for in every agent's context before any work is done). Served as
//! the Markdown resource `tmux://tool/{name}`: the short description, the
//! details, its safety tier, its result's fields, and each argument with its
//! type, bounds, default and meaning, all
//! read from the [`ToolSpec`] and its enforced input schema (whole doc comments;
//! `tools/list` carries their first paragraphs), so the reference cannot say
//! something the schema does not.
//!
//! A `ToolSpec`'s `description` says what the tool is for and its one rule
//! that is not obvious; its `details` hold the rest.
//! `broker/src/mcp/budget.rs` prints and bounds the size of `tools/list`.

use crate::toolkit::call::spec::ToolSpec;
use serde_json::Value;
use std::fmt::Write;

/// The reference of `t`; `note` is appended (e.g. why this session cannot
/// call it).
pub fn render(t: &ToolSpec, note: Option<&str>) -> String {
    let mut out = format!("# {}\n\n{}\n", t.name, t.description);
    if !t.details.is_empty() {
        let _ = write!(out, "\n{}\n", t.details);
    }
    let ann = &t.annotations;
    let _ = write!(
        out,
        "\nSafety tier: {}{}{}.\n",
        t.tier().as_str(),
        if ann.read_only { "; read-only" } else { "" },
        if ann.idempotent { "; idempotent" } else { "" },
    );
    if let Some(note) = note {
        let _ = write!(out, "\n{note}\n");
    }
    let schema = t.full_input_schema();
    out.push_str("\n## Arguments\n");
    match forms(&schema) {
        Some(forms) => {
            let _ = writeln!(out, "\nOne of {} forms:", forms.len());
            for (i, form) in forms.iter().enumerate() {
                let _ = writeln!(out, "\n### Form {}\n", i + 1);
                arguments(&mut out, form);
            }
        }
        None => {
            out.push('\n');
            arguments(&mut out, &schema);
        }
    }
    let result = t.published_output_schema();
    if let Some(props) = result.get("properties").and_then(Value::as_object) {
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        let _ = write!(
            out,
            "\n## Result\n\nstructuredContent: an object with {} (the exact shape is the tool's outputSchema).\n",
            names.join(", ")
        );
    }
    out
}

/// The forms of a schema whose root is one of several (`oneOf`, or the
/// `anyOf` schemars derives for an untagged enum of exclusive variants).
fn forms(schema: &Value) -> Option<&Vec<Value>> {
    schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)
}

/// One line per property of the object schema `s`.
fn arguments(out: &mut String, s: &Value) {
    let props = s.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match props {
        Some(p) if !p.is_empty() => {
            for (name, prop) in p {
                let need = if required.contains(&name.as_str()) {
                    "required"
                } else {
                    "optional"
                };
                let _ = write!(out, "- `{name}` ({}; {need})", summary(prop));
                if let Some(d) = prop.get("description").and_then(Value::as_str) {
                    let _ = write!(out, ": {d}");
                }
                out.push('\n');
            }
        }
        _ => out.push_str("None.\n"),
    }
}

/// A property's type in a few words: `string, pattern ^%[0-9]+$`,
/// `integer 1..1000, default 100`, `"pane"`, `"cr" | "lf"`.
fn summary(s: &Value) -> String {
    if let Some(c) = s.get("const") {
        return c.to_string();
    }
    if let Some(Value::Array(vs)) = s.get("enum") {
        let vs: Vec<String> = vs.iter().map(Value::to_string).collect();
        return with_default(vs.join(" | "), s);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(vs)) = s.get(key) {
            let vs: Vec<String> = vs.iter().map(summary).collect();
            return with_default(vs.join(", or "), s);
        }
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".into(),
    };
    let mut text = match ty.as_str() {
        "array" => {
            let items = s.get("items").map(summary).unwrap_or_else(|| "any".into());
            format!("array of ({items}){}", range(s, "minItems", "maxItems"))
        }
        "object" => match s.get("properties").and_then(Value::as_object) {
            Some(p) if !p.is_empty() => {
                let names: Vec<&str> = p.keys().map(String::as_str).collect();
                format!("object {{{}}}", names.join(", "))
            }
            _ => "object".into(),
        },
        "integer" | "number" => {
            let lo = s.get("minimum").or(s.get("exclusiveMinimum"));
            let hi = s.get("maximum");
            match (lo, hi) {
                (Some(lo), Some(hi)) => format!("{ty} {lo}..{hi}"),
                (Some(lo), None) => format!("{ty} >= {lo}"),
                (None, Some(hi)) => format!("{ty} <= {hi}"),
                (None, None) => ty,
            }
        }
        "string" => {
            let mut t = ty;
            if let Some(p) = s.get("pattern").and_then(Value::as_str) {
                let _ = write!(t, ", pattern {p}");
            }
            t + &range(s, "minLength", "maxLength")
        }
        _ => ty,
    };
    text = with_default(text, s);
    text
}

fn range(s: &Value, lo: &str, hi: &str) -> String {
    match (s.get(lo), s.get(hi)) {
        (Some(lo), Some(hi)) => format!(", {lo}..{hi} long"),
        (Some(lo), None) => format!(", at least {lo} long"),
        (None, Some(hi)) => format!(", at most {hi} long"),
        (None, None) => String::new(),
    }
}

fn with_default(text: String, s: &Value) -> String {
    match s.get("default") {
        Some(d) => format!("{text}, default {d}"),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_reference_naming_each_argument() {
        for set in [
            crate::toolkit::call::spec::Toolset::Default,
            crate::toolkit::call::spec::Toolset::Python,
        ] {
            for t in crate::tools::catalog(set) {
                let text = render(t, None);
                assert!(text.starts_with(&format!("# {}\n\n{}\n", t.name, t.description)));
                if !t.details.is_empty() {
                    assert!(text.contains(t.details), "{}", t.name);
                }
                let schema = t.full_input_schema();
                let forms: Vec<&Value> = match forms(&schema) {
                    Some(f) => f.iter().collect(),
                    None => vec![&schema],
                };
                for form in forms {
                    for name in form["properties"].as_object().unwrap().keys() {
                        assert!(
                            text.contains(&format!("- `{name}` (")),
                            "{}: argument {name} missing from its reference:\n{text}",
                            t.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn summaries_say_type_bounds_and_default() {
        let s =
            serde_json::json!({"type": "integer", "minimum": 1, "maximum": 1000, "default": 100});
        assert_eq!(summary(&s), "integer 1..1000, default 100");
        let s = serde_json::json!({"type": "string", "enum": ["cr", "lf"], "default": "cr"});
        assert_eq!(summary(&s), "\"cr\" | \"lf\", default \"cr\"");
        let s = serde_json::json!({"type": "array", "items": {"type": "string", "pattern": "^%[0-9]+$"}, "minItems": 1});
        assert_eq!(
            summary(&s),
            "array of (string, pattern ^%[0-9]+$), at least 1 long"
        );
    }
}
