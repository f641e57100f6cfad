"""A stand-in for an agent CLI's TUI, for the tests of list_agents' plumbing.

Run it under the CLI's command name (a copy of this file called `claude`,
`codex` …, started as `python3 PATH/claude SCREENS`), so the broker finds it
from the process's argv as it finds the real CLI's launcher. It shows the
screens captured from the real CLI (`tests/python/agents/screens/<cli>-<v>/`),
starting with `idle-start-1.txt`, and reads single keys from its terminal in
raw mode: `w` shows `working-1.txt`, `a` `approval-1.txt`, `i`
`idle-after-answer-1.txt`, `s` an answer streaming in (a word every 100 ms
after the last `working-*.txt` screen, the way Codex CLI and aider show it:
no indicator), `u` a screen no rule knows, `q` exits. Whether the broker recognises the real CLI's screens is what the
tests with the real CLIs check; this one checks discovery, scope, exits and
the event-driven wait.
"""

from __future__ import annotations

import os
import select
import sys
import termios
import tty

SCREENS = {
    b"i": "idle-after-answer-1.txt",
    b"w": "working-1.txt",
    b"a": "approval-1.txt",
}


def show(text: str) -> None:
    # Home, clear, then the screen; raw mode: lines need CR LF.
    os.write(1, b"\x1b[H\x1b[2J" + text.rstrip("\n").replace("\n", "\r\n").encode())


def main() -> None:
    screens = sys.argv[1]
    read = lambda name: open(os.path.join(screens, name)).read()
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    streaming = 0
    try:
        show(read("idle-start-1.txt"))
        while True:
            if streaming and not select.select([0], [], [], 0.1)[0]:
                os.write(1, f" word{streaming}".encode())
                streaming += 1
                continue
            key = os.read(0, 1)
            streaming = 0
            if not key or key == b"q":
                break
            if key == b"u":
                show("nothing any rule knows\n")
            elif key == b"s":
                # The idle screen, with an answer still arriving below it.
                show(read("idle-after-answer-1.txt").rstrip("\n") + "\nStreaming:")
                streaming = 1
            elif key in SCREENS:
                show(read(SCREENS[key]))
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)
        os.write(1, b"\x1b[H\x1b[2J")


if __name__ == "__main__":
    main()
