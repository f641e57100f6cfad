"""The contract tools publish exactly the schemas in broker/contracts/.

Compared through the official MCP SDK (what a client really receives from
tools/list) against the files in this repository, so the check runs on a fresh
clone and fails loudly when a contract file is missing. A second test checks
the repository's copies (broker/contracts/, tests/seeds/) against the shared
originals in ../shared/ when that directory is beside the checkout (CI has it;
anywhere else it is reported as skipped, never as passed).
"""

import json
import os

import pytest

from harness import REPO, async_test, enable_all, list_tools, mcp_session, readme_tools

CONTRACTS = REPO / "broker" / "contracts"
SEEDS = REPO / "tests" / "seeds"
SHARED = REPO.parent / "shared"
# The tools whose published schemas are fixed contracts (docs/spec.md A.3, B.1, B.2).
CONTRACT_TOOLS = ("tmux_capture", "capture_pane", "snapshot_pane")
KINDS = {"input": "input_schema", "output": "output_schema"}
# Contracts this project authored, with no original in the shared directory:
# tmux_run's (docs/spec.md A.8) and list_servers' result (docs/spec.md B.6),
# the schemas they publish, checked above.
OWN = {"tmux_run.input.json", "tmux_run.output.json", "list_servers.output.json"}


def contract(tool: str, kind: str) -> dict:
    path = CONTRACTS / f"{tool}.{kind}.json"
    assert path.is_file(), f"contract file {path} is missing"
    return json.loads(path.read_text())


@async_test(45)
async def test_published_schemas_equal_contract_files(tmux_server):
    async with mcp_session(tmux_server, *enable_all(readme_tools())) as s:
        tools = await list_tools(s)
    # Every `<tool>.<kind>.json` naming a published tool is what that tool
    # publishes (other files, e.g. capture_pane.python.input.json, document the
    # Python original and are not published).
    pairs = {(t, k) for t in CONTRACT_TOOLS for k in KINDS}
    for path in CONTRACTS.glob("*.json"):
        tool, _, kind = path.name.removesuffix(".json").partition(".")
        if tool in tools and kind in KINDS:
            pairs.add((tool, kind))
    problems = []
    for tool, kind in sorted(pairs):
        want = contract(tool, kind)
        assert tool in tools, f"{tool} is not listed although every tool is enabled: {sorted(tools)}"
        got = getattr(tools[tool], KINDS[kind])
        if got != want:
            problems.append(f"{tool} {kind}Schema differs from broker/contracts/{tool}.{kind}.json:\n"
                            f"published {json.dumps(got)[:1500]}\nfile      {json.dumps(want)[:1500]}")
        elif json.dumps(got) != json.dumps(want):
            problems.append(f"{tool} {kind}Schema: same content, other key order than the contract file")
    assert not problems, "\n\n".join(problems)


def test_repository_copies_equal_shared_originals():
    if not SHARED.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"CI must have the shared reference directory beside the checkout: {SHARED} is missing")
        pytest.skip(f"the project's shared reference files (the original contracts and seed pages) are not at "
                    f"{SHARED}, a directory `shared` beside this checkout that the project's CI provides; "
                    f"without it there is nothing to compare broker/contracts/ and tests/seeds/ with "
                    f"(your clone is not at fault)")
    problems = []
    ours = sorted(p.name for p in CONTRACTS.glob("*.json") if p.name not in OWN)
    theirs = sorted(p.name for p in (SHARED / "contracts").glob("*.json"))
    if ours != theirs:
        problems.append(f"broker/contracts/ has {ours}, {SHARED}/contracts/ has {theirs}")
    for name in sorted(set(ours) & set(theirs)):
        if (CONTRACTS / name).read_bytes() != (SHARED / "contracts" / name).read_bytes():
            problems.append(f"broker/contracts/{name} differs from {SHARED}/contracts/{name}")
    seeds = sorted(SEEDS.glob("*.txt"))
    assert seeds, f"{SEEDS} holds no seed page"
    for seed in seeds:
        original = SHARED / "seeds" / seed.name
        if not original.is_file():
            problems.append(f"tests/seeds/{seed.name} has no original in {SHARED}/seeds/")
        elif seed.read_bytes() != original.read_bytes():
            problems.append(f"tests/seeds/{seed.name} differs from {original}")
    assert not problems, "\n".join(problems)
