//! `tmux-mcp-broker`: the per-tmux-server daemon. Its code is the broker
//! library's (`tmux_mcp_broker::broker_main`); it is built here so that the
//! plugin's package installs both commands (`cargo install tmux-mcp-plugin`).

fn main() -> std::process::ExitCode {
    tmux_mcp_broker::broker_main::main()
}
