//! `batch` (libtmux family): several read-only tool calls in one request. The
//! results come back in the order of the calls, each with its own error; a
//! call of a tool that is not read-only, not enabled for this session, or
//! `batch` itself is answered with an error and nothing else happens for it.
//! Every read tool fires no tmux hook, so neither does a batch of them. The
//! calls run concurrently (each through the same admission as alone).

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, Call, CallFuture, Tier, ToolOutput, ToolSpec};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::Value;

pub const SPEC: ToolSpec = ToolSpec::new(
    "batch",
    Annotations::read_only("Batch of reads"),
    input_of::<Args>,
    schema_of::<Batch>,
    run,
)
.description("Up to 32 read-only tool calls in one; results in order.")
.details("Run several read-only tool calls in one request: {calls:[{tool, arguments}…]} (1–32 calls). Results come back in the same order, each with its own isError, text and structuredContent (as the tool alone would answer). Only read-only tools this session has enabled may be batched; any other call gets its own error and nothing is sent for it. Read-only; fires no tmux hook.")
.sample(|s| json!({"calls": [{"tool": "list_panes"}, {"tool": "capture_pane", "arguments": {"paneId": s.pane}}]}));

/// Most calls one batch may carry.
const MAX_CALLS: usize = 32;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Run concurrently.
    #[schemars(length(min = 1, max = MAX_CALLS))]
    calls: Vec<OneCall>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct OneCall {
    /// A read-only tool's name.
    #[schemars(length(min = 1, max = 64))]
    tool: String,
    #[serde(default)]
    #[schemars(schema_with = "any_object")]
    arguments: Option<serde_json::Map<String, Value>>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Batch {
    results: Vec<Answer>,
}

/// One call's answer, as `tools/call` would give it.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Answer {
    tool: String,
    is_error: bool,
    text: String,
    /// The tool's own structuredContent (an object, validated by that tool's
    /// output schema); a bare `true` schema here is flagged by strict clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_object")]
    structured_content: Option<Value>,
}

fn any_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "object" })
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    c.run(call)
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let answers = futures::future::join_all(args.calls.into_iter().map(|one| async move {
        let tool = one.tool;
        let refusal = match super::spec_in(session.toolset, &tool) {
            _ if tool == SPEC.name => Some("a batch cannot hold another batch".to_string()),
            None => Some(format!(
                "unknown tool {tool:?}; call tools/list for the available tools"
            )),
            Some(t) if t.tier() != Tier::Readonly => Some(format!(
                "{tool} is not read-only (its tier is {}); only reads may be batched",
                t.tier().as_str()
            )),
            Some(_) => None,
        };
        let out = match refusal {
            Some(why) => ToolOutput::libtmux_error(format!("{why}. Nothing was sent to tmux.")),
            // Policy and input validation as for a call of its own.
            None => {
                super::call(
                    session,
                    &tool,
                    Value::Object(one.arguments.unwrap_or_default()),
                    None,
                    // Read-only calls only: nothing to ask about.
                    crate::toolkit::call::confirm::Ask::Not,
                )
                .await
            }
        };
        Answer {
            tool,
            is_error: out.is_error,
            text: out.text,
            structured_content: out.structured,
        }
    }))
    .await;
    let failed = answers.iter().filter(|a| a.is_error).count();
    let text = format!(
        "{} call(s), {failed} failed\n{}",
        answers.len(),
        answers
            .iter()
            .enumerate()
            .map(|(i, a)| format!(
                "[{i}] {}{}: {}",
                a.tool,
                if a.is_error { " (error)" } else { "" },
                a.text
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
    Ok(ToolOutput::typed(&Batch { results: answers }, text))
}
