//! A seed-family mutation (`tmux_send`, `tmux_create`, `tmux_close`,
//! `tmux_run`) at the family's edge: its output schema (the envelope with
//! `effects` required on the error branch), the size check on its arguments,
//! and the one target resolver and one tmux command worded as the family's
//! envelopes ([`target`], [`refused`], [`run_mutation`], [`failed`]).
//!
//! Its errors are built like any seed error (`envelope::error` and its
//! shorthands); the `effects` a mutation's error carries are added at the
//! edge, by the tool's `ToolSpec::answer`.

use crate::session::Session;
use crate::toolkit::acting::tmux_command::{self, Delivery, Failure};
use crate::toolkit::call::output::ToolOutput;
use crate::toolkit::seed::envelope;
use crate::toolkit::target::references::{any_ref_schema, Kind};
use crate::toolkit::target::resolver::{self, Refusal, Target};
use serde_json::{json, Value};
use tmux_mcp_engine::Broker;

/// The output schema of a mutation tool: the common envelope, with `effects`
/// required on the error branch and `created` holding entity references.
pub fn output_schema(data: Value) -> Value {
    let mut schema = envelope::output_schema(data);
    let err = &mut schema["oneOf"][1]["properties"]["error"];
    err["required"] = json!(["code", "message", "delivery", "effects"]);
    err["properties"]["effects"]["properties"]["created"]["items"] = any_ref_schema();
    schema
}

/// Sum of all string bytes (object keys and string values) in `v`.
pub fn string_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(string_bytes).sum(),
        Value::Object(m) => m.iter().map(|(k, v)| k.len() + string_bytes(v)).sum(),
        _ => 0,
    }
}

/// `capacity` (not sent) when the arguments' strings exceed `max_mutation_bytes`.
pub fn check_mutation_bytes(args: &Value) -> Result<(), ToolOutput> {
    let n = string_bytes(args) as u64;
    if n > tmux_mcp_core::limits::MAX_MUTATION_BYTES {
        return Err(envelope::error("capacity", &format!("The arguments hold {n} bytes of strings; at most {} are accepted. Nothing was sent.", tmux_mcp_core::limits::MAX_MUTATION_BYTES), Delivery::NotSent));
    }
    Ok(())
}

/// The `policy_denied` envelope for acting on the caller's own pane.
pub fn self_denied(what: &str) -> ToolOutput {
    envelope::policy_denied(&format!(
        "{what} the agent's own pane (the pane the MCP relay runs in); that needs explicit opt-in: attach with `tmux-mcp attach --allow-self`. Nothing was sent."
    ))
}

/// The seed family's envelope for a [`Refusal`] of the resolver.
pub fn refused(r: &Refusal) -> ToolOutput {
    let why = format!("{} Nothing was sent.", r.message());
    let mut out = match r {
        Refusal::Generation | Refusal::Gone { .. } => {
            envelope::error("stale_target", &why, Delivery::NotSent)
        }
        Refusal::OutOfScope { .. } => envelope::policy_denied(&why),
        Refusal::Unreadable(_) => envelope::error("transport_error", &why, Delivery::NotSent),
    };
    out.refusal = r.kind();
    out
}

/// The seed family's envelope for a tmux command's [`Failure`].
pub fn failed(f: &Failure) -> ToolOutput {
    envelope::error(f.code, &f.message, f.delivery)
}

/// The target the seed family's reference `r` names (its generation
/// required): the one resolver, `resolver::find`, its refusals worded as the
/// family's envelopes ([`refused`]), all `not_sent`. `r` is a typed
/// reference's `parts()`.
pub async fn target(session: &Session, r: (Kind, &str, &str)) -> Result<Target, ToolOutput> {
    let (kind, id, generation) = r;
    resolver::find(session, kind, id, Some(generation))
        .await
        .map_err(|r| refused(&r))
}

/// Runs the one tmux command of a seed-family mutation; failures as envelopes,
/// with `delivery` honest about what may have happened.
pub async fn run_mutation(broker: &Broker, args: &[&str]) -> Result<String, ToolOutput> {
    tmux_command::run_command(broker, args)
        .await
        .map_err(|f| failed(&f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolkit::target::references::reference;

    /// A mutation tool's errors, as it answers them.
    fn answered(out: ToolOutput) -> ToolOutput {
        crate::tools::spec("tmux_send").unwrap().answer(out)
    }

    #[test]
    fn effects() {
        let effects = |o: ToolOutput| o.structured.unwrap()["error"].clone();
        let e = effects(answered(envelope::error(
            "deadline",
            "x",
            Delivery::PossiblySent,
        )));
        assert_eq!(
            (e["delivery"].as_str(), e["effects"]["state"].as_str()),
            (Some("possibly_sent"), Some("unknown"))
        );
        let e = effects(answered(envelope::error(
            "stale_target",
            "x",
            Delivery::NotSent,
        )));
        assert_eq!(e["effects"], json!({ "state": "none", "created": [] }));
        let created = vec![reference(Kind::Pane, "%1", "g")];
        let e = effects(answered(envelope::error_with_created(
            "capacity",
            "x",
            created.clone(),
        )));
        assert_eq!(
            (e["delivery"].as_str(), e["effects"]["state"].as_str()),
            (Some("observed"), Some("known"))
        );
        assert_eq!(e["effects"]["created"], json!(created));
        let schema = output_schema(json!({ "type": "object" }));
        let v = jsonschema::validator_for(&schema).unwrap();
        assert!(v.is_valid(
            &envelope::error_with_created("capacity", "x", created)
                .structured
                .unwrap()
        ));
        assert!(
            !v.is_valid(
                &envelope::error("capacity", "x", Delivery::NotSent)
                    .structured
                    .unwrap()
            ),
            "effects must be required"
        );
        assert!(v.is_valid(&answered(envelope::policy_denied("")).structured.unwrap()));
        // A success is answered as it is (no `error` key appears).
        let ok = envelope::ok("tmux_send", json!({ "x": 1 }));
        assert_eq!(answered(ok.clone()).structured, ok.structured);
        // A read tool's errors carry no effects.
        let read = crate::tools::spec("tmux_capture").unwrap();
        let e = read.answer(envelope::error("stale_target", "x", Delivery::NotSent));
        assert!(e.structured.unwrap()["error"].get("effects").is_none());
    }
}
