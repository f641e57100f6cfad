"""aider (PyPI aider-chat, pinned in aider/requirements.txt), in its own venv
under ${TMUX_MCP_CACHE:-~/.cache/tmux-mcp}/agents/aider-<hash of the pins>,
against a fake model server speaking OpenAI Chat Completions
(fake_model.OpenAIChat, `--openai-api-base`).

`install()` creates that venv once (python3 -m venv, pip install -r) and
returns its `aider` script. `AiderHome` is a private HOME and working
directory (no git repo: --no-git); `argv` is the interactive launch: no
update check, analytics off, no release notes, no auto commits; litellm's
model price map from its package, not the network (LITELLM_LOCAL_MODEL_COST_MAP).
aider offers its model no tools: it asks "Run shell command?" for a ```bash
block in an answer (fake_model.interactive_script(shell_as_text=True)).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import npm_tools
from .fake_model import FakeModelServer
from .runner import hermetic_env

PINS = Path(__file__).resolve().parent / "aider"
VERSION = (PINS / "requirements.txt").read_text().split("==", 1)[1].split()[0]
MODEL = "openai/fake-model"  # litellm: the openai provider, at --openai-api-base


def install(timeout: float = 900) -> Path:
    req = PINS / "requirements.txt"
    digest = hashlib.sha256(req.read_bytes()).hexdigest()[:16]
    root = npm_tools.cache_root()
    target = root / f"aider-{digest}"
    aider = target / "bin" / "aider"
    if (target / ".complete").is_file():
        return aider
    python = shutil.which("python3") or sys.executable
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".aider.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").is_file():
            return aider
        shutil.rmtree(target, ignore_errors=True)
        for step in ([python, "-m", "venv", str(target)],
                     [str(target / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", "-r", str(req)]):
            proc = subprocess.run(step, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            if proc.returncode != 0:
                shutil.rmtree(target, ignore_errors=True)
                npm_tools.missing(f"installing aider-chat {VERSION} failed: {' '.join(step)}:\n"
                                  f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        for old in root.glob("aider-*"):
            if old != target and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
        (target / ".complete").touch()
    return aider


class AiderHome:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.work = directory / "work"
        self.tmp = directory / "tmp"
        for d in (self.work, self.tmp):
            d.mkdir(parents=True, exist_ok=True)

    def env(self, fake: FakeModelServer) -> dict[str, str]:
        env = hermetic_env(("OPENAI_", "AIDER_", "ANTHROPIC_", "GEMINI_", "LITELLM_"),
                           HOME=str(self.dir), TMPDIR=str(self.tmp),
                           OPENAI_API_KEY="sk-fake-not-a-secret", LITELLM_LOCAL_MODEL_COST_MAP="True")
        env.update(fake.proxy_env())
        return env

    def argv(self, aider: Path, fake: FakeModelServer) -> list[str]:
        return [str(aider), "--model", MODEL, "--openai-api-base", fake.base_url + "/v1",
                "--no-git", "--no-check-update", "--analytics-disable", "--no-show-release-notes",
                "--no-show-model-warnings", "--no-auto-commits", "--no-gitignore",
                # The diff (SEARCH/REPLACE) format: aider offers to run the ```bash blocks of an answer
                # ("whole", its default for an unknown model, takes them for a file).
                "--edit-format", "diff"]
