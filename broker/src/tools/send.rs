//! `tmux_send` (seed family, docs/spec.md A.5): literal text or tmux key names
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
//!
//! One tmux command must fit one message of tmux's client protocol (16 KiB
//! with headers; the arguments get [`COMMAND_ARG_BYTES`]), so a long text is
//! sent as several `send-keys -l` commands, in order, split at character
//! boundaries, and a long key list likewise. If a later piece fails after an
//! earlier one landed, the error says how much arrived (delivery `observed`,
//! effects `unknown`).

use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::schemas::derived::{data_schema_of, input_of, ExitZero, Observed};
use crate::toolkit::schemas::patterns::NO_NUL;
use crate::toolkit::seed::envelope;
use crate::toolkit::seed::mutation;
use crate::toolkit::target::references;
use crate::toolkit::typing::keystrokes::{commands, deliver, Input};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const SPEC: ToolSpec = ToolSpec::new(
    "tmux_send",
    Annotations::destructive("Send text or keys to a pane"),
    input_schema,
    output_schema,
    |c| c.run(call),
)
.seed()
.description("Send literal text or tmux key names to one pane; no Enter is appended.")
.details("Send input to exactly one pane: {type:\"text\", text} is typed literally (send-keys -l; ';', 'Enter', 'C-c', a leading '-' and line feeds arrive as those characters) or {type:\"keys\", keys:[…]} names tmux keys (\"Enter\", \"C-c\", \"Up\", …); never both. No Enter is appended. Text ≤ 65536 characters, 1–256 keys, no NUL; ≤ 65536 string bytes in all. Success means tmux accepted the input (completion dispatch_only), not that a program read it. The agent's own pane needs --allow-self.");

/// The arguments: one pane, and what to type into it.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    target: references::PaneRef,
    input: SendInput,
}

/// Literal text or key names, never both (`type` says which).
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
enum SendInput {
    Text {
        /// Typed literally; may be empty; no Enter is appended.
        #[schemars(length(max = 65536), regex(pattern = NO_NUL))]
        text: String,
    },
    Keys {
        /// tmux key names, sent in order, e.g. ["C-c"] or ["Up", "Enter"].
        #[schemars(length(min = 1, max = 256), inner(length(min = 1), regex(pattern = NO_NUL)))]
        keys: Vec<String>,
    },
}

fn input_schema() -> Value {
    input_of::<Args>()
}

crate::constant!(DispatchOnly, "dispatch_only");

/// What a send answers (the output schema is derived from it).
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Sent {
    target: references::PaneRef,
    delivery: Observed,
    client_exit_status: ExitZero,
    /// tmux accepted the input; whether a program read it is not observed.
    completion: DispatchOnly,
}

fn output_schema() -> Value {
    mutation::output_schema(data_schema_of::<Sent>())
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let target = mutation::target(session, args.target.parts()).await?;
    if target.holds_caller(session) && !session.allow_self {
        return Err(mutation::self_denied("Typing into"));
    }
    let pane = &target.panes[0];
    if pane.dead {
        return Err(envelope::error("stale_target", &format!("Pane {} is dead (its program exited and remain-on-exit keeps it); nothing would read the input. Nothing was sent.", pane.id), Delivery::NotSent));
    }
    let what = match &args.input {
        SendInput::Text { text } => Input::Text(text),
        SendInput::Keys { keys } => Input::Keys(keys),
    };
    let commands = commands(&target.id, what);
    if let Err((landed, f)) = deliver(session, &commands).await {
        if landed == 0 {
            return Err(mutation::failed(&f));
        }
        // Earlier pieces landed: say so, whatever this one's delivery was.
        return Err(envelope::error(f.code, &format!("Piece {} of {} failed after {landed} piece(s) were delivered, so the pane received part of the input. {}", landed + 1, commands.len(), f.message), Delivery::Observed));
    }
    let target = references::PaneRef::new(&target.id, &session.broker.identity.generation);
    Ok(envelope::ok(
        "tmux_send",
        &Sent {
            target,
            delivery: Observed,
            client_exit_status: ExitZero,
            completion: DispatchOnly,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_derived_schema_takes_one_kind_of_input_and_decodes_what_it_takes() {
        let v = jsonschema::validator_for(&input_schema()).unwrap();
        let t = json!({ "kind": "pane", "id": "%1", "generation": "g" });
        let text = json!({ "target": t, "input": { "type": "text", "text": "" } });
        let keys = json!({ "target": t, "input": { "type": "keys", "keys": ["C-c", "Enter"] } });
        assert!(v.is_valid(&text) && v.is_valid(&keys));
        assert!(matches!(
            serde_json::from_value::<Args>(text).unwrap().input,
            SendInput::Text { text } if text.is_empty()
        ));
        assert!(matches!(
            serde_json::from_value::<Args>(keys).unwrap().input,
            SendInput::Keys { keys } if keys == ["C-c", "Enter"]
        ));
        for bad in [
            json!({ "target": t, "input": { "type": "text", "text": "a", "keys": ["Enter"] } }),
            json!({ "target": t, "input": { "type": "keys", "text": "a", "keys": ["Enter"] } }),
            json!({ "target": t, "input": { "type": "keys", "keys": [] } }),
            json!({ "target": t, "input": { "type": "keys", "keys": [""] } }),
            json!({ "target": t, "input": { "type": "keys", "keys": vec!["x"; 257] } }),
            json!({ "target": t, "input": { "type": "text", "text": "a\u{0}b" } }),
            json!({ "target": t, "input": { "type": "text", "text": "x".repeat(65_537) } }),
            json!({ "target": t, "input": { "type": "paste", "text": "a" } }),
            json!({ "target": t, "input": { "text": "a" } }),
            json!({ "target": t }),
            json!({ "input": { "type": "text", "text": "a" } }),
            json!({ "target": t, "input": { "type": "text", "text": "a" }, "enter": true }),
            json!({ "target": { "kind": "window", "id": "@1", "generation": "g" },
                    "input": { "type": "text", "text": "a" } }),
        ] {
            assert!(!v.is_valid(&bad), "accepted {bad}");
        }
    }
}
