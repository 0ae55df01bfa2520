"""Shared, traced once per test session: the fixture models of ``fixtures/trace/models/`` and
their analyses (a trace takes seconds; every test file that needs one reuses it)."""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "fixtures" / "trace" / "models"
SCRIPTS = REPO / "fixtures" / "trace" / "scripts"
GOLDEN = REPO / "fixtures" / "trace" / "golden"
CLI = REPO / ".venv" / "bin" / "regcomp-lint"
#: the fixtures with a golden report (raises.py and bad_factories.py are error cases)
TRACED = ("gpt2", "vit_sequential", "planted_breaks", "layer_idx")


def load_fixture(name: str):
    """``fixtures/trace/models/<name>.py`` as a module (imported once)."""
    module_name = f"_trace_fixture_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, MODELS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@functools.cache
def traced(name: str):
    """The :class:`Analysis` of fixture ``name`` on the CPU (cached for the session)."""
    pytest.importorskip("torch")
    from regcomp_lint.api import trace_model

    module = load_fixture(name)
    cwd = os.getcwd()
    os.chdir(REPO)  # reports show paths relative to the working directory
    try:
        return trace_model(module.make_model(), module.make_inputs(), device="cpu")
    finally:
        os.chdir(cwd)


@pytest.fixture
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)
    return REPO
