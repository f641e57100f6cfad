"""The real Gemini CLI (npm @google/gemini-cli, pinned in gemini/package.json
and its lock, with the Node 22 it runs on: the npm `node` package, since
Gemini CLI needs Node >= 20 and a distribution's may be older), run
non-interactively (`gemini -p`) against a fake model server speaking the
Gemini API (GOOGLE_GEMINI_BASE_URL, an API key).

`install()` runs `npm ci --omit=optional` (the optional native modules,
keytar and node-pty, would compile; the only install script left is the
`node` package's, which fetches its platform binary from the registry) and
returns the argv prefix `[node, .../gemini-cli/bundle/gemini.js]`.
`GeminiHome` is a private HOME (settings in HOME/.gemini/settings.json) and
TMPDIR.

Gemini CLI 0.61 in `-p` mode offers its model no MCP tool that its policy
engine does not allow (the tool is left out of the request, not refused);
its policies can match a tool's annotations. `READ_ONLY_POLICY` is the rule a
person adds to let every tool of server `tmux` hinted read-only run
unattended (`--policy FILE`). Usage statistics, telemetry and update checks
are off; proxies point at the fake server (Node's fetch honours them with
NODE_USE_ENV_PROXY=1).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from . import npm_tools
from .fake_model import FakeModelServer
from .runner import AgentRun, hermetic_env, run_agent

PINS = Path(__file__).resolve().parent / "gemini"
VERSION = json.loads((PINS / "package.json").read_text())["dependencies"]["@google/gemini-cli"]
MODEL = "gemini-2.5-flash"  # the request names it; the fake answers whatever it is

READ_ONLY_POLICY = """\
# Let Gemini CLI run the tools of MCP server `tmux` that are hinted read-only,
# without asking (also in -p mode).
[[rule]]
toolName = "*"
mcpName = "tmux"
toolAnnotations = { readOnlyHint = true }
decision = "allow"
priority = 100
"""

# Every tool of MCP server `tmux`, whatever its hints (so Gemini CLI offers its
# model all of them: what they cost it to read is measured).
ALLOW_TMUX_POLICY = """\
[[rule]]
toolName = "*"
mcpName = "tmux"
decision = "allow"
priority = 100
"""


def install() -> list[str]:
    root = npm_tools.npm_install(PINS, f"Gemini CLI (@google/gemini-cli {VERSION}) and Node 22",
                                 npm_args=("--omit=optional",))
    node = root / "node_modules" / ".bin" / "node"
    script = root / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
    assert script.is_file(), f"npm ci installed no {script}"
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL).stdout.strip()
    assert version.startswith("v22."), (
        f"{node} is not the pinned Node 22 ({version!r}): did the `node` package's install script run?")
    return [str(node), str(script)]


class GeminiHome:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.work = directory / "work"  # the agent's working directory (not a git repo)
        self.tmp = directory / "tmp"
        self.settings_dir = directory / ".gemini"
        for d in (self.work, self.tmp, self.settings_dir):
            d.mkdir(parents=True, exist_ok=True)

    def write_config(self, mcp_command: str | None, mcp_args: list[str], policy: str | None,
                     extra: dict | None = None) -> Path | None:
        """settings.json (MCP server `tmux` unless `mcp_command` is None; `extra`'s
        sections merged in) and, with `policy`, a policy file (its path returned)."""
        settings: dict = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
        }
        if mcp_command is not None:
            settings["mcpServers"] = {"tmux": {"command": mcp_command, "args": mcp_args}}
        for section, values in (extra or {}).items():
            if isinstance(values, dict) and isinstance(settings.get(section), dict):
                settings[section] = {**settings[section], **values}
            else:
                settings[section] = values
        (self.settings_dir / "settings.json").write_text(json.dumps(settings, indent=2))
        if policy is None:
            return None
        path = self.dir / "policy.toml"
        path.write_text(policy)
        return path

    def env(self, fake: FakeModelServer) -> dict[str, str]:
        env = hermetic_env(("GEMINI_", "GOOGLE_"), HOME=str(self.dir), TMPDIR=str(self.tmp),
                           GEMINI_API_KEY="fake-gemini-key-not-a-secret",
                           GOOGLE_GEMINI_BASE_URL=fake.base_url, NODE_USE_ENV_PROXY="1", NO_BROWSER="1")
        env.update(fake.proxy_env())
        return env

    def run(self, gemini: list[str], prompt: str, env: dict[str, str], policy: Path | None,
            timeout: float = 120) -> AgentRun:
        argv = [*gemini, "-m", MODEL, "-o", "stream-json", "--skip-trust"]
        if policy is not None:
            argv += ["--policy", str(policy)]
        argv += ["-p", prompt]
        return run_agent(argv, env, self.work, self.dir, timeout)
