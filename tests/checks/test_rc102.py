"""RC102 behaviour beyond the examples: which backend makes the mode matter, fix safety, positions."""

from __future__ import annotations

import pytest

from regcomp_lint.api import fix_source, lint_source
from regcomp_lint.diagnostics import Applicability, Location
from regcomp_lint.knowledge.modes import INDUCTOR_MODES


def rc102(src: str):
    return [d for d in lint_source(src, "train.py") if d.code == "RC102"]


@pytest.mark.parametrize("mode", INDUCTOR_MODES)
def test_every_torch_2_13_mode_is_accepted(mode):
    assert rc102(f"import torch\nm = torch.compile(m, mode={mode!r})\n") == []
    assert (
        rc102(
            f"from accelerate.utils import TorchDynamoPlugin\np = TorchDynamoPlugin(backend='inductor', mode={mode!r})\n"
        )
        == []
    )


@pytest.mark.parametrize(
    "backend,reported",
    [
        (None, True),
        ("'inductor'", True),
        ("'eager'", False),  # eager ignores the mode (torch logs a warning)
        ("'Inductor'", False),  # RC101's business: torch.compile fails on the backend first
        ("args.backend", False),
        ("my_backend", False),
    ],
)
def test_mode_matters_only_for_inductor(backend, reported):
    extra = f", backend={backend}" if backend else ""
    assert bool(rc102(f"import torch\nm = torch.compile(m, mode='max_autotune'{extra})\n")) is reported


def test_plugin_backend_is_case_insensitive():
    assert rc102(
        "from accelerate.utils import TorchDynamoPlugin\np = TorchDynamoPlugin(backend='INDUCTOR', mode='fast')\n"
    )


def test_finding_points_at_the_mode_and_fix_is_unsafe():
    src = 'import torch\nm = torch.compile(m, mode="max_autotune")\n'
    [diag] = rc102(src)
    assert (diag.location, diag.end_location) == (Location(2, 27), Location(2, 41))
    assert diag.fix.applicability is Applicability.UNSAFE
    assert fix_source(src)[0] == src
    assert fix_source(src, unsafe=True)[0] == src.replace("max_autotune", "max-autotune")


def test_unclear_mode_gets_the_list_and_no_fix():
    [diag] = rc102("import torch\nm = torch.compile(m, mode='fast')\n")
    assert diag.fix is None
    assert "max-autotune-no-cudagraphs" in diag.message and "lite" in diag.message


def test_keras_compile_is_not_torch():
    assert rc102("import torch\nmodel.compile(optimizer='adam', mode='fast')\n") == []
