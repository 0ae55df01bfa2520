"""``report``: the text report people read and the JSON other tools rely on."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from regcomp_lint.trace.report import STABLE_KEYS, to_json, to_text  # noqa: E402
from tests.trace.conftest import traced  # noqa: E402


@pytest.fixture
def text_of(in_repo):
    return lambda name: to_text(traced(name))


def test_the_tree_collapses_a_group(text_of):
    text = text_of("gpt2")
    lines = text.splitlines()
    assert lines[0] == "GPT2LMHeadModel on cpu, batch input_ids=int64[2, 16]"
    tree = lines[lines.index("Regions") : lines.index("Graph breaks: none")]
    (group_line,) = (line for line in tree if "GPT2Block" in line)
    assert "h[0..3]  GPT2Block ×4  50K params each  fullgraph ok" in group_line
    assert "transformer.h.1" not in "\n".join(tree) and "GPT2Block ×4" in group_line
    assert "Recommendation: regional over transformer.h" in text
    assert 'TorchDynamoPlugin(backend="inductor", fullgraph=True, use_regional_compilation=True)' in text


def test_breaks_with_code_frame_and_hint(text_of):
    text = text_of("planted_breaks")
    assert "Graph breaks (2)" in text
    lines = text.splitlines()
    first = lines.index(
        next(line for line in lines if line.startswith("  blocks[0..2]: fixtures/trace/models/planted_breaks.py:16"))
    )
    assert "GB0124" in lines[first] and "[RC201]" in lines[first]
    assert lines[first + 1] == "       16 | scale = x.abs().mean().item()  # planted: GB0124"
    assert lines[first + 2].strip().startswith("= hint: Set `torch._dynamo.config.capture_scalar_outputs = True`")
    assert any(
        line.startswith("  head: fixtures/trace/models/planted_breaks.py:26") and "GB0059" in line for line in lines
    )
    assert "head  Head  68 params  fullgraph FAILS (GB0059)  1 break" in text
    assert "fullgraph=True on the whole model: fails at fixtures/trace/models/planted_breaks.py:26" in text


def test_recompiles_and_the_limit(text_of):
    text = text_of("layer_idx")
    assert "layers.1, layers.2: self.layer_idx changed (fixtures/trace/models/layer_idx.py:19)" in text
    assert (
        "! every block of layers[0..9] recompiles (seen on layers.1, layers.2: a value of its own in the guard); with recompile_limit (8) layers.8 .. layers.9"
        in text
    )


def test_sequential_group_is_collapsed_and_explained(text_of):
    text = text_of("vit_sequential")
    assert "blocks[0..3]  EncoderBlock ×4" in text
    assert "does not split blocks (an nn.Sequential" in text and "regcomp_lint.apply_plan(model, plan)" in text


def test_json_has_the_stable_keys_and_is_serializable(in_repo):
    data = to_json(traced("planted_breaks"))
    assert set(STABLE_KEYS) <= set(data)
    json.dumps(data)
    assert data["groups"][0]["name"] == "blocks" and data["groups"][0]["count"] == 3
    assert {"name", "class", "group", "params", "graph_breaks", "fullgraph"} <= set(data["regions"][0])
    assert {"region", "file", "line", "gb_id", "code", "reason"} <= set(data["graph_breaks"][0])
    assert data["graph_breaks"][0]["file"] == "fixtures/trace/models/planted_breaks.py"
    assert {"region", "reason"} <= set(data["recompiles"][0])
    assert {"strategy", "regions", "plugin", "why"} <= set(data["recommendation"])
    assert data["fullgraph_ok"] is False and isinstance(data["timings"]["total"], float)
