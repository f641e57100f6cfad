"""list_servers through the official Python SDK (issue 52 item 1; docs/spec.md
B.6): the servers of the socket directory the agent's own tmux server has in
its environment, each result validated against its published schema (by
`call_ok`, and here against broker/contracts/list_servers.output.json)."""

import json
import os
import socket
import subprocess

from harness import REPO, TMUX, async_test, call_ok, clean_env, mcp_session, validator_for_schema

CONTRACT = REPO / "broker" / "contracts" / "list_servers.output.json"


@async_test(60)
async def test_list_servers_lists_a_named_server_and_a_stale_socket_as_stale(tmux_server):
    srv = tmux_server
    # The socket directory as tmux makes it: TMUX_TMPDIR/tmux-UID, 0700.
    base = srv.dir / "tt"
    sockets = base / f"tmux-{os.getuid()}"
    sockets.mkdir(parents=True)
    os.chmod(sockets, 0o700)
    # The broker is a job of the agent's own server: it reads that
    # server's environment.
    srv.tmux("set-environment", "-g", "TMUX_TMPDIR", str(base))
    # A server that died and left its socket: nothing accepts on it.
    gone = socket.socket(socket.AF_UNIX)
    gone.bind(str(sockets / "gone"))
    gone.close()
    env = clean_env(TMUX_TMPDIR=str(base))
    subprocess.run([TMUX, "-L", "work", "-f", "/dev/null", "new-session", "-d", "-s", "w",
                    "-x", "80", "-y", "24", "cat"], env=env, check=True, timeout=15,
                   stdin=subprocess.DEVNULL, capture_output=True)
    try:
        subprocess.run([TMUX, "-L", "work", "split-window", "-d", "-t", "w", "cat"],
                       env=env, check=True, timeout=15, capture_output=True)
        # The relay looks for the broker where the broker, under that
        # TMUX_TMPDIR, puts it.
        async with mcp_session(srv, env=env) as s:
            got = await call_ok(s, "list_servers")
    finally:
        subprocess.run([TMUX, "-L", "work", "kill-server"], env=env, timeout=15,
                       capture_output=True)
    errors = list(validator_for_schema(json.loads(CONTRACT.read_text())).iter_errors(got))
    assert not errors, (errors[:3], got)
    by_key = {x["key"]: x for x in got["servers"]}
    assert by_key["gone"]["state"] == "stale", got
    # Stale is never an empty server: no counts at all.
    assert not {"sessions", "panes", "version"} & set(by_key["gone"]), got
    work = by_key["work"]
    assert (work["state"], work["sessions"], work["panes"]) == ("live", 1, 2), got
    assert not work.get("own") and not work.get("broker"), got
    own = [x for x in got["servers"] if x.get("own")]
    assert [x["socket"] for x in own] == [srv.sock] and own[0]["broker"] is True, got
