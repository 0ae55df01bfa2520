"""``--apply --check``'s comparison of eager and compiled outputs."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from regcomp_lint.cli.trace_command import max_abs_difference  # noqa: E402


class _Layer:
    def __init__(self, keys, values):
        self.keys, self.values, self.is_initialized = keys, values, True


class _Cache:
    """Shaped like transformers' DynamicCache: tensors inside plain objects, compared by identity."""

    def __init__(self, *layers):
        self.layers = list(layers)


def test_tensors_inside_plain_objects_are_compared_not_the_objects():
    a = {"logits": torch.zeros(2, 3), "past_key_values": _Cache(_Layer(torch.ones(2), torch.ones(2)))}
    b = {"logits": torch.zeros(2, 3), "past_key_values": _Cache(_Layer(torch.ones(2), torch.ones(2) + 0.5))}
    assert max_abs_difference(a, b) == pytest.approx(0.5)


def test_objects_of_different_types_or_fields_differ_in_structure():
    assert max_abs_difference(_Cache(), _Layer(torch.ones(1), torch.ones(1))) is None
    assert max_abs_difference(_Cache(_Layer(torch.ones(1), torch.ones(1))), _Cache()) is None


def test_plain_values_and_shapes():
    assert max_abs_difference((1, "a", None), (1, "a", None)) == 0.0
    assert max_abs_difference((1,), (2,)) is None
    assert max_abs_difference(torch.zeros(2), torch.zeros(3)) is None
    assert max_abs_difference([torch.zeros(2)], [torch.full((2,), 3.0)]) == 3.0


def test_a_cycle_of_objects_ends():
    a, b = _Cache(), _Cache()
    a.layers.append(a)
    b.layers.append(b)
    assert max_abs_difference(a, b) == 0.0
