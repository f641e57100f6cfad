//! One agent's session: who is calling (the caller's pane, found from process
//! ancestry), what it may see (scope) and what it may use (enabled tools).

use crate::daemon::Broker;
use crate::registry::{Pane, Snapshot};
use crate::wire::Scope;
use std::collections::BTreeSet;
use std::sync::Arc;

pub struct Session {
    pub id: u64,
    pub broker: Arc<Broker>,
    pub client_name: String,
    /// pid of the relay process on the other end of the socket.
    pub peer_pid: u32,
    /// The pane the agent runs in, if it runs inside this tmux server.
    pub caller_pane: Option<String>,
    /// Sessions the caller's pane is placed in (what `Scope::Session` allows).
    pub caller_sessions: Vec<String>,
    pub scope: Scope,
    pub enabled: BTreeSet<String>,
    pub allow_self: bool,
}

impl Session {
    /// Whether this session may see `pane`.
    pub fn can_see(&self, pane: &Pane) -> bool {
        match self.scope {
            Scope::Server => true,
            Scope::Session => self.caller_sessions.iter().any(|s| pane.in_session(s)),
        }
    }

    pub fn visible<'a>(&'a self, snap: &'a Snapshot) -> impl Iterator<Item = &'a Pane> + 'a {
        snap.panes.iter().filter(move |p| self.can_see(p))
    }

    pub fn is_caller(&self, pane_id: &str) -> bool {
        self.caller_pane.as_deref() == Some(pane_id)
    }

    pub fn generation(&self) -> &str {
        &self.broker.identity.generation
    }
}
