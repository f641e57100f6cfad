"""The tmux side of an agent-CLI test: this test's tmux server with the plugin
loaded as TPM does (its broker serves the agent's calls), a pane that printed a
unique marker, what the broker publishes for the tool under test, and the
MCP server command the agent's config names (`tmux-mcp attach -S SOCK`,
optionally behind `mcp_rewrite.py`).
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import BIN, REPO, TmuxServer, require_binary

from .runner import live_processes

HERE = Path(__file__).resolve().parent
# What the broker published for capture_pane before issue 16 (the seed's catalog
# set no hints, so MCP's defaults showed).
OLD_HINTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}


def _wait(pred, what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@dataclass
class Scene:
    server: TmuxServer
    pane: str
    marker: str
    published: dict[str, Any]  # the tool's tools/list entry, as the broker publishes it
    calls_before: int

    def mcp_command(self, relay_hints: dict | None = None) -> tuple[str, list[str]]:
        """(command, args) of the agent's MCP server: `tmux-mcp attach -S SOCK`,
        or, with `relay_hints`, the same behind a relay that gives the tool
        exactly those annotations in tools/list."""
        command, args = str(BIN), ["attach", "-S", self.server.sock]
        if relay_hints is None:
            return command, args
        return sys.executable, [str(HERE / "mcp_rewrite.py"), "--tool", self.published["name"],
                                "--annotations", json.dumps(relay_hints), "--", command, *args]

    def served(self) -> int:
        """Tool calls the broker served since the scene was set up."""
        return self.server.status()["tool_calls"] - self.calls_before

    def attach_leftovers(self) -> list[tuple[int, str]]:
        """Any `attach` of this server still alive (wherever its session)."""
        sock = self.server.sock
        return live_processes(lambda _sid, argv: "attach" in argv and sock in argv)


def load_plugin(server: TmuxServer) -> None:
    """Loads the plugin into `server` as TPM does; returns once its broker is ready."""
    require_binary()
    server.tmux("set-option", "-g", "@mcp-bin-dir", str(BIN.parent))
    server.tmux("run-shell", str(REPO / "tmux-mcp.tmux"))
    _wait(lambda: server.tmux("show-options", "-gqv", "@mcp-state") == "ready", "the plugin's broker")


def published_tools(server: TmuxServer) -> list[dict[str, Any]]:
    """tools/list as the broker publishes it through attach (as the agent sees it)."""
    raw = server.raw_client()
    raw.initialize()
    listing = raw.request(2, "tools/list")
    raw.close()
    return listing["result"]["tools"]


@dataclass
class Workspace:
    """Issue 49's 12-pane workspace (workspace12.py) on a server with the
    plugin loaded: what the model is given of each call is measured on it."""
    server: TmuxServer
    panes: list[str]  # in workspace12.PLACES order
    published: list[dict[str, Any]]
    calls_before: int

    def mcp_command(self) -> tuple[str, list[str]]:
        return str(BIN), ["attach", "-S", self.server.sock]

    def served(self) -> int:
        return self.server.status()["tool_calls"] - self.calls_before

    def attach_leftovers(self) -> list[tuple[int, str]]:
        sock = self.server.sock
        return live_processes(lambda _sid, argv: "attach" in argv and sock in argv)


def setup_workspace12(server: TmuxServer) -> Workspace:
    import workspace12
    load_plugin(server)
    panes = workspace12.build(server)
    return Workspace(server, panes, published_tools(server), server.status()["tool_calls"])


def compact(value: Any) -> bytes:
    """The compact JSON of `value`, as the agent CLIs serialize what they send."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def setup(server: TmuxServer, tool: str = "capture_pane") -> Scene:
    load_plugin(server)
    marker = f"agent-sees-{secrets.token_hex(6)}"
    pane = server.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", f"printf '%s\\n' {marker}; exec sleep 1000")
    _wait(lambda: marker in server.tmux("capture-pane", "-p", "-t", pane), f"{marker} in {pane}")
    # What the broker itself publishes (through attach, as the agent sees it).
    published = next(t for t in published_tools(server) if t["name"] == tool)
    return Scene(server, pane, marker, published, server.status()["tool_calls"])
