"""tmux_snapshot criteria through the official SDK (issue "Exact and safe under
scrutiny", items 7 and 9; docs/spec.md A.1 criteria_schema, A.2.3 criteria).

The published criteria_schema is checked by Python's jsonschema (a validator the
project did not write) and must agree with the broker on every sample."""

import jsonschema

from harness import async_test, call, call_ok, mcp_session


def crit(entity, where):
    return {"profile": "libtmux-ruby.where", "version": 1, "entity": entity, "where": where}


SAMPLES = [
    ("pane", crit("pane", {"dead": False, "width": {"gte": 1}}), True),
    ("pane", crit("pane", {"window": {"is": {"panes": {"some": {"active": True}}}}}), True),
    ("window", crit("window", {"activePane": {"isNot": {"currentCommand": {"endsWith": "x"}}}}), True),
    ("session", crit("session", {"and": [{"windowCount": {"gt": 0}}, {"not": {"name": ""}}]}), True),
    ("window", crit("window", {"width": "wide"}), False),
    ("pane", crit("pane", {"deadStatus": {"in": [1, "one"]}}), False),
    ("pane", crit("pane", {"window": {"every": {}}}), False),
    ("window_link", crit("window_link", {"session": {"is": None}}), False),
    ("pane", crit("pane", {"or": [{"id": "%0"}, {"unknownField": 1}]}), False),
]


@async_test()
async def test_criteria_schema_agrees_with_the_broker(tmux_server):
    tmux_server.tmux("split-window", "-d", "sleep 1000")
    async with mcp_session(tmux_server) as s:
        caps = await call_ok(s, "tmux_capabilities")
        schema = caps["data"]["criteria_schema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        v = jsonschema.Draft202012Validator(schema)
        for entity, criteria, valid in SAMPLES:
            assert v.is_valid(criteria) is valid, ("criteria_schema", criteria)
            r = await call(s, "tmux_snapshot", {"entity": entity, "criteria": criteria})
            sc = r.structured
            assert (sc["ok"] is True) is valid, (criteria, sc)
            if not valid:
                assert sc["error"]["code"] == "invalid_filter", sc
                assert sc["error"]["delivery"] == "not_sent", sc
                assert "criteria." in r.text, (r.text, sc)


@async_test()
async def test_relation_predicates_select_by_related_records(tmux_server):
    w = tmux_server.tmux("new-window", "-d", "-P", "-F", "#{window_id}", "sleep 1000").strip()
    p = tmux_server.tmux("split-window", "-d", "-t", w, "-P", "-F", "#{pane_id}", "sleep 1001").strip()
    async with mcp_session(tmux_server) as s:
        sc = await call_ok(s, "tmux_snapshot", {"entity": "window",
                                                "criteria": crit("window", {"panes": {"some": {"id": p}}})})
        assert [i["fields"]["id"] for i in sc["data"]["items"]] == [w], sc
        sc = await call_ok(s, "tmux_snapshot", {"entity": "pane",
                                                "criteria": crit("pane", {"window": {"isNot": {"id": w}}})})
        assert [i["fields"]["id"] for i in sc["data"]["items"]] == ["%0"], sc
