"""A stdio MCP relay that changes what one tool's `tools/list` entry says:

    python mcp_rewrite.py --tool NAME --annotations JSON -- COMMAND [ARGS...]

runs COMMAND (an MCP server on stdio, here `tmux-mcp attach`), passes the
client's lines to it unchanged, and passes its lines back, except that in a
`tools/list` result the tool NAME gets exactly the annotations JSON. Every call
still goes to the real server. Tests use it to show that a client acts on the
hints: the same tool, hinted as another tier.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading


def rewrite(line: bytes, tool: str, annotations: dict) -> bytes:
    try:
        msg = json.loads(line)
    except ValueError:
        return line
    tools = msg.get("result", {}).get("tools") if isinstance(msg, dict) else None
    if not isinstance(tools, list):
        return line
    for t in tools:
        if isinstance(t, dict) and t.get("name") == tool:
            t["annotations"] = annotations
    return json.dumps(msg).encode() + b"\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--annotations", required=True, type=json.loads)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None

    def forward() -> None:
        try:
            for line in sys.stdin.buffer:
                child.stdin.write(line)
                child.stdin.flush()
        except OSError:
            pass
        finally:
            try:
                child.stdin.close()
            except OSError:
                pass

    threading.Thread(target=forward, daemon=True).start()
    out = sys.stdout.buffer
    for line in child.stdout:
        out.write(rewrite(line, a.tool, a.annotations))
        out.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
