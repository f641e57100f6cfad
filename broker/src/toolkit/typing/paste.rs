//! Pasting into a pane through a private tmux buffer (bracketed when its
//! program asked for that), deleted again also on failure: `paste_text` and
//! `send_prompt` paste through here.

use crate::session::Session;
use crate::toolkit::acting::tmux_command::{self, Delivery};
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::libtmux::action;
use crate::toolkit::libtmux::wording;
use crate::toolkit::typing::keystrokes::{split_text, COMMAND_ARG_BYTES};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tmux_mcp_core::tmux::quote;

#[derive(Deserialize, Serialize, JsonSchema, Default, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum LineEnding {
    #[default]
    Cr,
    Lf,
}

/// program asked for that, `-p`) and deletes the buffer, also on failure;
/// returns how many `set-buffer` commands filled it. Shared with
/// `send_prompt`.
pub async fn paste(
    session: &Session,
    id: &str,
    text: &str,
    line_ending: LineEnding,
) -> Result<usize, ToolOutput> {
    let name = format!("mcp-paste-{}", tmux_mcp_core::sys::random_hex(8));
    let pieces = fill_commands(&name, text);
    for (i, argv) in pieces.iter().enumerate() {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        if let Err(f) = tmux_command::run_command(&session.broker, &argv).await {
            // Nothing was pasted; the buffer may exist (a later piece, or
            // the first may have landed before the failure): delete it.
            let cleanup = if i > 0 || f.delivery != Delivery::NotSent {
                delete(session, &name).await
            } else {
                String::new()
            };
            return Err(ToolOutput::libtmux_error(format!(
                "Filling the paste buffer failed; nothing was pasted.{cleanup} {}",
                wording::failed(&f).text
            )));
        }
    }
    let mut paste = vec!["paste-buffer", "-b", &name, "-t", id, "-d", "-p"];
    if line_ending == LineEnding::Lf {
        paste.push("-r");
    }
    if let Err(e) = action::run(session, &paste).await {
        let cleanup = delete(session, &name).await;
        return Err(ToolOutput::libtmux_error(format!(
            "Pasting failed.{cleanup} {}",
            e.text
        )));
    }
    Ok(pieces.len())
}

/// `set-buffer -b NAME -- PIECE` for the first piece and `set-buffer -a` for
/// the rest, each within one tmux message (split at character boundaries).
fn fill_commands(name: &str, text: &str) -> Vec<Vec<String>> {
    let head = ["set-buffer", "-a", "-b", name, "--"];
    let room = COMMAND_ARG_BYTES - head.iter().map(|a| a.len() + 1).sum::<usize>() - 2; // NUL, and a `\` literal_arg may add
    split_text(text, room)
        .into_iter()
        .enumerate()
        .map(|(i, piece)| {
            // The first piece makes the buffer; the others append (`-a`).
            let head = head
                .iter()
                .enumerate()
                .filter(|&(j, _)| i > 0 || j != 1)
                .map(|(_, a)| a.to_string());
            head.chain([quote::literal_arg(piece)]).collect()
        })
        .collect()
}

/// Deletes our buffer after a failure; the sentence says whether that worked.
async fn delete(session: &Session, name: &str) -> String {
    match tmux_command::run_command(&session.broker, &["delete-buffer", "-b", name]).await {
        Ok(_) => " The private paste buffer was deleted.".into(),
        // A buffer that was never made cannot be deleted: nothing is left.
        Err(f) if f.message.contains("no buffer") || f.message.contains("unknown buffer") => {
            String::new()
        }
        Err(f) => format!(
            " Deleting the private paste buffer {name} failed too: {}.",
            f.message
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_fills_the_buffer_in_pieces_that_fit_and_reassemble() {
        let text = "é;".repeat(30_000);
        let cmds = fill_commands("b", &text);
        assert!(cmds.len() > 1);
        assert!(!cmds[0].contains(&"-a".to_string()) && cmds[1..].iter().all(|c| c[1] == "-a"));
        assert!(cmds
            .iter()
            .all(|c| c.iter().map(|a| a.len() + 1).sum::<usize>() <= COMMAND_ARG_BYTES));
        // literal_arg only ever adds the backslash before a final `;`.
        let joined: String = cmds
            .iter()
            .map(|c| {
                c.last()
                    .unwrap()
                    .strip_suffix("\\;")
                    .map_or_else(|| c.last().unwrap().clone(), |h| format!("{h};"))
            })
            .collect();
        assert_eq!(joined, text);
    }
}
