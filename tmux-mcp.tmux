#!/bin/sh
# tmux-mcp — TPM entry point. tmux runs this (via TPM, or `run-shell` in tmux.conf)
# at start-up and on every config reload. It is idempotent and never blocks tmux:
#   - reads the plugin's @mcp-* options (through run-shell formats, so no user
#     after-show-options hook runs),
#   - finds the binaries: @mcp-bin-dir, PATH, the directories uv, pipx, npm
#     and cargo install into (tmux's PATH often lacks them), then this
#     plugin's own build (target/release, as `scripts/build` or a plain
#     `cargo build --release` leaves it); a binary whose `--version` is this
#     script's version is preferred, and a mismatch is said in @mcp-status,
#   - with none found: installs them when @mcp-install names a route (opt-in,
#     in the background), else builds them with cargo in the background when
#     cargo is there, else says which command installs them (@mcp-state
#     missing); when this plugin's own build answers another version than this
#     script's (a TPM update to a new release) it serves with that build and
#     rebuilds in the background (@mcp-state stays ready, @mcp-status says
#     "rebuilding"); a build of this version is used as it is, stamped or not,
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
#
# POSIX sh (macOS's /bin/bash is 3.2; tested under dash, parsed by posh), and
# only what BSD/macOS userland has: no `local`, no `readlink -f`, no flock(1),
# no GNU-only flags; scripts/lint-sh checks it. Functions keep their variables
# apart by a prefix of their own (there is no `local`).
set -u

PLUGIN_DIR="$(cd "$(dirname "$0")" && pwd)"
SCRIPT="$PLUGIN_DIR/tmux-mcp.tmux"
# The shell the background jobs run in (TMUX_MCP_SH: the tests run the
# script and its jobs under posh too).
JOB_SH="${TMUX_MCP_SH:-/bin/sh}"
# The release this script belongs to: the binaries' `tmux-mcp --version` should
# say it (a test keeps it equal to the workspace version in Cargo.toml).
PLUGIN_VERSION="0.1.0"
# The one name of the package on PyPI, npm and crates.io.
PACKAGE="tmux-mcp-plugin"
TMUX_BIN="${TMUX_MCP_TMUX:-tmux}"

tm() { "$TMUX_BIN" ${1+"$@"}; }

# Answers read through run-shell formats land in files of one private
# directory, removed when the script ends: also when tmux ends it with SIGTERM
# (its jobs get one when the server exits) in the middle of a read.
# `scratch NAME` sets tmp to a path there (not `$(…)`, which would make the
# directory in a subshell of its own). The shell that makes the directory
# removes it: a subshell (the build's announcer) does not run its parent's
# traps, so the traps are set where the directory is made; a subshell of a
# shell that made it already uses that one, and leaves it to its maker.
# A lock this shell holds (LOCKED) is removed the same way.
SCRATCH=""
LOCKED=""
cleanup() {
    [ -z "$SCRATCH" ] || rm -rf "$SCRATCH"
    [ -z "$LOCKED" ] || rm -rf "$LOCKED"
}
scratch() {
    if [ -z "$SCRATCH" ]; then
        SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tmux-mcp.XXXXXX")" || { SCRATCH=""; return 1; }
        trap cleanup EXIT
        trap 'exit 1' TERM HUP INT
    fi
    tmp="$SCRATCH/$1"
}
trap 'exit 1' TERM HUP INT

# `lock NAME`: one holder at a time of target/tmux-mcp-NAME.lockdir, across
# shells and tmux servers (mkdir is atomic everywhere; flock(1) is not on
# macOS). The holder's pid is kept inside; a lock whose holder is gone
# (SIGKILL leaves it) is taken over. Status 1 when another process holds it.
# The lock is removed when this shell exits (see cleanup) or by `unlock`.
lock() {
    lk_dir="$PLUGIN_DIR/target/tmux-mcp-$1.lockdir"
    mkdir -p "$PLUGIN_DIR/target" 2>/dev/null || return 0
    lk_tries=0
    while ! mkdir "$lk_dir" 2>/dev/null; do
        lk_tries=$((lk_tries + 1))
        [ $lk_tries -le 3 ] || return 1
        lk_pid=""
        [ -r "$lk_dir/pid" ] && IFS= read -r lk_pid < "$lk_dir/pid"
        if [ -z "$lk_pid" ]; then
            # Its maker may not have written its pid yet.
            sleep 1
            [ -r "$lk_dir/pid" ] && IFS= read -r lk_pid < "$lk_dir/pid"
        fi
        if [ -n "$lk_pid" ] && kill -0 "$lk_pid" 2>/dev/null; then
            return 1
        fi
        # Gone: move the stale lock aside (a rename: one taker wins), retry.
        mv "$lk_dir" "$lk_dir.stale.$$" 2>/dev/null && rm -rf "$lk_dir.stale.$$"
    done
    printf '%s\n' "$$" > "$lk_dir/pid"
    LOCKED="$lk_dir"
    trap cleanup EXIT
    trap 'exit 1' TERM HUP INT
    return 0
}
unlock() {
    [ -z "$LOCKED" ] || rm -rf "$LOCKED"
    LOCKED=""
}
# Whether a live process holds lock NAME (without taking it).
locked() {
    lkd_pid=""
    [ -r "$PLUGIN_DIR/target/tmux-mcp-$1.lockdir/pid" ] \
        && IFS= read -r lkd_pid < "$PLUGIN_DIR/target/tmux-mcp-$1.lockdir/pid"
    [ -n "$lkd_pid" ] && kill -0 "$lkd_pid" 2>/dev/null
}

# Quote one word for sh, then escape '#' so tmux's format expansion keeps it.
shq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
fmt_lit() { printf '%s' "$1" | sed 's/#/##/g'; }

# The physical path of FILE with every symlink followed (what GNU
# `readlink -f` prints; macOS before 12.3 has no -f). Status 1 when its
# directory does not exist.
resolve() {
    rs_p="$1" rs_n=0
    while [ -L "$rs_p" ] && [ $rs_n -lt 40 ]; do
        rs_l="$(readlink "$rs_p")" || return 1
        case "$rs_l" in
            /*) rs_p="$rs_l" ;;
            *) rs_p="$(dirname "$rs_p")/$rs_l" ;;
        esac
        rs_n=$((rs_n + 1))
    done
    rs_d="$(cd -P "$(dirname "$rs_p")" 2>/dev/null && pwd -P)" || return 1
    printf '%s/%s' "${rs_d%/}" "$(basename "$rs_p")"
}

# Read our options in one run-shell (hook-free); one value per line.
read_options() {
    scratch opts || return 1
    ro_tmp="$tmp"
    # Each value is prefixed with "x" so an empty option still yields a line.
    tm run-shell "printf '%s\\n' x#{q:@mcp-cursor-key} x#{q:@mcp-bin-dir} x#{q:@mcp-cursor-key-bound} x#{q:@mcp-autostart} x#{q:@mcp-install} > $(fmt_lit "$(shq "$ro_tmp")")"
    {
        IFS= read -r OPT_KEY || true
        IFS= read -r OPT_BIN_DIR || true
        IFS= read -r OPT_BOUND || true
        IFS= read -r OPT_AUTOSTART || true
        IFS= read -r OPT_INSTALL || true
    } < "$ro_tmp"
    OPT_KEY="${OPT_KEY#x}" OPT_BIN_DIR="${OPT_BIN_DIR#x}" OPT_BOUND="${OPT_BOUND#x}" OPT_AUTOSTART="${OPT_AUTOSTART#x}" OPT_INSTALL="${OPT_INSTALL#x}"
    rm -f "$ro_tmp"
}

# Where uv, pipx, npm and cargo put the commands they install, beyond PATH.
# `npm prefix -g` runs node, so it is asked only when nothing else was found.
tool_bin_dirs() {
    printf '%s\n' "${UV_TOOL_BIN_DIR:-}" "${PIPX_BIN_DIR:-}" "${XDG_BIN_HOME:-}" "${HOME:-}/.local/bin" \
        "${CARGO_HOME:-${HOME:-}/.cargo}/bin" "${NPM_CONFIG_PREFIX:+$NPM_CONFIG_PREFIX/bin}" \
        "${HOME:-}/.npm-global/bin" "${HOME:-}/.local/share/npm/bin" /usr/local/bin
}

# The directory holding the real binaries behind `DIR/tmux-mcp`: DIR itself,
# or, when that is npm's launcher (a .js file), the platform package's bin/
# beside it (nested in the launcher's package, or hoisted next to it).
real_bin_dir() {
    rb_d="$1"
    [ -x "$rb_d/tmux-mcp" ] && [ -x "$rb_d/tmux-mcp-broker" ] || return 1
    rb_real="$(resolve "$rb_d/tmux-mcp")" || return 1
    case "$rb_real" in
        *.js)
            case "$(uname -s)" in Darwin) rb_os=darwin ;; *) rb_os=linux ;; esac
            case "$(uname -m)" in x86_64) rb_arch=x64 ;; aarch64 | arm64) rb_arch=arm64 ;; *) rb_arch="$(uname -m)" ;; esac
            rb_real="$(dirname "$(dirname "$rb_real")")"
            for rb_d in "$rb_real/node_modules/$PACKAGE-$rb_os-$rb_arch/bin" "$(dirname "$rb_real")/$PACKAGE-$rb_os-$rb_arch/bin"; do
                if [ -x "$rb_d/tmux-mcp" ] && [ -x "$rb_d/tmux-mcp-broker" ]; then
                    printf '%s' "$rb_d"; return 0
                fi
            done
            return 1 ;;
    esac
    printf '%s' "$rb_d"
}

# What `DIR/tmux-mcp --version` says: "tmux-mcp 0.1.0" -> 0.1.0.
bin_version() {
    bv_v="$("$1/tmux-mcp" --version 2>/dev/null </dev/null)" || return 1
    printf '%s' "${bv_v##* }"
}

# Whether DIR's tmux-mcp is this plugin's own build (target/release), also
# through a symlink (~/.local/bin/tmux-mcp -> the plugin's build).
is_own_build() {
    ob_own="$(cd -P "$OWN_BIN_DIR" 2>/dev/null && pwd -P)" || return 1
    ob_real="$(resolve "$1/tmux-mcp")" || return 1
    [ "$(dirname "$ob_real")" = "$ob_own" ]
}

# Sets BIN_DIR to the first candidate whose version is this script's, else
# to the plugin's own build, else to the first candidate found (BIN_NOTE then
# says which version it is), in this order: $TMUX_MCP_BIN_DIR, @mcp-bin-dir,
# PATH, the tools' directories, this plugin's own build (release, then
# debug). Every candidate is asked its version, the plugin's own build too.
# Status 1 when there is none.
find_bin_dir() {
    BIN_DIR="" BIN_NOTE=""
    fb_first="" fb_first_v="" fb_own="" fb_own_v="" fb_seen=":" fb_pass=1
    fb_dirs="${TMUX_MCP_BIN_DIR:-}
$OPT_BIN_DIR
$(printf '%s\n' "${PATH:-}" | tr ':' '\n')
$(tool_bin_dirs)
$OWN_BIN_DIR
$PLUGIN_DIR/target/debug"
    while :; do
        while IFS= read -r fb_d; do
            [ -n "$fb_d" ] || continue
            case "$fb_seen" in *":$fb_d:"*) continue ;; esac
            fb_seen="$fb_seen$fb_d:"
            fb_real="$(real_bin_dir "$fb_d")" || continue
            fb_v="$(bin_version "$fb_real")" || continue
            if [ "$fb_v" = "$PLUGIN_VERSION" ]; then
                BIN_DIR="$fb_real"; return 0
            fi
            [ -n "$fb_first" ] || { fb_first="$fb_real"; fb_first_v="$fb_v"; }
            if [ -z "$fb_own" ] && is_own_build "$fb_real"; then
                fb_own="$fb_real" fb_own_v="$fb_v"
            fi
        done <<FB_DIRS
$fb_dirs
FB_DIRS
        # Nothing yet: npm's global prefix, when npm is there (it costs a node start).
        if [ -n "$fb_first" ] || [ $fb_pass != 1 ] || ! command -v npm >/dev/null 2>&1; then break; fi
        fb_npm="$(npm prefix -g 2>/dev/null </dev/null)" || break
        [ -n "$fb_npm" ] || break
        fb_dirs="$fb_npm/bin" fb_pass=2
    done
    [ -n "$fb_first" ] || return 1
    # Of other versions, the plugin's own build: the one it can rebuild.
    if [ -n "$fb_own" ]; then fb_first="$fb_own" fb_first_v="$fb_own_v"; fi
    BIN_DIR="$fb_first"
    BIN_NOTE="tmux-mcp ${fb_first_v:-?}, plugin $PLUGIN_VERSION"
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
    if command -v "$1" 2>/dev/null; then return 0; fi
    for ht_d in "${HOME:-}/.local/bin" "${CARGO_HOME:-${HOME:-}/.cargo}/bin"; do
        if [ -x "$ht_d/$1" ]; then printf '%s\n' "$ht_d/$1"; return 0; fi
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
        if tm show-hooks -g after-set-option 2>/dev/null | grep -q '^after-set-option\['; then
            SET_OPTION_HOOKED=yes
        elif scratch sessions; then
            sh_tmp="$tmp"
            tm run-shell "printf '%s\\n' #{S:#{q:session_id} } > $(fmt_lit "$(shq "$sh_tmp")")"
            for sh_s in $(cat "$sh_tmp"); do
                if tm show-hooks -t "$sh_s" after-set-option 2>/dev/null | grep -q '^after-set-option\['; then
                    SET_OPTION_HOOKED=yes
                    break
                fi
            done
            rm -f "$sh_tmp"
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
    hc_answer=""
    scratch clients || return 2
    hc_tmp="$tmp"
    if ! tm run-shell "printf '%s' '#{S:#{?session_attached,y,}}' > $(fmt_lit "$(shq "$hc_tmp")")" 2>/dev/null; then
        rm -f "$hc_tmp"
        return 2
    fi
    IFS= read -r hc_answer < "$hc_tmp" || true
    rm -f "$hc_tmp"
    [ -n "$hc_answer" ]
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
    lock announce || return 0
    announce_when_attached "$1"
}

# Runs `tmux-mcp.tmux ARGS…` (already quoted for sh) as a tmux job.
job() {
    tm run-shell -b "$(fmt_lit "exec $(shq "$JOB_SH") $(shq "$SCRIPT") $1") </dev/null >/dev/null 2>&1"
}

announce_in_background() {
    job "announce $(shq "$1")"
}

# --- Builds ------------------------------------------------------------------
# The plugin's own build is target/release. It is used when its `tmux-mcp
# --version` is this script's version, however it was built (scripts/build,
# the build job, or `cargo build --release` by hand). After a TPM update to a
# new release (`prefix + U` pulls the checkout) it answers the old version:
# the plugin then serves with it and rebuilds in the background; the build job
# runs this script again, which hands over to a broker of the new binary. A
# build job sets `building` only when there is no binary to serve with.
# The stamp (target/release/tmux-mcp-build-stamp) records the checkout the
# binaries were built from (`git rev-parse HEAD`, else the crate version),
# for a person to read; the version decides.

OWN_BIN_DIR="$PLUGIN_DIR/target/release"
STAMP="$OWN_BIN_DIR/tmux-mcp-build-stamp"
BUILD_LOG="$PLUGIN_DIR/target/tmux-mcp-build.log"

checkout_id() {
    git -C "$PLUGIN_DIR" rev-parse HEAD 2>/dev/null && return 0
    sed -n 's/^version = "\(.*\)"$/version \1/p' "$PLUGIN_DIR/Cargo.toml" 2>/dev/null | head -n 1
}

# No binary at all: starts `tmux-mcp.tmux build` as a tmux job (it outlives
# this script, never blocks tmux, and dies with the server).
build_in_background() {
    if ! command -v cargo >/dev/null 2>&1; then
        # No binaries and nothing to build them with: say the one command
        # that installs them (shown once a client is attached).
        bb_hint="$(install_hint)"
        set_state missing "mcp: missing, run: $bb_hint"
        announce_in_background "tmux-mcp: no tmux-mcp binaries found (PATH, ~/.local/bin, ~/.cargo/bin, npm's bin) and no cargo to build them: run \`$bb_hint\` and reload tmux.conf (or set -g @mcp-install uv|pipx|npm|cargo)"
        return
    fi
    set_state building "mcp: building"
    job build
}

# The build job: one at a time per checkout. A job that finds another build
# running (a reload, or another tmux server) waits for it and then runs the
# plugin again, as the build that ran does when it is done, so every server
# that asked gets the new binaries. After a build the plugin never builds
# again in the same job (BUILT says how the build went).
build_job() {
    if ! lock build; then
        while locked build; do sleep 1; done
        BUILT=waited
        main
        return 0
    fi
    bj_announcer=""
    if ! [ -x "$OWN_BIN_DIR/tmux-mcp" ]; then
        # The first build: shown once, as soon as someone is there to see it;
        # ends with the server, so a build cut short leaves nothing behind.
        # (A rebuild is said in @mcp-status by the broker's up job.)
        (
            LOCKED=""
            announce_when_attached "tmux-mcp: building the binaries in the background, the first build takes minutes (log: $BUILD_LOG)"
        ) </dev/null >/dev/null 2>&1 &
        bj_announcer=$!
    fi
    # The stamp names what was checked out when the build started.
    bj_id="$(checkout_id)"
    # tmux sends its jobs SIGTERM when the server exits: pass it on to the
    # build, so nothing outlives the server (`wait` returns on the signal).
    TMUX_MCP_BUILT_BY_PLUGIN=1 "$JOB_SH" "$PLUGIN_DIR/scripts/build" >"$BUILD_LOG" 2>&1 </dev/null &
    bj_builder=$! bj_rc=0
    trap 'pkill -TERM -P "$bj_builder" 2>/dev/null; kill "$bj_builder" $bj_announcer 2>/dev/null; exit 1' TERM HUP INT
    wait "$bj_builder" || bj_rc=$?
    trap 'exit 1' TERM HUP INT
    [ -z "$bj_announcer" ] || kill "$bj_announcer" 2>/dev/null
    unlock
    if [ "$bj_rc" = 0 ] && printf '%s\n' "$bj_id" > "$STAMP"; then
        BUILT=ok
    else
        BUILT=failed
        notify "tmux-mcp: the build failed, see $BUILD_LOG"
    fi
    main
}

# --- Installs (opt-in: @mcp-install uv|pipx|npm|cargo) ----------------------
# Only when asked, and only when no binary is found: no network at tmux start
# otherwise. The version installed is this script's, so the version check
# passes afterwards.

INSTALL_LOG="$PLUGIN_DIR/target/tmux-mcp-install.log"

install_in_background() {
    case "$1" in
        uv | pipx | npm | cargo) ;;
        *)
            set_state failed "mcp: @mcp-install $1?"
            notify "tmux-mcp: @mcp-install is '$1'; it takes uv, pipx, npm or cargo"
            return ;;
    esac
    set_state installing "mcp: installing ($1)"
    job "install $(shq "$1")"
}

install_job() {
    ij_route="$1"
    lock install || return 0
    if ! ij_tool="$(have_tool "$ij_route")"; then
        set_state failed "mcp: no $ij_route to install with"
        notify "tmux-mcp: @mcp-install is $ij_route, but $ij_route is not on tmux's PATH nor in ~/.local/bin or ~/.cargo/bin"
        return 0
    fi
    # The command, as the positional parameters.
    case "$ij_route" in
        uv) set -- "$ij_tool" tool install "$PACKAGE==$PLUGIN_VERSION" ;;
        pipx) set -- "$ij_tool" install "$PACKAGE==$PLUGIN_VERSION" ;;
        npm) set -- "$ij_tool" install -g "$PACKAGE@$PLUGIN_VERSION" ;;
        cargo) set -- "$ij_tool" install --locked "$PACKAGE" --version "$PLUGIN_VERSION" ;;
    esac
    printf '%s\n' "$*" >"$INSTALL_LOG"
    ${1+"$@"} >>"$INSTALL_LOG" 2>&1 </dev/null &
    ij_installer=$! ij_rc=0
    trap 'pkill -TERM -P "$ij_installer" 2>/dev/null; kill "$ij_installer" 2>/dev/null; exit 1' TERM HUP INT
    wait "$ij_installer" || ij_rc=$?
    trap 'exit 1' TERM HUP INT
    unlock
    if [ "$ij_rc" != 0 ]; then
        set_state failed "mcp: install failed"
        notify "tmux-mcp: \`$*\` failed, see $INSTALL_LOG"
        return 0
    fi
    # Run the plugin again, which now finds the binaries (and never installs
    # twice: a binary still not found is reported).
    INSTALLED="$ij_route"
    main
}

# --- The broker ----------------------------------------------------------------

# Whether process PID runs the file BROKER as it is now (not one replaced
# since the process started). Linux: /proc/PID/exe names the file it runs
# (" (deleted)" once replaced). Without /proc (macOS): the file was replaced
# when it was modified after the process started (`ps -o lstart`, to the
# second; the reference is 3 s later, so a broker started at once after a
# build is not taken for an older one: procps derives lstart from the boot
# time in whole seconds and was seen up to 1.6 s early; macOS records it at
# the fork; a file replaced within 3 s of the broker's start is missed). When
# neither can be read, the
# running broker is kept. TMUX_MCP_PROC points the tests elsewhere, to take
# the path macOS takes.
PROC_DIR="${TMUX_MCP_PROC:-/proc}" # lint-sh: allow (Linux; the ps fallback below)
runs_file() {
    if [ -d "$PROC_DIR/$1" ]; then
        rf_exe="$(readlink "$PROC_DIR/$1/exe" 2>/dev/null)" || return 0
        [ "$rf_exe" = "$(resolve "$2")" ]
        return
    fi
    rf_file="$(resolve "$2")" || return 0
    # "Sun Dec  6 03:21:22 2026": the same in procps and BSD ps (LC_ALL=C).
    rf_start="$(LC_ALL=C ps -o lstart= -p "$1" 2>/dev/null)" || return 0
    set -f
    # shellcheck disable=SC2086
    set -- $rf_start
    set +f
    [ $# = 5 ] || return 0
    case "$2" in
        Jan) rf_m=01 ;; Feb) rf_m=02 ;; Mar) rf_m=03 ;; Apr) rf_m=04 ;; May) rf_m=05 ;; Jun) rf_m=06 ;;
        Jul) rf_m=07 ;; Aug) rf_m=08 ;; Sep) rf_m=09 ;; Oct) rf_m=10 ;; Nov) rf_m=11 ;; Dec) rf_m=12 ;;
        *) return 0 ;;
    esac
    rf_d="$3" rf_t="$4" rf_y="$5"
    case "$rf_d" in ?) rf_d="0$rf_d" ;; esac
    rf_h="${rf_t%%:*}" rf_t="${rf_t#*:}"
    rf_min="${rf_t%%:*}" rf_s="${rf_t#*:}"
    # 3 s later, within the day (the last seconds of a day keep 23:59:59).
    rf_t=$((${rf_h#0} * 3600 + ${rf_min#0} * 60 + ${rf_s#0} + 3))
    [ $rf_t -lt 86400 ] || rf_t=86399
    rf_h="$(printf '%02d' $((rf_t / 3600)))"
    rf_min="$(printf '%02d' $((rf_t % 3600 / 60)))"
    rf_s="$(printf '%02d' $((rf_t % 60)))"
    scratch started || return 0
    rf_ref="$tmp"
    touch -t "$rf_y$rf_m$rf_d$rf_h$rf_min.$rf_s" "$rf_ref" 2>/dev/null || { rm -f "$rf_ref"; return 0; }
    rf_newer="$(find "$rf_file" -newer "$rf_ref" 2>/dev/null)"
    rm -f "$rf_ref"
    [ -z "$rf_newer" ]
}

# The "up" job: replaces a broker that runs an older binary than the one found
# now, so new agents get the new broker: an idle one is stopped, a busy one
# retires (SIGUSR1: it gives up its socket at once and serves its agents until
# they leave); then starts the broker and reports ready once it answers.
up_job() {
    up_bin_dir="$1" up_sock="$2" up_autostart="$3" up_note="${4:-}"
    # A binary of another version than this script: ready, and saying so.
    up_ready="mcp: ready"
    [ -z "$up_note" ] || up_ready="mcp: ready ($up_note)"
    up_helper="$up_bin_dir/tmux-mcp" up_broker="$up_bin_dir/tmux-mcp-broker"
    if up_status="$("$up_helper" status -S "$up_sock" --json 2>/dev/null)"; then
        up_pid="$(printf '%s\n' "$up_status" | sed -n 's/^ *"broker_pid": *\([0-9]*\).*/\1/p')"
        up_open="$(printf '%s\n' "$up_status" | sed -n 's/^ *"sessions_open": *\([0-9]*\).*/\1/p')"
        if [ -n "$up_pid" ] && ! runs_file "$up_pid" "$up_broker"; then
            up_i=0
            if [ "${up_open:-1}" = 0 ]; then
                # Ours: it serves this tmux server and no agent uses it.
                kill -TERM "$up_pid" 2>/dev/null
                while kill -0 "$up_pid" 2>/dev/null && [ $up_i -lt 50 ]; do sleep 0.1; up_i=$((up_i + 1)); done
            else
                # Busy: it retires, keeping its agents; wait until its socket
                # is free for the new broker.
                kill -USR1 "$up_pid" 2>/dev/null
                while "$up_helper" status -S "$up_sock" >/dev/null 2>&1 && [ $up_i -lt 50 ]; do sleep 0.1; up_i=$((up_i + 1)); done
                notify "tmux-mcp: updated; new agents get the new broker, the old one serves its $up_open agent(s) until they leave"
            fi
        fi
    fi
    if [ "$up_autostart" = off ]; then
        set_state ready "$up_ready"
        return 0
    fi
    # '#{socket_path}' is expanded by tmux: exactly this server's socket.
    tm run-shell -b "exec $(fmt_lit "$(shq "$up_broker")") --socket '#{socket_path}' </dev/null >/dev/null 2>&1"
    up_i=0
    while [ $up_i -lt 100 ]; do
        if "$up_helper" status -S "$up_sock" >/dev/null 2>&1; then
            set_state ready "$up_ready"
            case "$up_note" in
                "") notify "tmux-mcp: ready" ;;
                *"; rebuilding")
                    notify "tmux-mcp: ready with $up_helper (${up_note%; rebuilding}); rebuilding for the plugin's version in the background, then the new broker takes over (log: $BUILD_LOG)" ;;
                *) notify "tmux-mcp: ready, but $up_helper is another version than the plugin: $up_note (update one of them)" ;;
            esac
            return 0
        fi
        sleep 0.1
        up_i=$((up_i + 1))
    done
    set_state failed "mcp: broker failed"
    notify "tmux-mcp: the broker did not start; run \`$up_helper doctor\`"
}

main() {
    OPT_KEY="" OPT_BIN_DIR="" OPT_BOUND="" OPT_AUTOSTART="" OPT_INSTALL=""
    read_options
    m_key="${OPT_KEY:-A}"
    if ! find_bin_dir; then
        if [ -n "${INSTALLED:-}" ]; then
            set_state failed "mcp: installed, not found"
            notify "tmux-mcp: $INSTALLED installed $PACKAGE, but tmux-mcp is not in PATH, ~/.local/bin, ~/.cargo/bin nor npm's bin; set -g @mcp-bin-dir DIR"
        elif [ -n "${BUILT:-}" ]; then
            # After a build (this job's or the one it waited for): never a
            # second one from here.
            set_state failed "mcp: build failed"
            [ "$BUILT" = failed ] || notify "tmux-mcp: the build failed, see $BUILD_LOG"
        elif [ -n "$OPT_INSTALL" ]; then
            install_in_background "$OPT_INSTALL"
        else
            build_in_background
        fi
        return 0
    fi
    m_helper="$BIN_DIR/tmux-mcp"
    m_note="$BIN_NOTE"

    # This plugin's own build, of another version than this script (a TPM
    # update to a new release): it serves meanwhile, and a build job rebuilds
    # it in the background; that job runs this script again, which hands over
    # to a broker of the new binary. @mcp-state stays what is true: ready.
    if [ -n "$m_note" ] && is_own_build "$BIN_DIR"; then
        case "${BUILT:-}" in
            failed) m_note="$m_note; rebuild failed" ;;
            "")
                if command -v cargo >/dev/null 2>&1; then
                    m_note="$m_note; rebuilding"
                    job build
                fi ;;
        esac
    fi
    # The job is given this server's socket (expanded by tmux) and runs in
    # the background, so tmux never waits for the broker.
    tm run-shell -b "$(fmt_lit "exec $(shq "$JOB_SH") $(shq "$SCRIPT") up $(shq "$BIN_DIR")") '#{socket_path}' $(fmt_lit "$(shq "${OPT_AUTOSTART:-on}") $(shq "$m_note")") </dev/null >/dev/null 2>&1"

    # The key binding: unbind a key we bound before under another name.
    if [ -n "$OPT_BOUND" ] && [ "$OPT_BOUND" != "$m_key" ]; then
        tm unbind-key "$OPT_BOUND" 2>/dev/null || true
        set_option_hooked || tm set-option -gu @mcp-cursor-key-bound
    fi
    if [ "$m_key" != "none" ]; then
        tm bind-key "$m_key" run-shell -b "$(fmt_lit "$(shq "$m_helper")") cursor -S '#{socket_path}' '#{pane_id}' </dev/null >/dev/null 2>&1"
        if [ "$OPT_BOUND" != "$m_key" ] && ! set_option_hooked; then
            tm set-option -g @mcp-cursor-key-bound "$m_key"
        fi
    fi
}

case "${1:-}" in
    # scripts/build records what it built.
    stamp) mkdir -p "$OWN_BIN_DIR" && checkout_id > "$STAMP" ;;
    build) build_job ;;
    install) install_job "$2" ;;
    announce) announce_job "$2" ;;
    version) printf '%s\n' "$PLUGIN_VERSION" ;;
    up) up_job "$2" "$3" "$4" "${5:-}" ;;
    *) main ;;
esac
