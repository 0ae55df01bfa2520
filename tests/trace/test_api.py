"""The Python API: ``regcomp_lint.recommend`` / ``trace_model``, and a torch-free ``import regcomp_lint``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.trace.conftest import REPO, load_fixture


def test_import_regcomp_lint_does_not_import_torch():
    code = (
        "import sys, regcomp_lint; from regcomp_lint import recommend, apply_plan, trace_model, Plan; "
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)


def test_recommend_returns_a_plan(tmp_path):
    pytest.importorskip("torch")
    import regcomp_lint
    from regcomp_lint.plan import Plan

    module = load_fixture("vit_sequential")
    plan = regcomp_lint.recommend(module.make_model(), module.make_inputs(), backend="eager")
    assert isinstance(plan, Plan)
    assert plan.strategy == "regional" and plan.regions == ["blocks"] and plan.model == "TinyViT"
    assert plan.plugin == {"backend": "eager", "fullgraph": True, "use_regional_compilation": True}
    path = tmp_path / "plan.json"
    plan.dump(path)
    assert Plan.load(path) == plan


def test_trace_model_rejects_bad_inputs_clearly():
    torch = pytest.importorskip("torch")
    from regcomp_lint import trace_model
    from regcomp_lint.trace.errors import TraceError

    with pytest.raises(TraceError, match="example_inputs returned str"):
        trace_model(torch.nn.Linear(2, 2), "not a batch")
