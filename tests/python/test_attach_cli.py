"""`tmux-mcp attach` as an MCP client config would run it."""

import subprocess
import time

from harness import BIN, TMUX_DIR, clean_env, require_binary


def test_attach_without_tmux_server_fails_fast_on_stderr():
    require_binary()
    proc = subprocess.Popen([str(BIN), "attach", "-S", "/nonexistent/sock"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=clean_env(), start_new_session=True)
    start = time.monotonic()
    try:
        # stdin stays open: the relay must give up on its own, not on EOF.
        rc = proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("attach to a missing tmux server did not exit within 5 s") from None
    elapsed = time.monotonic() - start
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.stdin.close()
    assert rc != 0, f"rc={rc} stderr={err!r}"
    assert out == b"", f"stdout must stay empty (it is the protocol channel): {out!r}"
    assert err.strip(), "no message on stderr"
    assert elapsed < 5


def test_attach_works_with_minimal_environment(tmux_server):
    # No TMUX, no HOME, no XDG_RUNTIME_DIR, no TMUX_TMPDIR: only PATH. This is
    # also the first attach, so it has to find/start the broker from scratch.
    # (PATH keeps the tmux under test first: another version's client may not
    # speak to this server.)
    raw = tmux_server.raw_client(env={"PATH": f"{TMUX_DIR}:/usr/bin:/bin"})
    raw.initialize()
    reply = raw.call_tool(2, "tmux_capabilities")
    sc = reply.get("result", {}).get("structuredContent")
    assert sc and sc.get("ok") is True, reply
    assert sc["data"]["server_identity"]["pid"] == tmux_server.pid, sc
    reply = raw.call_tool(3, "list_panes")
    assert reply.get("result", {}).get("structuredContent", {}).get("panes"), reply
    raw.close()
