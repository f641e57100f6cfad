//! `tmux-mcp attach`: the MCP server command of an agent. After a msgpack hello it
//! copies bytes both ways between stdio and the broker; stdout carries nothing but
//! MCP.

use crate::{locate, ServerArgs};
use anyhow::{bail, Context};
use std::io::{Read, Write};
use std::net::Shutdown;
use std::process::ExitCode;
use tmux_mcp::wire::connect;
use tmux_mcp::wire::{Hello, McpHello, Reply, Scope};

pub fn attach(server: &ServerArgs, enable_tools: Vec<String>, scope: Option<Scope>, allow_self: bool) -> anyhow::Result<ExitCode> {
    let (_, sock) = locate::ensure(server)?;
    let hello = Hello::Mcp(McpHello {
        client_name: parent_name(),
        enable_tools,
        scope,
        allow_self,
        tmux_pane_env: std::env::var("TMUX_PANE").ok(),
    });
    let (stream, reply) = connect(&sock, &hello).with_context(|| format!("talking to the broker at {}", sock.display()))?;
    match reply {
        Reply::McpReady { .. } => {}
        Reply::Refused { reason } => bail!("the broker refused this session: {reason}"),
        other => bail!("unexpected broker reply {other:?}"),
    }
    let mut to_broker = stream.try_clone()?;
    let mut from_broker = stream;
    // stdin → broker; on EOF, half-close so the broker sees the end and finishes.
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 64 * 1024];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to_broker.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to_broker.shutdown(Shutdown::Write);
    });
    // broker → stdout, until the broker closes.
    let mut stdout = std::io::stdout().lock();
    let mut buf = [0u8; 64 * 1024];
    loop {
        match from_broker.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if stdout.write_all(&buf[..n]).and_then(|_| stdout.flush()).is_err() {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => bail!("lost the broker: {e}"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The MCP client's process name, for the broker's log.
fn parent_name() -> String {
    let ppid = std::os::unix::process::parent_id();
    tmux_mcp::procfs::stat(ppid).map(|s| s.comm).unwrap_or_else(|_| "unknown".into())
}
