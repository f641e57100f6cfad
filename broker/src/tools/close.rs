//! `tmux_close` (seed family, docs/spec.md A.7): kill exactly one referenced
//! session, window or pane with `kill-session|kill-window|kill-pane -t <id>`.
//! Targets are never selected by name and the tmux server is never killed:
//! closing what holds every remaining pane (which would end the server) is
//! refused, as is closing the agent's own pane, or the window or a session that
//! holds it, without `--allow-self`.

use crate::session::Session;
use crate::toolkit::acting::tmux_command;
use crate::toolkit::call::confirm::{self, Ask};
use crate::toolkit::call::spec::{Annotations, Call, CallFuture, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::action;
use crate::toolkit::schemas::derived::{data_schema_of, input_of, ExitZero, Observed};
use crate::toolkit::seed::envelope;
use crate::toolkit::seed::mutation;
use crate::toolkit::target::references::{AnyRef, Kind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const SPEC: ToolSpec = ToolSpec::new(
    "tmux_close",
    Annotations::destructive("Close a session, window or pane"),
    input_schema,
    output_schema,
    run,
)
.seed()
.description("Close a session, window or pane by reference. Refuses what would end the tmux server, and the agent's own pane without --allow-self.")
.details("Close exactly one referenced session, window or pane (kill-session / kill-window / kill-pane by id, never by name). Closing a session or window also closes what it contains. Refuses to close what would end the tmux server (its last panes), and the agent's own pane or what contains it unless attached with --allow-self.");

/// The arguments: one reference of any kind (`kind` says which).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The session, window or pane to close.
    target: AnyRef,
}

fn input_schema() -> Value {
    input_of::<Args>()
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
    mutation::output_schema(data_schema_of::<Closed>())
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    let ask = c.ask.clone();
    c.run(move |session, args| async move { call(session, &ask, args).await })
}

async fn call(session: &Session, ask: &Ask, args: Args) -> Result<ToolOutput, ToolOutput> {
    let broker = &session.broker;
    let target = mutation::target(session, args.target.parts()).await?;
    if target.holds_caller(session) && !session.allow_self {
        return Err(mutation::self_denied(match target.kind {
            Kind::Pane => "Closing",
            Kind::Window => "Closing this window would close",
            Kind::Session => "Closing this session would close",
        }));
    }
    if target.panes.len() >= target.all_panes {
        return Err(envelope::policy_denied(&format!(
            "{} {} holds every remaining pane of the tmux server; closing it would end the server, which tmux_close never does. Nothing was sent.",
            target.kind.as_str(),
            target.id
        )));
    }
    let command = target.kind.kill_command();
    let question = action::ending("Close", &target);
    confirm::ask(ask, "tmux_close", &question, |m| {
        envelope::policy_denied(&format!("{m} Nothing was sent."))
    })
    .await?;
    mutation::run_mutation(broker, &[command, "-t", &target.id]).await?;
    tmux_command::refresh_after(broker).await;
    Ok(envelope::ok(
        "tmux_close",
        &Closed {
            target: AnyRef::new(target.kind, &target.id, &broker.identity.generation),
            delivery: Observed,
            client_exit_status: ExitZero,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_derived_schema_takes_one_reference_of_any_kind_and_decodes_its_kind() {
        let v = jsonschema::validator_for(&input_schema()).unwrap();
        for (kind, id) in [
            (Kind::Session, "$1"),
            (Kind::Window, "@1"),
            (Kind::Pane, "%1"),
        ] {
            let args = json!({ "target": { "kind": kind.as_str(), "id": id, "generation": "g" } });
            assert!(v.is_valid(&args), "{args}");
            let decoded = serde_json::from_value::<Args>(args).unwrap();
            assert_eq!(decoded.target.parts(), (kind, id, "g"));
        }
        for bad in [
            json!({ "target": { "kind": "window_link", "id": "@1", "generation": "g" } }),
            json!({ "target": { "kind": "pane", "id": "@1", "generation": "g" } }),
            json!({ "target": { "kind": "session", "id": "main", "generation": "g" } }),
            json!({ "target": { "kind": "pane", "id": "%1" } }),
            json!({ "target": { "kind": "pane", "id": "%1", "generation": "" } }),
            json!({ "target": { "kind": "pane", "id": "%1", "generation": "g", "x": 1 } }),
            json!({ "target": { "kind": "pane", "id": "%1", "generation": "g" }, "force": true }),
            json!({}),
        ] {
            assert!(!v.is_valid(&bad), "accepted {bad}");
        }
    }
}
