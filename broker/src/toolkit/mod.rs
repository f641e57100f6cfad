//! The one internal layer every tool is spelled over, grouped by role:
//!
//! - [`call`]: one call of a tool (what a tool is, its arguments, its output);
//! - [`schemas`]: schemas and publishing (`tools/list`, the tool reference);
//! - [`target`]: ids, entity references and the one target resolver;
//! - [`seed`]: the seed family's envelope and its wording of targets;
//! - [`libtmux`]: the libtmux family's targeting and wording, the Python toolset;
//! - [`acting`]: changing tmux (one command with an effect, creations);
//! - [`records`]: reading back (the record graph, criteria, pages, search);
//! - [`events`]: what waits share;
//! - [`typing`]: typing and pasting into a pane;
//! - [`shell`]: shells and `run_command`.
//!
//! It knows nothing of which tools exist: `crate::tools` does.
//!
//! Architecture invariant: no toolkit module names `crate::tools`
//! (`tests/e2e/layers.rs`), and every toolkit module lives in one of these
//! role directories (`toolkit_modules_are_grouped_by_role`).

pub mod acting;
pub mod call;
pub mod events;
pub mod libtmux;
pub mod records;
pub mod schemas;
pub mod seed;
pub mod shell;
pub mod target;
pub mod typing;
