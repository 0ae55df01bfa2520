"""The script's own project modules, read as Python would import them (``ast`` only).

The converter edits one file, but what that file does often lives next to it: a trainer class
(``delegated_loop``), an evaluation that reads the model's attributes (``handed_to_modules``),
an optimizer factory (``optimizers``), a checkpoint helper (``checkpoint_writes``). Nothing is
imported or run; a module that cannot be found is simply not known.

A name comes from a project module by name (``from utils import save_checkpoint``,
``utils.save_checkpoint``) or through a star import (the SSD tutorial's ``from utils import *``):
then, as Python does, the last star import whose module exports the name gives it (``__all__``
when the module has one, else its public top-level names), and a name the script binds itself
wins. A library's star import is taken to define none of the project's names.
"""

from __future__ import annotations

import ast
import builtins
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from regcomp_lint.analysis.reachability.modules import ParsedModule, is_third_party, load_module, module_file
from regcomp_lint.knowledge.training_libraries import LIBRARY_TRAINER_ROOTS

if TYPE_CHECKING:  # (libcst only where a libcst tree is asked about: the fixer's no-op path never imports it)
    import libcst as cst

    from regcomp_lint.codemod.tree import Tree

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
#: How many star imports inside the imported module itself (``from .ckpt import *``) are followed.
_MAX_STAR_DEPTH = 3
#: Package names that are the project's own by convention, found beside the script or not
#: (SwAV's ``from src.utils import restart_from_checkpoint``, survey 23a; ``from utils import
#: ...``): a script published alone still imports them from its project, not from a library.
PROJECT_PACKAGE_NAMES = frozenset({"src", "utils", "util"})


def beside(tree: Tree, path: str | None) -> str:
    """A project module's file as seen from the script's folder (``builders.py``, ``utils/x.py``)."""
    if not path or not tree.filename:
        return "its module"
    return os.path.relpath(path, os.path.dirname(os.path.abspath(tree.filename)))


def is_project_module(qualname: str) -> bool:
    """A module of the script's own project: relative, or neither the standard library nor a
    library with trainers of its own."""
    if qualname.startswith("."):
        return True
    root = qualname.split(".")[0]
    return not (root in sys.stdlib_module_names or is_third_party(root) or root in LIBRARY_TRAINER_ROOTS)


def importer_of(filename: str) -> str:
    """The path imports are resolved from: the file, or for stdin the working directory (where
    ``python - < script.py`` imports from)."""
    if filename.startswith("<") or filename == "-" or not filename:
        return os.path.join(os.getcwd(), "-stdin-.py")
    return filename


def load_local(importer: str, module: str) -> ParsedModule | None:
    path = module_file(importer, module)
    return load_module(path) if path else None


def unread_project_function(tree: Tree, func: cst.BaseExpression) -> str | None:
    """``module.name`` when a call's ``func`` names a function of a project module (imported by
    name) whose file is not found: what it does is out of the conversion's sight (lmforge's
    ``from lmforge.trainer.checkpoint import save_checkpoint``, sgns's ``from .utils import
    write_json`` with no package beside the script). Only a module of the script's own package
    counts: relative, or under a folder the script lives in (``lmforge/trainer/trainer.py``
    importing ``lmforge.trainer.checkpoint``), or of a conventional project package
    (:data:`PROJECT_PACKAGE_NAMES`: SwAV's ``src.utils``); another name may be any library
    (``torchvision``). A name the script does not bind, star-imported (cpc_libri's ``from
    utils.save_functions import *``, survey 23e) where no read star import exports it, comes from
    the last such module that is not found (Python's last star import wins).
    None for a module that is read or no such module."""
    import libcst as cst

    if tree.filename is None:
        return None
    importer = importer_of(tree.filename)
    folders = os.path.dirname(os.path.abspath(importer)).split(os.sep)
    for qualname in sorted(tree.imported_names(func)):
        if "." in qualname and _own_package(qualname, folders):
            parsed = load_local(importer, qualname.rsplit(".", 1)[0])
            if parsed is None or parsed.path is None:
                return qualname
    if not isinstance(func, cst.Name) or _bound_in_script(tree, func) or hasattr(builtins, func.value):
        return None
    stars = star_imports(tree)
    unread = [m for m in stars if m.strip(".") and _own_package(m, folders) and load_local(importer, m) is None]
    if not unread or star_source(importer, stars, func.value) is not None:
        return None
    return f"{unread[-1]}.{func.value}"


def _own_package(qualname: str, folders: list[str]) -> bool:
    """``qualname`` is a module of the script's own package (see :func:`unread_project_function`)."""
    return (
        qualname.startswith(".") or qualname.split(".")[0] in folders or qualname.split(".")[0] in PROJECT_PACKAGE_NAMES
    )


def unread_project_class(tree: Tree, func: cst.BaseExpression) -> tuple[str, str] | None:
    """``("utils", "CheckpointManager")`` when a call's ``func`` is a method of an object the
    script builds from a class of a project module (:func:`is_project_module`, a bare ``utils``
    included) whose file is not found (survey 22a mingpt_matching's
    ``self.checkpoint_manager.save_checkpoint(model=model)`` with ``self.checkpoint_manager =
    CheckpointManager(...)``); None otherwise."""
    import libcst as cst

    from regcomp_lint.codemod.tree import find_all, key_of, single_target

    if tree.filename is None or not isinstance(func, cst.Attribute):
        return None
    receiver = key_of(func.value)
    if receiver is None:
        return None
    for assign in find_all(tree.module, cst.Assign):
        bound = single_target(assign)
        if bound is None or bound[0] != receiver or not isinstance(bound[1], cst.Call):
            continue
        found = unread_class(tree, bound[1].func)
        if found is not None:
            return found
    return None


def unread_class(tree: Tree, cls: cst.BaseExpression) -> tuple[str, str] | None:
    """``("model_agentic", "MIRDModel")`` when ``cls`` names a class imported from a project
    module (:func:`is_project_module`) whose file is not found; None otherwise."""
    import libcst as cst

    if tree.filename is None or not isinstance(cls, cst.Name):
        return None
    importer = importer_of(tree.filename)
    for qualname in sorted(tree.imported_names(cls)):
        module = qualname.rsplit(".", 1)[0]
        if "." in qualname and is_project_module(module):
            parsed = load_local(importer, module)
            if parsed is None or parsed.path is None:
                return module, qualname.rsplit(".", 1)[1]
    return None


def imported_function(tree: Tree, func: cst.BaseExpression) -> tuple[ParsedModule, FunctionNode] | None:
    """The function of a project module a call's ``func`` names (imported by name, or brought by a
    star import), with its module, when the script has a path and that module's file is found."""
    import libcst as cst

    if tree.filename is None:
        return None
    importer = importer_of(tree.filename)
    for parsed, name in _imported_by_name(tree, func):
        if name in parsed.functions:
            return parsed, parsed.functions[name]
    if not isinstance(func, cst.Name) or _bound_in_script(tree, func):
        return None
    found = star_source(importer, star_imports(tree), func.value)
    if found is None or found[0].path is None or func.value not in found[0].functions:
        return None
    return found[0], found[0].functions[func.value]


def imported_class(tree: Tree, func: cst.BaseExpression) -> tuple[ParsedModule, ast.ClassDef] | None:
    """The class of a project module that ``func`` names (imported by name: ``from utils import
    ModelEMA``), with its module, when the module's file is found."""
    for parsed, name in _imported_by_name(tree, func):
        if name in parsed.classes:
            return parsed, parsed.classes[name]
    return None


def _imported_by_name(tree: Tree, func: cst.BaseExpression) -> list[tuple[ParsedModule, str]]:
    """The project modules (found, with a path) that ``func``'s imports name, each with the
    name imported from it (``from utils import ModelEMA``: utils and ``ModelEMA``)."""
    if tree.filename is None:
        return []
    importer = importer_of(tree.filename)
    found = []
    for qualname in sorted(tree.imported_names(func)):
        if "." not in qualname or not is_project_module(qualname):
            continue
        module, name = qualname.rsplit(".", 1)
        parsed = load_local(importer, module)
        if parsed is not None and parsed.path is not None:
            found.append((parsed, name))
    return found


def star_imports(tree: Tree) -> list[str]:
    """The modules the script star-imports, in source order, as :class:`ImportMap` spells them
    (``utils``, ``.utils``)."""
    import libcst as cst

    from regcomp_lint.codemod.tree import dotted, find_all

    found = []
    for node in find_all(tree.module, cst.ImportFrom):
        if isinstance(node.names, cst.ImportStar):
            module = dotted(node.module) if node.module is not None else ""
            found.append("." * len(node.relative) + (module or ""))
    return found


def star_source(importer: str, modules: Sequence[str], name: str, depth: int = 0) -> tuple[ParsedModule, str] | None:
    """Which of the star imports ``modules`` (source order) gives ``name``: the last one whose
    module exports it. Answers the module that defines it (a star import of that module's own is
    followed) and the one of ``modules`` it comes through (``utils``, ``.utils``)."""
    for module in reversed(modules):
        if not is_project_module(module) or not module.strip("."):
            continue
        parsed = load_local(importer, module)
        if parsed is None:
            continue
        listed = _all_names(parsed)
        if (name not in listed) if listed is not None else name.startswith("_"):
            continue
        if _defines(parsed, name):
            return parsed, module
        if depth < _MAX_STAR_DEPTH:
            inner = star_source(parsed.path or importer, parsed.imports.star_modules, name, depth + 1)
            if inner is not None:
                return inner[0], module
        if listed is not None:
            return parsed, module  # exported, from where is not seen
    return None


def _all_names(parsed: ParsedModule) -> set[str] | None:
    """The module's ``__all__`` when it is a literal list or tuple of strings, else None."""
    names = parsed.assignments.get("__all__")
    if isinstance(names, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in names.elts
    ):
        return {e.value for e in names.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return None


def _defines(parsed: ParsedModule, name: str) -> bool:
    return (
        name in parsed.functions
        or name in parsed.classes
        or name in parsed.assignments
        or parsed.imports.imported(name)
    )


def _bound_in_script(tree: Tree, name: cst.Name) -> bool:
    """The script binds ``name`` itself (a def, an assignment, an import by name) where it is read."""
    from libcst.metadata import BuiltinAssignment

    return any(not isinstance(a, BuiltinAssignment) for a in tree.assignments_of(name))
