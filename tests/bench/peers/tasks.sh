#!/usr/bin/env bash
# scripts/bench --tasks [--quick] [--only a,b,c,d] [--with-libtmux-rs] [--ours-request-timeout S]
#
# Scripted agent tasks end to end through the official Python SDK, a fixed policy
# in place of a model, ours against libtmux-mcp and mcp-tmux with each one's
# natural tools (tasks.py says which calls): (a) run a test suite and name the
# failing test, (b) watch a 30 s build and return its error lines, (c) find which
# of 20 panes shows ERROR, (d) follow a log that grows for 30 s. Per task and
# server: tool calls, bytes each agent CLI family gives its model, wall time, a right answer or
# not, and ours over the best peer. Prints figures; asserts nothing.
# 1. The pinned peers, installed as for scripts/bench --peers (install.sh).
#    libtmux-rs is listed as not measured: no policies are written for it yet;
#    --with-libtmux-rs installs it as --peers does.
# 2. Our release binaries (cargo build --release), unless TMUX_MCP_BENCH_BIN names
#    a directory that holds tmux-mcp and tmux-mcp-broker already.
# 3. tasks.py. --quick (or TASKS_QUICK=1): 5 s instead of 30 s for (b) and (d).
#    --ours-request-timeout S: also ours with its broker's request timeout (the
#    ceiling of every wait, 5 s by default) set to S.
# Environment: PYTHON3, NPM, CARGO as for --peers; TMUX_MCP_BENCH_BIN.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
source "$ROOT/tests/bench/peers/install.sh"

die() { printf 'scripts/bench --tasks: %s\n' "$*" >&2; exit 1; }

args=()
with_rs=0
while (($#)); do
    case "$1" in
        --quick) args+=(--quick) ;;
        --only)
            [[ "${2:-}" =~ ^[a-z,]+$ ]] || die "--only needs task letters or names, e.g. a,c"
            args+=(--only "$2")
            shift
            ;;
        --with-libtmux-rs) with_rs=1 ;;
        --ours-request-timeout)
            [[ "${2:-}" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--ours-request-timeout needs seconds"
            args+=(--ours-request-timeout "$2")
            shift
            ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $1 (usage: scripts/bench --tasks [--quick] [--only a,b,c,d] [--with-libtmux-rs] [--ours-request-timeout S])" ;;
    esac
    shift
done

peers_install
libtmux_rs=()
if ((with_rs)); then
    peers_libtmux_rs
fi

if [[ -n "${TMUX_MCP_BENCH_BIN:-}" ]]; then
    BIN="$(cd "$TMUX_MCP_BENCH_BIN" && pwd)"
    [[ -x "$BIN/tmux-mcp" && -x "$BIN/tmux-mcp-broker" ]] || die "TMUX_MCP_BENCH_BIN=$BIN lacks tmux-mcp or tmux-mcp-broker"
else
    "$CARGO" build --release --bins -p tmux-mcp-plugin
    BIN="$("$CARGO" metadata --format-version 1 --no-deps | "$PY3" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release"
fi

unset TMUX TMUX_PANE
exec "$TOOLS/venv-driver/bin/python" "$PEERS/tasks.py" --tools "$TOOLS" --bin "$BIN" "${libtmux_rs[@]}" "${args[@]}"
