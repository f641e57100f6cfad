//! Reading the user's hooks without firing any: `show-hooks` is one of the few
//! commands tmux runs no `after-*` hook for. The broker never sets or edits a hook.

use crate::registry::Registry;
use crate::tmux::TmuxError;

/// Whether hook `name` (e.g. `after-set-option`) has any entry, globally or in
/// one of `sessions`. Sparse array entries (`name[17]`) count.
/// One tmux command list does the whole check (`show-hooks … ; show-hooks …`).
pub async fn is_set(registry: &Registry, name: &str, sessions: &[String]) -> Result<bool, TmuxError> {
    let mut args: Vec<&str> = vec!["show-hooks", "-g", name];
    for s in sessions {
        args.extend_from_slice(&[";", "show-hooks", "-t", s, name]);
    }
    Ok(has_entry(&registry.run_tmux(&args).await?, name))
}

/// `show-hooks NAME` prints the bare name when the hook is unset and
/// `NAME[i] command` for each entry.
pub fn has_entry(output: &str, name: &str) -> bool {
    output.lines().any(|l| l.strip_prefix(name).is_some_and(|rest| rest.starts_with('[')))
}

#[cfg(test)]
mod tests {
    use super::has_entry;

    #[test]
    fn unset_hook_prints_only_its_name() {
        assert!(!has_entry("after-set-option\n", "after-set-option"));
        assert!(!has_entry("", "after-set-option"));
        assert!(has_entry("after-set-option[3] run-shell true\n", "after-set-option"));
        assert!(!has_entry("after-set-option-x[0] y\n", "after-set-option"));
    }
}
