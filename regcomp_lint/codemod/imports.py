"""Where the imports a conversion adds go: into the script's third-party group.

libcst's ``AddImportsVisitor`` appends a new import after the module's last import, which in
most training scripts is a local one (nanoGPT's ``from model import GPTConfig, GPT``), so
``from accelerate import Accelerator`` would land among the project's own imports. The script's
import block is read as groups separated by blank lines (the isort/ruff layout). Each added
line moves next to the script's imports of the same package (``from accelerate.utils import
...`` after ``from accelerate import ...``), or else to the end of the group that imports
``torch`` (the third-party group) when a later group follows it; otherwise libcst's place stays. to the end of the group that imports ``torch`` (the third-party group) when a later group
follows it. A script without such a group keeps libcst's placement.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TypeGuard

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor

#: The root module whose group is the third-party group.
ANCHOR = "torch"


def place_added_imports(before: cst.Module, after: cst.Module) -> cst.Module:
    """``after`` (``before`` with imports added) with each added import line moved next to the
    script's imports of the same package, or else to the end of its third-party group."""
    existing = {_source(s) for s in _import_lines(before.body)}
    added = [s for s in _import_lines(after.body) if _source(s) not in existing]
    if not added:
        return after
    body: list[cst.BaseStatement] = [s for s in after.body if not any(s is a for a in added)]
    groups = _import_groups(body)
    placed = [s for group in groups for s in group]
    third_party = [g for g in groups if any(_root(s) == ANCHOR for s in g)]
    moved_lines: list[cst.SimpleStatementLine] = []
    standard = [g for g in groups if all(_root(s) in sys.stdlib_module_names for s in g)]
    for line in added:
        same_package = [s for s in placed if _root(s) == _root(line)]
        in_order = _standard_place(standard[0], line) if standard and _root(line) in sys.stdlib_module_names else None
        if in_order is not None:  # `import os` among the script's `import argparse`, `import copy`
            index, at_start = in_order
            moved_lines.append(line)
            line = line.with_changes(leading_lines=standard[0][0].leading_lines if at_start else ())
            if at_start:
                first = standard[0][0]
                body[next(i for i, s in enumerate(body) if s is first)] = first.with_changes(leading_lines=())
            body.insert(index_in(body, standard[0], index), line)
            placed.append(line)
            continue
        if same_package:
            anchor = same_package[-1]
        elif third_party and third_party[-1] is not groups[-1]:
            anchor = third_party[-1][-1]
        else:
            continue  # no third-party group, or nothing after it: libcst's place is right
        moved_lines.append(line)
        line = line.with_changes(leading_lines=())
        body.insert(next(i for i, s in enumerate(body) if s is anchor) + 1, line)
        placed.append(line)
    if not moved_lines:
        return after
    return after.with_changes(
        body=_with_unmoved(after.body, body, [a for a in added if not any(a is m for m in moved_lines)])
    )


def _standard_place(group: list[cst.SimpleStatementLine], line: cst.SimpleStatementLine) -> tuple[int, bool] | None:
    """Where a plain ``import x`` of the standard library goes in the script's standard-library
    group, in isort's order (plain imports sorted by name, before the ``from`` imports): the
    index in ``group`` to insert at, and whether that is its first line. None for a ``from`` line."""
    if not isinstance(line.body[0], cst.Import):
        return None
    name = _source(line)
    for index, stmt in enumerate(group):
        if isinstance(stmt.body[0], cst.ImportFrom) or _source(stmt) > name:
            return index, index == 0
    return len(group), False


def index_in(body: list[cst.BaseStatement], group: list[cst.SimpleStatementLine], index: int) -> int:
    """The position in ``body`` of ``group[index]`` (just after the group's last line when past it)."""
    if index < len(group):
        target = group[index]
        return next(
            i for i, s in enumerate(body) if s is target or (_is_import_line(s) and _source(s) == _source(target))
        )
    last = group[-1]
    return next(i for i, s in enumerate(body) if s is last or (_is_import_line(s) and _source(s) == _source(last))) + 1


def _with_unmoved(
    original: Sequence[cst.BaseStatement], body: list[cst.BaseStatement], unmoved: list[cst.SimpleStatementLine]
) -> list[cst.BaseStatement]:
    """``body`` with the lines that stay where libcst put them put back after the statement
    they followed there."""
    for line in unmoved:
        index = next(i for i, s in enumerate(original) if s is line)
        at = 0
        for previous in reversed(original[:index]):  # the nearest statement before it still in place
            at = next((i + 1 for i, s in enumerate(body) if s is previous), 0)
            if at:
                break
        body.insert(at, line)
    return body


def _source(stmt: cst.SimpleStatementLine) -> str:
    """What a one-import line imports from: ``from M import ...`` -> ``from M`` (libcst adds
    names to such a line in place: it stays where it is), ``import a, b`` -> its code."""
    node = stmt.body[0]
    if isinstance(node, cst.ImportFrom):
        module = cst.Module([]).code_for_node(node.module) if node.module is not None else ""
        return f"from {'.' * len(node.relative)}{module}"
    return cst.Module([]).code_for_node(node)


def _import_lines(body: Sequence[cst.BaseStatement]) -> list[cst.SimpleStatementLine]:
    return [s for s in body if _is_import_line(s)]


def _is_import_line(stmt: cst.CSTNode) -> TypeGuard[cst.SimpleStatementLine]:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom))
    )


def _import_groups(body: Sequence[cst.BaseStatement]) -> list[list[cst.SimpleStatementLine]]:
    """The module's leading imports (after its docstring and ``__future__`` imports), in groups
    separated by blank or comment lines."""
    groups: list[list[cst.SimpleStatementLine]] = []
    for stmt in body:
        if not _is_import_line(stmt):
            if groups:
                break
            continue  # the docstring, or code before the first import
        assert isinstance(stmt, cst.SimpleStatementLine)
        if not groups or stmt.leading_lines:
            groups.append([])
        groups[-1].append(stmt)
    return groups


def _root(stmt: cst.SimpleStatementLine) -> str | None:
    """The top-level package a one-import line imports from (None for a relative import)."""
    node = stmt.body[0]
    if isinstance(node, cst.ImportFrom):
        if node.relative or node.module is None:
            return None
        module: cst.BaseExpression = node.module
    else:
        assert isinstance(node, cst.Import)
        module = node.names[0].name
    while isinstance(module, cst.Attribute):
        module = module.value
    return module.value if isinstance(module, cst.Name) else None


class TopImportsAdder(AddImportsVisitor):
    """libcst's ``AddImportsVisitor``, visiting only what it reads and edits: the module's
    top-level statement lines (it gathers the imports at the top and extends a top-level
    ``from M import ...``). The stock visitor rebuilt every node of the file twice (a gathering
    pass and the transform), most of the fixer's time on large scripts; the result is the same."""

    def visit_Module(self, node: cst.Module) -> None:
        super().visit_Module(node.with_changes(body=_leading_statements(node.body)))

    def on_visit(self, node: cst.CSTNode) -> bool:
        return super().on_visit(node) and isinstance(node, (cst.Module, cst.SimpleStatementLine))


def _leading_statements(body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """The first statement, the import lines after it, and the statement that ends them: all
    that libcst's gathering of the imports at the top of a module looks at."""
    leading: list[cst.BaseStatement] = []
    for index, stmt in enumerate(body):
        leading.append(stmt)
        if index and not _is_import_line(stmt):
            break
    return leading


class _NamesRead(cst.CSTVisitor):
    """Every name the module mentions outside its import statements (attribute names included:
    a kept import is the safe mistake)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def drop_unused_imports(module: cst.Module, unused: Sequence[tuple[str, str | None, str | None]]) -> cst.Module:
    """Remove the top-level ``from M import N [as A]`` names the conversion made unused (the DDP
    wrap it replaced), when the converted module no longer mentions them: one pass over the
    result, instead of libcst's scope analysis of it."""
    if not unused:
        return module
    visitor = _NamesRead()
    module.visit(visitor)
    wanted = {(m, n, a) for m, n, a in unused}
    body: list[cst.BaseStatement] = []
    changed = False
    for stmt in module.body:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar) or small.module is None:
            body.append(stmt)
            continue
        source = module.code_for_node(small.module)
        kept = [
            alias
            for alias in small.names
            if (source, module.code_for_node(alias.name), alias.evaluated_alias) not in wanted
            or (alias.evaluated_alias or module.code_for_node(alias.name)) in visitor.names
        ]
        if len(kept) == len(small.names):
            body.append(stmt)
            continue
        changed = True
        if kept:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            body.append(stmt.with_changes(body=[small.with_changes(names=kept)]))
    return module.with_changes(body=body) if changed else module
