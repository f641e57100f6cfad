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

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::action;
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::schemas::patterns::NO_NUL;
use crate::toolkit::target::ids::{Generation, PaneId};
use crate::toolkit::target::references::PaneRef;
use crate::toolkit::typing::paste::{paste, LineEnding};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const SPEC: ToolSpec = ToolSpec::new(
    "paste_text",
    Annotations::mutating("Paste text into a pane", false),
    input_of::<Args>,
    schema_of::<Pasted>,
    |c| c.run(call),
)
.description("Paste text into a pane through a private buffer, bracketed when its program asked for that; no Enter is pressed.")
.details("Paste text into one pane (%N) through a private tmux paste buffer that is deleted afterwards (even on error). The paste is bracketed only when the pane's program asked for bracketed paste (reported as bracketedPaste on/off, or unknown on tmux before 3.6, which cannot tell). lineEnding \"cr\" (default) pastes each line feed as CR like a terminal paste; \"lf\" keeps the bytes unchanged. Text 1–65536 characters, no NUL. Mutating tier; the agent's own pane needs --allow-self; dead panes are refused.");

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

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let target = action::typing_target(session, &args.pane_id, args.generation.as_deref()).await?;
    let flags = action::pane_flags(session, &target.id, &["#{bracket_paste_flag}"]).await?;
    let bracketed = match flags[0] {
        Some(true) => Bracketed::On,
        Some(false) => Bracketed::Off,
        None => Bracketed::Unknown,
    };
    let pieces = paste(session, &target.id, &args.text, args.line_ending).await?;
    let out = Pasted {
        pane: PaneRef::new(&target.id, session.generation()),
        bytes: args.text.len(),
        bracketed_paste: bracketed,
        line_ending: args.line_ending,
        buffer_pieces: pieces,
        buffer_deleted: true,
    };
    let text = format!("pasted {} byte(s) into {}", args.text.len(), target.id);
    Ok(ToolOutput::typed(&out, text))
}
