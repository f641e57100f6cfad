//! The tool facade: the catalog of published tools, per-session policy, input
//! validation against the published schema, and dispatch to each tool.
//!
//! Tools are thin: they read the registry (engine) and shape a result. Two
//! families share this facade: the seed family `tmux_*` (results in the
//! `{ok, data | error}` envelope) and the libtmux family (camelCase, plain results).

pub mod act;
mod arrange;
mod batch;
mod build_workspace;
mod capabilities;
pub mod capture;
pub mod capture_pane;
mod capture_pane_python;
mod capture_since;
mod capture_since_python;
mod close;
pub mod confirm;
mod create;
pub mod criteria;
pub mod entity_refs;
pub mod envelope;
mod get_job;
mod get_pane_info;
mod get_server_info;
pub mod ids;
mod kill;
mod launch;
mod list_agents;
mod list_panes;
pub use paging::PAGE_MAX as LIST_PANES_PAGE_MAX;
mod list_sessions;
mod list_windows;
mod paging;
mod paste_text;
mod read;
pub mod reference;
mod refs;
mod rename;
mod resize_pane;
mod respawn_pane;
mod run_command;
mod search_panes;
mod search_panes_python;
mod select;
pub mod send;
mod send_keys;
mod send_prompt;
mod shell_line;
mod shells;
mod show_environment;
mod show_hooks;
mod show_options;
mod snapshot;
mod snapshot_pane;
mod spawn;
pub mod typed;
mod wait;
mod wait_for_agent;
mod wait_for_idle;
mod wait_for_text;

use crate::session::Session;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `tmux_*`: envelope results, `policy_denied` when disabled.
    Seed,
    /// libtmux vocabulary: plain results, tool errors naming the enabling option.
    Libtmux,
}

/// What a tool does to the person's tmux, honestly (MCP tool annotations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    pub title: Option<&'static str>,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

/// A tool's tier (`readonly` / `mutating` / `destructive`), from its annotations.
pub use tmux_mcp_core::wire::Tier;

impl Annotations {
    /// A read: changes nothing in tmux, so repeating it has no further effect
    /// (idempotent), and it touches nothing outside the person's tmux server.
    /// Every read publishes exactly these hints, the seed tools included:
    /// clients act on them (Codex CLI refuses a tool hinted destructive when
    /// it runs unattended), so MCP's defaults are never left in place.
    pub const fn read_only(title: &'static str) -> Annotations {
        Annotations {
            title: Some(title),
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        }
    }

    /// Changes state but loses nothing (the mutating tier): typing, arranging.
    pub const fn mutating(title: &'static str, idempotent: bool) -> Annotations {
        Annotations {
            title: Some(title),
            read_only: false,
            destructive: false,
            idempotent,
            open_world: false,
        }
    }

    pub const fn destructive(title: &'static str) -> Annotations {
        Annotations {
            title: Some(title),
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        }
    }

    /// The safety tier, from the hints alone: read-only, else destructive or
    /// not. Destructive means the tool's own action can lose something (a
    /// process, a pane, history); typing into a pane is mutating — the tier the
    /// person grants with `--safety mutating` — and says so in its description.
    pub fn tier(&self) -> Tier {
        match (self.read_only, self.destructive) {
            (true, _) => Tier::Readonly,
            (false, false) => Tier::Mutating,
            (false, true) => Tier::Destructive,
        }
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({});
        if let Some(t) = self.title {
            v["title"] = json!(t);
        }
        v["readOnlyHint"] = json!(self.read_only);
        v["destructiveHint"] = json!(self.destructive);
        v["idempotentHint"] = json!(self.idempotent);
        v["openWorldHint"] = json!(self.open_world);
        v
    }
}

/// One call of a tool: the session, the arguments (already checked against
/// the published input schema), and where progress goes.
pub struct Call<'a> {
    pub session: &'a Session,
    pub args: Value,
    pub progress: Option<Progress>,
    /// How a destructive tool asks the person first (`attach --confirm`).
    pub ask: confirm::Ask,
}

pub type CallFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = ToolOutput> + Send + 'a>>;

/// A tool, whole: everything about it is here, registered once in [`CATALOG`].
pub struct ToolSpec {
    pub name: &'static str,
    pub family: Family,
    /// What `tools/list` says: what the tool is for and its one rule that is
    /// not obvious. It is paid for in every agent's context, so the rest is in
    /// `details`.
    pub description: &'static str,
    /// The rest of the tool's documentation, served in its reference
    /// (`tmux://tool/{name}`, [`reference`]) and not in `tools/list`; empty
    /// when the description is all of it (a seed contract's).
    pub details: &'static str,
    /// What the tool does; decides its tier and, in the seed family, whether
    /// its errors carry `effects` (destructive tools).
    pub annotations: Annotations,
    /// When the tool is on without `--enable-tool`.
    pub listed: Listed,
    pub input_schema: fn() -> Value,
    pub output_schema: fn() -> Value,
    pub run: for<'a> fn(Call<'a>) -> CallFuture<'a>,
}

/// When a tool is on without `--enable-tool` / `@mcp-enable-tools`. Every
/// listed tool costs each agent context (issue 20), so a tool that is seldom
/// what an agent came for is named by the person, and a tool that only serves
/// another comes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    /// On for every session whose safety tier covers the tool's.
    AtTier,
    /// On only when named: the seed family's policy (A.0.4: only its
    /// discovery tools are on by default), and the configuration reads
    /// (`show_options`, `show_environment`, `show_hooks`).
    OptIn,
    /// On exactly when the named tool is (`get_job` collects what only
    /// `run_command` starts).
    With(&'static str),
}

impl ToolSpec {
    pub fn tier(&self) -> Tier {
        self.annotations.tier()
    }

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

    pub fn published_annotations(&self) -> Value {
        self.annotations.to_json()
    }
}

/// Catalog order is the order of `tools/list` and of `enabled_tools`.
pub const CATALOG: &[ToolSpec] = &[
    capabilities::SPEC,
    snapshot::SPEC,
    send::SPEC,
    create::SPEC,
    close::SPEC,
    capture::SPEC,
    wait::SPEC,
    list_panes::SPEC,
    capture_pane::SPEC,
    snapshot_pane::SPEC,
    list_sessions::SPEC,
    list_windows::SPEC,
    get_pane_info::SPEC,
    get_server_info::SPEC,
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

pub use tmux_mcp_core::wire::Toolset;

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

/// The `_meta` key of a tool's safety tier in `tools/list`.
pub const TIER_META: &str = "tmux-mcp/tier";

/// Tools whose input schema is a seed contract, published byte for byte.
const CONTRACT_INPUTS: &[&str] = &["tmux_capture", "capture_pane", "snapshot_pane"];

impl ToolSpec {
    /// The input schema as enforced, with every argument's whole description:
    /// every integer bounded by what the broker can hold, a contract's too
    /// (so `start: 2^63` is refused naming `start` and its maximum, not by a
    /// decoder that cannot say which field). The tool's reference shows this one.
    pub fn full_input_schema(&self) -> Value {
        let mut schema = (self.input_schema)();
        typed::bound_integers(&mut schema);
        schema
    }

    /// The input schema as published in `tools/list`: the enforced one made
    /// lean ([`typed::lean_input`]: first paragraphs of descriptions, none of
    /// the bounds that only say how the broker stores a value). It accepts
    /// everything the enforced one does, so it stays true; what it leaves out
    /// is still refused by name. A contract is published as it is.
    ///
    /// `additionalProperties: false` and defaults of `false`/`[]`/`{}` are
    /// left out too ([`typed::open_objects`]: every tool refuses an argument
    /// it does not know, naming it, so saying so costs each agent's context
    /// and tells its model nothing it acts on). The Python toolset keeps
    /// them: it publishes tmux-python/libtmux-mcp's shape.
    pub fn published_input_schema(&self, toolset: Toolset) -> Value {
        if CONTRACT_INPUTS.contains(&self.name) {
            // Byte for byte: only the bounds the broker adds are left out.
            return (self.input_schema)();
        }
        let mut schema = self.full_input_schema();
        typed::lean_input(&mut schema);
        if toolset == Toolset::Default {
            typed::open_objects(&mut schema);
        }
        schema
    }
}

/// The `tools/list` entry of one tool, as `toolset` publishes it.
pub fn describe(t: &ToolSpec, toolset: Toolset) -> Value {
    json!({
        "name": t.name,
        "description": t.description,
        "inputSchema": t.published_input_schema(toolset),
        "outputSchema": (t.output_schema)(),
        "annotations": t.published_annotations(),
        // The tier the broker enforces (from the honest annotations), so a
        // client can tell it even where the annotations are a seed's verbatim.
        "_meta": { TIER_META: t.tier().as_str() },
    })
}

/// What a tool call produced, before it is framed as an MCP result.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    pub structured: Option<Value>,
    pub text: String,
    pub is_error: bool,
}

impl ToolOutput {
    /// A libtmux-family tool error: text only, nothing reached tmux unless said.
    pub fn libtmux_error(message: impl Into<String>) -> Self {
        ToolOutput {
            structured: None,
            text: message.into(),
            is_error: true,
        }
    }
}

/// Per tool: its enforced input schema and the compiled validator.
struct Validator {
    schema: Value,
    compiled: jsonschema::Validator,
}

fn validators() -> &'static HashMap<(Toolset, &'static str), Validator> {
    static V: OnceLock<HashMap<(Toolset, &'static str), Validator>> = OnceLock::new();
    V.get_or_init(|| {
        [Toolset::Default, Toolset::Python]
            .into_iter()
            .flat_map(|set| catalog(set).map(move |t| (set, t)))
            .map(|(set, t)| {
                let schema = t.full_input_schema();
                let compiled =
                    jsonschema::validator_for(&schema).expect("published input schema compiles");
                ((set, t.name), Validator { schema, compiled })
            })
            .collect()
    })
}

/// The failing leaves of `e`: a `oneOf`/`anyOf` failure is replaced by the
/// errors of the variant the caller meant, recursively, so the message names
/// the field that is wrong (`/target/id`), not its parent (`/target`).
fn leaves<'a>(schema: &Value, args: &Value, e: &'a jsonschema::ValidationError<'a>) -> Vec<String> {
    use jsonschema::error::ValidationErrorKind as K;
    match e.kind() {
        K::OneOfNotValid { context } | K::AnyOf { context } if !context.is_empty() => {
            let variants = schema
                .pointer(e.schema_path().as_str())
                .and_then(Value::as_array);
            let instance = args
                .pointer(e.instance_path().as_str())
                .unwrap_or(&Value::Null);
            let best = (0..context.len())
                .max_by_key(|&i| {
                    (
                        variants
                            .and_then(|v| v.get(i))
                            .map_or(0, |v| intent(v, instance)),
                        std::cmp::Reverse(context[i].len()),
                    )
                })
                .unwrap_or(0);
            let out: Vec<String> = context[best]
                .iter()
                .flat_map(|sub| leaves(schema, args, sub))
                .collect();
            if out.is_empty() {
                vec![problem(e)]
            } else {
                out
            }
        }
        _ => vec![problem(e)],
    }
}

/// How surely `instance` was meant for `variant`: a matching `const` (`kind`,
/// `type`), at any depth, decides; then the variant's required keys present,
/// then its other keys present.
fn intent(variant: &Value, instance: &Value) -> i64 {
    if let Some(alts) = variant["oneOf"].as_array().or(variant["anyOf"].as_array()) {
        return alts.iter().map(|a| intent(a, instance)).max().unwrap_or(0);
    }
    let Some(obj) = instance.as_object() else {
        return 0;
    };
    let mut score = 0;
    for (k, sub) in variant["properties"].as_object().into_iter().flatten() {
        let Some(v) = obj.get(k) else { continue };
        score += 1;
        // A one-value `enum` is a `const` (schemars derives a unit variant so).
        let fixed = sub.get("const").or_else(|| {
            sub.get("enum")
                .and_then(Value::as_array)
                .filter(|vs| vs.len() == 1)
                .map(|vs| &vs[0])
        });
        match fixed {
            Some(c) => score += if c == v { 1000 } else { -1000 },
            None => score += intent(sub, v),
        }
    }
    let required = variant["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    score + 10 * required.filter(|k| obj.contains_key(*k)).count() as i64
}

fn problem(e: &jsonschema::ValidationError) -> String {
    let path = e.instance_path().to_string();
    let field = if path.is_empty() {
        "arguments".to_string()
    } else {
        format!("argument {path}")
    };
    format!("{field}: {}", describe_kind(e))
}

/// Checks `args` against the tool's published input schema; the error names the
/// field and what was expected, never the value sent.
pub fn validate_input(name: &str, args: &Value) -> Result<(), String> {
    validate_in(Toolset::Default, name, args)
}

/// [`validate_input`] against `toolset`'s spelling of the tool.
pub fn validate_in(toolset: Toolset, name: &str, args: &Value) -> Result<(), String> {
    let Some(v) = validators().get(&(toolset, name)) else {
        return Ok(());
    };
    if v.compiled.is_valid(args) {
        return Ok(());
    }
    let mut found: Vec<String> = Vec::new();
    for e in v.compiled.iter_errors(args) {
        for p in leaves(&v.schema, args, &e) {
            if !found.contains(&p) {
                found.push(p);
            }
        }
        if found.len() >= 3 {
            break;
        }
    }
    found.truncate(3);
    Err(if found.is_empty() {
        "arguments do not match the published input schema".to_string()
    } else {
        found.join("; ")
    })
}

/// What was expected (the rule that failed), without echoing the offending value.
fn describe_kind(e: &jsonschema::ValidationError) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    match e.kind() {
        K::MinItems { limit } => format!("must hold at least {limit} item{}", plural(*limit)),
        K::MaxItems { limit } => format!("must hold at most {limit} item{}", plural(*limit)),
        K::MinProperties { limit } => format!("must hold at least {limit} field{}", plural(*limit)),
        K::MaxProperties { limit } => format!("must hold at most {limit} field{}", plural(*limit)),
        K::ExclusiveMinimum { limit } => format!("must be > {limit}"),
        K::ExclusiveMaximum { limit } => format!("must be < {limit}"),
        K::MultipleOf { multiple_of } => format!("must be a multiple of {multiple_of}"),
        K::UniqueItems => "items must be unique".to_string(),
        K::Contains => "must contain an item that matches the published item schema".to_string(),
        K::FalseSchema => "no value is allowed here".to_string(),
        K::Not { .. } => "matches a form the published schema excludes".to_string(),
        K::Format { format } => format!("must be a valid {format}"),
        K::OneOfMultipleValid { .. } => {
            "matches more than one of the alternatives; give the fields of exactly one".to_string()
        }
        K::OneOfNotValid { .. } | K::AnyOf { .. } => {
            "matches none of the alternatives of the published schema".to_string()
        }
        K::AdditionalItems { limit } => {
            format!("must hold at most {limit} item{}", plural(*limit as u64))
        }
        K::UnevaluatedProperties { unexpected } => {
            format!("unexpected field(s) {}", unexpected.join(", "))
        }
        // A key of a map (an environment variable's name): the key's own rule.
        K::PropertyNames { error } => format!("a field name {}", describe_kind(error)),
        K::AdditionalProperties { unexpected } => {
            format!("unexpected field(s) {}", unexpected.join(", "))
        }
        K::Required { property } => format!(
            "missing required field {}",
            property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string)
        ),
        K::Type { kind } => format!("expected type {kind:?}")
            .replace("Single(", "")
            .replace(')', "")
            .to_lowercase(),
        K::Pattern { pattern } if pattern == refs::NO_CONTROL => {
            "must not contain control characters".to_string()
        }
        K::Pattern { pattern } => format!("must match the pattern {pattern}"),
        K::Minimum { limit } => format!("must be >= {limit}"),
        K::Maximum { limit } => format!("must be <= {limit}"),
        K::MinLength { limit } => format!("must be at least {limit} characters"),
        K::MaxLength { limit } => format!("must be at most {limit} characters"),
        K::Enum { options } => format!("must be one of {options}"),
        K::Constant { expected_value } => format!("must equal {expected_value}"),
        _ => "does not match the published input schema".to_string(),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Where a long-running call reports progress (`notifications/progress`), when
/// the client asked for it with a `progressToken`. The MCP layer supplies the
/// sink; `report` returns once the notification is on its way.
#[derive(Clone)]
pub struct Progress {
    sink: std::sync::Arc<dyn ProgressSink>,
}

/// Delivers progress reports to the client (implemented by the MCP layer).
pub trait ProgressSink: Send + Sync {
    fn report(
        &self,
        progress: f64,
        total: Option<f64>,
        message: String,
    ) -> futures::future::BoxFuture<'static, ()>;
}

impl Progress {
    pub fn new(sink: std::sync::Arc<dyn ProgressSink>) -> Self {
        Progress { sink }
    }

    pub async fn report(&self, progress: f64, total: Option<f64>, message: &str) {
        self.sink.report(progress, total, message.to_string()).await;
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
        session,
        args,
        progress: None,
        ask: confirm::Ask::Not,
    })
    .await
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
        .broker
        .tool_calls
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let Some(t) = spec_in(session.toolset, name) else {
        return ToolOutput::libtmux_error(format!("Unknown tool {name:?}. Call tools/list for the available tools. Nothing was sent to tmux."));
    };
    if !session.enabled.contains(name) {
        let why = t.why_disabled(session.safety);
        return match t.family {
            Family::Seed => envelope::for_tool(
                t,
                envelope::policy_denied_because(&format!("{why}. Nothing was sent to tmux.")),
            ),
            Family::Libtmux => {
                ToolOutput::libtmux_error(format!("Tool {why}. Nothing was sent to tmux."))
            }
        };
    }
    if let Err(problem) = validate_in(session.toolset, name, &args) {
        return match t.family {
            Family::Seed => envelope::for_tool(t, envelope::invalid_input(&problem)),
            Family::Libtmux => ToolOutput::libtmux_error(format!(
                "Invalid arguments for {name}: {problem}. Nothing was sent to tmux."
            )),
        };
    }
    (t.run)(Call {
        session,
        args,
        progress,
        ask,
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::validate_input;
    use serde_json::json;

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

    /// Issue "Exact and safe under scrutiny" item 8: the error names the leaf
    /// inside the variant the caller meant (docs/spec.md A.0.3 invalid_input).
    #[test]
    fn errors_name_the_leaf_field_under_one_of() {
        let g = "0123456789abcdef0123456789abcdef";
        let e = validate_input(
            "tmux_capture",
            &json!({ "target": { "kind": "pane", "id": "0", "generation": g } }),
        )
        .unwrap_err();
        assert!(
            e.starts_with("argument /target/id: must match the pattern"),
            "{e}"
        );
        let e = validate_input(
            "tmux_capture",
            &json!({ "target": { "kind": "pane", "id": "%0", "generation": "" } }),
        )
        .unwrap_err();
        assert!(
            e.starts_with("argument /target/generation: must be at least 1"),
            "{e}"
        );
        let e = validate_input(
            "tmux_capture",
            &json!({ "target": { "kind": "pane", "id": "%0", "generation": g }, "cursor": "xyz" }),
        )
        .unwrap_err();
        assert!(
            e.starts_with("argument /cursor: must match"),
            "the continuation variant was meant: {e}"
        );
        let e = validate_input("tmux_wait", &json!({ "target": { "kind": "pane", "id": "%0", "generation": g }, "condition": { "type": "screen_contains" } })).unwrap_err();
        assert_eq!(e, "argument /condition: missing required field text");
        let e = validate_input("tmux_send", &json!({ "target": { "kind": "pane", "id": "%0", "generation": g }, "input": { "type": "keys", "keys": [] } })).unwrap_err();
        assert!(e.starts_with("argument /input/keys:"), "{e}");
        let e = validate_input(
            "tmux_close",
            &json!({ "target": { "kind": "window", "id": "%3", "generation": g } }),
        )
        .unwrap_err();
        assert!(
            e.starts_with("argument /target/id: must match the pattern ^@"),
            "the window variant was meant (kind): {e}"
        );
        assert!(validate_input(
            "tmux_capture",
            &json!({ "target": { "kind": "pane", "id": "%0", "generation": g } })
        )
        .is_ok());
    }

    /// Every refusal names the field and the rule it broke (never "does not
    /// match the published input schema" alone, never serde's words).
    #[test]
    fn errors_name_the_rule() {
        let huge: serde_json::Value = serde_json::from_str("18446744073709551616").unwrap(); // 2^64
        for big in [huge, json!(1e30), json!(1e308)] {
            let e = validate_input("capture_since", &json!({ "paneId": "%0", "maxBytes": big }))
                .unwrap_err();
            assert_eq!(
                e, "argument /maxBytes: must be <= 18446744073709551615",
                "{big}"
            );
        }
        assert!(
            validate_input(
                "capture_since",
                &json!({ "paneId": "%0", "maxBytes": 18446744073709551615u64 })
            )
            .is_ok(),
            "u64::MAX is within the schema"
        );
        let cases = [
            (
                "batch",
                json!({ "calls": [] }),
                "argument /calls: must hold at least 1 item",
            ),
            (
                "capture_pane",
                json!({ "paneId": "%0", "maxLines": 0 }),
                "argument /maxLines: must be > 0",
            ),
            (
                "tmux_create",
                json!({ "kind": "session", "name": "s", "argv": [] }),
                "argument /argv: must hold at least 1 item",
            ),
            (
                "tmux_create",
                json!({ "kind": "session", "name": "s", "argv": ["true"], "environment": { "1BAD": "x" } }),
                "argument /environment: a field name must match the pattern",
            ),
        ];
        for (tool, args, want) in cases {
            let e = validate_input(tool, &args).unwrap_err();
            assert!(
                e.starts_with(want),
                "{tool} {args}: {e:?} should start with {want:?}"
            );
            assert!(
                !e.contains("does not match the published input schema"),
                "{tool}: {e}"
            );
        }
    }

    /// Nothing published uses a non-standard `format` (schemars writes
    /// `uint64`, `int32`, `double` …) or a bare boolean subschema.
    #[test]
    fn published_schemas_use_standard_keywords_only() {
        fn walk(tool: &str, path: &str, v: &serde_json::Value, bad: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(m) => {
                    if let Some(f) = m.get("format").and_then(serde_json::Value::as_str) {
                        if !super::typed::STANDARD_FORMATS.contains(&f) {
                            bad.push(format!("{tool} {path}/format = {f}"));
                        }
                    }
                    for key in ["properties", "patternProperties", "$defs"] {
                        for (name, sub) in m
                            .get(key)
                            .and_then(serde_json::Value::as_object)
                            .into_iter()
                            .flatten()
                        {
                            if sub.is_boolean() {
                                bad.push(format!(
                                    "{tool} {path}/{key}/{name} is the boolean schema {sub}"
                                ));
                            }
                        }
                    }
                    for (k, sub) in m {
                        walk(tool, &format!("{path}/{k}"), sub, bad);
                    }
                }
                serde_json::Value::Array(a) => a
                    .iter()
                    .enumerate()
                    .for_each(|(i, sub)| walk(tool, &format!("{path}/{i}"), sub, bad)),
                _ => {}
            }
        }
        let mut bad = Vec::new();
        for set in [super::Toolset::Default, super::Toolset::Python] {
            for t in super::catalog(set) {
                let listed = super::describe(t, set);
                walk(t.name, "inputSchema", &listed["inputSchema"], &mut bad);
                walk(t.name, "outputSchema", &listed["outputSchema"], &mut bad);
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}
