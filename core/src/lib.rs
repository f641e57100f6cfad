//! The ground both tmux-mcp binaries stand on: talking to tmux (its client
//! protocol in process, or exec; every quoting rule; versions), which server
//! and which process (identity, generations), where the broker lives
//! (sockets, runtime directory), the messages on the broker's socket, the
//! pane table's format, reading (never writing) hooks, and the published limits.
//!
//! Architecture invariant: nothing here knows the engine, MCP or the tools
//! (this crate depends on neither); the `tmux-mcp` command links only this.

pub mod brokers;
pub mod feed;
pub mod hooks;
pub mod limits;
pub mod paths;
pub mod platform;
pub mod process;
pub mod server;
pub mod sockets;
pub mod sys;
pub mod tmux;
pub mod wire;
