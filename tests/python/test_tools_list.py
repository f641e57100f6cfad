"""tools/list: the discovery tools are published and every schema root is an object."""

from harness import async_test, list_tools, mcp_session, validator_for_schema


@async_test()
async def test_tools_list_has_capabilities_and_list_panes(tmux_server):
    async with mcp_session(tmux_server) as s:
        tools = await list_tools(s)
    assert "tmux_capabilities" in tools, f"tools/list: {sorted(tools)}"
    assert "list_panes" in tools, f"tools/list: {sorted(tools)}"


@async_test()
async def test_every_tool_schema_root_is_object(tmux_server):
    async with mcp_session(tmux_server) as s:
        tools = await list_tools(s)
    assert tools, "tools/list is empty"
    problems = []
    for name, tool in sorted(tools.items()):
        for kind, schema in (("inputSchema", tool.input_schema), ("outputSchema", tool.output_schema)):
            if not isinstance(schema, dict):
                problems.append(f"{name}: {kind} missing")
                continue
            if schema.get("type") != "object":
                problems.append(f"{name}: {kind} root type is {schema.get('type')!r}")
            try:
                validator_for_schema(schema)
            except Exception as e:  # jsonschema.SchemaError
                problems.append(f"{name}: {kind} is not a valid JSON Schema: {e}")
    assert not problems, "\n".join(problems)
