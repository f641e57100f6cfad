//! A pane's log: what its shell's marks say, one mark at a time. [`apply`]
//! is the state machine: a pure function of the log, the mark and the
//! [`Facts`] the caller looked up (the process table and the clock, which
//! the store asks and a test fakes). It keeps the pane's shell (the one that
//! wrote its latest mark), its cwd, since when it is at its prompt, its last
//! [`KEEP`] commands, the last run the line editor took and the lines the
//! shell holds set aside.

use std::collections::VecDeque;

use super::line::{parse, Kind, Mark};

/// Commands kept per pane.
pub const KEEP: usize = 20;

/// What [`apply`] needs that the marks do not say, looked up by the caller:
/// the store asks the process table and the clock (`kernel::Kernel`), a test
/// answers with fakes.
pub trait Facts {
    /// Process `pid` as the process table shows it; `None` when it cannot
    /// be read (gone).
    fn process(&self, pid: u32) -> Option<Proc>;
    /// Whether `shell` still runs (`Shell::alive`).
    fn runs(&self, shell: &Shell) -> bool;
    /// The broker's clock (seconds since the epoch), for a mark without one.
    fn now(&self) -> f64;
}

/// What the process table says of a mark's writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proc {
    /// Its controlling terminal (a device number, as `st_rdev`).
    pub tty: u64,
    /// Its start time (clock ticks).
    pub start: u64,
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

/// What a command printed, as the screen and history hold it: the rows from
/// the one after its command line to the cursor when it ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Output {
    pub lines: Vec<String>,
    /// Lines dropped from the start: past `OUTPUT_BYTES`, or no longer in
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
    /// The screen and history were cleared before the broker read the
    /// command's line: [`Command::start_row`] is the first row after the
    /// clear.
    pub cleared_at_start: bool,
    /// What the prompt's row showed before the command (a one-line command
    /// not wrapped): output that ends without a newline has it drawn after.
    pub prompt_tail: Option<String>,
    pub output: Option<Output>,
    /// Why there is no output, when there is none.
    pub output_missing: Option<String>,
    /// The broker has read its rows (or given up: `output_missing`).
    pub output_done: bool,
}

/// How the broker found the row a command's output starts at.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    /// Below the command's line, seen on the row above; with what the
    /// prompt's row showed before the command, when known.
    BelowLine(Option<String>),
    /// At the cursor: the command's line was not seen.
    Cursor,
    /// At the first row after a clear that erased the command's line before
    /// the broker read it.
    Cleared,
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

/// One pane's state, as its marks made it.
#[derive(Debug, Default)]
pub struct PaneLog {
    shell: Option<Shell>,
    cwd: String,
    prompt_since: Option<f64>,
    /// The last [`KEEP`], oldest first; the follower fills in their rows.
    pub(super) commands: VecDeque<Command>,
    next_seq: u64,
    /// The last run the line editor took (`R`).
    taken: Option<Taken>,
    /// The shell's last `K`: its pid and the lines it holds set aside.
    held: Option<(u32, usize)>,
    /// `K` marks read.
    held_said: u64,
    /// `P` marks read.
    prompts: u64,
    /// The pane's terminal (its device number), once the broker said it.
    pub(super) tty: Option<u64>,
}

impl PaneLog {
    /// The pane's shell as the tools report it, if `alive` says it runs.
    pub fn pane_shell(&self, alive: impl Fn(&Shell) -> bool) -> Option<PaneShell> {
        let shell = self.shell.clone().filter(|s| alive(s))?;
        let running = self
            .commands
            .back()
            .filter(|c| c.ended.is_none() && c.shell_pid == shell.pid)
            .cloned();
        let last_status = self
            .commands
            .iter()
            .rev()
            .find(|c| c.ended.is_some())
            .and_then(|c| c.status);
        let since = match &running {
            Some(c) => c.started,
            None => self.prompt_since.unwrap_or(0.0),
        };
        Some(PaneShell {
            shell,
            cwd: self.cwd.clone(),
            running,
            since,
            last_status,
        })
    }

    pub fn command(&self, seq: u64) -> Option<&Command> {
        self.commands.iter().find(|c| c.seq == seq)
    }

    pub fn command_mut(&mut self, seq: u64) -> Option<&mut Command> {
        self.commands.iter_mut().find(|c| c.seq == seq)
    }

    /// The run `id`, if the line editor took it.
    pub fn taken(&self, id: &str) -> Option<Taken> {
        self.taken.clone().filter(|t| t.id == id)
    }

    /// What the shell `pid` says it holds set aside.
    pub fn held(&self, pid: u32) -> Held {
        Held {
            lines: self.held.filter(|h| h.0 == pid).map(|h| h.1),
            said: self.held_said,
            prompts: self.prompts,
        }
    }

    /// Takes back the end of run `id` (and of its command) that a `P` mark
    /// said; false when the run is not taken or not ended.
    pub fn reopen(&mut self, id: &str) -> bool {
        let Some(t) = self.taken.as_mut().filter(|t| t.id == id && t.done) else {
            return false;
        };
        t.done = false;
        t.status = None;
        if let Some(c) = t
            .seq
            .and_then(|seq| self.commands.iter_mut().find(|c| c.seq == seq))
        {
            c.ended = None;
            c.status = None;
            c.output = None;
            c.output_missing = None;
            c.output_done = false;
        }
        true
    }
}

/// Applies every mark in `bytes` (whole lines); how many ended a command.
pub fn apply_all(
    log: &mut PaneLog,
    bytes: &[u8],
    facts: &impl Facts,
    changed: &mut Changed,
) -> u64 {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(parse)
        .map(|m| apply(log, m, facts, changed))
        .filter(|ended| *ended)
        .count() as u64
}

/// Applies one mark; true when it ended a command. A mark from a process on
/// another terminal than the pane's is passed over ([`foreign`]).
pub fn apply(log: &mut PaneLog, m: Mark, facts: &impl Facts, changed: &mut Changed) -> bool {
    if foreign(log, &m, facts) {
        return false;
    }
    let time = m.time.unwrap_or_else(|| facts.now());
    // A script's /bin/sh is not the pane's shell.
    if m.kind != Kind::ScriptPid {
        enroll(log, &m, facts);
    }
    match m.kind {
        Kind::Init => log.prompt_since = Some(time),
        Kind::ScriptPid => script_pid(log, &m),
        Kind::ScriptEnd => script_end(log, &m),
        Kind::Run => log.taken = Some(taken(&m)),
        Kind::Command => started(log, m, time, changed),
        Kind::Held => {
            if let Ok(n) = m.text.parse() {
                log.held = Some((m.pid, n));
                log.held_said += 1;
            }
        }
        Kind::Prompt => return prompt(log, &m, time, changed),
    }
    false
}

/// Whether a mark comes from a process that is not on the pane's terminal:
/// a shell of another pane that inherited `TMUX_PANE`. A process gone before
/// its mark was read cannot be asked: it counts as foreign while the pane's
/// shell lives. A script's `/bin/sh` is judged by the run it names.
fn foreign(log: &PaneLog, m: &Mark, facts: &impl Facts) -> bool {
    let Some(tty) = log.tty else {
        return false;
    };
    if m.kind == Kind::ScriptPid || log.shell.as_ref().is_some_and(|s| s.pid == m.pid) {
        return false;
    }
    match facts.process(m.pid) {
        Some(p) => p.tty != tty,
        None => log.shell.as_ref().is_some_and(|s| facts.runs(s)),
    }
}

/// The mark's writer is the pane's shell: a new one (its start time looked
/// up), or the same enrolling again; its cwd, when it says one, the pane's.
fn enroll(log: &mut PaneLog, m: &Mark, facts: &impl Facts) {
    let same = log.shell.as_ref().is_some_and(|s| s.pid == m.pid);
    if m.kind == Kind::Init || !same {
        let version = match (m.kind, &log.shell) {
            (Kind::Init, _) => m.text.clone(),
            (_, Some(s)) if s.name == m.shell => s.version.clone(),
            _ => String::new(),
        };
        log.shell = Some(Shell {
            name: m.shell.clone(),
            version,
            pid: m.pid,
            start: facts.process(m.pid).map(|p| p.start),
        });
    }
    if !m.cwd.is_empty() {
        log.cwd = m.cwd.clone();
    }
}

/// `S`: the first says it; a later one for the same run is not the
/// wrapper's (marks are evidence; any program of the person's could write
/// one).
fn script_pid(log: &mut PaneLog, m: &Mark) {
    if let Some(t) = log
        .taken
        .as_mut()
        .filter(|t| t.script && t.id == m.text && t.script_pid.is_none())
    {
        t.script_pid = Some(m.pid);
    }
}

/// `X`: the script of run TEXT ended with STATUS.
fn script_end(log: &mut PaneLog, m: &Mark) {
    if let Some(t) = log
        .taken
        .as_mut()
        .filter(|t| t.script && !t.done && t.id == m.text)
    {
        t.status = m.status;
        t.done = true;
    }
}

/// `R`: the run the line editor took (TEXT: id, kept, how).
fn taken(m: &Mark) -> Taken {
    let mut f = m.text.split(' ');
    let id = f.next().unwrap_or_default().to_string();
    let kept = f.next().and_then(|k| k.parse().ok()).unwrap_or(0);
    let how = f.next().unwrap_or_default();
    Taken {
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
    }
}

/// `C`: a command started. A command of the same shell left open never
/// printed its end (the shell was killed, or a line it did not report
/// ended).
fn started(log: &mut PaneLog, m: Mark, time: f64, changed: &mut Changed) {
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
        cleared_at_start: false,
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
}

/// `P`: the shell is back at its prompt; true when that ended a command.
fn prompt(log: &mut PaneLog, m: &Mark, time: f64, changed: &mut Changed) -> bool {
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

/// Fake [`Facts`] for unit tests: no real process is asked.
#[cfg(test)]
pub(super) mod fake {
    use super::{Facts, Proc, Shell};
    use std::collections::HashMap;

    #[derive(Default)]
    pub struct World {
        /// The processes the table shows; any other pid is gone.
        pub procs: HashMap<u32, Proc>,
        /// The shells that run (by pid).
        pub running: Vec<u32>,
        pub clock: f64,
    }

    impl Facts for World {
        fn process(&self, pid: u32) -> Option<Proc> {
            self.procs.get(&pid).copied()
        }
        fn runs(&self, shell: &Shell) -> bool {
            self.running.contains(&shell.pid)
        }
        fn now(&self) -> f64 {
            self.clock
        }
    }

    /// A mark line of zsh in `/tmp` at 100.5.
    pub fn line(kind: &str, pid: u32, status: &str, text: &str) -> String {
        format!("{kind}\tzsh\t{pid}\t100.5\t{status}\t/tmp\t{text}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::fake::{line, World};
    use super::*;

    const TTY: u64 = 34816;

    fn mark(l: &str) -> Mark {
        parse(l.trim_end_matches('\n')).unwrap()
    }

    /// A pane on terminal [`TTY`] whose shell 10 enrolled.
    fn enrolled(world: &World) -> PaneLog {
        let mut log = PaneLog {
            tty: Some(TTY),
            ..PaneLog::default()
        };
        apply(
            &mut log,
            mark(&line("I", 10, "", "5.9")),
            world,
            &mut Changed::default(),
        );
        log
    }

    fn world() -> World {
        World {
            procs: [(10, Proc { tty: TTY, start: 7 })].into(),
            running: vec![10],
            clock: 42.0,
        }
    }

    #[test]
    fn a_shell_enrolls_with_its_start_time_from_the_facts() {
        let log = enrolled(&world());
        let s = log.shell.as_ref().unwrap();
        assert_eq!((s.name.as_str(), s.version.as_str()), ("zsh", "5.9"));
        assert_eq!((s.pid, s.start), (10, Some(7)));
        let gone = enrolled(&World::default());
        assert_eq!(gone.shell.as_ref().unwrap().start, None, "no start to read");
    }

    #[test]
    fn a_mark_from_another_terminal_is_ignored() {
        let mut w = world();
        w.procs.insert(
            20,
            Proc {
                tty: TTY + 1,
                start: 9,
            },
        );
        let mut log = enrolled(&w);
        let mut ch = Changed::default();
        assert!(!apply(
            &mut log,
            mark(&line("C", 20, "", "rm -rf x")),
            &w,
            &mut ch
        ));
        assert_eq!(
            log.shell.as_ref().unwrap().pid,
            10,
            "the pane's shell stays"
        );
        assert!(log.commands.is_empty() && ch == Changed::default());
        // On the pane's terminal, it is the pane's (a new shell).
        w.procs.insert(20, Proc { tty: TTY, start: 9 });
        apply(&mut log, mark(&line("C", 20, "", "ls")), &w, &mut ch);
        assert_eq!(log.shell.as_ref().unwrap().pid, 20);
        assert_eq!(ch.started, vec![1]);
    }

    #[test]
    fn a_gone_writer_is_ignored_while_the_pane_s_shell_lives() {
        let mut w = world();
        let mut log = enrolled(&w);
        let mut ch = Changed::default();
        apply(&mut log, mark(&line("C", 30, "", "x")), &w, &mut ch);
        assert_eq!(log.shell.as_ref().unwrap().pid, 10);
        assert!(log.commands.is_empty());
        // The pane's shell gone too: the gone writer was its next shell.
        w.running.clear();
        apply(&mut log, mark(&line("C", 30, "", "x")), &w, &mut ch);
        assert_eq!(log.shell.as_ref().unwrap().pid, 30);
        assert_eq!(log.commands.len(), 1);
    }

    #[test]
    fn a_script_s_sh_is_judged_by_its_run_not_its_terminal() {
        let w = world();
        let mut log = enrolled(&w);
        let mut ch = Changed::default();
        apply(
            &mut log,
            mark(&line("R", 10, "", "r1 0 script")),
            &w,
            &mut ch,
        );
        // Pid 40 is on no terminal the table shows: still the run's sh.
        apply(&mut log, mark(&line("S", 40, "", "r1")), &w, &mut ch);
        apply(&mut log, mark(&line("S", 41, "", "r1")), &w, &mut ch);
        // The shell says the script's end.
        apply(&mut log, mark(&line("X", 10, "3", "r1")), &w, &mut ch);
        let t = log.taken("r1").unwrap();
        assert_eq!(t.script_pid, Some(40), "the first S says it");
        assert_eq!((t.done, t.status), (true, Some(3)));
        assert_eq!(
            log.shell.as_ref().unwrap().pid,
            10,
            "a script is not the shell"
        );
    }

    #[test]
    fn a_run_s_command_and_prompt_end_it_and_reopen_takes_that_back() {
        let w = world();
        let mut log = enrolled(&w);
        let mut ch = Changed::default();
        apply(&mut log, mark(&line("R", 10, "", "r2 5 1")), &w, &mut ch);
        let t = log.taken("r2").unwrap();
        assert!(t.accepted && !t.busy && t.kept == 5 && t.refused.is_none());
        apply(&mut log, mark(&line("C", 10, "", "make")), &w, &mut ch);
        assert!(apply(
            &mut log,
            mark(&line("P", 10, "2", "r2")),
            &w,
            &mut ch
        ));
        let t = log.taken("r2").unwrap();
        assert_eq!((t.seq, t.status, t.done), (Some(1), Some(2), true));
        assert_eq!(ch.ended, vec![1]);
        assert!(log.reopen("r2"));
        assert!(!log.reopen("r2"), "not ended any more");
        assert_eq!(log.command(1).unwrap().ended, None);
        assert!(log.taken("other").is_none());
        let r = "R\tbash\t10\t1.0\t\t/\tr3 0 refused:pager";
        apply(&mut log, mark(r), &w, &mut ch);
        assert_eq!(log.taken("r3").unwrap().refused.as_deref(), Some("pager"));
    }

    #[test]
    fn a_mark_without_a_time_takes_the_caller_s_clock() {
        let w = world();
        let mut log = enrolled(&w);
        apply(
            &mut log,
            mark("C\tzsh\t10\t\t\t/srv\tsleep 1"),
            &w,
            &mut Changed::default(),
        );
        let s = log.pane_shell(|_| true).unwrap();
        assert_eq!(s.running.unwrap().started, 42.0);
        assert_eq!(s.cwd, "/srv");
        assert!(log.pane_shell(|_| false).is_none(), "a dead shell");
    }

    #[test]
    fn a_pane_keeps_its_last_commands() {
        let w = world();
        let mut log = enrolled(&w);
        let mut ch = Changed::default();
        for i in 0..KEEP + 5 {
            apply(
                &mut log,
                mark(&line("C", 10, "", &format!("c{i}"))),
                &w,
                &mut ch,
            );
            apply(&mut log, mark(&line("P", 10, "0", "")), &w, &mut ch);
        }
        assert_eq!(log.commands.len(), KEEP);
        assert_eq!(log.commands.front().unwrap().seq, 6);
        assert_eq!(ch.ended.len(), KEEP + 5);
        let s = log.pane_shell(|_| true).unwrap();
        assert_eq!((s.running, s.last_status, s.since), (None, Some(0), 100.5));
    }
}
