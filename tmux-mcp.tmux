#!/usr/bin/env bash
# tmux-mcp — TPM entry point. tmux runs this (via TPM, or `run-shell` in tmux.conf)
# at start-up and on every config reload. It is idempotent and never blocks tmux:
#   - reads the plugin's @mcp-* options (through run-shell formats, so no user
#     after-show-options hook runs),
#   - finds the binaries: @mcp-bin-dir, PATH, the directories uv, pipx, npm
#     and cargo install into (tmux's PATH often lacks them), then this
#     plugin's own build; a binary whose `--version` is this script's version
#     is preferred, and a mismatch is said in @mcp-status,
#   - with none found: installs them when @mcp-install names a route (opt-in,
#     in the background), else builds them with cargo in the background when
#     cargo is there, else says which command installs them (@mcp-state
#     missing); when this plugin's own build is older than the checkout (a TPM
#     update) it rebuilds in the background,
#   - starts this server's broker with `run-shell -b` (a second start exits at
#     once; an idle broker running an older binary is replaced first),
#   - keeps @mcp-state (building / installing / missing / ready / failed) and
#     @mcp-status current,
#   - binds the "hand this pane to an agent" key (default prefix + A).
# Nothing is printed into a pane; messages go to the status line, and only
# when a client is attached to see them. It installs no hook and sets no
# option but its own @mcp-* ones.
# `tmux-mcp.tmux build`, `install ROUTE`, `announce MESSAGE` and
# `up BIN_DIR SOCKET AUTOSTART NOTE` are its own background jobs (started with
# run-shell -b); `tmux-mcp.tmux stamp` is run by scripts/build to record the
# checkout it built; `tmux-mcp.tmux version` prints the version it expects.
set -u

PLUGIN_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The release this script belongs to: the binaries' `tmux-mcp --version` should
# say it (a test keeps it equal to the workspace version in Cargo.toml).
PLUGIN_VERSION="0.1.0"
# The one name of the package on PyPI, npm and crates.io.
PACKAGE="tmux-mcp-plugin"
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
    tm run-shell "printf '%s\\n' x#{q:@mcp-cursor-key} x#{q:@mcp-bin-dir} x#{q:@mcp-cursor-key-bound} x#{q:@mcp-autostart} x#{q:@mcp-install} > $(fmt_lit "$(shq "$tmp")")"
    {
        IFS= read -r OPT_KEY || true
        IFS= read -r OPT_BIN_DIR || true
        IFS= read -r OPT_BOUND || true
        IFS= read -r OPT_AUTOSTART || true
        IFS= read -r OPT_INSTALL || true
    } < "$tmp"
    OPT_KEY="${OPT_KEY#x}" OPT_BIN_DIR="${OPT_BIN_DIR#x}" OPT_BOUND="${OPT_BOUND#x}" OPT_AUTOSTART="${OPT_AUTOSTART#x}" OPT_INSTALL="${OPT_INSTALL#x}"
    rm -f "$tmp"
}

# Where uv, pipx, npm and cargo put the commands they install, beyond PATH.
# `npm prefix -g` runs node, so it is asked only when nothing else was found.
tool_bin_dirs() {
    printf '%s\n' "${UV_TOOL_BIN_DIR:-}" "${PIPX_BIN_DIR:-}" "${XDG_BIN_HOME:-}" "${HOME:-}/.local/bin" \
        "${CARGO_HOME:-$HOME/.cargo}/bin" "${NPM_CONFIG_PREFIX:+$NPM_CONFIG_PREFIX/bin}" \
        "${HOME:-}/.npm-global/bin" "${HOME:-}/.local/share/npm/bin" /usr/local/bin
}

# The directory holding the real binaries behind `DIR/tmux-mcp`: DIR itself,
# or, when that is npm's launcher (a .js file), the platform package's bin/
# beside it (nested in the launcher's package, or hoisted next to it).
real_bin_dir() {
    local d="$1" real arch
    [ -x "$d/tmux-mcp" ] && [ -x "$d/tmux-mcp-broker" ] || return 1
    real="$(readlink -f "$d/tmux-mcp")" || return 1
    case "$real" in
        *.js)
            case "$(uname -m)" in x86_64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) arch="$(uname -m)" ;; esac
            real="$(dirname "$(dirname "$real")")"
            for d in "$real/node_modules/$PACKAGE-linux-$arch/bin" "$(dirname "$real")/$PACKAGE-linux-$arch/bin"; do
                if [ -x "$d/tmux-mcp" ] && [ -x "$d/tmux-mcp-broker" ]; then
                    printf '%s' "$d"; return 0
                fi
            done
            return 1 ;;
    esac
    printf '%s' "$d"
}

# What `DIR/tmux-mcp --version` says: "tmux-mcp 0.1.0" -> 0.1.0.
bin_version() {
    local v
    v="$("$1/tmux-mcp" --version 2>/dev/null </dev/null)" || return 1
    printf '%s' "${v##* }"
}

# Sets BIN_DIR to the first candidate whose version is this script's, else
# to the first candidate found (BIN_NOTE then says which version it is), in
# this order: $TMUX_MCP_BIN_DIR, @mcp-bin-dir, PATH, the tools' directories,
# this plugin's own build. Status 1 when there is none.
find_bin_dir() {
    local d real v first="" first_v="" seen=":" IFS_SAVE="$IFS" npm_prefix=""
    BIN_DIR="" BIN_NOTE=""
    local -a dirs=("${TMUX_MCP_BIN_DIR:-}" "$OPT_BIN_DIR")
    IFS=:
    for d in $PATH; do dirs+=("$d"); done
    IFS="$IFS_SAVE"
    while IFS= read -r d; do dirs+=("$d"); done < <(tool_bin_dirs)
    dirs+=("$OWN_BIN_DIR" "$PLUGIN_DIR/target/debug")
    local pass
    for pass in 1 2; do
        for d in "${dirs[@]}"; do
            [ -n "$d" ] || continue
            case "$seen" in *":$d:"*) continue ;; esac
            seen="$seen$d:"
            real="$(real_bin_dir "$d")" || continue
            # This plugin's own build is kept current by its stamp instead.
            if [ "$real" -ef "$OWN_BIN_DIR" ] || [ "$real" -ef "$PLUGIN_DIR/target/debug" ]; then
                v="$PLUGIN_VERSION"
            else
                v="$(bin_version "$real")" || continue
            fi
            if [ "$v" = "$PLUGIN_VERSION" ]; then
                BIN_DIR="$real"; return 0
            fi
            [ -n "$first" ] || { first="$real"; first_v="$v"; }
        done
        # Nothing yet: npm's global prefix, when npm is there (it costs a node start).
        [ -z "$first" ] && [ $pass = 1 ] && command -v npm >/dev/null 2>&1 || break
        npm_prefix="$(npm prefix -g 2>/dev/null </dev/null)" || break
        [ -n "$npm_prefix" ] || break
        dirs=("$npm_prefix/bin")
    done
    [ -n "$first" ] || return 1
    BIN_DIR="$first"
    BIN_NOTE="tmux-mcp ${first_v:-?}, plugin $PLUGIN_VERSION"
    return 0
}

# The one command that installs the binaries, for the tool this machine has.
install_hint() {
    if have_tool uv >/dev/null; then printf 'uv tool install %s' "$PACKAGE"
    elif have_tool pipx >/dev/null; then printf 'pipx install %s' "$PACKAGE"
    elif have_tool npm >/dev/null; then printf 'npm install -g %s' "$PACKAGE"
    else printf 'uv tool install %s' "$PACKAGE"
    fi
}

# A tool on PATH or in the directories its installer uses; prints its path.
have_tool() {
    local d
    if command -v "$1" 2>/dev/null; then return 0; fi
    for d in "${HOME:-}/.local/bin" "${CARGO_HOME:-$HOME/.cargo}/bin"; do
        if [ -x "$d/$1" ]; then printf '%s\n' "$d/$1"; return 0; fi
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

# Shows MESSAGE once, as soon as a client is attached to see it; returns when
# the server cannot be asked (it is gone). tmux ends it with the server.
announce_when_attached() {
    while :; do
        has_client
        case $? in 0) break ;; 2) return 0 ;; esac
        sleep 2
    done
    tm display-message -d 5000 "$1"
}

# The same as a tmux job of its own: one waiting at a time (a reload while one
# waits leaves it to that one).
announce_job() {
    if mkdir -p "$PLUGIN_DIR/target" 2>/dev/null && exec 9>"$PLUGIN_DIR/target/tmux-mcp-announce.lock" \
        && command -v flock >/dev/null 2>&1 && ! flock -n 9; then
        return 0
    fi
    announce_when_attached "$1"
}

announce_in_background() {
    tm run-shell -b "$(fmt_lit "exec $(shq "$BASH") $(shq "$PLUGIN_DIR/tmux-mcp.tmux") announce $(shq "$1")") </dev/null >/dev/null 2>&1"
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
        # No binaries and nothing to build them with: say the one command
        # that installs them (shown once a client is attached).
        local hint
        hint="$(install_hint)"
        set_state missing "mcp: missing, run: $hint"
        announce_in_background "tmux-mcp: no tmux-mcp binaries found (PATH, ~/.local/bin, ~/.cargo/bin, npm's bin) and no cargo to build them: run \`$hint\` and reload tmux.conf (or set -g @mcp-install uv|pipx|npm|cargo)"
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
        announce_when_attached "$msg"
    ) </dev/null >/dev/null 2>&1 9>&- &
    local announcer=$!
    # The stamp names what was checked out when the build started: a pull
    # during the build makes the next load build again.
    local id
    id="$(checkout_id)"
    # tmux sends its jobs SIGTERM when the server exits: pass it on to the
    # build, so nothing outlives the server (`wait` returns on the signal).
    TMUX_MCP_BUILT_BY_PLUGIN=1 "$PLUGIN_DIR/scripts/build" >"$BUILD_LOG" 2>&1 9>&- &
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

# --- Installs (opt-in: @mcp-install uv|pipx|npm|cargo) ----------------------
# Only when asked, and only when no binary is found: no network at tmux start
# otherwise. The version installed is this script's, so the version check
# passes afterwards.

INSTALL_LOG="$PLUGIN_DIR/target/tmux-mcp-install.log"

install_in_background() {
    local route="$1"
    case "$route" in
        uv | pipx | npm | cargo) ;;
        *)
            set_state failed "mcp: @mcp-install $route?"
            notify "tmux-mcp: @mcp-install is '$route'; it takes uv, pipx, npm or cargo"
            return ;;
    esac
    set_state installing "mcp: installing ($route)"
    tm run-shell -b "$(fmt_lit "exec $(shq "$BASH") $(shq "$PLUGIN_DIR/tmux-mcp.tmux") install $(shq "$route")") </dev/null >/dev/null 2>&1"
}

install_job() {
    local route="$1" tool
    mkdir -p "$PLUGIN_DIR/target"
    exec 9>"$PLUGIN_DIR/target/tmux-mcp-install.lock"
    if command -v flock >/dev/null 2>&1 && ! flock -n 9; then
        return 0
    fi
    if ! tool="$(have_tool "$route")"; then
        set_state failed "mcp: no $route to install with"
        notify "tmux-mcp: @mcp-install is $route, but $route is not on tmux's PATH nor in ~/.local/bin or ~/.cargo/bin"
        return 0
    fi
    local -a cmd
    case "$route" in
        uv) cmd=("$tool" tool install "$PACKAGE==$PLUGIN_VERSION") ;;
        pipx) cmd=("$tool" install "$PACKAGE==$PLUGIN_VERSION") ;;
        npm) cmd=("$tool" install -g "$PACKAGE@$PLUGIN_VERSION") ;;
        cargo) cmd=("$tool" install --locked "$PACKAGE" --version "$PLUGIN_VERSION") ;;
    esac
    printf '%s\n' "${cmd[*]}" >"$INSTALL_LOG"
    "${cmd[@]}" >>"$INSTALL_LOG" 2>&1 </dev/null 9>&- &
    local installer=$! rc=0
    trap 'pkill -TERM -P "$installer" 2>/dev/null; kill "$installer" 2>/dev/null; exit 1' TERM HUP INT
    wait "$installer" || rc=$?
    trap 'exit 1' TERM HUP INT
    exec 9>&-
    if [ "$rc" != 0 ]; then
        set_state failed "mcp: install failed"
        notify "tmux-mcp: \`${cmd[*]}\` failed, see $INSTALL_LOG"
        return 0
    fi
    # Run the plugin again, which now finds the binaries (and never installs
    # twice: a binary still not found is reported).
    INSTALLED="$route"
    main
}

# --- The broker ----------------------------------------------------------------

# The "up" job: replaces a broker that runs an older binary than the one found
# now, so new agents get the new broker: an idle one is stopped, a busy one
# retires (SIGUSR1: it gives up its socket at once and serves its agents until
# they leave); then starts the broker and reports ready once it answers.
up_job() {
    local bin_dir="$1" sock="$2" autostart="$3" note="${4:-}"
    # A binary of another version than this script: ready, and saying so.
    local ready="mcp: ready"
    [ -z "$note" ] || ready="mcp: ready ($note)"
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
        set_state ready "$ready"
        return 0
    fi
    # '#{socket_path}' is expanded by tmux: exactly this server's socket.
    tm run-shell -b "exec $(fmt_lit "$(shq "$broker")") --socket '#{socket_path}' </dev/null >/dev/null 2>&1"
    local i=0
    while [ $i -lt 100 ]; do
        if "$helper" status -S "$sock" >/dev/null 2>&1; then
            set_state ready "$ready"
            if [ -n "$note" ]; then
                notify "tmux-mcp: ready, but $helper is another version than the plugin: $note (update one of them)"
            else
                notify "tmux-mcp: ready"
            fi
            return 0
        fi
        sleep 0.1
        i=$((i + 1))
    done
    set_state failed "mcp: broker failed"
    notify "tmux-mcp: the broker did not start; run \`$helper doctor\`"
}

main() {
    OPT_KEY="" OPT_BIN_DIR="" OPT_BOUND="" OPT_AUTOSTART="" OPT_INSTALL=""
    read_options
    local key="${OPT_KEY:-A}"
    if ! find_bin_dir; then
        if [ -n "${INSTALLED:-}" ]; then
            set_state failed "mcp: installed, not found"
            notify "tmux-mcp: $INSTALLED installed $PACKAGE, but tmux-mcp is not in PATH, ~/.local/bin, ~/.cargo/bin nor npm's bin; set -g @mcp-bin-dir DIR"
        elif [ -n "$OPT_INSTALL" ]; then
            install_in_background "$OPT_INSTALL"
        else
            build_in_background
        fi
        return 0
    fi
    local bin_dir="$BIN_DIR"
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
        tm run-shell -b "$(fmt_lit "exec $(shq "$BASH") $(shq "$PLUGIN_DIR/tmux-mcp.tmux") up $(shq "$bin_dir")") '#{socket_path}' $(fmt_lit "$(shq "${OPT_AUTOSTART:-on}") $(shq "$BIN_NOTE")") </dev/null >/dev/null 2>&1"
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
    install) install_job "$2" ;;
    announce) announce_job "$2" ;;
    version) printf '%s\n' "$PLUGIN_VERSION" ;;
    up) up_job "$2" "$3" "$4" "${5:-}" ;;
    *) main ;;
esac
