//! The seed family (`tmux_*`): its result envelope ([`envelope`]), a
//! mutation's schema, errors and target wording ([`mutation`]), and the screen
//! state `tmux_capture` and `tmux_wait` share ([`screen`]).

pub mod envelope;
pub mod mutation;
pub mod screen;
