//! What changes in the tmux server, learnt from events, never by polling tmux:
//! the pane set (a pane appears or goes: a `/dev/pts/N` is created or removed,
//! inotify on `/dev/pts`; then one hook-free table read), shared by every
//! session of the broker as one `watch` channel, started by the first
//! session that asks. Pane output and pane exit are per pane (`tty_watch`,
//! `process`); this module turns the terminal directory into "the set of panes
//! is now this".
//!
//! Other programs open terminals too (ssh, other tmux servers): an event is only
//! a hint, the table read decides whether this server's pane set changed.

use crate::registry::{Registry, Snapshot};
use crate::tty_watch::TtyWatch;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;
use tokio::sync::watch;

/// Terminal events this close together are one (a split creates a pty and
/// tmux opens it a moment later; many panes at once make a burst).
const SETTLE: Duration = Duration::from_millis(20);

/// The pane set, as of the last change: (pane id, pid) of each pane, in
/// the table's order, and the snapshot it came from.
#[derive(Clone)]
pub struct PaneSet {
    pub panes: Vec<(String, u32)>,
    pub snapshot: Arc<Snapshot>,
}

impl PaneSet {
    fn of(snapshot: Arc<Snapshot>) -> PaneSet {
        PaneSet {
            panes: snapshot
                .panes
                .iter()
                .map(|p| (p.id.clone(), p.pid))
                .collect(),
            snapshot,
        }
    }
}

/// One per broker, started by the first session that asks.
#[derive(Default)]
pub struct Changes {
    pane_set: OnceLock<watch::Receiver<Option<PaneSet>>>,
}

impl Changes {
    /// A receiver that changes whenever the pane set does. Starts the watch on
    /// first use; it ends with the registry (it holds only a weak reference).
    /// Usually through `Broker::pane_set`.
    pub fn pane_set(&self, registry: &Arc<Registry>) -> watch::Receiver<Option<PaneSet>> {
        self.pane_set
            .get_or_init(|| {
                let first = registry.cached().map(PaneSet::of);
                let (tx, rx) = watch::channel(first);
                let weak = Arc::downgrade(registry);
                tokio::spawn(watch_pane_set(weak, tx));
                rx
            })
            .clone()
    }
}

async fn watch_pane_set(registry: Weak<Registry>, tx: watch::Sender<Option<PaneSet>>) {
    let terminals = tmux_mcp_core::platform::TERMINALS_DIR;
    let dir = match TtyWatch::terminals() {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(
                "cannot watch {terminals} for new panes ({e}); resource list changes are not reported"
            );
            return;
        }
    };
    loop {
        if dir.changed().await.is_err() {
            return;
        }
        tokio::time::sleep(SETTLE).await;
        let Some(registry) = registry.upgrade() else {
            return;
        };
        match registry.refresh().await {
            Ok(snap) => {
                let now = PaneSet::of(snap);
                tx.send_if_modified(|old| {
                    let changed = old.as_ref().is_none_or(|o| o.panes != now.panes);
                    *old = Some(now);
                    changed
                });
            }
            Err(e) => tracing::debug!("pane table read after a terminal event failed: {e}"),
        }
    }
}
