//! One call of a tool: what a tool is and how it runs ([`spec`]: `ToolSpec`,
//! `Call::run`), its arguments ([`args`]) and their validation ([`validate`]),
//! what it produced ([`output`]), and asking the person first ([`confirm`]).

pub mod args;
pub mod confirm;
pub mod output;
pub mod spec;
pub mod validate;
