//! `wait_for_text` (libtmux family, read-only): wait until a pane's visible
//! screen matches one of `patterns` (literal or regex, case option), or one of
//! `stopPatterns`, or the pane went quiet for `idleSeconds`, or the timeout.
//!
//! Event-driven, as `tmux_wait`: inotify on the pane's terminal
//! ([`ScreenEvents`]); each burst of output is one guarded, hook-refusing capture
//! of the visible screen ([`observe::capture_range`]: refused while an
//! `after-capture-pane` hook is set), plus re-reads 4 and 25 ms after the last
//! event, because tmux may parse the bytes a moment after the program wrote
//! them. Nothing polls tmux. The events are `tmux_wait`'s ([`PaneEvents`]),
//! shared with `wait_for_idle` too. It types nothing, hence read-only (on by
//! default), although the libtmux family lists it with the input tools.
//!
//! Patterns are checked before stop patterns, each over the whole screen with
//! `^`/`$` matching at line ends; the result names the first that matched and
//! the screen line it matched on. The screen as it was when the call started
//! counts: text already shown matches at once.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, Progress, ToolOutput, ToolSpec};
use crate::toolkit::events::pane_events::{ClockReport, Event, Watched};
use crate::toolkit::records::search::build_regex;
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::{Generation, PaneId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const SPEC: ToolSpec = ToolSpec::new(
    "wait_for_text",
    Annotations::read_only("Wait for text in a pane"),
    input_of::<Args>,
    schema_of::<Waited>,
    |c| c.run_with_progress(call),
)
.description("Wait until a pane shows a pattern or stopPattern, or goes idle; shown text counts.")
.details("Wait, event-driven (tty inotify; typed echo, which no program writes, within 250 ms), until a pane's visible screen matches one of patterns (literal, or regex with regex:true; ignoreCase option), or one of stopPatterns (returns early, outcome stopped), or the pane wrote nothing for idleSeconds (outcome idle), or timeoutMs (outcome timeout; clamped to the request timeout, reported). Text already on the screen matches at once. Returns the outcome, which pattern matched (patternIndex when not 0; the pane and the patterns are the call's), the line and row of its first match, moreLines: the other lines the pattern matches (at most 100; e.g. every error line of a build) and waitedMs; on timeout also timeoutMs and timeoutClamped (when true); without a match outputEvents (when not 0). Sends progress notifications when a progressToken is given. Each read is a guarded capture, refused while an after-capture-pane hook is set; types nothing.")
.sample(|s| json!({"paneId": s.pane, "patterns": ["$"], "timeoutMs": 300}));

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
    generation: Option<Generation>,
    // The first to match is reported.
    #[schemars(length(min = 1, max = 16), inner(length(min = 1, max = 1024)))]
    patterns: Vec<String>,
    /// End early (outcome stopped).
    #[serde(default)]
    #[schemars(length(min = 0, max = 16), inner(length(min = 1, max = 1024)))]
    stop_patterns: Vec<String>,
    /// Regexes, not literal text.
    #[serde(default)]
    regex: bool,
    #[serde(default)]
    ignore_case: bool,
    /// Or end (outcome idle) after this long quiet.
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 3600))]
    idle_seconds: Option<f64>,
    // Capped at the request timeout (the result says so).
    #[schemars(range(min = 1, max = 3_600_000))]
    timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Matched,
    Stopped,
    Idle,
    Timeout,
}

/// What the wait found. The pane the call named and the pattern it gave are
/// not restated (patternIndex says which); the wait's timeout only when it
/// ran out.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Waited {
    outcome: Outcome,
    /// Which of patterns (of stopPatterns, outcome stopped) matched; absent:
    /// the first, or nothing matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "usize")]
    pattern_index: Option<usize>,
    /// The screen line the match starts on, and its row (0 = top).
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    row: Option<usize>,
    /// The other lines the same pattern matches, top to bottom (at most 100).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    more_lines: Vec<String>,
    waited_ms: u64,
    /// The wait this call used, when it ran out (outcome timeout).
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
    /// Present (true) when that wait was timeoutMs cut to the request timeout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    timeout_clamped: bool,
    /// Without a match (outcome idle or timeout): the output events (bursts
    /// of writes to the pane's terminal) seen; absent: 0, or a match.
    #[serde(default, skip_serializing_if = "is_zero")]
    output_events: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Waited {
    /// The clock as this outcome reports it.
    fn new(outcome: Outcome, clock: ClockReport) -> Waited {
        let ran_out = outcome == Outcome::Timeout;
        let matched = matches!(outcome, Outcome::Matched | Outcome::Stopped);
        Waited {
            outcome,
            pattern_index: None,
            line: None,
            row: None,
            more_lines: Vec::new(),
            waited_ms: clock.waited_ms,
            timeout_ms: ran_out.then_some(clock.timeout_ms),
            timeout_clamped: ran_out && clock.timeout_clamped,
            output_events: if matched { 0 } else { clock.output_events },
        }
    }
}

fn compile(patterns: &[String], field: &str, args: &Args) -> Result<Vec<regex::Regex>, ToolOutput> {
    patterns
        .iter()
        .enumerate()
        .map(|(i, p)| build_regex(p, args.regex, args.ignore_case, true).map_err(|e| ToolOutput::libtmux_error(format!("Argument /{field}/{i}: not a valid regular expression: {e}. Nothing was sent to tmux."))))
        .collect()
}

/// Most lines `moreLines` reports.
const MORE_LINES_MAX: usize = 100;

/// A pattern's match on the screen: its index, the line its first match
/// starts on and that row, and the other lines its matches start on.
type Hit = (usize, String, usize, Vec<String>);

/// The first regex that matches `screen`, with every line it matches.
fn first_match(res: &[regex::Regex], screen: &str) -> Option<Hit> {
    res.iter().enumerate().find_map(|(i, re)| {
        let lines: Vec<&str> = screen.lines().collect();
        let mut rows = re
            .find_iter(screen)
            .map(|m| screen[..m.start()].matches('\n').count());
        let row = rows.next()?;
        let mut more: Vec<usize> = rows.filter(|r| *r != row).collect();
        more.dedup();
        let line = |r: usize| lines.get(r).copied().unwrap_or_default().to_string();
        Some((
            i,
            line(row),
            row,
            more.into_iter().take(MORE_LINES_MAX).map(line).collect(),
        ))
    })
}

async fn call(
    session: &Session,
    args: Args,
    progress: Option<Progress>,
) -> Result<ToolOutput, ToolOutput> {
    let patterns = compile(&args.patterns, "patterns", &args)?;
    let stops = compile(&args.stop_patterns, "stopPatterns", &args)?;
    let mut ev = Watched::start(
        session,
        &args.pane_id,
        args.generation.as_deref(),
        args.timeout_ms,
        args.idle_seconds,
        progress,
    )
    .await?;
    let mut check = true; // the screen as it is now counts
    loop {
        if check {
            let lines = ev.screen(session).await?;
            let screen = lines.join("\n");
            let hit = first_match(&patterns, &screen)
                .map(|m| (Outcome::Matched, &args.patterns, m))
                .or_else(|| {
                    first_match(&stops, &screen).map(|m| (Outcome::Stopped, &args.stop_patterns, m))
                });
            if let Some((outcome, list, (i, line, row, more_lines))) = hit {
                let w = Waited {
                    pattern_index: (i > 0).then_some(i),
                    line: Some(line.clone()),
                    row: Some(row),
                    more_lines,
                    ..Waited::new(outcome, ev.report())
                };
                let what = if outcome == Outcome::Matched {
                    "matched"
                } else {
                    "stop pattern matched"
                };
                let mut text = format!(
                    "{} {what} {:?} after {} ms on row {row}: {line}",
                    ev.pane.id, list[i], w.waited_ms
                );
                for more in &w.more_lines {
                    text.push('\n');
                    text.push_str(more);
                }
                return Ok(ToolOutput::typed(&w, text));
            }
        }
        let outcome = match ev.next().await? {
            Event::Output | Event::Settled => {
                check = true;
                continue;
            }
            Event::Idle => Outcome::Idle,
            // No process is watched here: only the deadline is left.
            _ => Outcome::Timeout,
        };
        let clock = ev.report();
        let within = clock.within();
        let w = Waited::new(outcome, clock);
        let text = match outcome {
            Outcome::Idle => format!(
                "{} wrote nothing for {} s; no pattern matched",
                ev.pane.id,
                args.idle_seconds.unwrap_or_default()
            ),
            _ => format!("no pattern matched {} {within}", ev.pane.id),
        };
        return Ok(ToolOutput::typed(&w, text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_patterns_are_escaped_and_rows_reported() {
        let args = Args {
            pane_id: PaneId("%1".into()),
            generation: None,
            patterns: vec!["a.c".into()],
            stop_patterns: vec![],
            regex: false,
            ignore_case: true,
            idle_seconds: None,
            timeout_ms: None,
        };
        let res = compile(&args.patterns, "patterns", &args).unwrap();
        assert_eq!(
            first_match(&res, "abc\nxx A.C yy"),
            Some((0, "xx A.C yy".into(), 1, vec![]))
        );
        let args = Args {
            patterns: vec!["error".into()],
            ..args
        };
        let res = compile(&args.patterns, "patterns", &args).unwrap();
        assert_eq!(
            first_match(&res, "ok\nerror: a error again\nfine\nerror: b"),
            Some((0, "error: a error again".into(), 1, vec!["error: b".into()])),
            "every line once, the first apart"
        );
        let args = Args {
            regex: true,
            patterns: vec!["^ok$".into(), "(".into()],
            ..args
        };
        assert!(compile(&args.patterns, "patterns", &args)
            .unwrap_err()
            .text
            .contains("/patterns/1"));
    }
}
