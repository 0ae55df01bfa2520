"""The knowledge tables are consistent with each other and with what rules assume."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from regcomp_lint.knowledge import ACCELERATE_VERSION, TORCH_VERSION
from regcomp_lint.knowledge import backends as B
from regcomp_lint.knowledge import modes as M

ROOT = Path(__file__).resolve().parents[2]


def test_versions_are_recorded():
    assert TORCH_VERSION == "2.13.0" and ACCELERATE_VERSION == "1.15.0"


def test_issue_backends_are_in_the_torch_table():
    for name in (
        "inductor",
        "eager",
        "aot_eager",
        "aot_eager_decomp_partition",
        "cudagraphs",
        "openxla",
        "openxla_eval",
        "tvm",
        "ts",
        "aot_ts",
    ):
        assert name in B.TORCH_BACKENDS
    assert B.TORCH_LISTED_BACKENDS <= B.TORCH_BACKENDS


def test_plugin_and_removed_backends_are_not_torch_builtins():
    assert not set(B.PLUGIN_BACKENDS) & B.TORCH_BACKENDS
    assert not set(B.REMOVED_TORCH_BACKENDS) & (B.TORCH_BACKENDS | set(B.PLUGIN_BACKENDS))
    for replacement in filter(None, B.REMOVED_TORCH_BACKENDS.values()):
        assert B.torch_accepts(replacement)


def test_accelerate_tables():
    assert B.ACCELERATE_DEAD <= set(B.ACCELERATE_BACKENDS)
    assert set(B.ACCELERATE_NEEDS_PLUGIN) <= set(B.ACCELERATE_BACKENDS) - B.ACCELERATE_DEAD
    assert "openxla" not in B.ACCELERATE_BACKENDS and "aot_nvfuser" not in B.ACCELERATE_BACKENDS
    assert B.ACCELERATE_DEAD <= set(B.REMOVED_TORCH_BACKENDS)
    assert B.accelerate_parses("Inductor") and not B.accelerate_parses("openxla")


def test_suggestions_are_valid_names():
    assert all(B.torch_accepts(name) for name in B.TORCH_SUGGESTIONS)
    assert all(B.accelerate_parses(name) for name in B.ACCELERATE_SUGGESTIONS)


def test_modes():
    assert set(M.INDUCTOR_MODES) == set(M.MODE_OPTIONS)
    assert {"default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs", "lite"} == set(M.INDUCTOR_MODES)
    assert M.PLUGIN_DEFAULT_MODE in M.INDUCTOR_MODES


def test_refresh_script_check_agrees_with_the_tables(capsys):
    """bench/read_backend_tables.py --check on the tables torch 2.13 printed (no torch needed)."""
    spec = importlib.util.spec_from_file_location("read_backend_tables", ROOT / "bench" / "read_backend_tables.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    tables = {
        "backends_all": sorted(B.TORCH_BACKENDS),
        "modes": list(M.INDUCTOR_MODES),
        "dynamo_backend_members": list(B.ACCELERATE_BACKENDS),
        "prepare_and_forward": {
            name: ("fails at prepare(): InvalidBackend" if name in B.ACCELERATE_DEAD else "ok")
            for name in B.ACCELERATE_BACKENDS
        },
    }
    assert script.check(tables) == 0
    tables["modes"] = [*tables["modes"], "turbo"]
    tables["prepare_and_forward"]["eager"] = "fails at prepare(): InvalidBackend"
    assert script.check(tables) == 1
    assert "turbo" in capsys.readouterr().out
