"""The package's folders are its layers, and imports only go down.

A module may import modules of its own layer or of lower ones, never higher; ``codemod``,
``output`` and ``trace`` share a rank but are independent of one another. Imports under
``if TYPE_CHECKING:`` are types only and do not count. ``regcomp_lint.api`` is the public
library surface: nothing inside the package imports it (it would make import cycles).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "regcomp_lint"

#: Lowest first.
LAYERS: list[tuple[str, ...]] = [
    ("knowledge", "diagnostics", "plan", "errors"),
    ("files",),
    ("analysis",),
    ("checks",),
    ("lint",),
    ("codemod", "output", "trace"),
    ("cli",),
    ("api", "__init__", "__main__"),
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
#: Units of one rank that must not import each other.
INDEPENDENT = {"codemod", "output", "trace"}


def unit_of(module: str) -> str:
    """``regcomp_lint.lint.engine`` -> ``lint``; ``regcomp_lint`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skipped


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every runtime import of ``regcomp_lint`` in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "regcomp_lint"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "regcomp_lint":
                continue
            if node.module == "regcomp_lint":  # `from regcomp_lint import x`: x is a submodule or a re-export
                found += [(node.lineno, f"regcomp_lint.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_unit_of_the_package_has_a_layer():
    units = {
        p.name if p.is_dir() else p.stem
        for p in PACKAGE.iterdir()
        if p.suffix == ".py" or (p / "__init__.py").is_file()
    }
    assert units <= set(RANK), f"give these a layer in LAYERS (and README's Layout): {sorted(units - set(RANK))}"
    assert set(RANK) <= units, f"LAYERS names units that do not exist: {sorted(set(RANK) - units)}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_the_layers(path: Path):
    here = unit_of(module_name(path))
    wrong = []
    for line, target in imports_of(path):
        there = unit_of(target)
        if there == "__version__":
            there = "__init__" if here == "__init__" else "knowledge"  # the version string is a fact, not a layer
        if there == here or there not in RANK:
            continue
        if RANK[there] > RANK[here] or (RANK[there] == RANK[here] and {here, there} <= INDEPENDENT):
            wrong.append(f"line {line}: {target} ({there}, layer {RANK[there]}) from {here} (layer {RANK[here]})")
    assert not wrong, "imports must go to lower layers:\n" + "\n".join(wrong)


def test_nothing_inside_the_package_imports_the_public_api():
    importers = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in _modules()
        if path.name not in ("api.py",) and path != PACKAGE / "__init__.py"
        for line, target in imports_of(path)
        if target == "regcomp_lint.api" or target.startswith("regcomp_lint.api.")
    ]
    assert not importers


def test_the_checker_sees_a_wrong_import(tmp_path):
    """The check itself can fail: an upward import in a synthetic module is reported."""
    fake = tmp_path / "mod.py"
    fake.write_text(
        "from typing import TYPE_CHECKING\nfrom regcomp_lint.cli import main\nif TYPE_CHECKING:\n    from regcomp_lint.api import x\n"
    )
    assert imports_of(fake) == [(2, "regcomp_lint.cli")]
    assert RANK[unit_of("regcomp_lint.cli")] > RANK[unit_of("regcomp_lint.files.reading")]
