# Sourced by bench.sh (scripts/bench --peers) and tasks.sh (scripts/bench --tasks):
# the pinned peers, installed once outside the repository.
#
# peers_install: ${XDG_CACHE_HOME:-$HOME/.cache}/tmux-mcp/peers/<hash of the pin
#   files> gets venv-driver (requirements-driver.txt: the official Python SDK,
#   matplotlib), venv-libtmux-mcp and venv-mcp-tmux (each peer in its own venv:
#   mcp-tmux needs mcp < 2, libtmux-mcp fastmcp 4), npm (package.json + lock,
#   `npm ci`: the official TypeScript SDK and server-everything); sets TOOLS to it.
# peers_libtmux_rs: `cargo install --root .../peers/libtmux-rs-0.1.0-alpha.8 tmux-mcp
#   --version 0.1.0-alpha.8` when not there yet; sets the array libtmux_rs to run.py's
#   arguments (--libtmux-rs BIN, or --libtmux-rs-note WHY when it does not build).
# The caller sets ROOT (the repository) and defines die.
# Environment: PYTHON3 (python >= 3.10 that makes the venvs; default python3),
# NPM (default npm), CARGO (default cargo).
PEERS=tests/bench/peers
PY3="${PYTHON3:-python3}"
NPM="${NPM:-npm}"
CARGO="${CARGO:-cargo}"
LIBTMUX_RS_VERSION=0.1.0-alpha.8
CACHE="${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/tmux-mcp/peers"

log() { printf '==> %s\n' "$*" >&2; }

peers_install() {
    local pins=("$ROOT/$PEERS"/package.json "$ROOT/$PEERS"/package-lock.json "$ROOT/$PEERS"/requirements-*.txt) venv
    TOOLS="$CACHE/$(cat "${pins[@]}" | sha256sum | cut -c1-16)"
    mkdir -p "$CACHE"
    exec 9>"$CACHE/.lock"
    flock 9   # two runs at once must not install into one directory together
    if [[ ! -f "$TOOLS/.complete" ]]; then
        log "installing the pinned peers into $TOOLS"
        rm -rf "$TOOLS"
        mkdir -p "$TOOLS/npm"
        for venv in driver libtmux-mcp mcp-tmux; do
            "$PY3" -m venv "$TOOLS/venv-$venv" || die "$PY3 -m venv failed"
            "$TOOLS/venv-$venv/bin/pip" install --quiet --disable-pip-version-check -r "$ROOT/$PEERS/requirements-$venv.txt" >&2 \
                || die "pip install -r $PEERS/requirements-$venv.txt failed"
        done
        cp "$ROOT/$PEERS"/package.json "$ROOT/$PEERS"/package-lock.json "$TOOLS/npm/"
        (cd "$TOOLS/npm" && "$NPM" ci --no-audit --no-fund --loglevel=error) >&2 || die "npm ci in $TOOLS/npm failed"
        touch "$TOOLS/.complete"
    fi
    flock -u 9
}

peers_libtmux_rs() {
    local rs="$CACHE/libtmux-rs-$LIBTMUX_RS_VERSION"
    libtmux_rs=()
    exec 9>"$CACHE/.lock"
    flock 9
    if [[ ! -x "$rs/bin/tmux-mcp" ]]; then
        log "cargo install --root $rs tmux-mcp --version $LIBTMUX_RS_VERSION (log: $rs.build.log)"
        # Outside the repository, so no workspace setting of ours applies to it.
        if (cd / && nice "$CARGO" install --locked --root "$rs" tmux-mcp --version "$LIBTMUX_RS_VERSION") >"$rs.build.log" 2>&1 \
            || (cd / && nice "$CARGO" install --root "$rs" tmux-mcp --version "$LIBTMUX_RS_VERSION") >>"$rs.build.log" 2>&1; then
            :
        else
            log "libtmux-rs tmux-mcp did not build here: $(grep -m1 -E '^error' "$rs.build.log" || tail -1 "$rs.build.log")"
        fi
    fi
    flock -u 9
    if [[ -x "$rs/bin/tmux-mcp" ]]; then
        libtmux_rs=(--libtmux-rs "$rs/bin/tmux-mcp")
    else
        libtmux_rs=(--libtmux-rs-note "cargo install failed, see $rs.build.log")
    fi
}
