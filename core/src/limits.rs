//! The broker's published limits (reported by `tmux_capabilities`). The broker is
//! shared and a person may paste a hand-off cursor minutes later, so retention is
//! longer and larger than the reference's (docs/spec.md Decision 6).

use serde_json::{json, Value};

pub const MAX_CAPTURES: u64 = 256;
pub const MAX_CAPTURE_BYTES: u64 = 32 * 1024 * 1024;
pub const CAPTURE_TTL_SECONDS: u64 = 600;
/// The most a wait waits by default (`@mcp-request-timeout` and the
/// broker's `--request-timeout` change it): under the shortest tool-call
/// limit of the clients people use, with room for the answer: the
/// TypeScript SDK's default request timeout and Codex CLI's `tool_timeout_sec`
/// are 60 s; the Python SDK sets none, Gemini CLI allows 10 min, Claude Code
/// `MCP_TOOL_TIMEOUT` (far longer by default). So watching a 30 s build is
/// one call, not seven.
pub const REQUEST_TIMEOUT_SECONDS: u64 = 55;
/// How long a `--confirm` question waits for the person (the call waits too).
pub const CONFIRM_TIMEOUT_SECONDS: u64 = 300;
pub const MAX_RESPONSE_BYTES: u64 = 1_048_576;
pub const MAX_MUTATION_BYTES: u64 = 65_536;
pub const MAX_OBSERVERS: u64 = 16;
/// Captures waiting for one of the `MAX_OBSERVERS` places, in order; beyond
/// this a capture is refused as real overload.
pub const MAX_QUEUED_CAPTURES: u64 = 1024;
/// How long a queued capture waits for a place before it is refused.
pub const CAPTURE_QUEUE_WAIT_MS: u64 = 2000;
/// Broker-wide retention ceiling (the per-agent floors are `MAX_CAPTURES` and
/// `MAX_CAPTURE_BYTES`): reached only when very many agents are full at once.
pub const MAX_TOTAL_RETAINED_ENTRIES: u64 = 16_384;
pub const MAX_TOTAL_RETAINED_BYTES: u64 = 512 * 1024 * 1024;
/// Hand-off cursors pinned at once (the key binding makes one per press).
pub const MAX_HANDOFF_CURSORS: u64 = 64;
/// Largest JSON-RPC line accepted from a client.
pub const MAX_FRAME_BYTES: usize = 1_048_576;

/// A request timeout as the broker's `--request-timeout` and the
/// `@mcp-request-timeout` option take it: seconds, 0 < t <= 3600.
pub fn parse_request_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t <= 3600.0 => Ok(t),
        _ => Err("expected a number of seconds, 0 < t <= 3600".into()),
    }
}

/// The published limits; `request_timeout_seconds` is the broker's own.
pub fn as_json(request_timeout_seconds: f64) -> Value {
    json!({
        "max_captures": MAX_CAPTURES,
        "max_capture_bytes": MAX_CAPTURE_BYTES,
        "capture_ttl_seconds": CAPTURE_TTL_SECONDS,
        // A whole number of seconds prints as an integer (5, not 5.0).
        "request_timeout_seconds": if request_timeout_seconds.fract() == 0.0 { json!(request_timeout_seconds as u64) } else { json!(request_timeout_seconds) },
        "max_response_bytes": MAX_RESPONSE_BYTES,
        "max_mutation_bytes": MAX_MUTATION_BYTES,
        "max_observers": MAX_OBSERVERS,
        "max_queued_captures": MAX_QUEUED_CAPTURES,
        "capture_queue_wait_ms": CAPTURE_QUEUE_WAIT_MS,
        "max_total_retained_entries": MAX_TOTAL_RETAINED_ENTRIES,
        "max_total_retained_bytes": MAX_TOTAL_RETAINED_BYTES,
        "max_handoff_cursors": MAX_HANDOFF_CURSORS,
        "max_frame_bytes": MAX_FRAME_BYTES,
    })
}
