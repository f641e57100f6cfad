"""What a test run left behind: processes, files, broker runtime files.

A run (scripts/test, or one pytest session on its own) works in a private
directory RUN (`$TMUX_MCP_TEST_RUN_DIR`; TMUX_MCP_TEST_TMPDIR and TMPDIR point
into it), so everything here is attributed to that run alone, however many
other runs share the machine:

- processes (not this one, nor its ancestors) whose command line, environment
  or working directory names RUN;
- anything left in RUN or in RUN/tmp (the run's TMPDIR) but the run's own
  bookkeeping (the record below, pytest's base temporary directory);
- broker files in every runtime directory a broker of this user may use
  (`$XDG_RUNTIME_DIR/tmux-mcp`, `/run/user/UID/tmux-mcp`,
  `${TMUX_TMPDIR:-/tmp}/tmux-mcp-UID[.N]`, `/tmp/tmux-mcp-UID[.N]`): a
  `srv-*.log` whose broker served a tmux socket under RUN, with everything
  named after it (`.sock`, `.lock`, a retired socket, job directories);
- paths outside RUN that a test made and recorded with `record_outside`
  (Codex CLI's daemon sockets live in `/tmp/codex-daemon-UID`, a directory
  Codex fixes whatever TMPDIR says).

`python leftovers.py RUN` prints what is left and exits 1 if anything is
(scripts/test runs it after cargo test and after pytest); `--clean` then
ends those processes (SIGTERM, then SIGKILL) and removes those files.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import time
from pathlib import Path

OUTSIDE = ".outside"  # in RUN: one path a line, made outside RUN by a test
# RUN's own bookkeeping: the record above, and in RUN/tmp (the run's TMPDIR)
# pytest's base temporary directory (tmp_path), which pytest keeps by design.
KEEP = {OUTSIDE, "tmp"}
KEEP_IN_TMP = re.compile(r"pytest-of-.*")


def record_outside(path: str | os.PathLike) -> None:
    """Note that this run made `path` outside its directory: the run's check
    fails while it exists."""
    run = os.environ.get("TMUX_MCP_TEST_RUN_DIR")
    if run:
        with open(Path(run) / OUTSIDE, "a") as f:
            f.write(f"{os.fspath(path)}\n")


def _ancestors() -> set[int]:
    out, pid = set(), os.getpid()
    for _ in range(256):
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if pid <= 1:
            break
    return out


def processes(run: str) -> list[str]:
    """Live processes of this run: pid, then the command line."""
    needle = run.encode()
    mine = _ancestors()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in mine:
            continue
        base = f"/proc/{entry}"
        try:
            with open(f"{base}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"{base}/cmdline", "rb") as f:
                argv = f.read()
            with open(f"{base}/environ", "rb") as f:
                environ = f.read()
            try:
                cwd = os.readlink(f"{base}/cwd").encode()
            except OSError:
                cwd = b""
        except (OSError, IndexError):
            continue
        if needle in argv or needle in environ or cwd.startswith(needle):
            command = argv.replace(b"\0", b" ").decode(errors="replace").strip()
            found.append(f"{entry} {command}")
    return found


def runtime_dirs() -> list[Path]:
    uid = os.getuid()
    dirs = []
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        dirs.append(Path(xdg) / "tmux-mcp")
    dirs.append(Path(f"/run/user/{uid}/tmux-mcp"))
    for base in {os.environ.get("TMUX_TMPDIR") or "/tmp", "/tmp"}:
        try:
            names = os.listdir(base)
        except OSError:
            continue
        stem = f"tmux-mcp-{uid}"
        dirs += [Path(base) / n for n in names if n == stem or re.fullmatch(re.escape(stem) + r"\.[1-9][0-9]*", n)]
    return [d for d in dirs if d.is_dir() and not d.is_symlink() and d.stat().st_uid == uid]


def broker_files(run: str) -> list[Path]:
    """The files of brokers that served a tmux server of this run (their log
    names its socket), in every runtime directory."""
    out = []
    for d in runtime_dirs():
        for log in d.glob("srv-*.log"):
            try:
                text = log.read_text(errors="replace")
            except OSError:
                continue
            if f"tmux={run}/" in text or f"tmux=\"{run}/" in text:
                # srv-GEN.sock, .lock, .log, and what else bears its name
                # (a retired broker's socket, run_command's job directories).
                stem = log.name[: -len(".log")]
                out += sorted(p for p in d.iterdir() if p.name.startswith(f"{stem}."))
    return out


def files(run: str) -> list[Path]:
    root = Path(run)
    out = [p for p in sorted(root.iterdir()) if p.name not in KEEP] if root.is_dir() else []
    tmp = root / "tmp"
    if tmp.is_dir() and not tmp.is_symlink():
        out += [p for p in sorted(tmp.iterdir()) if not KEEP_IN_TMP.fullmatch(p.name)]
    out += broker_files(run)
    try:
        recorded = (root / OUTSIDE).read_text().splitlines()
    except OSError:
        recorded = []
    out += [Path(p) for p in dict.fromkeys(recorded) if p and (os.path.lexists(p))]
    return out


def check(run: str, settle: float = 5.0) -> list[str]:
    """What this run left, after giving its processes `settle` s to end
    (a broker exits once its server has gone, and then removes its files)."""
    deadline = time.monotonic() + settle
    while True:
        procs, left = processes(run), files(run)
        if (not procs and not left) or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    return [f"process {p}" for p in procs] + [f"file {p}" for p in left]


def clean(run: str) -> None:
    """End this run's processes (SIGTERM, 3 s, SIGKILL) and remove its files."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for line in processes(run):
            try:
                os.kill(int(line.split()[0]), sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + 3
        while processes(run) and time.monotonic() < deadline:
            time.sleep(0.1)
    for p in files(run):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            try:
                p.unlink()
            except OSError:
                pass


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 1:
        print("usage: leftovers.py RUN_DIR [--clean]", file=sys.stderr)
        return 2
    run = os.path.abspath(args[0])
    problems = check(run)
    for p in problems:
        print(f"left behind by the tests: {p}")
    if problems and "--clean" in argv:
        clean(run)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
