//! Changing tmux, in either family: one tmux command with an effect and
//! its failure ([`tmux_command`]), and how every creation is spelled
//! ([`launch`]).

pub mod launch;
pub mod tmux_command;
