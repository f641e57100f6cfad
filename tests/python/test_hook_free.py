"""Reading the pane table must not run the user's after-* hooks."""

import time

import anyio

from harness import async_test, call_ok, mcp_session


def arm_hook_trap(server, trap):
    names = server.tmux("list-commands", "-F", "#{command_list_name}").split()
    assert names, "list-commands returned nothing"
    armed = []
    for name in names:
        hook = f"after-{name}"
        out = server.tmux("set-hook", "-g", hook, f"run-shell 'echo {hook} >> {trap}'", check=False)
        del out
        if hook in server.tmux("show-hooks", "-g", hook, check=False):
            armed.append(hook)
    return armed


@async_test(45)
async def test_capabilities_and_list_panes_fire_no_after_hooks(tmux_server):
    trap = tmux_server.dir / "hooks.log"
    armed = arm_hook_trap(tmux_server, trap)
    assert "after-list-panes" in armed and "after-display-message" in armed, armed
    # Positive control: the trap fires for an ordinary read.
    time.sleep(0.3)
    trap.write_text("")
    tmux_server.tmux("list-panes")
    deadline = time.monotonic() + 3
    while "after-list-panes" not in trap.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "after-list-panes" in trap.read_text(), "hook trap did not fire for list-panes"
    time.sleep(0.3)
    trap.write_text("")

    async with mcp_session(tmux_server) as s:  # the first attach starts the broker
        await call_ok(s, "tmux_capabilities")
        await call_ok(s, "list_panes")
        await anyio.sleep(0.5)
        fired = trap.read_text()
    assert fired == "", f"after-* hooks ran during attach/tmux_capabilities/list_panes:\n{fired}"
