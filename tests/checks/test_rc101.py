"""RC101 behaviour the rule's examples cannot express: positions, fix details, file-wide state."""

from __future__ import annotations

import pytest

from regcomp_lint.api import fix_source, lint_source
from regcomp_lint.checks.rc101_unknown_backend import judge_accelerate_backend, judge_torch_backend
from regcomp_lint.diagnostics import Applicability, Location
from regcomp_lint.knowledge import backends as B


def rc101(src: str):
    return [d for d in lint_source(src, "train.py") if d.code == "RC101"]


def test_finding_points_at_the_string_literal():
    [diag] = rc101("import torch\nmodel = torch.compile(model, backend='inductr')\n")
    assert (diag.location, diag.end_location) == (Location(2, 38), Location(2, 47))
    assert diag.name == "unknown-backend"


def test_columns_count_characters_on_non_ascii_lines():
    [diag] = rc101("import torch\nmodèle = torch.compile(modèle, backend='inductr')\n")
    assert diag.location == Location(2, 40)


def test_fix_is_unsafe_and_not_applied_by_default():
    src = "import torch\nmodel = torch.compile(model, backend='inductr')\n"
    [diag] = rc101(src)
    assert diag.fix.applicability is Applicability.UNSAFE
    assert fix_source(src)[0] == src
    assert fix_source(src, unsafe=True)[0] == src.replace("inductr", "inductor")


@pytest.mark.parametrize(
    "literal,fixed",
    [
        ('"Inductor"', '"inductor"'),
        ("'''Inductor'''", "'''inductor'''"),
        ('r"Inductor"', 'r"inductor"'),
        ('"Induc" "tor"', '"inductor"'),
    ],
)
def test_fix_keeps_prefix_and_quotes(literal, fixed):
    src = f"import torch\nm = torch.compile(m, backend={literal})\n"
    assert fix_source(src, unsafe=True)[0] == f"import torch\nm = torch.compile(m, backend={fixed})\n"


def test_no_fix_without_one_clear_suggestion():
    [diag] = rc101("import torch\nm = torch.compile(m, backend='mlir')\n")
    assert diag.fix is None
    assert "did you mean" not in diag.message


def test_backend_registered_after_use_is_accepted():
    src = (
        "import torch\n"
        "m = torch.compile(m, backend='toy')\n"
        "@torch._dynamo.register_backend(name='toy')\n"
        "def toy_backend(gm, inputs):\n"
        "    return gm\n"
    )
    assert rc101(src) == []


def test_decorator_factory_registers_the_function_name():
    src = (
        "import torch\n"
        "@torch._dynamo.register_backend(tags=('debug',))\n"
        "def toy(gm, inputs):\n"
        "    return gm\n"
        "a = torch.compile(m, backend='toy')\n"
        "b = torch.compile(m, backend='other')\n"
    )
    assert [d.location.row for d in rc101(src)] == [6]


def test_registration_under_unknown_name_silences_torch_sites_only():
    src = (
        "import torch\n"
        "from accelerate.utils import TorchDynamoPlugin\n"
        "torch._dynamo.register_backend(compiler_fn=fn, name=NAME)\n"
        "m = torch.compile(m, backend='whatever')\n"
        "p = TorchDynamoPlugin(backend='whatever')\n"
    )
    [diag] = rc101(src)
    assert diag.location.row == 5


def test_star_import_and_unimported_plugin_name_are_recognised():
    assert len(rc101("from accelerate.utils import *\np = TorchDynamoPlugin(backend='openxla')\n")) == 1
    assert len(rc101("p = TorchDynamoPlugin(backend='openxla')\n")) == 1


def test_noqa_silences_and_counts_as_used():
    src = "import torch\nm = torch.compile(m, backend='inductr')  # noqa: RC101\n"
    assert [d.code for d in lint_source(src, "t.py")] == []


def test_messages_name_the_failure_and_the_version():
    assert "torch 2.13.0" in judge_torch_backend("aot_nvfuser").message
    assert "ValueError" in judge_accelerate_backend("openxla", "`TorchDynamoPlugin(...)`").message
    assert "InvalidBackend" in judge_accelerate_backend("OFI", "`Accelerator(...)`").message


@pytest.mark.parametrize("name", sorted(B.TORCH_BACKENDS | set(B.PLUGIN_BACKENDS)))
def test_every_torch_and_plugin_backend_is_accepted_by_torch_compile(name):
    assert judge_torch_backend(name) is None


@pytest.mark.parametrize("name", B.ACCELERATE_BACKENDS)
def test_accelerate_members_fail_exactly_when_dead(name):
    for spelling in (name, name.upper(), name.title()):
        verdict = judge_accelerate_backend(spelling, "`TorchDynamoPlugin(...)`")
        assert (verdict is not None) == (name in B.ACCELERATE_DEAD), spelling


def test_openxla_differs_between_torch_and_accelerate():
    assert judge_torch_backend("openxla") is None
    assert judge_accelerate_backend("openxla", "x") is not None
    assert judge_torch_backend("aot_nvfuser") is not None
    assert judge_accelerate_backend("aot_nvfuser", "x") is not None


def test_torch_lookup_is_case_sensitive():
    assert judge_torch_backend("Inductor").suggestion == "inductor"
    assert judge_accelerate_backend("Inductor", "x") is None
