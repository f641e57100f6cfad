//! tmux-mcp's engine: what the broker knows of its tmux server and how it
//! reads it without firing a hook. The pane registry (single-flight table
//! reads, process identities), safe pane resolution and captures (one pane or
//! a batch), the attached clients, output events (tty watch, the safety net,
//! pane-set changes), the retention store and admission.
//!
//! Architecture invariant: no MCP and no tools here (the crate does not depend
//! on rmcp, jsonschema or the broker); the broker's tools call down into this
//! crate, never the other way.
//!
//! The feature `test-support` gives the broker's unit tests `Pane::sample`.

pub mod activity;
pub mod admission;
pub mod agents;
pub mod capture;
pub mod capture_batch;
pub mod changes;
pub mod clients;
pub mod lines;
pub mod marks;
pub mod mirror;
pub mod observe;
pub mod registry;
pub mod retention;
pub mod servers;
pub mod shell_watch;
pub mod since;
pub mod state;
pub mod styles;
pub mod tty_watch;

pub use state::Broker;
