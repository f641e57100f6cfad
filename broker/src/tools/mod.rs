//! The tools: one module per tool (or per small family of tools), each a leaf
//! over [`crate::toolkit`]; here only the catalog of published tools, the
//! per-session policy over it, and dispatch.
//!
//! [`call`] takes the tool from `CATALOG`, checks that the session may use
//! it, validates the arguments against its enforced input schema
//! (`toolkit::call::validate`), then runs it. Resources read through
//! [`read_through`].
//!
//! Architecture invariant: no tool module names another tool module
//! (`tests/e2e/layers.rs`); what two tools share lives in the toolkit.

mod batch;
mod build_workspace;
mod capabilities;
mod capture_pane;
mod capture_pane_python;
mod capture_since;
mod capture_since_python;
mod close;
mod create;
mod get_commands;
mod get_job;
mod get_pane_info;
mod get_server_info;
mod kill;
mod list_agents;
mod list_clients;
mod list_panes;
mod list_servers;
mod list_sessions;
mod list_windows;
mod paste_text;
mod rename;
mod resize_pane;
mod respawn_pane;
mod run_command;
mod search_panes;
mod search_panes_python;
mod select;
mod send;
mod send_keys;
mod send_prompt;
mod show_environment;
mod show_hooks;
mod show_options;
mod snapshot;
mod snapshot_pane;
mod spawn;
mod tmux_capture;
mod tmux_run;
mod wait;
mod wait_for_agent;
mod wait_for_idle;
mod wait_for_text;

use crate::session::Session;
use crate::toolkit::call::confirm;
use crate::toolkit::call::route;
use crate::toolkit::call::spec::{
    Call, Family, Listed, Progress, Tier, ToolOutput, ToolSpec, Toolset,
};
use crate::toolkit::call::validate::Validator;
use crate::toolkit::seed::envelope;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

impl ToolSpec {
    /// On without `--enable-tool` for a session at tier `safety`: at or below
    /// the tier and listed at it, or the companion of a tool that is.
    pub fn on_at(&self, safety: Tier) -> bool {
        match self.listed {
            Listed::AtTier => self.tier() <= safety,
            Listed::OptIn => false,
            Listed::With(other) => spec(other).is_some_and(|o| o.on_at(safety)),
        }
    }

    /// Why a session at tier `safety` cannot call this tool, and the switch that
    /// enables it (a disabled tool is hidden and refused by name).
    pub fn why_disabled(&self, safety: Tier) -> String {
        let name = self.name;
        if self.tier() > safety {
            let tier = self.tier().as_str();
            format!(
                "{name} is in the {tier} safety tier and this session allows {}; enable the tier with `tmux-mcp attach --safety {tier}` or `set -g @mcp-safety {tier}`, or this tool alone with `tmux-mcp attach --enable-tool {name}`",
                safety.as_str()
            )
        } else if let Listed::With(other) = self.listed {
            let why = spec(other).map_or_else(String::new, |o| o.why_disabled(safety));
            format!(
                "{name} comes with {other}, which this session does not have ({why}); or enable {name} alone with `tmux-mcp attach --enable-tool {name}` or `set -g @mcp-enable-tools {name}`"
            )
        } else {
            format!("{name} is opt-in; enable it with `tmux-mcp attach --enable-tool {name}` or `set -g @mcp-enable-tools {name}`")
        }
    }
}

/// Catalog order is the order of `tools/list` and of `enabled_tools`.
pub const CATALOG: &[ToolSpec] = &[
    capabilities::SPEC,
    snapshot::SPEC,
    send::SPEC,
    create::SPEC,
    close::SPEC,
    tmux_capture::SPEC,
    wait::SPEC,
    tmux_run::SPEC,
    list_panes::SPEC,
    capture_pane::SPEC,
    snapshot_pane::SPEC,
    list_sessions::SPEC,
    list_windows::SPEC,
    get_pane_info::SPEC,
    get_server_info::SPEC,
    list_servers::SPEC,
    list_clients::SPEC,
    get_commands::SPEC,
    show_options::SPEC,
    show_environment::SPEC,
    show_hooks::SPEC,
    search_panes::SPEC,
    capture_since::SPEC,
    send_keys::SPEC,
    paste_text::SPEC,
    send_prompt::SPEC,
    run_command::SPEC,
    get_job::SPEC,
    wait_for_text::SPEC,
    wait_for_idle::SPEC,
    list_agents::SPEC,
    wait_for_agent::SPEC,
    spawn::CREATE_SESSION,
    spawn::CREATE_WINDOW,
    spawn::SPLIT_WINDOW,
    build_workspace::SPEC,
    select::SELECT_PANE,
    select::SELECT_WINDOW,
    resize_pane::SPEC,
    rename::RENAME_SESSION,
    rename::RENAME_WINDOW,
    respawn_pane::SPEC,
    kill::KILL_PANE,
    kill::KILL_WINDOW,
    kill::KILL_SESSION,
    batch::SPEC,
];

/// The Python toolset (`--toolset python`): tools that replace the [`CATALOG`]
/// entry of the same name with tmux-python/libtmux-mcp's spelling of it.
pub const PYTHON_TOOLSET: &[ToolSpec] = &[
    capture_pane_python::SPEC,
    capture_since_python::SPEC,
    search_panes_python::SPEC,
];

/// The tools of `toolset`, in catalog order.
pub fn catalog(toolset: Toolset) -> impl Iterator<Item = &'static ToolSpec> {
    CATALOG.iter().map(move |t| match toolset {
        Toolset::Python => PYTHON_TOOLSET
            .iter()
            .find(|p| p.name == t.name)
            .unwrap_or(t),
        Toolset::Default => t,
    })
}

/// Tool `name` as `toolset` spells it.
pub fn spec_in(toolset: Toolset, name: &str) -> Option<&'static ToolSpec> {
    catalog(toolset).find(|t| t.name == name)
}

pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    spec_in(Toolset::Default, name)
}

/// Names in `requested` that are not tools (for a clear startup error).
pub fn unknown_tools<'a>(requested: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    requested
        .into_iter()
        .filter(|n| spec(n).is_none())
        .cloned()
        .collect()
}

/// The tools a session at tier `safety` may use: every tool [`ToolSpec::on_at`]
/// that tier, plus the tools named by `--enable-tool` / `@mcp-enable-tools`
/// (naming a tool enables it whatever its tier), plus the companions
/// ([`Listed::With`]) of the tools named.
pub fn enabled_set(safety: Tier, extra: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    let mut set: BTreeSet<String> = CATALOG
        .iter()
        .filter(|t| t.on_at(safety))
        .map(|t| t.name.to_string())
        .collect();
    set.extend(extra.into_iter().filter(|n| spec(n).is_some()));
    let companions: Vec<String> = CATALOG
        .iter()
        .filter(|t| matches!(t.listed, Listed::With(o) if set.contains(o)))
        .map(|t| t.name.to_string())
        .collect();
    set.extend(companions);
    set
}

pub fn enabled_in_catalog_order(enabled: &BTreeSet<String>) -> Vec<&'static str> {
    CATALOG
        .iter()
        .filter(|t| enabled.contains(t.name))
        .map(|t| t.name)
        .collect()
}

fn validators() -> &'static HashMap<(Toolset, &'static str), Validator> {
    static V: OnceLock<HashMap<(Toolset, &'static str), Validator>> = OnceLock::new();
    V.get_or_init(|| {
        [Toolset::Default, Toolset::Python]
            .into_iter()
            .flat_map(|set| catalog(set).map(move |t| (set, t)))
            .map(|(set, t)| ((set, t.name), Validator::new(t.full_input_schema())))
            .collect()
    })
}

/// Checks `args` against the tool's published input schema; the error names the
/// field and what was expected, never the value sent.
pub fn validate_input(name: &str, args: &Value) -> Result<(), String> {
    validate_in(Toolset::Default, name, args)
}

/// [`validate_input`] against `toolset`'s spelling of the tool.
pub fn validate_in(toolset: Toolset, name: &str, args: &Value) -> Result<(), String> {
    match validators().get(&(toolset, name)) {
        Some(v) => v.check(args),
        None => Ok(()),
    }
}

/// Runs read-only tool `name` of the default toolset for `session` whatever
/// the session's policy (resources are read through the tools that read the
/// same things, so they share their scope, hook-freeness and errors). The
/// arguments are checked against the tool's published input schema.
pub async fn read_through(session: &Session, name: &str, args: Value) -> ToolOutput {
    let t = match spec(name) {
        Some(t) if t.tier() == Tier::Readonly => t,
        _ => return ToolOutput::libtmux_error(format!("{name} is not a read-only tool")),
    };
    if let Err(problem) = validate_input(name, &args) {
        return ToolOutput::libtmux_error(format!(
            "Invalid arguments for {name}: {problem}. Nothing was sent to tmux."
        ));
    }
    (t.run)(Call {
        spec: t,
        session,
        args,
        progress: None,
        ask: confirm::Ask::Not,
    })
    .await
}

/// Waits up to `timeout_ms` for `run_command` job `id` of `session` and
/// answers as the blocking call would (the body of an MCP task).
pub async fn wait_job(session: &Session, id: &str, timeout_ms: u64) -> ToolOutput {
    run_command::wait_job(session, id, timeout_ms, timeout_ms, None).await
}

/// Runs tool `name` for `session`. Never panics on client input.
pub async fn call(
    session: &Session,
    name: &str,
    args: Value,
    progress: Option<Progress>,
    ask: confirm::Ask,
) -> ToolOutput {
    session
        .daemon
        .tool_calls
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let Some(t) = spec_in(session.toolset, name) else {
        return ToolOutput::libtmux_error(format!("Unknown tool {name:?}. Call tools/list for the available tools. Nothing was sent to tmux."));
    };
    let mut args = args;
    match route::take_server(&mut args).map(|n| route::python_socket(session, &args, n)) {
        Err(problem) => invalid(t, &problem),
        Ok(route::Named::Own) => match route::check_unqualified(t, &mut args) {
            Err(refused) => refused,
            Ok(()) => here(session, t, args, progress, ask).await,
        },
        Ok(route::Named::One(key)) => on(session, t, &key, args, progress, ask).await,
        Ok(route::Named::Socket(name)) => match route::destination(session, &name).await {
            Err(why) => route::unreachable(
                t,
                &format!("socket_name {name:?} names another tmux server, which cannot be called: {why}"),
            ),
            Ok(dest) => at(session, t, &name, dest, args, progress, ask).await,
        },
        Ok(route::Named::Many(_)) if !t.across_servers => invalid(
            t,
            "argument /server: \"*\" and a list of keys are for the listings across servers (list_panes, list_sessions, search_panes, list_agents); other tools take one key",
        ),
        Ok(route::Named::Many(keys)) => {
            let keys = match keys {
                Some(keys) => keys,
                None => route::every_key(session).await,
            };
            // No progress or questions: each server answers on its own.
            let calls = keys
                .iter()
                .map(|k| on(session, t, k, args.clone(), None, confirm::Ask::Not));
            let outs = futures::future::join_all(calls).await;
            route::gather(t, keys.into_iter().zip(outs).collect())
        }
    }
}

/// `t` on the server `key` names: here, or forwarded to that server's broker.
async fn on(
    session: &Session,
    t: &'static ToolSpec,
    key: &str,
    args: Value,
    progress: Option<Progress>,
    ask: confirm::Ask,
) -> ToolOutput {
    if let Some(link) = session.other_servers.named(key) {
        return match route::still_named(session, key).await {
            Ok(()) => route::forward(session, t, key, route::Via::Linked(link), args, ask).await,
            Err(why) => route::unreachable(t, &why),
        };
    }
    match route::destination(session, key).await {
        Err(why) => route::unreachable(t, &why),
        Ok(dest) => at(session, t, key, dest, args, progress, ask).await,
    }
}

/// `t` where `dest` is: here (its qualified ids taken back), or forwarded.
async fn at(
    session: &Session,
    t: &'static ToolSpec,
    key: &str,
    dest: route::Destination,
    mut args: Value,
    progress: Option<Progress>,
    ask: confirm::Ask,
) -> ToolOutput {
    match dest {
        route::Destination::Own => match route::unqualify_own(t, key, &mut args) {
            Err(refused) => refused,
            Ok(()) => here(session, t, args, progress, ask).await,
        },
        route::Destination::Other { key, identity } => {
            route::forward(session, t, &key, route::Via::Local(&identity), args, ask).await
        }
        route::Destination::Host { key, host, opts } => {
            route::forward(session, t, &key, route::Via::Host(&host, &opts), args, ask).await
        }
    }
}

/// `t` on the own server: its policy, its arguments checked, then its `run`.
async fn here(
    session: &Session,
    t: &'static ToolSpec,
    args: Value,
    progress: Option<Progress>,
    ask: confirm::Ask,
) -> ToolOutput {
    let name = t.name;
    // Another server's agent kept to sessions here (it is session-scoped, or
    // this server's @mcp-scope is session) has no session here: it may only
    // continue what the person handed over. Said, rather than answered with
    // empty listings that would read as an empty server.
    if session.via.is_some()
        && session.scope == tmux_mcp_core::wire::Scope::Session
        && !route::continues_handoff(t, &args)
    {
        return route::refuse(t, &format!("{name} is not open to agents of other tmux servers here: this server keeps them to their own sessions (its @mcp-scope is session, or the agent is scoped to its own sessions), and they have none here; only a pane the person hands over (prefix + A on this server) can be read, with the call its line names"));
    }
    if !session.enabled.contains(name) {
        let why = t.why_disabled(session.safety);
        return match t.family {
            Family::Seed => t.answer(envelope::policy_denied(&format!(
                "{why}. Nothing was sent to tmux."
            ))),
            Family::Libtmux => {
                ToolOutput::libtmux_error(format!("Tool {why}. Nothing was sent to tmux."))
            }
        };
    }
    if let Err(problem) = validate_in(session.toolset, name, &args) {
        return invalid(t, &problem);
    }
    // A call that named a server may carry a way to ask for that server's
    // broker; here only this session's own --confirm asks.
    let ask = match session.confirm {
        true => ask,
        false => confirm::Ask::Not,
    };
    (t.run)(Call {
        spec: t,
        session,
        args,
        progress,
        ask,
    })
    .await
}

/// Arguments refused in `t`'s family's words, naming the field.
fn invalid(t: &ToolSpec, problem: &str) -> ToolOutput {
    match t.family {
        Family::Seed => t.answer(envelope::invalid_input(problem)),
        Family::Libtmux => ToolOutput::libtmux_error(format!(
            "Invalid arguments for {}: {problem}. Nothing was sent to tmux.",
            t.name
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::validate_input;

    /// Every tool states what it is for, and every read tool has a sample
    /// its own input schema accepts (the hook trap calls each with it).
    #[test]
    fn every_tool_is_declared_whole() {
        use crate::toolkit::call::spec::Sample;
        let s = Sample {
            pane: "%0",
            generation: "0123456789abcdef0123456789abcdef",
        };
        for t in super::CATALOG {
            assert!(!t.description.is_empty(), "{}: no description", t.name);
            assert!(t.annotations.title.is_some(), "{}: no title", t.name);
            match t.sample {
                Some(sample) => {
                    let args = sample(&s);
                    if let Err(e) = validate_input(t.name, &args) {
                        panic!("{}: its sample {args} is refused: {e}", t.name);
                    }
                }
                None => assert!(
                    t.tier() != super::Tier::Readonly,
                    "{}: a read tool needs a sample (ToolSpec::sample)",
                    t.name
                ),
            }
        }
    }

    /// What in `text` (a tool module) writes a tool's `run` another way than
    /// `c.run(call)` (`Call::run`): a future boxed by hand, an adapter
    /// re-implemented, a refusal matched out where `?` says it.
    fn written_another_way(text: &str) -> Vec<&'static str> {
        [
            ("Box::pin", "boxes its own future: write `c.run(call)`"),
            (
                "unwrap_or_else(|e| e)",
                "re-implements Call::run: write `c.run(call)`",
            ),
            (
                "Ok(o) | Err(o) => o",
                "re-implements Call::run: write `c.run(call)`",
            ),
            ("Err(e) => return e,", "matches a refusal out: write `?`"),
        ]
        .into_iter()
        .filter(|(needle, _)| text.contains(needle))
        .map(|(_, why)| why)
        .collect()
    }

    /// Architecture invariant: one way to write a tool. Every tool's `run` is
    /// `c.run(call)` over `async fn call(&Session, Args) -> Result<ToolOutput,
    /// ToolOutput>` whose body refuses with `?`; no tool module writes
    /// `Box::pin` or an adapter of its own.
    #[test]
    fn every_tool_is_written_one_way() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tools");
        let mut found = Vec::new();
        let mut modules = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            // Every module but this one, the catalog and dispatch.
            if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("mod.rs") {
                modules += 1;
                let text = std::fs::read_to_string(&path).unwrap();
                for why in written_another_way(&text) {
                    found.push(format!("{}: {why}", path.display()));
                }
            }
        }
        assert!(modules > super::CATALOG.len() / 2, "read {modules} modules");
        assert!(
            found.is_empty(),
            "tools written another way (see `Call::run` in toolkit/spec.rs):\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn the_one_way_check_sees_each_other_way() {
        let planted = [
            "fn run(c: Call<'_>) -> CallFuture<'_> { Box::pin(async move { todo!() }) }",
            "Ok(a) => call(c.session, a).await.unwrap_or_else(|e| e),",
            "match search(c.session, args).await { Ok(o) | Err(o) => o }",
            "let t = match target(session).await { Ok(t) => t, Err(e) => return e, };",
        ];
        for text in planted {
            assert_eq!(written_another_way(text).len(), 1, "{text}");
        }
        assert!(
            written_another_way("fn run(c: Call<'_>) -> CallFuture<'_> { c.run(call) }").is_empty()
        );
    }

    /// A companion names a tool of the catalog that is listed on its own, and
    /// comes with it whichever way that tool is on: by tier or by name.
    #[test]
    fn a_companion_comes_with_its_tool() {
        use super::{enabled_set, spec, Listed, Tier, CATALOG};
        for t in CATALOG {
            if let Listed::With(o) = t.listed {
                let other = spec(o).unwrap_or_else(|| panic!("{}: {o} is not a tool", t.name));
                assert!(!matches!(other.listed, Listed::With(_)), "{}", t.name);
            }
        }
        assert!(!enabled_set(Tier::Readonly, []).contains("get_job"));
        assert!(enabled_set(Tier::Mutating, []).contains("get_job"));
        assert!(enabled_set(Tier::Readonly, ["run_command".to_string()]).contains("get_job"));
        assert!(enabled_set(Tier::Readonly, ["get_job".to_string()]).contains("get_job"));
    }
}
