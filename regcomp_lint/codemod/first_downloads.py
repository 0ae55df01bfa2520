"""Datasets the script downloads are fetched by the main process first.

``datasets.MNIST("../data", train=True, download=True)`` ran in one process; launched on several,
every process would download into the same folder at once (a half-written archive, a
``FileExistsError``). Statements that download, in the block where the ``Accelerator`` is
created and after it, go under ``with accelerator.main_process_first():`` -- the main process
downloads, the others then find the files. Downloads elsewhere (before the ``Accelerator``
exists, in a helper) are named in a note.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import expression
from regcomp_lint.codemod.tree import Block, Tree, code, find_all, init_of
from regcomp_lint.knowledge.torch_api import DOWNLOADERS

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


_STATEMENTS = (cst.SimpleStatementLine, cst.If, cst.With, cst.Try)
#: How many calls of the script's own functions are followed to a download (``get_loader(args)``
#: whose body builds ``datasets.CIFAR10(..., download=True)``).
_HELPER_DEPTH = 2


def may_download(tree: Tree) -> bool:
    """False when no statement of the script can download: its text holds neither ``download``
    nor both the first and the last word of a name of :data:`DOWNLOADERS` (a call resolves to
    ``requests.get`` only through an import that names ``requests``, and ``get`` is written in the
    call or in that import). Once per script."""
    found = _MAY_DOWNLOAD.get(tree)
    if found is None:
        text = tree.text
        found = _MAY_DOWNLOAD[tree] = "download" in text or any(
            name.split(".", 1)[0] in text and name.rsplit(".", 1)[-1] in text for name in DOWNLOADERS
        )
    return found


_MAY_DOWNLOAD: weakref.WeakKeyDictionary[Tree, bool] = weakref.WeakKeyDictionary()


def downloads(tree: Tree, stmt: cst.CSTNode) -> bool:
    """A statement that downloads: a call with ``download=True`` (torchvision, torchtext
    datasets), or a fetch or an archive extraction of :data:`DOWNLOADERS`, also inside a compound
    statement (GCN's ``if <files exist>: ... else: with requests.get(url) as f: ...``)."""
    if not may_download(tree):
        return False
    if isinstance(stmt, cst.SimpleStatementLine) and any(
        arg.keyword is not None and arg.keyword.value == "download" and code(arg.value).strip() == "True"
        for call in find_all(stmt, cst.Call)
        for arg in call.args
    ):
        return True
    if not isinstance(stmt, _STATEMENTS):
        return False
    return any(tree.resolves_to(call.func, *DOWNLOADERS) for call in find_all(stmt, cst.Call, enter_functions=False))


def download_helper(tree: Tree, stmt: cst.CSTNode, depth: int = 0) -> cst.FunctionDef | None:
    """The script's own function that ``stmt`` calls and that downloads (the ViT example's
    ``train_loader, test_loader = get_loader(args)``), followed a few calls deep."""
    if depth >= _HELPER_DEPTH or not isinstance(stmt, _STATEMENTS) or not may_download(tree):
        return None
    for call in find_all(stmt, cst.Call, enter_functions=False):
        function = tree.function_named(call) or _init_of_class_built(tree, call)
        if function is None:
            continue
        for inner in find_all(function, _STATEMENTS, enter_functions=False):
            if downloads(tree, inner) or download_helper(tree, inner, depth + 1) is not None:
                return function
    return None


def _init_of_class_built(tree: Tree, call: cst.Call) -> cst.FunctionDef | None:
    """The ``__init__`` of the script's own class that ``call`` builds: the torchaudio tutorial's
    ``SubsetSC("training")``, whose ``__init__`` calls ``super().__init__("./", download=True)``."""
    if not isinstance(call.func, cst.Name):
        return None
    for cls in tree.module.body:
        if isinstance(cls, cst.ClassDef) and cls.name.value == call.func.value:
            return init_of(cls)
    return None


def _in_launcher_only(planner: Planner, stmt: cst.CSTNode) -> bool:
    """``stmt`` runs in the launching process alone: the script starts its workers with
    ``mp.spawn(worker, ...)`` and ``stmt`` is in a function that no worker reaches (``main()``
    downloading the data set once before it spawns). Module-level code is not: each spawned
    process imports the script again."""
    distribution = getattr(planner, "distribution", None)
    spawns = getattr(distribution, "spawn", None) or []
    if not spawns:
        return False
    tree = planner.tree
    enclosing = tree.enclosing_functions(stmt)
    if not enclosing:
        return False
    workers: list[cst.FunctionDef] = []
    for call in spawns:
        target = call.args[0].value if call.args and call.args[0].keyword is None else None
        if not isinstance(target, cst.Name):
            return False
        workers += [f for f in find_all(tree.module, cst.FunctionDef) if f.name.value == target.value]
    if not workers:
        return False
    reached: set[cst.FunctionDef] = set(workers)
    frontier = list(workers)
    while frontier:
        for callee, _ in planner.graph.calls_from(frontier.pop()):
            if callee not in reached:
                reached.add(callee)
                frontier.append(callee)
    return not any(function in reached for function in enclosing)


def download_first(planner: Planner, block: Block, accelerator_at: int) -> None:
    """Put each downloading statement of ``block`` from ``accelerator_at`` on (one that downloads,
    or calls a function of the script that does) under its own
    ``with accelerator.main_process_first():`` (the statement as the other edits left it, its
    comments above the ``with``); note the downloads it cannot reach."""
    tree = planner.tree
    if not may_download(tree):
        return  # (the statements below would all answer no)
    acc = planner.acc_key
    reached: list[cst.CSTNode] = []
    helpers: list[cst.FunctionDef] = []
    for index, stmt in enumerate(block.body):
        if index < accelerator_at:
            continue
        helper = None if downloads(tree, stmt) else download_helper(tree, stmt)
        if helper is not None or downloads(tree, stmt):
            reached.append(stmt)
            owner = tree.class_of(helper) if helper is not None else None
            named = f"{owner.name.value}.{helper.name.value}" if owner is not None and helper is not None else None
            where = f" (in {named or helper.name.value}())" if helper is not None else ""
            planner.notes.append(
                f"the dataset download at line {tree.line(stmt)}{where} runs under {acc}.main_process_first(): the "
                "main process downloads, the others then read its files"
            )
            if helper is not None:
                helpers.append(helper)

    def wrap(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        return cst.With(
            items=[cst.WithItem(expression(f"{acc}.main_process_first()", planner.module))],
            body=cst.IndentedBlock(body=[updated.with_changes(leading_lines=[])]),
            leading_lines=updated.leading_lines,
        )

    for node in reached:
        planner.edits.on(node, wrap)
    covered = [*reached, *helpers]
    missed = [
        s
        for s in find_all(tree.module, _STATEMENTS)
        if downloads(tree, s) and not any(tree.contains(r, s) or tree.contains(s, r) for r in covered)
    ]
    missed = [s for s in missed if not any(o is not s and tree.contains(o, s) for o in missed)]  # the outermost only
    missed = [s for s in missed if not _in_launcher_only(planner, s)]
    if missed:
        lines = ", ".join(str(tree.line(s)) for s in missed)
        planner.notes.append(
            f"the download at line(s) {lines} runs in every process: under several processes, download once "
            "first (run the script once on one process, or call it under "
            f"`with {acc}.main_process_first():` in the function that creates the Accelerator)"
        )
