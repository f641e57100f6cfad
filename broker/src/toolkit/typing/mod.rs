//! Typing into a pane: keys and literal text as `send-keys` ([`keystrokes`]),
//! and pasting through a private buffer ([`paste`]).

pub mod keystrokes;
pub mod paste;
