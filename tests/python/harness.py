"""Shared helpers for the Python end-to-end suite.

Everything here drives the *built* binaries (target/debug/tmux-mcp and the
broker it starts) against real tmux servers on private sockets, through the
official MCP Python SDK (`mcp` on PyPI) or through raw JSON-RPC lines.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import jsonschema
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("TMUX_MCP_BIN", REPO / "target" / "debug" / "tmux-mcp"))
BROKER_NAME = "tmux-mcp-broker"
TMUX = shutil.which("tmux") or "tmux"
# The directory of the tmux under test (scripts/test puts TMUX_MCP_TMUX_BIN_DIR
# first on PATH): a child given its own PATH must still find this tmux, since a
# tmux client of another version may not be able to talk to the server.
TMUX_DIR = str(Path(TMUX).parent) if os.path.isabs(TMUX) else "/usr/bin"
# Base directory for private test dirs; .ci/run points it at a dir it cleans up.
TEST_TMPDIR = os.environ.get("TMUX_MCP_TEST_TMPDIR") or "/tmp"

HEX32 = re.compile(r"^[0-9a-f]{32}$")
PANE_ID = re.compile(r"^%[0-9]+$")
SESSION_ID = re.compile(r"^\$[0-9]+$")

# Variables that would tie a child process to the tmux server the test runner
# itself may be running in. Tests must never touch that server.
_FOREIGN_TMUX_VARS = ("TMUX", "TMUX_PANE")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_TMUX_VARS}
    env.update(extra)
    return env


@functools.lru_cache(maxsize=None)
def tmux_version() -> tuple[int, int, str]:
    """(major, minor, full) of the tmux under test, from `tmux -V` (e.g. 3, 7, "3.7c");
    `next-3.6` counts as 3.6."""
    full = subprocess.run([TMUX, "-V"], capture_output=True, text=True, check=True,
                          timeout=15).stdout.strip().removeprefix("tmux ")
    m = re.match(r"(?:next-)?(\d+)\.(\d+)", full)
    return (int(m.group(1)), int(m.group(2)), full) if m else (0, 0, full)


def tmux_at_least(major: int, minor: int) -> bool:
    return tmux_version()[:2] >= (major, minor)


def require_binary() -> None:
    assert BIN.is_file() and os.access(BIN, os.X_OK), (
        f"{BIN} is missing: build it first (cargo build --workspace --bins)"
    )


# What the README lists for the tests, by program: its Debian/Ubuntu package.
PACKAGES = {"posh": "posh", "dash": "dash", "zsh": "zsh", "fish": "fish", "bash": "bash",
            "ssh": "openssh-client", "shellcheck": "shellcheck"}


def require_program(name: str, why: str) -> str:
    """The path of `name`, which a test runs. Missing, the test says which
    program and how to install it: it fails under CI (which installs
    everything the README lists) and is skipped, saying so, elsewhere."""
    path = shutil.which(name)
    if path is None:
        import pytest
        pkg = PACKAGES.get(name, name)
        msg = (f"`{name}` is not on PATH: {why}; install it as the README lists "
               f"(Debian/Ubuntu: apt-get install {pkg})")
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


# --------------------------------------------------------------------------
# tmux server on a private socket
# --------------------------------------------------------------------------


# How every test server starts: tests/server.json, which tests/src/lib.rs reads too.
RECIPE = json.loads((Path(__file__).resolve().parent.parent / "server.json").read_text())
NEUTRAL_SHELL = RECIPE["default_command"]


class TmuxServer:
    """One real tmux server on `<private tmpdir>/sock`, started with -f /dev/null."""

    def __init__(self) -> None:
        # Short path: Unix socket paths are limited to ~107 bytes.
        self.dir = Path(tempfile.mkdtemp(prefix="tmcp-", dir=TEST_TMPDIR))
        self.sock = str(self.dir / "sock")
        self.logs: list[Path] = []
        self._raw: list[RawClient] = []
        self._log_seq = 0
        (self.dir / "tmp").mkdir()
        session = RECIPE["session"]
        subprocess.run(
            [TMUX, "-S", self.sock, "-f", "/dev/null",
             "set-option", "-g", "default-shell", shutil.which("bash") or "/bin/bash", ";",
             "set-option", "-g", "default-command", NEUTRAL_SHELL, ";",
             "new-session", "-d", "-s", session["name"],
             "-x", str(session["width"]), "-y", str(session["height"])],
            check=True, env=clean_env(TMPDIR=str(self.dir / "tmp"), **RECIPE["environment"]), timeout=15,
            stdin=subprocess.DEVNULL, capture_output=True,
        )
        self.pid = int(self.tmux("display-message", "-p", "#{pid}"))
        for name, value in RECIPE["options_after_start"].items():
            self.tmux("set-option", "-g", name, value)

    def tmux(self, *args: str, check: bool = True) -> str:
        """Run `tmux -S sock ARGS...`; return stdout without the trailing newline."""
        proc = subprocess.run(
            [TMUX, "-S", self.sock, *args], env=clean_env(), timeout=15,
            stdin=subprocess.DEVNULL, capture_output=True, text=True,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"tmux {' '.join(args)} failed rc={proc.returncode}: {proc.stderr.strip()}"
            )
        return proc.stdout.rstrip("\n")

    def new_log(self, label: str) -> Path:
        self._log_seq += 1
        path = self.dir / f"{label}-{self._log_seq}.stderr"
        self.logs.append(path)
        return path

    def raw_client(self, *extra: str, env: dict[str, str] | None = None) -> "RawClient":
        client = RawClient(["attach", "-S", self.sock, *extra],
                           stderr_path=self.new_log("raw-attach"), env=env)
        self._raw.append(client)
        return client

    def brokers(self) -> list[int]:
        return broker_pids(self.sock, self.pid)

    def quiet_panes(self, program: str = "cat", timeout: float = 10.0) -> None:
        """Every pane runs `program` (a pane running anything else is respawned
        with it), window names stay as they are (automatic-rename off), and
        tmux reports `program` as every pane's current command. For tests that
        compare reads taken at different times: a login shell draws a prompt,
        runs its profile's commands, and until it has exec'd a pane's command
        (and so its window's automatic name) reads `tmux`."""
        self.tmux("set-option", "-g", "automatic-rename", "off")
        for line in self.tmux("list-panes", "-a", "-F", "#{pane_id} #{pane_start_command}").splitlines():
            pane, _, start = line.partition(" ")
            if start.strip('"') != program:
                self.tmux("respawn-pane", "-k", "-t", pane, program)
        deadline = time.monotonic() + timeout
        while True:
            commands = self.tmux("list-panes", "-a", "-F", "#{pane_current_command}").split()
            if all(c == program for c in commands):
                return
            assert time.monotonic() < deadline, f"panes still run {commands}, not only {program}"
            time.sleep(0.02)

    def status(self) -> dict[str, Any]:
        """`tmux-mcp status -S sock --json`: the broker's own account of itself."""
        proc = subprocess.run([str(BIN), "status", "-S", self.sock, "--json"], env=clean_env(),
                              capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"tmux-mcp status failed: {proc.stderr!r}"
        return json.loads(proc.stdout)

    def alive(self) -> bool:
        return _pid_alive(self.pid)

    def shutdown(self) -> list[str]:
        """Kill exactly this server; return a list of problems (leftover processes)."""
        problems: list[str] = []
        for client in self._raw:
            client.close()
        brokers_before = self.brokers()
        subprocess.run([TMUX, "-S", self.sock, "kill-server"], env=clean_env(),
                       timeout=15, stdin=subprocess.DEVNULL, capture_output=True)
        def remaining() -> list[int]:
            return sorted(set(self.brokers()) | {p for p in brokers_before if _pid_alive(p)})

        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and (remaining() or self.alive()):
            time.sleep(0.05)
        leftover = remaining()
        if leftover:
            problems.append(
                f"broker process(es) {leftover} for {self.sock} still alive 2 s after "
                f"kill-server (brokers seen before kill: {brokers_before}); ended them"
            )
            # SIGTERM first, so a broker removes its socket, lock and log as on
            # any stop; SIGKILL only what is still there 2 s later.
            for pid in leftover:
                _kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline and remaining():
                time.sleep(0.05)
            for pid in remaining():
                _kill(pid)
        if self.alive():
            problems.append(f"tmux server pid {self.pid} survived kill-server; killed it")
            _kill(self.pid)
        return problems

    def dump_logs(self) -> str:
        out = []
        for path in self.logs:
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if text.strip():
                out.append(f"--- {path.name} ---\n{text.rstrip()}")
        return "\n".join(out)


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return False


def _kill(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _cmdline(pid: str) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def all_broker_processes() -> dict[int, list[str]]:
    """Every live process whose executable is tmux-mcp-broker: pid -> argv."""
    found: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        argv = _cmdline(entry)
        if not argv:
            continue
        try:
            exe = os.path.basename(os.readlink(f"/proc/{entry}/exe"))
        except OSError:
            exe = ""
        exe = exe.removesuffix(" (deleted)")
        if exe == BROKER_NAME or os.path.basename(argv[0]) == BROKER_NAME:
            if _pid_alive(int(entry)):
                found[int(entry)] = argv
    return found


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(64):
        pid = _ppid(pid)
        if pid <= 1:
            return False
        if pid == ancestor:
            return True
    return False


def broker_pids(sock: str, server_pid: int | None = None) -> list[int]:
    """Broker processes serving `sock`: executable tmux-mcp-broker, and either the
    socket path in its argv or the tmux server among its ancestors (run-shell -b).

    A `sh -c '... tmux-mcp-broker --socket X'` wrapper is not counted (its
    executable is the shell).
    """
    return sorted(pid for pid, argv in all_broker_processes().items()
                  if any(sock in a for a in argv[1:])
                  or (server_pid is not None and _descends_from(pid, server_pid)))


# --------------------------------------------------------------------------
# The documented tool catalog
# --------------------------------------------------------------------------


def readme_tools() -> dict[str, str]:
    """The tools table of README.md ("## Tools"): name -> default ("on", "tier" or "opt-in").

    The README is the user-facing list of every tool; tests compare what the
    broker publishes against it, so a tool that disappears (or appears without
    being documented) fails a test, and nothing here is a copy that drifts.
    """
    text = (REPO / "README.md").read_text()
    assert "\n## Tools\n" in text, "README.md has no '## Tools' section"
    section = text.split("\n## Tools\n", 1)[1].split("\n## ", 1)[0]
    return {name: default for name, (default, _tier) in readme_table(section).items()}


def readme_tiers() -> dict[str, str]:
    """The tools table of README.md: name -> tier (readonly, mutating, destructive)."""
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Tools\n", 1)[1].split("\n## ", 1)[0]
    return {name: tier for name, (_default, tier) in readme_table(section).items()}


def readme_table(section: str) -> dict[str, tuple[str, str]]:
    tools: dict[str, tuple[str, str]] = {}
    for line in section.splitlines():
        m = re.match(r"^\| `([a-z_]+)` \| ([^|]+?) \| ([a-z-]+) \|", line)
        if m:
            assert m.group(1) not in tools, f"README lists {m.group(1)} twice"
            tools[m.group(1)] = (m.group(2), m.group(3))
    assert tools, "README.md's tools table lists no tool"
    bad = {n: d for n, (d, _t) in tools.items() if d not in ("on", "tier", "opt-in") and not companion_of(d)}
    assert not bad, f"README tools table: default must be 'on', 'tier', 'opt-in' or 'with `TOOL`': {bad}"
    bad = {n: t for n, (_d, t) in tools.items() if t not in ("readonly", "mutating", "destructive")}
    assert not bad, f"README tools table: tier must be readonly, mutating or destructive: {bad}"
    return tools


def companion_of(default: str) -> str | None:
    """The tool a README default `with `X`` names (listed whenever X is), else None."""
    m = re.fullmatch(r"with `([a-z_]+)`", default)
    return m.group(1) if m else None


def enable_all(tools: dict[str, str]) -> list[str]:
    """The attach arguments that enable every tool of `tools`: the highest tier,
    and `--enable-tool NAME` for every opt-in tool."""
    return ["--safety", "destructive"] + [a for name, default in tools.items() if default == "opt-in" for a in ("--enable-tool", name)]


async def wait_until(pred, timeout: float = 10.0):
    """Polls `pred()` every 20 ms until it is truthy (returned), failing the
    test after `timeout` s: for the harness's own view of a pane (tmux
    capture-pane, files), never for what a tool is asked to wait for."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        assert time.monotonic() < deadline, "condition not reached in time"
        await anyio.sleep(0.02)


# --------------------------------------------------------------------------
# MCP sessions through the official SDK
# --------------------------------------------------------------------------


@asynccontextmanager
async def mcp_session(server: "TmuxServer | str", *extra: str,
                      env: dict[str, str] | None = None,
                      modern: bool = False, message_handler=None,
                      elicitation_callback=None) -> AsyncIterator[ClientSession]:
    """`async with mcp_session(server, "--enable-tool", "x") as s:` — an initialized
    ClientSession over `tmux-mcp attach -S <sock> EXTRA...` (stdio)."""
    require_binary()
    sock = server if isinstance(server, str) else server.sock
    params = StdioServerParameters(command=str(BIN), args=["attach", "-S", sock, *extra], env=env)
    if isinstance(server, str):
        # Beside the socket: in the caller's private directory, removed with it.
        log = Path(tempfile.mkstemp(prefix="attach-", suffix=".stderr", dir=Path(sock).parent)[1])
    else:
        log = server.new_log("attach")
    with open(log, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=20, message_handler=message_handler,
                                     elicitation_callback=elicitation_callback) as session:
                if modern:
                    await session.discover()
                else:
                    await session.initialize()
                yield session


_TOOLS: "weakref.WeakKeyDictionary[ClientSession, dict[str, Any]]" = weakref.WeakKeyDictionary()


async def list_tools(session: ClientSession) -> dict[str, Any]:
    """All tools (following pagination), name -> mcp.types.Tool. Cached per session."""
    tools: dict[str, Any] = {}
    cursor = None
    from mcp.types import PaginatedRequestParams
    for _ in range(100):
        result = await session.list_tools(
            params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        for tool in result.tools:
            tools[tool.name] = tool
        cursor = result.next_cursor
        if not cursor:
            break
    _TOOLS[session] = tools
    return tools


def validator_for_schema(schema: dict[str, Any]):
    """Draft-07 when the schema says so, else 2020-12; the schema itself is checked."""
    declared = str(schema.get("$schema", ""))
    cls = jsonschema.Draft7Validator if "draft-07" in declared else jsonschema.Draft202012Validator
    cls.check_schema(schema)
    return cls(schema)


class ToolResult:
    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.is_error = bool(raw.is_error)
        self.structured = raw.structured_content
        self.text = "\n".join(getattr(c, "text", "") for c in raw.content or [])

    def __repr__(self) -> str:
        return (f"ToolResult(is_error={self.is_error}, structured="
                f"{json.dumps(self.structured)[:2000]}, text={self.text[:500]!r})")


async def call(session: ClientSession, name: str, args: dict[str, Any] | None = None) -> ToolResult:
    """tools/call through the SDK, then validate structuredContent against the tool's
    published outputSchema with jsonschema (on top of the SDK's own check)."""
    tools = _TOOLS.get(session)
    if tools is None or name not in tools:
        tools = await list_tools(session)
    raw = await session.call_tool(name, args or {})
    result = ToolResult(raw)
    tool = tools.get(name)
    if tool is not None and tool.output_schema is not None:
        if result.structured is None:
            assert result.is_error, f"{name}: outputSchema published but no structuredContent: {result!r}"
        else:
            errors = sorted(validator_for_schema(tool.output_schema).iter_errors(result.structured),
                            key=lambda e: list(e.absolute_path))
            assert not errors, (
                f"{name}: structuredContent violates its outputSchema: "
                + "; ".join(f"at {list(e.absolute_path)}: {e.message}" for e in errors[:5])
                + f"\nresult: {result!r}"
            )
    envelope_error = result.structured.get("error") if isinstance(result.structured, dict) and result.structured.get("ok") is False else None
    if isinstance(envelope_error, dict):
        # The seed envelope's message is the code's fixed text, exactly; the
        # specific reason follows it in the text content only.
        want = SEED_FIXED_MESSAGES.get(envelope_error.get("code"), SEED_GENERIC_MESSAGE)
        assert envelope_error.get("message") == want, f"{name}: error.message {envelope_error.get('message')!r} is not the fixed {want!r}"
        assert result.text.startswith(want), f"{name}: text content {result.text!r} does not start with the fixed message"
    return result


# The seed family's fixed error messages (its result envelope's contract).
SEED_FIXED_MESSAGES = {
    "invalid_input": "Input does not match the operation schema.",
    "stale_cursor": "The cursor is unknown, expired, or outside its captured result.",
    "policy_denied": "The configured policy denies this operation.",
    "closed": "The application is closed.",
}
SEED_GENERIC_MESSAGE = "The operation could not establish its requested result."


async def call_ok(session: ClientSession, name: str, args: dict[str, Any] | None = None) -> Any:
    result = await call(session, name, args)
    assert not result.is_error, f"{name} returned a tool error: {result!r}"
    assert isinstance(result.structured, dict), f"{name}: no structuredContent object: {result!r}"
    return result.structured


# --------------------------------------------------------------------------
# Raw JSON-RPC over a `tmux-mcp attach` subprocess
# --------------------------------------------------------------------------


class RawClient:
    """`tmux-mcp attach ...` with pipes; newline-delimited JSON-RPC by hand."""

    def __init__(self, args: list[str], stderr_path: Path, env: dict[str, str] | None = None) -> None:
        require_binary()
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")
        self.proc = subprocess.Popen(
            [str(BIN), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, env=env if env is not None else clean_env(),
            cwd="/", start_new_session=True,
        )
        self._lines: "queue.Queue[bytes | None]" = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def write(self, data: bytes, timeout: float = 15.0) -> None:
        """Write bytes to the relay's stdin; fail (not hang) if it stops reading."""
        err: list[BaseException] = []

        def run() -> None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except BaseException as e:  # noqa: BLE001
                err.append(e)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join(timeout)
        assert not t.is_alive(), f"writing {len(data)} bytes to attach stdin blocked for {timeout} s"
        if err:
            raise AssertionError(f"writing to attach stdin failed: {err[0]!r}; {self.diag()}")

    def send(self, msg: dict[str, Any]) -> None:
        self.write(json.dumps(msg).encode() + b"\n")

    def next_message(self, timeout: float = 10.0) -> dict[str, Any]:
        """Next response from the server; server notifications/requests are skipped."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(left, 0.01))
            except queue.Empty:
                raise AssertionError(f"no response within {timeout} s; {self.diag()}") from None
            if line is None:
                self._lines.put(None)
                raise AssertionError(f"attach closed stdout (rc={self.proc.poll()}); {self.diag()}")
            try:
                msg = json.loads(line)
            except ValueError:
                raise AssertionError(f"attach wrote a non-JSON line to stdout: {line[:300]!r}") from None
            assert isinstance(msg, dict), f"non-object JSON-RPC message: {msg!r}"
            if "method" in msg:
                continue
            return msg

    def next_notification(self, method: str, timeout: float = 10.0) -> dict[str, Any]:
        """The next server notification `method`; any other message first fails."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no {method} within {timeout} s; {self.diag()}") from None
        assert line is not None, f"attach closed stdout (rc={self.proc.poll()}); {self.diag()}"
        msg = json.loads(line)
        assert isinstance(msg, dict) and msg.get("method") == method, f"expected {method}, got {msg!r}"
        return msg

    def request(self, id_: int, method: str, params: dict[str, Any] | None = None,
                timeout: float = 10.0) -> dict[str, Any]:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        reply = self.next_message(timeout)
        assert reply.get("id") == id_, f"expected the reply to id {id_}, got {reply!r}"
        return reply

    def initialize(self, id_: int = 1) -> dict[str, Any]:
        reply = self.request(id_, "initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "tmux-mcp-raw-test", "version": "0"},
        })
        assert "result" in reply, f"initialize failed: {reply!r}"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply["result"]

    def call_tool(self, id_: int, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """Raw tools/call; a structuredContent is validated against the published outputSchema."""
        if not hasattr(self, "_tools"):
            listing = self.request(100000 + id_, "tools/list")
            assert "result" in listing, f"tools/list failed: {listing!r}"
            self._tools = {t["name"]: t for t in listing["result"]["tools"]}
        reply = self.request(id_, "tools/call", {"name": name, "arguments": args or {}})
        result = reply.get("result")
        schema = (self._tools.get(name) or {}).get("outputSchema")
        if isinstance(result, dict) and schema is not None and result.get("structuredContent") is not None:
            errors = list(validator_for_schema(schema).iter_errors(result["structuredContent"]))
            assert not errors, (f"{name}: structuredContent violates its outputSchema: "
                                + "; ".join(f"at {list(e.absolute_path)}: {e.message}" for e in errors[:5]))
        return reply

    def diag(self) -> str:
        try:
            err = self.stderr_path.read_text(errors="replace")[-2000:]
        except OSError:
            err = ""
        return f"attach rc={self.proc.poll()} stderr={err!r}"

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                if self.proc.stdin:
                    self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=3)
        self._stderr.close()


# --------------------------------------------------------------------------
# async tests with a hard deadline
# --------------------------------------------------------------------------

def async_test(timeout: float = 30):
    """Mark an async test for anyio and bound it with anyio.fail_after(timeout)."""

    def deco(fn):
        assert inspect.iscoroutinefunction(fn)

        @functools.wraps(fn)
        async def wrapper(*args, **kwargs):
            with anyio.fail_after(timeout):
                return await fn(*args, **kwargs)

        return pytest.mark.anyio(wrapper)

    return deco
