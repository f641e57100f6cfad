#![recursion_limit = "256"]
//! tmux-mcp's engine: the per-tmux-server broker and everything it stands on.
//!
//! Data flows one way: an MCP client → `mcp` (rmcp's server runtime) → `tools` (the facade:
//! schemas, policy, validation) → `registry` and friends (the engine) → `tmux`.
//! See ARCHITECTURE.md at the repository root for the map and the invariants.

pub mod activity;
pub mod admission;
pub mod broker_main;
pub mod capture;
pub mod capture_batch;
pub mod changes;
pub mod clients;
pub mod daemon;
pub mod engine;
pub mod feed;
pub mod hooks;
pub mod limits;
pub mod mcp;
pub mod observe;
pub mod paths;
pub mod process;
pub mod procfs;
pub mod registry;
pub mod resources;
pub mod retention;
pub mod server;
pub mod session;
pub mod sys;
pub mod tmux;
pub mod tools;
pub mod tty_watch;
pub mod wire;
