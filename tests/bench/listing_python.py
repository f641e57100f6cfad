"""Where the time of a listing goes through the official MCP Python SDK, and
what its own check of each result against the output schema costs.

    scripts/bench --python-listing [--rounds N] [--mcp-tmux PATH]
    (or .venv/bin/python tests/bench/listing_python.py … with a release build made)

On one private tmux server of 1,001 panes (the scale benchmarks' shape: 100
sessions x 10 windows and the first session's pane), in one run:

1. `list_panes` first page (100 records as given by default: lean since
   issue 49, whole before), the same with `detail: full`, and the brief listing of all 1,001
   panes through `ClientSession.call_tool` as it is (the SDK checks every
   structured result against the tool's `outputSchema`), and again with that
   check skipped, so the two parts of the time are apart;
2. the check alone (jsonschema, as the SDK runs it: a compiled validator,
   `best_match(iter_errors(...))`) on those results, against the published
   schema and against leaner schemas that check the same fields, down to one
   that checks nothing in a record: what any record schema costs;
3. mcp-tmux's `tmux_list_panes` (its whole listing; it publishes no output
   schema, so the SDK checks nothing) through the same SDK on the same
   server, when `--mcp-tmux` names its executable (default: the one
   `scripts/bench --peers` installs, if present).

Uses the build `TMUX_MCP_BIN` names (default: target/release/tmux-mcp).
Prints figures; asserts nothing about speed.
"""

import argparse
import copy
import glob
import json
import os
import statistics
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("TMUX_MCP_BIN", str(ROOT / "target/release/tmux-mcp"))
sys.path.insert(0, str(ROOT / "tests/python"))

import harness  # noqa: E402  (reads TMUX_MCP_BIN on import)
from jsonschema import validators  # noqa: E402
from jsonschema.exceptions import best_match  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from referencing import Registry  # noqa: E402

CALLS = {
    "first page (100 records, default)": {},
    "first page, detail full": {"detail": "full"},
    "brief, all 1,001 panes": {"limit": 10000, "detail": "brief"},
}


def big_server() -> harness.TmuxServer:
    srv = harness.TmuxServer()
    script = srv.dir / "big.tmux"
    lines = []
    for s in range(100):
        lines.append(f"new-session -d -s s{s} -x 80 -y 24 'sleep 100000'")
        lines += [f"new-window -d -t s{s}: 'sleep 100000'"] * 9
    script.write_text("\n".join(lines) + "\n")
    srv.tmux("source-file", str(script))
    return srv


def median(v: list[float]) -> float:
    return statistics.median(v)


async def timed(s: ClientSession, tool: str, args: dict, rounds: int) -> tuple[list[float], object]:
    r = await s.call_tool(tool, args)  # warm
    assert not r.is_error, r
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        r = await s.call_tool(tool, args)
        times.append((time.perf_counter() - t) * 1000.0)
        assert not r.is_error, r
    return times, r


def check_ms(schema: dict, instance: object, rounds: int) -> float:
    """The SDK's check of one result: a compiled validator and best_match."""
    cls = validators.validator_for(schema)
    v = cls(schema, registry=Registry())
    assert best_match(v.iter_errors(instance)) is None
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        best_match(v.iter_errors(instance))
        times.append((time.perf_counter() - t) * 1000.0)
    return median(times)


def variants(schema: dict, lean: bool) -> dict[str, dict]:
    """The published schema and leaner ones that take the same results."""
    items = schema["properties"]["panes"]["items"]

    def with_items(new_items) -> dict:
        v = copy.deepcopy(schema)
        v["properties"]["panes"]["items"] = new_items
        return v

    return {
        "published (a per-record if/then/else on `at`)": schema,
        # What a switch above the records would leave: each record against
        # its one shape, no per-record `if`.
        "one record shape, no per-record switch": with_items(items["then"] if lean else items["else"]),
        "records: `type: object` only (types of fields unchecked)": with_items({"type": "object"}),
        "records: nothing checked (`items: true`)": with_items(True),
    }


@asynccontextmanager
async def sdk_session(command: str, args: list[str], env: dict[str, str] | None, errlog):
    params = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=60) as s:
            await s.initialize()
            yield s


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--mcp-tmux", default=None)
    opts = ap.parse_args()
    mcp_tmux = opts.mcp_tmux or next(iter(sorted(glob.glob(os.path.expanduser(
        os.environ.get("XDG_CACHE_HOME", "~/.cache") + "/tmux-mcp/peers/*/venv-mcp-tmux/bin/mcp-tmux")))), None)

    srv = big_server()
    try:
        print(f"tmux-mcp {harness.BIN}; tmux {harness.tmux_version()[2]}; "
              f"{srv.tmux('list-panes', '-a', '-F', '#{pane_id}').count(chr(10)) + 1} panes; {opts.rounds} rounds")
        results = {}
        errlog = open(srv.dir / "bench.stderr", "w")
        async with sdk_session(str(harness.BIN), ["attach", "-S", srv.sock, "--scope", "server"], None, errlog) as s:
            listed = await s.list_tools()
            schema = next(t.output_schema for t in listed.tools if t.name == "list_panes")
            for label, args in CALLS.items():
                checked, r = await timed(s, "list_panes", args, opts.rounds)
                original = s.validate_tool_result

                async def skip(name, result):
                    return None

                s.validate_tool_result = skip  # the SDK's check, and nothing else, left out
                try:
                    unchecked, _ = await timed(s, "list_panes", args, opts.rounds)
                finally:
                    s.validate_tool_result = original
                results[label] = (checked, unchecked, r.structured_content)
        print("\nours through the Python SDK, p50:")
        for label, (checked, unchecked, _) in results.items():
            print(f"  list_panes {label:<32} {median(checked):7.1f} ms   "
                  f"without the SDK's check {median(unchecked):7.1f} ms")

        print("\nthe SDK's check alone (jsonschema), p50:")
        for label, (_, _, structured) in results.items():
            print(f"  {label}:")
            # A lean record (the default since issue 49, and brief) has `at`.
            lean = "at" in (structured.get("panes") or [{}])[0]
            for name, v in variants(schema, lean=lean).items():
                print(f"    {name:<58} {check_ms(v, structured, opts.rounds):7.1f} ms")

        if mcp_tmux and os.path.exists(mcp_tmux):
            config = srv.dir / "mcp-tmux.toml"
            config.write_text(f"[defaults]\nsocket_path = {json.dumps(srv.sock)}\n")
            env = {**os.environ, "MCP_TMUX_CONFIG": str(config)}
            async with sdk_session(mcp_tmux, [], env, errlog) as s:
                listed = await s.list_tools()
                tool = next(t for t in listed.tools if t.name == "tmux_list_panes")
                times, _ = await timed(s, "tmux_list_panes", {}, opts.rounds)
            print(f"\nmcp-tmux through the Python SDK: tmux_list_panes (all panes) p50 {median(times):.1f} ms "
                  f"(outputSchema published: {tool.output_schema is not None})")
            first = median(results["first page (100 records, default)"][0])
            whole = median(results["brief, all 1,001 panes"][0])
            print(f"\ntargets: first page {first:.1f} ms (<= 40); brief {whole:.1f} ms = "
                  f"{whole / median(times):.2f}x mcp-tmux's whole listing (<= 1x)")
        else:
            print("\nmcp-tmux not found (scripts/bench --peers installs it); its listing not measured")
    finally:
        srv.tmux("kill-server", check=False)
        import shutil
        shutil.rmtree(srv.dir, ignore_errors=True)


if __name__ == "__main__":
    anyio.run(main)
