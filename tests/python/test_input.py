"""The libtmux family's input tools through the official MCP Python SDK:
send_keys byte for byte into a raw-mode reader, paste_text with its buffer
gone, run_command's real exit status (echo-proof) and a timed-out call
collected with get_job, wait_for_text with progress notifications, and
wait_for_idle. The tier: hidden by default, refused with the switch named.

Every structuredContent is validated against the published outputSchema with
jsonschema (`harness.call`), on top of the SDK's own check."""

from __future__ import annotations

import os
import re
import sys
import time

import anyio

from harness import async_test, call, call_ok, list_tools, mcp_session, require_program, wait_until, tmux_at_least

MUTATING = ("--safety", "mutating")

READER = """import os, sys, tty
tty.setraw(0)
out = open(sys.argv[1], 'ab', buffering=0)
open(sys.argv[2], 'w').close()
while True:
    b = os.read(0, 4096)
    if not b: break
    out.write(b)
"""


async def start_reader(srv) -> tuple[str, str]:
    script, out, ready = (str(srv.dir / n) for n in ("reader.py", "reader.bytes", "reader.ready"))
    with open(script, "w") as f:
        f.write(READER)
    pane = srv.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", sys.executable, script, out, ready)
    await wait_until(lambda: os.path.exists(ready))
    return pane, out


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


async def bash_pane(srv) -> str:
    # HISTFILE=/dev/null: in-memory history only, none read or written.
    pane = srv.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "env", "PS1=$ ", "HISTFILE=/dev/null", "bash", "--norc", "--noprofile")
    await wait_until(lambda: "$" in srv.tmux("capture-pane", "-p", "-t", pane))
    return pane


@async_test(timeout=40)
async def test_input_tools_are_hidden_by_default_and_refused_naming_the_switch(tmux_server):
    srv = tmux_server
    # A reader that records every byte its terminal receives: what a refused
    # call typed would be there (a shell's screen would also show its prompt).
    pane, out = await start_reader(srv)
    async with mcp_session(srv) as s:
        tools = await list_tools(s)
        for name in ("send_keys", "paste_text", "run_command"):
            assert name not in tools, sorted(tools)
            r = await call(s, name, {"paneId": pane, "text": "x", "command": "x"})
            assert r.is_error and "--safety mutating" in r.text and r.text.endswith("Nothing was sent to tmux."), r
        # get_job collects what only run_command starts: listed with it.
        assert "get_job" not in tools, sorted(tools)
        r = await call(s, "get_job", {"jobId": "0" * 32})
        assert r.is_error and "comes with run_command" in r.text, r
        for name in ("wait_for_text", "wait_for_idle"):
            assert tools[name].annotations.read_only_hint is True, name
    async with mcp_session(srv, *MUTATING) as s:
        assert (await list_tools(s))["get_job"].annotations.read_only_hint is True
    # A sentinel typed after every call: anything a refused call typed would
    # have arrived before it.
    srv.tmux("send-keys", "-t", pane, "-l", "END")
    assert await wait_until(lambda: read_bytes(out).endswith(b"END"))
    assert read_bytes(out) == b"END", "a refused call typed something"


@async_test(timeout=40)
async def test_send_keys_and_paste_text_arrive_exactly(tmux_server):
    srv = tmux_server
    pane, out = await start_reader(srv)
    async with mcp_session(srv, *MUTATING) as s:
        r = await call_ok(s, "send_keys", {"paneId": pane, "text": "-a ; \\; b;"})
        assert r["characters"] == 10 and r["delivery"] == "observed", r
        await call_ok(s, "send_keys", {"paneId": pane, "keys": ["-l", ";", "C-c"], "enter": True})
        want = b"-a ; \\; b;-l;\x03\r"
        assert await wait_until(lambda: len(read_bytes(out)) >= len(want))
        assert read_bytes(out) == want
        text = "x;\n-y \\;\t#{pane_id}"
        r = await call_ok(s, "paste_text", {"paneId": pane, "text": text, "lineEnding": "lf"})
        # `#{bracket_paste_flag}` is in tmux 3.7c, not in 3.5a (3.6 added it).
        assert r["bufferDeleted"] is True and r["bracketedPaste"] == ("off" if tmux_at_least(3, 6) else "unknown"), r
        total = len(want) + len(text.encode())
        assert await wait_until(lambda: len(read_bytes(out)) >= total)
        assert read_bytes(out)[len(want):] == text.encode()
    assert "mcp-paste" not in srv.tmux("list-buffers", "-F", "#{buffer_name}")


@async_test(timeout=60)
async def test_run_command_status_output_and_a_timed_out_job(tmux_server):
    srv = tmux_server
    pane = await bash_pane(srv)
    async with mcp_session(srv, *MUTATING) as s:
        r = await call_ok(s, "run_command", {"paneId": pane, "command": "echo py-$((3*4)); (exit 7)"})
        assert (r["state"], r["exitStatus"], r["output"]["text"]) == ("done", 7, "py-12\n"), r
        # Nothing at its default, nothing the call gave restated.
        assert set(r) == {"state", "exitStatus", "output", "elapsedMs"} and set(r["output"]) == {"text"}, r
        # The typed line is on the screen, not in the result.
        assert "echo py-$((3*4))" in srv.tmux("capture-pane", "-p", "-J", "-t", pane)
        r = await call_ok(s, "run_command", {"paneId": pane, "command": "seq 1 100", "maxLines": 2})
        assert r["output"]["text"] == "99\n100\n" and r["output"]["droppedLines"] == 98, r
        r = await call_ok(s, "run_command", {"paneId": pane, "command": "sleep 0.8; echo slow", "timeoutMs": 100})
        assert r["state"] == "running" and r["timeoutMs"] == 100 and "timeoutClamped" not in r, r
        job = r["jobId"]
        deadline = time.monotonic() + 10
        while True:
            g = await call_ok(s, "get_job", {"jobId": job})
            if g["state"] == "done":
                break
            assert time.monotonic() < deadline, g
            await anyio.sleep(0.05)
        assert (g["exitStatus"], g["output"]["text"]) == (0, "slow\n"), g
        assert (g["paneId"], g["command"]) == (pane, "sleep 0.8; echo slow") and "jobId" not in g, g
        sleeper = srv.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "sleep", "100")
        r = await call(s, "run_command", {"paneId": sleeper, "command": "true"})
        assert r.is_error and "not a shell" in r.text, r


@async_test(timeout=60)
async def test_run_command_output_shows_in_the_pane_live_from_a_terminal(tmux_server):
    """The person watching the pane sees what the command prints, while it
    runs; the command writes to a terminal sized like the pane; the agent
    gets the same bytes, exactly, and the real status."""
    srv = tmux_server
    pane = await bash_pane(srv)
    rows, cols = srv.tmux("display-message", "-p", "-t", pane, "#{pane_height} #{pane_width}").split()
    async with mcp_session(srv, *MUTATING) as s:
        cmd = "cd /tmp && test -t 1 && echo on-a-tty; printf '\\033[31mred\\033[0m\\n'; stty size <&1; echo to-stderr >&2; (exit 3)"
        r = await call_ok(s, "run_command", {"paneId": pane, "command": cmd})
        assert r["state"] == "done" and r["exitStatus"] == 3, r
        assert r["output"]["text"] == f"on-a-tty\n\x1b[31mred\x1b[0m\n{rows} {cols}\nto-stderr\n", r
        screen = srv.tmux("capture-pane", "-p", "-t", pane)
        for shown in ("on-a-tty", "red", f"{rows} {cols}", "to-stderr"):
            assert any(line.strip() == shown for line in screen.splitlines()), (shown, screen)
        # Of the wrapper the pane shows the typed line only: the command, its
        # redirection to the job's link and the `.` of it; no marker, no
        # release read. The link is gone with the job, so the line, recalled
        # later, names nothing another terminal could hold.
        joined = srv.tmux("capture-pane", "-p", "-J", "-t", pane)
        m = re.search(r"\{ (.*); \} >(\S+\.run-[0-9a-f]{16}/t) 2>&1; \. (\S+)$", joined, re.M)
        assert m and m.group(1) == cmd and m.group(2) == m.group(3), joined
        await wait_until(lambda: not os.path.lexists(m.group(2)))
        assert "\\33_" not in screen and "read -r" not in screen and "/dev/pts/" not in screen, screen
        # The colour reached the pane as the program wrote it.
        assert "\x1b[31mred" in srv.tmux("capture-pane", "-p", "-e", "-t", pane), "no colour in the pane"
        # The command ran in the person's shell: cd persists.
        r = await call_ok(s, "run_command", {"paneId": pane, "command": "pwd"})
        assert r["output"]["text"] == "/tmp\n", r
        # Live: the first line is on the screen while the job still runs.
        r = await call_ok(s, "run_command", {"paneId": pane, "command": "echo first-of-two; sleep 1.5; echo second-of-two", "timeoutMs": 300})
        assert r["state"] == "running", r
        screen = srv.tmux("capture-pane", "-p", "-t", pane)
        assert "first-of-two" in [line.strip() for line in screen.splitlines()], screen
        assert "second-of-two" not in [line.strip() for line in screen.splitlines()], screen
        deadline = time.monotonic() + 10
        while (g := await call_ok(s, "get_job", {"jobId": r["jobId"]}))["state"] == "running":
            assert time.monotonic() < deadline, g
            await anyio.sleep(0.05)
        assert (g["exitStatus"], g["output"]["text"]) == (0, "first-of-two\nsecond-of-two\n"), g
        screen = srv.tmux("capture-pane", "-p", "-t", pane)
        assert "second-of-two" in [line.strip() for line in screen.splitlines()], screen
        # The end marker is never shown (its printf format is, in the typed line).
        assert "\x1b_" not in srv.tmux("capture-pane", "-p", "-e", "-S", "-", "-t", pane)
        # bash's history holds none of the earlier runs (only this call's own
        # line, which deletes itself after the command).
        r = await call_ok(s, "run_command", {"paneId": pane, "command": "history"})
        entries = [line for line in r["output"]["text"].splitlines() if line.strip()]
        assert not any("pwd" in e or "first-of-two" in e or "on-a-tty" in e for e in entries), entries
        assert len(entries) <= 2, entries  # this call's line (two rows: it has a newline)


SHELLS = {
    # bash reads a sourced file whole before running it; dash and zsh run it
    # line by line: run_command's end script must work both ways.
    "bash": ["bash", "--norc", "--noprofile"],
    "dash": ["dash"],
    "zsh": ["zsh", "-f"],
    # fish: its own spelling (begin/end, $status, `cat PTY | source`).
    "fish": ["fish", "--no-config", "-C", "function fish_prompt; echo -n '$ '; end"],
}


@async_test(timeout=60)
async def test_run_command_in_bash_dash_zsh_and_fish(tmux_server):
    srv = tmux_server
    for name in SHELLS:
        require_program(name, "the run_command tests run it in a pane")
    async with mcp_session(srv, *MUTATING) as s:
        for name, argv in SHELLS.items():
            pane = srv.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "env", "PS1=$ ", "HISTFILE=/dev/null", *argv)
            await wait_until(lambda: "$" in srv.tmux("capture-pane", "-p", "-t", pane))
            assert srv.tmux("display-message", "-p", "-t", pane, "#{pane_current_command}") == name
            def foreground():
                return srv.tmux("display-message", "-p", "-t", pane, "#{pane_current_command}")
            r = await call_ok(s, "run_command", {"paneId": pane, "command": "expr 6 '*' 7; cd /tmp; sh -c 'exit 4'"})
            assert (r["state"], r["exitStatus"], r["output"]["text"]) == ("done", 4, "42\n"), (name, r)
            # A job that is done has given the terminal back to the shell (fish
            # holds it in its `cat | source` until that ends; tmux meanwhile
            # names a program of the script, or the pane's first word, `env`),
            # so the next call finds the shell at once.
            assert foreground() == name, (name, foreground())
            # zsh takes `#` as a comment only with interactivecomments set, as
            # when the person types it.
            pwd = "pwd" if name == "zsh" else "pwd # a comment"
            r = await call_ok(s, "run_command", {"paneId": pane, "command": pwd})
            assert (r["exitStatus"], r["output"]["text"]) == (0, "/tmp\n"), (name, r)
            assert foreground() == name, (name, foreground())
            r = await call_ok(s, "run_command", {"paneId": pane, "command": "sleep 0.1 &"})
            assert r["state"] == "done", (name, r)
            assert foreground() == name, (name, foreground())
            # The shell is back at its prompt, and the pane shows the output
            # and the typed lines, never the end marker.
            await wait_until(lambda: srv.tmux("capture-pane", "-p", "-t", pane).rstrip().endswith("$"))
            screen = srv.tmux("capture-pane", "-p", "-e", "-t", pane)
            assert "42" in [line.strip() for line in srv.tmux("capture-pane", "-p", "-t", pane).splitlines()], (name, screen)
            assert "\x1b_" not in screen and "read -r" not in screen, (name, screen)
            # The broker closes its pty only after the shell has read from it.
            assert "Input/output error" not in screen and "error" not in screen.lower(), (name, screen)
            if name in ("bash", "fish"):
                # No history entry of the earlier runs (bash deletes its line,
                # fish skips a line that begins with a space).
                r = await call_ok(s, "run_command", {"paneId": pane, "command": "history"})
                assert "expr" not in r["output"]["text"] and "pwd" not in r["output"]["text"], (name, r)


# Prompts that run a program each time, as git prompts and starship do: it
# holds the terminal's foreground after every command.
SLOW_PROMPTS = {
    "bash": ["bash", "--norc", "--noprofile", "-c", "PS1='$ ' PROMPT_COMMAND='sleep 0.4' exec bash --norc --noprofile"],
    # zsh: its own .zshrc in a directory of the test (ZDOTDIR; -d: no /etc/zsh files).
    "zsh": ["env", "ZDOTDIR={dir}", "zsh", "-d"],
    "fish": ["fish", "--no-config", "-C", "function fish_prompt; sleep 0.4; echo -n '$ '; end"],
}


@async_test(timeout=60)
async def test_run_command_is_done_when_the_shell_is_back_at_its_prompt(tmux_server):
    srv = tmux_server
    async with mcp_session(srv, *MUTATING) as s:
        (srv.dir / ".zshrc").write_text("precmd() { sleep 0.4; }\nPS1='$ '\n")
        for name, argv in SLOW_PROMPTS.items():
            argv = [a.replace("{dir}", str(srv.dir)) for a in argv]
            pane = srv.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "env", "PS1=$ ", "HISTFILE=/dev/null", *argv)
            await wait_until(lambda: "$" in srv.tmux("capture-pane", "-p", "-t", pane), timeout=10)
            await wait_until(lambda: srv.tmux("display-message", "-p", "-t", pane, "#{pane_current_command}") == name)
            for word in ("first", "second", "third"):
                # Each call follows the last at once: the prompt's program has
                # ended and the shell holds its terminal again.
                r = await call_ok(s, "run_command", {"paneId": pane, "command": f"echo {word}"})
                assert (r["state"], r["exitStatus"], r["output"]["text"]) == ("done", 0, f"{word}\n"), (name, r)
                now = srv.tmux("display-message", "-p", "-t", pane, "#{pane_current_command}")
                assert now == name, (name, word, now)


@async_test(timeout=40)
async def test_wait_for_text_progress_and_wait_for_idle(tmux_server):
    srv = tmux_server
    pane = await bash_pane(srv)
    async with mcp_session(srv, *MUTATING) as s:
        tools = await list_tools(s)
        await call_ok(s, "send_keys", {"paneId": pane, "text": "sleep 1.6; echo DONE-$((5+5))", "enter": True})
        events = []

        async def on_progress(progress, total, message):
            events.append((progress, total, message))

        raw = await s.call_tool("wait_for_text", {"paneId": pane, "patterns": ["DONE-10"]}, progress_callback=on_progress)
        assert not raw.is_error, raw
        from harness import validator_for_schema
        errors = list(validator_for_schema(tools["wait_for_text"].output_schema).iter_errors(raw.structured_content))
        assert not errors, errors
        r = raw.structured_content
        assert (r["outcome"], r["line"]) == ("matched", "DONE-10"), r
        assert len(events) >= 1 and all(t == 5 for _, t, _ in events), events
        r = await call_ok(s, "wait_for_idle", {"paneId": pane, "idleSeconds": 0.3})
        assert r["outcome"] == "idle" and r["quietMs"] >= 300, r
        r = await call_ok(s, "wait_for_text", {"paneId": pane, "patterns": ["absent"], "timeoutMs": 200})
        assert r["outcome"] == "timeout" and r["waitedMs"] >= 200, r


@async_test(timeout=40)
async def test_a_cancelled_run_command_lets_the_command_finish_and_leaves_no_files(tmux_server):
    """The SDK cancels the blocking call (notifications/cancelled): the typed
    command keeps running in the person's shell (its marker file appears), the
    session carries on, and the orphaned job is dropped with its directory."""
    srv = tmux_server
    pane = await bash_pane(srv)
    mark = str(srv.dir / "finished.mark")
    async with mcp_session(srv, *MUTATING) as s:
        sock = srv.status()["broker_socket"]
        prefix = os.path.splitext(os.path.basename(sock))[0] + ".run-"
        jobs = lambda: [n for n in os.listdir(os.path.dirname(sock)) if n.startswith(prefix)]
        # (The first run in a shell the broker does not know asks it first,
        # up to 150 ms, whether it is enrolled.)
        with anyio.move_on_after(1.0) as scope:
            await s.call_tool("run_command", {"paneId": pane, "command": f"sleep 2.5; touch {mark}"})
        assert scope.cancelled_caught, "run_command returned on its own"
        assert len(jobs()) == 1, jobs()
        await s.send_ping()
        await wait_until(lambda: os.path.exists(mark))
        await wait_until(lambda: not jobs())
        r = await call_ok(s, "run_command", {"paneId": pane, "command": "echo after"})
        assert r["output"]["text"] == "after\n", r


@async_test(timeout=30)
async def test_wait_for_text_returns_every_line_its_pattern_matches(tmux_server):
    srv = tmux_server
    pane = await bash_pane(srv)
    srv.tmux("send-keys", "-t", pane, "-l", "printf 'ok\\nERROR one\\nfine\\nERROR two\\nERROR three\\n'")
    srv.tmux("send-keys", "-t", pane, "Enter")
    await wait_until(lambda: "ERROR three" in srv.tmux("capture-pane", "-p", "-t", pane))
    async with mcp_session(srv) as s:
        w = await call_ok(s, "wait_for_text", {"paneId": pane, "patterns": ["^ERROR"], "regex": True,
                                               "timeoutMs": 2000})
        assert w["outcome"] == "matched" and w["line"] == "ERROR one", w
        assert w["moreLines"] == ["ERROR two", "ERROR three"], w
        r = await call(s, "wait_for_text", {"paneId": pane, "patterns": ["^fine$"], "regex": True,
                                            "timeoutMs": 2000})
        assert "moreLines" not in r.structured and r.text.count("\n") == 0, r
        r = await call(s, "wait_for_text", {"paneId": pane, "patterns": ["^ERROR"], "regex": True})
        assert r.text.splitlines()[1:] == ["ERROR two", "ERROR three"], r
