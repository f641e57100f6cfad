//! Coding-agent CLIs in panes: which CLI a process runs (from its executable
//! and arguments, never the pane title), and which state its screen shows.
//!
//! A state comes from one rule table per CLI ([`rules`]): each row names the
//! state, the screen lines that must all be present (regexes, each matched
//! against one visible line), and the CLI version it was checked against
//! (screens captured from the real TUI, kept in
//! `tests/python/agents/screens/`). Rows are tried in order, so the dialogs
//! that cover the input box come first; when no row matches, the state is
//! [`State::Unknown`], never a guess.
//!
//! Along its seams: `identify` (pure: the CLI from an executable path and
//! argv), `package` (reads the disk: the CLI's version from its package),
//! `scan` (the process table: [`find_in_terminals`], [`Seen`]), `table` (the
//! rule tables, data), `classify` (pure: a screen's state; the screen and
//! the terminal's activity are read by the caller).

mod classify;
mod identify;
mod package;
mod scan;
mod table;

pub use classify::{classify, Verdict};
pub use identify::{identify, Cli};
pub use package::version_of;
pub use scan::{find_in_terminals, Found, Seen};
pub use table::{needs_activity, rules, Activity, Rule, State, QUIET};
