"""Reading the pane table must not run the user's after-* hooks."""

import time

from harness import async_test, call_ok, mcp_session


def arm_hook_trap(server, trap):
    """Every after-<command> hook appends its own name to `trap`."""
    names = server.tmux("list-commands", "-F", "#{command_list_name}").split()
    assert names, "list-commands returned nothing"
    armed = []
    for name in names:
        hook = f"after-{name}"
        server.tmux("set-hook", "-g", hook, f"run-shell 'echo {hook} >> {trap}'", check=False)
        if hook in server.tmux("show-hooks", "-g", hook, check=False):
            armed.append(hook)
    return armed


def fire_sentinel(server, trap, timeout=10.0):
    """Fires the trapped after-display-message with the test's own
    display-message and waits until its line is in `trap`; returns the file.

    tmux finishes a command's hooks before that command's client is done, so
    once the sentinel's line has arrived, every hook run by an earlier command
    (the broker's included) is in the file before it. Waiting for it instead of
    sleeping also proves the trap works.
    """
    server.tmux("display-message", "-p", "")
    deadline = time.monotonic() + timeout
    while "after-display-message\n" not in trap.read_text():
        assert time.monotonic() < deadline, f"the sentinel never reached the hook trap: {trap.read_text()!r}"
        time.sleep(0.02)
    return trap.read_text()


@async_test(45)
async def test_capabilities_and_list_panes_fire_no_after_hooks(tmux_server):
    trap = tmux_server.dir / "hooks.log"
    trap.write_text("")
    armed = arm_hook_trap(tmux_server, trap)
    assert "after-list-panes" in armed and "after-display-message" in armed, armed
    # The trap caught the test's own set-hook commands: start clean once they landed.
    fire_sentinel(tmux_server, trap)
    trap.write_text("")
    # Positive control: the trap fires for an ordinary read.
    tmux_server.tmux("list-panes")
    assert fire_sentinel(tmux_server, trap) == "after-list-panes\nafter-display-message\n", \
        "hook trap did not fire for list-panes"
    trap.write_text("")

    async with mcp_session(tmux_server) as s:  # the first attach starts the broker
        await call_ok(s, "tmux_capabilities")
        await call_ok(s, "list_panes")
        fired = fire_sentinel(tmux_server, trap)
    assert fired == "after-display-message\n", \
        f"after-* hooks ran during attach/tmux_capabilities/list_panes (only the sentinel's line belongs here):\n{fired}"
