//! What a tool call produced, before the MCP layer frames it as a result.

use serde_json::Value;

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
