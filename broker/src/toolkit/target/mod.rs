//! Finding a target: the ids ([`ids`]) and another server's ([`qualified`]), entity references and their
//! schemas ([`references`]), and the one target resolver ([`resolver`]), which
//! each family words at its edge (`seed::mutation`, `libtmux::action`).

pub mod ids;
pub mod qualified;
pub mod references;
pub mod resolver;
