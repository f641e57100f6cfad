"""The real Codex CLI (npm @openai/codex, pinned in codex/package.json and its
lock), run non-interactively (`codex exec`) against a fake model server.

`install()` returns the `codex` launcher (npm's bin shim: node runs the
package's bin/codex.js, which runs the platform binary), installing the pinned
version first when needed. `CodexHome` is a private CODEX_HOME whose
config.toml names the fake model provider and one MCP server; `run` runs
`codex exec` once (runner.run_agent).

Codex 0.171 reaches beyond loopback unless told not to: with its defaults it
connects to github.com, api.github.com and chatgpt.com (the `plugins`
feature) and ab.chatgpt.com (analytics). The config turns both off, and the
run's environment points every proxy variable at the fake server, which
records and refuses such connections (`FakeModelServer.outbound`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import leftovers

from . import npm_tools
from .fake_model import FakeModelServer
from .runner import AgentRun, hermetic_env, run_agent

PINS = Path(__file__).resolve().parent / "codex"
# Where Codex's app-server daemon keeps its sockets: fixed by Codex, whatever
# TMPDIR, HOME or CODEX_HOME say; each socket is named after the link to it
# that Codex keeps in its CODEX_HOME.
DAEMON_DIR = Path(os.path.realpath("/tmp")) / f"codex-daemon-{os.geteuid()}"
VERSION = json.loads((PINS / "package.json").read_text())["dependencies"]["@openai/codex"]
MODEL = "fake-model"
# The variable that holds the fake provider's API key (Codex sends it as a bearer token).
KEY_VAR = "TMUX_MCP_FAKE_MODEL_KEY"


def install() -> Path:
    codex = npm_tools.npm_install(PINS, f"Codex CLI (@openai/codex {VERSION})") / "node_modules" / ".bin" / "codex"
    assert os.access(codex, os.X_OK), f"npm ci did not install the codex launcher at {codex}"
    return codex


def remove_daemon_sockets(home: Path, dir_existed: bool) -> None:
    """Remove the daemon sockets (and their .lock) of the Codex homes under
    `home` (the targets in DAEMON_DIR of the links there), once their daemon
    has ended; and DAEMON_DIR itself when it was not there before and is
    empty now. Each is recorded for the run's leftover check first."""
    targets = []
    for root, dirs, files in os.walk(home):
        for name in dirs + files:
            link = Path(root) / name
            if link.is_symlink():
                target = Path(os.path.join(root, os.readlink(link)))
                if target.parent == DAEMON_DIR:
                    targets += [target, target.with_name(target.name + ".lock")]
    for target in targets:
        leftovers.record_outside(target)
        try:
            target.unlink()
        except FileNotFoundError:
            pass
    if not dir_existed:
        try:
            DAEMON_DIR.rmdir()
        except OSError:  # not empty: another Codex uses it now, or never made
            pass


def toml_str(s: str) -> str:
    # A TOML basic string: JSON's escapes are valid TOML escapes.
    return json.dumps(s)


def items(run: AgentRun, kind: str) -> list[dict[str, Any]]:
    """The completed items of one type in `codex exec --json` events
    (`mcp_tool_call`, `agent_message`, `error`, ...)."""
    return [e["item"] for e in run.events()
            if e.get("type") == "item.completed" and e.get("item", {}).get("type") == kind]


class CodexHome:
    """A private CODEX_HOME (and HOME: Codex writes nothing into the real one)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.work = self.dir / "work"  # the agent's working directory (not a git repo)
        self.work.mkdir(exist_ok=True)
        self.tmp = self.dir / "tmp"  # its TMPDIR
        self.tmp.mkdir(exist_ok=True)

    def write_config(self, fake: FakeModelServer, mcp_command: str | None, mcp_args: list[str],
                     tool_timeout_sec: int = 30, approval_policy: str = "never",
                     sandbox_mode: str = "read-only", extra: str = "") -> Path:
        """config.toml: the fake provider, and MCP server `tmux` unless
        `mcp_command` is None; `extra` is appended (more tables)."""
        config = f"""\
# Written by tests/python/agents/codex.py for one test run.
model = {toml_str(MODEL)}
model_provider = "fake"
approval_policy = {toml_str(approval_policy)}
sandbox_mode = {toml_str(sandbox_mode)}

[analytics]
enabled = false

[features]
plugins = false

[model_providers.fake]
name = "fake model server (tests)"
base_url = {toml_str(fake.base_url + "/v1")}
wire_api = "responses"
env_key = {toml_str(KEY_VAR)}
request_max_retries = 0
stream_max_retries = 0
"""
        if mcp_command is not None:
            args = ", ".join(toml_str(a) for a in mcp_args)
            config += f"""
[mcp_servers.tmux]
command = {toml_str(mcp_command)}
args = [{args}]
startup_timeout_sec = 20
tool_timeout_sec = {tool_timeout_sec}
"""
        config += extra
        path = self.dir / "config.toml"
        path.write_text(config)
        return path

    def env(self, fake: FakeModelServer) -> dict[str, str]:
        # No OPENAI_*/CODEX_* of the person's; HOME too is private (Codex writes nothing there).
        env = hermetic_env(("OPENAI_", "CODEX_"), CODEX_HOME=str(self.dir), HOME=str(self.dir),
                           TMPDIR=str(self.tmp), **{KEY_VAR: "sk-fake-not-a-secret"})
        env.update(fake.proxy_env())
        return env

    def run(self, codex: Path, prompt: str, env: dict[str, str], timeout: float = 120) -> AgentRun:
        argv = [str(codex), "exec", "--strict-config", "--skip-git-repo-check", "--ephemeral",
                "--json", "--color", "never", "-C", str(self.work), prompt]
        return run_agent(argv, env, self.work, self.dir, timeout)
