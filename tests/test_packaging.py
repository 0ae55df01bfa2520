"""Packaging facts: one version source, and the type marker shipped with the package.

The version lives in ``regcomp_lint/__init__.py`` only; pyproject reads it (``dynamic``), so
the installed metadata cannot drift from ``regcomp_lint.__version__``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from importlib import metadata, resources
from pathlib import Path

import regcomp_lint

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the tomli backport on 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_pyproject_has_no_literal_version_and_reads_the_package():
    project = PYPROJECT["project"]
    assert "version" not in project
    assert "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "regcomp_lint.__version__"}


def test_installed_metadata_version_is_the_package_version():
    assert metadata.version("regcomp-lint") == regcomp_lint.__version__


def test_py_typed_ships_with_the_package():
    assert resources.files("regcomp_lint").joinpath("py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["regcomp_lint"]


def test_built_wheel_carries_py_typed_and_the_package_version(tmp_path):
    """Built from a copy of the installable files, so the real tree gets no build/ folder."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "regcomp_lint", source / "regcomp_lint", ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = wheels.glob("regcomp_lint-*.whl")
    assert wheel.name.startswith(f"regcomp_lint-{regcomp_lint.__version__}-")
    assert "regcomp_lint/py.typed" in zipfile.ZipFile(wheel).namelist()
