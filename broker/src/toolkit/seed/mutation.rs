//! A seed-family mutation (`tmux_send`, `tmux_create`, `tmux_close`, …) at
//! the family's edge: its output schema (the envelope with `effects`
//! required on the error branch), its errors (`effects` `none` or
//! `unknown`), the size check on its arguments, and the one target resolver
//! and one tmux command worded as its envelopes ([`resolve`], [`refused`],
//! [`run_mutation`], [`failed`]).

use crate::session::Session;
use crate::toolkit::acting::tmux_command::{self, Failure};
use crate::toolkit::call::output::ToolOutput;
use crate::toolkit::seed::envelope::{self, Delivery};
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

/// A mutation error whose effects are `none` (not sent) or `unknown`.
pub fn fail(code: &str, why: &str, delivery: Delivery) -> ToolOutput {
    envelope::mutation_error(code, why, delivery, Vec::new())
}

pub fn policy_denied(why: &str) -> ToolOutput {
    envelope::mutation_error("policy_denied", why, Delivery::NotSent, Vec::new())
}

/// `invalid_input` for an argument-level rejection found after schema validation.
pub fn invalid_input(problem: &str) -> ToolOutput {
    envelope::mutation_error("invalid_input", problem, Delivery::NotSent, Vec::new())
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
        return Err(fail("capacity", &format!("The arguments hold {n} bytes of strings; at most {} are accepted. Nothing was sent.", tmux_mcp_core::limits::MAX_MUTATION_BYTES), Delivery::NotSent));
    }
    Ok(())
}

/// The `policy_denied` envelope for acting on the caller's own pane.
pub fn self_denied(what: &str) -> ToolOutput {
    policy_denied(&format!(
        "{what} the agent's own pane (the pane the MCP relay runs in); that needs explicit opt-in: attach with `tmux-mcp attach --allow-self`. Nothing was sent."
    ))
}

/// The seed family's envelope for a [`Refusal`] of the resolver.
pub fn refused(r: &Refusal) -> ToolOutput {
    let why = format!("{} Nothing was sent.", r.message());
    let mut out = match r {
        Refusal::Generation | Refusal::Gone { .. } => fail("stale_target", &why, Delivery::NotSent),
        Refusal::OutOfScope { .. } => policy_denied(&why),
        Refusal::Unreadable(_) => fail("transport_error", &why, Delivery::NotSent),
    };
    out.refusal = r.kind();
    out
}

/// The seed family's envelope for a tmux command's [`Failure`].
pub fn failed(f: &Failure) -> ToolOutput {
    fail(f.code, &f.message, f.delivery)
}

/// Resolves the seed family's reference `r` (its generation required);
/// failures are the family's envelopes, all `not_sent`.
/// `r` is a typed reference's `parts()` (taken apart so that this module
/// need not know the session and window reference types, which build on it).
pub async fn resolve(session: &Session, r: (Kind, &str, &str)) -> Result<Target, ToolOutput> {
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

    #[test]
    fn effects() {
        let effects = |o: ToolOutput| o.structured.unwrap()["error"].clone();
        let e = effects(fail("deadline", "x", Delivery::PossiblySent));
        assert_eq!(
            (e["delivery"].as_str(), e["effects"]["state"].as_str()),
            (Some("possibly_sent"), Some("unknown"))
        );
        let e = effects(fail("stale_target", "x", Delivery::NotSent));
        assert_eq!(e["effects"], json!({ "state": "none", "created": [] }));
        let created = vec![reference(Kind::Pane, "%1", "g")];
        let e = effects(envelope::mutation_error(
            "capacity",
            "x",
            Delivery::NotSent,
            created.clone(),
        ));
        assert_eq!(
            (e["delivery"].as_str(), e["effects"]["state"].as_str()),
            (Some("observed"), Some("known"))
        );
        assert_eq!(e["effects"]["created"], json!(created));
        let schema = output_schema(json!({ "type": "object" }));
        let v = jsonschema::validator_for(&schema).unwrap();
        assert!(v.is_valid(
            &envelope::mutation_error("capacity", "x", Delivery::NotSent, created)
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
        assert!(v.is_valid(
            &crate::tools::spec("tmux_send")
                .unwrap()
                .refusal(envelope::policy_denied())
                .structured
                .unwrap()
        ));
    }
}
