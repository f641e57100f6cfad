//! The broker's published limits (reported by `tmux_capabilities`). The broker is
//! shared and a person may paste a hand-off cursor minutes later, so retention is
//! longer and larger than the reference's (SPEC-TOOLS decision 6).

use serde_json::{json, Value};

pub const MAX_CAPTURES: u64 = 256;
pub const MAX_CAPTURE_BYTES: u64 = 32 * 1024 * 1024;
pub const CAPTURE_TTL_SECONDS: u64 = 600;
pub const REQUEST_TIMEOUT_SECONDS: u64 = 5;
pub const MAX_RESPONSE_BYTES: u64 = 1_048_576;
pub const MAX_MUTATION_BYTES: u64 = 65_536;
pub const MAX_OBSERVERS: u64 = 16;
/// Largest JSON-RPC line accepted from a client.
pub const MAX_FRAME_BYTES: usize = 1_048_576;

pub fn as_json() -> Value {
    json!({
        "max_captures": MAX_CAPTURES,
        "max_capture_bytes": MAX_CAPTURE_BYTES,
        "capture_ttl_seconds": CAPTURE_TTL_SECONDS,
        "request_timeout_seconds": REQUEST_TIMEOUT_SECONDS,
        "max_response_bytes": MAX_RESPONSE_BYTES,
        "max_mutation_bytes": MAX_MUTATION_BYTES,
        "max_observers": MAX_OBSERVERS,
        "max_frame_bytes": MAX_FRAME_BYTES,
    })
}
