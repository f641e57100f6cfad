//! The mark line format: what one line of a pane's marks file says.
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
//! aside and each give-back chord, whether it gave one back or not), `S` a
//! script's `/bin/sh` said its pid and `X` the script ended (TEXT the run's
//! id). TIME is the shell's clock (`$EPOCHREALTIME`) where it has one, else
//! the broker's when it read the line; CWD and TEXT escape `\`, tab, LF and
//! CR with a backslash. Pure: parsing only.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
