//! What enrolled shells say (`tmux-mcp shell-init`): OSC 133's marks,
//! written as lines to a file per pane in the server's marks directory
//! (`BrokerPaths::marks`), read here into each pane's shell and its recent
//! commands.
//!
//! A line is `KIND \t SHELL \t PID \t TIME \t STATUS \t CWD \t TEXT`: `I` the
//! shell enrolled (TEXT its version), `C` a command line started (TEXT the
//! line), `P` the shell is back at its prompt (STATUS the last command's
//! `$?`; TEXT the run's id when the command was a broker's run), `R` the
//! line editor took a broker's run (TEXT: its id, the length of the
//! person's line it set aside, and 1 when the shell pressed accept-line
//! itself, 0 when the broker must; `busy` or `refused:WHY` when it left its
//! editor untouched), `K` what the shell holds set aside of the person's
//! lines (TEXT: how many; bash and fish, after each take that set a line
//! aside and each give-back chord, whether it gave one back or not). TIME is the shell's clock (`$EPOCHREALTIME`) where it has one,
//! else the broker's when it read the line; CWD and TEXT escape `\`, tab,
//! LF and CR with a backslash. The shells append with builtins only, so
//! nothing here ever asks them or tmux anything.
//!
//! Bounds: [`KEEP`] commands per pane, each command's output at most
//! [`OUTPUT_BYTES`] (its tail), and [`TOTAL_OUTPUT`] over all panes (the
//! oldest outputs go first); a pane file is read from where the last read
//! stopped and set aside once it grows past [`ROTATE`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Commands kept per pane.
pub const KEEP: usize = 20;
/// A command's output kept (the tail).
pub const OUTPUT_BYTES: usize = 65_536;
/// Outputs kept over all panes.
pub const TOTAL_OUTPUT: usize = 8 << 20;
/// A pane file's size past which it is set aside after a read.
const ROTATE: u64 = 256 << 10;
/// At most this much of a pane file is read at once.
const READ_MAX: u64 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Init,
    Command,
    Prompt,
    Run,
    /// A script's `/bin/sh` said its pid (`S`; TEXT the run's id).
    ScriptPid,
    /// A script ended (`X`; STATUS its `$?`, TEXT the run's id).
    ScriptEnd,
    /// How many of the person's lines the shell holds set aside (`K`).
    Held,
}

/// One line a shell wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub kind: Kind,
    pub shell: String,
    pub pid: u32,
    pub time: Option<f64>,
    pub status: Option<i32>,
    pub cwd: String,
    pub text: String,
}

pub fn parse(line: &str) -> Option<Mark> {
    let f: Vec<&str> = line.split('\t').collect();
    let [kind, shell, pid, time, status, cwd, text] = f[..] else {
        return None;
    };
    let kind = match kind {
        "I" => Kind::Init,
        "C" => Kind::Command,
        "P" => Kind::Prompt,
        "R" => Kind::Run,
        "S" => Kind::ScriptPid,
        "X" => Kind::ScriptEnd,
        "K" => Kind::Held,
        _ => return None,
    };
    Some(Mark {
        kind,
        shell: shell.to_string(),
        pid: pid.parse().ok()?,
        // bash writes $EPOCHREALTIME with the locale's decimal point.
        time: time.replace(',', ".").parse().ok(),
        status: status.parse().ok(),
        cwd: unescape(cwd),
        text: unescape(text),
    })
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The enrolled shell of a pane: the one that wrote its latest mark.
#[derive(Debug, Clone, PartialEq)]
pub struct Shell {
    pub name: String,
    pub version: String,
    pub pid: u32,
    /// The process's start time (clock ticks) when its first mark was read:
    /// what tells it from a later process given the same pid.
    pub start: Option<u64>,
}

impl Shell {
    /// Whether the shell that wrote the marks still runs: its pid names a
    /// process that is not a zombie (killed, not yet reaped by its parent)
    /// and that started when the shell did. Where the process table cannot
    /// be read, whether the pid exists.
    pub fn alive(&self) -> bool {
        process_runs(self.pid, self.start)
    }
}

/// Whether `pid` is still the process that started at `start` (clock
/// ticks; `None`: never read) and runs: not a zombie, not a later process
/// given the pid. Where the process table cannot be read, whether the pid
/// exists.
pub fn process_runs(pid: u32, start: Option<u64>) -> bool {
    use tmux_mcp_core::platform::process_table;
    match process_table::stat(pid) {
        Ok(st) => tmux_mcp_core::process::runs_as(&st, start),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => pid_alive(pid),
        Err(_) => false,
    }
}

/// What a command printed, as the screen and history hold it: the rows from
/// the one after its command line to the cursor when it ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Output {
    pub lines: Vec<String>,
    /// Lines dropped from the start: past [`OUTPUT_BYTES`], or no longer in
    /// the pane's history when the command ended.
    pub dropped: usize,
    /// Why the rows are not certain, when they are not.
    pub note: Option<String>,
    /// The last line ended without a newline (the prompt was drawn after it
    /// on its row, or the shell marked it: zsh's `PROMPT_SP`, fish's `⏎`).
    pub unterminated: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// Counts the pane's commands from 1 (per broker).
    pub seq: u64,
    pub text: String,
    pub cwd: String,
    pub shell_pid: u32,
    pub started: f64,
    pub ended: Option<f64>,
    pub status: Option<i32>,
    /// The grid row (history and screen, absolute) the output starts at.
    pub start_row: Option<u64>,
    /// The command's line was seen on the row above [`Command::start_row`]
    /// (else that row is the cursor's when it started).
    pub line_above: bool,
    /// What the prompt's row showed before the command (a one-line command
    /// not wrapped): output that ends without a newline has it drawn after.
    pub prompt_tail: Option<String>,
    pub output: Option<Output>,
    /// Why there is no output, when there is none.
    pub output_missing: Option<String>,
    /// The broker has read its rows (or given up: `output_missing`).
    pub output_done: bool,
}

#[derive(Debug, Default)]
struct PaneLog {
    offset: u64,
    shell: Option<Shell>,
    cwd: String,
    prompt_since: Option<f64>,
    commands: VecDeque<Command>,
    next_seq: u64,
    /// What reads found and the follower has not handled yet.
    pending: Changed,
    /// The last run the line editor took (`R`).
    taken: Option<Taken>,
    /// The shell's last `K`: its pid and the lines it holds set aside.
    held: Option<(u32, usize)>,
    /// `K` marks read.
    held_said: u64,
    /// `P` marks read.
    prompts: u64,
    /// The pane's terminal (its device number), once the broker said it.
    tty: Option<u64>,
}

/// What a shell says it holds set aside of the person's lines, and how far
/// it got: a give-back waits for the shell's next prompt while one is held
/// (the person's own line was in the editor when the last was tried).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// The lines set aside, as the shell's last `K` said; `None` when it
    /// never said (a snippet from before `K`, or zsh, which gives its lines
    /// back itself).
    pub lines: Option<usize>,
    /// `K` marks read: one more once the shell answered a give-back chord.
    pub said: u64,
    /// `P` marks read: one more at each prompt the shell reports.
    pub prompts: u64,
}

/// A broker's run as the line editor took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub id: String,
    pub shell_pid: u32,
    /// Characters of the person's line set aside (to give back).
    pub kept: usize,
    /// The shell pressed accept-line itself.
    pub accepted: bool,
    /// A script (tmux_run): run by the binding, never put in the editor.
    pub script: bool,
    /// Refused: the editor held the person's text (a script needs it empty).
    pub busy: bool,
    /// Refused by the shell, which left its editor untouched: why
    /// (`continuation`: not at the primary prompt; `prompt-unknown`: it
    /// cannot tell; `comments`: the line's `#` would not be a comment
    /// there; `pager`, `search`: fish's completion pager or history search).
    pub refused: Option<String>,
    /// The script's `/bin/sh`, once it said so.
    pub script_pid: Option<u32>,
    /// The run's command, once the shell said it started (`C`).
    pub seq: Option<u64>,
    /// The shell is back at its prompt after the run: `$?`.
    pub status: Option<i32>,
    pub done: bool,
}

/// A pane's shell as the tools report it.
#[derive(Debug, Clone, PartialEq)]
pub struct PaneShell {
    pub shell: Shell,
    pub cwd: String,
    /// The command running, if the shell is not at its prompt.
    pub running: Option<Command>,
    /// Since when it is at its prompt or runs `running`.
    pub since: f64,
    /// `$?` of the last command that ended.
    pub last_status: Option<i32>,
}

/// What one read of a pane's file changed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Changed {
    /// A command started: its seq (to find its first output row).
    pub started: Vec<u64>,
    /// A command ended: its seq (to keep what it printed).
    pub ended: Vec<u64>,
}

#[derive(Default)]
pub struct Marks {
    /// The directory and what it and its parent were when the broker made it.
    #[allow(clippy::type_complexity)]
    dir: Mutex<
        Option<(
            PathBuf,
            Result<(tmux_mcp_core::paths::DirId, tmux_mcp_core::paths::DirId), String>,
        )>,
    >,
    panes: Mutex<HashMap<String, PaneLog>>,
    /// Bumped whenever a command ends (with the pane it ended in), so waits
    /// on that pane wake at once.
    ends: tokio::sync::watch::Sender<(u64, String)>,
    /// Bumped whenever anything here changes (a mark read, rows kept).
    changed: tokio::sync::watch::Sender<u64>,
    /// One broker run at a time per pane's shell.
    runs: Mutex<HashMap<String, std::sync::Arc<tokio::sync::Mutex<()>>>>,
    /// The panes whose shell a give-back waits on (one per pane).
    givers: Mutex<HashSet<String>>,
}

impl Marks {
    /// Where the shells write (set once the broker made the directory).
    pub fn set_dir(&self, dir: PathBuf) {
        use tmux_mcp_core::paths::DirId;
        let ids = DirId::of_private(&dir).and_then(|own| {
            let parent = dir.parent().ok_or("no parent")?;
            Ok((own, DirId::of_private(parent)?))
        });
        *self.dir.lock().unwrap() = Some((dir, ids));
    }

    /// The marks directory, checked at each use: it and the runtime
    /// directory holding it must still be the private ones the broker made
    /// (a directory removed and made again, by anyone, is never written
    /// into, nor is a request ever read back from it). `Err` says why not.
    pub fn dir(&self) -> Result<PathBuf, String> {
        let held = self.dir.lock().unwrap().clone();
        let Some((dir, ids)) = held else {
            return Err("the broker has no marks directory (shell integration is off)".into());
        };
        let (own, parent) = ids?;
        parent.check(dir.parent().unwrap_or(&dir))?;
        own.check(&dir)?;
        Ok(dir)
    }

    /// Command ends as they come: their count and the pane of the last.
    pub fn ends(&self) -> tokio::sync::watch::Receiver<(u64, String)> {
        self.ends.subscribe()
    }

    /// Every change, as it comes (the count of them).
    pub fn changed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// The lock a broker run holds on `pane`'s shell from sending its
    /// command to the command's end.
    pub fn run_lock(&self, pane: &str) -> std::sync::Arc<tokio::sync::Mutex<()>> {
        self.runs
            .lock()
            .unwrap()
            .entry(pane.to_string())
            .or_default()
            .clone()
    }

    /// Claims the give-back of `pane`'s held lines; false when another
    /// holds it. Released with [`Marks::release_giver`].
    pub fn claim_giver(&self, pane: &str) -> bool {
        self.givers.lock().unwrap().insert(pane.to_string())
    }

    pub fn release_giver(&self, pane: &str) {
        self.givers.lock().unwrap().remove(pane);
    }

    /// The run `id` if the line editor of `pane` took it.
    pub fn taken(&self, pane: &str, id: &str) -> Option<Taken> {
        self.read(pane);
        let panes = self.panes.lock().unwrap();
        panes.get(pane)?.taken.clone().filter(|t| t.id == id)
    }

    /// Takes back the end of run `id` (and of its command) that a `P` mark
    /// said, when the kernel shows the command still runs: a mark another
    /// program wrote. The shell's own `P` ends them again.
    pub fn reopen(&self, pane: &str, id: &str) {
        let mut panes = self.panes.lock().unwrap();
        let Some(log) = panes.get_mut(pane) else {
            return;
        };
        let Some(t) = log.taken.as_mut().filter(|t| t.id == id && t.done) else {
            return;
        };
        t.done = false;
        t.status = None;
        if let Some(c) = t
            .seq
            .and_then(|seq| log.commands.iter_mut().find(|c| c.seq == seq))
        {
            c.ended = None;
            c.status = None;
            c.output = None;
            c.output_missing = None;
            c.output_done = false;
        }
        drop(panes);
        self.bump();
    }

    /// What the shell `pid` of `pane` says it holds set aside (read first).
    pub fn held(&self, pane: &str, pid: u32) -> Held {
        self.read(pane);
        let panes = self.panes.lock().unwrap();
        panes.get(pane).map_or_else(Held::default, |l| Held {
            lines: l.held.filter(|h| h.0 == pid).map(|h| h.1),
            said: l.held_said,
            prompts: l.prompts,
        })
    }

    /// The pane ids with a marks file.
    pub fn files(&self) -> Vec<String> {
        let Ok(dir) = self.dir() else {
            return Vec::new();
        };
        let Ok(rd) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with('%') && n[1..].bytes().all(|b| b.is_ascii_digit()))
            .collect()
    }

    /// What reads of `pane` found that the follower has not handled.
    pub fn take_pending(&self, pane: &str) -> Changed {
        let mut panes = self.panes.lock().unwrap();
        panes
            .get_mut(pane)
            .map(|l| std::mem::take(&mut l.pending))
            .unwrap_or_default()
    }

    /// Reads what `pane`'s shell wrote since the last read (whoever reads:
    /// a tool's or the follower's; what changed waits in `take_pending`).
    /// The pane's terminal device (`st_rdev`): a mark from a process on
    /// another terminal (a shell of another pane that inherited
    /// `TMUX_PANE`) is not this pane's.
    pub fn set_tty(&self, pane: &str, rdev: u64) {
        self.panes
            .lock()
            .unwrap()
            .entry(pane.to_string())
            .or_default()
            .tty = Some(rdev);
    }

    pub fn read(&self, pane: &str) {
        let Ok(dir) = self.dir() else {
            return;
        };
        let path = dir.join(pane);
        let mut panes = self.panes.lock().unwrap();
        let log = panes.entry(pane.to_string()).or_default();
        let mut changed = std::mem::take(&mut log.pending);
        let Some(bytes) = read_from(&path, &mut log.offset) else {
            log.pending = changed;
            return;
        };
        let mut ended = apply_all(log, &bytes, &mut changed);
        if log.offset > ROTATE {
            // The shell opens the file by name for every mark, so after the
            // rename its next mark starts a new file; what it wrote between
            // our read and the rename is read from the old one.
            let old = dir.join(format!("{pane}.old"));
            if std::fs::rename(&path, &old).is_ok() {
                if let Some(rest) = read_from(&old, &mut log.offset) {
                    ended += apply_all(log, &rest, &mut changed);
                }
                let _ = std::fs::remove_file(&old);
                log.offset = 0;
            }
        }
        log.pending = changed;
        drop(panes);
        if ended > 0 {
            self.ends.send_modify(|(n, p)| {
                *n += ended;
                *p = pane.to_string();
            });
        }
        // `bytes` held at least one whole line: something was read.
        self.bump();
    }

    /// The pane's enrolled shell, if a live one wrote its marks.
    pub fn shell(&self, pane: &str) -> Option<PaneShell> {
        self.shell_if(pane, Shell::alive)
    }

    fn shell_if(&self, pane: &str, alive: impl Fn(&Shell) -> bool) -> Option<PaneShell> {
        // Only a pane whose shell wrote is read again here (the follower
        // reads every new file as it is written): a listing of a thousand
        // panes opens no file for those that never enrolled.
        if self.panes.lock().unwrap().contains_key(pane) {
            self.read(pane);
        }
        let panes = self.panes.lock().unwrap();
        let log = panes.get(pane)?;
        let shell = log.shell.clone().filter(|s| alive(s))?;
        let running = log
            .commands
            .back()
            .filter(|c| c.ended.is_none() && c.shell_pid == shell.pid)
            .cloned();
        let last_status = log
            .commands
            .iter()
            .rev()
            .find(|c| c.ended.is_some())
            .and_then(|c| c.status);
        let since = match &running {
            Some(c) => c.started,
            None => log.prompt_since.unwrap_or(0.0),
        };
        Some(PaneShell {
            shell,
            cwd: log.cwd.clone(),
            running,
            since,
            last_status,
        })
    }

    /// The pane's commands, newest first.
    pub fn commands(&self, pane: &str) -> Vec<Command> {
        self.read(pane);
        let panes = self.panes.lock().unwrap();
        panes
            .get(pane)
            .map(|l| l.commands.iter().rev().cloned().collect())
            .unwrap_or_default()
    }

    pub fn command(&self, pane: &str, seq: u64) -> Option<Command> {
        let panes = self.panes.lock().unwrap();
        panes
            .get(pane)?
            .commands
            .iter()
            .find(|c| c.seq == seq)
            .cloned()
    }

    /// Where the command's output starts: `row`; `line` when its command
    /// line was seen above it, with the prompt before it when known.
    pub fn set_start_row(&self, pane: &str, seq: u64, row: u64, line: Option<Option<String>>) {
        if let Some(c) = self
            .panes
            .lock()
            .unwrap()
            .get_mut(pane)
            .and_then(|l| l.commands.iter_mut().find(|c| c.seq == seq))
        {
            c.start_row = Some(row);
            c.line_above = line.is_some();
            c.prompt_tail = line.flatten();
        }
        self.bump();
    }

    /// Keeps what a command printed (its tail), within the bounds.
    pub fn set_output(&self, pane: &str, seq: u64, out: Result<Output, String>) {
        let mut panes = self.panes.lock().unwrap();
        // Not ended (any more: `reopen`): rows read for an end that was not
        // the shell's are not its output.
        let Some(c) = panes
            .get_mut(pane)
            .and_then(|l| l.commands.iter_mut().find(|c| c.seq == seq))
            .filter(|c| c.ended.is_some())
        else {
            return;
        };
        match out {
            Ok(mut o) => {
                let mut size: usize = o.lines.iter().map(|l| l.len() + 1).sum();
                while size > OUTPUT_BYTES && !o.lines.is_empty() {
                    size -= o.lines.remove(0).len() + 1;
                    o.dropped += 1;
                }
                c.output = Some(o);
            }
            Err(why) => c.output_missing = Some(why),
        }
        c.output_done = true;
        // The oldest outputs go first when all of them pass the bound.
        let mut all: Vec<(f64, String, u64, usize)> = panes
            .iter()
            .flat_map(|(p, l)| {
                l.commands.iter().filter_map(move |c| {
                    let o = c.output.as_ref()?;
                    Some((
                        c.ended.unwrap_or(0.0),
                        p.clone(),
                        c.seq,
                        o.lines.iter().map(|l| l.len() + 1).sum(),
                    ))
                })
            })
            .collect();
        let mut total: usize = all.iter().map(|a| a.3).sum();
        self.bump();
        if total <= TOTAL_OUTPUT {
            return;
        }
        all.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (_, p, seq, size) in all {
            if total <= TOTAL_OUTPUT {
                break;
            }
            if let Some(c) = panes
                .get_mut(&p)
                .and_then(|l| l.commands.iter_mut().find(|c| c.seq == seq))
            {
                c.output = None;
                c.output_missing =
                    Some("dropped: the broker keeps 8 MiB of command output over all panes".into());
                total -= size;
            }
        }
    }

    /// A pane went: its marks go with it (file and memory).
    pub fn forget(&self, pane: &str) {
        self.panes.lock().unwrap().remove(pane);
        if let Ok(dir) = self.dir() {
            let _ = std::fs::remove_file(dir.join(pane));
        }
    }
}

/// Whether process `pid` exists (signal 0: nothing is sent).
pub fn pid_alive(pid: u32) -> bool {
    tmux_mcp_core::sys::pid_alive(pid)
}

/// The bytes of `path` from `*offset` to its last complete line; the offset
/// moves past them. A file shorter than the offset was replaced: read anew.
fn read_from(path: &Path, offset: &mut u64) -> Option<Vec<u8>> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    if len < *offset {
        *offset = 0;
    }
    if len == *offset {
        return None;
    }
    f.seek(SeekFrom::Start(*offset)).ok()?;
    let mut buf = Vec::new();
    f.take(READ_MAX).read_to_end(&mut buf).ok()?;
    let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
        // A line longer than a whole read (no snippet writes one: a forger
        // or a broken file) is passed over, so the marks after it are read;
        // its tail, up to the next line break, parses as no mark.
        if buf.len() as u64 == READ_MAX {
            *offset += READ_MAX;
        }
        return None;
    };
    let end = end + 1;
    buf.truncate(end);
    *offset += end as u64;
    Some(buf)
}

/// Applies every mark in `bytes` (whole lines); how many ended a command.
fn apply_all(log: &mut PaneLog, bytes: &[u8], changed: &mut Changed) -> u64 {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(parse)
        .map(|m| apply(log, m, changed))
        .filter(|ended| *ended)
        .count() as u64
}

/// Whether a mark comes from a process that is not on the pane's terminal:
/// a shell of another pane that inherited `TMUX_PANE`. A process gone before
/// its mark was read cannot be asked: it counts as foreign while the pane's
/// shell lives. A script's `/bin/sh` is judged by the run it names.
fn foreign(log: &PaneLog, m: &Mark) -> bool {
    let Some(tty) = log.tty else {
        return false;
    };
    if m.kind == Kind::ScriptPid || log.shell.as_ref().is_some_and(|s| s.pid == m.pid) {
        return false;
    }
    match tmux_mcp_core::platform::process_table::stat(m.pid) {
        Ok(st) => st.tty_nr != tty,
        Err(_) => log.shell.as_ref().is_some_and(Shell::alive),
    }
}

/// Applies one mark; true when it ended a command.
fn apply(log: &mut PaneLog, m: Mark, changed: &mut Changed) -> bool {
    if foreign(log, &m) {
        return false;
    }
    let time = m.time.unwrap_or_else(now);
    let same = log.shell.as_ref().is_some_and(|s| s.pid == m.pid);
    // A script's /bin/sh is not the pane's shell.
    if m.kind != Kind::ScriptPid && (m.kind == Kind::Init || !same) {
        let version = match (m.kind, &log.shell) {
            (Kind::Init, _) => m.text.clone(),
            (_, Some(s)) if s.name == m.shell => s.version.clone(),
            _ => String::new(),
        };
        log.shell = Some(Shell {
            name: m.shell.clone(),
            version,
            pid: m.pid,
            start: tmux_mcp_core::platform::process_table::stat(m.pid)
                .ok()
                .map(|st| st.start_ticks),
        });
    }
    if !m.cwd.is_empty() && m.kind != Kind::ScriptPid {
        log.cwd = m.cwd.clone();
    }
    match m.kind {
        Kind::Init => {
            log.prompt_since = Some(time);
            false
        }
        Kind::ScriptPid => {
            // The first says it: a later one for the same run is not the
            // wrapper's (marks are evidence; any program of the person's
            // could write one).
            if let Some(t) = log
                .taken
                .as_mut()
                .filter(|t| t.script && t.id == m.text && t.script_pid.is_none())
            {
                t.script_pid = Some(m.pid);
            }
            false
        }
        Kind::ScriptEnd => {
            if let Some(t) = log
                .taken
                .as_mut()
                .filter(|t| t.script && !t.done && t.id == m.text)
            {
                t.status = m.status;
                t.done = true;
            }
            false
        }
        Kind::Run => {
            let mut f = m.text.split(' ');
            let id = f.next().unwrap_or_default().to_string();
            let kept = f.next().and_then(|k| k.parse().ok()).unwrap_or(0);
            let how = f.next().unwrap_or_default();
            log.taken = Some(Taken {
                id,
                shell_pid: m.pid,
                kept,
                accepted: how == "1",
                script: how == "script",
                busy: how == "busy",
                refused: how.strip_prefix("refused:").map(str::to_string),
                script_pid: None,
                seq: None,
                status: None,
                done: false,
            });
            false
        }
        Kind::Command => {
            // A command of the same shell left open never printed its end
            // (the shell was killed, or a line it did not report ended).
            log.next_seq += 1;
            log.commands.push_back(Command {
                seq: log.next_seq,
                text: m.text,
                cwd: m.cwd,
                shell_pid: m.pid,
                started: time,
                ended: None,
                status: None,
                start_row: None,
                line_above: false,
                prompt_tail: None,
                output: None,
                output_missing: None,
                output_done: false,
            });
            while log.commands.len() > KEEP {
                log.commands.pop_front();
            }
            changed.started.push(log.next_seq);
            if let Some(t) = log
                .taken
                .as_mut()
                .filter(|t| !t.done && t.seq.is_none() && t.shell_pid == m.pid)
            {
                t.seq = Some(log.next_seq);
            }
            false
        }
        Kind::Held => {
            if let Ok(n) = m.text.parse() {
                log.held = Some((m.pid, n));
                log.held_said += 1;
            }
            false
        }
        Kind::Prompt => {
            log.prompt_since = Some(time);
            log.prompts += 1;
            if let Some(t) = log
                .taken
                .as_mut()
                .filter(|t| !t.done && !m.text.is_empty() && t.id == m.text)
            {
                t.status = m.status;
                t.done = true;
            }
            let Some(c) = log
                .commands
                .back_mut()
                .filter(|c| c.ended.is_none() && c.shell_pid == m.pid)
            else {
                return false;
            };
            c.ended = Some(time);
            c.status = m.status;
            changed.ended.push(c.seq);
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: &str, pid: u32, status: &str, text: &str) -> String {
        format!("{kind}\tzsh\t{pid}\t100.5\t{status}\t/tmp\t{text}\n")
    }

    #[test]
    fn a_line_parses_with_its_escapes_and_a_comma_clock() {
        let m = parse("C\tbash\t42\t1700000000,25\t\t/a\\tb\tprintf 'x\\ny' \\\\ z").unwrap();
        assert_eq!(m.kind, Kind::Command);
        assert_eq!(m.pid, 42);
        assert_eq!(m.time, Some(1_700_000_000.25));
        assert_eq!(m.status, None);
        assert_eq!(m.cwd, "/a\tb");
        assert_eq!(m.text, "printf 'x\ny' \\ z");
        assert_eq!(parse("Z\tzsh\t1\t\t\t\t"), None, "an unknown kind");
        assert_eq!(parse("P\tzsh\t1\t\t0\t/"), None, "a field short");
    }

    #[test]
    fn a_line_longer_than_a_read_is_passed_over() {
        let dir = std::env::temp_dir().join(format!("tmcp-long-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("%1");
        let mut text = "C\tbash\t9\t\t\t/\t".to_string() + &"x".repeat(READ_MAX as usize + 500_000);
        text += "\n";
        text += &line("P", 9, "3", "");
        std::fs::write(&file, text).unwrap();
        let mut log = PaneLog::default();
        let mut changed = Changed::default();
        let mut reads = 0;
        while let Some(bytes) = read_from(&file, &mut log.offset).or_else(|| {
            reads += 1;
            (reads < 4).then(Vec::new)
        }) {
            apply_all(&mut log, &bytes, &mut changed);
        }
        assert_eq!(
            log.shell.as_ref().map(|s| s.pid),
            Some(9),
            "the mark after the long line was read"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn marks_make_commands_with_status_and_the_shell_state() {
        // Private, as the broker's runtime and marks directories are.
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir().join(format!("tmcp-marks-{}", std::process::id()));
        let dir = base.join("srv.sh");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(&dir)
            .unwrap();
        let marks = Marks::default();
        marks.set_dir(dir.clone());
        assert_eq!(marks.dir(), Ok(dir.clone()));
        let file = dir.join("%7");
        let mut text = line("I", 9, "", "5.9") + &line("P", 9, "0", "");
        text += &line("C", 9, "", "false");
        // A partial line is left for the next read.
        std::fs::write(&file, text + "P\tzsh\t9").unwrap();
        let ends = marks.ends();
        assert!(marks.shell_if("%7", |_| true).is_none(), "not read yet");
        marks.read("%7");
        assert_eq!(marks.take_pending("%7").started, vec![1]);
        assert_eq!(marks.take_pending("%7"), Changed::default());
        let s = marks.shell_if("%7", |_| true).unwrap();
        assert_eq!(s.shell.name, "zsh");
        assert_eq!(s.shell.version, "5.9");
        assert_eq!(s.running.as_ref().unwrap().text, "false");
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        f.write_all(b"\t100.5\t1\t/tmp\t\n").unwrap();
        assert!(
            marks.shell_if("%7", |_| false).is_none(),
            "a dead shell is not enrolled"
        );
        let s = marks.shell_if("%7", |_| true).unwrap();
        assert!(s.running.is_none());
        assert_eq!(s.last_status, Some(1));
        assert_eq!(
            *ends.borrow(),
            (1, "%7".to_string()),
            "the end is announced"
        );
        let cmds = marks.commands("%7");
        assert_eq!(cmds.len(), 1);
        assert_eq!((cmds[0].status, cmds[0].ended), (Some(1), Some(100.5)));
        marks.forget("%7");
        assert!(!file.exists());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_shell_is_alive_while_its_own_process_runs_unreaped_or_not() {
        use tmux_mcp_core::platform::process_table;
        let shell_of = |pid: u32, start: Option<u64>| Shell {
            name: "zsh".into(),
            version: String::new(),
            pid,
            start,
        };
        let mut running = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = running.id();
        let start = process_table::stat(pid).unwrap().start_ticks;
        assert!(shell_of(pid, Some(start)).alive(), "a running shell");
        assert!(
            shell_of(pid, None).alive(),
            "one first seen without its start"
        );
        assert!(
            !shell_of(pid, Some(start + 1)).alive(),
            "another process that has the pid now"
        );
        // Killed and not yet reaped: a zombie is not a running shell (kill(pid, 0) says it exists).
        running.kill().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        // (macOS's table may not list a zombie at all: that reads as gone.)
        while matches!(process_table::stat(pid).map(|st| st.state), Ok(c) if c != 'Z') {
            assert!(
                std::time::Instant::now() < deadline,
                "the child never became a zombie"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(pid_alive(pid), "kill(pid, 0) takes the zombie for alive");
        assert!(!shell_of(pid, Some(start)).alive(), "a zombie");
        running.wait().unwrap();
        assert!(!shell_of(pid, Some(start)).alive(), "reaped");
    }

    #[test]
    fn held_lines_are_the_shell_s_last_word() {
        let marks = Marks::default();
        let mut log = PaneLog::default();
        let mut ch = Changed::default();
        apply(&mut log, parse(&line("I", 1, "", "5.2")).unwrap(), &mut ch);
        marks.panes.lock().unwrap().insert("%1".into(), log);
        let held = |marks: &Marks| marks.held("%1", 1);
        assert_eq!(held(&marks), Held::default(), "never said");
        let mut add = |l: String| {
            let mut panes = marks.panes.lock().unwrap();
            apply(
                panes.get_mut("%1").unwrap(),
                parse(l.trim_end_matches('\n')).unwrap(),
                &mut ch,
            );
        };
        add(line("K", 1, "", "1"));
        add(line("P", 1, "0", ""));
        add(line("K", 1, "", "not a count"));
        assert_eq!(
            held(&marks),
            Held {
                lines: Some(1),
                said: 1,
                prompts: 1
            }
        );
        add(line("K", 1, "", "0"));
        assert_eq!(held(&marks).lines, Some(0));
        assert_eq!(marks.held("%1", 2).lines, None, "another shell's word");
    }

    #[test]
    fn outputs_keep_their_tail_within_the_bound() {
        let marks = Marks::default();
        let mut log = PaneLog::default();
        let mut ch = Changed::default();
        apply(&mut log, parse(&line("C", 1, "", "yes")).unwrap(), &mut ch);
        apply(&mut log, parse(&line("P", 1, "0", "")).unwrap(), &mut ch);
        marks.panes.lock().unwrap().insert("%1".into(), log);
        let lines: Vec<String> = (0..20_000).map(|i| format!("line {i}")).collect();
        marks.set_output(
            "%1",
            1,
            Ok(Output {
                lines,
                dropped: 0,
                note: None,
                unterminated: false,
            }),
        );
        let c = marks.command("%1", 1).unwrap();
        let o = c.output.unwrap();
        assert_eq!(o.lines.last().unwrap(), "line 19999");
        assert!(o.lines.iter().map(|l| l.len() + 1).sum::<usize>() <= OUTPUT_BYTES);
        assert_eq!(o.dropped + o.lines.len(), 20_000);
    }
}
