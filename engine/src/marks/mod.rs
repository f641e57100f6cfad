//! What enrolled shells say (`tmux-mcp shell-init`): OSC 133's marks,
//! written as lines to a file per pane in the server's marks directory
//! (`BrokerPaths::marks`), read here into each pane's shell and its recent
//! commands. The shells append with builtins only, so nothing here ever
//! asks them or tmux anything.
//!
//! Along its seams: `line` the format of one mark (pure); `log` a pane's
//! state machine, its `apply` a pure function of the log, the mark and the
//! process facts the caller looked up; `kernel` those facts from the process
//! table and the clock; `store` the [`Marks`] every tool and the follower
//! share (the private directory checked at each use, files read from where
//! the last read stopped and rotated, the output bounds, run locks,
//! give-back claims).
//!
//! Bounds: [`KEEP`] commands per pane, each command's output at most
//! [`OUTPUT_BYTES`] (its tail), and [`TOTAL_OUTPUT`] over all panes.

mod kernel;
mod line;
mod log;
mod store;

pub use kernel::{now, pid_alive, process_runs};
pub use line::{parse, Kind, Mark};
pub use log::{Changed, Command, Held, Output, PaneShell, Shell, Start, Taken, KEEP};
pub use store::{Marks, OUTPUT_BYTES, TOTAL_OUTPUT};
