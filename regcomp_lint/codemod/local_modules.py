"""The script's own project modules, read as Python would import them (``ast`` only).

The converter edits one file, but what that file does often lives next to it: a trainer class
(``delegated_loop``), an evaluation that reads the model's attributes (``handed_to_modules``),
an optimizer factory (``optimizers``), a checkpoint helper (``checkpoint_writes``). Nothing is
imported or run; a module that cannot be found is simply not known.
"""

from __future__ import annotations

import ast
import os
import sys

from regcomp_lint.analysis.reachability.modules import ParsedModule, is_third_party, load_module, module_file
from regcomp_lint.codemod.tree import Tree
from regcomp_lint.knowledge.training_libraries import LIBRARY_TRAINER_ROOTS

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


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


def imported_function(tree: Tree, qualnames: set[str]) -> tuple[ParsedModule, FunctionNode] | None:
    """The function of a project module one of ``qualnames`` (a call's imported names) names,
    with its module, when the script has a path and that module's file is found."""
    if tree.filename is None:
        return None
    importer = importer_of(tree.filename)
    for qualname in sorted(qualnames):
        if "." not in qualname or not is_project_module(qualname):
            continue
        module, name = qualname.rsplit(".", 1)
        parsed = load_local(importer, module)
        if parsed is not None and parsed.path is not None and name in parsed.functions:
            return parsed, parsed.functions[name]
    return None
