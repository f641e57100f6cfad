//! Input validation against a tool's enforced input schema, and its wording:
//! a refusal names the field and the rule it broke, never the value sent.
//! A `oneOf` or `anyOf` failure names the failing leaf inside the variant
//! the caller meant.
use crate::toolkit::schemas::patterns;
use serde_json::Value;

/// One tool's enforced input schema and its compiled validator.
pub struct Validator {
    schema: Value,
    compiled: jsonschema::Validator,
}

impl Validator {
    /// Compiles `schema`; a schema the broker publishes always compiles (a
    /// unit test compiles every tool's).
    pub fn new(schema: Value) -> Validator {
        let compiled = jsonschema::validator_for(&schema).expect("published input schema compiles");
        Validator { schema, compiled }
    }

    /// Checks `args`; the error names up to three failing fields and their rules.
    pub fn check(&self, args: &Value) -> Result<(), String> {
        if self.compiled.is_valid(args) {
            return Ok(());
        }
        let mut found: Vec<String> = Vec::new();
        for e in self.compiled.iter_errors(args) {
            for p in leaves(&self.schema, args, &e) {
                if !found.contains(&p) {
                    found.push(p);
                }
            }
            if found.len() >= 3 {
                break;
            }
        }
        found.truncate(3);
        Err(if found.is_empty() {
            "arguments do not match the published input schema".to_string()
        } else {
            found.join("; ")
        })
    }
}

/// The failing leaves of `e`: a `oneOf`/`anyOf` failure is replaced by the
/// errors of the variant the caller meant, recursively, so the message names
/// the field that is wrong (`/target/id`), not its parent (`/target`).
fn leaves<'a>(schema: &Value, args: &Value, e: &'a jsonschema::ValidationError<'a>) -> Vec<String> {
    use jsonschema::error::ValidationErrorKind as K;
    match e.kind() {
        K::OneOfNotValid { context } | K::AnyOf { context } if !context.is_empty() => {
            let variants = schema
                .pointer(e.schema_path().as_str())
                .and_then(Value::as_array);
            let instance = args
                .pointer(e.instance_path().as_str())
                .unwrap_or(&Value::Null);
            let best = (0..context.len())
                .max_by_key(|&i| {
                    (
                        variants
                            .and_then(|v| v.get(i))
                            .map_or(0, |v| intent(v, instance)),
                        std::cmp::Reverse(context[i].len()),
                    )
                })
                .unwrap_or(0);
            let out: Vec<String> = context[best]
                .iter()
                .flat_map(|sub| leaves(schema, args, sub))
                .collect();
            if out.is_empty() {
                vec![problem(e)]
            } else {
                out
            }
        }
        _ => vec![problem(e)],
    }
}

/// How surely `instance` was meant for `variant`: a matching `const` (`kind`,
/// `type`), at any depth, decides; then the variant's required keys present,
/// then its other keys present.
fn intent(variant: &Value, instance: &Value) -> i64 {
    if let Some(alts) = variant["oneOf"].as_array().or(variant["anyOf"].as_array()) {
        return alts.iter().map(|a| intent(a, instance)).max().unwrap_or(0);
    }
    let Some(obj) = instance.as_object() else {
        return 0;
    };
    let mut score = 0;
    for (k, sub) in variant["properties"].as_object().into_iter().flatten() {
        let Some(v) = obj.get(k) else { continue };
        score += 1;
        // A one-value `enum` is a `const` (schemars derives a unit variant so).
        let fixed = sub.get("const").or_else(|| {
            sub.get("enum")
                .and_then(Value::as_array)
                .filter(|vs| vs.len() == 1)
                .map(|vs| &vs[0])
        });
        match fixed {
            Some(c) => score += if c == v { 1000 } else { -1000 },
            None => score += intent(sub, v),
        }
    }
    let required = variant["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    score + 10 * required.filter(|k| obj.contains_key(*k)).count() as i64
}

fn problem(e: &jsonschema::ValidationError) -> String {
    let path = e.instance_path().to_string();
    let field = if path.is_empty() {
        "arguments".to_string()
    } else {
        format!("argument {path}")
    };
    format!("{field}: {}", describe_kind(e))
}

/// What was expected (the rule that failed), without echoing the offending value.
fn describe_kind(e: &jsonschema::ValidationError) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    match e.kind() {
        K::MinItems { limit } => format!("must hold at least {limit} item{}", plural(*limit)),
        K::MaxItems { limit } => format!("must hold at most {limit} item{}", plural(*limit)),
        K::MinProperties { limit } => format!("must hold at least {limit} field{}", plural(*limit)),
        K::MaxProperties { limit } => format!("must hold at most {limit} field{}", plural(*limit)),
        K::ExclusiveMinimum { limit } => format!("must be > {limit}"),
        K::ExclusiveMaximum { limit } => format!("must be < {limit}"),
        K::MultipleOf { multiple_of } => format!("must be a multiple of {multiple_of}"),
        K::UniqueItems => "items must be unique".to_string(),
        K::Contains => "must contain an item that matches the published item schema".to_string(),
        K::FalseSchema => "no value is allowed here".to_string(),
        K::Not { .. } => "matches a form the published schema excludes".to_string(),
        K::Format { format } => format!("must be a valid {format}"),
        K::OneOfMultipleValid { .. } => {
            "matches more than one of the alternatives; give the fields of exactly one".to_string()
        }
        K::OneOfNotValid { .. } | K::AnyOf { .. } => {
            "matches none of the alternatives of the published schema".to_string()
        }
        K::AdditionalItems { limit } => {
            format!("must hold at most {limit} item{}", plural(*limit as u64))
        }
        K::UnevaluatedProperties { unexpected } => {
            format!("unexpected field(s) {}", unexpected.join(", "))
        }
        // A key of a map (an environment variable's name): the key's own rule.
        K::PropertyNames { error } => format!("a field name {}", describe_kind(error)),
        K::AdditionalProperties { unexpected } => {
            format!("unexpected field(s) {}", unexpected.join(", "))
        }
        K::Required { property } => format!(
            "missing required field {}",
            property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string)
        ),
        K::Type { kind } => format!("expected type {kind:?}")
            .replace("Single(", "")
            .replace(')', "")
            .to_lowercase(),
        K::Pattern { pattern } if pattern == patterns::NO_CONTROL => {
            "must not contain control characters".to_string()
        }
        K::Pattern { pattern } => format!("must match the pattern {pattern}"),
        K::Minimum { limit } => format!("must be >= {limit}"),
        K::Maximum { limit } => format!("must be <= {limit}"),
        K::MinLength { limit } => format!("must be at least {limit} characters"),
        K::MaxLength { limit } => format!("must be at most {limit} characters"),
        K::Enum { options } => format!("must be one of {options}"),
        K::Constant { expected_value } => format!("must equal {expected_value}"),
        _ => "does not match the published input schema".to_string(),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use crate::tools::validate_input;
    use serde_json::json;

    /// Issue "Exact and safe under scrutiny" item 8: the error names the leaf
    /// inside the variant the caller meant (docs/spec.md A.0.3 invalid_input).
    #[test]
    fn errors_name_the_leaf_field_under_one_of() {
        let g = "0123456789abcdef0123456789abcdef";
        let e = validate_input(
            "tmux_capture",
            &json!({ "target": { "kind": "pane", "id": "0", "generation": g } }),
        )
        .unwrap_err();
        assert!(
            e.starts_with("argument /target/id: must match the pattern"),
            "{e}"
        );
        let e = validate_input(
            "tmux_capture",
            &json!({ "target": { "kind": "pane", "id": "%0", "generation": "" } }),
        )
        .unwrap_err();
        assert!(
            e.starts_with("argument /target/generation: must be at least 1"),
            "{e}"
        );
        let e = validate_input(
            "tmux_capture",
            &json!({ "target": { "kind": "pane", "id": "%0", "generation": g }, "cursor": "xyz" }),
        )
        .unwrap_err();
        assert!(
            e.starts_with("argument /cursor: must match"),
            "the continuation variant was meant: {e}"
        );
        let e = validate_input("tmux_wait", &json!({ "target": { "kind": "pane", "id": "%0", "generation": g }, "condition": { "type": "screen_contains" } })).unwrap_err();
        assert_eq!(e, "argument /condition: missing required field text");
        let e = validate_input("tmux_send", &json!({ "target": { "kind": "pane", "id": "%0", "generation": g }, "input": { "type": "keys", "keys": [] } })).unwrap_err();
        assert!(e.starts_with("argument /input/keys:"), "{e}");
        let e = validate_input(
            "tmux_close",
            &json!({ "target": { "kind": "window", "id": "%3", "generation": g } }),
        )
        .unwrap_err();
        assert!(
            e.starts_with("argument /target/id: must match the pattern ^@"),
            "the window variant was meant (kind): {e}"
        );
        assert!(validate_input(
            "tmux_capture",
            &json!({ "target": { "kind": "pane", "id": "%0", "generation": g } })
        )
        .is_ok());
    }

    /// Every refusal names the field and the rule it broke (never "does not
    /// match the published input schema" alone, never serde's words).
    #[test]
    fn errors_name_the_rule() {
        let huge: serde_json::Value = serde_json::from_str("18446744073709551616").unwrap(); // 2^64
        for big in [huge, json!(1e30), json!(1e308)] {
            let e = validate_input("capture_since", &json!({ "paneId": "%0", "maxBytes": big }))
                .unwrap_err();
            assert_eq!(
                e, "argument /maxBytes: must be <= 18446744073709551615",
                "{big}"
            );
        }
        assert!(
            validate_input(
                "capture_since",
                &json!({ "paneId": "%0", "maxBytes": 18446744073709551615u64 })
            )
            .is_ok(),
            "u64::MAX is within the schema"
        );
        let cases = [
            (
                "batch",
                json!({ "calls": [] }),
                "argument /calls: must hold at least 1 item",
            ),
            (
                "capture_pane",
                json!({ "paneId": "%0", "maxLines": 0 }),
                "argument /maxLines: must be > 0",
            ),
            (
                "tmux_create",
                json!({ "kind": "session", "name": "s", "argv": [] }),
                "argument /argv: must hold at least 1 item",
            ),
            (
                "tmux_create",
                json!({ "kind": "session", "name": "s", "argv": ["true"], "environment": { "1BAD": "x" } }),
                "argument /environment: a field name must match the pattern",
            ),
        ];
        for (tool, args, want) in cases {
            let e = validate_input(tool, &args).unwrap_err();
            assert!(
                e.starts_with(want),
                "{tool} {args}: {e:?} should start with {want:?}"
            );
            assert!(
                !e.contains("does not match the published input schema"),
                "{tool}: {e}"
            );
        }
    }
}
