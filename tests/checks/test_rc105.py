"""RC105 behaviour beyond the examples: span, fix safety level, import placement, newlines."""

from __future__ import annotations

from regcomp_lint.api import fix_source, lint_source
from regcomp_lint.diagnostics import Applicability, Location
from regcomp_lint.lint.config import Settings

ONLY_RC105 = Settings(select=("RC105",))


def rc105(src: str):
    return [d for d in lint_source(src, "train.py") if d.code == "RC105"]


def test_points_at_the_keyword():
    [diag] = rc105("from accelerate import Accelerator\nacc = Accelerator(cpu=True, dynamo_backend='eager')\n")
    assert (diag.location, diag.end_location) == (Location(2, 29), Location(2, 51))


def test_fix_is_safe_and_applied_by_default():
    src = "from accelerate import Accelerator\nacc = Accelerator(dynamo_backend='inductor')\n"
    [diag] = rc105(src)
    assert diag.fix.applicability is Applicability.SAFE
    fixed, remaining = fix_source(src, config=ONLY_RC105)
    assert "Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))" in fixed
    assert remaining == []


def test_import_goes_after_docstring_and_future_import():
    src = (
        '"""Train."""\nfrom __future__ import annotations\n\n'
        "def main():\n    import accelerate\n    return accelerate.Accelerator(dynamo_backend='eager')\n"
    )
    fixed, _ = fix_source(src, config=ONLY_RC105)
    assert fixed.splitlines()[:3] == [
        '"""Train."""',
        "from __future__ import annotations",
        "from accelerate.utils import TorchDynamoPlugin",
    ]
    assert "accelerate.Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='eager'))" in fixed


def test_crlf_file_keeps_crlf():
    src = "from accelerate import Accelerator\r\nacc = Accelerator(dynamo_backend='eager')\r\n"
    fixed, _ = fix_source(src, config=ONLY_RC105)
    assert fixed == (
        "from accelerate import Accelerator\r\nfrom accelerate.utils import TorchDynamoPlugin\r\n"
        "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='eager'))\r\n"
    )


def test_two_accelerators_share_one_added_import():
    src = (
        "from accelerate import Accelerator\n"
        "a = Accelerator(dynamo_backend='eager')\nb = Accelerator(dynamo_backend='inductor')\n"
    )
    fixed, remaining = fix_source(src, config=ONLY_RC105)
    assert fixed.count("import TorchDynamoPlugin") == 1
    assert fixed.count("TorchDynamoPlugin(backend=") == 2
    assert remaining == []


def test_reuses_top_level_plugin_import_from_accelerate_and_dataclasses():
    for line in (
        "from accelerate import TorchDynamoPlugin as P",
        "from accelerate.utils.dataclasses import TorchDynamoPlugin as P",
    ):
        src = f"{line}\nfrom accelerate import Accelerator\nacc = Accelerator(dynamo_backend='eager')\n"
        fixed, _ = fix_source(src, config=ONLY_RC105)
        assert (
            fixed
            == f"{line}\nfrom accelerate import Accelerator\nacc = Accelerator(dynamo_plugin=P(backend='eager'))\n"
        )


def test_no_fix_when_the_name_is_defined_in_the_file():
    src = "from accelerate import Accelerator\nclass TorchDynamoPlugin:\n    pass\nacc = Accelerator(dynamo_backend='eager')\n"
    [diag] = rc105(src)
    assert diag.fix is None


def test_non_literal_and_multiline_values_are_kept_verbatim():
    src = (
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
        "acc = Accelerator(\n    dynamo_backend=pick(\n        args,  # from the CLI\n    ),\n)\n"
    )
    fixed, _ = fix_source(src, config=ONLY_RC105)
    assert fixed.endswith(
        "acc = Accelerator(\n    dynamo_plugin=TorchDynamoPlugin(backend=pick(\n        args,  # from the CLI\n    )),\n)\n"
    )


def test_prefilter_skips_files_without_the_keyword():
    assert rc105("from accelerate import Accelerator\nAccelerator(**{'dynamo_' + 'backend': 'eager'})\n") == []
