"""The official MCP Inspector's `--strict` check of `tools/list`: every tool of
both toolsets, at the highest tier with every opt-in tool enabled, has no
tool-schema portability problem of error severity (the Inspector exits 6
then), and no warning but one kind: nullable fields written as
`type: [T, "null"]` (counted and printed). Issue "Exact and honest, round 2"
item 9: `batch` once published `structuredContent: true` (a warning of
another kind for Inspector 2.12).

The Inspector (pinned with its lock in agents/inspector/, with the Node 22 it
needs) is installed with npm ci outside the repository, as the agent CLIs are.
"""

from __future__ import annotations

import subprocess

from agents import npm_tools
from harness import BIN, REPO, clean_env, enable_all, readme_tools, require_binary

PINS = REPO / "tests" / "python" / "agents" / "inspector"


def inspector() -> list[str]:
    root = npm_tools.npm_install(PINS, "MCP Inspector (@modelcontextprotocol/inspector 2.12.0) and Node 22",
                                 npm_args=("--omit=optional",))
    node = root / "node_modules" / ".bin" / "node"
    launcher = root / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
    assert launcher.is_file(), f"npm ci installed no {launcher}"
    return [str(node), str(launcher)]


def test_inspector_strict_finds_no_schema_error(tmux_server, tmp_path):
    require_binary()
    cmd = inspector()
    server = tmux_server
    every = enable_all(readme_tools())
    for toolset in ("default", "python"):
        proc = subprocess.run(
            [*cmd, "--cli", "--method", "tools/list", "--strict",
             str(BIN), "attach", "-S", server.sock, *every, "--toolset", toolset],
            env=clean_env(HOME=str(tmp_path), MCP_CATALOG_PATH=str(tmp_path / "catalog.json")),
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        errors = [l for l in proc.stderr.splitlines() if l.startswith("Error")]
        warnings = [l for l in proc.stderr.splitlines() if l.startswith("Warning")]
        print(f"MCP Inspector --strict, toolset {toolset}: exit {proc.returncode}, "
              f"{len(errors)} error(s), {len(warnings)} warning(s)")
        assert proc.returncode == 0 and not errors, (
            f"toolset {toolset}: the Inspector exited {proc.returncode}:\n{proc.stderr[-4000:]}")
        # The one kind of warning left is a nullable field written as a type
        # array (legal JSON Schema, and what the seed contracts use); any other
        # (a bare boolean subschema, an unknown format ...) fails.
        issues = [l.strip() for l in proc.stderr.splitlines() if l.strip().startswith("Issue:")]
        assert len(issues) == len(warnings), proc.stderr[-4000:]
        other = [i for i in issues if not i.startswith("Issue: `type` is an array")]
        assert not other, f"toolset {toolset}: portability warnings beyond nullable type arrays:\n" + "\n".join(other)
        assert '"tools"' in proc.stdout, proc.stdout[:2000]
