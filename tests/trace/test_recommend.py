"""``recommend``: the strategy, the plugin keywords and the reasons."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("torch")

from regcomp_lint.plan import Plan  # noqa: E402
from regcomp_lint.trace import recommend as rec_mod  # noqa: E402
from regcomp_lint.trace.verdicts import RegionalRun, Verdict  # noqa: E402
from tests.trace.conftest import traced  # noqa: E402


def test_regional_with_fullgraph_for_gpt2():
    rec = traced("gpt2").recommendation
    assert rec.strategy == "regional" and rec.regions == ["transformer.h"]
    assert rec.plugin == {"backend": "inductor", "fullgraph": True, "use_regional_compilation": True}
    assert rec.saving and 0 < rec.saving["fraction"] < 1
    assert rec.saving["traced_ops_regional"] < rec.saving["traced_ops_full"]


def test_backend_and_mode_go_into_the_plugin():
    analysis = traced("vit_sequential")
    rec = rec_mod.recommend(analysis, backend="eager", mode="max-autotune")
    assert rec.plugin["backend"] == "eager" and rec.plugin["mode"] == "max-autotune"


def test_a_failing_region_turns_fullgraph_off_and_says_where():
    rec = traced("planted_breaks").recommendation
    assert rec.strategy == "regional" and rec.plugin["fullgraph"] is False
    reason = next(w for w in rec.why if w.startswith("fullgraph=False"))
    assert "head" in reason and "planted_breaks.py:26" in reason and "GB0059" in reason


def test_per_block_recompiles_name_the_fix():
    why = traced("layer_idx").recommendation.why
    assert any("self.layer_idx" in w and rec_mod.PER_BLOCK_FIX in w for w in why)


def test_no_groups_is_full_with_the_whole_model_verdict():
    analysis = SimpleNamespace(
        regions=SimpleNamespace(groups=[]),
        repeated_block_paths=[],
        explain=SimpleNamespace(graph_count=2),
        regional=RegionalRun(fullgraph={"": Verdict(False, "compiled")}),
        whole=Verdict(False, "compiled", "GB0059", "Failed to trace builtin operator", "m.py", 3),
    )
    rec = rec_mod.recommend(analysis)
    assert rec.strategy == "full" and rec.regions == []
    assert rec.plugin == {"backend": "inductor", "fullgraph": False, "use_regional_compilation": False}
    assert any("m.py:3" in w and "keep fullgraph=False" in w for w in rec.why)


def test_no_graph_at_all_is_none():
    analysis = SimpleNamespace(explain=SimpleNamespace(graph_count=0), regions=None)
    rec = rec_mod.recommend(analysis)
    assert rec.strategy == "none" and rec.plugin == {"backend": "no"}


def test_the_plan_carries_the_recommendation():
    analysis = traced("gpt2")
    plan = analysis.recommendation.plan(analysis.model_name)
    assert isinstance(plan, Plan)
    assert (plan.strategy, plan.regions, plan.model) == ("regional", ["transformer.h"], "GPT2LMHeadModel")
    assert plan.plugin["use_regional_compilation"] is True


def test_a_sequential_stack_is_applied_with_apply_plan_not_a_plugin_line_that_compiles_it_whole():
    """Accelerate's regional compilation splits only an nn.ModuleList of one class: for the ViT's
    nn.Sequential the plugin line would be a full compile, so the report must not recommend it as
    regional and then say Accelerate compiles the stack whole."""
    from regcomp_lint.trace.report import how_to_apply, to_text

    analysis = traced("vit_sequential")
    rec = analysis.recommendation
    assert rec.strategy == "regional" and rec.accelerate_splits is False
    lines = how_to_apply(rec)
    assert lines[0].startswith("regcomp_lint.apply_plan(model, plan)")
    assert "would compile blocks whole" in lines[1]
    text = to_text(analysis)
    after = text.split("Recommendation: regional over blocks\n", 1)[1].splitlines()
    assert after[0].strip().startswith("regcomp_lint.apply_plan"), after[:3]
    block_line = next(w for w in rec.why if w.startswith("blocks[0..3]"))
    assert "when apply_plan compiles them one by one" in block_line and "does not split blocks" in block_line


def test_a_module_list_keeps_the_plugin_line():
    from regcomp_lint.trace.report import how_to_apply

    rec = traced("gpt2").recommendation
    assert rec.accelerate_splits is True
    assert how_to_apply(rec) == ['TorchDynamoPlugin(backend="inductor", fullgraph=True, use_regional_compilation=True)']


def _diffusers_like(named):
    """A model that declares its blocks the way diffusers' ModelMixin subclasses do."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return torch.relu(self.proj(x)) + x

    class Denoiser(nn.Module):
        _repeated_blocks = named

        def __init__(self):
            super().__init__()
            self.transformer_blocks = nn.ModuleList(Block() for _ in range(3))
            self.proj_out = nn.Linear(8, 8)

        def forward(self, x):
            for block in self.transformer_blocks:
                x = block(x)
            return self.proj_out(x)

    return Denoiser(), torch.randn(2, 8)


def test_a_diffusers_model_is_told_its_own_regional_compile():
    from regcomp_lint.api import trace_model
    from regcomp_lint.trace.report import how_to_apply

    model, x = _diffusers_like(["Block"])
    rec = trace_model(model, (x,), device="cpu").recommendation
    assert rec.strategy == "regional" and rec.repeated_blocks == ("Block",)
    assert rec.plan("Denoiser").repeated_blocks == ["Block"]
    lines = how_to_apply(rec)
    assert lines[0].startswith('model.compile_repeated_blocks(backend="inductor", fullgraph=True)')
    assert lines[-1].startswith("TorchDynamoPlugin(")
    assert any("diffusers' _repeated_blocks" in w and "3 instances" in w for w in rec.why)
    assert not any("uncompiled" in w for w in rec.why)


def test_declared_blocks_the_model_lacks_are_not_recommended():
    """diffusers' compile_repeated_blocks raises ValueError when no submodule has a named class:
    neither the report's line nor the plan may ask for it."""
    from regcomp_lint.api import trace_model
    from regcomp_lint.trace.report import how_to_apply

    model, x = _diffusers_like(["OtherBlock"])
    rec = trace_model(model, (x,), device="cpu").recommendation
    assert rec.strategy == "regional" and rec.regions == ["transformer_blocks"] and rec.repeated_blocks == ()
    assert rec.plan("Denoiser").repeated_blocks == []
    assert not any("compile_repeated_blocks" in line for line in how_to_apply(rec))
    assert any("would raise ValueError" in w for w in rec.why)


def test_a_model_without_repeated_blocks_attribute_gets_no_diffusers_line():
    rec = traced("gpt2").recommendation
    assert rec.repeated_blocks == () and not any("compile_repeated_blocks" in line for line in rec.why)
