"""RC405 behaviour beyond the examples: span, what counts as handing the plugin on."""

from __future__ import annotations

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.diagnostics import Location
from regcomp_lint.lint.config import Settings

ONLY = Settings(select=("RC405",))
HEAD = "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\nacc = Accelerator()\n"


def rc405(src: str):
    return [d for d in lint_source(src, "train.py", ONLY) if d.code == "RC405"]


def test_span_covers_the_assignment_and_there_is_no_fix():
    [diag] = rc405(HEAD + "plugin = TorchDynamoPlugin(\n    backend='inductor',\n)\n")
    assert (diag.location, diag.end_location) == (Location(4, 1), Location(6, 2))
    assert diag.fix is None
    assert (
        diag.message == "`plugin` is a `TorchDynamoPlugin` that no `Accelerator` receives: pass `dynamo_plugin=plugin`"
    )


@pytest.mark.parametrize(
    "use",
    [
        "Accelerator(dynamo_plugin=plugin)",
        "configure(plugin)",
        "registry['dynamo'] = plugin",
        "self_like.plugin = plugin",
        "plugins = [plugin]",
        "opts = {'dynamo_plugin': plugin}",
        "other = plugin",
        "chosen = plugin or fallback",
        "yield_it = (lambda: plugin)",
        "print(plugin)",
    ],
)
def test_handing_on(use):
    assert rc405(HEAD + f"plugin = TorchDynamoPlugin(backend='eager')\n{use}\n") == []


@pytest.mark.parametrize(
    "use",
    [
        "print(plugin.backend)",
        "plugin.mode = 'max-autotune'",
        "assert plugin is not None",
        "if plugin:\n    pass",
        "x = 1 if plugin else 2",
        "ok = not plugin",
    ],
)
def test_inspecting_is_not_handing_on(use):
    assert len(rc405(HEAD + f"plugin = TorchDynamoPlugin(backend='eager')\n{use}\n")) == 1


def test_module_level_plugin_exported_through_all_is_not_reported():
    assert rc405(HEAD + "__all__ = ['PLUGIN']\nPLUGIN = TorchDynamoPlugin(backend='eager')\n") == []


def test_function_local_plugin_shadowing_a_used_global():
    src = (
        HEAD
        + "plugin = TorchDynamoPlugin()\nacc2 = Accelerator(dynamo_plugin=plugin)\n"
        + ("def f():\n    plugin = TorchDynamoPlugin(backend='eager')\n    return 1\n")
    )
    [diag] = rc405(src)
    assert diag.location.row == 7
