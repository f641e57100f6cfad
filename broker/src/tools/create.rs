//! `tmux_create` (seed family, docs/spec.md A.6): a new session, window or pane
//! running `argv`, with the new ids printed by tmux itself (`-P -F`).
//!
//! * `argv` is passed after `--` as separate arguments, so tmux executes it
//!   directly; a one-element argv is wrapped as `/usr/bin/env -- argv0`, so tmux
//!   never hands it to `$SHELL -c`.
//! * Names and `cwd` are format-expanded by tmux: `#` is doubled. Every string
//!   is also protected against tmux's `;` command splitting (`refs::literal_arg`).
//! * `cwd` must be an existing, accessible directory on this host; a relative
//!   path is taken relative to the agent's relay process (its cwd), never the
//!   broker's.
//! * With `--scope session` a new *session* would be outside what the agent may
//!   see, so it is refused (`policy_denied`); windows and panes are created only
//!   in visible parents.

use super::entity_refs::AnyRef;
use super::envelope::{self, Delivery};
use super::launch::{self, Program};
use super::refs::{self, Kind, INT_MAX, NO_NUL};
use super::typed::{data_schema_of, Observed, Unobserved};
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use tmux_mcp_core::wire::Scope;

pub const SPEC: ToolSpec = ToolSpec {
    name: "tmux_create",
    family: Family::Seed,
    description: "Create a session, window or pane running argv directly (no shell); returns the new references.",
    details: "Create a tmux session, window or pane running argv (executed directly, never through a shell; a one-element argv runs as `/usr/bin/env -- argv0`). kind \"session\": name, optional window_name, width, height. kind \"window\": parent session reference, name, optional index, focus. kind \"pane\": parent pane reference, direction horizontal|vertical, optional size (cells or \"N%\"), focus. Optional cwd (an existing directory; relative to the agent's cwd) and environment (NAME → value). Returns the created references (session, window, pane as applicable); the program's completion is not observed. With --scope session, only windows and panes in the agent's own session can be created.",
    annotations: Annotations::destructive("Create a session, window or pane"),
    opt_in: false,
    input_schema,
    output_schema,
    run,
};

fn common() -> Map<String, Value> {
    let props = json!({
        "argv": {
            "type": "array",
            "minItems": 1,
            "maxItems": 256,
            "items": { "type": "string", "pattern": NO_NUL },
            "description": "The program and its arguments; the first must be non-empty."
        },
        "cwd": { "type": "string", "minLength": 1, "pattern": NO_NUL, "description": "An existing directory; relative to the agent's working directory." },
        "environment": {
            "type": "object",
            "maxProperties": 128,
            "propertyNames": { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" },
            "additionalProperties": { "type": "string", "pattern": NO_NUL }
        }
    });
    match props {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

fn variant(required: &[&str], own: Value) -> Value {
    let mut props = common();
    if let Value::Object(m) = own {
        props.extend(m);
    }
    json!({ "type": "object", "additionalProperties": false, "required": required, "properties": props })
}

fn input_schema() -> Value {
    let int = |min: i64| json!({ "type": "integer", "minimum": min, "maximum": INT_MAX });
    let name = json!({ "type": "string", "minLength": 1, "pattern": refs::NO_CONTROL });
    json!({
        "type": "object",
        "oneOf": [
            variant(&["kind", "name", "argv"], json!({
                "kind": { "const": "session" },
                "name": name,
                "window_name": name,
                "width": int(1),
                "height": int(1)
            })),
            variant(&["kind", "parent", "name", "argv"], json!({
                "kind": { "const": "window" },
                "parent": refs::ref_schema(Kind::Session),
                "name": name,
                "index": int(0),
                "focus": { "type": "boolean" }
            })),
            variant(&["kind", "parent", "direction", "argv"], json!({
                "kind": { "const": "pane" },
                "parent": refs::ref_schema(Kind::Pane),
                "direction": { "enum": ["horizontal", "vertical"] },
                "size": { "oneOf": [int(1), { "type": "string", "pattern": "^(?:[1-9][0-9]?|100)%$" }] },
                "focus": { "type": "boolean" }
            }))
        ]
    })
}

/// What a creation answers (the output schema is derived from it).
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Created {
    /// The entity asked for (the first of `created`).
    entity: AnyRef,
    /// Everything tmux created: a session brings its window and pane.
    #[schemars(length(min = 1, max = 3))]
    created: Vec<AnyRef>,
    delivery: Observed,
    program_completion: Unobserved,
}

fn output_schema() -> Value {
    refs::output_schema(data_schema_of::<Created>())
}

fn check_cwd(session: &Session, cwd: &str) -> Result<PathBuf, ToolOutput> {
    launch::resolve_cwd(session, cwd)
        .map_err(|why| refs::invalid_input(&format!("argument /cwd: {why}. Nothing was sent.")))
}

/// The `parent` reference (the schema has checked its shape and kind).
async fn resolve_parent(session: &Session, args: &Value) -> Result<refs::Target, ToolOutput> {
    let parent = AnyRef::deserialize(&args["parent"])
        .map_err(|e| refs::invalid_input(&format!("argument /parent: {e}. Nothing was sent.")))?;
    refs::resolve(session, parent.parts()).await
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move { call(c.session, &c.args).await })
}

pub async fn call(session: &Session, args: &Value) -> ToolOutput {
    let broker = &session.broker;
    if let Err(e) = refs::check_mutation_bytes(args) {
        return e;
    }
    let argv_in: Vec<&str> = args["argv"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if argv_in.first().is_none_or(|a| a.is_empty()) {
        return refs::invalid_input(
            "argument /argv/0: the program must be a non-empty string. Nothing was sent.",
        );
    }
    let cwd = match args.get("cwd").and_then(Value::as_str) {
        Some(c) => match check_cwd(session, c) {
            Ok(p) => Some(p),
            Err(e) => return e,
        },
        None => None,
    };
    let focus = args.get("focus").and_then(Value::as_bool).unwrap_or(false);
    let kind = args["kind"].as_str().unwrap_or_default();

    // The command, up to (not including) the shared options and argv.
    let mut cmd: Vec<String> = Vec::new();
    match kind {
        "session" => {
            if session.scope != Scope::Server {
                return refs::policy_denied("With --scope session the agent acts only in its own tmux session, and a new session would be outside it; attach with --scope server to create sessions. Nothing was sent.");
            }
            cmd.extend([
                "new-session".into(),
                "-d".into(),
                "-s".into(),
                refs::format_arg(args["name"].as_str().unwrap_or_default()),
            ]);
            if let Some(w) = args.get("window_name").and_then(Value::as_str) {
                cmd.extend(["-n".into(), refs::format_arg(w)]);
            }
            if let Some(x) = args.get("width").and_then(Value::as_i64) {
                cmd.extend(["-x".into(), x.to_string()]);
            }
            if let Some(y) = args.get("height").and_then(Value::as_i64) {
                cmd.extend(["-y".into(), y.to_string()]);
            }
        }
        "window" => {
            let parent = match resolve_parent(session, args).await {
                Ok(t) => t,
                Err(e) => return e,
            };
            cmd.push("new-window".into());
            if !focus {
                cmd.push("-d".into());
            }
            let at = match args.get("index").and_then(Value::as_i64) {
                Some(i) => format!("{}:{i}", parent.id),
                None => format!("{}:", parent.id),
            };
            cmd.extend([
                "-t".into(),
                at,
                "-n".into(),
                refs::format_arg(args["name"].as_str().unwrap_or_default()),
            ]);
        }
        _ => {
            let parent = match resolve_parent(session, args).await {
                Ok(t) => t,
                Err(e) => return e,
            };
            cmd.push("split-window".into());
            if !focus {
                cmd.push("-d".into());
            }
            cmd.push(if args["direction"] == "horizontal" {
                "-h".into()
            } else {
                "-v".into()
            });
            cmd.extend(["-t".into(), parent.id.clone()]);
            match args.get("size") {
                Some(Value::Number(n)) => cmd.extend(["-l".into(), n.to_string()]),
                Some(Value::String(s)) => cmd.extend(["-l".into(), s.clone()]),
                _ => {}
            }
        }
    }
    let expected: &[Kind] = match kind {
        "session" => &[Kind::Session, Kind::Window, Kind::Pane],
        "window" => &[Kind::Window, Kind::Pane],
        _ => &[Kind::Pane],
    };
    cmd.extend(["-P".into(), "-F".into(), launch::print_format(expected)]);
    let env = args
        .get("environment")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()));
    cmd.extend(launch::program_tail(
        cwd.as_deref(),
        env,
        Program::Argv(&argv_in),
    ));

    let argv: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let printed = match refs::run_mutation(broker, &argv).await {
        Ok(out) => out,
        Err(e) => return e,
    };
    let generation = &broker.identity.generation;
    let ids: Vec<&str> = printed
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let parsed: Option<Vec<AnyRef>> = (ids.len() == expected.len())
        .then(|| {
            ids.iter()
                .zip(expected)
                .map(|(id, k)| {
                    (Kind::of_id(id) == Some(*k)).then(|| AnyRef::new(*k, id, generation))
                })
                .collect()
        })
        .flatten();
    refs::refresh_after(broker).await;
    let Some(created) = parsed else {
        return envelope::mutation_error(
            "transport_error",
            "tmux reported success but printed no recognisable ids for what it created; it may exist.",
            Delivery::Observed,
            Vec::new(),
        );
    };
    if let Some(why) = launch::started_elsewhere(
        cwd.as_deref(),
        &printed,
        ids.last().copied().unwrap_or_default(),
    ) {
        return envelope::mutation_error(
            "transport_error",
            &format!("{why}; close it or use it as it is."),
            Delivery::Observed,
            created
                .iter()
                .map(|r| serde_json::to_value(r).expect("a reference serializes"))
                .collect(),
        );
    }
    envelope::ok_typed(
        "tmux_create",
        &Created {
            entity: created[0].clone(),
            created,
            delivery: Observed,
            program_completion: Unobserved,
        },
    )
}
