//! `tmux-mcp`: the plugin's command (attach, feed, cursor, start, status,
//! doctor, uninstall, shell-init, socket-path). Its code is `tmux-mcp-client`'s, which links only
//! `tmux-mcp-core`: built here so one package installs both commands.

fn main() -> std::process::ExitCode {
    tmux_mcp_client::cli::main()
}
