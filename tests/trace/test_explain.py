"""``explain.run_explain``: every graph break, once per site, at the model's own line."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from regcomp_lint.trace import explain  # noqa: E402
from regcomp_lint.trace.batch import Batch  # noqa: E402
from tests.trace.conftest import MODELS, REPO, load_fixture, traced  # noqa: E402

PRINT_LOGGING = REPO / "fixtures" / "models" / "brk_print_logging.py"


def test_a_break_run_by_every_block_is_one_site():
    result = traced("planted_breaks").explain
    sites = [(s.file, s.line) for s in result.breaks]
    assert len(sites) == len(set(sites)) == 2
    (item,) = (s for s in result.breaks if s.gb_id == "GB0124")
    assert item.file == str(MODELS / "planted_breaks.py") and item.function == "forward"
    assert item.reason.startswith("Unsupported Tensor.item()")
    assert item.hints and "capture_scalar_outputs" in item.hints[0]


def test_an_id_less_record_before_the_id_one_is_the_same_site():
    # torch logs "Graph break from `Tensor.item()`" (no GB link) before the GB0124 record
    sites: dict = {}
    frames = [(str(MODELS / "planted_breaks.py"), 16, "forward")]
    explain._add(sites, "Graph break from `Tensor.item()`, consider setting:\n  ...", frames, "log")
    explain._add(
        sites,
        "Unsupported Tensor.item() call with capture_scalar_outputs=False\n"
        "  Explanation: Dynamo does not support tracing `Tensor.item()`.\n"
        "  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True`\n"
        " https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html",
        frames,
        "log",
    )
    explain._add(sites, "Unsupported Tensor.item() call", frames, "explain")  # break_reasons: no id
    (site,) = sites.values()
    assert site.gb_id == "GB0124" and site.count == 3 and site.sources == {"log", "explain"}
    assert site.reason == "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    assert site.explanation.startswith("Dynamo does not support") and site.hints


def test_breaks_inside_logging_and_warnings_are_reported_at_the_model_line():
    spec = __import__("importlib.util").util.spec_from_file_location("_explain_print_logging", PRINT_LOGGING)
    module = __import__("importlib.util").util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = explain.run_explain(module.make_model(), Batch.from_value(module.make_inputs()))
    lines = PRINT_LOGGING.read_text().splitlines()
    planted = {n for n, text in enumerate(lines, 1) if "# planted: RC203" in text}
    assert {s.line for s in result.breaks} == planted
    assert {s.file for s in result.breaks} == {str(PRINT_LOGGING)}  # never logging/__init__.py, warnings
    by_line = {s.line: s for s in result.breaks}
    logging_line = next(n for n in planted if "logging.warning" in lines[n - 1])
    assert by_line[logging_line].function == "report_overflow"
    assert result.graph_count >= 2 and result.ops > 0


def test_ops_by_module_counts_each_block():
    result = traced("gpt2").explain
    per_block = [result.ops_by_module.get(f"transformer.h.{i}", 0) for i in range(4)]
    assert per_block[0] > 0 and len(set(per_block)) == 1
    assert result.graph_count == 1 and result.breaks == [] and result.graph_break_count == 0


def test_a_model_that_raises_under_explain_is_a_trace_error():
    from regcomp_lint.trace.errors import TraceError

    module = load_fixture("raises")
    with pytest.raises(TraceError, match=r"ValueError: Refuses wants a 3-d batch"):
        explain.run_explain(module.make_model(), Batch.from_value(module.make_inputs()))


@pytest.mark.parametrize(
    "entry, path",
    [
        ("L['self'].transformer.h[0].attn", "transformer.h.0.attn"),
        ("L['self']._modules['blocks']._modules['3']", "blocks.3"),
        ("L['fn'].head", "head"),
        ("L['self']", ""),
    ],
)
def test_module_path(entry, path):
    assert explain.module_path(entry) == path
