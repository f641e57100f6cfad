"""Capture an agent CLI's TUI screens in each state (tests/python/agents/screens/).

    cd tests/python && ../../.venv/bin/python -m agents.capture_screens claude [codex gemini aider opencode]

For each CLI (tui.py's launchers: the pinned version, a private home, the fake
model server of fake_model.py with `interactive_script`), in a 120x40 pane of
a private tmux server, it types prompts and saves the plain screen
(`capture-pane -p`) of each state as screens/<cli>-<version>/<state>-N.txt:
idle (started, after an answer), working (a slow streamed answer), approval
(the CLI's own shell tool asked to run a command), after approving and after
refusing, the exit; plus process trees (the CLI as the pane's command and
typed into bash), what it writes to the terminal at start (bracketed paste,
alternate screen...) and how a 3-line bracketed paste followed by Enter
arrives at the model. notes.txt sums up what it saw. Nothing here is a test:
screens are material for the agent-state rules.

`--only=STEP,...` picks the steps (default working,approval,paste,shell);
`draft` (opt-in) also saves the input box holding unsent text, before the
first prompt and after an answer (`draft-N`, `draft-cleared-N`).
"""

from __future__ import annotations

import json
import os
import signal
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

from . import tui
from .fake_model import FakeModelServer, interactive_script, AnthropicMessages, OpenAIChat, OpenAIResponses, \
    GeminiGenerateContent

HERE = Path(__file__).resolve().parent
SCREENS = HERE / "screens"
WIRES = {"claude": AnthropicMessages, "codex": OpenAIResponses, "gemini": GeminiGenerateContent,
         "aider": OpenAIChat, "opencode": OpenAIChat}
APPROVAL = (r"(Do you want to proceed|Would you like to run|Allow execution|Allow once|Yes, proceed|Apply this change"
            r"|Run shell command|Permission required)")
EXIT_WORDS = {"claude": "/exit", "codex": "/quit", "gemini": "/quit", "aider": "/exit", "opencode": "/exit"}
# Keys that refuse an approval (aider asks (Y)es/(N)o on its prompt line).
REFUSE = {"aider": ["n", "Enter"]}
# Keys that empty the input box after the `draft` step (opt-in, checked for opencode
# only: its C-u deletes to the start of the line, then the line break before it).
CLEAR_DRAFT = {"opencode": ["C-u"] * 6}


def read_ppid_exe(pid: int) -> str:
    p = tui.read_proc(pid)
    return p.exe if p else ""


class Capture:
    def __init__(self, name: str, out: Path | None = None, slow: float = 15.0) -> None:
        self.name = name
        self.slow = slow
        self.work = Path(tempfile.mkdtemp(prefix=f"agtui-{name}-"))
        self.wait = 8.0
        self.fake = FakeModelServer(WIRES[name](), interactive_script(
            slow_seconds=slow, slow_wait=self.wait, shell_as_text=name == "aider"))
        self.fake.__enter__()
        self.launch = tui.LAUNCHERS[name](self.fake, self.work / "home")
        self.out = out or SCREENS / f"{name}-{self.launch.version}"
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "titles.txt").write_text("# screen file, then the pane's title (#{pane_title}, set by the app's OSC 0/2) when it was captured\n")
        self.counts: dict[str, int] = {}
        self.notes: list[str] = []
        self.t0 = time.monotonic()

    def note(self, text: str) -> None:
        line = f"[{time.monotonic() - self.t0:6.1f}s] {text}"
        print(line, flush=True)
        self.notes.append(line)

    def save(self, srv: tui.TuiServer, state: str, screen: str | None = None) -> str:
        screen = srv.screen() if screen is None else screen
        n = self.counts[state] = self.counts.get(state, 0) + 1
        path = self.out / f"{state}-{n}.txt"
        path.write_text(screen + "\n")
        title = srv.fmt("#{pane_title}")
        with (self.out / "titles.txt").open("a") as f:
            f.write(f"{path.name}\t{title!r}\n")
        self.note(f"saved {path.name}")
        return screen

    def model_turns(self) -> list:
        return [t for t in self.fake.turns() if t.tools or self.name == "aider"]

    def wait_turns(self, n: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.model_turns()) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the fake model got {len(self.model_turns())} requests with tools, not {n}")
            time.sleep(0.1)

    def try_(self, what: str, fn) -> None:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - record and go on with the next state
            self.note(f"FAILED {what}: {e!r}")
            traceback.print_exc()

    # ---- the states ----------------------------------------------------------

    def prompt_and_answer(self, srv: tui.TuiServer, text: str, state: str = "idle-after-answer") -> None:
        n = len(self.model_turns())
        srv.type_line(text)
        self.wait_turns(n + 1)
        time.sleep(1.0)
        self.save(srv, state, srv.settle(1.5))

    def working(self, srv: tui.TuiServer) -> None:
        n = len(self.model_turns())
        srv.type_line("SLOW: tell me a long story")
        self.wait_turns(n + 1)
        t = time.monotonic()
        # Before the first token (nothing streamed), then streaming.
        for at in (1.5, 5.0, self.wait + 3, self.wait + 9):
            time.sleep(max(0, t + at - time.monotonic()))
            self.save(srv, "working")
        time.sleep(max(0, t + self.wait + self.slow + 3 - time.monotonic()))
        self.save(srv, "idle-after-answer", srv.settle(1.5))

    def approval(self, srv: tui.TuiServer, answer_keys: list[str], after: str, label: str) -> None:
        n = len(self.model_turns())
        srv.type_line(f"SHELL: please run a command ({label})")
        self.wait_turns(n + 1)
        screen = srv.wait_for(APPROVAL, "an approval dialog", 30)
        time.sleep(1.0)
        self.save(srv, "approval", srv.settle(1.0, 5))
        srv.keys(*answer_keys)
        time.sleep(3.0)
        self.save(srv, after, srv.settle(1.5))

    def tool_running(self, srv: tui.TuiServer) -> None:
        """Approve a command that runs for 12 s: the screens while it runs."""
        n = len(self.model_turns())
        srv.type_line("SHELL LONG: run a slow command")
        self.wait_turns(n + 1)
        srv.wait_for(APPROVAL, "an approval dialog", 30)
        time.sleep(1.0)
        self.save(srv, "approval", srv.settle(1.0, 5))
        srv.keys("Enter")
        for i in range(2):
            time.sleep(3.0)
            self.save(srv, "working-tool")
            if i == 0:
                self.tree(srv, "direct-running-command")
                self.daemon_trees("while the approved command runs")
        self.wait_turns(n + 2, timeout=30)
        time.sleep(2.0)
        self.save(srv, "idle-after-answer", srv.settle(1.5))

    def draft(self, srv: tui.TuiServer, text: str, multiline: bool = False) -> None:
        """Text typed into the input box, not sent (with `multiline`, then a line
        break, C-j: the box's last line is empty), saved as `draft-N`; then the
        box emptied again (CLEAR_DRAFT), saved as `draft-cleared-N`."""
        srv.type_text(text)
        if multiline:
            srv.keys("C-j")
        time.sleep(1.5)
        self.save(srv, "draft", srv.settle(1.0, 5))
        keys = CLEAR_DRAFT.get(self.name)
        if keys is None:
            self.note(f"no CLEAR_DRAFT keys for {self.name}: the draft stays in the box")
            return
        for k in keys:
            srv.keys(k)
            time.sleep(0.2)
        time.sleep(1.0)
        self.save(srv, "draft-cleared", srv.settle(1.0, 5))

    def paste(self, srv: tui.TuiServer, wait_before_enter: float) -> None:
        n = len(self.fake.model_requests())
        text = f"PASTE line one (wait {wait_before_enter})\nPASTE line two\nPASTE line three"
        srv.paste(text, bracketed=True)
        if wait_before_enter:
            time.sleep(wait_before_enter)
        self.save(srv, "paste-before-enter")
        srv.keys("Enter")
        time.sleep(4.0)
        screen = srv.settle(1.5)
        self.save(srv, "paste-after-enter", screen)
        new = [self.fake.wire.parse(r.body) for r in self.fake.model_requests()[n:]]
        prompts = [t.prompt for t in new if t.tools or self.name == "aider"]
        self.note(f"paste (Enter {wait_before_enter} s after paste-buffer -p): model requests with tools "
                  f"since: {len(prompts)}; prompts: {json.dumps(prompts)}")
        if not prompts:
            # Not sent (yet): a second Enter, to clear the input for what follows.
            srv.keys("Enter")
            time.sleep(3.0)
            new = [self.fake.wire.parse(r.body) for r in self.fake.model_requests()[n:]]
            self.note(f"  after a second Enter: prompts: "
                      f"{json.dumps([t.prompt for t in new if t.tools or self.name == 'aider'])}")
            self.save(srv, "paste-after-second-enter", srv.settle(1.5))

    def paste_delays(self, srv: tui.TuiServer, delays: tuple[float, ...] = (0.05, 0.2, 0.4, 0.6, 1.0)) -> None:
        """For each delay: a 3-line bracketed paste, Enter that many seconds later: submitted or not."""
        for d in delays:
            n = len(self.model_turns())
            srv.paste(f"PASTE delay {d}\nsecond line\nthird line", bracketed=True)
            time.sleep(d)
            srv.keys("Enter")
            time.sleep(3.0)
            submitted = len(self.model_turns()) > n
            self.note(f"paste-buffer -p of 3 lines, Enter {d} s later: {'submitted' if submitted else 'NOT submitted'}")
            if not submitted:
                srv.keys("Enter")
                time.sleep(3.0)
                self.note(f"  a second Enter: {'submitted' if len(self.model_turns()) > n else 'still not submitted'}; "
                          f"prompt {json.dumps(self.model_turns()[-1].prompt if self.model_turns() else None)}")
            srv.settle(1.0)

    def exit(self, srv: tui.TuiServer, how: str) -> None:
        if how == "command":
            srv.type_text(EXIT_WORDS[self.name])
            time.sleep(0.8)
            self.save(srv, "exit-command-typed")
            srv.keys("Enter")
        else:  # ctrl-c twice
            srv.keys("C-c")
            time.sleep(0.7)
            self.save(srv, "ctrl-c-once")
            srv.keys("C-c")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            procs = srv.process_tree()
            if srv.pane_dead() or (procs and procs[-1].argv[:1] == ["bash"] and len(procs) == 1):
                break
            time.sleep(0.3)
        time.sleep(1.0)
        self.note(f"exit by {how}: pane_dead={srv.fmt('#{pane_dead}')} "
                  f"pane_dead_status={srv.fmt('#{pane_dead_status}')} "
                  f"pane_dead_signal={srv.fmt('#{pane_dead_signal}')} "
                  f"pane_current_command={srv.fmt('#{pane_current_command}')} "
                  f"alternate_on={srv.fmt('#{alternate_on}')}")
        self.save(srv, f"exited-{how}")

    def daemon_trees(self, when: str) -> None:
        """Processes of this CLI in sessions of their own (its files under our temporary home, e.g.
        Codex's app-server daemon) and their children."""
        roots = [p for p in tui.process_tree(1) if p.exe.startswith(str(self.work)) and
                 read_ppid_exe(p.ppid) != p.exe]
        for r in roots:
            if r.argv[1:2] == ["app-server"] or r.ppid == 1:
                text = "\n".join(p.line() for p in tui.process_tree(r.pid))
                path = self.out / f"process-tree-own-session-{r.pid}.txt"
                path.write_text(f"# {when}: a process of the CLI in a session of its own (not the pane's; a child of the TUI while that runs, of pid 1 after)\n{text}\n")
                self.note(f"saved {path.name}")

    def startup(self, srv: tui.TuiServer) -> None:
        for screen in tui.dismiss_startup_dialogs(srv, self.name, srv.settle(2.0, 20)):
            self.save(srv, "startup-dialog", screen)

    def tree(self, srv: tui.TuiServer, label: str) -> None:
        procs = srv.process_tree()
        text = "\n".join(p.line() for p in procs)
        path = self.out / f"process-tree-{label}.txt"
        head = (f"# pane_pid={srv.pane_pid()} pane_current_command={srv.fmt('#{pane_current_command}')} "
                f"pane_tty={srv.fmt('#{pane_tty}')} size={srv.width}x{srv.height} TERM={tui.TERM}\n")
        path.write_text(head + text + "\n")
        self.note(f"saved {path.name}")

    def flags(self, srv: tui.TuiServer, label: str) -> None:
        self.note(f"{label}: " + srv.fmt("alternate_on=#{alternate_on} cursor_flag=#{cursor_flag} "
                                          "keypad_flag=#{keypad_flag} keypad_cursor_flag=#{keypad_cursor_flag} "
                                          "mouse_any_flag=#{mouse_any_flag} insert_flag=#{insert_flag} "
                                          "pane_current_command=#{pane_current_command} pane_title=#{pane_title}"))

    # ---- the runs --------------------------------------------------------------

    def run_direct(self, steps: set[str]) -> None:
        with tui.TuiServer() as srv:
            srv.start(self.launch)
            self.note(f"launch: {self.launch.argv} cwd={self.launch.cwd} size={srv.width}x{srv.height}")
            time.sleep(6.0)
            self.startup(srv)
            self.save(srv, "idle-start", srv.settle(2.0, 20))
            self.flags(srv, "idle")
            self.tree(srv, "direct-idle")
            if "draft" in steps:
                self.try_("draft at start", lambda: self.draft(srv, "a draft before the first prompt"))
            self.try_("first answer", lambda: self.prompt_and_answer(srv, "Say hello"))
            if "draft" in steps:
                self.try_("draft", lambda: self.draft(srv, "a draft after an answer"))
                self.try_("draft multiline", lambda: self.draft(srv, "a draft whose last line is empty", True))
            if "working" in steps:
                self.try_("working", lambda: self.working(srv))
            if "approval" in steps:
                self.try_("approval yes", lambda: self.approval(srv, ["Enter"], "after-approve", "approve with Enter"))
                refuse = REFUSE.get(self.name, ["Escape"])
                self.try_("approval no", lambda: self.approval(srv, refuse, "after-refuse", f"refuse with {refuse}"))
                self.try_("tool running", lambda: self.tool_running(srv))
            if "paste" in steps:
                self.try_("paste immediate", lambda: self.paste(srv, 0))
                self.try_("paste waited", lambda: self.paste(srv, 1.5))
            if "pastedelay" in steps:
                self.try_("paste delays", lambda: self.paste_delays(srv))
            self.try_("exit", lambda: self.exit(srv, "command"))
            time.sleep(2.0)
            self.leftovers("2 s after the CLI exited (pane's command)")

    def run_shell(self) -> None:
        # A fresh home: a second start in the same one can open on a one-time offer (Claude Code's
        # "Make auto mode your default permission mode?").
        self.launch = tui.LAUNCHERS[self.name](self.fake, self.work / "home-shell")
        with tui.TuiServer() as srv:
            rec = self.out / "terminal-output-at-start.raw"
            rec.unlink(missing_ok=True)
            srv.start(self.launch, via_shell=True, type_command=False)
            srv.record(rec)
            time.sleep(0.5)
            srv.type_line(" ".join(tui._sh_quote(a) for a in self.launch.argv))
            time.sleep(8.0)
            self.startup(srv)
            self.save(srv, "idle-start-from-shell", srv.settle(2.0, 20))
            self.flags(srv, "idle (from shell)")
            self.tree(srv, "from-shell-idle")
            raw = rec.read_bytes() if rec.exists() else b""
            modes = sorted(set(m.decode() for m in re.findall(rb"\x1b\[\?[0-9;]+[hl]", raw)))
            self.note(f"private modes the app set/reset at start (from bash's prompt on): {modes}")
            self.note(f"bracketed paste on (ESC[?2004h) after the command line: "
                      f"{raw.rfind(b'[?2004h') > raw.rfind(b'[?2004l')} "
                      f"(last 2004h at {raw.rfind(b'[?2004h')}, last 2004l at {raw.rfind(b'[?2004l')})")
            self.try_("exit ctrl-c", lambda: self.exit(srv, "ctrl-c"))
            self.tree(srv, "from-shell-after-exit")
            srv.tmux("pipe-pane", "-t", srv.pane)
            raw = rec.read_bytes() if rec.exists() else b""
            tail = raw[-400:]
            self.note(f"last bytes written to the terminal on exit: {tail!r}")

    def leftovers(self, when: str) -> None:
        """Processes of this CLI still alive (its files under our temporary home), noted and killed:
        e.g. Codex's app-server daemon, which outlives the TUI in its own session."""
        mine = [p for p in tui.process_tree(1) if p.exe.startswith(str(self.work)) or
                any(a.startswith(str(self.work)) for a in p.argv[:2])]
        for p in mine:
            self.note(f"still alive {when}: pid={p.pid} ppid={p.ppid} sid={p.sid} exe={p.exe} argv={p.argv}")
        for p in mine:
            try:
                os.kill(p.pid, signal.SIGTERM)
            except OSError:
                pass

    def finish(self) -> None:
        self.leftovers("after the runs (killed)")
        self.fake.close()
        notes = self.out / "notes.txt"
        outbound = f"refused outbound connections: {self.fake.outbound}"
        tools = sorted({t.qualified for t in self.fake.turns() for t in t.tools})
        with notes.open("a") as f:
            f.write(f"# {self.name} {self.launch.version} {time.strftime('%Y-%m-%d %H:%M:%S')} UTC\n")
            f.write("\n".join(self.notes) + "\n")
            f.write(outbound + "\n")
            f.write(f"tools offered: {tools}\n")
            f.write(f"fake server errors: {self.fake.errors}\n")
            f.write("requests: " + "; ".join(
                f"{r.method} {r.path.split('?')[0]} reply={type(r.reply).__name__ if r.reply else None}"
                for r in self.fake.requests) + "\n\n")
        print(outbound, "\ntools:", tools, "\nerrors:", self.fake.errors)


def main(argv: list[str]) -> int:
    steps = {"working", "approval", "paste", "shell"}
    names = [a for a in argv if not a.startswith("-")]
    for a in argv:
        if a.startswith("--only="):
            steps = set(a.split("=", 1)[1].split(","))
    for name in names:
        cap = Capture(name)
        try:
            cap.run_direct(steps)
            if "shell" in steps:
                cap.run_shell()
        finally:
            cap.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
