#!/usr/bin/env bash
# scripts/bench --peers [--plot] [--with-libtmux-rs] [--rounds N]
#
# 1. Installs the pinned peers into ${XDG_CACHE_HOME:-$HOME/.cache}/tmux-mcp/peers/<hash
#    of the pin files>, outside the repository, once (later runs reuse it):
#    venv-driver (requirements-driver.txt: the official Python SDK, matplotlib),
#    venv-libtmux-mcp and venv-mcp-tmux (each peer in its own venv: mcp-tmux needs
#    mcp < 2, libtmux-mcp fastmcp 4), npm (package.json + lock, `npm ci`: the
#    official TypeScript SDK and server-everything). With --with-libtmux-rs also
#    `cargo install --root .../peers/libtmux-rs-0.1.0-alpha.8 tmux-mcp --version
#    0.1.0-alpha.8`; when that does not build, the run says so and goes on.
# 2. Builds our release binaries (as scripts/bench does).
# 3. run.py: the tmux servers, both drivers, the table (asserts nothing).
# Environment: PYTHON3 (python >= 3.10 that makes the venvs; default python3),
# NPM (default npm), CARGO (default cargo), TMUX_MCP_BENCH_PLOT (the PNG's path).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
PEERS=tests/bench/peers
PY3="${PYTHON3:-python3}"
NPM="${NPM:-npm}"
CARGO="${CARGO:-cargo}"
LIBTMUX_RS_VERSION=0.1.0-alpha.8

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'scripts/bench --peers: %s\n' "$*" >&2; exit 1; }

args=()
with_rs=0
while (($#)); do
    case "$1" in
        --plot) args+=(--plot) ;;
        --with-libtmux-rs) with_rs=1 ;;
        --rounds)
            [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--rounds needs a positive integer"
            args+=(--rounds "$2")
            shift
            ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $1 (usage: scripts/bench --peers [--plot] [--with-libtmux-rs] [--rounds N])" ;;
    esac
    shift
done

# ---- 1. the pinned peers, outside the repository ---------------------------
CACHE="${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/tmux-mcp/peers"
PINS=("$PEERS"/package.json "$PEERS"/package-lock.json "$PEERS"/requirements-*.txt)
TOOLS="$CACHE/$(cat "${PINS[@]}" | sha256sum | cut -c1-16)"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9   # two runs at once must not install into one directory together
if [[ ! -f "$TOOLS/.complete" ]]; then
    log "installing the pinned peers into $TOOLS"
    rm -rf "$TOOLS"
    mkdir -p "$TOOLS/npm"
    for venv in driver libtmux-mcp mcp-tmux; do
        "$PY3" -m venv "$TOOLS/venv-$venv" || die "$PY3 -m venv failed"
        "$TOOLS/venv-$venv/bin/pip" install --quiet --disable-pip-version-check -r "$PEERS/requirements-$venv.txt" >&2 \
            || die "pip install -r $PEERS/requirements-$venv.txt failed"
    done
    cp "$PEERS"/package.json "$PEERS"/package-lock.json "$TOOLS/npm/"
    (cd "$TOOLS/npm" && "$NPM" ci --no-audit --no-fund --loglevel=error) >&2 || die "npm ci in $TOOLS/npm failed"
    touch "$TOOLS/.complete"
fi
libtmux_rs=()
if ((with_rs)); then
    RS="$CACHE/libtmux-rs-$LIBTMUX_RS_VERSION"
    if [[ ! -x "$RS/bin/tmux-mcp" ]]; then
        log "cargo install --root $RS tmux-mcp --version $LIBTMUX_RS_VERSION (log: $RS.build.log)"
        # Outside the repository, so no workspace setting of ours applies to it.
        if (cd / && nice "$CARGO" install --locked --root "$RS" tmux-mcp --version "$LIBTMUX_RS_VERSION") >"$RS.build.log" 2>&1 \
            || (cd / && nice "$CARGO" install --root "$RS" tmux-mcp --version "$LIBTMUX_RS_VERSION") >>"$RS.build.log" 2>&1; then
            :
        else
            log "libtmux-rs tmux-mcp did not build here: $(grep -m1 -E '^error' "$RS.build.log" || tail -1 "$RS.build.log")"
        fi
    fi
    if [[ -x "$RS/bin/tmux-mcp" ]]; then
        libtmux_rs=(--libtmux-rs "$RS/bin/tmux-mcp")
    else
        libtmux_rs=(--libtmux-rs-note "cargo install failed, see $RS.build.log")
    fi
fi
flock -u 9

# ---- 2. ours: the release binaries ------------------------------------------
"$CARGO" build --release --bins -p tmux-mcp-plugin
TARGET="$("$CARGO" metadata --format-version 1 --no-deps | "$PY3" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"

# ---- 3. the run ---------------------------------------------------------------
unset TMUX TMUX_PANE
exec "$TOOLS/venv-driver/bin/python" "$PEERS/run.py" --tools "$TOOLS" --bin "$TARGET/release" "${libtmux_rs[@]}" "${args[@]}"
