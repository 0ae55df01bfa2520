"""``Batch``: what a forward is called with, and the shorter second batch of the recompile probe."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from regcomp_lint.trace.batch import Batch  # noqa: E402
from regcomp_lint.trace.errors import TraceError  # noqa: E402


def test_a_tensor_is_one_positional_argument():
    t = torch.zeros(2, 3)
    batch = Batch.from_value(t)
    assert batch.args == (t,) and batch.kwargs == {}
    assert batch.describe() == "float32[2, 3]"


@pytest.mark.parametrize("container", [tuple, list])
def test_a_tuple_or_list_is_the_positional_arguments(container):
    a, b = torch.zeros(2), torch.ones(2, dtype=torch.int64)
    batch = Batch.from_value(container([a, b]))
    assert batch.args == (a, b) and batch.kwargs == {}
    assert batch.describe() == "float32[2], int64[2]"


def test_a_dict_is_the_keyword_arguments():
    ids = torch.zeros(2, 8, dtype=torch.long)
    batch = Batch.from_value({"input_ids": ids, "use_cache": False})
    assert batch.args == () and batch.kwargs == {"input_ids": ids, "use_cache": False}
    assert batch.describe() == "input_ids=int64[2, 8], use_cache=False"
    assert batch.call(lambda **kw: sorted(kw)) == ["input_ids", "use_cache"]


def test_a_batch_passes_through():
    batch = Batch((torch.zeros(1),))
    assert Batch.from_value(batch) is batch


@pytest.mark.parametrize(
    "value, words",
    [
        ("input_ids", "returned str"),
        (3, "returned int"),
        (None, "returned NoneType"),
        ({0: torch.zeros(1)}, "non-string key 0"),
    ],
)
def test_anything_else_is_a_clear_error(value, words):
    with pytest.raises(TraceError) as info:
        Batch.from_value(value, "--inputs 'm.py:f'")
    message = str(info.value)
    assert words in message and message.startswith("--inputs 'm.py:f'")
    assert "\n" not in message


def test_tensors_and_map_follow_nesting():
    a, b, c = torch.zeros(1), torch.zeros(2), torch.zeros(3)
    batch = Batch((a, [b, {"c": c}]), {"flag": True})
    assert {t.numel() for t in batch.tensors()} == {1, 2, 3}
    doubled = batch.map(lambda t: t + 1)
    assert doubled.args[1][1]["c"].sum() == 3 and doubled.kwargs == {"flag": True}


def test_dynamic_dim_is_the_sequence_for_token_ids_else_the_batch():
    assert Batch.from_value({"input_ids": torch.zeros(2, 16, dtype=torch.long)}).dynamic_dim() == 1
    assert Batch.from_value(torch.zeros(2, 3, 16, 16)).dynamic_dim() == 0
    assert Batch.from_value(torch.zeros(2, 16)).dynamic_dim() == 0  # float rank 2: features, not tokens
    assert Batch.from_value(torch.tensor(1.0)).dynamic_dim() is None


def test_resized_cuts_every_tensor_of_the_same_size_on_that_dim():
    ids = torch.arange(32).reshape(2, 16)
    mask = torch.ones(2, 16, dtype=torch.long)
    other = torch.zeros(2, 5)
    batch = Batch((), {"input_ids": ids, "attention_mask": mask, "extra": other})
    smaller, old, new = batch.resized(1)
    assert (old, new) == (16, 12)
    assert smaller.kwargs["input_ids"].shape == (2, 12) and smaller.kwargs["attention_mask"].shape == (2, 12)
    assert torch.equal(smaller.kwargs["input_ids"], ids[:, :12])  # a slice: still valid token ids
    assert smaller.kwargs["extra"].shape == (2, 5)
    assert batch.kwargs["input_ids"].shape == (2, 16)  # the original is untouched


def test_resized_small_and_unshrinkable_sizes():
    smaller, old, new = Batch.from_value(torch.zeros(2, 4)).resized(0)
    assert (old, new, smaller.args[0].shape[0]) == (2, 1, 1)
    assert Batch.from_value(torch.zeros(1, 4)).resized(0) is None
    assert Batch.from_value(torch.zeros(4)).resized(1) is None


def test_resized_tensors_are_contiguous_so_view_works():
    """A GPT-style loss does ``targets.view(-1)``: a narrow() view of the sequence is not
    contiguous and would fail there, and the report would blame the model."""
    ids = torch.arange(32).reshape(2, 16)
    smaller, _, _ = Batch((ids, ids.clone()), {}).resized(1)
    for tensor in smaller.args:
        assert tensor.is_contiguous()
        assert tensor.view(-1).shape == (24,)
