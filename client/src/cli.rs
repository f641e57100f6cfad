//! The `tmux-mcp` command line: subcommands and their flags.
//!
//! - `attach` — the MCP server command an agent runs: finds (or starts) the broker
//!   of its tmux server and relays MCP bytes between stdio and the broker.
//! - `feed` — run by tmux (`run-shell`) to hand the broker the pane table.
//! - `cursor` — run by the key binding to hand a pane to an agent.
//! - `start`, `status`, `doctor`, `uninstall`, `socket-path` — for people
//!   and scripts.
//! - `shell-init` — the shell integration a person evals in their rc file.

use crate::locate::ServerArgs;
use crate::{doctor, helpers, locate, relay, shell_init, uninstall};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tmux_mcp_core::wire::Scope;

#[derive(Parser, Debug)]
#[command(
    name = "tmux-mcp",
    version,
    about = "tmux plugin that lets MCP clients see and drive your tmux panes exactly and safely"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Relay MCP (stdio) to this tmux server's broker, starting it if needed.
    Attach {
        #[command(flatten)]
        server: ServerArgs,
        /// Enable an opt-in tool for this session (repeatable).
        #[arg(long = "enable-tool", value_name = "NAME")]
        enable_tool: Vec<String>,
        /// What the agent may see: its own tmux session, or the whole server.
        /// Default: the tmux option @mcp-scope, else session when run inside
        /// a pane of this server, else server.
        #[arg(long, value_enum)]
        scope: Option<ScopeArg>,
        /// Allow typing into or closing the agent's own pane.
        #[arg(long)]
        allow_self: bool,
        /// The highest tier of tools this agent may use: readonly (the
        /// default), mutating (typing, creating, arranging) or destructive
        /// (also killing). Default: the tmux option @mcp-safety, else readonly.
        #[arg(long, value_name = "TIER", value_parser = parse_tier)]
        safety: Option<tmux_mcp_core::wire::Tier>,
        /// Whose spellings of the libtmux family: default (camelCase,
        /// libtmux-ts) or python (tmux-python/libtmux-mcp's `capture_pane`).
        /// Default: the tmux option @mcp-toolset, else default.
        #[arg(long, value_name = "NAME", value_parser = parse_toolset)]
        toolset: Option<tmux_mcp_core::wire::Toolset>,
        /// Ask the person (MCP elicitation) before each kill, respawn or
        /// close, naming what it ends; refused when the client cannot ask.
        /// Also on for every agent with the tmux option @mcp-confirm on.
        #[arg(long)]
        confirm: bool,
        /// Set by another machine's broker that reaches this one over SSH
        /// for one of its agents (a call naming this host): that server's
        /// name, for logs. Such an agent gets the stricter of its --safety
        /// and this server's @mcp-safety, read-only while that is unset.
        #[arg(long, value_name = "SERVER", hide = true)]
        via: Option<String>,
    },
    /// run-shell helper: forward the pane table on stdin to the broker.
    #[command(hide = true)]
    Feed {
        #[arg(long, value_name = "PATH")]
        broker: PathBuf,
        #[arg(long)]
        req: u64,
    },
    /// Key-binding helper: show a pane's reference and put it in buffer `mcp-cursor`.
    Cursor {
        #[command(flatten)]
        server: ServerArgs,
        /// The pane id, e.g. %3 (the binding passes #{pane_id}).
        pane: String,
    },
    /// Make sure the broker of this tmux server runs; print its socket path.
    Start {
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Show the broker's state.
    Status {
        #[command(flatten)]
        server: ServerArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Take the plugin out of a running tmux server: stop its broker, remove
    /// the key binding it made and every @mcp-* option (a step whose hook is
    /// set is left out and named; exit 3 then).
    Uninstall {
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Print the shell integration to eval in your shell's rc file
    /// (`eval "$(tmux-mcp shell-init zsh)"`; fish: `tmux-mcp shell-init fish
    /// | source`), so the broker knows what your shell runs; `--check` says
    /// whether this shell is enrolled.
    ShellInit {
        #[command(flatten)]
        server: ServerArgs,
        #[arg(value_enum, required_unless_present = "check")]
        shell: Option<crate::shell_init::Shell>,
        /// Say whether the shell this runs in is enrolled (exit 1 if not).
        #[arg(long, conflicts_with = "shell")]
        check: bool,
    },
    /// Check everything tmux-mcp depends on and say what is wrong.
    Doctor {
        #[command(flatten)]
        server: ServerArgs,
    },
}

#[derive(clap::ValueEnum, Debug, Clone, Copy)]
enum ScopeArg {
    Session,
    Server,
}

/// The `tmux-mcp` command: parses the command line and runs the subcommand.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Status { .. }
            | Command::Doctor { .. }
            | Command::Start { .. }
            | Command::Uninstall { .. }
            | Command::ShellInit { .. }
    ) {
        // Commands for people print reports: `tmux-mcp status | head` ends
        // them quietly, as any Unix tool, instead of a panic on EPIPE (Rust
        // ignores SIGPIPE). `attach` keeps it ignored: it handles a closed
        // stdout itself.
        tmux_mcp_core::platform::default_sigpipe();
    }
    let result = match cli.command {
        Command::Attach {
            server,
            enable_tool,
            scope,
            allow_self,
            safety,
            toolset,
            confirm,
            via,
        } => {
            let scope = scope.map(|s| match s {
                ScopeArg::Session => Scope::Session,
                ScopeArg::Server => Scope::Server,
            });
            relay::attach(
                &server,
                relay::Grant {
                    enable_tools: enable_tool,
                    scope,
                    allow_self,
                    safety,
                    toolset,
                    confirm,
                    via,
                },
            )
        }
        Command::Feed { broker, req } => {
            helpers::feed(&broker, req);
            return ExitCode::SUCCESS; // a run-shell helper never fails loudly
        }
        Command::Cursor { server, pane } => helpers::cursor(&server, &pane),
        Command::Start { server } => locate::ensure(&server).map(|(_, sock)| {
            println!("{}", sock.display());
            ExitCode::SUCCESS
        }),
        Command::Status { server, json } => doctor::status(&server, json),
        Command::Doctor { server } => doctor::doctor(&server),
        Command::ShellInit {
            server,
            shell,
            check,
        } => match shell {
            Some(shell) if !check => shell_init::init(&server, shell),
            _ => shell_init::check(&server),
        },
        Command::Uninstall { server } => uninstall::uninstall(&server),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tmux-mcp: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn parse_tier(s: &str) -> Result<tmux_mcp_core::wire::Tier, String> {
    tmux_mcp_core::wire::Tier::parse(s)
        .ok_or_else(|| "expected readonly, mutating or destructive".into())
}

fn parse_toolset(s: &str) -> Result<tmux_mcp_core::wire::Toolset, String> {
    tmux_mcp_core::wire::Toolset::parse(s).ok_or_else(|| "expected default or python".into())
}
