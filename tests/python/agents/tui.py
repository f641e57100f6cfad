"""An agent CLI's interactive TUI in a tmux pane, against a fake model server.

`TuiServer` is a private tmux server (its own socket under a temporary
directory, `-f /dev/null`, remain-on-exit on, a fixed size) whose one pane
runs the CLI: as the pane's command (`start`), or typed into a shell in the
pane (`start(via_shell=True)`, bash without rc files). Its methods type into
the pane (`type_line`, `keys`, `paste`), read it (`screen`, `wait_for`,
`pane_dead`), record what the application wrote (`record`: pipe-pane into a
file, e.g. to see whether it turned bracketed paste on) and list the pane's
process tree (`process_tree`, from /proc). `close` kills that server only
(by its socket).

`claude(fake, dir)`, `codex(fake, dir)`, `gemini(fake, dir)`, `aider(fake,
dir)`, `opencode(fake, dir)` return the
`Launch` (argv, environment, working directory) of each CLI's TUI, configured
by the same per-CLI modules as the non-interactive tests (private home, base
URL of the fake server, fake API key, the refusing proxy for everything else)
plus what skips its first-run dialogs. No MCP server; approvals stay on (the
CLI asks before it runs its own shell tool).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import aider as aider_cli
from . import claude as claude_cli
from . import codex as codex_cli
from . import gemini as gemini_cli
from . import opencode as opencode_cli
from .fake_model import FakeModelServer

TMUX = os.environ.get("TMUX_BIN") or shutil.which("tmux") or "tmux"
WIDTH, HEIGHT = 120, 40
TERM = "tmux-256color"
# A model name Claude Code knows (with "fake-model" it warns that the model
# isn't recognized); the fake server answers whatever the request names.
CLAUDE_MODEL = "sonnet"


def person_env(env: dict[str, str]) -> dict[str, str]:
    """`env` as a person's terminal has it: without the variables of the tmux
    that runs the tests (`TMUX`, `TMUX_PANE`), and without the markers of a CI
    machine. Ink, which Gemini CLI draws with, reads `CI`,
    `CONTINUOUS_INTEGRATION` or any `CI_*` variable as "not interactive", and
    Gemini CLI 0.61 then takes the headless path (it printed "No input provided
    via stdin" and exited on the CI machine, which sets `CI`); it also reads
    `GITHUB_ACTIONS=true` so."""
    return {k: v for k, v in env.items()
            if k not in ("TMUX", "TMUX_PANE", "CI", "CONTINUOUS_INTEGRATION", "GITHUB_ACTIONS")
            and not k.startswith("CI_")}


@dataclass
class Launch:
    name: str         # "claude", "codex", "gemini"
    version: str      # the pinned npm version
    argv: list[str]
    env: dict[str, str]
    cwd: Path


@dataclass
class Proc:
    pid: int
    ppid: int
    pgrp: int
    sid: int
    tpgid: int
    state: str
    exe: str
    argv: list[str]
    depth: int = 0

    @property
    def foreground(self) -> bool:
        """In the terminal's foreground process group (stat's tpgid == pgrp)."""
        return self.tpgid == self.pgrp

    def line(self) -> str:
        fg = "FG" if self.foreground else "bg"
        return (f"{'  ' * self.depth}pid={self.pid} ppid={self.ppid} pgrp={self.pgrp} sid={self.sid} "
                f"tpgid={self.tpgid} {fg} state={self.state}\n{'  ' * self.depth}  exe={self.exe}\n"
                f"{'  ' * self.depth}  argv={self.argv!r}")


def read_proc(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0")]
        if argv and argv[-1] == "":
            argv.pop()
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError as e:
            exe = f"({e.strerror})"
    except OSError:
        return None
    # fields after "comm)": state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8)
    rest = stat.rsplit(")", 1)[1].split()
    return Proc(pid, int(rest[1]), int(rest[2]), int(rest[3]), int(rest[5]), rest[0], exe, argv)


def process_tree(root: int) -> list[Proc]:
    """`root` and its descendants, depth first (children by pid)."""
    procs = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            p = read_proc(int(entry))
            if p is not None:
                procs[p.pid] = p
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    out: list[Proc] = []

    def walk(pid: int, depth: int) -> None:
        p = procs.get(pid)
        if p is None:
            return
        p.depth = depth
        out.append(p)
        for c in sorted(children.get(pid, [])):
            walk(c, depth + 1)

    walk(root, 0)
    return out


@dataclass
class TuiServer:
    """A private tmux server with one pane (`pane`), `WIDTH`x`HEIGHT`."""
    dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="agtui-")))
    width: int = WIDTH
    height: int = HEIGHT
    pane: str = ""
    env: dict[str, str] = field(default_factory=dict)

    @property
    def sock(self) -> str:
        return str(self.dir / "sock")

    def tmux(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run([TMUX, "-S", self.sock, *args], capture_output=True, text=True,
                              env=self.env or None, timeout=30, stdin=subprocess.DEVNULL)
        if check and proc.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: rc={proc.returncode} {proc.stderr.strip()}")
        return proc.stdout.rstrip("\n")

    def start(self, launch: Launch, via_shell: bool = False, type_command: bool = True) -> str:
        """The server, with the CLI as the pane's command (its environment is
        the server's: tmux passes its own to the pane), or typed into bash
        (`type_command` False: only bash, at its prompt)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.env = person_env(dict(launch.env, TERM=os.environ.get("TERM", "xterm-256color")))
        if via_shell:
            cmd = ["bash", "--norc", "--noprofile"]
        else:
            cmd = list(launch.argv)
        self.tmux("-f", "/dev/null", "start-server", ";",
                  "set-option", "-g", "remain-on-exit", "on", ";",
                  "set-option", "-g", "default-terminal", TERM, ";",
                  "set-option", "-g", "history-limit", "5000", ";",
                  "set-option", "-g", "status", "off", ";",
                  "new-session", "-d", "-s", launch.name, "-x", str(self.width), "-y", str(self.height),
                  "-c", str(launch.cwd), "--", *cmd)
        self.pane = self.tmux("display-message", "-p", "-t", launch.name, "#{pane_id}")
        if via_shell:
            self.wait_for(r"[$#] *$", "bash's prompt", 10)
            if type_command:
                self.type_line(" ".join(_sh_quote(a) for a in launch.argv))
        return self.pane

    def close(self) -> None:
        """Kill this tmux server, then whatever of the pane's process tree
        outlived it (Gemini CLI 0.61 does not exit when its pty hangs up: it
        went on as an orphan after kill-server)."""
        procs: list[Proc] = []
        if self.pane:
            try:
                if not self.pane_dead():
                    procs = self.process_tree()
            except (RuntimeError, ValueError, subprocess.TimeoutExpired):
                pass
        self.tmux("kill-server", check=False)
        if not procs:
            return
        # SIGHUP from the pty's hangup first; then SIGTERM (a chance to clean
        # up), and SIGKILL only for what is still there after that.
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            for p in procs:
                if sig is not None and _alive(p):
                    try:
                        os.kill(p.pid, sig)
                    except OSError:
                        pass
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline and any(_alive(p) for p in procs):
                time.sleep(0.1)

    def __enter__(self) -> "TuiServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- reading ----------------------------------------------------------

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.pane)

    def fmt(self, f: str) -> str:
        return self.tmux("display-message", "-p", "-t", self.pane, f)

    def pane_pid(self) -> int:
        return int(self.fmt("#{pane_pid}"))

    def pane_dead(self) -> bool:
        return self.fmt("#{pane_dead}") == "1"

    def wait_for(self, pred: Callable[[str], bool] | str, what: str = "", timeout: float = 30,
                 interval: float = 0.2) -> str:
        """The screen once `pred(screen)` holds (a str: a regular expression
        searched in it); on timeout, raises with the last screen."""
        test = (lambda s: re.search(pred, s) is not None) if isinstance(pred, str) else pred
        deadline = time.monotonic() + timeout
        while True:
            s = self.screen()
            if test(s):
                return s
            if time.monotonic() >= deadline:
                raise TimeoutError(f"timed out after {timeout} s waiting for {what or pred!r}; screen:\n{s}")
            time.sleep(interval)

    def settle(self, quiet: float = 1.0, timeout: float = 15) -> str:
        """The screen once it has not changed for `quiet` s (spinners never settle: bounded by timeout)."""
        last, since = self.screen(), time.monotonic()
        deadline = since + timeout
        while time.monotonic() < deadline:
            time.sleep(0.2)
            s = self.screen()
            if s != last:
                last, since = s, time.monotonic()
            elif time.monotonic() - since >= quiet:
                break
        return last

    def process_tree(self) -> list[Proc]:
        return process_tree(self.pane_pid())

    def record(self, path: Path) -> None:
        """Append everything the pane's application writes to `path` (pipe-pane -O)."""
        self.tmux("pipe-pane", "-O", "-t", self.pane, f"cat >> {_sh_quote(str(path))}")

    # ---- typing -----------------------------------------------------------

    def type_text(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.pane, "-l", text)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.pane, *keys)

    def type_line(self, text: str, pause: float = 0.3) -> None:
        """Type `text` literally, then (after `pause`) Enter."""
        self.type_text(text)
        time.sleep(pause)
        self.keys("Enter")

    def paste(self, text: str, bracketed: bool = True) -> None:
        """paste-buffer of `text` (-p: in bracketed-paste markers if the app asked for them)."""
        self.tmux("set-buffer", "-b", "agtui", "--", text)
        self.tmux("paste-buffer", "-d", "-b", "agtui", "-t", self.pane, *(["-p"] if bracketed else []))


def _alive(p: Proc) -> bool:
    """The same process (pid and start command) still alive, not a zombie."""
    now = read_proc(p.pid)
    return now is not None and now.state != "Z" and now.argv == p.argv


def _sh_quote(s: str) -> str:
    return s if re.fullmatch(r"[A-Za-z0-9_./:=@%+,-]+", s) else "'" + s.replace("'", "'\\''") + "'"


# --------------------------------------------------------------------------
# The CLIs
# --------------------------------------------------------------------------


def claude(fake: FakeModelServer, directory: Path) -> Launch:
    """Claude Code's TUI: `claude --model fake-model` in a trusted working
    directory, onboarding done (ClaudeHome.skip_first_run)."""
    binary = claude_cli.install()
    home = claude_cli.ClaudeHome(directory)
    home.skip_first_run()
    # The default permission mode (2.1.332's own default is "auto": a classifier
    # decides, and would run `echo hi` unasked).
    (home.config / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "default"}}))
    return Launch("claude", claude_cli.VERSION, [str(binary), "--model", CLAUDE_MODEL],
                  home.env(fake), home.work)


def codex(fake: FakeModelServer, directory: Path) -> Launch:
    """Codex's TUI: `codex` with the fake provider, approval policy
    `untrusted` (it asks before any command not known to be safe) and the
    working directory trusted (no trust screen)."""
    launcher = codex_cli.install()
    home = codex_cli.CodexHome(directory)
    extra = f"""
[projects.{codex_cli.toml_str(str(home.work))}]
trust_level = "trusted"

[notice]
hide_full_access_warning = true
hide_world_writable_warning = true
hide_rate_limit_model_nudge = true
"""
    home.write_config(fake, None, [], approval_policy="on-request", sandbox_mode="read-only",
                      extra=extra)
    env = home.env(fake)
    return Launch("codex", codex_cli.VERSION, [str(launcher), "-C", str(home.work)], env, home.work)


def gemini(fake: FakeModelServer, directory: Path) -> Launch:
    """Gemini CLI's TUI: `node gemini.js -m gemini-2.5-flash` with API-key
    auth and a theme chosen (no auth or theme dialog), folder trust off."""
    argv = gemini_cli.install()
    home = gemini_cli.GeminiHome(directory)
    home.write_config(None, [], None, extra={
        "ui": {"theme": "Default"},
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "ide": {"hasSeenNudge": True, "enabled": False},
    })
    return Launch("gemini", gemini_cli.VERSION, [*argv, "-m", gemini_cli.MODEL], home.env(fake), home.work)


def aider(fake: FakeModelServer, directory: Path) -> Launch:
    """aider's prompt (prompt_toolkit), OpenAI Chat Completions at the fake server."""
    binary = aider_cli.install()
    home = aider_cli.AiderHome(directory)
    return Launch("aider", aider_cli.VERSION, home.argv(binary, fake), home.env(fake), home.work)


def opencode(fake: FakeModelServer, directory: Path) -> Launch:
    """opencode's TUI: `opencode` (npm's bin link to the native binary) with
    the fake provider (OpenAI Chat Completions) as its model, bash asking
    before it runs."""
    link = opencode_cli.install()
    home = opencode_cli.OpencodeHome(directory)
    home.write_config(fake)
    return Launch("opencode", opencode_cli.VERSION, [str(link)], home.env(fake), home.work)


# One-time dialogs a CLI may open on at start, whatever its state files say:
# (the screen text that shows it, the keys that dismiss it keeping the defaults).
STARTUP_DIALOGS = {
    "claude": [("Make auto mode your default permission mode?", ["Down", "Enter"])],  # "No, keep manual mode"
    "codex": [],
    "gemini": [],
    "aider": [],
    "opencode": [],
}


def dismiss_startup_dialogs(srv: TuiServer, name: str, screen: str) -> list[str]:
    """Dismiss the startup dialogs of STARTUP_DIALOGS shown on `screen`; the screens seen."""
    seen = []
    for text, keys in STARTUP_DIALOGS.get(name, []):
        if text in screen:
            seen.append(screen)
            srv.keys(*keys)
            time.sleep(1.0)
            screen = srv.settle(1.0)
    return seen


LAUNCHERS = {"claude": claude, "codex": codex, "gemini": gemini, "aider": aider, "opencode": opencode}
