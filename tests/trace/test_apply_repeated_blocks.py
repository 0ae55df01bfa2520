"""``apply_plan`` and trace's plan for a diffusers-style model whose ``_repeated_blocks`` sit in
no one container (``fixtures/trace/models/unet_like.py``: the layout of ``UNet2DConditionModel``;
diffusers itself is not installed here)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from regcomp_lint.plan import Plan  # noqa: E402
from regcomp_lint.trace import apply as apply_module  # noqa: E402
from regcomp_lint.trace.apply import ApplyError, apply_plan  # noqa: E402
from tests.trace.conftest import load_fixture, traced  # noqa: E402

UNET = load_fixture("unet_like")
NAMED = "BasicTransformerBlock"


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _plan(regions=(), method=None, backend="eager", blocks=(NAMED,)):
    return Plan(
        strategy="regional",
        regions=list(regions),
        repeated_blocks=list(blocks),
        method=method,
        plugin={"backend": backend, "use_regional_compilation": True},
    )


def _compiled_paths(model) -> list[str]:
    return [name for name, m in model.named_modules() if getattr(m, "_compiled_call_impl", None) is not None]


def _assert_matches_eager(plan):
    eager, compiled = UNET.make_model(), UNET.make_model()
    x = UNET.make_inputs()
    ref = eager(x)
    ref.square().mean().backward()
    apply_plan(compiled, plan)
    out = compiled(x)
    out.square().mean().backward()
    torch.testing.assert_close(out, ref)
    for (name, p), (_, q) in zip(eager.named_parameters(), compiled.named_parameters()):
        torch.testing.assert_close(q.grad, p.grad, msg=name)
    return compiled


def test_every_instance_of_the_named_class_is_compiled_wherever_it_sits():
    model = UNET.make_model()
    assert apply_plan(model, _plan()) is model
    # 2 per down and up block and 1 in the mid block, each alone in its own container
    assert _compiled_paths(model) == UNET.BLOCK_PATHS and len(UNET.BLOCK_PATHS) == 9
    assert all(type(model.get_submodule(p)).__name__ == NAMED for p in UNET.BLOCK_PATHS)


def test_the_instances_share_one_compiled_frame_per_width(monkeypatch):
    from torch._dynamo.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("eager")
    monkeypatch.setattr(apply_module, "compile_kwargs", lambda plan: {"backend": counter})
    model = UNET.make_model()
    apply_plan(model, _plan())
    x = UNET.make_inputs()
    torch.testing.assert_close(model(x), UNET.make_model()(x))
    # 9 blocks at two widths (8 and 16): one frame for the first width, one recompile for the
    # second; the other 7 instances reuse them
    assert counter.frame_count == 2
    model(x)
    assert counter.frame_count == 2


@pytest.mark.parametrize(
    "method,backend", [(None, "eager"), ("split", "eager"), ("nested", "aot_eager")], ids=["blocks", "split", "nested"]
)
def test_outputs_and_grads_equal_eager(method, backend):
    compiled = _assert_matches_eager(_plan(method=method, backend=backend))
    if method is None:
        assert _compiled_paths(compiled) == UNET.BLOCK_PATHS
    else:  # one compile of the whole model, with every named block split out or marked
        assert _compiled_paths(compiled) == [""]
        assert all("forward" in vars(compiled.get_submodule(p)) for p in UNET.BLOCK_PATHS)


def test_a_region_whose_blocks_hold_named_blocks_gives_way_to_them():
    model = UNET.make_model()
    apply_plan(model, _plan(regions=("down_blocks.0.attentions", "down_blocks.0.resnets")))
    compiled = _compiled_paths(model)
    assert [p for p in compiled if "attentions" in p] == UNET.BLOCK_PATHS
    assert "down_blocks.0.attentions.0" not in compiled  # the Transformer2DModel around the block
    assert {"down_blocks.0.resnets.0", "down_blocks.0.resnets.1"} <= set(compiled)


def test_a_named_block_inside_a_named_block_is_left_to_the_outer_one():
    model = UNET.make_model()
    apply_plan(model, _plan(blocks=("Transformer2DModel", NAMED)))
    compiled = _compiled_paths(model)
    assert len(compiled) == 9 and all(p.endswith(("attentions.0", "attentions.1")) for p in compiled)


def test_names_the_model_does_not_have_are_an_apply_error_and_nothing_is_compiled():
    model = UNET.make_model()
    with pytest.raises(ApplyError) as info:
        apply_plan(model, _plan(blocks=("FluxTransformerBlock",)))
    message = str(info.value)
    assert "repeated_blocks names FluxTransformerBlock" in message and "UNetLike" in message
    assert f"{NAMED} (9)" in message and "ModuleList" not in message
    assert _compiled_paths(model) == []


def test_a_named_block_that_is_also_a_region_member_is_compiled_once():
    class Stack(nn.Module):
        _repeated_blocks = ["Linear"]

        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    model = Stack()
    blocks = apply_module._regional_blocks(model, _plan(regions=("blocks",), blocks=("Linear",)))
    assert [id(b) for b in blocks] == [id(b) for b in model.blocks]


# -- trace's plan -------------------------------------------------------------------------------
def test_trace_plans_the_named_blocks_and_apply_plan_compiles_each():
    analysis = traced("unet_like")
    assert analysis.repeated_block_paths == UNET.BLOCK_PATHS
    rec = analysis.recommendation
    assert rec.strategy == "regional" and rec.repeated_blocks == (NAMED,)
    # the groups of Transformer2DModel hold the named blocks: left to them, not listed as regions
    assert not any("attentions" in r for r in rec.regions)
    assert "down_blocks.0.resnets" in rec.regions
    plan = rec.plan(analysis.model_name)
    assert plan.repeated_blocks == [NAMED] and Plan.from_json(plan.to_json()) == plan
    plan.plugin["backend"] = "eager"
    compiled = _assert_matches_eager(plan)
    paths = _compiled_paths(compiled)
    assert [p for p in paths if p in UNET.BLOCK_PATHS] == UNET.BLOCK_PATHS
    assert not any(type(compiled.get_submodule(p)).__name__ == "Transformer2DModel" for p in paths)
    why = " ".join(rec.why)
    assert f"{len(UNET.BLOCK_PATHS)} instances in {len(UNET.BLOCK_PATHS)} containers" in why
    assert "compiled by class instead" in why


def test_the_report_says_what_the_regional_plan_covers():
    from regcomp_lint.trace.report import to_json, to_text

    analysis = traced("unet_like")
    assert f", every {NAMED}\n" in to_text(analysis)
    assert to_json(analysis)["recommendation"]["repeated_blocks"] == [NAMED]


def test_the_report_offers_apply_plan_for_the_named_blocks():
    from regcomp_lint.trace.report import how_to_apply

    lines = how_to_apply(traced("unet_like").recommendation)
    assert lines[0].startswith("model.compile_repeated_blocks(")
    assert lines[1].startswith(f"regcomp_lint.apply_plan(model, plan) (every {NAMED} wherever it sits, and the regions")
    assert lines[-1].startswith("TorchDynamoPlugin(")
