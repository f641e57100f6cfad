"""run_command in the person's own shell, as a person leaves it (issue 38
items 1-4), in bash, zsh (without and with HIST_IGNORE_SPACE) and fish, through
the official MCP Python SDK:

- a line the person started (`ls -l ` typed, or an open quote left at a
  continuation prompt) is never typed into: the call is refused and the line
  is as the person left it;
- `$?` (`$status` in fish) at the next prompt is the command's status;
- the typed line, recalled (Up, Enter) after the job, runs nothing and names
  no terminal: the job's link is gone, so its redirection fails;
- what holds of a terminal inside the command, per shell (fish's builtins
  write through fish's own buffer in a redirected block).

Every structuredContent is validated against the published outputSchema
(`harness.call`)."""

from __future__ import annotations

import os

import anyio

from harness import async_test, call, call_ok, mcp_session, require_program, wait_until

MUTATING = ("--safety", "mutating")

# name -> (argv, how the shell spells the last status)
SHELLS = {
    "bash": (["bash", "--norc", "--noprofile"], "$?"),
    "zsh": (["zsh", "-f"], "$?"),
    "zsh-hist-ignore-space": (["zsh", "-f", "-o", "HIST_IGNORE_SPACE"], "$?"),
    "fish": (["fish", "--no-config", "--private", "-C", "function fish_prompt; echo -n '$ '; end"], "$status"),
}


def screen(srv, pane: str) -> str:
    return srv.tmux("capture-pane", "-p", "-J", "-t", pane)


def cursor_row(srv, pane: str) -> str:
    y = int(srv.tmux("display-message", "-p", "-t", pane, "#{cursor_y}"))
    rows = srv.tmux("capture-pane", "-p", "-t", pane).split("\n")
    # The harness trims the blank rows below the last written one.
    return rows[y].rstrip() if y < len(rows) else ""


async def shell_pane(srv, argv: list[str]) -> str:
    pane = srv.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "env", "PS1=$ ", "HISTFILE=/dev/null", *argv)
    await wait_until(lambda: cursor_row(srv, pane) == "$")
    return pane


async def type_keys(s, pane: str, *keys: str, literal: bool = False):
    """Keys as the person presses them (send_keys: key names, or text)."""
    if literal:
        await call_ok(s, "send_keys", {"paneId": pane, "text": "".join(keys)})
    else:
        await call_ok(s, "send_keys", {"paneId": pane, "keys": list(keys)})


@async_test(timeout=120)
async def test_a_started_line_is_never_typed_into(tmux_server):
    srv = tmux_server
    for argv, _ in SHELLS.values():
        require_program(argv[0], "these tests run it in a pane")
    async with mcp_session(srv, *MUTATING) as s:
        for name, (argv, _) in SHELLS.items():
            pane = await shell_pane(srv, argv)
            marker = srv.dir / f"ran-{name}"
            cmd = f"echo from-agent > {marker}"
            # Half a command typed, not submitted.
            await type_keys(s, pane, "ls -l ", literal=True)
            await wait_until(lambda: cursor_row(srv, pane) == "$ ls -l")
            r = await call(s, "run_command", {"paneId": pane, "command": cmd, "timeoutMs": 3000})
            assert r.is_error and "holds text the person typed" in r.text, (name, r)
            await wait_until(lambda: cursor_row(srv, pane) == "$ ls -l")
            assert "from-agent" not in screen(srv, pane) and not marker.exists(), (name, screen(srv, pane))
            # The person's line is still theirs: finishing it runs exactly it.
            await type_keys(s, pane, "C-e")
            await type_keys(s, pane, "-d /", literal=True)
            await type_keys(s, pane, "Enter")
            await wait_until(lambda: "$ ls -l -d /" in screen(srv, pane) and cursor_row(srv, pane) == "$")
            # An open quote, submitted: the shell waits for the rest.
            await type_keys(s, pane, "echo 'wip", literal=True)
            await type_keys(s, pane, "Enter")
            await wait_until(lambda: cursor_row(srv, pane) != "$ echo 'wip")
            shown = screen(srv, pane)
            r = await call(s, "run_command", {"paneId": pane, "command": cmd, "timeoutMs": 3000})
            assert r.is_error and "Nothing was sent to tmux" in r.text, (name, r)
            assert ("continuation prompt" in r.text) or ("no prompt" in r.text), (name, r)
            assert screen(srv, pane) == shown and not marker.exists(), (name, screen(srv, pane))
            # The person cancels their line; the shell is at an empty prompt.
            await type_keys(s, pane, "C-c")
            await wait_until(lambda: cursor_row(srv, pane) == "$")
            r = await call_ok(s, "run_command", {"paneId": pane, "command": cmd})
            assert (r["state"], r["exitStatus"]) == ("done", 0), (name, r)
            assert marker.read_text() == "from-agent\n"


@async_test(timeout=120)
async def test_the_status_is_the_command_s_and_a_recalled_line_runs_nothing(tmux_server):
    srv = tmux_server
    async with mcp_session(srv, *MUTATING) as s:
        for name, (argv, status) in SHELLS.items():
            pane = await shell_pane(srv, argv)
            r = await call_ok(s, "run_command", {"paneId": pane, "command": "sh -c 'exit 7'"})
            assert r["exitStatus"] == 7, (name, r)
            r = await call_ok(s, "run_command", {"paneId": pane, "command": f"echo st={status}"})
            assert r["output"]["text"] == "st=7\n", (name, r)
            # The person's own next line sees it too.
            await wait_until(lambda: cursor_row(srv, pane) == "$")
            await type_keys(s, pane, f"echo person-st={status}", literal=True)
            await type_keys(s, pane, "Enter")
            await wait_until(lambda: "person-st=0" in screen(srv, pane))
            # A job whose line the shell can recall: its link is gone after it.
            marker = srv.dir / f"recalled-{name}"
            r = await call_ok(s, "run_command", {"paneId": pane, "command": f"echo agent-ran >> {marker}"})
            assert r["state"] == "done" and marker.read_text() == "agent-ran\n", (name, r)
            links = [w for w in screen(srv, pane).split() if w.endswith("/t") and ".run-" in w]
            assert links, (name, screen(srv, pane))
            # It goes once the shell has read its release (at most ~2 s).
            await wait_until(lambda: not any(os.path.lexists(link) for link in links))
            # A new terminal takes the lowest free pty number, the one the
            # job's own terminal had (the old line named it: /dev/pts/N).
            other = srv.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "sleep", "100")
            # Up recalls the last line (zsh without HIST_IGNORE_SPACE; fish
            # keeps a space-prefixed line for Up until the next command).
            await wait_until(lambda: cursor_row(srv, pane) == "$")
            await type_keys(s, pane, "Up")
            await anyio.sleep(0.3)
            recalled = cursor_row(srv, pane)
            await type_keys(s, pane, "Enter")
            await wait_until(lambda: cursor_row(srv, pane) == "$")
            await anyio.sleep(0.3)
            assert marker.read_text() == "agent-ran\n", (name, recalled, screen(srv, pane))
            assert "agent-ran" not in screen(srv, other), (name, screen(srv, other))
            srv.tmux("kill-pane", "-t", other)
            # The shell reads its own terminal again: another job runs.
            r = await call_ok(s, "run_command", {"paneId": pane, "command": "echo alive"})
            assert (r["exitStatus"], r["output"]["text"]) == (0, "alive\n"), (name, recalled, r)


@async_test(timeout=60)
async def test_what_sees_a_terminal_inside_the_command_per_shell(tmux_server):
    """External programs write to the broker's terminal in every shell; so do
    builtins in bash and zsh. fish runs a redirected block's builtins through
    its own buffer, so there its builtin `test -t 1` is false while the
    external test is true (the README says so)."""
    srv = tmux_server
    probe = "test -t 1 && echo builtin-tty; command test -t 1 && echo external-tty; true"
    async with mcp_session(srv, *MUTATING) as s:
        for name, (argv, _) in SHELLS.items():
            pane = await shell_pane(srv, argv)
            r = await call_ok(s, "run_command", {"paneId": pane, "command": probe})
            want = "external-tty\n" if name == "fish" else "builtin-tty\nexternal-tty\n"
            assert r["output"]["text"] == want, (name, r)
