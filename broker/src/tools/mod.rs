//! The tool facade: the catalog of published tools, per-session policy, input
//! validation against the published schema, and dispatch to each tool.
//!
//! Tools are thin: they read the registry (engine) and shape a result. Two
//! families share this facade: the seed family `tmux_*` (results in the
//! `{ok, data | error}` envelope) and the libtmux family (camelCase, plain results).

mod capabilities;
pub mod capture;
mod close;
mod create;
pub mod envelope;
mod list_panes;
pub mod capture_pane;
mod snapshot_pane;
mod snapshot;
mod wait;
mod refs;
mod send;

pub use capabilities::version_at_least;

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

pub struct ToolSpec {
    pub name: &'static str,
    pub family: Family,
    /// Read-only discovery tools are on by default; everything else is opt-in.
    pub default_enabled: bool,
    pub description: &'static str,
    pub annotations: fn() -> Value,
    pub input_schema: fn() -> Value,
    pub output_schema: fn() -> Value,
}

/// Catalog order is the order of `tools/list` and of `enabled_tools`.
pub const CATALOG: &[ToolSpec] = &[capabilities::SPEC, snapshot::SPEC, send::SPEC, create::SPEC, close::SPEC, capture::SPEC, wait::SPEC, list_panes::SPEC, capture_pane::SPEC, snapshot_pane::SPEC];

pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    CATALOG.iter().find(|t| t.name == name)
}

/// Names in `requested` that are not tools (for a clear startup error).
pub fn unknown_tools<'a>(requested: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    requested.into_iter().filter(|n| spec(n).is_none()).cloned().collect()
}

/// The tools a session may use: the defaults plus what the broker and the attach
/// enabled.
pub fn enabled_set(extra: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    let mut set: BTreeSet<String> = CATALOG.iter().filter(|t| t.default_enabled).map(|t| t.name.to_string()).collect();
    set.extend(extra.into_iter().filter(|n| spec(n).is_some()));
    set
}

pub fn enabled_in_catalog_order(enabled: &BTreeSet<String>) -> Vec<&'static str> {
    CATALOG.iter().filter(|t| enabled.contains(t.name)).map(|t| t.name).collect()
}

/// The `tools/list` entry of one tool.
pub fn describe(t: &ToolSpec) -> Value {
    json!({
        "name": t.name,
        "description": t.description,
        "inputSchema": (t.input_schema)(),
        "outputSchema": (t.output_schema)(),
        "annotations": (t.annotations)(),
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
    pub fn to_call_result(&self) -> Value {
        let mut v = json!({ "content": [{ "type": "text", "text": self.text }], "isError": self.is_error });
        if let Some(s) = &self.structured {
            v["structuredContent"] = s.clone();
        }
        v
    }

    /// A libtmux-family tool error: text only, nothing reached tmux unless said.
    pub fn libtmux_error(message: impl Into<String>) -> Self {
        ToolOutput { structured: None, text: message.into(), is_error: true }
    }
}

/// Per tool: the whole input schema, and each root `oneOf` variant on its own
/// (so an error can name the field within the variant the caller meant).
struct Validators {
    whole: jsonschema::Validator,
    /// Each variant with its `required` keys (how a caller picks a variant).
    variants: Vec<(jsonschema::Validator, Vec<String>)>,
}

fn validators() -> &'static HashMap<&'static str, Validators> {
    static V: OnceLock<HashMap<&'static str, Validators>> = OnceLock::new();
    V.get_or_init(|| {
        CATALOG
            .iter()
            .map(|t| {
                let schema = (t.input_schema)();
                let whole = jsonschema::validator_for(&schema).expect("published input schema compiles");
                let variants = schema["oneOf"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| {
                        let required = v["required"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect();
                        (jsonschema::validator_for(v).expect("variant compiles"), required)
                    })
                    .collect();
                (t.name, Validators { whole, variants })
            })
            .collect()
    })
}

fn problems(v: &jsonschema::Validator, args: &Value) -> Vec<String> {
    v.iter_errors(args)
        .take(3)
        .map(|e| {
            let path = e.instance_path().to_string();
            let field = if path.is_empty() { "arguments".to_string() } else { format!("argument {path}") };
            format!("{field}: {}", describe_kind(&e))
        })
        .collect()
}

/// Checks `args` against the tool's published input schema; the error names the
/// field and what was expected, never the value sent.
pub fn validate_input(name: &str, args: &Value) -> Result<(), String> {
    let Some(v) = validators().get(name) else { return Ok(()) };
    if v.whole.is_valid(args) {
        return Ok(());
    }
    // For a oneOf root, report against the variant the caller meant: the one
    // with the most of its required keys present, then the fewest problems.
    let present = |req: &Vec<String>| req.iter().filter(|k| args.get(k.as_str()).is_some()).count();
    let best = v
        .variants
        .iter()
        .max_by_key(|(var, req)| (present(req), std::cmp::Reverse(problems(var, args).len())))
        .map(|(var, _)| problems(var, args))
        .unwrap_or_else(|| problems(&v.whole, args));
    let best = if best.is_empty() { problems(&v.whole, args) } else { best };
    Err(if best.is_empty() { "arguments do not match the published input schema".to_string() } else { best.join("; ") })
}

/// What was expected, without echoing the offending value.
fn describe_kind(e: &jsonschema::ValidationError) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    match e.kind() {
        K::AdditionalProperties { unexpected } => format!("unexpected field(s) {}", unexpected.join(", ")),
        K::Required { property } => format!("missing required field {property}"),
        K::Type { kind } => format!("expected type {kind:?}").replace("Single(", "").replace(')', "").to_lowercase(),
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

/// Where a long-running call reports progress (`notifications/progress`), when
/// the client asked for it with a `progressToken`.
#[derive(Clone)]
pub struct Progress {
    token: Value,
    tx: tokio::sync::mpsc::Sender<Value>,
}

impl Progress {
    pub fn new(token: Value, tx: tokio::sync::mpsc::Sender<Value>) -> Self {
        Progress { token, tx }
    }

    pub async fn report(&self, progress: f64, total: Option<f64>, message: &str) {
        let mut params = json!({ "progressToken": self.token, "progress": progress, "message": message });
        if let Some(t) = total {
            params["total"] = json!(t);
        }
        let _ = self.tx.send(json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": params })).await;
    }
}

/// Runs tool `name` for `session`. Never panics on client input.
pub async fn call(session: &Session, name: &str, args: Value, progress: Option<Progress>) -> ToolOutput {
    let Some(t) = spec(name) else {
        return ToolOutput::libtmux_error(format!("Unknown tool {name:?}. Call tools/list for the available tools. Nothing was sent to tmux."));
    };
    if !session.enabled.contains(name) {
        return match t.family {
            Family::Seed => envelope::for_tool(name, envelope::policy_denied()),
            Family::Libtmux => ToolOutput::libtmux_error(format!(
                "Tool {name} is not enabled. Start the relay with `tmux-mcp attach --enable-tool {name}` or set the tmux option @mcp-enable-tools. Nothing was sent to tmux."
            )),
        };
    }
    if let Err(problem) = validate_input(name, &args) {
        return match t.family {
            Family::Seed => envelope::for_tool(name, envelope::invalid_input(&problem)),
            Family::Libtmux => ToolOutput::libtmux_error(format!("Invalid arguments for {name}: {problem}. Nothing was sent to tmux.")),
        };
    }
    match name {
        "tmux_capabilities" => capabilities::call(session).await,
        "list_panes" => list_panes::call(session, &args).await,
        "capture_pane" => capture_pane::call(session, &args).await,
        "snapshot_pane" => snapshot_pane::call(session, &args).await,
        "tmux_send" => send::call(session, &args).await,
        "tmux_create" => create::call(session, &args).await,
        "tmux_close" => close::call(session, &args).await,
        "tmux_capture" => capture::call(session, &args).await,
        "tmux_wait" => wait::call(session, &args, progress).await,
        "tmux_snapshot" => snapshot::call(session, &args).await,
        _ => ToolOutput::libtmux_error(format!("Tool {name} has no implementation. Nothing was sent to tmux.")),
    }
}
