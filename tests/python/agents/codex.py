"""The real Codex CLI (npm @openai/codex, pinned in codex/package.json and its
lock), run non-interactively (`codex exec`) against a fake model server.

`install()` returns the `codex` launcher (npm's bin shim: node runs the
package's bin/codex.js, which runs the platform binary), installing the pinned
version first when needed. `CodexHome` is a private CODEX_HOME whose
config.toml names the fake model provider and one MCP server; `run` starts
`codex exec` in its own session, bounded by a timeout, and reports whatever
of that session is still alive after it exits.

Codex 0.171 reaches beyond loopback unless told not to: with its defaults it
connects to github.com, api.github.com and chatgpt.com (the `plugins`
feature) and ab.chatgpt.com (analytics). The config turns both off, and the
run's environment points every proxy variable at the fake server, which
records and refuses such connections (`FakeModelServer.outbound`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import npm_tools
from .fake_model import FakeModelServer

PINS = Path(__file__).resolve().parent / "codex"
VERSION = json.loads((PINS / "package.json").read_text())["dependencies"]["@openai/codex"]
MODEL = "fake-model"
# The variable that holds the fake provider's API key (Codex sends it as a bearer token).
KEY_VAR = "TMUX_MCP_FAKE_MODEL_KEY"


def install() -> Path:
    codex = npm_tools.npm_install(PINS, f"Codex CLI (@openai/codex {VERSION})") / "node_modules" / ".bin" / "codex"
    assert os.access(codex, os.X_OK), f"npm ci did not install the codex launcher at {codex}"
    return codex


def toml_str(s: str) -> str:
    # A TOML basic string: JSON's escapes are valid TOML escapes.
    return json.dumps(s)


@dataclass
class CodexRun:
    argv: list[str]
    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float
    leftovers: list[str]  # processes of its session still alive after it exited (killed)

    def events(self) -> list[dict[str, Any]]:
        """`codex exec --json` events (one JSON object a line)."""
        out = []
        for line in self.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def items(self, kind: str) -> list[dict[str, Any]]:
        return [e["item"] for e in self.events()
                if e.get("type") == "item.completed" and e.get("item", {}).get("type") == kind]

    def describe(self) -> str:
        return (f"codex exec rc={self.returncode} after {self.seconds:.1f} s\n"
                f"--- stdout ---\n{self.stdout[-6000:]}\n--- stderr ---\n{self.stderr[-6000:]}")


class CodexHome:
    """A private CODEX_HOME (and HOME: Codex writes nothing into the real one)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.work = self.dir / "work"  # the agent's working directory (not a git repo)
        self.work.mkdir(exist_ok=True)

    def write_config(self, fake: FakeModelServer, mcp_command: str, mcp_args: list[str],
                     tool_timeout_sec: int = 30) -> Path:
        args = ", ".join(toml_str(a) for a in mcp_args)
        config = f"""\
# Written by tests/python/agents/codex.py for one test run.
model = {toml_str(MODEL)}
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "read-only"

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

[mcp_servers.tmux]
command = {toml_str(mcp_command)}
args = [{args}]
startup_timeout_sec = 20
tool_timeout_sec = {tool_timeout_sec}
"""
        path = self.dir / "config.toml"
        path.write_text(config)
        return path

    def env(self, fake: FakeModelServer, base: dict[str, str]) -> dict[str, str]:
        env = dict(base)
        env.update(CODEX_HOME=str(self.dir), HOME=str(self.dir), **{KEY_VAR: "sk-fake-not-a-secret"})
        env.update(fake.proxy_env())
        return env

    def run(self, codex: Path, prompt: str, env: dict[str, str], timeout: float = 120) -> CodexRun:
        argv = [str(codex), "exec", "--strict-config", "--skip-git-repo-check", "--ephemeral",
                "--json", "--color", "never", "-C", str(self.work), prompt]
        out_path, err_path = self.dir / "codex.stdout", self.dir / "codex.stderr"
        t0 = time.monotonic()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    env=env, cwd=self.work, start_new_session=True)
            try:
                rc: int | None = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _killpg(proc.pid)
                proc.wait(timeout=10)
                rc = None
        seconds = time.monotonic() - t0
        leftovers = session_processes(proc.pid)
        if leftovers:
            _killpg(proc.pid)
            for pid, _ in leftovers:
                _kill(pid)
        return CodexRun(argv, rc, out_path.read_text(errors="replace"),
                        err_path.read_text(errors="replace"), seconds,
                        [f"{pid} {cmd}" for pid, cmd in leftovers])


def live_processes(pred, settle: float = 2.0) -> list[tuple[int, str]]:
    """Live (not zombie) processes for which pred(session id, argv) holds, after
    giving them `settle` s to exit: [(pid, command line)]."""
    deadline = time.monotonic() + settle
    while True:
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            pid = int(entry)
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            except (OSError, IndexError):
                continue
            # fields: state ppid pgrp session ...
            if fields[0] != "Z" and pred(int(fields[3]), argv):
                found.append((pid, " ".join(argv)))
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def session_processes(sid: int, settle: float = 2.0) -> list[tuple[int, str]]:
    """Live processes of session `sid` (a process started with start_new_session)."""
    return live_processes(lambda s, _argv: s == sid, settle)


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
