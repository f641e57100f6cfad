//! The safety net under a pane's terminal events.
//!
//! [`TtyWatch`] sees every `write(2)` a pane's programs make to its terminal,
//! but not what the kernel's line discipline echoes by itself: a person typing
//! into `cat`, `read` or any program in cooked mode changes the screen with no
//! process writing. So while anyone waits on or subscribes to a pane, one task
//! per broker reads a small fingerprint of every such pane (cursor position,
//! history size, whether it is dead) every [`NET_INTERVAL`], in one hook-free
//! format expansion for all of them, and tells the pane's watchers when it
//! changed. Typed echo always moves the cursor or scrolls, so it is seen within
//! one interval; program output is still seen at once through inotify. The
//! task runs only while something is watched, and stops with the last watcher.
//!
//! The read is one `list-commands -F` expansion. It walks sessions and
//! windows, and expands panes only in watched windows. [`ScreenEvents`] is
//! the tty watch and this net together, or the net alone where the platform
//! cannot watch a terminal's writes (macOS). Every screen wait and
//! subscription waits on it.

use crate::registry::{Pane, Registry};
use crate::tty_watch::TtyWatch;
use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::watch;

/// How often the watched panes' fingerprints are read: an echo nobody wrote
/// is seen within this (plus one read).
pub const NET_INTERVAL: Duration = Duration::from_millis(250);

/// The watched panes of one broker (a handle: the reading task and each
/// [`NetWatch`] hold weak references to what it shares).
#[derive(Default)]
pub struct Net {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    panes: HashMap<String, Watched>,
    /// Whether the reading task is running (it ends when `panes` empties).
    running: bool,
}

struct Watched {
    window_id: String,
    watchers: usize,
    /// Bumped when the fingerprint changes.
    tx: watch::Sender<u64>,
    last: Option<String>,
}

impl Net {
    /// Watches `pane` until the returned handle is dropped. A pane not yet
    /// watched gets its first reading now, before the caller reads its
    /// screen, so a change after that read is a change from this baseline.
    pub async fn watch(&self, registry: &Arc<Registry>, pane: &Pane) -> NetWatch {
        let new = !self
            .shared
            .state
            .lock()
            .unwrap()
            .panes
            .contains_key(&pane.id);
        let baseline = match new {
            true => registry
                .expand_format(&fingerprints([(
                    pane.window_id.as_str(),
                    vec![pane.id.as_str()],
                )]))
                .await
                .ok(),
            false => None,
        };
        let mut st = self.shared.state.lock().unwrap();
        let w = st.panes.entry(pane.id.clone()).or_insert_with(|| Watched {
            window_id: pane.window_id.clone(),
            watchers: 0,
            tx: watch::channel(0).0,
            last: None,
        });
        w.watchers += 1;
        if w.last.is_none() {
            w.last = baseline
                .as_deref()
                .and_then(|b| {
                    b.split('|')
                        .find_map(|i| i.strip_prefix(&format!("{}=", pane.id)))
                })
                .map(str::to_string);
        }
        let rx = w.tx.subscribe();
        if !st.running {
            st.running = true;
            tokio::spawn(read_loop(
                Arc::downgrade(&self.shared),
                Arc::downgrade(registry),
            ));
        }
        NetWatch {
            shared: Arc::downgrade(&self.shared),
            pane_id: pane.id.clone(),
            rx: tokio::sync::Mutex::new(rx),
        }
    }
}

impl Shared {
    /// The format that reads every watched pane (see [`fingerprints`]).
    fn format(&self) -> Option<String> {
        let st = self.state.lock().unwrap();
        if st.panes.is_empty() {
            return None;
        }
        let mut by_window: HashMap<&str, Vec<&str>> = HashMap::new();
        for (id, w) in &st.panes {
            by_window.entry(&w.window_id).or_default().push(id);
        }
        Some(fingerprints(by_window))
    }

    /// Takes one expansion of [`Shared::format`]; tells the panes whose
    /// fingerprint changed. A pane without a baseline (its first reading
    /// failed) tells on its first reading: its watcher may have read the
    /// screen before it (a spurious wake costs a re-read). A pane missing from
    /// it (gone, moved) is left to the pane-set events.
    fn take(&self, expanded: &str) {
        let mut st = self.state.lock().unwrap();
        for item in expanded.split('|') {
            let Some((id, fingerprint)) = item.split_once('=') else {
                continue;
            };
            let Some(w) = st.panes.get_mut(id) else {
                continue;
            };
            if w.last.as_deref() != Some(fingerprint) {
                w.tx.send_modify(|n| *n += 1);
            }
            w.last = Some(fingerprint.to_string());
        }
    }

    /// Ends the task when nothing is watched (decided under the same lock
    /// that [`Net::watch`] starts it under).
    fn keep_running(&self) -> bool {
        let mut st = self.state.lock().unwrap();
        st.running = !st.panes.is_empty();
        st.running
    }

    fn unwatch(&self, pane_id: &str) {
        let mut st = self.state.lock().unwrap();
        if let Some(w) = st.panes.get_mut(pane_id) {
            w.watchers -= 1;
            if w.watchers == 0 {
                st.panes.remove(pane_id);
            }
        }
    }
}

/// The format that expands to `%N=x.y.h.d|` for each of the panes, given by
/// window. Sessions and windows are walked, panes only in those windows.
fn fingerprints<'a>(by_window: impl IntoIterator<Item = (&'a str, Vec<&'a str>)>) -> String {
    let op = tmux_mcp_core::tmux::quote::format_operand;
    let windows: String = by_window
        .into_iter()
        .map(|(window, panes)| {
            let panes: String = panes.iter().map(|p| format!("#{{?#{{==:#{{pane_id}},{}}},{}=#{{cursor_x}}.#{{cursor_y}}.#{{history_size}}.#{{pane_dead}}|,}}", op(p), op(p))).collect();
            format!("#{{?#{{==:#{{window_id}},{}}},#{{P:{panes}}},}}", op(window))
        })
        .collect();
    format!("#{{S:#{{W:{windows}}}}}")
}

/// Ends with the broker (its `Net` or registry dropped) or with the last watcher.
async fn read_loop(shared: Weak<Shared>, registry: Weak<Registry>) {
    loop {
        tokio::time::sleep(NET_INTERVAL).await;
        let (Some(net), Some(registry)) = (shared.upgrade(), registry.upgrade()) else {
            return;
        };
        if !net.keep_running() {
            return;
        }
        let Some(format) = net.format() else {
            continue;
        };
        // A failed read (tmux busy or gone) tells nothing; the next one may.
        if let Ok(expanded) = registry.expand_format(&format).await {
            net.take(&expanded);
        }
    }
}

/// One watcher's view of the net for one pane.
pub struct NetWatch {
    shared: Weak<Shared>,
    pane_id: String,
    rx: tokio::sync::Mutex<watch::Receiver<u64>>,
}

impl NetWatch {
    /// Resolves when the pane's fingerprint has changed since the last call.
    pub async fn changed(&self) {
        if self.rx.lock().await.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for NetWatch {
    fn drop(&mut self) {
        if let Some(net) = self.shared.upgrade() {
            net.unwatch(&self.pane_id);
        }
    }
}

/// Everything that changes a pane's screen: its programs' writes (inotify, at
/// once) and, through the net, what nobody wrote (within [`NET_INTERVAL`]).
/// Where the platform cannot watch a terminal's writes (macOS: the watch
/// answers `Unsupported`), the net alone: every change within [`NET_INTERVAL`].
pub struct ScreenEvents {
    tty: Option<TtyWatch>,
    net: NetWatch,
}

impl ScreenEvents {
    /// Usually through `Broker::screen_events`.
    pub async fn new(net: &Net, registry: &Arc<Registry>, pane: &Pane) -> io::Result<ScreenEvents> {
        let tty = match TtyWatch::new(&pane.tty) {
            Ok(tty) => Some(tty),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => None,
            Err(e) => return Err(e),
        };
        Ok(ScreenEvents {
            tty,
            net: net.watch(registry, pane).await,
        })
    }

    /// With `tty`, a watch on `pane`'s terminal taken earlier (a subscription
    /// arms it before the client hears it is subscribed): writes since then
    /// are events. Usually through `Broker::screen_events_armed`.
    pub async fn armed(
        tty: TtyWatch,
        net: &Net,
        registry: &Arc<Registry>,
        pane: &Pane,
    ) -> ScreenEvents {
        ScreenEvents {
            tty: Some(tty),
            net: net.watch(registry, pane).await,
        }
    }

    /// Waits for the next change (several pending count as one).
    pub async fn changed(&self) -> io::Result<()> {
        self.next_change().await.map(|_| ())
    }

    /// [`changed`](Self::changed), saying which: a program wrote to the
    /// terminal, or the net saw the screen change (also once, spuriously,
    /// soon after the watch starts: its first reading always tells).
    pub async fn next_change(&self) -> io::Result<Change> {
        let written = async {
            match &self.tty {
                Some(tty) => tty.changed().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = written => r.map(|()| Change::Written),
            () = self.net.changed() => Ok(Change::Seen),
        }
    }
}

/// What woke a [`ScreenEvents`] watcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A write to the pane's terminal (inotify).
    Written,
    /// The safety net's reading of cursor, history or deadness changed.
    Seen,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_tell_changes_only() {
        let net = Shared::default();
        let (tx, mut rx) = watch::channel(0);
        net.state.lock().unwrap().panes.insert(
            "%3".into(),
            Watched {
                window_id: "@1".into(),
                watchers: 1,
                tx,
                last: None,
            },
        );
        let format = net.format().unwrap();
        assert_eq!(format, "#{S:#{W:#{?#{==:#{window_id},@1},#{P:#{?#{==:#{pane_id},%3},%3=#{cursor_x}.#{cursor_y}.#{history_size}.#{pane_dead}|,}},}}}");
        net.take("%3=0.0.0.0|");
        assert!(
            rx.has_changed().unwrap(),
            "the first reading tells (the watcher may have read before it)"
        );
        rx.mark_unchanged();
        net.take("%3=0.0.0.0|%3=0.0.0.0|");
        assert!(
            !rx.has_changed().unwrap(),
            "a window linked twice reads the same"
        );
        net.take("%3=4.0.0.0|");
        assert!(rx.has_changed().unwrap());
        rx.mark_unchanged();
        net.take("%9=1.1.1.1|garbage");
        assert!(!rx.has_changed().unwrap());
    }
}
