//! Reading the user's hooks without firing any: `show-hooks` is one of the few
//! commands tmux runs no `after-*` hook for. The broker never sets or edits a hook.
//!
//! Pure: the command lists ([`is_set_argv`], [`while_exists`],
//! [`print_gone`] and [`gone_marker`]) and [`has_entry`], which reads their
//! output. The reads run elsewhere: `Registry::hook_is_set` (engine), the
//! `show_hooks` tool, and the client's `uninstall` and `doctor`.

/// The command list that reads hook `name` globally and in each of
/// `sessions` (`show-hooks … ; show-hooks …`, one tmux connection); its output
/// goes to [`has_entry`]. Each session's read runs only while that session
/// exists ([`while_exists`]): a session closed since the table was read holds
/// no hook that could fire.
pub fn is_set_argv(name: &str, sessions: &[String]) -> Vec<String> {
    let mut args: Vec<String> = vec!["show-hooks".into(), "-g".into(), name.into()];
    for s in sessions {
        args.push(";".into());
        args.extend(while_exists(
            s,
            &format!("show-hooks -t '{s}' {name}"),
            None,
        ));
    }
    args
}

/// `cmd` (a tmux command string; ids in it single-quoted, since tmux's parser
/// expands `$…`) as one argv that runs it only while entity `id` (`$S`, `@W`
/// or `%P`) exists, checked in tmux's own queue right before it, and runs
/// `otherwise` when it does not. A command whose target has gone fails, and
/// tmux >= 3.5 then runs the person's `command-error` hook; `if-shell -t` may
/// name a missing target (its target can fail), the format then expands in an
/// empty context and the comparison is false.
pub fn while_exists(id: &str, cmd: &str, otherwise: Option<&str>) -> Vec<String> {
    let key = match id.chars().next() {
        Some('$') => "session_id",
        Some('@') => "window_id",
        _ => "pane_id",
    };
    let check = format!(
        "#{{==:#{{{key}}},{}}}",
        crate::tmux::quote::format_operand(id)
    );
    let mut argv = vec![
        "if-shell".to_string(),
        "-F".into(),
        "-t".into(),
        id.into(),
        check,
        cmd.into(),
    ];
    argv.extend(otherwise.map(str::to_string));
    argv
}

/// A command that prints [`gone_marker`]: what [`while_exists`] runs when the
/// entity has gone, so a caller tells "gone" from "no output". `list-commands`
/// fires no hook.
pub fn print_gone() -> String {
    format!("list-commands -F {} list-commands", gone_marker())
}

/// A line no tmux output contains (per broker process).
pub fn gone_marker() -> &'static str {
    static MARKER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARKER.get_or_init(|| format!("tmux-mcp-gone-{}", crate::sys::random_hex(16)))
}

/// `show-hooks NAME` prints the bare name when the hook is unset and
/// `NAME[i] command` for each entry.
pub fn has_entry(output: &str, name: &str) -> bool {
    output.lines().any(|l| {
        l.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('['))
    })
}

#[cfg(test)]
mod tests {
    use super::has_entry;

    #[test]
    fn unset_hook_prints_only_its_name() {
        assert!(!has_entry("after-set-option\n", "after-set-option"));
        assert!(!has_entry("", "after-set-option"));
        assert!(has_entry(
            "after-set-option[3] run-shell true\n",
            "after-set-option"
        ));
        assert!(!has_entry("after-set-option-x[0] y\n", "after-set-option"));
    }
}
