//! The prompts, in the order `prompts/list` gives them. Each message names
//! the tools by the names the session lists and leaves their arguments to the
//! tools' schemas (the two toolsets spell them differently); values the person
//! gave are quoted as JSON strings, so they reach the agent exactly.

use super::{Argument, Given, PromptSpec};
use crate::completion::Kind;

pub const CATALOG: &[PromptSpec] = &[WATCH_RUN, FIND_ERROR, TAKE_OVER_PANE, RUN_AND_REPORT];

const PANE: Argument = Argument {
    name: "pane",
    description: "The pane, by its id (%N).",
    required: true,
    kind: Kind::Pane,
    max_len: 32,
};

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

const WATCH_RUN: PromptSpec = PromptSpec {
    name: "watch_run",
    title: "Watch a build or test run",
    description: "Watch a pane until the build or test run in it finishes, then report what failed.",
    arguments: &[
        PANE,
        Argument {
            name: "done_text",
            description: "Text the run prints when it ends (e.g. \"test result:\"); without it the run is done when the pane goes quiet.",
            required: false,
            kind: Kind::Free,
            max_len: 1024,
        },
    ],
    tools: &["capture_since", "wait_for_text", "wait_for_idle"],
    render: watch_run,
};

fn watch_run(g: &Given) -> String {
    let pane = g.arg("pane");
    let wait = match g.get("done_text") {
        Some(t) => format!(
            "call wait_for_text on pane {pane} for the text {} (it returns when the run prints it)",
            quoted(t)
        ),
        None => {
            format!("call wait_for_idle on pane {pane} (it returns when the pane stops printing)")
        }
    };
    format!(
        "Watch pane {pane} until the build or test run in it finishes, then report the result.\n\n\
         1. Call capture_since on pane {pane} without a cursor: it answers the screen now and a cursor.\n\
         2. Then {wait}. If the wait ends by its timeout, wait again; the run is not over yet.\n\
         3. Call capture_since on pane {pane} with the cursor from step 1: everything printed since.\n\
         4. Report whether the run passed. If it failed, name each failing test or error and quote its lines exactly as printed, with file and line where they show.\n\n\
         Only read this pane: do not type into it."
    )
}

const FIND_ERROR: PromptSpec = PromptSpec {
    name: "find_error",
    title: "Find the pane that shows an error",
    description: "Search every pane this agent may see for an error and say which pane shows it and what it says.",
    arguments: &[
        Argument {
            name: "pattern",
            description: "A regular expression for the error (default: error|fail|panic|traceback|exception, ignoring case).",
            required: false,
            kind: Kind::Free,
            max_len: 1024,
        },
        Argument {
            name: "session",
            description: "Search only this tmux session (its name).",
            required: false,
            kind: Kind::SessionName,
            max_len: 256,
        },
    ],
    tools: &["search_panes", "capture_pane"],
    render: find_error,
};

fn find_error(g: &Given) -> String {
    let pattern = g
        .get("pattern")
        .unwrap_or("error|fail|panic|traceback|exception");
    let where_ = g.get("session").map_or_else(
        || "every pane you may see".to_string(),
        |s| format!("the panes of session {}", quoted(s)),
    );
    format!(
        "Find the pane that shows an error.\n\n\
         1. Call search_panes with the regular expression {} (regex on, ignoring case) over {where_}.\n\
         2. For each pane that matches, call capture_pane on it to read the lines around the match.\n\
         3. Say which pane shows the error (its pane id, session, window and the command running in it) and quote the error lines exactly. If several panes match, put the most recent or most severe first. If none matches, say so.\n\n\
         Only read: do not type into any pane.",
        quoted(pattern)
    )
}

const TAKE_OVER_PANE: PromptSpec = PromptSpec {
    name: "take_over_pane",
    title: "Take over a handed-over pane",
    description: "Read a pane the person handed over with prefix + A and say what it shows before acting on it.",
    arguments: &[
        PANE,
        Argument {
            name: "cursor",
            description: "The cursor from the hand-off line (prefix + A); without it the pane's screen is read.",
            required: false,
            kind: Kind::Free,
            max_len: 64,
        },
    ],
    tools: &["capture_since", "capture_pane"],
    render: take_over_pane,
};

fn take_over_pane(g: &Given) -> String {
    let pane = g.arg("pane");
    let read = match g.get("cursor") {
        Some(c) => format!(
            "Call capture_since on pane {pane} with the cursor {}: the lines that are new since the person pressed the key, and a cursor to go on with.",
            quoted(c)
        ),
        None => format!("Call capture_pane on pane {pane} to read its screen."),
    };
    format!(
        "The person handed you pane {pane} to work with.\n\n\
         1. {read}\n\
         2. Say in two or three sentences what the pane shows: the program running, its state (waiting for input, running, failed) and its last output.\n\
         3. Ask what they want done with it.\n\n\
         Do not type into the pane until they say so."
    )
}

const RUN_AND_REPORT: PromptSpec = PromptSpec {
    name: "run_and_report",
    title: "Run a command and report",
    description: "Run a command in a pane's shell and report its exit status and output.",
    arguments: &[
        PANE,
        Argument {
            name: "command",
            description: "The shell command to run, as typed at the prompt.",
            required: true,
            kind: Kind::Free,
            max_len: 16384,
        },
    ],
    tools: &["run_command", "get_job"],
    render: run_and_report,
};

fn run_and_report(g: &Given) -> String {
    let pane = g.arg("pane");
    format!(
        "Run this command in pane {pane} and report what it did: {}\n\n\
         1. Call run_command on pane {pane} with exactly that command.\n\
         2. If it answers that the job is still running, call get_job with its job id until the job has finished.\n\
         3. Report the exit status first, then the output: quote its last lines exactly, and say if the output was cut short.\n\n\
         Run nothing else in the pane.",
        quoted(g.arg("command"))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn given(pairs: &[(&str, &str)]) -> Given {
        Given {
            values: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>(),
            handed_over: false,
        }
    }

    #[test]
    fn each_message_names_its_tools_and_quotes_what_it_was_given() {
        for p in CATALOG {
            // Required arguments only, then every argument: between them the
            // messages name exactly the tools the prompt is listed for.
            let required: Vec<(&str, &str)> = p
                .arguments
                .iter()
                .filter(|a| a.required)
                .map(|a| {
                    (
                        a.name,
                        if a.name == "pane" {
                            "%7"
                        } else {
                            "make test \"all\""
                        },
                    )
                })
                .collect();
            let all: Vec<(&str, &str)> = p
                .arguments
                .iter()
                .map(|a| {
                    (
                        a.name,
                        if a.name == "pane" {
                            "%7"
                        } else {
                            "make test \"all\""
                        },
                    )
                })
                .collect();
            let texts = [(p.render)(&given(&required)), (p.render)(&given(&all))];
            let named: Vec<&str> = crate::tools::CATALOG
                .iter()
                .map(|t| t.name)
                .filter(|n| texts.iter().any(|t| t.contains(n)))
                .collect();
            let mut listed = p.tools.to_vec();
            listed.sort();
            let mut named = named;
            named.sort();
            assert_eq!(named, listed, "{}: {texts:?}", p.name);
            for t in texts.iter().filter(|_| p.argument("pane").is_some()) {
                assert!(t.contains("%7"), "{}: {t}", p.name);
            }
            if p.arguments.len() > 1 {
                assert!(
                    texts[1].contains(r#""make test \"all\"""#),
                    "{}: {}",
                    p.name,
                    texts[1]
                );
            }
        }
        let f = find_error(&given(&[]));
        assert!(
            f.contains("\"error|fail|panic|traceback|exception\""),
            "{f}"
        );
    }

    #[test]
    fn names_are_unique_and_arguments_complete_what_they_name() {
        let mut names: Vec<&str> = CATALOG.iter().map(|p| p.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), CATALOG.len());
        for p in CATALOG {
            assert!(p.description.len() <= 120, "{}", p.name);
            for a in p.arguments {
                assert_eq!(
                    a.name == "pane",
                    a.kind == Kind::Pane,
                    "{}.{}",
                    p.name,
                    a.name
                );
            }
            for t in p.tools {
                assert!(crate::tools::spec(t).is_some(), "{}: no tool {t}", p.name);
            }
        }
    }
}
