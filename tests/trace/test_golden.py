"""Golden JSON reports of the fixture models in ``fixtures/trace/models/`` (stable fields only).

Each ``fixtures/trace/golden/<name>.json`` is the ``trace --format json`` report of
``fixtures/trace/models/<name>.py`` on the CPU without ``timings``, notes and evidence details,
with file paths relative to the repository. Regenerate after an intended change, then review the
diff by eye::

    REGCOMP_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/trace/test_golden.py

A regenerated golden file cannot bless a wrong report on its own: the tests below check, against
the fixture's source, that every ``# planted: GBnnnn`` line is a break in the golden report (and
nothing else is), that each break is in the region that holds it, and what the recommendation is.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.trace.conftest import GOLDEN, MODELS, REPO, TRACED, traced

pytest.importorskip("torch")

UPDATE = os.environ.get("REGCOMP_UPDATE_GOLDEN", "") not in ("", "0")
PLANTED_BREAK = re.compile(r"#\s*planted:\s*(GB\d{4})")
PLANTED_RECOMPILE = re.compile(r"#\s*planted:\s*recompile\s+(\S+)")
SITE_PACKAGES = re.compile(r"^.*?[/\\](?:site|dist)-packages[/\\]")


def _paths(value):
    """Repository-relative paths (whatever the working directory was), site-packages stripped."""
    if isinstance(value, str):
        value = value.replace(str(REPO) + os.sep, "")
        return SITE_PACKAGES.sub("", value)
    if isinstance(value, list):
        return [_paths(v) for v in value]
    if isinstance(value, dict):
        return {k: _paths(v) for k, v in value.items()}
    return value


def stable_report(name: str) -> dict:
    from regcomp_lint.trace.report import to_json

    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        data = to_json(traced(name))
    finally:
        os.chdir(cwd)
    rec = data["recommendation"]
    return _paths(
        {
            "model": data["model"],
            "device": data["device"],
            "groups": [
                {k: g[k] for k in ("name", "class", "count", "container", "accelerate_regionalizes")}
                for g in data["groups"]
            ],
            "regions": [
                {k: r[k] for k in ("name", "class", "group", "params", "graph_breaks", "fullgraph")}
                for r in data["regions"]
            ],
            "graph_breaks": [
                {k: b[k] for k in ("region", "file", "line", "gb_id", "code", "reason")} for b in data["graph_breaks"]
            ],
            "recompiles": [{k: r[k] for k in ("region", "reason", "kind", "file", "line")} for r in data["recompiles"]],
            "recompile_limit_hit": data["recompile_limit_hit"],
            "fullgraph_ok": data["fullgraph_ok"],
            "recommendation": {k: rec[k] for k in ("strategy", "regions", "plugin", "why")},
        }
    )


def planted(name: str, pattern) -> set[tuple[int, str]]:
    lines = (MODELS / f"{name}.py").read_text(encoding="utf-8").splitlines()
    return {(number, m.group(1)) for number, text in enumerate(lines, 1) if (m := pattern.search(text))}


@pytest.mark.parametrize("name", TRACED)
def test_golden_report(name):
    report = stable_report(name)
    path = GOLDEN / f"{name}.json"
    text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing {path.name}; run with REGCOMP_UPDATE_GOLDEN=1 and review it"
    assert json.loads(path.read_text(encoding="utf-8")) == report, (
        f"{name}: the trace report changed; if intended, regenerate with REGCOMP_UPDATE_GOLDEN=1 and review the diff"
    )


@pytest.mark.parametrize("name", TRACED)
def test_golden_breaks_are_the_planted_lines(name):
    golden = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    fixture = f"fixtures/trace/models/{name}.py"
    found = {(b["line"], b["gb_id"]) for b in golden["graph_breaks"] if b["file"] == fixture}
    assert found == planted(name, PLANTED_BREAK)
    assert all(b["file"] == fixture for b in golden["graph_breaks"]), "a break outside the fixture file"


@pytest.mark.parametrize("name", TRACED)
def test_golden_attribute_recompiles_are_the_planted_lines(name):
    golden = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    fixture = f"fixtures/trace/models/{name}.py"
    found = {
        (r["line"], r["reason"].split(" == ")[0])
        for r in golden["recompiles"]
        if r["kind"] == "attribute" and r["file"] == fixture
    }
    assert found == planted(name, PLANTED_RECOMPILE)


# -- what each fixture is for (independent of the exact golden text) ---------------------------


def test_gpt2_regional_over_the_blocks_with_fullgraph():
    report = stable_report("gpt2")
    assert report["groups"] == [
        {
            "name": "transformer.h",
            "class": "GPT2Block",
            "count": 4,
            "container": "ModuleList",
            "accelerate_regionalizes": True,
        }
    ]
    assert report["graph_breaks"] == []
    assert report["fullgraph_ok"] is True
    assert all(r["fullgraph"] is True for r in report["regions"])
    rec = report["recommendation"]
    assert rec["strategy"] == "regional" and rec["regions"] == ["transformer.h"]
    assert rec["plugin"] == {"backend": "inductor", "fullgraph": True, "use_regional_compilation": True}


def test_vit_sequential_is_a_group_accelerate_does_not_regionalize():
    report = stable_report("vit_sequential")
    assert report["groups"] == [
        {
            "name": "blocks",
            "class": "EncoderBlock",
            "count": 4,
            "container": "Sequential",
            "accelerate_regionalizes": False,
        }
    ]
    assert [r["name"] for r in report["regions"]] == [
        "patch_embed",
        "blocks.0",
        "blocks.1",
        "blocks.2",
        "blocks.3",
        "norm",
        "head",
    ]
    why = " ".join(report["recommendation"]["why"])
    assert "nn.Sequential" in why and "compile_regions" in why
    assert report["graph_breaks"] == [] and report["fullgraph_ok"] is True


def test_planted_breaks_each_in_its_region():
    report = stable_report("planted_breaks")
    by_line = {b["line"]: b for b in report["graph_breaks"]}
    (block_line,) = (n for n, gb in planted("planted_breaks", PLANTED_BREAK) if gb == "GB0124")
    (head_line,) = (n for n, gb in planted("planted_breaks", PLANTED_BREAK) if gb == "GB0059")
    assert by_line[block_line]["region"] == "blocks[0..2]" and by_line[block_line]["code"] == "RC201"
    assert by_line[head_line]["region"] == "head" and by_line[head_line]["code"] == "RC203"
    regions = {r["name"]: r for r in report["regions"]}
    assert [regions[f"blocks.{i}"]["graph_breaks"] for i in range(3)] == [1, 1, 1]
    assert regions["head"]["graph_breaks"] == 1 and regions["embed"]["graph_breaks"] == 0
    # .item() is captured under fullgraph=True (GB0124), print is not
    assert all(regions[f"blocks.{i}"]["fullgraph"] is True for i in range(3))
    assert regions["head"]["fullgraph"] is False
    assert report["fullgraph_ok"] is False
    rec = report["recommendation"]
    assert rec["strategy"] == "regional" and rec["plugin"]["fullgraph"] is False
    assert any("head" in w and f"planted_breaks.py:{head_line}" in w for w in rec["why"])


def test_layer_idx_recompiles_every_block_past_the_limit():
    report = stable_report("layer_idx")
    attribute = [r for r in report["recompiles"] if r["kind"] == "attribute"]
    assert attribute and all(r["reason"].startswith("self.layer_idx") for r in attribute)
    assert {r["region"] for r in attribute} == {"layers.1", "layers.2"}  # the sampled followers
    assert "layers.8 .. layers.9" in report["recompile_limit_hit"]
    why = " ".join(report["recommendation"]["why"])
    assert "allow_unspec_int_on_nn_module" in why and "run eagerly" in why
