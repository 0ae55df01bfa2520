"""The plan format shared by ``regcomp-fix --plan`` and the tracer: round trips and strict errors."""

from __future__ import annotations

import json

import pytest

from regcomp_lint.plan import PLAN_VERSION, Plan, PlanError

FULL_DOCUMENT = {
    "version": 1,
    "strategy": "regional",
    "regions": ["transformer.h"],
    "plugin": {
        "backend": "inductor",
        "mode": None,
        "fullgraph": True,
        "dynamic": False,
        "use_regional_compilation": True,
    },
    "why": ["24 identical GPT2Block regions"],
    "model": "GPT",
}


def test_round_trip_through_json_keeps_every_field():
    plan = Plan.from_dict(FULL_DOCUMENT)
    again = Plan.from_json(plan.to_json())
    assert again == plan
    assert json.loads(plan.to_json()) == FULL_DOCUMENT


def test_dump_and_load_a_file(tmp_path):
    path = tmp_path / "plan.json"
    Plan(strategy="full", plugin={"backend": "eager"}, why=["no repeated blocks"]).dump(path)
    loaded = Plan.load(path)
    assert loaded.strategy == "full"
    assert loaded.plugin == {"backend": "eager"}
    assert loaded.why == ["no repeated blocks"]
    assert loaded.version == PLAN_VERSION
    assert path.read_text().endswith("\n")


def test_minimal_document_gets_defaults():
    plan = Plan.from_json('{"version": 1, "strategy": "none"}')
    assert plan.regions == [] and plan.plugin == {} and plan.why == [] and plan.model is None
    assert plan.method is None


@pytest.mark.parametrize("method", ["blocks", "split", "nested"])
def test_method_round_trips_and_is_written_only_when_set(method):
    document = dict(FULL_DOCUMENT, method=method)
    plan = Plan.from_dict(document)
    assert plan.method == method
    assert json.loads(plan.to_json()) == document
    assert Plan.from_json(plan.to_json()) == plan
    assert "method" not in Plan.from_dict(FULL_DOCUMENT).to_dict()


def test_repeated_blocks_round_trip_and_are_written_only_when_set():
    document = dict(FULL_DOCUMENT, repeated_blocks=["FluxTransformerBlock", "FluxSingleTransformerBlock"])
    plan = Plan.from_dict(document)
    assert plan.repeated_blocks == ["FluxTransformerBlock", "FluxSingleTransformerBlock"]
    assert json.loads(plan.to_json()) == document
    assert Plan.from_json(plan.to_json()) == plan
    assert "repeated_blocks" not in Plan.from_dict(FULL_DOCUMENT).to_dict()
    assert Plan.from_dict(FULL_DOCUMENT).repeated_blocks == []


def test_method_does_not_change_the_plugin_settings():
    # regcomp-fix applies plugin_settings(); Accelerate's plugin cannot express the method
    nested = Plan.from_dict(dict(FULL_DOCUMENT, method="nested"))
    assert nested.plugin_settings() == Plan.from_dict(FULL_DOCUMENT).plugin_settings()


@pytest.mark.parametrize(
    "strategy,plugin,expected",
    [
        ("full", {}, {"use_regional_compilation": False}),
        ("regional", {"backend": "eager"}, {"backend": "eager", "use_regional_compilation": True}),
        ("none", {}, {"backend": "no"}),
        (
            "full",
            {"mode": "max-autotune", "fullgraph": True},
            {"mode": "max-autotune", "fullgraph": True, "use_regional_compilation": False},
        ),
    ],
)
def test_plugin_settings_fill_in_what_the_strategy_implies(strategy, plugin, expected):
    assert Plan(strategy=strategy, plugin=plugin).plugin_settings() == expected


@pytest.mark.parametrize(
    "document,message",
    [
        ({"version": 2, "strategy": "full"}, "unknown version 2; this regcomp-lint reads version 1"),
        ({"version": "1", "strategy": "full"}, 'version must be an integer, got "1"'),
        ({"version": True, "strategy": "full"}, "version must be an integer, got true"),
        ({"strategy": "full"}, 'missing "version"'),
        ({"version": 1}, 'missing "strategy"'),
        ({"version": 1, "strategy": "partial"}, 'strategy must be one of full, regional, none, got "partial"'),
        ({"version": 1, "strategy": "full", "extra": 1}, 'unknown key "extra"'),
        ({"version": 1, "strategy": "full", "plugin": {"backnd": "eager"}}, 'unknown plugin key "backnd"'),
        (
            {"version": 1, "strategy": "full", "plugin": {"fullgraph": "yes"}},
            'plugin.fullgraph must be true/false, got "yes"',
        ),
        ({"version": 1, "strategy": "full", "plugin": {"backend": 3}}, "plugin.backend must be a string, got 3"),
        (
            {"version": 1, "strategy": "full", "plugin": {"dynamic": 1}},
            "plugin.dynamic must be true/false or null, got 1",
        ),
        ({"version": 1, "strategy": "full", "plugin": []}, "plugin must be an object, got []"),
        ({"version": 1, "strategy": "full", "regions": "transformer.h"}, 'regions must be a list, got "transformer.h"'),
        ({"version": 1, "strategy": "full", "regions": [1]}, "regions[0] must be a string, got 1"),
        ({"version": 1, "strategy": "full", "why": [None]}, "why[0] must be a string, got null"),
        ({"version": 1, "strategy": "full", "model": 5}, "model must be a string or null, got 5"),
        (
            {"version": 1, "strategy": "regional", "plugin": {"use_regional_compilation": False}},
            "strategy is regional but plugin.use_regional_compilation is false",
        ),
        (
            {"version": 1, "strategy": "full", "plugin": {"use_regional_compilation": True}},
            "strategy is full but plugin.use_regional_compilation is true",
        ),
        (
            {"version": 1, "strategy": "none", "plugin": {"backend": "inductor"}},
            'strategy is none but plugin.backend is "inductor"',
        ),
        ({"version": 1, "strategy": "full", "plugin": {"backend": "NO"}}, 'use strategy "none"'),
        ([1, 2], "the document must be a JSON object, got list"),
        (
            {"version": 1, "strategy": "regional", "method": "per-layer"},
            'method must be one of blocks, split, nested, got "per-layer"',
        ),
        ({"version": 1, "strategy": "regional", "method": 1}, "method must be a string or null, got 1"),
        (
            {"version": 1, "strategy": "full", "method": "nested"},
            'method "nested" is for strategy regional only, but strategy is "full"',
        ),
        ({"version": 1, "strategy": "none", "method": "blocks"}, 'method "blocks" is for strategy regional only'),
        (
            {"version": 1, "strategy": "full", "repeated_blocks": ["BasicTransformerBlock"]},
            'repeated_blocks is for strategy regional only, but strategy is "full"',
        ),
        (
            {"version": 1, "strategy": "regional", "repeated_blocks": "BasicTransformerBlock"},
            'repeated_blocks must be a list, got "BasicTransformerBlock"',
        ),
        ({"version": 1, "strategy": "regional", "repeated_blocks": [3]}, "repeated_blocks[0] must be a string, got 3"),
    ],
)
def test_invalid_documents_say_what_is_wrong(document, message):
    with pytest.raises(PlanError) as info:
        Plan.from_json(json.dumps(document))
    assert message in str(info.value)
    assert str(info.value).startswith("plan: ")


def test_constructing_an_invalid_plan_in_code_fails_too():
    with pytest.raises(PlanError, match="strategy must be one of"):
        Plan(strategy="fast")


def test_bad_json_names_line_and_column():
    with pytest.raises(PlanError, match=r"not valid JSON: .* at line 2 column"):
        Plan.from_json('{"version": 1,\n "strategy": }')


def test_load_names_the_file_in_errors(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text('{"version": 9, "strategy": "full"}')
    with pytest.raises(PlanError) as info:
        Plan.load(path)
    assert str(info.value).startswith(f"{path}: plan: unknown version 9")


def test_load_missing_file_is_a_plan_error(tmp_path):
    with pytest.raises(PlanError, match="cannot read"):
        Plan.load(tmp_path / "absent.json")


def test_load_non_utf8_file_is_a_plan_error(tmp_path):
    path = tmp_path / "plan.json"
    path.write_bytes(b'{"version": 1, "strategy": "\xff"}')
    with pytest.raises(PlanError, match="not UTF-8"):
        Plan.load(path)
