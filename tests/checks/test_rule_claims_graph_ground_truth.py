"""Claims the RC2xx, RC3xx and RC5xx rule pages make about dynamo (issue 13's re-read),
checked against torch 2.13 / accelerate 1.15 in this interpreter.

Skipped where torch cannot be imported. Every probe runs ``torch._dynamo.explain`` or
``torch.compile(backend="eager")`` on CPU, so each takes a second or two.
"""

from __future__ import annotations

import copy
import logging
import re
import warnings

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

from regcomp_lint.checks import ALL_RULES  # noqa: E402

logger = logging.getLogger("regcomp_probe")


def docs(code: str) -> str:
    return " ".join(ALL_RULES[code].docs().split())


def breaks(fn, *args) -> list[str]:
    """Graph-break ids (``gb0059``...) torch counts while running ``compile(fn)(*args)``.

    ``explain``'s ``break_reasons`` misses breaks and omits the ids; the counters keep both.
    """
    torch._dynamo.reset()
    counters.clear()
    torch.compile(fn, backend="eager")(*args)
    return sorted({gb for key in counters["graph_break"] for gb in re.findall(r"gb\d{4}", key.lower())})


def fullgraph_error(fn, *args) -> str | None:
    """The ``Unsupported`` text ``fullgraph=True`` raises, or None when it compiles."""
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend="eager", fullgraph=True)(*args)
    except torch._dynamo.exc.Unsupported as error:
        return str(error)
    return None


X = torch.randn(4, 3)


# --- RC201 ---------------------------------------------------------------------------------


def item(x):
    return x / x.abs().max().item()


def to_int(x):
    return x * int(x.sum())


def float_tolist(x):
    return x * len(x.sum(0).tolist())


def equal(x):
    return x * 2 if torch.equal(x, x) else x


@pytest.mark.parametrize(("fn", "gb"), [(item, "GB0124"), (to_int, "GB0124"), (float_tolist, "GB0109")])
def test_rc201_tensor_to_python_breaks_by_default(fn, gb):
    assert gb.lower() in breaks(fn, X)
    assert f"`{gb}`" in docs("RC201")


def test_rc201_fullgraph_captures_item_and_int():
    assert fullgraph_error(item, X) is None
    assert fullgraph_error(to_int, X) is None
    assert "turns on `capture_scalar_outputs`" in docs("RC201")


@pytest.mark.parametrize("fn", [float_tolist, equal])
def test_rc201_fullgraph_still_raises_for_float_tolist_and_equal(fn):
    assert fullgraph_error(fn, X) is not None


def test_rc201_branching_on_a_captured_item_fails_under_fullgraph():
    def branch(x):
        return x * 2 if x.sum().item() > 0 else x

    torch._dynamo.reset()
    with pytest.raises(Exception, match="(?i)data.dependent"):
        torch.compile(branch, backend="eager", fullgraph=True)(X)


# --- RC202 ---------------------------------------------------------------------------------


def data_branch(x):
    if x.abs().max() > 1e3:
        x = x / x.abs().max()
    return x * 2


def test_rc202_a_branch_on_a_tensor_breaks_and_fullgraph_raises():
    torch._dynamo.reset()
    assert torch._dynamo.explain(data_branch)(X).graph_count == 2
    assert "gb0170" in (fullgraph_error(data_branch, X) or "").lower()


def test_rc202_assert_on_a_tensor_and_shape_logic_do_not_break():
    def checked(x):
        assert (x == x).all()
        if x.shape[0] > 1 and x.dim() == 2:
            return x * 2
        return x

    assert breaks(checked, X) == []


def test_rc202_torch_where_and_cond_trace_both_sides():
    def where(x):
        peak = x.abs().amax()
        return torch.where(peak > 1e3, x / peak, x)

    def cond(x):
        return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,))

    assert fullgraph_error(where, X) is None
    assert fullgraph_error(cond, X) is None


# --- RC203 ---------------------------------------------------------------------------------


def with_print(x):
    print("shape", x.shape)
    return x * 2


def with_logger(x):
    logger.warning("slow path")
    return x * 2


def with_logging(x):
    logging.info("slow path")
    return x * 2


def with_warning(x):
    warnings.warn("slow path", stacklevel=1)
    return x * 2


@pytest.mark.parametrize(
    ("fn", "gb"),
    [(with_print, "GB0059"), (with_logger, "GB0291"), (with_logging, "GB4841"), (with_warning, "GB0007")],
)
def test_rc203_each_io_call_breaks_with_its_id(fn, gb, capsys):
    assert gb.lower() in breaks(fn, X)
    assert f"`{gb}`" in docs("RC203")
    assert fullgraph_error(fn, X) is not None


def test_rc203_code_under_not_is_compiling_is_skipped():
    def guarded(x):
        if not torch.compiler.is_compiling():
            print("eager only")
        return x * 2

    assert fullgraph_error(guarded, X) is None


def test_rc203_reorderable_and_ignored_logging_functions_remove_the_break(monkeypatch, capsys):
    def print_tensor(x):
        print("x", x)
        return x * 2

    monkeypatch.setattr(torch._dynamo.config, "reorderable_logging_functions", {print})
    assert fullgraph_error(print_tensor, X) is None
    monkeypatch.setattr(torch._dynamo.config, "reorderable_logging_functions", set())
    monkeypatch.setattr(torch._dynamo.config, "ignore_logging_functions", {logger.warning})
    assert fullgraph_error(with_logger, X) is None


def test_rc203_transformers_warning_once_can_be_ignored(monkeypatch):
    hf_logging = pytest.importorskip("transformers.utils.logging")
    hf_logger = hf_logging.get_logger("regcomp_probe")

    def warns_once(x):
        hf_logger.warning_once("slow path")
        return x * 2

    assert fullgraph_error(warns_once, X) is not None
    monkeypatch.setattr(torch._dynamo.config, "ignore_logging_functions", {hf_logger.warning_once})
    assert fullgraph_error(warns_once, X) is None


def test_rc203_a_reordered_call_given_a_torch_size_still_raises(monkeypatch, capsys):
    monkeypatch.setattr(torch._dynamo.config, "reorderable_logging_functions", {print})
    assert "can't actually be reordered" in (fullgraph_error(with_print, X) or "")
    assert "not a `torch.Size`" in docs("RC203")


# --- RC204 ---------------------------------------------------------------------------------


def mask_index(x):
    return x[x > 0].sum()


def nonzero(x):
    return torch.nonzero(x).float().sum()


@pytest.mark.parametrize("fn", [mask_index, nonzero])
def test_rc204_dynamic_shape_ops_break_by_default_and_fullgraph_captures_them(fn):
    assert "gb0036" in breaks(fn, X)
    assert fullgraph_error(fn, X) is None
    assert "turns on `capture_dynamic_output_shape_ops`" in docs("RC204")


def test_rc204_mask_assignment_keeps_the_shape():
    def assign(x):
        x = x.clone()
        x[x > 0] = 0
        return x

    assert breaks(assign, X) == []


# --- RC206 ---------------------------------------------------------------------------------


def deep_copy(x):
    return copy.deepcopy(x) * 2


def text(x):
    return x * len(str(x))


def stored_fstring(x):
    message = f"{x}"
    del message
    return x * 2


def test_rc206_deepcopy_and_str_break():
    assert "gb4198" in breaks(deep_copy, X)
    assert "gb0059" in breaks(text, X)
    assert fullgraph_error(text, X) is not None


def test_rc206_an_fstring_only_stored_does_not_break():
    assert fullgraph_error(stored_fstring, X) is None
    assert "does not break until the text is used" in docs("RC206")


# --- RC207 ---------------------------------------------------------------------------------


@torch.compiler.disable
def disabled(x):
    return x + 1


def calls_disabled(x):
    return disabled(x * 2) * 3


def explicit_break(x):
    x = x * 2
    torch._dynamo.graph_break()
    return x * 3


def test_rc207_a_disabled_callee_and_graph_break_split_the_graph():
    assert "gb0098" in breaks(calls_disabled, X)
    assert "gb0025" in breaks(explicit_break, X)
    assert fullgraph_error(calls_disabled, X) is not None


# --- RC208 ---------------------------------------------------------------------------------


class MakesParameter(nn.Module):
    def forward(self, x):
        self.scale = nn.Parameter(torch.ones(x.shape[-1]))
        return x * self.scale


def test_rc208_parameter_in_forward_breaks_unless_the_ctor_flag_is_off(monkeypatch):
    assert "gb0264" in breaks(MakesParameter(), X)
    assert fullgraph_error(MakesParameter(), X) is not None
    monkeypatch.setattr(torch._dynamo.config, "graph_break_on_nn_param_ctor", False)
    assert fullgraph_error(MakesParameter(), X) is None


# --- RC301 ---------------------------------------------------------------------------------


class IndexedBlock(nn.Module):
    def __init__(self, layer_idx):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.layer_idx = layer_idx

    def forward(self, x):
        return self.fc(x) * (self.layer_idx + 1)


def compile_blocks_one_by_one(n: int) -> int:
    torch._dynamo.reset()
    counters.clear()
    blocks = [torch.compile(IndexedBlock(i), backend="eager") for i in range(n)]
    for block in blocks:
        block(X)
    return int(counters["stats"]["unique_graphs"])


def test_rc301_an_int_read_in_forward_recompiles_per_block_up_to_the_limit():
    assert torch._dynamo.config.recompile_limit == 8
    assert compile_blocks_one_by_one(12) == 8
    assert "recompile_limit (8)" in docs("RC301")


def test_rc301_unspec_module_ints_need_two_compilations(monkeypatch):
    monkeypatch.setattr(torch._dynamo.config, "allow_unspec_int_on_nn_module", True)
    assert compile_blocks_one_by_one(12) == 2


# --- RC302 ---------------------------------------------------------------------------------


def run_lengths(dynamic) -> int:
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(lambda x: x * 2, backend="eager", dynamic=dynamic)
    for length in [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 4, 5]:
        compiled(torch.randn(2, length))
    return int(counters["stats"]["unique_graphs"])


def test_rc302_static_shapes_recompile_per_length_until_the_limit():
    assert run_lengths(False) == 8
    assert run_lengths(None) == 2


def test_rc302_cudagraph_settings_the_page_names():
    from torch._inductor import config

    assert config.triton.cudagraph_skip_dynamic_graphs is False
    assert config.triton.cudagraph_dynamic_shape_warn_limit == 8


def test_rc201_equal_and_allclose_are_data_dependent_operators():
    def close(x):
        return x * 2 if torch.allclose(x, x) else x

    assert "gb0033" in breaks(equal, X)
    assert "gb0033" in breaks(close, X)


def test_rc206_repr_and_data_pointer_comparison_break():
    def shown(x):
        return x * len(repr(x))

    def same_storage(x, y):
        return x * 2 if x.data_ptr() == y.data_ptr() else x

    assert "gb0569" in breaks(shown, X)
    assert "gb5976" in breaks(same_storage, X, X.clone())


@pytest.mark.parametrize(
    ("use", "gb"),
    [
        (lambda x: x * len(f"{x}"), "gb0088"),
        (lambda x: x * len("{}".format(x)), "gb0088"),  # noqa: UP032 (the form under test)
        (lambda x: x * len("x=" + f"{x}"), "gb3934"),
        (lambda x: x * 2 if f"{x}" == "a" else x, "gb9648"),
        (lambda x: x * len("%s" % x), "gb0208"),  # noqa: UP031 (the form under test)
    ],
    ids=["measured", "format", "concatenated", "compared", "percent"],
)
def test_rc206_using_the_text_of_a_tensor_skips_the_whole_frame(use, gb):
    torch._dynamo.reset()
    assert torch._dynamo.explain(use)(X).graph_count == 0
    assert gb in (fullgraph_error(use, X) or "").lower()
    assert "gives up on the **whole frame**" in docs("RC206")


def test_rc208_parameter_of_p_data_is_gb0229():
    class Rewraps(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = nn.Parameter(torch.ones(3))

        def forward(self, x):
            return x * nn.Parameter(self.p.data)

    assert "gb0229" in breaks(Rewraps(), X)


class PerBlock(nn.Module):
    def __init__(self, layer_idx):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.layer_idx = layer_idx
        self.is_first = layer_idx == 0
        self.label = f"block{layer_idx}"
        self.register_buffer("layer_scale", torch.tensor(1.0 / (layer_idx + 1)), persistent=False)


class Branches(PerBlock):
    def forward(self, x):
        return self.fc(x) * 2 if self.layer_idx == 0 else self.fc(x)


class ComparesWithNone(PerBlock):
    def forward(self, x):
        return self.fc(x) if self.layer_idx is None else self.fc(x) * 2


class IndexesAList(PerBlock):
    def forward(self, x):
        return self.fc(x) * [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0][self.layer_idx]


class Floats(PerBlock):
    def forward(self, x):
        return self.fc(x) * float(self.layer_idx)


class BranchesOnParity(PerBlock):
    def forward(self, x):
        return self.fc(x) * 2 if self.layer_idx % 2 else self.fc(x)


class DerivedBool(PerBlock):
    def forward(self, x):
        return self.fc(x) * 2 if self.is_first else self.fc(x)


class ReadsAString(PerBlock):
    def forward(self, x):
        return self.fc(x) * len(self.label)


class NeverReads(PerBlock):
    def forward(self, x):
        return self.fc(x)


class UsesABuffer(PerBlock):
    def forward(self, x):
        return self.fc(x) * self.layer_scale


def compilations(block_class, **config) -> int:
    torch._dynamo.reset()
    counters.clear()
    with torch._dynamo.config.patch(**config):
        for block in [torch.compile(block_class(i), backend="eager") for i in range(12)]:
            block(X)
    return int(counters["stats"]["unique_graphs"])


@pytest.mark.parametrize(
    ("block_class", "expected"),
    [
        (Branches, 8),
        (BranchesOnParity, 8),
        (ComparesWithNone, 8),
        (IndexesAList, 8),
        (Floats, 8),
        (ReadsAString, 8),
        (DerivedBool, 2),
        (NeverReads, 1),
        (UsesABuffer, 1),
    ],
)
def test_rc301_what_each_kind_of_read_costs_on_12_blocks(block_class, expected):
    assert compilations(block_class) == expected


def test_rc301_unspec_ints_help_compute_but_not_list_indexing():
    assert compilations(Floats, allow_unspec_int_on_nn_module=True) == 2
    assert compilations(IndexesAList, allow_unspec_int_on_nn_module=True) == 8


def test_rc301_raising_the_limit_compiles_every_block_separately():
    assert compilations(Floats, recompile_limit=12) == 12


def test_rc301_a_whole_model_compile_inlines_each_block_once():
    class Whole(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Floats(i) for i in range(12)])

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    torch._dynamo.reset()
    counters.clear()
    torch.compile(Whole(), backend="eager")(X)
    assert counters["stats"]["unique_graphs"] == 1


@pytest.mark.parametrize(
    "op",
    [
        lambda x: torch.unique(x).sum(),
        lambda x: torch.unique_consecutive(x).sum(),
        lambda x: torch.masked_select(x, x > 0).sum(),
        lambda x: torch.where(x > 0)[0].sum(),
        lambda x: torch.argwhere(x).sum(),
        lambda x: torch.repeat_interleave(x[:, 0], (x[:, 0] > 0).long()).sum(),
    ],
    ids=["unique", "unique_consecutive", "masked_select", "where1", "argwhere", "repeat_interleave"],
)
def test_rc204_every_listed_op_is_a_dynamic_shape_break(op):
    assert breaks(op, X) == ["gb0036"]
    assert fullgraph_error(op, X) is None


def test_rc204_repeat_interleave_with_an_int_keeps_a_static_shape():
    assert breaks(lambda x: torch.repeat_interleave(x, 2).sum(), X) == []


def test_rc208_wrapping_a_forward_input_is_traced():
    class Wraps(nn.Module):
        def forward(self, x):
            return nn.Parameter(x) * 2

    assert breaks(Wraps(), X) == []


def test_rc210_a_recurrent_module_raises_under_fullgraph():
    class Recurrent(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(3, 3)

        def forward(self, x):
            return self.rnn(x)[0]

    assert fullgraph_error(Recurrent(), torch.randn(2, 4, 3)) is not None
