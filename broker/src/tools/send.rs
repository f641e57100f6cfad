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

use super::envelope;
use super::refs::{self, NO_NUL};
use super::typed::{data_schema_of, input_of, ExitZero, Observed};
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const SPEC: ToolSpec = ToolSpec {
    name: "tmux_send",
    family: Family::Seed,
    description: "Send literal text or tmux key names to one pane; no Enter is appended.",
    details: "Send input to exactly one pane: {type:\"text\", text} is typed literally (send-keys -l; ';', 'Enter', 'C-c', a leading '-' and line feeds arrive as those characters) or {type:\"keys\", keys:[…]} names tmux keys (\"Enter\", \"C-c\", \"Up\", …); never both. No Enter is appended. Text ≤ 65536 characters, 1–256 keys, no NUL; ≤ 65536 string bytes in all. Success means tmux accepted the input (completion dispatch_only), not that a program read it. The agent's own pane needs --allow-self.",
    annotations: Annotations::destructive("Send text or keys to a pane"),
    listed: super::Listed::AtTier,
    input_schema,
    output_schema,
    run,
};

/// The arguments: one pane, and what to type into it.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    target: refs::PaneRef,
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
    target: refs::PaneRef,
    delivery: Observed,
    client_exit_status: ExitZero,
    /// tmux accepted the input; whether a program read it is not observed.
    completion: DispatchOnly,
}

fn output_schema() -> Value {
    refs::output_schema(data_schema_of::<Sent>())
}

pub use tmux_mcp_core::tmux::COMMAND_ARG_BYTES;

fn arg_bytes(args: &[String]) -> usize {
    args.iter().map(|a| a.len() + 1).sum()
}

/// `text` in pieces of at most `max` bytes, cut at character boundaries
/// (an empty text is one empty piece: it is still sent, as the contract says).
pub(super) fn split_text(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let mut cut = max;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out.push(rest);
    out
}

/// Consecutive groups of `args` whose encoded size stays within `room`.
fn group_args(args: Vec<String>, room: usize) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = vec![Vec::new()];
    let mut used = 0;
    for a in args {
        let n = a.len() + 1;
        if used + n > room && !out.last().is_some_and(Vec::is_empty) {
            out.push(Vec::new());
            used = 0;
        }
        used += n;
        out.last_mut().expect("non-empty").push(a);
    }
    out
}

/// What to type: literal text (`send-keys -l`) or tmux key names.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    Text(&'a str),
    Keys(&'a [String]),
}

/// The `send-keys` commands that type `input` into pane `id`, in order, each
/// within one tmux message ([`COMMAND_ARG_BYTES`]); `--` ends the flags, so a
/// leading `-` is text or a key name, and a trailing `;` is escaped
/// ([`refs::literal_arg`]) so tmux never takes it for a command separator.
/// Shared by every tool that types (tmux_send, send_keys, run_command).
pub fn commands(id: &str, input: Input<'_>) -> Vec<Vec<String>> {
    match input {
        Input::Text(text) => {
            let head = vec![
                "send-keys".to_string(),
                "-l".into(),
                "-t".into(),
                id.to_string(),
                "--".into(),
            ];
            let room = COMMAND_ARG_BYTES - arg_bytes(&head) - 2; // NUL, and a `\` literal_arg may add
            split_text(text, room)
                .into_iter()
                .map(|t| head.iter().cloned().chain([refs::literal_arg(t)]).collect())
                .collect()
        }
        Input::Keys(keys) => {
            let head = vec![
                "send-keys".to_string(),
                "-t".into(),
                id.to_string(),
                "--".into(),
            ];
            let room = COMMAND_ARG_BYTES - arg_bytes(&head);
            group_args(keys.iter().map(|k| refs::literal_arg(k)).collect(), room)
                .into_iter()
                .map(|g| head.iter().cloned().chain(g).collect())
                .collect()
        }
    }
}

/// Runs `commands` in order. On a failure: how many landed before it, and why.
pub async fn deliver(
    session: &Session,
    commands: &[Vec<String>],
) -> Result<(), (usize, refs::Failure)> {
    for (i, argv) in commands.iter().enumerate() {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        refs::run_command(&session.broker, &argv)
            .await
            .map_err(|f| (i, f))?;
    }
    Ok(())
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    c.run_seed_mutation(call)
}

async fn call(session: &Session, args: Args) -> ToolOutput {
    let target = match refs::resolve(session, args.target.parts()).await {
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
    let what = match &args.input {
        SendInput::Text { text } => Input::Text(text),
        SendInput::Keys { keys } => Input::Keys(keys),
    };
    let commands = commands(&target.id, what);
    if let Err((landed, f)) = deliver(session, &commands).await {
        if landed == 0 {
            return f.envelope();
        }
        // Earlier pieces landed: say so, whatever this one's delivery was.
        return refs::fail(f.code, &format!("Piece {} of {} failed after {landed} piece(s) were delivered, so the pane received part of the input. {}", landed + 1, commands.len(), f.message), envelope::Delivery::Observed);
    }
    let target = refs::PaneRef::new(&target.id, &session.broker.identity.generation);
    envelope::ok_typed(
        "tmux_send",
        &Sent {
            target,
            delivery: Observed,
            client_exit_status: ExitZero,
            completion: DispatchOnly,
        },
    )
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

    #[test]
    fn long_text_splits_at_character_boundaries_and_reassembles() {
        let text = "é".repeat(20_000) + "tail;";
        let pieces = split_text(&text, 1001);
        assert!(pieces.iter().all(|p| p.len() <= 1001));
        assert_eq!(pieces.concat(), text);
        assert_eq!(split_text("", 10), vec![""]);
    }

    #[test]
    fn key_groups_fit_one_command() {
        let keys: Vec<String> = (0..256)
            .map(|i| format!("{}{i}", "x".repeat(250)))
            .collect();
        let groups = group_args(keys.clone(), 4000);
        assert!(groups.iter().all(|g| arg_bytes(g) <= 4000));
        assert_eq!(groups.concat(), keys);
    }
}
