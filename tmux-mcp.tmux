#!/usr/bin/env bash
# tmux-mcp — TPM entry point. tmux runs this (via TPM, or `run-shell` in tmux.conf)
# at start-up and on every config reload. It is idempotent and never blocks tmux:
#   - reads the plugin's @mcp-* options (through run-shell formats, so no user
#     after-show-options hook runs),
#   - finds the binaries (@mcp-bin-dir, PATH, then this plugin's own build) and,
#     when they are missing or this plugin's own build is older than the
#     checkout (a TPM update), builds them with cargo in the background,
#   - starts this server's broker with `run-shell -b` (a second start exits at
#     once; an idle broker running an older binary is replaced first),
#   - keeps @mcp-state (building / ready / failed) and @mcp-status current,
#   - binds the "hand this pane to an agent" key (default prefix + A).
# Nothing is printed into a pane; messages go to the status line, and only
# when a client is attached to see them. It installs no hook.
# `tmux-mcp.tmux build` and `tmux-mcp.tmux up BIN_DIR SOCKET AUTOSTART` are its
# own background jobs (started with run-shell -b); `tmux-mcp.tmux stamp` is run
# by scripts/build to record the checkout it built.
set -u

PLUGIN_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TMUX_BIN="${TMUX_MCP_TMUX:-tmux}"

tm() { "$TMUX_BIN" "$@"; }

# Answers read through run-shell formats land in files of one private
# directory, removed when the script ends: also when tmux ends it with SIGTERM
# (its jobs get one when the server exits) in the middle of a read.
# `scratch NAME` sets tmp to a path there (not `$(…)`, which would make the
# directory in a subshell of its own). The shell that makes the directory
# removes it: a subshell (the build's announcer) does not run its parent's
# traps, so the traps are set where the directory is made; a subshell of a
# shell that made it already uses that one, and leaves it to its maker.
SCRATCH=""
scratch() {
    if [ -z "$SCRATCH" ]; then
        SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tmux-mcp.XXXXXX")" || { SCRATCH=""; return 1; }
        trap 'rm -rf "$SCRATCH"' EXIT
        trap 'exit 1' TERM HUP INT
    fi
    tmp="$SCRATCH/$1"
}
trap 'exit 1' TERM HUP INT

# Quote one word for sh, then escape '#' so tmux's format expansion keeps it.
shq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
fmt_lit() { printf '%s' "$1" | sed 's/#/##/g'; }

# Read our options in one run-shell (hook-free); one value per line.
read_options() {
    local tmp
    scratch opts || return 1
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

# --- What the plugin shows -------------------------------------------------
# @mcp-state is building / ready / failed; @mcp-status is a short text for a
# status line (`set -g status-right '#{@mcp-status} …'`). Both are kept current
# by every step below. A message is displayed only when a client is attached:
# at a normal tmux start the config loads before any client exists, and a
# message then would be lost; the build job shows it once a client attaches.

# Setting an option runs the user's after-set-option hooks; like the broker
# with @mcp-broker-socket, the plugin then keeps no state rather than run them.
# show-hooks fires no hook: the global entry, then each session's.
set_option_hooked() {
    if [ -z "${SET_OPTION_HOOKED:-}" ]; then
        SET_OPTION_HOOKED=no
        local tmp s
        if tm show-hooks -g after-set-option 2>/dev/null | grep -q '^after-set-option\['; then
            SET_OPTION_HOOKED=yes
        elif scratch sessions; then
            tm run-shell "printf '%s\\n' #{S:#{q:session_id} } > $(fmt_lit "$(shq "$tmp")")"
            for s in $(cat "$tmp"); do
                if tm show-hooks -t "$s" after-set-option 2>/dev/null | grep -q '^after-set-option\['; then
                    SET_OPTION_HOOKED=yes
                    break
                fi
            done
            rm -f "$tmp"
        fi
    fi
    [ "$SET_OPTION_HOOKED" = yes ]
}

set_state() {
    set_option_hooked && return 0
    tm set-option -gq @mcp-state "$1" \; set-option -gq @mcp-status "$2"
}

# Whether a client is attached to any session (status 0), none is (1), or the
# server cannot be asked (2), asked through a run-shell format (hook-free,
# unlike list-clients) that writes into a file of ours.
has_client() {
    local tmp answer=""
    scratch clients || return 2
    if ! tm run-shell "printf '%s' '#{S:#{?session_attached,y,}}' > $(fmt_lit "$(shq "$tmp")")" 2>/dev/null; then
        rm -f "$tmp"
        return 2
    fi
    IFS= read -r answer < "$tmp" || true
    rm -f "$tmp"
    [ -n "$answer" ]
}

notify() {
    if has_client; then tm display-message -d 5000 "$1"; fi
}

# --- Builds ------------------------------------------------------------------
# The plugin's own build carries a stamp: the checkout it was built from
# (`git rev-parse HEAD`, else the crate version). After a TPM update
# (`prefix + U` pulls the checkout) the stamp differs and the plugin rebuilds
# in the background while the old binaries keep working.

OWN_BIN_DIR="$PLUGIN_DIR/target/release"
STAMP="$OWN_BIN_DIR/tmux-mcp-build-stamp"
BUILD_LOG="$PLUGIN_DIR/target/tmux-mcp-build.log"

checkout_id() {
    git -C "$PLUGIN_DIR" rev-parse HEAD 2>/dev/null && return 0
    sed -n 's/^version = "\(.*\)"$/version \1/p' "$PLUGIN_DIR/Cargo.toml" 2>/dev/null | head -n 1
}

own_build_is_current() {
    local stamp="" id
    id="$(checkout_id)"
    # A checkout that cannot be identified cannot be compared: keep the build.
    [ -n "$id" ] || return 0
    [ -r "$STAMP" ] && IFS= read -r stamp < "$STAMP"
    [ "$stamp" = "$id" ]
}

# Starts `tmux-mcp.tmux build` as a tmux job (it outlives this script, never
# blocks tmux, and dies with the server).
build_in_background() {
    if ! command -v cargo >/dev/null 2>&1; then
        set_state failed "mcp: no cargo"
        notify "tmux-mcp: binaries not found and cargo is not on tmux's PATH; see $PLUGIN_DIR/README.md"
        return
    fi
    set_state building "mcp: building"
    tm run-shell -b "$(fmt_lit "exec $(shq "$BASH") $(shq "$PLUGIN_DIR/tmux-mcp.tmux") build") </dev/null >/dev/null 2>&1"
}

# The build job: one at a time (a second load while building leaves it to the
# first), tells an attached client what it does, and runs the plugin again
# when the build is done so the new binaries are used.
build_job() {
    mkdir -p "$PLUGIN_DIR/target"
    exec 9>"$PLUGIN_DIR/target/tmux-mcp-build.lock"
    # The build that holds the lock runs this script again when it is done,
    # and that run sees whether its stamp still matches the checkout.
    if command -v flock >/dev/null 2>&1 && ! flock -n 9; then
        return 0
    fi
    local msg="tmux-mcp: building the binaries in the background, the first build takes minutes (log: $BUILD_LOG)"
    (
        # Shown once, as soon as someone is there to see it; ends with the
        # server, so a build cut short leaves nothing behind.
        while :; do
            has_client
            case $? in 0) break ;; 2) exit 0 ;; esac
            sleep 2
        done
        tm display-message -d 5000 "$msg"
    ) </dev/null >/dev/null 2>&1 9>&- &
    local announcer=$!
    # The stamp names what was checked out when the build started: a pull
    # during the build makes the next load build again.
    local id
    id="$(checkout_id)"
    # tmux sends its jobs SIGTERM when the server exits: pass it on to the
    # build, so nothing outlives the server (`wait` returns on the signal).
    "$PLUGIN_DIR/scripts/build" >"$BUILD_LOG" 2>&1 9>&- &
    local builder=$! rc=0
    trap 'pkill -TERM -P "$builder" 2>/dev/null; kill "$builder" "$announcer" 2>/dev/null; exit 1' TERM HUP INT
    wait "$builder" || rc=$?
    trap 'exit 1' TERM HUP INT
    if [ "$rc" = 0 ] && printf '%s\n' "$id" > "$STAMP"; then
        kill "$announcer" 2>/dev/null
        exec 9>&-
        main
    else
        kill "$announcer" 2>/dev/null
        set_state failed "mcp: build failed"
        notify "tmux-mcp: the build failed, see $BUILD_LOG"
    fi
}

# --- The broker ----------------------------------------------------------------

# The "up" job: replaces a broker that runs an older binary than the one found
# now, so new agents get the new broker: an idle one is stopped, a busy one
# retires (SIGUSR1: it gives up its socket at once and serves its agents until
# they leave); then starts the broker and reports ready once it answers.
up_job() {
    local bin_dir="$1" sock="$2" autostart="$3"
    local helper="$bin_dir/tmux-mcp" broker="$bin_dir/tmux-mcp-broker"
    local status pid open
    if status="$("$helper" status -S "$sock" --json 2>/dev/null)"; then
        pid="$(printf '%s\n' "$status" | sed -n 's/^ *"broker_pid": *\([0-9]*\).*/\1/p')"
        open="$(printf '%s\n' "$status" | sed -n 's/^ *"sessions_open": *\([0-9]*\).*/\1/p')"
        if [ -n "$pid" ] && ! [ "/proc/$pid/exe" -ef "$broker" ]; then
            if [ "${open:-1}" = 0 ]; then
                # Ours: it serves this tmux server and no agent uses it.
                kill -TERM "$pid" 2>/dev/null
                local i=0
                while [ -e "/proc/$pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
            else
                # Busy: it retires, keeping its agents; wait until its socket
                # is free for the new broker.
                kill -USR1 "$pid" 2>/dev/null
                local i=0
                while "$helper" status -S "$sock" >/dev/null 2>&1 && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
                notify "tmux-mcp: updated; new agents get the new broker, the old one serves its $open agent(s) until they leave"
            fi
        fi
    fi
    if [ "$autostart" = off ]; then
        set_state ready "mcp: ready"
        return 0
    fi
    # '#{socket_path}' is expanded by tmux: exactly this server's socket.
    tm run-shell -b "exec $(fmt_lit "$(shq "$broker")") --socket '#{socket_path}' </dev/null >/dev/null 2>&1"
    local i=0
    while [ $i -lt 100 ]; do
        if "$helper" status -S "$sock" >/dev/null 2>&1; then
            set_state ready "mcp: ready"
            notify "tmux-mcp: ready"
            return 0
        fi
        sleep 0.1
        i=$((i + 1))
    done
    set_state failed "mcp: broker failed"
    notify "tmux-mcp: the broker did not start; run \`$helper doctor\`"
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
    local helper="$bin_dir/tmux-mcp"

    # Binaries linked from elsewhere (~/.local/bin) into this plugin's build
    # are this plugin's build too.
    local real_dir
    real_dir="$(dirname "$(readlink -f "$helper")")"
    if [ "$real_dir" -ef "$OWN_BIN_DIR" ] && ! own_build_is_current; then
        # The old binaries serve until the new ones are built; the build job
        # runs this script again, which starts (or replaces) the broker.
        build_in_background
    else
        # The job is given this server's socket (expanded by tmux) and runs
        # in the background, so tmux never waits for the broker.
        tm run-shell -b "$(fmt_lit "exec $(shq "$BASH") $(shq "$PLUGIN_DIR/tmux-mcp.tmux") up $(shq "$bin_dir")") '#{socket_path}' $(fmt_lit "$(shq "${OPT_AUTOSTART:-on}")") </dev/null >/dev/null 2>&1"
    fi

    # The key binding: unbind a key we bound before under another name.
    if [ -n "$OPT_BOUND" ] && [ "$OPT_BOUND" != "$key" ]; then
        tm unbind-key "$OPT_BOUND" 2>/dev/null || true
        set_option_hooked || tm set-option -gu @mcp-cursor-key-bound
    fi
    if [ "$key" != "none" ]; then
        tm bind-key "$key" run-shell -b "$(fmt_lit "$(shq "$helper")") cursor -S '#{socket_path}' '#{pane_id}' </dev/null >/dev/null 2>&1"
        if [ "$OPT_BOUND" != "$key" ] && ! set_option_hooked; then
            tm set-option -g @mcp-cursor-key-bound "$key"
        fi
    fi
}

case "${1:-}" in
    # scripts/build records what it built, so a build by hand counts as current.
    stamp) mkdir -p "$OWN_BIN_DIR" && checkout_id > "$STAMP" ;;
    build) build_job ;;
    up) up_job "$2" "$3" "$4" ;;
    *) main ;;
esac
