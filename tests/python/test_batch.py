"""`batch` through the official MCP SDK: the batch result validates against its
published outputSchema (harness.call), and each inner result against the
outputSchema of the tool it answers, in the order of the calls."""

from harness import async_test, call_ok, list_tools, mcp_session, validator_for_schema


@async_test()
async def test_batch_results_validate_against_each_tools_schema(tmux_server):
    calls = [
        {"tool": "list_panes"},
        {"tool": "capture_pane", "arguments": {"paneId": "%0"}},
        {"tool": "get_server_info"},
        {"tool": "get_pane_info", "arguments": {"paneId": "%99"}},
        {"tool": "tmux_close", "arguments": {}},
    ]
    async with mcp_session(tmux_server) as s:
        tools = await list_tools(s)
        out = await call_ok(s, "batch", {"calls": calls})
        alone = await call_ok(s, "get_server_info")
    results = out["results"]
    assert [r["tool"] for r in results] == [c["tool"] for c in calls]
    assert [r["isError"] for r in results] == [False, False, False, True, True], results
    for r in results:
        if "structuredContent" in r:
            errors = list(validator_for_schema(tools[r["tool"]].output_schema).iter_errors(r["structuredContent"]))
            assert not errors, (r["tool"], errors)
    assert results[2]["structuredContent"]["generation"] == alone["generation"]
    assert "not read-only" in results[4]["text"], results[4]
