//! Reading back the pane table: the record graph ([`graph`]), the lean
//! records a listing gives by default ([`lean`]), the attached clients
//! ([`attached`]), the criteria language ([`criteria`]), pages ([`paging`]),
//! a record lean or whole ([`detail`]), options ([`options`]) and searching
//! panes' text ([`search`]).

pub mod attached;
pub mod criteria;
pub mod detail;
pub mod graph;
pub mod lean;
pub mod options;
pub mod paging;
pub mod search;
