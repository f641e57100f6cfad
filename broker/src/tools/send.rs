//! `tmux_send` (seed family, SPEC-TOOLS A.5): literal text or tmux key names
//! into exactly one pane, never both in one call, with no Enter appended.
//!
//! Text goes as `send-keys -l -t %N -- TEXT`: tmux sends each character as
//! itself, so `;`, `Enter`, `C-c` and a leading `-` arrive as those characters,
//! and a line feed arrives as the byte LF (0x0a) — not as the Enter key (CR).
//! Multi-line text is therefore delivered byte for byte in one command (checked
//! end-to-end against a raw-mode reader). Bracketed paste (`paste-buffer -p`)
//! was not used: it only brackets when the program asked for it, needs a named
//! buffer per call, and `paste-buffer` without `-r` turns LF into CR.
//! Keys go as `send-keys -t %N -- k1 k2 …`: tmux interprets the names.

use super::envelope;
use super::refs::{self, Kind, NO_NUL};
use super::{Family, ToolOutput, ToolSpec};
use crate::session::Session;
use serde_json::{json, Value};

pub const SPEC: ToolSpec = ToolSpec {
    name: "tmux_send",
    family: Family::Seed,
    default_enabled: false,
    description: "Send input to exactly one pane: {type:\"text\", text} is typed literally (send-keys -l; ';', 'Enter', 'C-c', a leading '-' and line feeds arrive as those characters) or {type:\"keys\", keys:[…]} names tmux keys (\"Enter\", \"C-c\", \"Up\", …); never both. No Enter is appended. Text ≤ 65536 characters, 1–256 keys, no NUL; ≤ 65536 string bytes in all. Success means tmux accepted the input (completion dispatch_only), not that a program read it. The agent's own pane needs --allow-self.",
    annotations,
    input_schema,
    output_schema,
};

fn annotations() -> Value {
    json!({ "title": "Send text or keys to a pane", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false })
}

fn text_input() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["type", "text"],
        "properties": {
            "type": { "const": "text" },
            "text": { "type": "string", "maxLength": 65536, "pattern": NO_NUL, "description": "Typed literally; may be empty; no Enter is appended." }
        }
    })
}

fn keys_input() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["type", "keys"],
        "properties": {
            "type": { "const": "keys" },
            "keys": {
                "type": "array",
                "minItems": 1,
                "maxItems": 256,
                "items": { "type": "string", "minLength": 1, "pattern": NO_NUL },
                "description": "tmux key names, sent in order, e.g. [\"C-c\"] or [\"Up\", \"Enter\"]."
            }
        }
    })
}

/// One root variant per input kind, so a validation error names the field
/// within the variant the caller meant (e.g. `/input/keys`).
fn input_schema() -> Value {
    let variant = |input: Value| {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["target", "input"],
            "properties": { "target": refs::ref_schema(Kind::Pane), "input": input }
        })
    };
    json!({ "type": "object", "oneOf": [variant(text_input()), variant(keys_input())] })
}

fn output_schema() -> Value {
    refs::output_schema(json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["target", "delivery", "client_exit_status", "completion"],
        "properties": {
            "target": refs::ref_schema(Kind::Pane),
            "delivery": { "const": "observed" },
            "client_exit_status": { "const": 0 },
            "completion": { "const": "dispatch_only" }
        }
    }))
}

pub async fn call(session: &Session, args: &Value) -> ToolOutput {
    if let Err(e) = refs::check_mutation_bytes(args) {
        return e;
    }
    let target = match refs::resolve(session, &args["target"]).await {
        Ok(t) => t,
        Err(e) => return e,
    };
    if target.holds_caller(session) && !session.allow_self {
        return refs::self_denied("Typing into");
    }
    let pane = &target.panes[0];
    if pane.dead {
        return refs::fail("stale_target", &format!("Pane {} is dead (its program exited and remain-on-exit keeps it); nothing would read the input. Nothing was sent.", pane.id), envelope::Delivery::NotSent);
    }
    let input = &args["input"];
    let mut argv: Vec<String> = vec!["send-keys".into()];
    match input["type"].as_str() {
        Some("text") => {
            argv.extend(["-l".into(), "-t".into(), target.id.clone(), "--".into()]);
            argv.push(refs::literal_arg(input["text"].as_str().unwrap_or_default()));
        }
        _ => {
            argv.extend(["-t".into(), target.id.clone(), "--".into()]);
            argv.extend(input["keys"].as_array().into_iter().flatten().filter_map(Value::as_str).map(refs::literal_arg));
        }
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    if let Err(e) = refs::run_mutation(&session.broker, &argv).await {
        return e;
    }
    envelope::ok(
        "tmux_send",
        json!({
            "target": target.reference(&session.broker),
            "delivery": "observed",
            "client_exit_status": 0,
            "completion": "dispatch_only",
        }),
    )
}
