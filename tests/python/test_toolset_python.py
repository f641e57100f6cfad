"""`--toolset python` through the official MCP SDK: `search_panes` in the
tmux-python/libtmux-mcp spelling (docs/spec.md C.3). structuredContent is
validated against the published outputSchema (harness.call); matched lines
are compared with tmux's own `capture-pane -p -J`; bad input names the field;
no after-* hook fires."""

import time

from harness import async_test, call, call_ok, list_tools, mcp_session
from test_hook_free import arm_hook_trap, fire_sentinel


def showing(server, name: str, lines: list[str]) -> str:
    """A new session `name` (80x10) whose pane prints `lines` and sleeps; its
    pane id once the last line is in tmux's grid."""
    script = server.dir / f"{name}.sh"
    script.write_text("".join(f"printf '%s\\n' '{line}'\n" for line in lines) + "exec sleep 1000\n")
    pane = server.tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "10", "-P", "-F", "#{pane_id}", f"sh {script}")
    deadline = time.monotonic() + 10
    while lines[-1] not in joined(server, pane, "-S", "-"):
        assert time.monotonic() < deadline, f"{name} never printed {lines[-1]!r}"
        time.sleep(0.02)
    return pane


def joined(server, pane: str, *args: str) -> list[str]:
    """tmux's `capture-pane -p -J ARGS`, trailing empty lines removed (as C.0 says)."""
    lines = server.tmux("capture-pane", "-p", "-J", "-t", pane, *args).split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    return lines


@async_test(timeout=60)
async def test_python_search_panes_through_the_sdk(tmux_server):
    wrapped = "x" * 76 + "needle" + "y" * 10  # wraps inside "needle" at column 80
    a = showing(tmux_server, "s1", ["Needle one", "hay", *[f"needle {i:02}" for i in range(1, 21)], wrapped])
    b = showing(tmux_server, "s2", ["needle b", "#{pane_id} #(true)"])
    trap = tmux_server.dir / "hooks.log"
    trap.write_text("")
    async with mcp_session(tmux_server, "--toolset", "python") as s:
        tool = (await list_tools(s))["search_panes"]
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False and schema["required"] == ["pattern"], schema
        assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False, tool.annotations

        found = await call_ok(s, "search_panes", {"pattern": "needle", "max_matched_lines_per_pane": 3})
        want_a = [l for l in joined(tmux_server, a) if "needle" in l.lower()][-3:]
        assert want_a[-1] == wrapped, want_a
        assert [(m["pane_id"], m["matched_lines"]) for m in found["matches"]] == [(a, want_a), (b, ["needle b"])], found
        assert found["truncated"] is True and found["truncated_panes"] == [] and found["total_panes_matched"] == 2, found
        assert found["matches"][0]["session_name"] == "s1" and found["matches"][0]["is_caller"] is None, found

        paged = await call_ok(s, "search_panes", {"pattern": "NEEDLE B", "limit": None})
        assert [m["pane_id"] for m in paged["matches"]] == [b] and paged["limit"] is None, paged
        deep = await call_ok(s, "search_panes", {"pattern": "needle 0", "session_id": tmux_server.tmux("display-message", "-p", "-t", a, "#{session_id}"), "content_start": -100})
        assert deep["matches"][0]["matched_lines"] == [l for l in joined(tmux_server, a, "-S", "-100") if "needle 0" in l], deep
        literal = await call_ok(s, "search_panes", {"pattern": "#{pane_id} #(true)", "match_case": True})
        assert [m["pane_id"] for m in literal["matches"]] == [b], literal

        bad = await call(s, "search_panes", {"pattern": "(", "regex": True})
        assert bad.is_error and bad.text.startswith("Invalid regex pattern:"), bad
        bad = await call(s, "search_panes", {"pattern": "x", "maxMatchesPerPane": 1})
        assert bad.is_error and "maxMatchesPerPane" in bad.text, bad

        # No after-* hook fires (after-capture-pane left unset, so the captures run).
        arm_hook_trap(tmux_server, trap)
        tmux_server.tmux("set-hook", "-gu", "after-capture-pane")
        fire_sentinel(tmux_server, trap)
        trap.write_text("")
        again = await call_ok(s, "search_panes", {"pattern": "needle b"})
        assert [m["pane_id"] for m in again["matches"]] == [b], again
        assert fire_sentinel(tmux_server, trap) == "after-display-message\n"
