//! The end-to-end tests, one binary (one link, one build of the shared
//! harness in `tests/src/lib.rs`), a module per subject. Each starts real tmux
//! servers on private sockets and drives the built binaries through real MCP
//! clients; `cargo test -p tmux-mcp-e2e --test e2e -- shells::` runs one
//! subject, `-- shells::bash_enrolled_output_rows` one test.

mod arrange;
mod batch;
mod budget;
mod capture;
mod cli;
mod clients;
mod hook_trap;
mod input;
mod inventory;
mod layers;
mod libread;
mod libtmux;
mod lifecycle;
mod mutations;
mod observe;
mod people;
mod processes;
mod prompts;
mod protocol;
mod relay;
mod resources;
mod roundtrip;
mod safety;
mod scale;
mod scrutiny;
mod servers;
mod sessions;
mod shells;
mod since;
mod stalled;
mod toolset;
mod versions;
