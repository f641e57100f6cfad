//! The one internal layer every tool is spelled over: what a tool is
//! ([`spec`]), how its input is checked ([`validate`], [`typed`]), how a
//! target is found ([`refs`], [`ids`], [`entity_refs`]), acted on ([`act`],
//! [`launch`], [`arrange`]) and read back ([`read`], [`records`]), how errors
//! are reported ([`envelope`] for the seed family), and the services several
//! tools share (typing into a pane, pane events, criteria, the shell-line
//! checks). It knows nothing of which tools exist: `crate::tools` does.
//!
//! Architecture invariant: no toolkit module names `crate::tools`
//! (`tests/e2e/layers.rs`).

pub mod act;
pub mod agent_panes;
pub mod arrange;
pub mod confirm;
pub mod contracts;
pub mod criteria;
pub mod enrolled;
pub mod entity_refs;
pub mod envelope;
pub mod events;
pub mod ids;
pub mod job;
pub mod launch;
pub mod lines_since;
pub mod options;
pub mod output;
pub mod paging;
pub mod paste;
pub mod publish;
pub mod python;
pub mod read;
pub mod records;
pub mod reference;
pub mod refs;
pub mod screen;
pub mod search;
pub mod shell_line;
pub mod shell_run;
pub mod shells;
pub mod spec;
pub mod typed;
pub mod typed_job;
pub mod typed_line;
pub mod typing;
pub mod validate;
pub mod wire_schemas;
