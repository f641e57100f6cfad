"""Running an agent CLI once, non-interactively, and what it left behind.

`run_agent` starts the CLI in its own session (start_new_session), bounded by
a timeout, with stdout and stderr in files; after it exits, whatever of that
session is still alive (its MCP server, say) is reported and killed.
`hermetic_env` builds the environment: the test's own, minus the variables
that would tie the CLI to the person's tmux or to a real account.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from harness import clean_env


def hermetic_env(drop_prefixes: Iterable[str], **extra: str) -> dict[str, str]:
    """clean_env() without any variable starting with one of `drop_prefixes`
    (e.g. OPENAI_, CODEX_: a person's key or config must not reach the run),
    plus `extra`."""
    prefixes = tuple(drop_prefixes)
    env = {k: v for k, v in clean_env().items() if not k.startswith(prefixes)}
    env.update(extra)
    return env


@dataclass
class AgentRun:
    argv: list[str]
    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float
    leftovers: list[str]  # processes of its session still alive after it exited (killed)

    def events(self) -> list[dict[str, Any]]:
        """The JSON objects of stdout, one a line (`--json`, `stream-json`)."""
        out = []
        for line in self.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def describe(self) -> str:
        name = os.path.basename(self.argv[0])
        return (f"{name} rc={self.returncode} after {self.seconds:.1f} s\n"
                f"--- stdout ---\n{self.stdout[-6000:]}\n--- stderr ---\n{self.stderr[-6000:]}")


def run_agent(argv: list[str], env: dict[str, str], cwd: Path, logs: Path,
              timeout: float = 120) -> AgentRun:
    logs.mkdir(parents=True, exist_ok=True)
    name = os.path.basename(argv[0])
    out_path, err_path = logs / f"{name}.stdout", logs / f"{name}.stderr"
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                env=env, cwd=cwd, start_new_session=True)
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
    return AgentRun(argv, rc, out_path.read_text(errors="replace"),
                    err_path.read_text(errors="replace"), seconds,
                    [f"{pid} {cmd}" for pid, cmd in leftovers])


def live_processes(pred: Callable[[int, list[str]], bool], settle: float = 2.0) -> list[tuple[int, str]]:
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
