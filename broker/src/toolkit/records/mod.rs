//! Reading back the pane table: the record graph ([`graph`]), the criteria
//! language ([`criteria`]), pages ([`paging`]), a record lean or whole
//! ([`detail`]), options ([`options`]) and searching panes' text
//! ([`search`]).

pub mod criteria;
pub mod detail;
pub mod graph;
pub mod options;
pub mod paging;
pub mod search;
