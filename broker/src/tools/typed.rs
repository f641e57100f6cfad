//! Typed tools: arguments decoded into the tool's own struct, and output
//! schemas derived from the Rust type that is serialized, so the published
//! schema and the result cannot drift apart.

use super::{Call, ToolOutput};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// The JSON Schema of `T` (draft 2020-12), as published in `tools/list`.
/// Derived types are structs, so the root is `type: object` as MCP clients need.
pub fn schema_of<T: JsonSchema>() -> Value {
    let schema = serde_json::to_value(schemars::schema_for!(T)).expect("a derived schema is JSON");
    debug_assert_eq!(schema["type"], "object", "a tool's schema root must be an object");
    schema
}

impl Call<'_> {
    /// The arguments as the tool's typed struct. They already passed the
    /// published input schema, so a failure here means the struct and the schema
    /// disagree: reported as invalid arguments, nothing sent.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ToolOutput> {
        serde_json::from_value(self.args.clone()).map_err(|e| ToolOutput::libtmux_error(format!("Invalid arguments: {e}. Nothing was sent to tmux.")))
    }
}

impl ToolOutput {
    /// A libtmux-family success: `value` as structuredContent, `text` for the model.
    pub fn typed<T: Serialize>(value: &T, text: String) -> ToolOutput {
        ToolOutput { structured: Some(serde_json::to_value(value).expect("tool results serialize")), text, is_error: false }
    }
}
