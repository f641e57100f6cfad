//! The `tmux-mcp-broker` command: the per-tmux-server daemon. Normally started
//! by the plugin script or by `tmux-mcp attach`, both through `tmux run-shell
//! -b`, so tmux owns it as a job. It logs to a file in its runtime directory,
//! never to a pane. The binary itself is built by the plugin crate
//! (`plugin/src/bin/tmux-mcp-broker.rs`, one line calling [`main`]), so that
//! one published package installs both commands.

use crate::daemon::{self, Outcome};
use anyhow::Context;
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "tmux-mcp-broker",
    version,
    about = "Per-tmux-server MCP broker (started by the tmux-mcp plugin)"
)]
struct Args {
    /// The tmux server's socket path (tmux's #{socket_path}).
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
    /// Directory for the broker socket, lock and log (default: see docs/internals.md, "Lifetime and the single-instance rule").
    #[arg(long, value_name = "DIR")]
    runtime_dir: Option<PathBuf>,
    /// Enable a tool for every session of this broker (repeatable).
    #[arg(long = "enable-tool", value_name = "NAME")]
    enable_tool: Vec<String>,
    /// The highest tool tier sessions get when neither `@mcp-safety` nor the
    /// attach's `--safety` names one: readonly, mutating or destructive.
    #[arg(long, value_name = "TIER", default_value = "readonly", value_parser = parse_tier)]
    safety: tmux_mcp_core::wire::Tier,
    /// The tmux-mcp helper binary (default: next to this binary, then PATH).
    #[arg(long, value_name = "PATH")]
    helper: Option<PathBuf>,
    /// How to read the pane table (default: list-commands, else run-shell).
    #[arg(long, value_enum)]
    feed: Option<FeedArg>,
    /// Run tmux commands by exec'ing tmux, never with the in-process protocol client.
    #[arg(long)]
    exec_only: bool,
    /// The deadline of one request in seconds; `tmux_wait` never waits longer
    /// (reported as `limits.request_timeout_seconds`).
    #[arg(long, value_name = "SECONDS", default_value_t = tmux_mcp_core::limits::REQUEST_TIMEOUT_SECONDS as f64, value_parser = parse_timeout)]
    request_timeout: f64,
    /// Log to standard error instead of the log file (for debugging by hand).
    #[arg(long)]
    log_stderr: bool,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy)]
enum FeedArg {
    ListCommands,
    RunShell,
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    tmux_mcp_core::limits::parse_request_timeout(s)
}

fn parse_tier(s: &str) -> Result<tmux_mcp_core::wire::Tier, String> {
    tmux_mcp_core::wire::Tier::parse(s)
        .ok_or_else(|| "expected readonly, mutating or destructive".into())
}

/// The broker's `main`: parses its command line, runs the daemon, and says why
/// it failed on standard error (and in its log).
pub fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("tmux-mcp-broker: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    // One thread: every wait is I/O (sockets, pidfds, inotify) and the work
    // between waits is short; a single thread avoids cross-thread wake-ups on the
    // latency-critical path of a capture (two tmux round trips).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    rt.block_on(async {
        init_logging(&args)?;
        let feed = args.feed.map(|f| match f {
            FeedArg::ListCommands => tmux_mcp_engine::registry::FeedMode::ListCommands,
            FeedArg::RunShell => tmux_mcp_engine::registry::FeedMode::RunShell,
        });
        let cfg = daemon::Config {
            tmux_socket: args.socket,
            runtime_dir: args.runtime_dir,
            enable_tools: args.enable_tool,
            safety: args.safety,
            helper: args.helper,
            feed,
            exec_only: args.exec_only,
            request_timeout_seconds: args.request_timeout,
        };
        match daemon::run(cfg).await? {
            Outcome::AlreadyRunning(sock) => {
                tracing::info!(
                    "a broker already serves this tmux server at {}",
                    sock.display()
                );
                Ok(ExitCode::SUCCESS)
            }
            Outcome::Stopped(reason) => {
                tracing::info!("stopped: {reason}");
                Ok(ExitCode::SUCCESS)
            }
        }
    })
}

/// Logs go to `<runtime dir>/srv-….log`, found once the server is identified; until
/// then (and with --log-stderr) to standard error, which the plugin sends to
/// /dev/null.
fn init_logging(args: &Args) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("TMUX_MCP_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,rmcp=error"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false);
    if args.log_stderr {
        builder.with_writer(std::io::stderr).init();
        return Ok(());
    }
    let log = log_path(args);
    match log.and_then(|p| {
        if std::fs::metadata(&p)
            .map(|m| m.len() > 8 << 20)
            .unwrap_or(false)
        {
            let _ = std::fs::remove_file(&p);
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
            .ok()
    }) {
        Some(file) => builder.with_writer(std::sync::Mutex::new(file)).init(),
        None => builder.with_writer(std::io::stderr).init(),
    }
    Ok(())
}

fn log_path(args: &Args) -> Option<PathBuf> {
    let probe = tmux_mcp_core::server::probe(&args.socket).ok()?;
    // The same choice the daemon makes (deterministic), so the log is where
    // `status` and error messages say it is.
    let dir = match &args.runtime_dir {
        Some(d) => {
            tmux_mcp_core::paths::ensure_private_dir(d).ok()?;
            d.clone()
        }
        None => tmux_mcp_core::paths::choose_runtime_dir().ok()?.0,
    };
    Some(tmux_mcp_core::paths::BrokerPaths::new(&dir, &probe.identity.generation).log)
}
