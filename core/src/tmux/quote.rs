//! Every way a string is escaped on its way into tmux, in one place: as a
//! shell word (`run-shell`), as an argument tmux might split at `;`, as text
//! tmux expands as a format, and as a literal inside a format comparison.

/// Quotes `s` as one POSIX shell word.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Escapes `#` so tmux's format expansion leaves `s` as it is. Expansion
/// turns `##` into `#`, but copies a run of `#`s that is followed by `[` (a
/// style, `#[fg=red]`, left for drawing) unchanged, so such a run must not be
/// doubled: `a#[b` stays `a#[b` (`format_expand1` in tmux 3.3a-3.7c).
pub fn format_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some(start) = rest.find('#') {
        out.push_str(&rest[..start]);
        let run = rest[start..].bytes().take_while(|b| *b == b'#').count();
        let after = &rest[start + run..];
        out.push_str(&"#".repeat(if after.starts_with('[') { run } else { 2 * run }));
        rest = after;
    }
    out.push_str(rest);
    out
}

/// One argument for tmux, literal: tmux splits commands given as arguments at
/// an argument that *ends* in `;` (dropping it) and turns a final `\;` into
/// `;`. Inserting a backslash before a final `;` makes every string arrive
/// unchanged (`x;` → `x\;` → `x;`, `x\;` → `x\\;` → `x\;`).
pub fn literal_arg(s: &str) -> String {
    match s.strip_suffix(';') {
        Some(head) => format!("{head}\\;"),
        None => s.to_string(),
    }
}

/// An argument that tmux also expands as a format (names, `-c`): `#` doubled.
pub fn format_arg(s: &str) -> String {
    literal_arg(&format_literal(s))
}

/// Text used as a literal operand inside a tmux format comparison
/// (`#{==:#{pane_id},TEXT}`): `#`, `,` and `}` escaped.
pub fn format_operand(s: &str) -> String {
    s.replace('#', "##").replace(',', "#,").replace('}', "#}")
}

/// `then` where the format variable `key` (e.g. `session_id`) equals `value`,
/// else nothing. tmux does not expand an untaken `?` branch, so a loop over
/// this costs one comparison per item that does not match.
pub fn when_equal(key: &str, value: &str, then: &str) -> String {
    format!("#{{?#{{==:#{{{key}}},{}}},{then},}}", format_operand(value))
}

/// `body` expanded in the context of pane `pane` in window `window` as session
/// `session` links it (once per such link): a `#{S:#{W:#{P:…}}}` loop that
/// descends only into that session and that window, so it costs the number of
/// sessions plus that session's windows plus that window's panes, not every
/// pane of the server (on 1,000 panes about 1.7 ms of tmux's time against 7).
pub fn in_pane(session: &str, window: &str, pane: &str, body: &str) -> String {
    let p = format!("#{{P:{}}}", when_equal("pane_id", pane, body));
    let w = format!("#{{W:{}}}", when_equal("window_id", window, &p));
    format!("#{{S:{}}}", when_equal("session_id", session, &w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("a'b"), "'a'\\''b'");
        assert_eq!(format_literal("/x/#S/y"), "/x/##S/y");
        // A run of `#` before `[` is copied by tmux as it is: not doubled.
        for (s, want) in [
            ("a#[b", "a#[b"),
            ("a##[b", "a##[b"),
            ("a#b#[c", "a##b#[c"),
            ("x##{y", "x####{y"),
            ("e#", "e##"),
            ("#", "##"),
            ("", ""),
            ("##[x]#", "##[x]##"),
        ] {
            assert_eq!(format_literal(s), want, "{s:?}");
        }
        assert_eq!(format_operand("%1,}#"), "%1#,#}##");
        assert_eq!(
            in_pane("$1", "@2", "%3", "R"),
            "#{S:#{?#{==:#{session_id},$1},#{W:#{?#{==:#{window_id},@2},#{P:#{?#{==:#{pane_id},%3},R,}},}},}}"
        );
    }

    #[test]
    fn literal_arg_survives_tmux_semicolon_splitting() {
        // tmux drops a final `;` and turns a final `\;` into `;`.
        let tmux_parse = |a: &str| match a.strip_suffix(';') {
            Some(h) => h
                .strip_suffix('\\')
                .map_or_else(|| h.to_string(), |hh| format!("{hh};")),
            None => a.to_string(),
        };
        for s in [
            "", ";", "x;", "x\\;", "a;b", "\\", "Enter", "-x", ";;", "x\\\\;",
        ] {
            assert_eq!(tmux_parse(&literal_arg(s)), s, "{s:?}");
        }
        assert_eq!(format_arg("a#b;"), "a##b\\;");
    }
}
