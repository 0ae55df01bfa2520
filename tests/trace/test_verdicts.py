"""``verdicts``: fullgraph=True per region and for the whole model, recompiles per block."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from regcomp_lint.trace import verdicts  # noqa: E402
from regcomp_lint.trace.batch import Batch  # noqa: E402
from regcomp_lint.trace.regions import build  # noqa: E402
from tests.trace.conftest import MODELS, REPO, traced  # noqa: E402


class Prints(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        print("hello")  # the break
        return self.fc(x)


def test_whole_model_trusts_one_clean_explain_graph():
    assert verdicts.whole_model(None, None, one_clean_graph=True) == verdicts.Verdict(True, "explain")


def test_whole_model_compiles_and_names_the_failing_line():
    verdict = verdicts.whole_model(Prints(), Batch.from_value(torch.zeros(1, 2)), one_clean_graph=False)
    assert verdict.ok is False and verdict.how == "compiled" and verdict.gb_id == "GB0059"
    assert verdict.file == __file__ and verdict.line == Prints.forward.__code__.co_firstlineno + 1


def test_whole_model_clean_compile():
    verdict = verdicts.whole_model(nn.Linear(2, 2), Batch.from_value(torch.zeros(1, 2)), one_clean_graph=False)
    assert verdict == verdicts.Verdict(True, "compiled")


def test_region_verdicts_of_the_planted_breaks():
    run = traced("planted_breaks").regional
    assert run.error is None
    assert run.fullgraph["head"].ok is False and run.fullgraph["head"].gb_id == "GB0059"
    assert run.fullgraph["head"].file == str(MODELS / "planted_breaks.py")
    assert all(run.fullgraph[f"blocks.{i}"].ok for i in range(3))  # .item() is captured under fullgraph
    assert run.fullgraph["embed"] == verdicts.Verdict(True, "compiled")
    assert run.second_batch == "dim 0: 2 -> 1"


def test_per_block_recompiles_and_the_limit():
    run = traced("layer_idx").regional
    attribute = [r for r in run.recompiles if r.kind == "attribute"]
    assert [r.region for r in attribute] == [f"layers.{i}" for i in range(1, verdicts.SAMPLED_MEMBERS)]
    assert attribute[0].reason == "self.layer_idx == 0"
    # the guard's site as torch prints it (relative to the working directory: the repository)
    assert (
        REPO / attribute[0].file
    ).resolve() == MODELS / "layer_idx.py" and "allow_unspec_int_on_nn_module" in attribute[0].hint
    seen = ", ".join(f"layers.{i}" for i in range(1, verdicts.SAMPLED_MEMBERS))
    assert run.limit_hit.startswith(
        f"every block of layers[0..9] recompiles (seen on {seen}: a value of its own in the guard); "
        "with recompile_limit (8) layers.8 .. layers.9"
    )


def test_no_per_block_recompile_without_an_int_attribute():
    run = traced("vit_sequential").regional
    assert run.limit_hit is None
    assert [r.kind for r in run.recompiles] == ["shape"] and run.recompiles[0].region == "blocks.0"


def test_the_model_is_left_as_it_came():
    analysis = traced("planted_breaks")
    # (the analysis ran on the fixture's model; a fresh trace of a model must not swap its children)
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))
    children = list(model.children())
    run = verdicts.regional(model, Batch.from_value(torch.zeros(3, 2)), build(model), 0)
    assert list(model.children()) == children and run.error is None
    assert analysis.regions.regions  # sanity: the shared analysis is intact


def test_from_explain_blocks_regions_with_uncaptured_breaks_only():
    analysis = traced("planted_breaks")
    run = verdicts.from_explain(analysis.regions, analysis.breaks)
    assert run.fullgraph["head"].ok is False and run.fullgraph["head"].how == "explain"
    assert all(run.fullgraph[f"blocks.{i}"].ok for i in range(3))  # GB0124 is captured under fullgraph
    assert run.second_batch.startswith("unknown")


class _IndexedBlock(nn.Module):
    def __init__(self, idx: int) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.idx = idx

    def forward(self, x):
        return self.fc(x) * (self.idx + 1)


class _RawInputStack(nn.Module):
    """The first block gets the raw input (no grad), the next ones a block's output (grad): block 1's
    first failing guard is requires_grad, which hides its own ``idx``."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([_IndexedBlock(i) for i in range(4)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def test_per_block_recompiles_seen_behind_an_input_property_guard():
    model = _RawInputStack()
    run = verdicts.regional(model, Batch.from_value(torch.randn(2, 4)), build(model), None)
    kinds = {r.region: r.kind for r in run.recompiles}
    assert kinds["blocks.1"] == "tensor" and kinds["blocks.2"] == "attribute"
    assert run.limit_hit.startswith("every block of blocks[0..3] recompiles")
