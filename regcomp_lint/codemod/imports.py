"""Where the imports a conversion adds go: into the script's third-party group.

libcst's ``AddImportsVisitor`` appends a new import after the module's last import, which in
most training scripts is a local one (nanoGPT's ``from model import GPTConfig, GPT``), so
``from accelerate import Accelerator`` would land among the project's own imports. The script's
import block is read as groups separated by blank lines (the isort/ruff layout). Each added
line moves next to the script's imports of the same package (``from accelerate.utils import
...`` after ``from accelerate import ...``), or else to the end of the group that imports
``torch`` (the third-party group) when a later group follows it; otherwise libcst's place stays.
A name added to one of the script's own ``from M import a, b`` lines (libcst puts it first)
moves to where ruff's isort puts it (``ProjectConfiguration, TorchDynamoPlugin, set_seed``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import TypeGuard

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor, _add_imports

from regcomp_lint.codemod.tree import code, found_in_rebuilt

#: The root module whose group is the third-party group.
ANCHOR = "torch"


def place_added_imports(before: cst.Module, after: cst.Module) -> cst.Module:
    """``after`` (``before`` with imports added) with each added import line moved next to the
    script's imports of the same package, or else to the end of its third-party group."""
    after = _sort_merged_names(before, after)
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
    body = _with_unmoved(after.body, body, [a for a in added if not any(a is m for m in moved_lines)])
    return after.with_changes(body=_first_lines_restored(before, after, body, moved_lines))


def _first_lines_restored(
    before: cst.Module, after: cst.Module, body: list[cst.BaseStatement], moved: list[cst.SimpleStatementLine]
) -> list[cst.BaseStatement]:
    """libcst puts the imports above a script's first statement when it is no import (``try:
    import wandb``) and a blank line between them; when all of them moved on, that statement
    is first again and gets its own leading lines back (not a blank first line)."""
    if not body or not before.body:
        return body
    index = next((i for i, s in enumerate(after.body) if s is body[0]), None)
    if not index or not all(any(s is m for m in moved) for s in after.body[:index]):
        return body
    first, old = body[0], before.body[0]
    if not first.with_changes(leading_lines=()).deep_equals(old.with_changes(leading_lines=())):
        return body
    return [first.with_changes(leading_lines=old.leading_lines), *body[1:]]


def _sort_merged_names(before: cst.Module, after: cst.Module) -> cst.Module:
    """``after`` with each name libcst added to one of the script's ``from M import a, b`` lines
    (it puts them first) moved to where isort puts it: after the last name that sorts before it,
    in the line's own layout. The same for both conversions."""
    old_lines: dict[str, list[cst.SimpleStatementLine]] = {}
    for stmt in _import_lines(before.body):
        old_lines.setdefault(_source(stmt), []).append(stmt)
    new_lines: dict[str, list[cst.SimpleStatementLine]] = {}
    for stmt in _import_lines(after.body):
        new_lines.setdefault(_source(stmt), []).append(stmt)
    replaced: dict[int, cst.SimpleStatementLine] = {}
    for source, olds in old_lines.items():
        news = new_lines.get(source, [])
        if len(news) != len(olds):
            continue  # a line was dropped or added: no pairing
        for old, new in zip(olds, news, strict=True):
            merged = _merged_names(old.body[0], new.body[0])
            if merged is not None:
                replaced[id(new)] = new.with_changes(body=[merged])
    if not replaced:
        return after
    return after.with_changes(body=[replaced.get(id(s), s) for s in after.body])


def _merged_names(old: cst.BaseSmallStatement, new: cst.BaseSmallStatement) -> cst.ImportFrom | None:
    """``new`` (``old`` with names added) with the added names in isort's places; None: nothing to do."""
    if not (isinstance(old, cst.ImportFrom) and isinstance(new, cst.ImportFrom)):
        return None
    if isinstance(old.names, cst.ImportStar) or isinstance(new.names, cst.ImportStar):
        return None
    old_aliases = list(old.names)
    before = {_alias_key(a): a for a in old_aliases}
    extra = [a for a in new.names if _alias_key(a) not in before]
    if not extra or not old_aliases:
        return None
    # the script's names as the conversion leaves them (it may have dropped some), in their own form
    names: list[tuple[cst.ImportAlias, bool]] = [
        (before[_alias_key(a)], True) for a in new.names if _alias_key(a) in before
    ]
    for alias in extra:
        key = _isort_key(alias)
        at = max((i + 1 for i, (a, _) in enumerate(names) if _isort_key(a) < key), default=0)
        names.insert(at, (alias, False))
    separator = (
        _without_comment(old_aliases[0].comma)
        if len(old_aliases) > 1 and isinstance(old_aliases[0].comma, cst.Comma)
        else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    )
    last_comma = old_aliases[-1].comma
    kept_separators = {id(a) for a in old_aliases[:-1]}
    aliases = []
    for index, (alias, original) in enumerate(names):
        if index == len(names) - 1:
            comma = last_comma
        elif original and id(alias) in kept_separators:
            comma = alias.comma
        else:
            comma = separator
        aliases.append(alias.with_changes(comma=comma))
    return new.with_changes(names=aliases)


def _alias_key(alias: cst.ImportAlias) -> tuple[str, str | None]:
    return code(alias.name), alias.evaluated_alias


def _isort_key(alias: cst.ImportAlias) -> tuple:
    """ruff's isort order of the names of one ``from`` import (its defaults: order-by-type,
    case-insensitive, natural order): CONSTANTS, then Classes, then functions and variables."""
    name, asname = _alias_key(alias)
    if len(name) > 1 and name.upper() == name and name.lower() != name:
        kind = 0
    elif name[:1].isupper():
        kind = 1
    else:
        kind = 2
    return kind, _natural(name.lower()), _natural(name), _natural(asname or "")


def _natural(text: str) -> tuple:
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part)


def _without_comment(comma: cst.Comma) -> cst.Comma:
    """A separator like ``comma`` without the comment that may follow it on its line."""
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        return comma.with_changes(
            whitespace_after=after.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        )
    return comma


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
        module = code(node.module) if node.module is not None else ""
        return f"from {'.' * len(node.relative)}{module}"
    return code(node)


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
        # libcst gathers the imports at the top with a visitor of its own class, built anew
        # here: that class, with the same dir() trick as below, stands in for it meanwhile
        # (the same visitor otherwise, so any other caller in the meantime sees no difference)
        gatherer = getattr(_add_imports, _GATHERER, None)
        if not isinstance(gatherer, type):  # (another libcst)
            super().visit_Module(node.with_changes(body=_leading_statements(node.body)))
            return
        setattr(_add_imports, _GATHERER, _fast_gatherer(gatherer))
        try:
            super().visit_Module(node.with_changes(body=_leading_statements(node.body)))
        finally:
            setattr(_add_imports, _GATHERER, gatherer)

    def on_visit(self, node: cst.CSTNode) -> bool:
        # the module and the ``from M import ...`` lines ``leave_ImportFrom`` extends (an M it
        # still has names to add from): any other line visited would come back rebuilt, equal
        # but a new node, and be printed anew instead of keeping its text (SourceMetadata.code_of)
        if isinstance(node, cst.SimpleStatementLine):
            if not any(self._extends(small) for small in node.body):
                return False
        elif not isinstance(node, cst.Module):
            return False
        return super().on_visit(node)

    def _extends(self, small: cst.BaseSmallStatement) -> bool:
        """``leave_ImportFrom`` may add names to ``small``: libcst 1.9's test, less its check that
        the line is among the imports at the top (a line visited needlessly comes back the same);
        under another libcst, any ``from`` import."""
        if not isinstance(small, cst.ImportFrom):
            return False
        if not _LIBCST_1_9:
            return True
        if isinstance(small.names, cst.ImportStar):
            return False
        from libcst.helpers import get_absolute_module_from_package_for_import  # (1.9 has it)

        module = get_absolute_module_from_package_for_import(self.context.full_package_name, small)
        return module is not None and (module in self.module_mapping or module in self.alias_mapping)

    def __dir__(self) -> list[str]:
        # libcst's matcher machinery looks through dir() of every new visitor three times for
        # methods its decorators marked (getattr on ~400 names: 10 ms a file); only those can
        # be found, so only those are listed (none: the result is the same, issue 16)
        return _matcher_decorated(type(self))


def _libcst_1_9() -> bool:
    from importlib.metadata import version

    try:
        return version("libcst").startswith("1.9.")
    except Exception:  # (not installed as a distribution)
        return False


#: the libcst whose ``AddImportsVisitor.leave_ImportFrom`` test ``TopImportsAdder._extends`` repeats
_LIBCST_1_9 = _libcst_1_9()
_DECORATED: dict[type, list[str]] = {}
#: the class libcst's AddImportsVisitor gathers the top imports with
_GATHERER = "_GatherTopImportsBeforeStatements"
_FAST: dict[type, type] = {}


def _fast_gatherer(gatherer: type) -> type:
    """``gatherer`` whose ``dir()`` lists only what libcst's matcher machinery can find in it;
    when all it does is in ``leave_Module`` (it reads the module's statements there), it does
    not visit the statements first."""
    fast = _FAST.get(gatherer)
    if fast is None:
        members: dict[str, object] = {"__dir__": lambda self: _matcher_decorated(gatherer)}
        hooks = {
            name
            for name in dir(gatherer)
            if name.startswith(("visit_", "leave_")) and not getattr(getattr(gatherer, name), "_is_no_op", False)
        }
        if hooks == {"leave_Module"} and not _matcher_decorated(gatherer):

            def on_visit(self, node: cst.CSTNode) -> bool:
                gatherer.on_visit(self, node)  # type: ignore[attr-defined]
                return False  # (its on_leave, and so leave_Module, still runs)

            members["on_visit"] = on_visit
        fast = _FAST[gatherer] = type(gatherer.__name__, (gatherer,), members)
    return fast


def _matcher_decorated(cls: type) -> list[str]:
    """The attributes of ``cls`` that libcst's matcher decorators marked (all of them, as the
    default ``dir()``, when this libcst keeps its marks elsewhere)."""
    found = _DECORATED.get(cls)
    if found is None:
        try:
            from libcst.matchers._decorators import (
                CONSTRUCTED_LEAVE_MATCHER_ATTR,
                CONSTRUCTED_VISIT_MATCHER_ATTR,
                VISIT_NEGATIVE_MATCHER_ATTR,
                VISIT_POSITIVE_MATCHER_ATTR,
            )
        except ImportError:
            found = dir(cls)
        else:
            marks = (
                CONSTRUCTED_LEAVE_MATCHER_ATTR,
                CONSTRUCTED_VISIT_MATCHER_ATTR,
                VISIT_NEGATIVE_MATCHER_ATTR,
                VISIT_POSITIVE_MATCHER_ATTR,
            )
            found = [name for name in dir(cls) if any(hasattr(getattr(cls, name, None), m) for m in marks)]
        _DECORATED[cls] = found
    return found


def _leading_statements(body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """The first statement, the import lines after it, and the statement that ends them: all
    that libcst's gathering of the imports at the top of a module looks at. Of the ones that
    are no import line it only asks whether they are one, or a docstring or ``__strict__ = ...``
    line when first: a ``pass`` line stands for the statement that ends them and for a first
    compound statement, so the gathering does not visit a whole ``def main():``."""
    leading: list[cst.BaseStatement] = []
    for index, stmt in enumerate(body):
        if index and not _is_import_line(stmt):
            leading.append(_PLACEHOLDER)
            break
        leading.append(_PLACEHOLDER if isinstance(stmt, cst.BaseCompoundStatement) else stmt)
    return leading


_PLACEHOLDER = cst.SimpleStatementLine(body=[cst.Pass()])


def drop_unused_imports(module: cst.Module, unused: Sequence[tuple[str, str | None, str | None]]) -> cst.Module:
    """Remove the top-level ``from M import N [as A]`` names the conversion made unused (the DDP
    wrap it replaced), when the converted module no longer mentions them: one pass over the
    result, instead of libcst's scope analysis of it."""
    if not unused:
        return module
    # every name the module mentions outside its import statements (attribute names included:
    # a kept import is the safe mistake)
    names = {name.value for name in found_in_rebuilt(module, cst.Name, (cst.Import, cst.ImportFrom))}
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
            or (alias.evaluated_alias or module.code_for_node(alias.name)) in names
        ]
        if len(kept) == len(small.names):
            body.append(stmt)
            continue
        changed = True
        if kept:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            body.append(stmt.with_changes(body=[small.with_changes(names=kept)]))
    return module.with_changes(body=body) if changed else module
