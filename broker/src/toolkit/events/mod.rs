//! What waits share: one pane's events during a wait ([`pane_events`]), the
//! grid model of `capture_since` ([`lines_since`]), and coding-agent CLIs in
//! panes ([`agent_panes`]).

pub mod agent_panes;
pub mod lines_since;
pub mod pane_events;
