//! Typing into a pane: literal text or tmux key names as `send-keys`
//! commands, each within one tmux message, delivered in order. Every tool
//! that types (tmux_send, send_keys, paste_text, send_prompt, run_command)
//! types through here.
use crate::session::Session;
use crate::toolkit::acting::tmux_command;
use tmux_mcp_core::tmux::quote;

pub use tmux_mcp_core::tmux::COMMAND_ARG_BYTES;

fn arg_bytes(args: &[String]) -> usize {
    args.iter().map(|a| a.len() + 1).sum()
}

/// `text` in pieces of at most `max` bytes, cut at character boundaries
/// (an empty text is one empty piece: it is still sent, as the contract says).
pub fn split_text(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let mut cut = max;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out.push(rest);
    out
}

/// Consecutive groups of `args` whose encoded size stays within `room`.
fn group_args(args: Vec<String>, room: usize) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = vec![Vec::new()];
    let mut used = 0;
    for a in args {
        let n = a.len() + 1;
        if used + n > room && !out.last().is_some_and(Vec::is_empty) {
            out.push(Vec::new());
            used = 0;
        }
        used += n;
        out.last_mut().expect("non-empty").push(a);
    }
    out
}

/// What to type: literal text (`send-keys -l`) or tmux key names.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    Text(&'a str),
    Keys(&'a [String]),
}

/// The `send-keys` commands that type `input` into pane `id`, in order, each
/// within one tmux message ([`COMMAND_ARG_BYTES`]); `--` ends the flags, so a
/// leading `-` is text or a key name, and a trailing `;` is escaped
/// ([`quote::literal_arg`]) so tmux never takes it for a command separator.
/// Shared by every tool that types (tmux_send, send_keys, run_command).
pub fn commands(id: &str, input: Input<'_>) -> Vec<Vec<String>> {
    match input {
        Input::Text(text) => {
            let head = vec![
                "send-keys".to_string(),
                "-l".into(),
                "-t".into(),
                id.to_string(),
                "--".into(),
            ];
            let room = COMMAND_ARG_BYTES - arg_bytes(&head) - 2; // NUL, and a `\` literal_arg may add
            split_text(text, room)
                .into_iter()
                .map(|t| {
                    head.iter()
                        .cloned()
                        .chain([quote::literal_arg(t)])
                        .collect()
                })
                .collect()
        }
        Input::Keys(keys) => {
            let head = vec![
                "send-keys".to_string(),
                "-t".into(),
                id.to_string(),
                "--".into(),
            ];
            let room = COMMAND_ARG_BYTES - arg_bytes(&head);
            group_args(keys.iter().map(|k| quote::literal_arg(k)).collect(), room)
                .into_iter()
                .map(|g| head.iter().cloned().chain(g).collect())
                .collect()
        }
    }
}

/// Runs `commands` in order. On a failure: how many landed before it, and why.
pub async fn deliver(
    session: &Session,
    commands: &[Vec<String>],
) -> Result<(), (usize, tmux_command::Failure)> {
    for (i, argv) in commands.iter().enumerate() {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        tmux_command::run_command(&session.broker, &argv)
            .await
            .map_err(|f| (i, f))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_splits_at_character_boundaries_and_reassembles() {
        let text = "é".repeat(20_000) + "tail;";
        let pieces = split_text(&text, 1001);
        assert!(pieces.iter().all(|p| p.len() <= 1001));
        assert_eq!(pieces.concat(), text);
        assert_eq!(split_text("", 10), vec![""]);
    }

    #[test]
    fn key_groups_fit_one_command() {
        let keys: Vec<String> = (0..256)
            .map(|i| format!("{}{i}", "x".repeat(250)))
            .collect();
        let groups = group_args(keys.clone(), 4000);
        assert!(groups.iter().all(|g| arg_bytes(g) <= 4000));
        assert_eq!(groups.concat(), keys);
    }
}
