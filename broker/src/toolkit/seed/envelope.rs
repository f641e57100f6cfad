//! The seed family's result envelope: `{ok:true,data}` or
//! `{ok:false,error:{code,message,delivery[,effects]}}` (docs/spec.md A.0.2).

use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::output::{RefusalKind, ToolOutput};
use serde_json::{json, Map, Value};

/// A success: `data` serialized from the type the output schema is derived
/// from, or a `Value` the tool built itself, moved in as it is ([`Data`]).
/// The envelope is built around `data` without copying it: `json!` would
/// serialize it once more, a deep copy of every row of a capture on each call
/// (docs/benchmarks.md, "Issue 51").
pub fn ok(tool: &str, data: impl Data) -> ToolOutput {
    let mut envelope = Map::new();
    envelope.insert("ok".into(), Value::Bool(true));
    envelope.insert("data".into(), data.into_data());
    ToolOutput {
        structured: Some(Value::Object(envelope)),
        text: format!("{tool} completed; structuredContent contains the result."),
        is_error: false,
        refusal: None,
    }
}

/// What [`ok`] takes as `data`: a reference to the tool's typed result,
/// serialized once, or a `Value` already built, taken as it is (serializing a
/// `Value` into a `Value` is a deep copy).
pub trait Data {
    fn into_data(self) -> Value;
}

impl Data for Value {
    fn into_data(self) -> Value {
        self
    }
}

impl<T: serde::Serialize> Data for &T {
    fn into_data(self) -> Value {
        serde_json::to_value(self).expect("tool results serialize")
    }
}

/// The fixed `error.message` of each code (the seed's result envelope): a
/// client may match on it, so the envelope never carries more. `capacity`
/// here means "over a limit" (load, response size, retention), not the seed's
/// "cleanup still pending", so it takes the generic text.
pub fn fixed_message(code: &str) -> &'static str {
    match code {
        "invalid_input" => "Input does not match the operation schema.",
        "stale_cursor" => "The cursor is unknown, expired, or outside its captured result.",
        "policy_denied" => "The configured policy denies this operation.",
        "closed" => "The application is closed.",
        _ => "The operation could not establish its requested result.",
    }
}

/// An error envelope: `error.message` is the code's fixed text; `detail` (the
/// specific reason: which field, what to do; never the input payload) follows
/// it in the text content only, where a model reads it.
pub fn error(code: &str, detail: &str, delivery: Delivery) -> ToolOutput {
    let message = fixed_message(code);
    let text = if detail.is_empty() {
        message.to_string()
    } else {
        // The detail is a sentence of its own after the fixed one.
        format!("{message} {}", sentence_case(detail))
    };
    ToolOutput {
        structured: Some(
            json!({ "ok": false, "error": { "code": code, "message": message, "delivery": delivery.as_str() } }),
        ),
        text,
        is_error: true,
        refusal: match code {
            "stale_target" => Some(RefusalKind::Gone),
            "stale_cursor" => Some(RefusalKind::StaleCursor),
            _ => None,
        },
    }
}

/// `s` with its first letter capitalised: it follows the fixed message's
/// full stop (`… result. The reference's generation …`). Only a plain word
/// is: a name (`tmux_close is …`, `target: …`, `tmux …`) stays as it is spelled.
fn sentence_case(s: &str) -> String {
    let word = s.split(' ').next().unwrap_or_default();
    let plain = word
        .trim_end_matches("'s")
        .chars()
        .all(|c| c.is_ascii_lowercase());
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_lowercase() && plain && word != "tmux" => {
            c.to_ascii_uppercase().to_string() + chars.as_str()
        }
        _ => s.to_string(),
    }
}

/// `policy_denied`, nothing sent; `why` (may be empty) says which policy.
pub fn policy_denied(why: &str) -> ToolOutput {
    error("policy_denied", why, Delivery::NotSent)
}

/// Which field and what was expected (never the value sent) go to the text.
pub fn invalid_input(problem: &str) -> ToolOutput {
    error("invalid_input", problem, Delivery::NotSent)
}

/// A mutation's error after tmux created something (`tmux_create`):
/// `effects` `known` with the `created` references, delivery `observed`.
pub fn error_with_created(code: &str, detail: &str, created: Vec<Value>) -> ToolOutput {
    let mut out = error(code, detail, Delivery::Observed);
    if let Some(s) = out.structured.as_mut() {
        s["error"]["effects"] = json!({ "state": "known", "created": created });
    }
    out
}

/// A seed mutation tool's answer (`tmux_send`, `tmux_create`, `tmux_close`,
/// `tmux_run`; [`crate::toolkit::call::spec::ToolSpec::answer`]): an error
/// envelope without `effects` gets them, `none` when nothing was sent and
/// `unknown` otherwise; any other output is returned as is.
pub fn with_effects(mut out: ToolOutput) -> ToolOutput {
    if let Some(err) = out
        .structured
        .as_mut()
        .and_then(|s| s.get_mut("error"))
        .filter(|e| e.is_object() && e.get("effects").is_none())
    {
        let state = if err["delivery"] == "not_sent" {
            "none"
        } else {
            "unknown"
        };
        err["effects"] = json!({ "state": state, "created": [] });
    }
    out
}

/// The JSON Schema of the error branch, shared by every seed tool's output schema.
pub fn error_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["ok", "error"],
        "properties": {
            "ok": { "const": false },
            "error": {
                "type": "object",
                "additionalProperties": false,
                "required": ["code", "message", "delivery"],
                "properties": {
                    "code": { "type": "string" },
                    "message": { "type": "string" },
                    "delivery": { "enum": ["not_sent", "possibly_sent", "observed"] },
                    "effects": {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["state", "created"],
                        "properties": {
                            "state": { "enum": ["none", "unknown", "known"] },
                            "created": { "type": "array", "maxItems": 3, "items": { "type": "object" } }
                        }
                    }
                }
            }
        }
    })
}

/// Output schema of a seed tool whose success payload is `data`.
pub fn output_schema(data: Value) -> Value {
    json!({
        "type": "object",
        "oneOf": [
            {
                "type": "object",
                "additionalProperties": false,
                "required": ["ok", "data"],
                "properties": { "ok": { "const": true }, "data": data }
            },
            error_schema()
        ]
    })
}

#[cfg(test)]
mod sentence_tests {
    use super::*;

    #[test]
    fn the_detail_is_a_sentence_after_the_fixed_message() {
        let e = error(
            "stale_target",
            "the reference's generation is not this server's",
            Delivery::NotSent,
        );
        assert_eq!(e.text, "The operation could not establish its requested result. The reference's generation is not this server's");
        let e = invalid_input("argument /start: 9 is greater than the maximum of 8");
        assert!(
            e.text
                .ends_with("schema. Argument /start: 9 is greater than the maximum of 8"),
            "{}",
            e.text
        );
        for name in [
            "tmux_close is in the destructive tier",
            "target: no such pane",
            "tmux reported",
        ] {
            assert!(policy_denied(name).text.ends_with(name), "{name}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Value` is moved into the envelope, not copied (a capture's rows are
    /// most of a call's bytes), and a typed result and the same `Value` give
    /// the same envelope, `ok` first, byte for byte.
    #[test]
    fn ok_moves_a_value_in_and_serializes_a_typed_result_once() {
        #[derive(serde::Serialize)]
        struct Rows {
            rows: Vec<String>,
        }
        let row = "a row of a capture\n".repeat(8);
        let data = json!({ "rows": [row.clone()] });
        let before = data["rows"][0].as_str().unwrap().as_ptr();
        let out = ok("tmux_capture", data).structured.unwrap();
        assert_eq!(out["data"]["rows"][0].as_str().unwrap().as_ptr(), before);
        let typed = ok("tmux_capture", &Rows { rows: vec![row] });
        assert_eq!(typed.structured.as_ref(), Some(&out));
        assert_eq!(
            out.to_string(),
            format!(
                "{{\"ok\":true,\"data\":{{\"rows\":[{:?}]}}}}",
                "a row of a capture\n".repeat(8)
            )
        );
    }
}
