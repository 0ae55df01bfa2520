"""``locate``: the probe run puts each break on the module instances that really ran it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from regcomp_lint.trace import explain, locate  # noqa: E402
from regcomp_lint.trace.batch import Batch  # noqa: E402
from regcomp_lint.trace.errors import TraceError  # noqa: E402


class Block(nn.Module):
    def __init__(self, idx):
        super().__init__()
        self.idx = idx
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if self.idx == 3:
            print("block three")  # only blocks.3 runs this
        return x + self.fc(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(i) for i in range(5)])
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


@pytest.fixture(scope="module")
def located():
    model, batch = Net(), Batch.from_value(torch.randn(2, 4))
    result = explain.run_explain(model, batch)
    lines = {(s.file, s.line) for s in result.breaks}
    return model, result, locate.probe(model, batch, lines, fatal=True)


def test_the_probe_places_a_break_on_the_one_instance_that_ran_it(located):
    model, result, probe = located
    (site,) = result.breaks
    assert site.gb_id == "GB0059"
    assert probe.ok and probe.hits[(site.file, site.line)] == ["blocks.3"]


def test_the_probe_records_call_order(located):
    _, _, probe = located
    assert probe.order[0] == ""
    assert probe.order.index("blocks.0") < probe.order.index("blocks.4") < probe.order.index("head")
    assert "blocks.2.fc" in probe.order


def test_placing_by_code_blames_every_instance_of_the_class(located):
    model, result, _ = located
    assert locate.place_by_code(model, result.breaks[0]) == [f"blocks.{i}" for i in range(5)]


def test_the_probe_leaves_no_hooks_or_tracer_behind(located):
    import sys

    assert sys.gettrace() is None or "coverage" in type(sys.gettrace()).__module__
    assert not torch.nn.modules.module._global_forward_pre_hooks
    assert not torch.nn.modules.module._global_forward_hooks


def test_a_batch_that_does_not_fit_is_fatal_or_recorded():
    model, batch = Net(), Batch.from_value(torch.randn(2, 3))
    with pytest.raises(TraceError, match=r"the model raised on the sample batch \(float32\[2, 3\]\).*RuntimeError"):
        locate.probe(model, batch, set(), fatal=True)
    probe = locate.probe(model, batch, set(), fatal=False)
    assert not probe.ok and "RuntimeError" in probe.error and probe.order[:2] == ["", "blocks.0"]
