"""Pinned npm packages (agent CLIs) installed outside the repository.

`npm_install(pins)` runs `npm ci` of `pins/package.json` + `pins/package-lock.json`
into `${TMUX_MCP_CACHE:-~/.cache/tmux-mcp}/agents/<pins dir name>-<hash of the
pins>` once (under a lock, so parallel runs do not install into one directory
together) and returns that directory; later runs reuse it. Directories of
earlier pins of the same package are removed.

Without npm the caller cannot run: in CI (`CI` set) that fails the test, since
CI must run it; elsewhere the test is skipped with a message naming what to
install.

To move a pin: edit the version in `<pins>/package.json`, then in `<pins>` run
`npm install --package-lock-only --no-audit --no-fund` (rewrites the lock,
installs nothing) and run the test; the new hash makes a new cache directory.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest


def cache_root() -> Path:
    base = os.environ.get("TMUX_MCP_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "tmux-mcp")
    return Path(base) / "agents"


def missing(what: str) -> None:
    """A tool the test needs is not there: fail in CI, skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run this test, but {what}", pytrace=False)
    pytest.skip(what)


def npm_install(pins: Path, label: str, npm_args: tuple[str, ...] = ("--ignore-scripts",),
                timeout: float = 600, ci: bool = True) -> Path:
    """`label` names the pinned tool in messages, e.g. "Codex CLI (@openai/codex 0.171.0)";
    `npm_args` are added to `npm ci` (by default no install script runs). With
    `ci` False it runs `npm install` instead: for pins whose lock lacks optional
    packages the registry does not serve (npm ci refuses such a lock as out of
    sync; npm install installs what the lock holds, as locked, and skips them)."""
    files = [pins / "package.json", pins / "package-lock.json"]
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]
    root = cache_root()
    target = root / f"{pins.name}-{digest}"
    if (target / ".complete").is_file():
        return target
    npm = shutil.which(os.environ.get("NPM", "npm"))
    if npm is None:
        missing(f"npm is not on PATH: it installs the pinned {label} ({files[0]}) into {root}; "
                "install Node.js and npm (Debian/Ubuntu: apt-get install npm)")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{pins.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").is_file():  # another run installed it meanwhile
            return target
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for f in files:
            shutil.copy(f, target / f.name)
        # Install scripts write into TMPDIR (opencode-ai's postinstall leaves
        # an `opencode` directory there): one of the install's own, removed after.
        tmp = target / ".npm-tmp"
        tmp.mkdir()
        proc = subprocess.run(
            [npm, "ci" if ci else "install", *npm_args, "--no-audit", "--no-fund", "--loglevel=error"], cwd=target,
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
            env=dict(os.environ, TMPDIR=str(tmp)))
        shutil.rmtree(tmp, ignore_errors=True)
        if proc.returncode != 0:
            shutil.rmtree(target, ignore_errors=True)
            pytest.fail(f"npm {'ci' if ci else 'install'} of {label} ({files[0]}) into {target} failed (rc={proc.returncode}):\n"
                        f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}", pytrace=False)
        for old in root.glob(f"{pins.name}-*"):
            if old != target and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
        (target / ".complete").touch()
    return target
