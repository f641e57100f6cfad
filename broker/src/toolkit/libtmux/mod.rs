//! The libtmux family's targeting and wording: its words at its edge, the
//! one target resolver's included ([`wording`]), acting on a target named by
//! id ([`action`]), reading a pane ([`pane_read`]), what the arrange tools
//! share ([`arrange`]), and the Python toolset's spelling ([`python`]).

pub mod action;
pub mod arrange;
pub mod pane_read;
pub mod python;
pub mod wording;
