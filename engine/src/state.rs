//! The engine's shared state: one per broker, shared by every agent session.
//! It knows the bound tmux server (identity, registry), what is retained
//! between calls, and how many observations run. Everything below the MCP
//! layer and the tools reaches tmux through it.
//!
//! It holds the server's identity and paths, the registry (`Arc<Registry>`),
//! the retention store and admission. The daemon's own state (its defaults,
//! session counts, `status` figures) is the broker crate's `daemon_state`.
//! [`Broker::screen_events`] gives a pane's screen events: the tty watch and
//! the safety net. [`Broker::pane_set`] gives the pane set of `changes`, a
//! channel every session shares.
//!
//! Its parts never name it: the tasks they start (the safety net, pane-set
//! changes) hold weak references to the registry and to their own state, not
//! to the broker, so the modules this one holds do not import it back (the
//! readers above them, `observe` and `capture_batch`, take a `&Broker`).

use crate::activity::{Net, ScreenEvents};
use crate::changes::{Changes, PaneSet};
use crate::registry::{Pane, Registry};
use crate::tty_watch::TtyWatch;
use std::io;
use std::sync::Arc;
use tmux_mcp_core::paths::BrokerPaths;
use tmux_mcp_core::server::ServerIdentity;

pub struct Broker {
    pub identity: ServerIdentity,
    pub paths: BrokerPaths,
    pub registry: Arc<Registry>,
    /// Retained cursors and snapshot pages, shared by every session.
    pub retained: crate::retention::Store,
    /// Admission of concurrent captures and waits.
    pub admission: crate::admission::Admission,
    /// Turns true when the broker stops, normally because the tmux server
    /// exited (observations end with `observation_lost` before it does).
    server_gone: tokio::sync::watch::Sender<bool>,
    /// Events about the server as a whole (the pane set), for subscriptions.
    pub changes: Changes,
    /// The safety net for screen changes no process wrote (typed echo).
    pub activity: Net,
    /// The agent CLIs seen in panes, so one that exits is reported `exited`.
    pub agents: crate::agents::Seen,
    /// What enrolled shells say (`tmux-mcp shell-init`).
    pub marks: crate::marks::Marks,
    /// The runtime directory as the broker found it (`None`: not private).
    dir_id: Option<tmux_mcp_core::paths::DirId>,
}

impl Broker {
    pub fn new(identity: ServerIdentity, paths: BrokerPaths, registry: Registry) -> Broker {
        Broker {
            identity,
            dir_id: tmux_mcp_core::paths::DirId::of_private(&paths.dir).ok(),
            paths,
            registry: Arc::new(registry),
            retained: crate::retention::Store::default(),
            admission: crate::admission::Admission::default(),
            server_gone: tokio::sync::watch::channel(false).0,
            changes: Default::default(),
            activity: Default::default(),
            agents: Default::default(),
            marks: Default::default(),
        }
    }

    /// The runtime directory, when it is still the private one the broker
    /// started in: what to check before writing into it (a job's directory).
    pub fn private_dir(&self) -> Result<&std::path::Path, String> {
        match &self.dir_id {
            Some(id) => id.check(&self.paths.dir).map(|()| self.paths.dir.as_path()),
            None => Err(format!(
                "{} was not a private directory of this user's when the broker started",
                self.paths.dir.display()
            )),
        }
    }

    /// Observations end (`observation_lost`): the server is gone or the broker stops.
    pub fn mark_server_gone(&self) {
        self.server_gone.send_replace(true);
    }

    /// Resolves once the tmux server has exited.
    pub async fn server_gone(&self) {
        let mut rx = self.server_gone.subscribe();
        let _ = rx.wait_for(|gone| *gone).await;
    }

    /// tmux's version string as last read ("" before the first read).
    pub fn tmux_version(&self) -> String {
        self.registry
            .cached()
            .map(|s| s.server.version.clone())
            .unwrap_or_default()
    }

    /// Everything that changes `pane`'s screen (its writes, and through the
    /// safety net what nobody wrote), for a wait or a subscription.
    pub async fn screen_events(&self, pane: &Pane) -> io::Result<ScreenEvents> {
        ScreenEvents::new(&self.activity, &self.registry, pane).await
    }

    /// [`screen_events`](Self::screen_events) with the terminal watched since
    /// `tty` was taken.
    pub async fn screen_events_armed(&self, pane: &Pane, tty: TtyWatch) -> ScreenEvents {
        ScreenEvents::armed(tty, &self.activity, &self.registry, pane).await
    }

    /// The pane set as it changes (started by the first caller).
    pub fn pane_set(&self) -> tokio::sync::watch::Receiver<Option<PaneSet>> {
        self.changes.pane_set(&self.registry)
    }
}
