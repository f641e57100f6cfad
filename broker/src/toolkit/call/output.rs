//! What a tool call produced, before the MCP layer frames it as a result.

use serde::Serialize;
use serde_json::Value;

/// What a tool call produced, before it is framed as an MCP result.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    pub structured: Option<Value>,
    pub text: String,
    pub is_error: bool,
    /// Why the call was refused, typed where the refusal was made, for the
    /// layers that act on it (the MCP layer's log notices, the resources'
    /// error codes); the text says it to the agent. Never read back from
    /// the text.
    pub refusal: Option<RefusalKind>,
}

/// The refusals the layers above the tools act on, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// A capture, while an `after-capture-pane` hook is set.
    CaptureHook,
    /// What the call names does not exist (any more): an unknown pane, a
    /// stale reference (the seed family's `stale_target`).
    Gone,
    /// What the call names is outside this session's scope.
    OutOfScope,
    /// A cursor that cannot be continued (`stale_cursor`).
    StaleCursor,
}

impl ToolOutput {
    /// A libtmux-family tool error: text only, nothing reached tmux unless said.
    pub fn libtmux_error(message: impl Into<String>) -> Self {
        ToolOutput {
            structured: None,
            text: message.into(),
            is_error: true,
            refusal: None,
        }
    }

    /// This output, refused for `why`.
    pub fn refused(mut self, why: RefusalKind) -> Self {
        self.refusal = Some(why);
        self
    }
}

impl ToolOutput {
    /// A libtmux-family success: `value` as structuredContent, `text` for the model.
    pub fn typed<T: Serialize>(value: &T, text: String) -> ToolOutput {
        ToolOutput {
            structured: Some(serde_json::to_value(value).expect("tool results serialize")),
            text,
            is_error: false,
            refusal: None,
        }
    }
}
