//! Reading a pane's rows from tmux, safely: resolve the reference, refuse while
//! an `after-capture-pane` hook is set, and run `capture-pane` behind an
//! in-queue guard so the rows come from exactly the pane (and process) meant.
//!
//! [`find_pane`] is the one pane resolver. A cached read serves when the
//! guard proves the rest. A fresh one reads the pane's sessions in full and
//! only places every other pane. It reads the whole table only when the pane
//! left those sessions. A tracked capture's guard also proves the pane's pid
//! and that the pane is not dead. [`resolve`] adds the generation check;
//! [`resolve_tracked`] also binds the live process, and re-reads the table
//! once to find a respawned pane's new one.
//!
//! [`capture_range_with_state`] expands pane fields (history size, cursor
//! row …) in the same queue as the rows, with a `list-commands -F` loop.
//! [`capture_range_after_format`] does so for a format with no pane of its
//! own (a client loop).
//!
//! tmux fires `after-capture-pane` from the capture's target session's options
//! (the session's own array, else the global one: `cmdq_insert_hook`), never
//! from window or pane options, so the hook check is about sessions. How it is
//! made depends on the server ([`hook_check`]):
//!
//! - **tmux >= 3.5, in the queue.** The whole-array format `#{after-capture-pane}`
//!   joins every entry, sparse indexes included (3.5's `options_to_string`; on
//!   3.3a it reads empty whatever is set), and resolves the option exactly as
//!   the hook would (session, else global). One client invocation nests an
//!   `if-shell -F -t $S:.%N '#{after-capture-pane}'` per session linking the
//!   pane's window, then the guard, then
//!   `capture-pane` aimed at the first of them (`$S1:.%N`), so the only hook
//!   that could fire is one just checked: no gap, one round trip. A set hook
//!   makes the else branch print a private marker through `list-commands`
//!   (hook-free, and not an error, so no `command-error` hook runs either)
//!   instead of capturing.
//! - **Older tmux, preflight.** `show-hooks` (tmux runs no hook for it) over the
//!   global table and every session that links the pane's window, immediately
//!   before the capture, also aimed at `$S1:.%N`; a hook set in the gap between
//!   the two cannot be excluded.
//!
//! Either way the guard proves, in the same queue as the capture, that S1
//! still links the pane's window (see [`pane_guard`]). That is what makes the
//! capture's target resolve: tmux then fires the after-hook from S1, which was
//! checked, and the capture cannot fail, so no `command-error` hook runs
//! either. Without that proof a capture aimed at a session that no longer
//! links the window fails (firing `command-error`), and one aimed at the bare
//! pane id takes its hook from whichever session tmux finds best.

use crate::capture::{self, Rows, Scope};
use crate::registry::{session_ids, Pane, Snapshot};
use crate::Broker;
use std::sync::Arc;
use tmux_mcp_core::feed::{Depth, Shape};
use tmux_mcp_core::process::{IdentityError, ProcessIdentity};
use tmux_mcp_core::tmux::TmuxError;

/// Why a capture could not be made, with whether anything reached tmux.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObserveError {
    /// The reference is for another server instance, or the pane is gone.
    StaleTarget { observed: bool, why: String },
    /// The tmux version or the platform makes the request impossible.
    Unsupported { observed: bool, why: String },
    /// A capture refused because an `after-capture-pane` hook is set (the
    /// seed family reports it as `unsupported`).
    HookSet { observed: bool, why: String },
    /// tmux could not be reached or answered nonsense.
    Transport { observed: bool, why: String },
    /// The pane is outside what this session may see.
    OutOfScope,
}

impl ObserveError {
    pub fn why(&self) -> &str {
        match self {
            ObserveError::StaleTarget { why, .. }
            | ObserveError::Unsupported { why, .. }
            | ObserveError::HookSet { why, .. }
            | ObserveError::Transport { why, .. } => why,
            ObserveError::OutOfScope => "the pane is outside this session's scope",
        }
    }

    /// Whether this is the refusal because an `after-capture-pane` hook is set.
    pub fn is_hook_refusal(&self) -> bool {
        matches!(self, ObserveError::HookSet { .. })
    }
}

/// How a capture refused because of the person's hook begins.
const HOOK_SET: &str = "an after-capture-pane hook is set";

pub struct Captured {
    pub pane: Pane,
    pub rows: Rows,
    pub identity: Option<Arc<ProcessIdentity>>,
}

/// How current a pane's table entry must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// The cached entry will do: the capture's in-queue guard proves it (a
    /// table read happens only when the cache does not know the pane).
    Cached,
    /// A table read after this call started (fields the guard does not prove,
    /// such as the pane's size or cursor, are used).
    Fresh,
}

/// The one pane resolver: pane `id` from the table, or `StaleTarget` with
/// nothing sent when tmux has no such pane.
pub async fn find_pane(
    broker: &Broker,
    id: &str,
    freshness: Freshness,
) -> Result<Pane, ObserveError> {
    let registry = &broker.registry;
    let read = match registry.cached().and_then(|s| s.pane(id).cloned()) {
        Some(p) if freshness == Freshness::Cached => return Ok(p),
        // Fresh: the sessions the pane was in, read in full, and every other
        // pane only placed (its placements, all a scope check needs, come from
        // every session), so one pane's read costs tmux a fraction of the
        // whole table on a server of many panes. A pane no longer in those
        // sessions comes back placed, and the registry reads the whole table.
        Some(p) => {
            let sessions = session_ids([&p]);
            let shape = Shape {
                depth: Depth::Full,
                only: Some(&sessions),
            };
            let full = |s: &Snapshot| s.pane(id).is_some_and(|p| p.depth == Depth::Full);
            registry.read(&shape, full).await
        }
        None => registry.refresh().await,
    };
    let snap = read.map_err(|e| ObserveError::Transport {
        observed: false,
        why: e.to_string(),
    })?;
    snap.pane(id)
        .cloned()
        .ok_or_else(|| ObserveError::StaleTarget {
            observed: false,
            why: format!("pane {id} does not exist"),
        })
}

/// Finds pane `id` of generation `generation` in the table.
pub async fn resolve(
    broker: &Broker,
    generation: &str,
    id: &str,
    freshness: Freshness,
) -> Result<Pane, ObserveError> {
    if generation != broker.identity.generation {
        return Err(ObserveError::StaleTarget {
            observed: false,
            why: "the reference's generation is not this tmux server's".into(),
        });
    }
    find_pane(broker, id, freshness).await
}

/// Pane `id` and the identity of its live process, for a tracked capture or a
/// wait. The cached table may still show a process that exited (the pane was
/// respawned, or its program ended) when no listing ran since: then the table is
/// read once more, so a respawned pane's new process is found and bound.
pub async fn resolve_tracked(
    broker: &Broker,
    generation: &str,
    id: &str,
    freshness: Freshness,
) -> Result<(Pane, Arc<ProcessIdentity>), ObserveError> {
    let pane = resolve(broker, generation, id, freshness).await?;
    match identity_of(broker, &pane) {
        Ok(identity) => Ok((pane, identity)),
        Err(ObserveError::StaleTarget { .. }) => {
            let fresh = find_pane(broker, id, Freshness::Fresh).await?;
            let identity = identity_of(broker, &fresh)?;
            Ok((fresh, identity))
        }
        Err(e) => Err(e),
    }
}

/// The process identity a tracked capture binds to.
pub fn identity_of(broker: &Broker, pane: &Pane) -> Result<Arc<ProcessIdentity>, ObserveError> {
    if !tmux_mcp_core::tmux::version_at_least(&broker.tmux_version(), 3, 3) {
        return Err(ObserveError::Unsupported {
            observed: false,
            why: "tracked cursors need tmux >= 3.3".into(),
        });
    }
    match &pane.process {
        Ok(id) if !id.exited() => Ok(id.clone()),
        Ok(_) => Err(ObserveError::StaleTarget {
            observed: false,
            why: format!("the process of pane {} has exited", pane.id),
        }),
        Err(IdentityError::PaneDead) | Err(IdentityError::Gone(_)) => {
            Err(ObserveError::StaleTarget {
                observed: false,
                why: format!("pane {} has no live process", pane.id),
            })
        }
        Err(e) => Err(ObserveError::Unsupported {
            observed: false,
            why: format!("no native process identity: {e}"),
        }),
    }
}

/// One guarded capture of `pane` (cache entry) as `scope` says; `identity` makes
/// it tracked. Retries once with a fresh table when the guard fails because the
/// cache was stale.
pub async fn capture(
    broker: &Broker,
    pane: Pane,
    scope: &Scope,
    identity: Option<Arc<ProcessIdentity>>,
) -> Result<Captured, ObserveError> {
    let start = if scope.history_lines == 0 {
        "0".to_string()
    } else {
        format!("-{}", scope.history_lines)
    };
    let flags = vec!["-S".to_string(), start, "-E".to_string(), "-".to_string()];
    let (pane, out) = guarded(broker, pane, &flags, identity.as_ref(), false, None).await?;
    Ok(Captured {
        pane,
        rows: capture::select(&out, scope),
        identity,
    })
}

/// `capture-pane`'s `-J`, `-e` (colours and attributes as escape
/// sequences, see `styles`), `-S START` and `-E END` flags, as given.
pub(crate) fn capture_flags(
    start: Option<i64>,
    end: Option<i64>,
    join_wrapped: bool,
    escapes: bool,
) -> Vec<String> {
    let mut flags = Vec::new();
    if join_wrapped {
        flags.push("-J".to_string());
    }
    if escapes {
        flags.push("-e".to_string());
    }
    if let Some(s) = start {
        flags.extend(["-S".to_string(), s.to_string()]);
    }
    if let Some(e) = end {
        flags.extend(["-E".to_string(), e.to_string()]);
    }
    flags
}

/// An explicit `capture-pane` range (libtmux family): `-S start` / `-E end` only
/// when given (tmux's defaults otherwise: the visible screen), `-J` when
/// `join_wrapped`. Same hook refusal and in-queue guard as [`capture`], and the
/// guard also proves the pane's size (callers plan the range from it); returns
/// the pane it captured (fresh if the guard made it re-read the table) and
/// tmux's raw stdout.
pub async fn capture_range(
    broker: &Broker,
    pane: Pane,
    start: Option<i64>,
    end: Option<i64>,
    join_wrapped: bool,
) -> Result<(Pane, Vec<u8>), ObserveError> {
    let flags = capture_flags(start, end, join_wrapped, false);
    guarded(broker, pane, &flags, None, true, None).await
}

/// [`capture_range`] that also expands `state` (a tmux format, e.g.
/// `#{history_size} #{cursor_y}`) for this pane in the same command queue,
/// with `escapes` the rows as `capture-pane -e` writes them,
/// just before the rows, so no output lands between the two; the hook-free
/// way to read fields the table does not prove (`list-commands -F` with a
/// loop that prints only this pane; `display-message` would run
/// `after-display-message`). Returns the pane, the expanded state (the first
/// placement's) and the rows. `state` must hold no `'` or `|`, and commas
/// only inside a `#{…}`.
pub async fn capture_range_with_state(
    broker: &Broker,
    pane: Pane,
    start: Option<i64>,
    end: Option<i64>,
    join_wrapped: bool,
    escapes: bool,
    state: &str,
) -> Result<(Pane, String, Vec<u8>), ObserveError> {
    let body = format!("{state}|");
    // Through the first placement's session and window only (a loop over
    // every pane would cost each read the size of the server), of the pane
    // each attempt captures: a retry on a fresh table may find it elsewhere.
    let only = |p: &Pane| {
        let session = p.placements.first().map(|l| l.session_id.as_str());
        tmux_mcp_core::tmux::quote::in_pane(session.unwrap_or_default(), &p.window_id, &p.id, &body)
    };
    let flags = capture_flags(start, end, join_wrapped, escapes);
    let (pane, line, out) = capture_after(broker, pane, &flags, &only).await?;
    Ok((
        pane,
        line.split('|').next().unwrap_or_default().to_string(),
        out,
    ))
}

/// [`capture_range`] after `format` expanded once with no session, window or
/// pane of its own (so a client loop, `#{L:…}`, sees each client's session,
/// current window and active pane), in the same command queue just before the
/// rows. `format` must expand to one line and hold no `'`.
pub async fn capture_range_after_format(
    broker: &Broker,
    pane: Pane,
    start: Option<i64>,
    end: Option<i64>,
    join_wrapped: bool,
    escapes: bool,
    format: &str,
) -> Result<(Pane, String, Vec<u8>), ObserveError> {
    let flags = capture_flags(start, end, join_wrapped, escapes);
    capture_after(broker, pane, &flags, &|_: &Pane| format.to_string()).await
}

/// The capture of `flags` after the format `format_for(pane)` gave for the
/// pane it captures, expanded in the same queue (the first line of the
/// result, then the rows).
async fn capture_after(
    broker: &Broker,
    pane: Pane,
    flags: &[String],
    format_for: &(dyn Fn(&Pane) -> String + Sync),
) -> Result<(Pane, String, Vec<u8>), ObserveError> {
    // tmux prints no line at all for a format that expands to nothing: the
    // `>` keeps the line there, so the rows are never taken for it.
    let prefix = |p: &Pane| format!("list-commands -F '>{}' list-commands ;", format_for(p));
    let (pane, out) = guarded(broker, pane, flags, None, true, Some(&prefix)).await?;
    let nl = out.iter().position(|b| *b == b'\n').unwrap_or(out.len());
    let Some(line) = out[..nl].strip_prefix(b">") else {
        return Err(ObserveError::Transport {
            observed: true,
            why: "tmux did not print the state line before the rows".to_string(),
        });
    };
    Ok((
        pane,
        String::from_utf8_lossy(line).into_owned(),
        out.get(nl + 1..).unwrap_or_default().to_vec(),
    ))
}

/// [`capture_once`] with one retry on a fresh table when the guard did not hold.
/// A pane missing from that fresh table is `stale_target` with nothing sent:
/// the guard kept `capture-pane` from running, so no effect (and no hook) came
/// of the command that was sent against the stale cache.
async fn guarded(
    broker: &Broker,
    pane: Pane,
    flags: &[String],
    identity: Option<&Arc<ProcessIdentity>>,
    prove_size: bool,
    prefix: Option<&(dyn Fn(&Pane) -> String + Sync)>,
) -> Result<(Pane, Vec<u8>), ObserveError> {
    let first = prefix.map(|f| f(&pane));
    match capture_once(broker, &pane, flags, identity, prove_size, first.as_deref()).await {
        Attempt::Guard(_) => {
            let snap = broker
                .registry
                .refresh()
                .await
                .map_err(|e| ObserveError::Transport {
                    observed: false,
                    why: e.to_string(),
                })?;
            let fresh = snap
                .pane(&pane.id)
                .cloned()
                .ok_or_else(|| ObserveError::StaleTarget {
                    observed: false,
                    why: format!("pane {} no longer exists", pane.id),
                })?;
            if let Some(id) = identity {
                if !id.matches(fresh.pid) {
                    return Err(ObserveError::StaleTarget {
                        observed: false,
                        why: format!("the process of pane {} changed", pane.id),
                    });
                }
            }
            let again = prefix.map(|f| f(&fresh));
            match capture_once(
                broker,
                &fresh,
                flags,
                identity,
                prove_size,
                again.as_deref(),
            )
            .await
            {
                Attempt::Guard(why) => Err(ObserveError::StaleTarget {
                    observed: true,
                    why: format!("pane {} changed while it was being captured{why}", pane.id),
                }),
                Attempt::Failed(e) => Err(e),
                Attempt::Rows(out) => Ok((fresh, out)),
            }
        }
        Attempt::Failed(e) => Err(e),
        Attempt::Rows(out) => Ok((pane, out)),
    }
}

/// What one guarded capture gave.
enum Attempt {
    Rows(Vec<u8>),
    /// The guard did not hold, or tmux could not find the target: nothing was
    /// captured. The text is tmux's complaint, if any (for the final error).
    Guard(String),
    Failed(ObserveError),
}

/// How a capture proves that no `after-capture-pane` hook can run (see the
/// module docs), by the server's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookCheck {
    /// tmux >= 3.5: inside the capture's own command queue, one connection.
    InQueue,
    /// Older tmux: a `show-hooks` preflight right before the capture.
    Preflight,
}

impl HookCheck {
    pub fn for_version(version: &str) -> HookCheck {
        if tmux_mcp_core::tmux::version_at_least(version, 3, 5) {
            HookCheck::InQueue
        } else {
            HookCheck::Preflight
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HookCheck::InQueue => "in_queue",
            HookCheck::Preflight => "preflight",
        }
    }
}

/// The refusal of a capture while a hook is set. `observed`: tmux evaluated the
/// check inside the capture's queue (the command reached tmux and did nothing),
/// else the preflight found it and nothing was sent.
fn hook_refusal(observed: bool) -> ObserveError {
    let how = if observed {
        "tmux checked it in the capture's own command queue: nothing was captured and the hook did not run."
    } else {
        "Nothing was sent."
    };
    ObserveError::HookSet {
        observed,
        why: format!("{HOOK_SET} (globally or in a session linking this pane's window); tmux-mcp does not capture while it is, so the hook cannot run. {how}"),
    }
}

/// What the in-queue check prints instead of capturing when a hook is set: a
/// word no pane can forge (random per broker, never shown anywhere).
pub(crate) fn hook_marker() -> &'static str {
    static MARKER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARKER.get_or_init(|| format!("tmux-mcp-hook-set-{}", tmux_mcp_core::sys::random_hex(16)))
}

/// The argv of one in-queue capture: for each session in `sessions` (distinct,
/// at least one) an `if-shell -F -t 'S:.PANE' '#{after-capture-pane}'` whose
/// true branch prints the marker and whose false branch holds the next level;
/// innermost, `if-shell -F -t 'S1:.PANE' GUARD { CMD }`, CMD's capture aimed at
/// `S1:.PANE` too (see [`capture_once`]). The explicit `S:.PANE` target puts
/// the format in that session's context (so the option resolves as that
/// session's hook would: its own array, else the global one) and fails unless
/// S still links the pane's window. Levels nest as `{ … }` blocks, so `CMD` and
/// `GUARD` (no `'` in either) need no escaping; ids are single-quoted because
/// tmux's parser expands `$…` outside quotes.
fn in_queue_argv(sessions: &[&str], pane_id: &str, guard: &str, cmd: &str) -> Vec<String> {
    let mark = format!("list-commands -F {} list-commands", hook_marker());
    let mut inner = format!(
        "if-shell -F -t {} '{guard}' {{ {cmd} }}",
        capture_target(sessions[0], pane_id)
    );
    for s in sessions[1..].iter().rev() {
        inner = format!(
            "if-shell -F -t {} '#{{after-capture-pane}}' {{ {mark} }} {{ {inner} }}",
            capture_target(s, pane_id)
        );
    }
    vec![
        "if-shell".into(),
        "-F".into(),
        "-t".into(),
        format!("{}:.{pane_id}", sessions[0]),
        "#{after-capture-pane}".into(),
        mark,
        inner,
    ]
}

/// The `-t` of a capture aimed through `session`, for a command string: quoted,
/// because tmux's parser expands `$…` outside quotes.
pub(crate) fn capture_target(session: &str, pane_id: &str) -> String {
    format!("'{session}:.{pane_id}'")
}

/// The argv of one guarded capture command list `cmd` (its capture aimed with
/// [`capture_target`] through `sessions[0]`): behind the in-queue hook check
/// and the guard on tmux >= 3.5, behind the guard alone before (the preflight
/// ran first).
pub(crate) fn guarded_argv(
    check: HookCheck,
    sessions: &[&str],
    pane_id: &str,
    guard: &str,
    cmd: &str,
) -> Vec<String> {
    match check {
        HookCheck::InQueue => in_queue_argv(sessions, pane_id, guard, cmd),
        HookCheck::Preflight => vec![
            "if-shell".into(),
            "-F".into(),
            "-t".into(),
            format!("{}:.{pane_id}", sessions[0]),
            guard.into(),
            cmd.into(),
        ],
    }
}

/// The sessions linking `pane`'s window (distinct, in placement order) and the
/// guard, expanded in the context `$S1:.%N` (S1 the first of them), that the
/// capture aimed at `$S1:.%N` needs:
///
/// - `#{pane_id}` is the pane: a context that does not resolve is empty.
/// - `#{window_id}` is the pane's window: S1 still links it. In a format
///   context tmux takes S1 as the session and the pane by id even when S1 does
///   not link the pane's window, and the window is then S1's current one
///   (measured on 3.3a, 3.5a and 3.7c), never the pane's, which S1 does not
///   hold. The capture's own target resolves only when S1 links the window.
/// - No session links the window beyond those the table knows (and the hook
///   check asks). tmux < 3.5 counts winlinks in `window_linked_sessions`, as
///   the table's placements do; 3.7 counts sessions there (a session group
///   once), so the in-queue path compares the byte length of
///   `window_linked_sessions_list` (every winlink's session name,
///   comma-separated, on 3.5 and 3.7) with the table's instead: a further link
///   lengthens it. A hook only S2 holds cannot fire for a capture aimed
///   through S1, so this part keeps the policy (a hook set in any session
///   linking the window refuses the capture), not the safety; its residue
///   (one linking session swapped for another of a name as long, within the
///   gap since the table was read) lets such a capture through.
///
/// `pane` has at least one placement.
pub(crate) fn pane_guard(pane: &Pane, check: HookCheck) -> (Vec<&str>, String) {
    // A window linked twice into one session is one hook table.
    let mut distinct: Vec<&str> = Vec::new();
    for p in &pane.placements {
        if !distinct.contains(&p.session_id.as_str()) {
            distinct.push(&p.session_id);
        }
    }
    let operand = tmux_mcp_core::tmux::quote::format_operand;
    let id = format!(
        "#{{&&:#{{==:#{{pane_id}},{}}},#{{==:#{{window_id}},{}}}}}",
        operand(&pane.id),
        operand(&pane.window_id)
    );
    let guard = match check {
        HookCheck::Preflight => format!(
            "#{{&&:{id},#{{==:#{{window_linked_sessions}},{}}}}}",
            pane.placements.len()
        ),
        HookCheck::InQueue => {
            let names: usize = pane
                .placements
                .iter()
                .map(|p| p.session_name.len())
                .sum::<usize>()
                + pane.placements.len().saturating_sub(1);
            format!("#{{&&:{id},#{{==:#{{n:#{{window_linked_sessions_list}}}},{names}}}}}")
        }
    };
    (distinct, guard)
}

/// The hook check (in the queue on tmux >= 3.5, else a preflight), then
/// `[PREFIX] capture-pane -p -t PANE FLAGS…` behind the in-queue guard; the raw
/// stdout.
async fn capture_once(
    broker: &Broker,
    pane: &Pane,
    flags: &[String],
    identity: Option<&Arc<ProcessIdentity>>,
    prove_size: bool,
    prefix: Option<&str>,
) -> Attempt {
    let sessions: Vec<String> = pane
        .placements
        .iter()
        .map(|p| p.session_id.clone())
        .collect();
    if sessions.is_empty() {
        return Attempt::Failed(ObserveError::StaleTarget {
            observed: false,
            why: format!("pane {} is in no session", pane.id),
        });
    }
    let check = HookCheck::for_version(&broker.tmux_version());
    if check == HookCheck::Preflight {
        match broker
            .registry
            .hook_is_set("after-capture-pane", &sessions)
            .await
        {
            Ok(false) => {}
            Ok(true) => return Attempt::Failed(hook_refusal(false)),
            // A session that vanished since the table was read makes show-hooks fail.
            Err(e @ TmuxError::Failed { .. }) => return Attempt::Guard(format!(": {e}")),
            Err(e) => {
                return Attempt::Failed(ObserveError::Transport {
                    observed: false,
                    why: e.to_string(),
                })
            }
        }
    }
    if let Some(id) = identity {
        if id.exited() {
            return Attempt::Failed(ObserveError::StaleTarget {
                observed: false,
                why: format!("the process of pane {} has exited", pane.id),
            });
        }
    }
    let (distinct, mut guard) = pane_guard(pane, check);
    if let Some(id) = identity {
        guard = format!(
            "#{{&&:{guard},#{{&&:#{{==:#{{pane_pid}},{}}},#{{==:#{{pane_dead}},0}}}}}}",
            id.pid
        );
    }
    if prove_size {
        guard = format!(
            "#{{&&:{guard},#{{&&:#{{==:#{{pane_width}},{}}},#{{==:#{{pane_height}},{}}}}}}}",
            pane.width, pane.height
        );
    }
    let target = capture_target(distinct[0], &pane.id);
    let mut cmd = match prefix {
        Some(p) => format!("{p} capture-pane -p -t {target}"),
        None => format!("capture-pane -p -t {target}"),
    };
    for f in flags {
        cmd.push(' ');
        cmd.push_str(f);
    }
    let argv = guarded_argv(check, &distinct, &pane.id, &guard, &cmd);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = match broker.registry.tmux_output(&argv).await {
        Ok(o) => o,
        Err(e) => return Attempt::Failed(transport(e)),
    };
    // A failing if-shell means tmux could not find the target (the pane is
    // gone, or a session no longer links its window): the capture inside
    // never ran.
    if out.status != 0 {
        return Attempt::Guard(format!(": {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    if check == HookCheck::InQueue
        && out.stdout.strip_suffix(b"\n") == Some(hook_marker().as_bytes())
    {
        return Attempt::Failed(hook_refusal(true));
    }
    if out.stdout.is_empty() || !out.stdout.ends_with(b"\n") {
        return Attempt::Guard(String::new());
    }
    if let Some(id) = identity {
        if id.exited() {
            return Attempt::Failed(ObserveError::StaleTarget {
                observed: true,
                why: format!("the process of pane {} exited during the capture", pane.id),
            });
        }
    }
    Attempt::Rows(out.stdout)
}

fn transport(e: TmuxError) -> ObserveError {
    ObserveError::Transport {
        observed: e.possibly_sent(),
        why: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_queue_command_checks_every_session_then_the_guard() {
        let m = hook_marker();
        assert!(
            m.starts_with("tmux-mcp-hook-set-")
                && m.len() == 18 + 32
                && m.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'),
            "{m}"
        );
        let one = in_queue_argv(&["$1"], "%3", "G", "capture-pane -p -t %3");
        let mark = format!("list-commands -F {m} list-commands");
        assert_eq!(
            one,
            [
                "if-shell",
                "-F",
                "-t",
                "$1:.%3",
                "#{after-capture-pane}",
                &mark,
                "if-shell -F -t '$1:.%3' 'G' { capture-pane -p -t %3 }"
            ]
        );
        let two = in_queue_argv(&["$1", "$4"], "%3", "G", "C");
        assert_eq!(two[3], "$1:.%3");
        assert_eq!(two[6], format!("if-shell -F -t '$4:.%3' '#{{after-capture-pane}}' {{ {mark} }} {{ if-shell -F -t '$1:.%3' 'G' {{ C }} }}"));
        assert_eq!(
            guarded_argv(HookCheck::InQueue, &["$1"], "%3", "G", "C"),
            in_queue_argv(&["$1"], "%3", "G", "C")
        );
        // Before 3.5 the guard alone, in the same session's context as the capture.
        assert_eq!(
            guarded_argv(HookCheck::Preflight, &["$1", "$4"], "%3", "G", "C"),
            ["if-shell", "-F", "-t", "$1:.%3", "G", "C"]
        );
    }

    #[test]
    fn hook_check_by_version() {
        assert_eq!(HookCheck::for_version("3.3a"), HookCheck::Preflight);
        assert_eq!(HookCheck::for_version("3.4"), HookCheck::Preflight);
        assert_eq!(HookCheck::for_version("3.5a"), HookCheck::InQueue);
        assert_eq!(HookCheck::for_version("next-3.6"), HookCheck::InQueue);
        assert_eq!(HookCheck::for_version("3.7c"), HookCheck::InQueue);
    }
}
