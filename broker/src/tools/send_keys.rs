//! `send_keys` (libtmux family, mutating): tmux key names (`keys`) or text
//! (`text`, literal by default) into one pane, optionally followed by Enter.
//!
//! The typing itself is `tmux_send`'s ([`keystrokes::commands`]): `--` ends the flags
//! so a leading `-` is a key name or text, a trailing `;` is escaped so tmux
//! never splits the command there, and a long input goes as several commands
//! that each fit one tmux message. Enter is a separate `send-keys Enter` (the
//! Enter *key*, CR), because inside `-l` the word "Enter" would be typed as text.

use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::action;
use crate::toolkit::libtmux::wording;
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::schemas::patterns::NO_NUL;
use crate::toolkit::target::ids::{Generation, PaneId};
use crate::toolkit::target::references::PaneRef;
use crate::toolkit::typing::keystrokes::{self, Input};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const SPEC: ToolSpec = ToolSpec::new(
    "send_keys",
    Annotations::mutating("Send keys to a pane", false),
    input_of::<Args>,
    schema_of::<Sent>,
    |c| c.run(call),
)
.description("Type into a pane: tmux key names (keys) or literal text; enter: true presses Enter afterwards.")
.details("Type into one pane (%N): `keys` are tmux key names sent in order (e.g. [\"C-c\"], [\"Up\",\"Enter\"]); `text` is typed literally (`literal` defaults to true; with literal:false the text is one key name or word for tmux to interpret). Give keys or text, not both. `enter: true` presses Enter afterwards. ';', '\\;' and a leading '-' arrive as themselves. Success means tmux accepted the input, not that a program read it. Mutating tier; the agent's own pane needs --allow-self; dead panes are refused.");

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
    generation: Option<Generation>,
    /// e.g. ["C-c"] or ["Up", "Enter"].
    #[schemars(length(min = 1, max = 256), inner(length(min = 1, max = 256), regex(pattern = NO_NUL)))]
    keys: Option<Vec<String>>,
    /// Typed literally unless literal: false.
    #[schemars(length(max = 65536), regex(pattern = NO_NUL))]
    text: Option<String>,
    /// false: tmux reads text as a key name.
    literal: Option<bool>,
    #[serde(default)]
    enter: bool,
}

/// What was typed, as tmux accepted it.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Sent {
    pane: PaneRef,
    /// Key names sent (0 for text).
    keys: usize,
    /// Characters of text typed literally (0 for keys).
    characters: usize,
    /// Whether Enter was pressed afterwards.
    enter: bool,
    /// `send-keys` commands it took (long input is split to fit tmux's messages).
    commands: usize,
    /// Always `observed`: tmux accepted every command.
    delivery: DeliveryObserved,
}

#[derive(Serialize, JsonSchema)]
enum DeliveryObserved {
    #[serde(rename = "observed")]
    Observed,
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let keys_as_text;
    let (input, keys, characters) = match (&args.keys, &args.text) {
        (Some(_), Some(_)) => {
            return Err(wording::action_error(
                "Give keys or text, not both.",
                Delivery::NotSent,
            ))
        }
        (None, None) if !args.enter => {
            return Err(wording::action_error(
                "Give keys, text, or enter: true.",
                Delivery::NotSent,
            ))
        }
        (Some(k), None) => (Some(Input::Keys(k)), k.len(), 0),
        (None, Some(t)) if args.literal == Some(false) => {
            keys_as_text = vec![t.clone()];
            (Some(Input::Keys(&keys_as_text)), 1, 0)
        }
        (None, Some(t)) => (Some(Input::Text(t)), 0, t.chars().count()),
        (None, None) => (None, 0, 0),
    };
    if args.literal.is_some() && args.text.is_none() {
        return Err(wording::action_error(
            "literal applies to text only (keys are always key names).",
            Delivery::NotSent,
        ));
    }
    let target = action::typing_target(session, &args.pane_id, args.generation.as_deref()).await?;
    let mut commands = input
        .map(|i| keystrokes::commands(&target.id, i))
        .unwrap_or_default();
    if args.enter {
        commands.push(vec![
            "send-keys".into(),
            "-t".into(),
            target.id.clone(),
            "Enter".into(),
        ]);
    }
    if let Err((landed, f)) = keystrokes::deliver(session, &commands).await {
        if landed == 0 {
            return Err(wording::failed(&f));
        }
        return Err(wording::action_error(&format!("Command {} of {} failed after {landed} were delivered, so the pane received part of the input: {}", landed + 1, commands.len(), f.message.trim_end_matches(" Nothing was sent.")), Delivery::Observed));
    }
    let sent = Sent {
        pane: PaneRef::new(&target.id, session.generation()),
        keys,
        characters,
        enter: args.enter,
        commands: commands.len(),
        delivery: DeliveryObserved::Observed,
    };
    let what = if characters > 0 {
        format!("{characters} character(s)")
    } else if keys > 0 {
        format!("{keys} key(s)")
    } else {
        "nothing".into()
    };
    let text = format!(
        "sent {what}{} to {}",
        if args.enter { " and Enter" } else { "" },
        target.id
    );
    Ok(ToolOutput::typed(&sent, text))
}
