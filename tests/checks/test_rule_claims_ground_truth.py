"""Claims rule pages make (issue 13's re-read), each checked against torch 2.13 / accelerate 1.15.

Run in this interpreter; skipped where torch or accelerate cannot be imported. Every probe uses
``backend="eager"`` on CPU, so it takes seconds.
"""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
accelerate_state = pytest.importorskip("accelerate.state")

from torch import nn  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

from regcomp_lint.checks import ALL_RULES  # noqa: E402


def unique_graphs() -> int:
    return int(counters["stats"]["unique_graphs"])


def test_rc104_rewrapping_the_same_model_does_not_recompile_it():
    """RC104: the per-pass cost is wrapper set-up and guards, not a recompile."""
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
    x = torch.randn(4, 8)
    torch._dynamo.reset()
    counters.clear()
    for _ in range(5):
        torch.compile(model, backend="eager")(x)
    assert unique_graphs() == 1
    assert "does not recompile it" in ALL_RULES["RC104"].docs()
    assert "recompile" not in ALL_RULES["RC104"].message


def test_rc403_accelerate_sets_each_process_device():
    """RC403: building the state sets the process's own device; the risk is non-CUDA hardware."""
    source = inspect.getsource(accelerate_state.PartialState.set_device)
    assert "local_process_index" in source and "device_module.set_device(self.device)" in source
    docs = ALL_RULES["RC403"].docs()
    assert "which is GPU 0 in every process unless" not in docs
    assert "hardware that is not CUDA" in docs


def test_rc205_a_torch_random_value_that_is_branched_on_still_breaks():
    """RC205's advice: torch.rand for values in tensor math, not for a Python branch."""

    class Drop(nn.Module):
        def forward(self, x):
            if torch.rand(()) < 0.5:
                return x * 2
            return x

    class Noise(nn.Module):
        def forward(self, x):
            return x + torch.rand_like(x)

    torch._dynamo.reset()
    branched = torch._dynamo.explain(Drop())(torch.randn(3))
    torch._dynamo.reset()
    noise = torch._dynamo.explain(Noise())(torch.randn(3))
    assert branched.break_reasons  # counted by reason: the taken arm may hold no op (graph_count 1)
    assert noise.graph_break_count == 0 and not noise.break_reasons
    assert "still breaks when drawn with `torch.rand`" in ALL_RULES["RC205"].docs()


def test_rc205_networkx_is_skipped_by_dynamo():
    nx = pytest.importorskip("networkx")

    class Net(nn.Module):
        def forward(self, x):
            y = x * 2
            n = nx.path_graph(int(y.shape[0])).number_of_nodes()
            return y + n

    torch._dynamo.reset()
    found = torch._dynamo.explain(Net())(torch.randn(3))
    assert found.graph_break_count >= 1
    assert any("marked as skipped" in str(b.reason) for b in found.break_reasons)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_rc209_every_recurrent_module_behaves_the_same(kind):
    """RC209's message for `getattr(nn, rnn_type)`: whichever class it is, no graph is made."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(nn, kind)(4, 4)

        def forward(self, x):
            return self.rnn(x)[0]

    torch._dynamo.reset()
    found = torch._dynamo.explain(Net())(torch.randn(2, 3, 4))
    assert found.graph_count == 0
