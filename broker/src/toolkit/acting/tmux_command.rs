//! Running one tmux command that has an effect, in either family: `Ok(stdout)`
//! when it exited 0, else a [`Failure`] that says whether it reached tmux
//! ([`Delivery`])
//! (each family words it at its edge: `seed::mutation::failed`,
//! `libtmux::wording::failed`). After a change, [`refresh_after`] re-reads the
//! registry so later calls see it.

use tmux_mcp_core::tmux::TmuxError;
use tmux_mcp_engine::Broker;

/// What reached tmux, as every error of either family says: nothing (`not_sent`),
/// perhaps a command whose outcome is unknown (`possibly_sent`), or a command
/// whose outcome was seen (`observed`; docs/spec.md A.0.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    NotSent,
    PossiblySent,
    Observed,
}

impl Delivery {
    /// Its spelling in the seed envelope's `delivery`.
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::NotSent => "not_sent",
            Delivery::PossiblySent => "possibly_sent",
            Delivery::Observed => "observed",
        }
    }
}

/// A tmux command that did not do what was asked, and whether it reached tmux.
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: &'static str,
    pub message: String,
    pub delivery: Delivery,
}

/// Runs one tmux command that has an effect. `Ok(stdout)` when it exited 0.
pub async fn run_command(broker: &Broker, args: &[&str]) -> Result<String, Failure> {
    match broker.registry.tmux_output(args).await {
        Ok(out) if out.status == 0 => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        Ok(out) => {
            let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
            let err: String = err.chars().take(300).collect();
            Err(Failure {
                code: "command_failed",
                message: format!("tmux {} exited with status {}: {err}", args[0], out.status),
                delivery: Delivery::Observed,
            })
        }
        Err(e) => Err(transport(args[0], &e)),
    }
}

fn transport(command: &str, e: &TmuxError) -> Failure {
    let (code, message, delivery) = match e {
        TmuxError::Timeout { timeout, .. } => (
            "deadline",
            format!("tmux {command} did not finish within {timeout:?}; it may have taken effect."),
            Delivery::PossiblySent,
        ),
        e if e.possibly_sent() => (
            "transport_error",
            format!(
                "The connection to tmux failed during {command}; it may have taken effect: {e}"
            ),
            Delivery::PossiblySent,
        ),
        e => (
            "transport_error",
            format!("tmux could not be reached for {command}: {e}. Nothing was sent."),
            Delivery::NotSent,
        ),
    };
    Failure {
        code,
        message,
        delivery,
    }
}

/// Re-reads the registry after a mutation so later calls see the change. A
/// failure here does not undo what tmux did, so it is only logged.
pub async fn refresh_after(broker: &Broker) {
    if let Err(e) = broker.registry.refresh().await {
        tracing::warn!("refresh after a mutation failed: {e}");
    }
}
