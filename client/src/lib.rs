//! The `tmux-mcp` command (its `main` is [`cli::main`]): `attach`, the relay
//! an MCP client runs (finds or starts its tmux server's broker, then forwards
//! JSON-RPC lines unchanged); `feed` and `cursor`, the helpers tmux runs;
//! `start`, `status`, `doctor`, `uninstall`, `socket-path`, `shell-init`
//! for people.
//!
//! Architecture invariant: the client links only `tmux-mcp-core`; it never
//! parses MCP beyond the ids and methods the relay must notice.

pub mod cli;
pub mod doctor;
pub mod helpers;
pub mod locate;
pub mod relay;
pub mod shell_init;
pub mod uninstall;
