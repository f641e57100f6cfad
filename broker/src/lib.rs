#![recursion_limit = "256"]
//! tmux-mcp's broker: the per-tmux-server daemon and the MCP server it runs.
//!
//! Data flows one way: an MCP client → `mcp` (rmcp's server runtime) → `tools`
//! (the facade: schemas, policy, validation, one file per tool) → the engine
//! (`tmux_mcp_engine`) → tmux (`tmux_mcp_core::tmux`). `daemon` accepts
//! connections and starts sessions, each under the `policy` its hello earns;
//! `session` is one agent's view, `peers` its links to other servers' brokers; `resources` and `prompts` are what a client
//! reads without a tool call, and `completion` the values their arguments may
//! take.
//! See ARCHITECTURE.md at the repository root for the map and the invariants.

pub mod broker_main;
pub mod completion;
pub mod daemon;
pub mod daemon_state;
pub mod handoff;
pub mod jobs;
pub mod mcp;
pub mod peers;
pub mod policy;
pub mod prompts;
pub mod resources;
pub mod session;
pub mod toolkit;
pub mod tools;
