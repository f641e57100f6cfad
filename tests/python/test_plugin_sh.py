"""Issue 39 item 2: the plugin's scripts are POSIX sh for macOS's userland.

scripts/lint-sh passes on tmux-mcp.tmux and scripts/build (dash -n, posh -n,
the grep rules for bash-isms and GNU-only tools, shellcheck -s sh where it is
installed), and fails, naming file, line and rule, on a copy of the script
with one forbidden construct planted. The script answers `version` under
dash and posh alike (the plugin tests load it under both).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from harness import REPO, TEST_TMPDIR, clean_env, require_program

LINT = REPO / "scripts" / "lint-sh"
SCRIPT = REPO / "tmux-mcp.tmux"


def lint(*files: str) -> subprocess.CompletedProcess:
    for shell in ("dash", "posh"):
        require_program(shell, "scripts/lint-sh parses the plugin's scripts with it")
    return subprocess.run([str(LINT), *files], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=clean_env())


def test_the_plugin_scripts_pass_the_lint():
    out = lint()
    assert out.returncode == 0, out.stdout + out.stderr
    assert "dash -n, posh -n" in out.stdout, out.stdout


@pytest.mark.parametrize("planted,rule", [
    ('x="$(readlink -f "$0")"', "readlink -f"),
    ('sed -i "s/a/b/" "$STAMP"', "sed -i without a suffix"),
    ("sed -i '' 's/a/b/' \"$STAMP\"", "sed -i without a suffix"),
    ('if [[ -n "$x" ]]; then :; fi', "[[ ]]"),
    ("flock -n 9", "flock(1)"),
    ("t=$(date +%s%N)", "date +%N"),
    ("stat -c %Y \"$STAMP\"", "stat -c"),
    ("timeout 5 true", "timeout(1)"),
    ("f() { local a=1; }", "local"),
    ("echo ${x//a/b}", "${var/pattern/...}"),
    ("a=(1 2)", "array"),
    ("[ a -ef b ]", "test -ef"),
    ('g() { h "$@"; }', '"$@" under set -u'),
])
def test_the_lint_fails_on_a_planted_construct(planted: str, rule: str):
    lines = SCRIPT.read_text().splitlines(keepends=True)
    # After the settings at the top, outside any comment.
    at = next(i for i, line in enumerate(lines) if line.startswith("PLUGIN_VERSION="))
    lines.insert(at, planted + "\n")
    with tempfile.TemporaryDirectory(dir=TEST_TMPDIR) as d:
        copy = Path(d) / "tmux-mcp.tmux"
        copy.write_text("".join(lines))
        out = lint(str(copy))
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"{copy}:{at + 1}: {rule}" in out.stdout, out.stdout


def test_the_lint_fails_on_a_bash_shebang():
    text = SCRIPT.read_text().replace("#!/bin/sh\n", "#!/usr/bin/env bash\n", 1)
    with tempfile.TemporaryDirectory(dir=TEST_TMPDIR) as d:
        copy = Path(d) / "tmux-mcp.tmux"
        copy.write_text(text)
        out = lint(str(copy))
    assert out.returncode == 1 and f"{copy}:1: shebang" in out.stdout, out.stdout


@pytest.mark.parametrize("shell", ["dash", "posh"])
def test_the_script_runs_under_strict_shells(shell: str):
    require_program(shell, "the plugin's script is run under it")
    version = subprocess.run([shell, str(SCRIPT), "version"], capture_output=True, text=True,
                             timeout=10, env=clean_env(), stdin=subprocess.DEVNULL)
    assert version.returncode == 0, version.stderr
    assert version.stdout == subprocess.run([str(SCRIPT), "version"], capture_output=True, text=True,
                                            timeout=10, env=clean_env()).stdout
