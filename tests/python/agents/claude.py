"""The real Claude Code (npm @anthropic-ai/claude-code, pinned in
claude/package.json and its lock), run non-interactively (`claude -p`)
against a fake model server speaking the Anthropic Messages API.

`install()` returns the native `claude` binary of the platform package npm
installed (the package's postinstall only copies that binary over its
`bin/claude.exe` placeholder; the install runs with --ignore-scripts, so the
test runs the binary where npm put it). `ClaudeHome` is a private
CLAUDE_CONFIG_DIR, HOME and TMPDIR; `run` runs `claude -p` once with one MCP
server from `--mcp-config` (and `--strict-mcp-config`: no other).

Claude Code 2.1.332 in `-p` mode runs no MCP tool without an allow rule,
whatever the tool's hints ("Claude requested permissions to use
mcp__tmux__capture_pane, but you haven't granted it yet"): the run passes
`--allowedTools`, as a person running it unattended would. Tool search is off
(ENABLE_TOOL_SEARCH=false) so the MCP tools reach the model in full, not as
names behind its ToolSearch tool. Telemetry, error reporting, the updater and
other non-essential traffic are off; proxies point at the fake server.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

from . import npm_tools
from .fake_model import FakeModelServer
from .runner import AgentRun, hermetic_env, run_agent

PINS = Path(__file__).resolve().parent / "claude"
VERSION = json.loads((PINS / "package.json").read_text())["dependencies"]["@anthropic-ai/claude-code"]
MODEL = "fake-model"
API_KEY = "sk-ant-fake-not-a-secret"


def install() -> Path:
    root = npm_tools.npm_install(PINS, f"Claude Code (@anthropic-ai/claude-code {VERSION})")
    found = sorted((root / "node_modules" / "@anthropic-ai").glob("claude-code-*/claude"))
    if len(found) > 1:  # glibc and musl builds: the one for this libc
        musl = platform.libc_ver()[0] != "glibc"
        found = [p for p in found if p.parent.name.endswith("-musl") == musl] or found
    assert found and os.access(found[0], os.X_OK), (
        f"npm ci installed no native claude binary under {root}/node_modules/@anthropic-ai "
        "(was the platform package left out, --omit=optional?)")
    return found[0]


class ClaudeHome:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.work = directory / "work"  # the agent's working directory (not a git repo)
        self.config = directory / "config"
        self.tmp = directory / "tmp"
        for d in (self.work, self.config, self.tmp):
            d.mkdir(parents=True, exist_ok=True)

    def env(self, fake: FakeModelServer) -> dict[str, str]:
        env = hermetic_env(
            ("ANTHROPIC_", "CLAUDE_", "CLAUDECODE"),
            HOME=str(self.dir), CLAUDE_CONFIG_DIR=str(self.config), TMPDIR=str(self.tmp),
            ANTHROPIC_BASE_URL=fake.base_url, ANTHROPIC_API_KEY=API_KEY,
            DISABLE_TELEMETRY="1", DISABLE_ERROR_REPORTING="1", DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", ENABLE_TOOL_SEARCH="false")
        env.update(fake.proxy_env())
        return env

    def skip_first_run(self) -> Path:
        """The interactive TUI's state file (CLAUDE_CONFIG_DIR/.claude.json) as
        after its first run: onboarding and theme done, the API key from the
        environment approved, the working directory trusted. Without it the
        TUI opens on those dialogs instead of its prompt. (2.1.332 still
        offers "Make auto mode your default permission mode?" from its second
        start on: see tui.dismiss_startup_dialogs.)"""
        state = {
            "hasCompletedOnboarding": True, "lastOnboardingVersion": VERSION, "numStartups": 1,
            "theme": "dark", "autoUpdates": False,
            "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
            "projects": {str(self.work): {
                "hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True,
                "projectOnboardingSeenCount": 1, "allowedTools": []}},
        }
        path = self.config / ".claude.json"
        path.write_text(json.dumps(state, indent=2))
        return path

    def run(self, claude: Path, prompt: str, env: dict[str, str], mcp_command: str,
            mcp_args: list[str], allowed_tools: list[str], timeout: float = 120) -> AgentRun:
        mcp = {"mcpServers": {"tmux": {"command": mcp_command, "args": mcp_args}}}
        argv = [str(claude), "-p", "--output-format", "stream-json", "--verbose", "--model", MODEL,
                "--mcp-config", json.dumps(mcp), "--strict-mcp-config", "--no-session-persistence"]
        if allowed_tools:
            argv += ["--allowedTools", ",".join(allowed_tools)]
        argv += ["--", prompt]
        return run_agent(argv, env, self.work, self.dir, timeout)
