"""tools/list covers every tool of the catalog, the opt-in ones too.

The expected set is not a copy kept here: it is the README's tools table
(`harness.readme_tools`, the documented catalog with each tool's default) and
the broker's own `CATALOG` in broker/src/tools/mod.rs. With every opt-in tool
enabled, tools/list must publish exactly those names — a tool that disappears,
or one added without being documented, fails — and by default exactly the
tools the README marks `on`.
"""

import re

from harness import (REPO, async_test, call, call_ok, companion_of, enable_all, list_tools, mcp_session,
                     readme_tiers, readme_tools, validator_for_schema)

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def source_catalog() -> list[str]:
    """Tool names of `CATALOG` in broker/src/tools/mod.rs, in catalog order: each
    entry is `<module>::<CONST>` (`SPEC`, or one of several specs a module
    holds, e.g. `kill::KILL_PANE`), declared in broker/src/tools/<module>.rs as
    `ToolSpec::new("<name>", …)`."""
    tools_dir = REPO / "broker" / "src" / "tools"
    mod = (tools_dir / "mod.rs").read_text()
    m = re.search(r"pub const CATALOG: &\[ToolSpec\] = &\[(.*?)\];", mod, re.S)
    assert m, "could not find `pub const CATALOG: &[ToolSpec] = &[...]` in broker/src/tools/mod.rs"
    names = []
    for entry in (e.strip() for e in m.group(1).split(",")):
        if not entry:
            continue
        m = re.fullmatch(r"([a-z_]+)::([A-Z_]+)", entry)
        assert m, f"unexpected CATALOG entry {entry!r}"
        module, const = m.groups()
        src = (tools_dir / f"{module}.rs").read_text()
        spec = re.search(rf"pub const {const}: ToolSpec = ToolSpec::new\(\s*\"([a-z_]+)\"", src)
        assert spec, f"no `pub const {const}: ToolSpec = ToolSpec::new(\"…\", …)` in broker/src/tools/{module}.rs"
        names.append(spec.group(1))
    assert names, "CATALOG is empty"
    return names


def listing_problems(name: str, tool) -> list[str]:
    """What is wrong with one tools/list entry (empty when nothing)."""
    problems = []
    if tool.name != name:
        problems.append(f"{name}: listed under the name {tool.name!r}")
    if not (isinstance(tool.description, str) and tool.description.strip()):
        problems.append(f"{name}: no description")
    for kind, schema in (("inputSchema", tool.input_schema), ("outputSchema", tool.output_schema)):
        if not isinstance(schema, dict):
            problems.append(f"{name}: {kind} missing")
            continue
        if schema.get("type") != "object":
            problems.append(f"{name}: {kind} root type is {schema.get('type')!r}, not 'object'")
        try:
            validator_for_schema(schema)
        except Exception as e:  # jsonschema.SchemaError
            problems.append(f"{name}: {kind} is not a valid JSON Schema: {e}")
    ann = tool.annotations
    if ann is None:
        problems.append(f"{name}: no annotations")
    else:
        dumped = ann.model_dump(by_alias=True, exclude_none=True)
        for hint in HINTS:
            if not isinstance(dumped.get(hint), bool):
                problems.append(f"{name}: annotation {hint} is {dumped.get(hint)!r}, not a boolean")
        if dumped.get("readOnlyHint") is True and dumped.get("destructiveHint") is True:
            problems.append(f"{name}: annotations say read-only and destructive at once: {dumped}")
        # A read publishes the honest hints, the seed tools too: clients act
        # on them (Codex CLI, unattended, refuses a tool hinted destructive).
        tier = (listing_meta(tool) or {}).get("tmux-mcp/tier")
        if tier == "readonly":
            hints = {h: dumped.get(h) for h in HINTS}
            honest = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
            if hints != honest:
                problems.append(f"{name}: a read tool's hints are {hints}, not {honest}")
    return problems


def test_readme_table_matches_the_catalog():
    documented = readme_tools()
    catalog = source_catalog()
    assert sorted(documented) == sorted(catalog), (
        f"README tools table {sorted(documented)} != CATALOG {sorted(catalog)}: "
        f"undocumented {sorted(set(catalog) - set(documented))}, "
        f"documented but gone {sorted(set(documented) - set(catalog))}")
    assert "on" in documented.values() and "opt-in" in documented.values(), documented
    # A tool on by default is read-only; one "tier" is above the default tier.
    tiers = readme_tiers()
    wrong = {n: (d, tiers[n]) for n, d in documented.items()
             if (d == "on") != (tiers[n] == "readonly") and d != "opt-in" and not companion_of(d)}
    assert not wrong, f"README: 'on' tools must be readonly and 'tier' tools above it: {wrong}"
    # A companion names a tool of the table that is not itself a companion.
    bad = {n: d for n, d in documented.items()
           if companion_of(d) and documented.get(companion_of(d), "with").startswith("with")}
    assert not bad, f"README: a 'with `X`' tool must name a tool of the table: {bad}"


@async_test(45)
async def test_every_tool_listed_when_enabled(tmux_server):
    documented = readme_tools()
    catalog = source_catalog()
    async with mcp_session(tmux_server, *enable_all(documented)) as s:
        listing = await s.list_tools()
        tools = await list_tools(s)
        caps = await call_ok(s, "tmux_capabilities")
    order = [t.name for t in listing.tools]
    assert sorted(tools) == sorted(documented), (
        f"tools/list with every opt-in tool enabled: missing {sorted(set(documented) - set(tools))}, "
        f"not in the README table {sorted(set(tools) - set(documented))}")
    assert order == catalog, f"tools/list order {order} is not the catalog order {catalog}"
    assert caps["data"]["enabled_tools"] == order, (caps["data"]["enabled_tools"], order)
    problems = [p for name in order for p in listing_problems(name, tools[name])]
    assert not problems, "\n".join(problems)
    tiers = readme_tiers()
    published = {name: (listing_meta(t) or {}).get("tmux-mcp/tier") for name, t in tools.items()}
    assert published == tiers, f"published tiers (tools/list _meta) differ from the README's: {published} != {tiers}"


def listing_meta(tool):
    return getattr(tool, "meta", None) or (tool.model_extra or {}).get("_meta")


@async_test(45)
async def test_opt_in_tools_absent_by_default(tmux_server):
    documented = readme_tools()
    defaults = [n for n, d in documented.items() if d == "on"]
    opt_in = [n for n, d in documented.items() if d != "on"]
    async with mcp_session(tmux_server) as s:
        tools = await list_tools(s)
        problems = [p for name in defaults if name in tools for p in listing_problems(name, tools[name])]
        denied = {}
        for name in opt_in:
            denied[name] = await call(s, name, {})
    assert sorted(tools) == sorted(defaults), (
        f"default tools/list: missing {sorted(set(defaults) - set(tools))}, "
        f"listed although opt-in {sorted(set(tools) & set(opt_in))}, "
        f"unknown {sorted(set(tools) - set(documented))}")
    assert not problems, "\n".join(problems)
    # Calling a hidden tool anyway is refused by policy before anything else
    # (even before its arguments are checked), and nothing reaches tmux.
    for name, res in denied.items():
        assert res.is_error, f"{name} ran although not enabled: {res!r}"
        if isinstance(res.structured, dict) and "ok" in res.structured:  # seed family envelope
            err = res.structured["error"]
            assert (err["code"], err["delivery"]) == ("policy_denied", "not_sent"), f"{name}: {res!r}"
        else:  # libtmux family: text naming the switch
            assert "--enable-tool" in res.text and name in res.text, f"{name}: {res!r}"
