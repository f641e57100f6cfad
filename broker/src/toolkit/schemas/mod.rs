//! Schemas and publishing: `tools/list` ([`publish`]), a tool's Markdown
//! reference ([`tool_doc`]), the published contracts ([`contracts`]), schemas
//! derived from Rust types ([`derived`]), core types' schemas
//! ([`wire_schemas`]) and the string patterns inputs share ([`patterns`]).

pub mod contracts;
pub mod derived;
pub mod patterns;
pub mod publish;
pub mod tool_doc;
pub mod wire_schemas;
