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
# The pinned peers' installation, shared with tasks.sh (scripts/bench --tasks).
source "$ROOT/tests/bench/peers/install.sh"

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
peers_install
libtmux_rs=()
if ((with_rs)); then
    peers_libtmux_rs
fi

# ---- 2. ours: the release binaries ------------------------------------------
"$CARGO" build --release --bins -p tmux-mcp-plugin
TARGET="$("$CARGO" metadata --format-version 1 --no-deps | "$PY3" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"

# ---- 3. the run ---------------------------------------------------------------
unset TMUX TMUX_PANE
exec "$TOOLS/venv-driver/bin/python" "$PEERS/run.py" --tools "$TOOLS" --bin "$TARGET/release" "${libtmux_rs[@]}" "${args[@]}"
