//! `tmux_create` (seed family, docs/spec.md A.6): a new session, window or pane
//! running `argv`, with the new ids printed by tmux itself (`-P -F`).
//!
//! * `argv` is passed after `--` as separate arguments, so tmux executes it
//!   directly; a one-element argv is wrapped as `/usr/bin/env -- argv0`, so tmux
//!   never hands it to `$SHELL -c`.
//! * Names and `cwd` are format-expanded by tmux: `#` is doubled. Every string
//!   is also protected against tmux's `;` command splitting (`quote::literal_arg`).
//! * `cwd` must be an existing, accessible directory on this host; a relative
//!   path is taken relative to the agent's relay process (its cwd), never the
//!   broker's.
//! * With `--scope session` a new *session* would be outside what the agent may
//!   see, so it is refused (`policy_denied`); windows and panes are created only
//!   in visible parents.

use crate::session::Session;
use crate::toolkit::acting::launch::{self, Create, Program, Side};
use crate::toolkit::acting::tmux_command::{self, Delivery};
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::schemas::derived::{data_schema_of, input_of, Observed, Unobserved};
use crate::toolkit::schemas::patterns::{self, INT_MAX, NO_NUL};
use crate::toolkit::seed::envelope;
use crate::toolkit::seed::mutation;
use crate::toolkit::target::references::{self, AnyRef, Kind, SessionRef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use tmux_mcp_core::wire::Scope;

pub const SPEC: ToolSpec = ToolSpec::new(
    "tmux_create",
    Annotations::destructive("Create a session, window or pane"),
    input_schema,
    output_schema,
    |c| c.run(call),
)
.seed()
.description("Create a session, window or pane running argv directly (no shell); returns the new references.")
.details("Create a tmux session, window or pane running argv (executed directly, never through a shell; a one-element argv runs as `/usr/bin/env -- argv0`). kind \"session\": name, optional window_name, width, height. kind \"window\": parent session reference, name, optional index, focus. kind \"pane\": parent pane reference, direction horizontal|vertical, optional size (cells or \"N%\"), focus. Optional cwd (an existing directory; relative to the agent's cwd) and environment (NAME → value). Returns the created references (session, window, pane as applicable); the program's completion is not observed. With --scope session, only windows and panes in the agent's own session can be created.");

/// The arguments: what to create (`kind` says which) and the program it runs.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[schemars(extend("type" = "object"))]
enum Args {
    #[schemars(extend("additionalProperties" = false))]
    Session {
        #[schemars(length(min = 1), regex(pattern = patterns::NO_CONTROL))]
        name: String,
        #[schemars(length(min = 1), regex(pattern = patterns::NO_CONTROL))]
        window_name: Option<String>,
        #[schemars(range(min = 1, max = INT_MAX))]
        width: Option<u32>,
        #[schemars(range(min = 1, max = INT_MAX))]
        height: Option<u32>,
        #[serde(flatten)]
        program: ProgramArgs,
    },
    #[schemars(extend("additionalProperties" = false))]
    Window {
        parent: SessionRef,
        #[schemars(length(min = 1), regex(pattern = patterns::NO_CONTROL))]
        name: String,
        #[schemars(range(max = INT_MAX))]
        index: Option<u32>,
        focus: Option<bool>,
        #[serde(flatten)]
        program: ProgramArgs,
    },
    #[schemars(extend("additionalProperties" = false))]
    Pane {
        parent: references::PaneRef,
        direction: Direction,
        size: Option<Size>,
        focus: Option<bool>,
        #[serde(flatten)]
        program: ProgramArgs,
    },
}

// What every kind runs: argv, where, and with what environment. (A plain
// comment: schemars would publish a doc comment in each kind's variant.)
#[derive(Deserialize, JsonSchema)]
struct ProgramArgs {
    /// The program and its arguments; the first must be non-empty.
    #[schemars(length(min = 1, max = 256), inner(regex(pattern = NO_NUL)))]
    argv: Vec<String>,
    /// An existing directory; relative to the agent's working directory.
    #[schemars(length(min = 1), regex(pattern = NO_NUL))]
    cwd: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "launch::env_schema")]
    environment: BTreeMap<String, String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Direction {
    Horizontal,
    Vertical,
}

/// A new pane's size: cells, or a percentage of the pane it splits.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum Size {
    Cells(#[schemars(range(min = 1, max = INT_MAX))] u32),
    Percent(#[schemars(regex(pattern = r"^(?:[1-9][0-9]?|100)%$"))] String),
}

fn input_schema() -> Value {
    input_of::<Args>()
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
    mutation::output_schema(data_schema_of::<Created>())
}

fn check_cwd(session: &Session, cwd: &str) -> Result<PathBuf, ToolOutput> {
    launch::resolve_cwd(session, cwd)
        .map_err(|why| envelope::invalid_input(&format!("argument /cwd: {why}. Nothing was sent.")))
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let broker = &session.broker;
    let program = match &args {
        Args::Session { program, .. }
        | Args::Window { program, .. }
        | Args::Pane { program, .. } => program,
    };
    let argv_in: Vec<&str> = program.argv.iter().map(String::as_str).collect();
    if argv_in.first().is_none_or(|a| a.is_empty()) {
        return Err(envelope::invalid_input(
            "argument /argv/0: the program must be a non-empty string. Nothing was sent.",
        ));
    }
    let cwd = match &program.cwd {
        Some(c) => Some(check_cwd(session, c)?),
        None => None,
    };
    let (what, expected) = creation(session, &args).await?;
    let env = program
        .environment
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()));
    let tail = launch::program_tail(cwd.as_deref(), env, Program::Argv(&argv_in));
    let cmd = what.argv(expected, tail);
    let argv: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let printed = mutation::run_mutation(broker, &argv).await?;
    created(session, &printed, expected, cwd.as_deref()).await
}

/// What `args` asks tmux to create, its parent resolved (a session is
/// refused under `--scope session`), and the kinds of the ids tmux is to
/// print: a session brings its window and pane; a new pane is only itself.
async fn creation(session: &Session, args: &Args) -> Result<(Create, &'static [Kind]), ToolOutput> {
    Ok(match args {
        Args::Session {
            name,
            window_name,
            width,
            height,
            ..
        } => {
            if session.scope != Scope::Server {
                return Err(envelope::policy_denied("With --scope session the agent acts only in its own tmux session, and a new session would be outside it; attach with --scope server to create sessions. Nothing was sent."));
            }
            let what = Create::Session {
                name: Some(name.clone()),
                window_name: window_name.clone(),
                width: width.map(i64::from),
                height: height.map(i64::from),
            };
            (what, &[Kind::Session, Kind::Window, Kind::Pane])
        }
        Args::Window {
            parent,
            name,
            index,
            focus,
            ..
        } => {
            let parent = mutation::target(session, parent.parts()).await?;
            let what = Create::Window {
                session: parent.id.clone(),
                index: index.map(i64::from),
                name: Some(name.clone()),
                select: *focus == Some(true),
            };
            (what, &[Kind::Window, Kind::Pane])
        }
        Args::Pane {
            parent,
            direction,
            size,
            focus,
            ..
        } => {
            let parent = mutation::target(session, parent.parts()).await?;
            let side = match direction {
                Direction::Horizontal => Side::Right,
                Direction::Vertical => Side::Below,
            };
            let what = Create::Split {
                pane: parent.id.clone(),
                side: Some(side),
                size: size.as_ref().map(|s| match s {
                    Size::Cells(n) => n.to_string(),
                    Size::Percent(p) => p.clone(),
                }),
                select: *focus == Some(true),
            };
            (what, &[Kind::Pane])
        }
    })
}

/// The answer to a creation tmux reported done: the references of the ids
/// it `printed`, or an error saying what may exist (no ids it printed read,
/// or the pane started elsewhere than `cwd`).
async fn created(
    session: &Session,
    printed: &str,
    expected: &[Kind],
    cwd: Option<&std::path::Path>,
) -> Result<ToolOutput, ToolOutput> {
    let broker = &session.broker;
    let generation = &broker.identity.generation;
    let ids = launch::parse_printed_ids(printed, expected).unwrap_or_default();
    let parsed: Option<Vec<AnyRef>> = (!ids.is_empty()).then(|| {
        ids.iter()
            .zip(expected)
            .map(|(id, k)| AnyRef::new(*k, id, generation))
            .collect()
    });
    tmux_command::refresh_after(broker).await;
    let Some(created) = parsed else {
        return Err(envelope::error(
            "transport_error",
            "tmux reported success but printed no recognisable ids for what it created; it may exist.",
            Delivery::Observed,
        ));
    };
    if let Some(why) =
        launch::started_elsewhere(cwd, printed, ids.last().copied().unwrap_or_default())
    {
        return Err(envelope::error_with_created(
            "transport_error",
            &format!("{why}; close it or use it as it is."),
            created
                .iter()
                .map(|r| serde_json::to_value(r).expect("a reference serializes"))
                .collect(),
        ));
    }
    Ok(envelope::ok(
        "tmux_create",
        &Created {
            entity: created[0].clone(),
            created,
            delivery: Observed,
            program_completion: Unobserved,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_derived_schema_takes_one_kind_with_its_own_fields_and_decodes_it() {
        let v = jsonschema::validator_for(&SPEC.full_input_schema()).unwrap();
        let s = json!({ "kind": "session", "id": "$1", "generation": "g" });
        let p = json!({ "kind": "pane", "id": "%1", "generation": "g" });
        let argv = json!(["sleep", "9"]);
        for ok in [
            json!({ "kind": "session", "name": "w", "argv": argv, "width": 80, "height": 24,
                    "window_name": "x", "cwd": "/tmp", "environment": { "A_1": "b" } }),
            json!({ "kind": "window", "parent": s, "name": "w", "argv": argv, "index": 0, "focus": true }),
            json!({ "kind": "pane", "parent": p, "direction": "vertical", "argv": argv, "size": 10 }),
            json!({ "kind": "pane", "parent": p, "direction": "horizontal", "argv": argv, "size": "50%" }),
        ] {
            assert!(v.is_valid(&ok), "refused {ok}");
            let args: Args = serde_json::from_value(ok.clone()).unwrap();
            let (kind, program) = match &args {
                Args::Session { program, width, .. } => {
                    assert_eq!(*width, Some(80));
                    ("session", program)
                }
                Args::Window {
                    program,
                    index,
                    focus,
                    ..
                } => {
                    assert_eq!((*index, *focus), (Some(0), Some(true)));
                    ("window", program)
                }
                Args::Pane { program, size, .. } => {
                    match (size, &ok["size"]) {
                        (Some(Size::Cells(n)), Value::Number(m)) => {
                            assert_eq!(m.as_u64(), Some(u64::from(*n)))
                        }
                        (Some(Size::Percent(a)), Value::String(b)) => assert_eq!(a, b),
                        other => panic!("size decoded as {:?}", other.1),
                    }
                    ("pane", program)
                }
            };
            assert_eq!(kind, ok["kind"]);
            assert_eq!(json!(program.argv), argv);
            assert_eq!(
                program.environment.len(),
                ok.get("environment")
                    .map_or(0, |e| e.as_object().unwrap().len())
            );
        }
        for bad in [
            json!({ "kind": "session", "name": "w" }),
            json!({ "kind": "session", "name": "", "argv": argv }),
            json!({ "kind": "session", "name": "a\u{1}b", "argv": argv }),
            json!({ "kind": "session", "name": "w", "argv": [] }),
            json!({ "kind": "session", "name": "w", "argv": argv, "width": 0 }),
            json!({ "kind": "session", "name": "w", "argv": argv, "focus": true }),
            json!({ "kind": "session", "name": "w", "argv": argv, "environment": { "1A": "b" } }),
            json!({ "kind": "window", "parent": p, "name": "w", "argv": argv }),
            json!({ "kind": "window", "parent": s, "argv": argv }),
            json!({ "kind": "window", "parent": s, "name": "w", "argv": argv, "direction": "vertical" }),
            json!({ "kind": "pane", "parent": p, "argv": argv }),
            json!({ "kind": "pane", "parent": p, "direction": "diagonal", "argv": argv }),
            json!({ "kind": "pane", "parent": p, "direction": "vertical", "argv": argv, "size": 0 }),
            json!({ "kind": "pane", "parent": p, "direction": "vertical", "argv": argv, "size": "101%" }),
            json!({ "kind": "pane", "parent": p, "direction": "vertical", "argv": argv, "name": "w" }),
            json!({ "kind": "client", "argv": argv }),
        ] {
            assert!(!v.is_valid(&bad), "accepted {bad}");
        }
    }
}
