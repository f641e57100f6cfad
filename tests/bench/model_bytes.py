"""What each agent CLI gives its model of our default read tools' results.

    scripts/bench --model-bytes [--before DIR] [--json]
    (or .venv/bin/python tests/bench/model_bytes.py with a build made)

On issue 49's 12-pane workspace (tests/python/workspace12.py: 3 sessions x 2
windows x 2 bash panes, each having printed five lines), one call of each
default read tool through the official MCP Python SDK, and per call the bytes
a model is given: Claude Code and Codex hand their model the compact JSON of
`structuredContent` when a result has one, else its text
(`json.dumps(sc, separators=(",", ":"), ensure_ascii=False)`, as `scripts/bench
--tasks`' `struct B`); Gemini hands it the text. Before `wait_for_text`, the
person types the line it then finds (tmux send-keys, not a call). Sizes, not timings: the debug build
answers the same (TMUX_MCP_BIN, default target/debug/tmux-mcp). Prints the
table with issue 49's targets; asserts nothing (test_model_bytes.py does).
`--before DIR` (a directory holding another build's tmux-mcp and
tmux-mcp-broker) measures that build first on a workspace of its own, the same
way, and prints both side by side: before and after in one run.
"""

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests/python"))

import harness  # noqa: E402
import workspace12  # noqa: E402


async def run(bin_path: Path) -> list[tuple[str, int, int]]:
    """The workspace on a fresh server, measured through `bin_path`'s attach."""
    harness.BIN = bin_path
    srv = harness.TmuxServer()
    try:
        workspace12.build(srv)
        async with harness.mcp_session(srv) as s:
            rows = await workspace12.measure(srv, s)
    finally:
        for p in srv.shutdown():
            print(f"model_bytes: {p}", file=sys.stderr)
        shutil.rmtree(srv.dir, ignore_errors=True)
    return [(label, cc, gem) for label, cc, gem, _ in rows]


def table(title: str, rows: list[tuple[str, int, int]]) -> None:
    print(title)
    print(f"  {'tool':<16} {'Claude Code / Codex':>20} {'Gemini':>8} {'ratio':>7} {'target':>8}")
    tc = tg = 0
    for label, cc, gem in rows:
        tc += cc
        tg += gem
        target = workspace12.TARGETS.get(label)
        print(f"  {label:<16} {cc:>20,} {gem:>8,} {cc / gem:>6.1f}x {('<= ' + format(target, ',')) if target else '':>8}")
    target = workspace12.TARGETS["total"]
    print(f"  {str(len(rows)) + ' calls':<16} {tc:>20,} {tg:>8,} {tc / tg:>6.1f}x {'<= ' + format(target, ','):>8}")


async def main(before: Path | None, as_json: bool) -> None:
    this = harness.BIN
    runs = {}
    if before is not None:
        runs["before"] = await run(before / "tmux-mcp")
    runs["this build"] = await run(this)
    if as_json:
        print(json.dumps({k: {label: {"claude_codex": cc, "gemini": gem} for label, cc, gem in v}
                          for k, v in runs.items()}))
        return
    for title, rows in runs.items():
        table(f"{title} ({before if title == 'before' else this}):", rows)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--before", type=Path, help="a directory holding another build's tmux-mcp, measured first")
    a = ap.parse_args()
    os.environ.pop("TMUX", None)
    os.environ.pop("TMUX_PANE", None)
    anyio.run(main, a.before, a.json)
