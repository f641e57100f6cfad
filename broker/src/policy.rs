//! A session's policy: what an agent may see and use, decided from three
//! sources in a fixed order of precedence.
//!
//! 1. The hello: what the agent's `tmux-mcp attach` asked for (`--scope`,
//!    `--safety`, `--toolset`, `--confirm`, `--enable-tool`, `--allow-self`).
//! 2. The server's `@mcp-*` options, as the pane table read them.
//! 3. The broker's defaults: its own `--enable-tool`, `--safety` and
//!    `--request-timeout`.
//!
//! The options are `@mcp-scope`, `@mcp-safety`, `@mcp-toolset`,
//! `@mcp-request-timeout`, `@mcp-confirm` and `@mcp-enable-tools`. The enabled tools are the union of
//! the three sources' lists. A malformed option the hello does not override
//! refuses the session, as do unknown `--enable-tool` names and `--scope
//! session` outside a pane. The attach prints the refusal's text.
//!
//! [`session_policy`] is pure: no tmux, no I/O, so each rule and each
//! [`Refusal`] is unit-tested here. The daemon reads the pane table, then
//! applies the answer (`daemon::serve_mcp`).

use crate::daemon_state::DaemonState;
use crate::tools;
use std::collections::BTreeSet;
use tmux_mcp_core::limits;
use tmux_mcp_core::wire::{McpHello, Scope, ServerRow, Tier, Toolset};

/// The broker's own settings, used where neither the hello nor an option says.
#[derive(Debug, Clone, Copy)]
pub struct Defaults<'a> {
    /// Tools the broker enables for every session (its `--enable-tool`).
    pub enable_tools: &'a [String],
    /// The broker's `--safety`.
    pub safety: Tier,
    /// The broker's `--request-timeout`, in seconds.
    pub request_timeout_seconds: f64,
}

impl<'a> Defaults<'a> {
    /// The defaults the broker was started with.
    pub fn of(daemon: &'a DaemonState) -> Defaults<'a> {
        Defaults {
            enable_tools: &daemon.enable_tools,
            safety: daemon.safety,
            request_timeout_seconds: daemon.request_timeout_seconds,
        }
    }
}

/// What one session may see and use.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub scope: Scope,
    /// The highest tier of tools the session may use.
    pub safety: Tier,
    pub toolset: Toolset,
    /// The tools it may call (and that `tools/list` shows).
    pub enabled: BTreeSet<String>,
    pub allow_self: bool,
    /// The kill, respawn and close tools ask the person first.
    pub confirm: bool,
    /// The most any wait of the session waits.
    pub request_timeout_seconds: f64,
}

/// Why a session is refused. The text (`Display`) is what the agent's
/// `tmux-mcp attach` prints; an option's value is quoted trimmed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("unknown tool(s) for --enable-tool: {}", .0.join(", "))]
    UnknownTools(Vec<String>),
    /// The pane table could not be read (checked by the daemon, between the
    /// hello's own check and the rest).
    #[error("cannot read the pane table: {0}")]
    PaneTable(String),
    #[error("--scope session needs the agent to run inside a pane of this tmux server; use --scope server")]
    SessionScopeOutsideTmux,
    #[error("@mcp-scope is {0:?}; expected session or server")]
    ScopeOption(String),
    #[error("@mcp-scope is session: agents see only their own sessions, and this agent runs in no pane of this tmux server; attach with --scope server")]
    SessionScopeOptionOutsideTmux,
    #[error("@mcp-safety is {0:?}; expected readonly, mutating or destructive")]
    SafetyOption(String),
    #[error("@mcp-toolset is {0:?}; expected default or python")]
    ToolsetOption(String),
    #[error("@mcp-request-timeout is {value:?}; {why}")]
    RequestTimeoutOption { value: String, why: String },
    #[error("@mcp-confirm is {0:?}; expected on or off")]
    ConfirmOption(String),
}

/// The refusal a hello earns on its own: tools it names that do not exist.
/// Checked before the pane table is read, so such a hello costs no tmux
/// command.
pub fn check_hello(hello: &McpHello) -> Result<(), Refusal> {
    let unknown = tools::unknown_tools(&hello.enable_tools);
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(Refusal::UnknownTools(unknown))
    }
}

/// The policy of a session from its `hello`, whether the agent runs in a
/// pane of this server (`in_pane`), the server's `options` and the broker's
/// `defaults`. The hello wins over an option, an option over a default; an
/// option that is set but malformed refuses the session, unless the hello
/// overrides it. Refusals are checked in the order of [`Refusal`]'s variants.
pub fn session_policy(
    hello: &McpHello,
    in_pane: bool,
    options: &ServerRow,
    defaults: &Defaults,
) -> Result<Policy, Refusal> {
    check_hello(hello)?;
    let scope = scope(hello, in_pane, options)?;
    let safety = match hello.via {
        None => safety(hello, options, defaults)?,
        // A session-scoped agent of another server continues the person's
        // hand-off here and nothing else: read-only whatever either says.
        Some(_) if scope == Scope::Session => Tier::Readonly,
        Some(_) => foreign_safety(hello, options)?,
    };
    let toolset = toolset(hello, options)?;
    let request_timeout_seconds = request_timeout(options, defaults)?;
    let confirm = confirm(hello, options)?;
    let option_tools = options
        .enable_tools_option
        .split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    // Naming a tool enables it whatever its tier, except for another server's
    // agent: its tier is the stricter of two, and a name does not lift it.
    let within_tier =
        |n: &String| hello.via.is_none() || tools::spec(n).is_some_and(|t| t.tier() <= safety);
    let enabled = tools::enabled_set(
        safety,
        defaults
            .enable_tools
            .iter()
            .cloned()
            .chain(option_tools)
            .chain(hello.enable_tools.iter().cloned())
            .filter(within_tier),
    );
    Ok(Policy {
        scope,
        safety,
        toolset,
        enabled,
        allow_self: hello.allow_self,
        confirm,
        request_timeout_seconds,
    })
}

/// `--scope`, else `@mcp-scope`, else the caller's session when it runs in
/// a pane, else the server. Session scope without a pane has nothing to see.
/// Another server's agent (`via`) runs in no pane here: a server-scoped one
/// is given the server, unless this server keeps agents to their own
/// sessions (`@mcp-scope session`: the stricter of the two sides). A
/// session-scoped one (its broker says `Session`), or any under that option,
/// is given a session scope with no session of this server (`daemon::admit`
/// leaves its caller sessions empty): it sees no pane here, and may only
/// continue a cursor of the person's hand-off (prefix + A), which any session
/// of this broker may read. Anything but `Session` in the hello is the server
/// (older brokers always said `Server`).
fn scope(hello: &McpHello, in_pane: bool, options: &ServerRow) -> Result<Scope, Refusal> {
    let option = || match options.scope_option.trim() {
        "" => Ok(None),
        "session" => Ok(Some(Scope::Session)),
        "server" => Ok(Some(Scope::Server)),
        opt => Err(Refusal::ScopeOption(opt.to_string())),
    };
    if hello.via.is_some() {
        let kept = hello.scope == Some(Scope::Session) || option()? == Some(Scope::Session);
        return Ok(if kept { Scope::Session } else { Scope::Server });
    }
    if let Some(scope) = hello.scope {
        if scope == Scope::Session && !in_pane {
            return Err(Refusal::SessionScopeOutsideTmux);
        }
        return Ok(scope);
    }
    match option()? {
        Some(Scope::Session) if !in_pane => Err(Refusal::SessionScopeOptionOutsideTmux),
        Some(scope) => Ok(scope),
        None if in_pane => Ok(Scope::Session),
        None => Ok(Scope::Server),
    }
}

/// The attach's `--safety`, else `@mcp-safety`, else the broker's `--safety`.
fn safety(hello: &McpHello, options: &ServerRow, defaults: &Defaults) -> Result<Tier, Refusal> {
    match (hello.safety, options.safety_option.trim()) {
        (Some(t), _) => Ok(t),
        (None, "") => Ok(defaults.safety),
        (None, opt) => Tier::parse(opt).ok_or_else(|| Refusal::SafetyOption(opt.to_string())),
    }
}

/// The tier of a session another server's broker opened for its agent
/// (`hello.via`): the stricter of the agent's own tier (`hello.safety`, which
/// that broker always sends) and this server's `@mcp-safety`, read-only where
/// that option is unset: the broker's own `--safety` is for the agents of its
/// own server, and an agent of another server may change this one only where
/// the person said so here. A malformed option refuses, as for any session.
fn foreign_safety(hello: &McpHello, options: &ServerRow) -> Result<Tier, Refusal> {
    let here = match options.safety_option.trim() {
        "" => Tier::Readonly,
        opt => Tier::parse(opt).ok_or_else(|| Refusal::SafetyOption(opt.to_string()))?,
    };
    Ok(here.min(hello.safety.unwrap_or(Tier::Readonly)))
}

/// `--toolset`, else `@mcp-toolset`, else the default spellings.
fn toolset(hello: &McpHello, options: &ServerRow) -> Result<Toolset, Refusal> {
    match (hello.toolset, options.toolset_option.trim()) {
        (Some(t), _) => Ok(t),
        (None, "") => Ok(Toolset::Default),
        (None, opt) => Toolset::parse(opt).ok_or_else(|| Refusal::ToolsetOption(opt.to_string())),
    }
}

/// `@mcp-request-timeout`, else the broker's `--request-timeout` (an agent
/// has no say).
fn request_timeout(options: &ServerRow, defaults: &Defaults) -> Result<f64, Refusal> {
    match options.request_timeout_option.trim() {
        "" => Ok(defaults.request_timeout_seconds),
        opt => limits::parse_request_timeout(opt).map_err(|why| Refusal::RequestTimeoutOption {
            value: opt.to_string(),
            why,
        }),
    }
}

/// `--confirm`, else `@mcp-confirm` (on for every agent). With `--confirm`
/// the option is not read at all.
fn confirm(hello: &McpHello, options: &ServerRow) -> Result<bool, Refusal> {
    if hello.confirm {
        return Ok(true);
    }
    match options.confirm_option.trim() {
        "" | "off" | "0" => Ok(false),
        "on" | "1" => Ok(true),
        opt => Err(Refusal::ConfirmOption(opt.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server with no `@mcp-*` option set.
    fn unset() -> ServerRow {
        ServerRow {
            pid: 1,
            start_time: 0,
            version: "3.5a".into(),
            socket_path: "/tmp/tmux-0/default".into(),
            broker_option: String::new(),
            enable_tools_option: String::new(),
            safety_option: String::new(),
            toolset_option: String::new(),
            request_timeout_option: String::new(),
            confirm_option: String::new(),
            scope_option: String::new(),
        }
    }

    const DEFAULTS: Defaults<'static> = Defaults {
        enable_tools: &[],
        safety: Tier::Readonly,
        request_timeout_seconds: 30.0,
    };

    /// Tools that are off at `--safety readonly`, in catalog order.
    fn off_by_default() -> Vec<String> {
        let on = tools::enabled_set(Tier::Readonly, []);
        tools::CATALOG
            .iter()
            .map(|t| t.name.to_string())
            .filter(|n| !on.contains(n))
            .collect()
    }

    fn refusal(hello: &McpHello, in_pane: bool, options: &ServerRow) -> String {
        session_policy(hello, in_pane, options, &DEFAULTS)
            .expect_err("refused")
            .to_string()
    }

    fn policy(hello: &McpHello, in_pane: bool, options: &ServerRow) -> Policy {
        session_policy(hello, in_pane, options, &DEFAULTS).expect("a policy")
    }

    /// The name of a tool of the destructive tier.
    fn a_destructive_tool() -> String {
        tools::CATALOG
            .iter()
            .find(|t| t.tier() == Tier::Destructive)
            .unwrap()
            .name
            .to_string()
    }

    #[test]
    fn unknown_tools_in_the_hello_are_refused() {
        let hello = McpHello {
            enable_tools: vec!["nope".into(), "nada".into()],
            ..Default::default()
        };
        assert_eq!(
            refusal(&hello, true, &unset()),
            "unknown tool(s) for --enable-tool: nope, nada"
        );
        assert_eq!(
            check_hello(&hello),
            Err(Refusal::UnknownTools(vec!["nope".into(), "nada".into()]))
        );
        assert_eq!(check_hello(&McpHello::default()), Ok(()));
    }

    #[test]
    fn an_unreadable_pane_table_is_refused_with_its_reason() {
        let r = Refusal::PaneTable("the feed helper reported: boom".into());
        assert_eq!(
            r.to_string(),
            "cannot read the pane table: the feed helper reported: boom"
        );
    }

    #[test]
    fn session_scope_outside_a_pane_is_refused() {
        let hello = McpHello {
            scope: Some(Scope::Session),
            ..Default::default()
        };
        assert_eq!(
            refusal(&hello, false, &unset()),
            "--scope session needs the agent to run inside a pane of this tmux server; use --scope server"
        );
        assert_eq!(policy(&hello, true, &unset()).scope, Scope::Session);
    }

    /// Each malformed option is refused naming it, its value (trimmed) and
    /// what it takes.
    #[test]
    fn a_malformed_option_is_refused() {
        let timeout = |bad: &str| ServerRow {
            request_timeout_option: bad.into(),
            ..unset()
        };
        let mut cases = vec![
            (
                ServerRow {
                    safety_option: " loud ".into(),
                    ..unset()
                },
                r#"@mcp-safety is "loud"; expected readonly, mutating or destructive"#.to_string(),
            ),
            (
                ServerRow {
                    toolset_option: "ruby".into(),
                    ..unset()
                },
                r#"@mcp-toolset is "ruby"; expected default or python"#.to_string(),
            ),
            (
                ServerRow {
                    confirm_option: "maybe".into(),
                    ..unset()
                },
                r#"@mcp-confirm is "maybe"; expected on or off"#.to_string(),
            ),
            (
                ServerRow {
                    scope_option: "wide".into(),
                    ..unset()
                },
                r#"@mcp-scope is "wide"; expected session or server"#.to_string(),
            ),
        ];
        for bad in ["0", "abc", "3601", "-1", "inf"] {
            let why = format!(
                "@mcp-request-timeout is {bad:?}; expected a number of seconds, 0 < t <= 3600"
            );
            cases.push((timeout(bad), why));
        }
        for (options, why) in cases {
            assert_eq!(refusal(&McpHello::default(), true, &options), why);
        }
    }

    #[test]
    fn refusals_come_in_a_fixed_order() {
        let everything_wrong = ServerRow {
            safety_option: "loud".into(),
            toolset_option: "ruby".into(),
            request_timeout_option: "0".into(),
            confirm_option: "maybe".into(),
            scope_option: "wide".into(),
            ..unset()
        };
        let mut hello = McpHello {
            enable_tools: vec!["nope".into()],
            scope: Some(Scope::Session),
            ..Default::default()
        };
        let mut seen = vec![];
        let mut options = everything_wrong.clone();
        loop {
            match session_policy(&hello, false, &options, &DEFAULTS) {
                Ok(_) => break,
                Err(r) => {
                    seen.push(std::mem::discriminant(&r));
                    match r {
                        Refusal::UnknownTools(_) => hello.enable_tools.clear(),
                        Refusal::SessionScopeOutsideTmux => hello.scope = None,
                        Refusal::ScopeOption(_) => options.scope_option = "session".into(),
                        Refusal::SessionScopeOptionOutsideTmux => options.scope_option.clear(),
                        Refusal::SafetyOption(_) => options.safety_option.clear(),
                        Refusal::ToolsetOption(_) => options.toolset_option.clear(),
                        Refusal::RequestTimeoutOption { .. } => {
                            options.request_timeout_option.clear()
                        }
                        Refusal::ConfirmOption(_) => options.confirm_option.clear(),
                        Refusal::PaneTable(_) => unreachable!("not decided here"),
                    }
                }
            }
        }
        let want = [
            Refusal::UnknownTools(vec![]),
            Refusal::SessionScopeOutsideTmux,
            Refusal::ScopeOption(String::new()),
            Refusal::SessionScopeOptionOutsideTmux,
            Refusal::SafetyOption(String::new()),
            Refusal::ToolsetOption(String::new()),
            Refusal::RequestTimeoutOption {
                value: String::new(),
                why: String::new(),
            },
            Refusal::ConfirmOption(String::new()),
        ]
        .iter()
        .map(std::mem::discriminant)
        .collect::<Vec<_>>();
        assert_eq!(seen, want);
    }

    #[test]
    fn scope_is_the_hellos_else_session_in_a_pane_else_server() {
        let server = McpHello {
            scope: Some(Scope::Server),
            ..Default::default()
        };
        assert_eq!(policy(&server, true, &unset()).scope, Scope::Server);
        assert_eq!(policy(&server, false, &unset()).scope, Scope::Server);
        assert_eq!(
            policy(&McpHello::default(), true, &unset()).scope,
            Scope::Session
        );
        assert_eq!(
            policy(&McpHello::default(), false, &unset()).scope,
            Scope::Server
        );
    }

    #[test]
    fn the_scope_option_decides_where_the_hello_does_not() {
        let option = |v: &str| ServerRow {
            scope_option: v.into(),
            ..unset()
        };
        let server = McpHello {
            scope: Some(Scope::Server),
            ..Default::default()
        };
        let none = McpHello::default();
        assert_eq!(policy(&none, true, &option("server")).scope, Scope::Server);
        assert_eq!(policy(&none, false, &option("server")).scope, Scope::Server);
        assert_eq!(
            policy(&none, true, &option(" session ")).scope,
            Scope::Session
        );
        assert_eq!(
            refusal(&none, false, &option("session")),
            "@mcp-scope is session: agents see only their own sessions, and this agent runs in no pane of this tmux server; attach with --scope server"
        );
        // The hello wins, a malformed option then unread.
        assert_eq!(
            policy(&server, false, &option("session")).scope,
            Scope::Server
        );
        assert_eq!(policy(&server, true, &option("wide")).scope, Scope::Server);
    }

    /// Another server's agent gets the server here unless either side keeps
    /// it to sessions: this server's `@mcp-scope session`, or its broker's
    /// hello (a session-scoped agent, reaching only what was handed over).
    #[test]
    fn another_servers_agent_gets_the_stricter_scope() {
        let via = |scope| McpHello {
            via: Some("/tmp/tmux-0/default".into()),
            safety: Some(Tier::Destructive),
            scope,
            ..Default::default()
        };
        let option = |v: &str| ServerRow {
            scope_option: v.into(),
            ..unset()
        };
        let scope_of = |h: &McpHello, o: &ServerRow| policy(h, false, o).scope;
        assert_eq!(scope_of(&via(Some(Scope::Server)), &unset()), Scope::Server);
        assert_eq!(
            scope_of(&via(Some(Scope::Server)), &option("server")),
            Scope::Server
        );
        assert_eq!(
            scope_of(&via(Some(Scope::Server)), &option("session")),
            Scope::Session
        );
        assert_eq!(
            scope_of(&via(Some(Scope::Session)), &option("server")),
            Scope::Session
        );
        assert_eq!(scope_of(&via(None), &unset()), Scope::Server);
        assert_eq!(
            refusal(&via(Some(Scope::Server)), false, &option("wide")),
            r#"@mcp-scope is "wide"; expected session or server"#
        );
    }

    #[test]
    fn safety_is_the_hellos_else_the_options_else_the_brokers() {
        let mutating = McpHello {
            safety: Some(Tier::Mutating),
            ..Default::default()
        };
        let destructive = ServerRow {
            safety_option: "destructive".into(),
            ..unset()
        };
        let bad = ServerRow {
            safety_option: "loud".into(),
            ..unset()
        };
        let broker = Defaults {
            safety: Tier::Destructive,
            ..DEFAULTS
        };
        let safety = |h: &McpHello, o: &ServerRow, d: &Defaults| {
            session_policy(h, true, o, d).map(|p| p.safety)
        };
        assert_eq!(safety(&mutating, &destructive, &broker), Ok(Tier::Mutating));
        assert_eq!(safety(&mutating, &bad, &DEFAULTS), Ok(Tier::Mutating));
        assert_eq!(
            safety(&McpHello::default(), &destructive, &DEFAULTS),
            Ok(Tier::Destructive)
        );
        let whitespace = ServerRow {
            safety_option: "  ".into(),
            ..unset()
        };
        assert_eq!(
            safety(&McpHello::default(), &whitespace, &broker),
            Ok(Tier::Destructive)
        );
        assert_eq!(
            safety(&McpHello::default(), &unset(), &DEFAULTS),
            Ok(Tier::Readonly)
        );
    }

    #[test]
    fn toolset_is_the_hellos_else_the_options_else_default() {
        let python = McpHello {
            toolset: Some(Toolset::Python),
            ..Default::default()
        };
        let option = |v: &str| ServerRow {
            toolset_option: v.into(),
            ..unset()
        };
        assert_eq!(
            policy(&python, true, &option("default")).toolset,
            Toolset::Python
        );
        assert_eq!(
            policy(&python, true, &option("ruby")).toolset,
            Toolset::Python
        );
        assert_eq!(
            policy(&McpHello::default(), true, &option(" python ")).toolset,
            Toolset::Python
        );
        assert_eq!(
            policy(&McpHello::default(), true, &unset()).toolset,
            Toolset::Default
        );
    }

    #[test]
    fn request_timeout_is_the_options_else_the_brokers() {
        let options = ServerRow {
            request_timeout_option: " 2.5 ".into(),
            ..unset()
        };
        assert_eq!(
            policy(&McpHello::default(), true, &options).request_timeout_seconds,
            2.5
        );
        assert_eq!(
            policy(&McpHello::default(), true, &unset()).request_timeout_seconds,
            30.0
        );
    }

    #[test]
    fn confirm_is_the_hellos_else_the_option() {
        let confirm = McpHello {
            confirm: true,
            ..Default::default()
        };
        let option = |v: &str| ServerRow {
            confirm_option: v.into(),
            ..unset()
        };
        // --confirm does not read the option, so a malformed one is no refusal.
        assert!(policy(&confirm, true, &option("maybe")).confirm);
        assert!(policy(&confirm, true, &option("off")).confirm);
        for (v, want) in [
            ("on", true),
            ("1", true),
            (" on ", true),
            ("off", false),
            ("0", false),
            ("", false),
        ] {
            assert_eq!(
                policy(&McpHello::default(), true, &option(v)).confirm,
                want,
                "{v:?}"
            );
        }
    }

    #[test]
    fn enabled_tools_are_the_tier_plus_those_the_broker_the_options_and_the_hello_name() {
        let extra = off_by_default();
        assert!(extra.len() >= 3, "{extra:?}");
        let broker_tools = vec![extra[0].clone()];
        let defaults = Defaults {
            enable_tools: &broker_tools,
            ..DEFAULTS
        };
        let options = ServerRow {
            // Split on commas and spaces; a name that is no tool is ignored
            // here (only the hello's are refused).
            enable_tools_option: format!("{}, no_such_tool", extra[1]),
            ..unset()
        };
        let hello = McpHello {
            enable_tools: vec![extra[2].clone()],
            allow_self: true,
            ..Default::default()
        };
        let p = session_policy(&hello, true, &options, &defaults).unwrap();
        assert_eq!(
            p.enabled,
            tools::enabled_set(Tier::Readonly, extra[..3].iter().cloned())
        );
        assert!(p.allow_self);
        assert_eq!(
            policy(&McpHello::default(), true, &unset()).enabled,
            tools::enabled_set(Tier::Readonly, [])
        );
        let destructive = McpHello {
            safety: Some(Tier::Destructive),
            ..Default::default()
        };
        assert_eq!(
            policy(&destructive, true, &unset()).enabled,
            tools::enabled_set(Tier::Destructive, [])
        );
    }

    /// A session another server's broker opens for its agent: the whole
    /// server, and the stricter of the agent's tier and this server's
    /// `@mcp-safety`, read-only while that is unset (the broker's own
    /// `--safety` does not count for it).
    #[test]
    fn another_server_s_agent_gets_the_stricter_tier_read_only_by_default() {
        let via = |safety| McpHello {
            via: Some("/tmp/tmux-1/default".into()),
            safety: Some(safety),
            scope: Some(Scope::Server),
            ..Default::default()
        };
        let permissive = Defaults {
            safety: Tier::Destructive,
            ..DEFAULTS
        };
        let p = session_policy(&via(Tier::Destructive), false, &unset(), &permissive).unwrap();
        assert_eq!((p.safety, p.scope), (Tier::Readonly, Scope::Server));
        let mutating_here = ServerRow {
            safety_option: "mutating".into(),
            ..unset()
        };
        let p = policy(&via(Tier::Destructive), false, &mutating_here);
        assert_eq!(p.safety, Tier::Mutating);
        let p = policy(&via(Tier::Readonly), false, &mutating_here);
        assert_eq!(p.safety, Tier::Readonly);
        let bad = ServerRow {
            safety_option: "all".into(),
            ..unset()
        };
        assert_eq!(
            refusal(&via(Tier::Destructive), false, &bad),
            Refusal::SafetyOption("all".into()).to_string()
        );
        // A tool named by the hello does not lift the tier.
        let destructive_tool = a_destructive_tool();
        let named = McpHello {
            enable_tools: vec![destructive_tool.clone()],
            ..via(Tier::Destructive)
        };
        assert!(!policy(&named, false, &mutating_here)
            .enabled
            .contains(&destructive_tool));
        // Without `via`, the same hello keeps its own tier.
        let own = McpHello {
            safety: Some(Tier::Destructive),
            ..Default::default()
        };
        assert_eq!(policy(&own, true, &unset()).safety, Tier::Destructive);
    }

    /// A session-scoped agent of another server (`via`, scope `Session`)
    /// gets session scope here without a pane (its caller sessions are
    /// none: it sees no pane), read-only whatever its own tier, this
    /// server's `@mcp-safety` or the tools its hello names: all it can do is
    /// continue a hand-off cursor. Scope absent is the server, as before.
    #[test]
    fn another_server_s_session_scoped_agent_is_read_only_and_sees_no_session() {
        let mutating_here = ServerRow {
            safety_option: "destructive".into(),
            ..unset()
        };
        let destructive_tool = a_destructive_tool();
        let hello = McpHello {
            via: Some("/tmp/tmux-1/default".into()),
            safety: Some(Tier::Destructive),
            scope: Some(Scope::Session),
            enable_tools: vec![destructive_tool.clone(), "tmux_capture".into()],
            ..Default::default()
        };
        let permissive = Defaults {
            safety: Tier::Destructive,
            ..DEFAULTS
        };
        let p = session_policy(&hello, false, &mutating_here, &permissive).unwrap();
        assert_eq!((p.scope, p.safety), (Scope::Session, Tier::Readonly));
        assert!(!p.enabled.contains(&destructive_tool), "{:?}", p.enabled);
        assert!(p.enabled.contains("tmux_capture"), "a read tool it names");
        assert!(p.enabled.contains("capture_since"));
        for t in &p.enabled {
            assert_eq!(tools::spec(t).unwrap().tier(), Tier::Readonly, "{t}");
        }
        // No scope said: the whole server, as a server-scoped agent's.
        let unsaid = McpHello {
            scope: None,
            ..hello.clone()
        };
        assert_eq!(policy(&unsaid, false, &unset()).scope, Scope::Server);
    }
}
