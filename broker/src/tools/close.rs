//! `tmux_close` (seed family, docs/spec.md A.7): kill exactly one referenced
//! session, window or pane with `kill-session|kill-window|kill-pane -t <id>`.
//! Targets are never selected by name and the tmux server is never killed:
//! closing what holds every remaining pane (which would end the server) is
//! refused, as is closing the agent's own pane, or the window or a session that
//! holds it, without `--allow-self`.

use super::entity_refs::AnyRef;
use super::envelope;
use super::refs::{self, Kind};
use super::typed::{data_schema_of, ExitZero, Observed};
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};

pub const SPEC: ToolSpec = ToolSpec {
    name: "tmux_close",
    family: Family::Seed,
    description: "Close one session, window or pane by reference. Refuses what would end the tmux server, and the agent's own pane without --allow-self.",
    details: "Close exactly one referenced session, window or pane (kill-session / kill-window / kill-pane by id, never by name). Closing a session or window also closes what it contains. Refuses to close what would end the tmux server (its last panes), and the agent's own pane or what contains it unless attached with --allow-self.",
    annotations: Annotations::destructive("Close a session, window or pane"),
    opt_in: false,
    input_schema,
    output_schema,
    run,
};

/// One root variant per reference kind, so a validation error names the field.
fn input_schema() -> Value {
    let variant = |k: Kind| {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["target"],
            "properties": { "target": refs::ref_schema(k) }
        })
    };
    json!({ "type": "object", "oneOf": [variant(Kind::Session), variant(Kind::Window), variant(Kind::Pane)] })
}

/// What a close answers (the output schema is derived from it).
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Closed {
    target: AnyRef,
    delivery: Observed,
    client_exit_status: ExitZero,
}

fn output_schema() -> Value {
    refs::output_schema(data_schema_of::<Closed>())
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move { call(c.session, &c.args).await })
}

pub async fn call(session: &Session, args: &Value) -> ToolOutput {
    let broker = &session.broker;
    if let Err(e) = refs::check_mutation_bytes(args) {
        return e;
    }
    let target = match refs::resolve(session, &args["target"]).await {
        Ok(t) => t,
        Err(e) => return e,
    };
    if target.holds_caller(session) && !session.allow_self {
        return refs::self_denied(match target.kind {
            Kind::Pane => "Closing",
            Kind::Window => "Closing this window would close",
            Kind::Session => "Closing this session would close",
        });
    }
    if target.panes.len() >= target.all_panes {
        return refs::policy_denied(&format!(
            "{} {} holds every remaining pane of the tmux server; closing it would end the server, which tmux_close never does. Nothing was sent.",
            target.kind.as_str(),
            target.id
        ));
    }
    let command = match target.kind {
        Kind::Session => "kill-session",
        Kind::Window => "kill-window",
        Kind::Pane => "kill-pane",
    };
    if let Err(e) = refs::run_mutation(broker, &[command, "-t", &target.id]).await {
        return e;
    }
    refs::refresh_after(broker).await;
    envelope::ok_typed(
        "tmux_close",
        &Closed {
            target: AnyRef::new(target.kind, &target.id, &broker.identity.generation),
            delivery: Observed,
            client_exit_status: ExitZero,
        },
    )
}
