//! Resource subscriptions in both MCP eras, driven by events, never by polling
//! tmux: a pane's screen changes when its program writes to its terminal
//! (`tty_watch`, inotify), a pane's record when its process exits (pidfd) or
//! the pane set changes; the lists (`tmux://panes`, `tmux://sessions`,
//! `tmux://server`) when the pane set changes (`changes`: a `/dev/pts/N`
//! created or removed, then one hook-free table read). Updates are coalesced
//! to at most [`PER_SECOND`] per resource: the first change is told at once,
//! changes within the next quarter second become one trailing update. An
//! output update goes out [`SETTLE`] after the write, once tmux has the text.
//!
//! Legacy clients (`resources/subscribe`) get `notifications/resources/updated`
//! on the session; a 2026-07-28 `subscriptions/listen` request gets them on its
//! own stream ([`Notifier::Listen`]), and everything it started ends with it.

use crate::resources::Resource;
use crate::session::Session;
use rmcp::model::{ResourceUpdatedNotificationParam, ServerNotification};
use rmcp::service::{RoleServer, SubscriptionSink};
use rmcp::Peer;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tmux_mcp_engine::changes::PaneSet;
use tmux_mcp_engine::tty_watch::TtyWatch;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// A terminal write is seen (inotify) a moment before tmux has read it into
/// its grid; a client that reads the screen at once must find the new text,
/// so the update waits this long after the write.
const SETTLE: Duration = Duration::from_millis(10);

/// Most updates one resource gets per second.
pub const PER_SECOND: u32 = 4;
const MIN_GAP: Duration = Duration::from_millis(1000 / PER_SECOND as u64);

/// Where notifications go.
#[derive(Clone)]
pub enum Notifier {
    /// The session itself (`resources/subscribe`, 2024-11-05 … 2025-11-25).
    Legacy(Peer<RoleServer>),
    /// One `subscriptions/listen` stream (2026-07-28).
    Listen(SubscriptionSink),
}

impl Notifier {
    /// False once nobody can hear any more (the stream ended, the client left).
    async fn updated(&self, uri: &str) -> bool {
        let param = ResourceUpdatedNotificationParam::new(uri);
        match self {
            Notifier::Legacy(peer) => peer.notify_resource_updated(param).await.is_ok(),
            Notifier::Listen(sink) => sink
                .send(ServerNotification::ResourceUpdatedNotification(
                    rmcp::model::ResourceUpdatedNotification::new(param),
                ))
                .await
                .is_ok(),
        }
    }

    async fn list_changed(&self) -> bool {
        match self {
            Notifier::Legacy(peer) => peer.notify_resource_list_changed().await.is_ok(),
            Notifier::Listen(sink) => sink.notify_resource_list_changed().await.is_ok(),
        }
    }
}

/// What subscriptions watch from the moment they are accepted, taken before
/// the client hears so (the `resources/subscribe` result, or a listen
/// stream's acknowledgment): a pane's terminal (inotify) and the pane set as
/// this agent saw it. A change made right after the answer is then always
/// told; armed later, in the watch task, a write in between was lost for good
/// (the safety net's first reading already showed it). The net's baseline is
/// still read in the task: an echo nobody wrote in that moment can be missed.
#[derive(Default)]
pub struct Armed {
    /// Per screen URI: its pane's terminal, watched.
    ttys: HashMap<String, ArmedTty>,
    pane_set: Option<PaneSetBaseline>,
}

struct ArmedTty {
    /// The terminal watched (a respawned pane may have another by the time
    /// its task starts; then it arms again).
    path: String,
    watch: TtyWatch,
}

/// The pane set a watch compares its changes with.
struct PaneSetBaseline {
    rx: watch::Receiver<Option<PaneSet>>,
    seen: Vec<(String, u32)>,
}

impl PaneSetBaseline {
    fn now(session: &Session) -> PaneSetBaseline {
        let rx = session.broker.pane_set();
        let seen = match session.broker.registry.cached() {
            Some(s) => visible_panes(session, &s),
            None => Vec::new(),
        };
        PaneSetBaseline { rx, seen }
    }
}

/// The terminal of `r`'s pane watched now, when `r` is a screen.
fn arm_tty(session: &Session, r: &Resource) -> Option<ArmedTty> {
    if !matches!(r, Resource::Screen(_) | Resource::Handed { .. }) {
        return None;
    }
    let path = session
        .broker
        .registry
        .cached()?
        .pane(r.pane()?)?
        .tty
        .clone();
    let watch = TtyWatch::new(&path).ok()?;
    Some(ArmedTty { path, watch })
}

impl Armed {
    /// Arms the `(uri, resource)` pairs, and the pane set when `pane_set`;
    /// what was armed before for the same URIs, and the pane set, is replaced.
    pub fn arm<'a>(
        &mut self,
        session: &Session,
        resources: impl IntoIterator<Item = (&'a str, &'a Resource)>,
        pane_set: bool,
    ) {
        for (uri, r) in resources {
            if let Some(t) = arm_tty(session, r) {
                self.ttys.insert(uri.to_string(), t);
            }
        }
        self.pane_set = pane_set.then(|| PaneSetBaseline::now(session));
    }

    fn take_tty(&mut self, uri: &str) -> Option<ArmedTty> {
        self.ttys.remove(uri)
    }

    fn take_pane_set(&mut self) -> Option<PaneSetBaseline> {
        self.pane_set.take()
    }
}

/// The subscriptions of one session (legacy) or one listen stream. Dropping it
/// stops every watch it started.
pub struct Subscriptions {
    session: Arc<Session>,
    notifier: Notifier,
    /// Per subscribed URI (as the client wrote it): the task watching it.
    watches: Mutex<HashMap<String, JoinHandle<()>>>,
    /// Subscribed list URIs, told by the pane-set task.
    lists: Arc<Mutex<BTreeSet<String>>>,
    /// The pane-set task (list_changed and the list URIs), once started.
    pane_set: Mutex<Option<JoinHandle<()>>>,
    /// Whether to send `notifications/resources/list_changed`.
    list_changed: bool,
}

impl Subscriptions {
    pub fn new(session: Arc<Session>, notifier: Notifier, list_changed: bool) -> Subscriptions {
        Subscriptions {
            session,
            notifier,
            watches: Mutex::default(),
            lists: Arc::default(),
            pane_set: Mutex::default(),
            list_changed,
        }
    }

    /// Starts telling changes of `r` under `uri`, from now on (armed before
    /// it returns). Re-subscribing is a no-op.
    pub fn add(&self, uri: String, r: Resource) {
        let mut armed = Armed::default();
        armed.arm(&self.session, [(uri.as_str(), &r)], false);
        self.add_armed(uri, r, &mut armed);
    }

    /// [`add`](Self::add), with what `armed` watches already for `uri`.
    pub fn add_armed(&self, uri: String, r: Resource, armed: &mut Armed) {
        match r.pane() {
            Some(pane) => {
                let mut w = self.watches.lock().unwrap();
                if w.get(&uri).is_some_and(|h| !h.is_finished()) {
                    return;
                }
                let screen = matches!(r, Resource::Screen(_) | Resource::Handed { .. });
                // A handed-over pane is watched whatever the agent's scope.
                let handed = matches!(r, Resource::Handed { .. });
                let task = tokio::spawn(watch_pane(
                    self.session.clone(),
                    self.notifier.clone(),
                    uri.clone(),
                    pane.to_string(),
                    screen,
                    handed,
                    armed.take_tty(&uri),
                ));
                w.insert(uri, task);
            }
            None => {
                self.lists.lock().unwrap().insert(uri);
                self.start_pane_set_armed(armed);
            }
        }
    }

    pub fn remove(&self, uri: &str) {
        if let Some(task) = self.watches.lock().unwrap().remove(uri) {
            task.abort();
        }
        self.lists.lock().unwrap().remove(uri);
    }

    /// Starts the pane-set task (list_changed and the list URIs) if it is not
    /// running, comparing with the pane set as it is now.
    pub fn start_pane_set(&self) {
        self.start_pane_set_armed(&mut Armed::default());
    }

    /// [`start_pane_set`](Self::start_pane_set) from the pane set `armed`
    /// holds, if it holds one.
    pub fn start_pane_set_armed(&self, armed: &mut Armed) {
        let mut slot = self.pane_set.lock().unwrap();
        if slot.as_ref().is_some_and(|h| !h.is_finished()) {
            return;
        }
        let baseline = armed
            .take_pane_set()
            .unwrap_or_else(|| PaneSetBaseline::now(&self.session));
        *slot = Some(tokio::spawn(watch_pane_set(
            self.session.clone(),
            self.notifier.clone(),
            self.lists.clone(),
            self.list_changed,
            baseline,
        )));
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        for (_, t) in self.watches.lock().unwrap().drain() {
            t.abort();
        }
        if let Some(t) = self.pane_set.lock().unwrap().take() {
            t.abort();
        }
    }
}

/// Coalesces change events into updates at most every [`MIN_GAP`].
struct Throttle {
    last: Option<Instant>,
}

impl Throttle {
    /// When the next update may go out.
    fn next(&self) -> Instant {
        self.last.map_or_else(Instant::now, |l| l + MIN_GAP)
    }
}

/// The pane ids this session may see now, with their pids (a respawn changes the pid).
fn visible_panes(
    session: &Session,
    snap: &tmux_mcp_engine::registry::Snapshot,
) -> Vec<(String, u32)> {
    session
        .visible(snap)
        .map(|p| (p.id.clone(), p.pid))
        .collect()
}

async fn watch_pane(
    session: Arc<Session>,
    notifier: Notifier,
    uri: String,
    pane_id: String,
    screen: bool,
    handed: bool,
    mut armed: Option<ArmedTty>,
) {
    let broker = session.broker.clone();
    let mut pane_set = broker.pane_set();
    let mut throttle = Throttle { last: None };
    'pane: loop {
        let Some(pane) = broker
            .registry
            .cached()
            .and_then(|s| s.pane(&pane_id).cloned())
            .filter(|p| handed || session.can_see(p))
        else {
            // Gone (or out of scope): one last update, so a reader learns it.
            notifier.updated(&uri).await;
            return;
        };
        test_watch_delay().await;
        let tty = match armed.take() {
            Some(a) if screen && a.path == pane.tty => {
                Some(broker.screen_events_armed(&pane, a.watch).await)
            }
            _ if screen => broker.screen_events(&pane).await.ok(),
            _ => None,
        };
        let identity = pane.process.as_ref().ok().cloned();
        let pid = pane.pid;
        loop {
            let exited = async {
                match &identity {
                    Some(i) if !i.exited() => i.wait_exit().await,
                    _ => std::future::pending().await,
                }
            };
            let output = async {
                match &tty {
                    Some(t) => {
                        if t.changed().await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    }
                    None => std::future::pending().await,
                }
            };
            let mut recheck = false;
            tokio::select! {
                _ = output => tokio::time::sleep(SETTLE).await,
                _ = exited => {
                    // The pane's record changed (dead, or gone soon): re-read it.
                    let _ = broker.registry.refresh().await;
                    recheck = true;
                }
                changed = pane_set.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let now = pane_set.borrow_and_update().as_ref().map(|s| s.panes.iter().find(|(id, _)| *id == pane_id).map(|(_, p)| *p));
                    match now {
                        Some(Some(p)) if p == pid => continue, // someone else's pane came or went
                        _ => recheck = true,
                    }
                }
            }
            // Coalesce: wait for the next slot, taking in what arrives meanwhile.
            let at = throttle.next();
            if at > Instant::now() {
                tokio::time::sleep_until(at).await;
            }
            throttle.last = Some(Instant::now());
            if !notifier.updated(&uri).await {
                return;
            }
            if recheck {
                continue 'pane;
            }
        }
    }
}

/// Debug builds only: `TMUX_MCP_TEST_WATCH_DELAY_MS` holds a watch task back
/// before it watches anything, so a test can write in the moment between the
/// client's answer and the task (`tests/e2e/resources.rs`), which arming keeps
/// from losing that write.
async fn test_watch_delay() {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("TMUX_MCP_TEST_WATCH_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

async fn watch_pane_set(
    session: Arc<Session>,
    notifier: Notifier,
    lists: Arc<Mutex<BTreeSet<String>>>,
    list_changed: bool,
    baseline: PaneSetBaseline,
) {
    let PaneSetBaseline { mut rx, mut seen } = baseline;
    test_watch_delay().await;
    let mut throttle = Throttle { last: None };
    while rx.changed().await.is_ok() {
        let now = match rx.borrow_and_update().as_ref() {
            Some(set) => visible_panes(&session, &set.snapshot),
            None => continue,
        };
        if now == seen {
            continue; // a change this agent cannot see
        }
        seen = now;
        let at = throttle.next();
        if at > Instant::now() {
            tokio::time::sleep_until(at).await;
        }
        throttle.last = Some(Instant::now());
        if list_changed && !notifier.list_changed().await {
            return;
        }
        let uris: Vec<String> = lists.lock().unwrap().iter().cloned().collect();
        for uri in uris {
            if !notifier.updated(&uri).await {
                return;
            }
        }
    }
}
