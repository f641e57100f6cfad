//! One call of a tool: what a tool is and how it runs ([`spec`]: `ToolSpec`,
//! `Call::run`), its arguments ([`args`]) and their validation ([`validate`]),
//! what it produced ([`output`]), asking the person first ([`confirm`]), and a
//! call naming another server ([`route`]), or another machine ([`hosts`]).

pub mod args;
pub mod confirm;
pub mod hosts;
pub mod output;
pub mod route;
pub mod spec;
pub mod validate;
