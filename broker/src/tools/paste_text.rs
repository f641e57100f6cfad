//! `paste_text` (libtmux family, mutating): text into one pane as a paste,
//! through a paste buffer of its own.
//!
//! Each call makes a buffer with a unique name (`mcp-paste-<random>`), filled
//! with `set-buffer -b NAME -- TEXT` (and `set-buffer -a` for the pieces of a
//! text longer than one tmux message), then `paste-buffer -b NAME -t %N -d -p`:
//! `-d` deletes the buffer as it pastes, `-p` brackets the paste only when the
//! program in the pane turned bracketed paste on (so a shell sees one paste, a
//! raw reader sees exactly the text). If filling or pasting fails after the
//! buffer exists, it is deleted (`delete-buffer`), so no buffer of ours is left
//! in the person's list.
//!
//! Line feeds: `lineEnding: "cr"` (the default) pastes each LF as CR, as a
//! terminal does when a person pastes (tmux's own default); a shell or editor
//! then sees Enter. `"lf"` (`paste-buffer -r`) delivers the bytes unchanged.
//! Whether the pane asked for bracketed paste is read with the format
//! `#{bracket_paste_flag}`, which tmux 3.7c has and 3.5a and 3.3a do not
//! (3.6 added it); where it is missing it is reported as `unknown` (tmux
//! still brackets correctly: `-p` decides inside tmux).

use super::act;
use super::ids::{Generation, PaneId};
use super::refs::{self, PaneRef, NO_NUL};
use super::send::{split_text, COMMAND_ARG_BYTES};
use super::typed::schema_of;
use super::{Annotations, Call, CallFuture, Family, ToolOutput, ToolSpec};
use crate::session::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const SPEC: ToolSpec = ToolSpec {
    name: "paste_text",
    family: Family::Libtmux,
    description: "Paste text into a pane through a private buffer, bracketed when its program asked for that; no Enter is pressed.",
    details: "Paste text into one pane (%N) through a private tmux paste buffer that is deleted afterwards (even on error). The paste is bracketed only when the pane's program asked for bracketed paste (reported as bracketedPaste on/off, or unknown on tmux before 3.6, which cannot tell). lineEnding \"cr\" (default) pastes each line feed as CR like a terminal paste; \"lf\" keeps the bytes unchanged. Text 1–65536 characters, no NUL. Mutating tier; the agent's own pane needs --allow-self; dead panes are refused.",
    annotations: Annotations::mutating("Paste text into a pane", false),
    listed: super::Listed::AtTier,
    input_schema: super::typed::input_of::<Args>,
    output_schema: schema_of::<Pasted>,
    run,
};

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
    generation: Option<Generation>,
    #[schemars(length(min = 1, max = 65536), regex(pattern = NO_NUL))]
    text: String,
    /// A line feed arrives as CR (like a terminal paste) or LF.
    #[serde(default)]
    line_ending: LineEnding,
}

#[derive(Deserialize, Serialize, JsonSchema, Default, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(super) enum LineEnding {
    #[default]
    Cr,
    Lf,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Bracketed {
    On,
    Off,
    Unknown,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Pasted {
    pane: PaneRef,
    /// Bytes of text pasted (before brackets).
    bytes: usize,
    /// Whether the pane had bracketed paste on, i.e. whether tmux bracketed it.
    bracketed_paste: Bracketed,
    line_ending: LineEnding,
    /// `set-buffer` commands it took to fill the buffer.
    buffer_pieces: usize,
    /// Always true: the private buffer is gone.
    buffer_deleted: bool,
}

fn run(c: Call<'_>) -> CallFuture<'_> {
    Box::pin(async move {
        let args = match c.parse::<Args>() {
            Ok(a) => a,
            Err(e) => return e,
        };
        let session = c.session;
        let target =
            match act::typing_target(session, &args.pane_id, args.generation.as_deref()).await {
                Ok(t) => t,
                Err(e) => return e,
            };
        let bracketed = match act::pane_flags(session, &target.id, &["#{bracket_paste_flag}"]).await
        {
            Ok(f) => match f[0] {
                Some(true) => Bracketed::On,
                Some(false) => Bracketed::Off,
                None => Bracketed::Unknown,
            },
            Err(e) => return e,
        };
        let pieces = match paste(session, &target.id, &args.text, args.line_ending).await {
            Ok(n) => n,
            Err(e) => return e,
        };
        let out = Pasted {
            pane: PaneRef::new(&target.id, session.generation()),
            bytes: args.text.len(),
            bracketed_paste: bracketed,
            line_ending: args.line_ending,
            buffer_pieces: pieces,
            buffer_deleted: true,
        };
        let text = format!("pasted {} byte(s) into {}", args.text.len(), target.id);
        ToolOutput::typed(&out, text)
    })
}

/// Pastes `text` into pane `id` through a private buffer (bracketed when its
/// program asked for that, `-p`) and deletes the buffer, also on failure;
/// returns how many `set-buffer` commands filled it. Shared with
/// `send_prompt`.
pub(super) async fn paste(
    session: &Session,
    id: &str,
    text: &str,
    line_ending: LineEnding,
) -> Result<usize, ToolOutput> {
    let name = format!("mcp-paste-{}", tmux_mcp_core::sys::random_hex(8));
    let pieces = fill_commands(&name, text);
    for (i, argv) in pieces.iter().enumerate() {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        if let Err(f) = act::run(session, &argv).await {
            // Nothing was pasted; the buffer may exist (a later piece, or
            // the first may have landed before the failure): delete it.
            let cleanup = if i > 0 || f.text.contains("may have") {
                delete(session, &name).await
            } else {
                String::new()
            };
            return Err(ToolOutput::libtmux_error(format!(
                "Filling the paste buffer failed; nothing was pasted.{cleanup} {}",
                f.text
            )));
        }
    }
    let mut paste = vec!["paste-buffer", "-b", &name, "-t", id, "-d", "-p"];
    if line_ending == LineEnding::Lf {
        paste.push("-r");
    }
    if let Err(e) = act::run(session, &paste).await {
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
            head.chain([refs::literal_arg(piece)]).collect()
        })
        .collect()
}

/// Deletes our buffer after a failure; the sentence says whether that worked.
async fn delete(session: &Session, name: &str) -> String {
    match refs::run_command(&session.broker, &["delete-buffer", "-b", name]).await {
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
