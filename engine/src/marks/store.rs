//! The store: every pane's log, read from its file in the server's marks
//! directory, and what the broker's tools and follower share about them
//! (the channels of ends and changes, one run lock per pane's shell, the
//! give-back claims).
//!
//! Bounds: each command's output at most [`OUTPUT_BYTES`] (its tail), and
//! [`TOTAL_OUTPUT`] over all panes (the oldest outputs go first); a pane
//! file is read from where the last read stopped and set aside once it
//! grows past [`ROTATE`].

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tmux_mcp_core::paths::DirId;

use super::kernel::Kernel;
use super::log::{
    apply_all, Changed, Command, Held, Output, PaneLog, PaneShell, Shell, Start, Taken,
};

/// A command's output kept (the tail).
pub const OUTPUT_BYTES: usize = 65_536;
/// Outputs kept over all panes.
pub const TOTAL_OUTPUT: usize = 8 << 20;
/// A pane file's size past which it is set aside after a read.
const ROTATE: u64 = 256 << 10;
/// At most this much of a pane file is read at once.
const READ_MAX: u64 = 1 << 20;

/// A pane's log and where its file was read to.
#[derive(Debug, Default)]
struct Pane {
    offset: u64,
    /// What reads found and the follower has not handled yet.
    pending: Changed,
    log: PaneLog,
}

/// The marks directory and what it and its parent were when the broker
/// made it.
type Dir = (PathBuf, Result<(DirId, DirId), String>);

#[derive(Default)]
pub struct Marks {
    dir: Mutex<Option<Dir>>,
    panes: Mutex<HashMap<String, Pane>>,
    /// Bumped whenever a command ends (with the pane it ended in), so waits
    /// on that pane wake at once.
    ends: tokio::sync::watch::Sender<(u64, String)>,
    /// Bumped whenever anything here changes (a mark read, rows kept).
    changed: tokio::sync::watch::Sender<u64>,
    /// One broker run at a time per pane's shell.
    runs: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The panes whose shell a give-back waits on (one per pane).
    givers: Mutex<HashSet<String>>,
    /// The shells (pid, start) asked whether they are enrolled: each once.
    asked: Mutex<HashSet<(u32, u64)>>,
}

impl Marks {
    /// Where the shells write (set once the broker made the directory).
    pub fn set_dir(&self, dir: PathBuf) {
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

    /// Whether shell `pid` (started at `start`) was asked whether it is
    /// enrolled: a shell that did not answer is not asked again (its pid
    /// reused by another process is another shell).
    pub fn asked(&self, pid: u32, start: u64) -> bool {
        self.asked.lock().unwrap().contains(&(pid, start))
    }

    /// Notes that shell `pid` (started at `start`) is asked; true the first
    /// time.
    pub fn ask_once(&self, pid: u32, start: u64) -> bool {
        self.asked.lock().unwrap().insert((pid, start))
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// The lock a broker run holds on `pane`'s shell from sending its
    /// command to the command's end.
    pub fn run_lock(&self, pane: &str) -> Arc<tokio::sync::Mutex<()>> {
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
        panes.get(pane)?.log.taken(id)
    }

    /// Takes back the end of run `id` (and of its command) that a `P` mark
    /// said, when the kernel shows the command still runs: a mark another
    /// program wrote. The shell's own `P` ends them again.
    pub fn reopen(&self, pane: &str, id: &str) {
        let mut panes = self.panes.lock().unwrap();
        let reopened = panes.get_mut(pane).is_some_and(|p| p.log.reopen(id));
        drop(panes);
        if reopened {
            self.bump();
        }
    }

    /// What the shell `pid` of `pane` says it holds set aside (read first).
    pub fn held(&self, pane: &str, pid: u32) -> Held {
        self.read(pane);
        let panes = self.panes.lock().unwrap();
        panes
            .get(pane)
            .map_or_else(Held::default, |p| p.log.held(pid))
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
            .map(|p| std::mem::take(&mut p.pending))
            .unwrap_or_default()
    }

    /// The pane's terminal device (`st_rdev`): a mark from a process on
    /// another terminal (a shell of another pane that inherited
    /// `TMUX_PANE`) is not this pane's.
    pub fn set_tty(&self, pane: &str, rdev: u64) {
        self.panes
            .lock()
            .unwrap()
            .entry(pane.to_string())
            .or_default()
            .log
            .tty = Some(rdev);
    }

    /// Reads what `pane`'s shell wrote since the last read (whoever reads:
    /// a tool's or the follower's; what changed waits in `take_pending`).
    pub fn read(&self, pane: &str) {
        let Ok(dir) = self.dir() else {
            return;
        };
        let path = dir.join(pane);
        let mut panes = self.panes.lock().unwrap();
        let p = panes.entry(pane.to_string()).or_default();
        let mut changed = std::mem::take(&mut p.pending);
        let Some(bytes) = read_from(&path, &mut p.offset) else {
            p.pending = changed;
            return;
        };
        let mut ended = apply_all(&mut p.log, &bytes, &Kernel, &mut changed);
        if p.offset > ROTATE {
            // The shell opens the file by name for every mark, so after the
            // rename its next mark starts a new file; what it wrote between
            // our read and the rename is read from the old one.
            let old = dir.join(format!("{pane}.old"));
            if std::fs::rename(&path, &old).is_ok() {
                if let Some(rest) = read_from(&old, &mut p.offset) {
                    ended += apply_all(&mut p.log, &rest, &Kernel, &mut changed);
                }
                let _ = std::fs::remove_file(&old);
                p.offset = 0;
            }
        }
        p.pending = changed;
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
        panes.get(pane)?.log.pane_shell(alive)
    }

    /// The pane's commands, newest first.
    pub fn commands(&self, pane: &str) -> Vec<Command> {
        self.read(pane);
        let panes = self.panes.lock().unwrap();
        panes
            .get(pane)
            .map(|p| p.log.commands.iter().rev().cloned().collect())
            .unwrap_or_default()
    }

    pub fn command(&self, pane: &str, seq: u64) -> Option<Command> {
        let panes = self.panes.lock().unwrap();
        panes.get(pane)?.log.command(seq).cloned()
    }

    /// Where the command's output starts: `row`, found as `start` says.
    pub fn set_start_row(&self, pane: &str, seq: u64, row: u64, start: Start) {
        if let Some(c) = self
            .panes
            .lock()
            .unwrap()
            .get_mut(pane)
            .and_then(|p| p.log.command_mut(seq))
        {
            c.start_row = Some(row);
            c.line_above = matches!(start, Start::BelowLine(_));
            c.cleared_at_start = start == Start::Cleared;
            c.prompt_tail = match start {
                Start::BelowLine(prompt) => prompt,
                Start::Cursor | Start::Cleared => None,
            };
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
            .and_then(|p| p.log.command_mut(seq))
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
        self.bump();
        bound_total(&mut panes);
    }

    /// A pane went: its marks go with it (file and memory).
    pub fn forget(&self, pane: &str) {
        self.panes.lock().unwrap().remove(pane);
        if let Ok(dir) = self.dir() {
            let _ = std::fs::remove_file(dir.join(pane));
        }
    }
}

/// The oldest outputs go first when all of them pass [`TOTAL_OUTPUT`].
fn bound_total(panes: &mut HashMap<String, Pane>) {
    let mut all: Vec<(f64, String, u64, usize)> = panes
        .iter()
        .flat_map(|(p, pane)| {
            pane.log.commands.iter().filter_map(move |c| {
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
    if total <= TOTAL_OUTPUT {
        return;
    }
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (_, p, seq, size) in all {
        if total <= TOTAL_OUTPUT {
            break;
        }
        if let Some(c) = panes.get_mut(&p).and_then(|p| p.log.command_mut(seq)) {
            c.output = None;
            c.output_missing =
                Some("dropped: the broker keeps 8 MiB of command output over all panes".into());
            total -= size;
        }
    }
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

#[cfg(test)]
mod tests {
    use super::super::log::fake::{line, World};
    use super::*;

    /// A pane whose log has `lines` applied (with fake process facts).
    fn pane_of(lines: &[String]) -> Pane {
        let mut p = Pane::default();
        let bytes = lines.concat();
        apply_all(
            &mut p.log,
            bytes.as_bytes(),
            &World::default(),
            &mut Changed::default(),
        );
        p
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
        let mut p = Pane::default();
        let mut changed = Changed::default();
        let mut reads = 0;
        while let Some(bytes) = read_from(&file, &mut p.offset).or_else(|| {
            reads += 1;
            (reads < 4).then(Vec::new)
        }) {
            apply_all(&mut p.log, &bytes, &World::default(), &mut changed);
        }
        assert_eq!(
            p.log.pane_shell(|_| true).map(|s| s.shell.pid),
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
    fn held_lines_are_the_shell_s_last_word() {
        let marks = Marks::default();
        marks
            .panes
            .lock()
            .unwrap()
            .insert("%1".into(), pane_of(&[line("I", 1, "", "5.2")]));
        let held = |marks: &Marks| marks.held("%1", 1);
        assert_eq!(held(&marks), Held::default(), "never said");
        let add = |l: String| {
            let mut panes = marks.panes.lock().unwrap();
            let log = &mut panes.get_mut("%1").unwrap().log;
            apply_all(
                log,
                l.as_bytes(),
                &World::default(),
                &mut Changed::default(),
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
        let pane = pane_of(&[line("C", 1, "", "yes"), line("P", 1, "0", "")]);
        marks.panes.lock().unwrap().insert("%1".into(), pane);
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

    #[test]
    fn the_oldest_outputs_go_past_the_total_bound() {
        let marks = Marks::default();
        let panes = TOTAL_OUTPUT / OUTPUT_BYTES + 2;
        for i in 0..panes {
            let ended = format!("P\tzsh\t1\t{i}.0\t0\t/\t\n");
            let pane = pane_of(&[line("C", 1, "", "yes"), ended]);
            marks.panes.lock().unwrap().insert(format!("%{i}"), pane);
            let out = Output {
                lines: vec!["x".repeat(OUTPUT_BYTES - 1)],
                ..Output::default()
            };
            marks.set_output(&format!("%{i}"), 1, Ok(out));
        }
        let kept = |i: usize| marks.command(&format!("%{i}"), 1).unwrap();
        assert!(kept(0).output.is_none(), "the oldest went");
        assert!(kept(0).output_missing.unwrap().starts_with("dropped"));
        assert!(kept(panes - 1).output.is_some(), "the newest stays");
        let total: usize = (0..panes)
            .filter_map(|i| kept(i).output)
            .map(|o| o.lines[0].len() + 1)
            .sum();
        assert!(total <= TOTAL_OUTPUT);
    }
}
