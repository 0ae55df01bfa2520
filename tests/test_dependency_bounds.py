"""The declared lower bounds are the versions the lowest-bounds job installs and tests.

``constraints-lowest.txt`` pins every direct dependency (runtime, ``test`` and ``trace`` extras) to
the minimum pyproject declares; ``scripts/test_lowest.sh`` installs with it and runs the tests,
among them the codemod and ``regcomp-fix`` tests, so a bound that does not work fails there (libcst
1.5.1 once broke ``regcomp-fix`` on every file while pyproject allowed it). These tests keep the two
files from drifting apart, and inside the lowest job check that the minima really are installed.
"""

from __future__ import annotations

import os
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the tomli backport on 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: The extras the lowest job installs (``bench`` is for benchmarks only and declares no bounds).
TESTED_EXTRAS = ("test", "trace")


def declared_requirements() -> list[Requirement]:
    project = PYPROJECT["project"]
    lines = list(project["dependencies"])
    for extra in TESTED_EXTRAS:
        lines.extend(project["optional-dependencies"][extra])
    return [Requirement(line) for line in lines]


def lowest_pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for raw in (ROOT / "constraints-lowest.txt").read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep, f"constraints-lowest.txt: {raw!r} is not an exact pin"
        pins[canonicalize_name(name)] = Version(version.strip())
    return pins


def lower_bound(requirement: Requirement) -> Version:
    bounds = [spec for spec in requirement.specifier if spec.operator == ">="]
    others = [str(spec) for spec in requirement.specifier if spec.operator != ">="]
    assert len(bounds) == 1, f"{requirement}: declare exactly one lower bound (>=)"
    assert not others, f"{requirement}: only a lower bound is declared, upper bounds stay open ({others})"
    return Version(bounds[0].version)


def test_every_declared_minimum_is_pinned_in_constraints_lowest():
    pins = lowest_pins()
    for requirement in declared_requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is declared but not pinned in constraints-lowest.txt"
        assert pins[name] == lower_bound(requirement), (
            f"{requirement.name}: pyproject declares >={lower_bound(requirement)}, constraints-lowest.txt pins {pins[name]}"
        )


def test_constraints_lowest_pins_only_declared_dependencies():
    declared = {canonicalize_name(requirement.name) for requirement in declared_requirements()}
    assert set(lowest_pins()) <= declared


def test_trace_extra_allows_only_the_torch_that_is_tested():
    """torch 2.13.0 is the only build the lowest job can install (any other pulls a CUDA build)."""
    torch = next(req for req in declared_requirements() if canonicalize_name(req.name) == "torch")
    assert lower_bound(torch) == lowest_pins()["torch"] == Version("2.13.0")


@pytest.mark.skipif(not os.environ.get("REGCOMP_LOWEST"), reason="only inside scripts/test_lowest.sh")
def test_lowest_job_runs_with_the_declared_minima():
    """The suite around this test (codemod, regcomp-fix, trace) ran with exactly the minima."""
    for name, pinned in lowest_pins().items():
        try:
            installed = Version(metadata.version(name))
        except metadata.PackageNotFoundError:
            # tomli is only a dependency before Python 3.11
            assert name == "tomli" and sys.version_info >= (3, 11), f"{name} is not installed"
            continue
        assert installed.release == pinned.release, f"{name}: {installed} installed, {pinned} pinned"
