#!/usr/bin/env bash
# tmux-mcp — TPM entry point. tmux runs this (via TPM, or `run-shell` in tmux.conf)
# at start-up and on every config reload. It is idempotent and never blocks tmux:
#   - reads the plugin's @mcp-* options (through run-shell formats, so no user
#     after-show-options hook runs),
#   - finds the binaries (@mcp-bin-dir, PATH, then this plugin's own build) and,
#     when they are missing, builds them with cargo in the background,
#   - starts this server's broker with `run-shell -b` (a second start exits at once),
#   - binds the "hand this pane to an agent" key (default prefix + A).
# Nothing is printed into a pane; messages go to the status line.
set -u

PLUGIN_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TMUX_BIN="${TMUX_MCP_TMUX:-tmux}"

tm() { "$TMUX_BIN" "$@"; }

# Quote one word for sh, then escape '#' so tmux's format expansion keeps it.
shq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
fmt_lit() { printf '%s' "$1" | sed 's/#/##/g'; }

# Read our options in one run-shell (hook-free); one value per line.
read_options() {
    local tmp
    tmp="$(mktemp "${TMPDIR:-/tmp}/tmux-mcp-opts.XXXXXX")" || return 1
    # Each value is prefixed with "x" so an empty option still yields a line.
    tm run-shell "printf '%s\\n' x#{q:@mcp-cursor-key} x#{q:@mcp-bin-dir} x#{q:@mcp-cursor-key-bound} x#{q:@mcp-autostart} > $(fmt_lit "$(shq "$tmp")")"
    {
        IFS= read -r OPT_KEY || true
        IFS= read -r OPT_BIN_DIR || true
        IFS= read -r OPT_BOUND || true
        IFS= read -r OPT_AUTOSTART || true
    } < "$tmp"
    OPT_KEY="${OPT_KEY#x}" OPT_BIN_DIR="${OPT_BIN_DIR#x}" OPT_BOUND="${OPT_BOUND#x}" OPT_AUTOSTART="${OPT_AUTOSTART#x}"
    rm -f "$tmp"
}

find_bin_dir() {
    local d
    for d in "${TMUX_MCP_BIN_DIR:-}" "$OPT_BIN_DIR"; do
        if [ -n "$d" ] && [ -x "$d/tmux-mcp" ] && [ -x "$d/tmux-mcp-broker" ]; then
            printf '%s' "$d"; return 0
        fi
    done
    if command -v tmux-mcp >/dev/null 2>&1; then
        d="$(dirname "$(command -v tmux-mcp)")"
        if [ -x "$d/tmux-mcp-broker" ]; then printf '%s' "$d"; return 0; fi
    fi
    for d in "$PLUGIN_DIR/target/release" "$PLUGIN_DIR/target/debug"; do
        if [ -x "$d/tmux-mcp" ] && [ -x "$d/tmux-mcp-broker" ]; then
            printf '%s' "$d"; return 0
        fi
    done
    return 1
}

build_in_background() {
    if ! command -v cargo >/dev/null 2>&1; then
        tm display-message "tmux-mcp: binaries not found and cargo is not installed; see $PLUGIN_DIR/README.md"
        return
    fi
    local log="$PLUGIN_DIR/target/tmux-mcp-build.log"
    mkdir -p "$PLUGIN_DIR/target"
    tm display-message "tmux-mcp: building the binaries in the background (log: $log)"
    # When the build finishes, this script runs again and starts the broker.
    tm run-shell -b "$(fmt_lit "cd $(shq "$PLUGIN_DIR") && cargo build --release --bins >$(shq "$log") 2>&1 && $(shq "$TMUX_BIN") run-shell $(shq "$PLUGIN_DIR/tmux-mcp.tmux") || $(shq "$TMUX_BIN") display-message 'tmux-mcp: build failed, see $log'") </dev/null >/dev/null 2>&1"
}

main() {
    OPT_KEY="" OPT_BIN_DIR="" OPT_BOUND="" OPT_AUTOSTART=""
    read_options
    local key="${OPT_KEY:-A}"
    local bin_dir
    if ! bin_dir="$(find_bin_dir)"; then
        build_in_background
        return 0
    fi
    local helper="$bin_dir/tmux-mcp" broker="$bin_dir/tmux-mcp-broker"

    if [ "${OPT_AUTOSTART:-on}" != "off" ]; then
        # '#{socket_path}' is expanded by tmux: exactly this server's socket.
        tm run-shell -b "exec $(fmt_lit "$(shq "$broker")") --socket '#{socket_path}' </dev/null >/dev/null 2>&1"
    fi

    # The key binding: unbind a key we bound before under another name.
    if [ -n "$OPT_BOUND" ] && [ "$OPT_BOUND" != "$key" ]; then
        tm unbind-key "$OPT_BOUND" 2>/dev/null || true
        tm set-option -gu @mcp-cursor-key-bound
    fi
    if [ "$key" != "none" ]; then
        tm bind-key "$key" run-shell -b "$(fmt_lit "$(shq "$helper")") cursor -S '#{socket_path}' '#{pane_id}' </dev/null >/dev/null 2>&1"
        if [ "$OPT_BOUND" != "$key" ]; then
            tm set-option -g @mcp-cursor-key-bound "$key"
        fi
    fi
}

main
