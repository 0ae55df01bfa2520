"""A torch_geometric NeighborLoader (or another NodeLoader/LinkLoader) over a graph on the GPU: refused.

PyG's ``NodeLoader`` and ``LinkLoader`` sample in their collate_fn and turn the sample into a
``Data`` batch in one of two places: in the collate_fn too when ``filter_per_worker`` is True, or in
their own ``_get_iterator`` otherwise. PyG infers the keyword from the graph (True on the CPU,
False for a graph on the GPU: ``data = dataset[0].to(device)`` before the loader). accelerate's
``prepare()`` rebuilds a training loader as a plain DataLoader with the same dataset and
collate_fn, without the loader's ``_get_iterator``: over a CPU graph the rebuilt loader yields the
same batches (replica, survey 23d: losses and sample counts equal on 1 and 2 processes); with
``filter_per_worker=False`` it yields the raw ``SamplerOutput`` and the script fails at its first
batch (``AttributeError: 'SamplerOutput' object has no attribute 'to'``, on 1 process and on 2).
So a training loader of that family is refused when the script sets the keyword to anything but
True, or moves the graph it samples to a device, naming the loader and that line.
"""

from __future__ import annotations

import ast

from regcomp_lint.codemod.lint_view import LintView
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.training_libraries import PYG_FILTER_KEYWORD, PYG_FILTERING_LOADERS

#: Tensor/Data methods that put the graph on a device (``Data.to`` moves it in place and returns it).
_PLACING = ("to", "cuda")


def graph_loader_refusal(view: LintView, prepared: list[str]) -> str | None:
    """Why the script is not converted, when a training loop iterates one of the ``prepared``
    loaders and it is a torch_geometric NodeLoader/LinkLoader that would not filter in its collate_fn."""
    roles, parsed = view.roles, view.parsed
    if roles is None or parsed is None:
        return None
    for expr, where in roles.training_iterables():
        if not (isinstance(expr, ast.Name) and expr.id in prepared):
            continue
        bound = roles.bindings.lookup(expr, where)
        call = bound.value if bound is not None else None
        if not (isinstance(call, ast.Call) and roles.ctx.imports.resolves_to(call.func, *PYG_FILTERING_LOADERS)):
            continue
        keyword = next((kw for kw in call.keywords if kw.arg == PYG_FILTER_KEYWORD), None)
        if keyword is not None:
            if isinstance(keyword.value, ast.Constant) and keyword.value.value is True:
                continue
            why = f"it passes {PYG_FILTER_KEYWORD}={ast.unparse(keyword.value)}"
        else:
            placed = _placed_graph(view, parsed, call)
            if placed is None:
                continue
            why = (
                f"the graph it samples is moved to a device at line {placed.lineno} (.{_placing_text(placed)}), "
                f"for which PyG infers {PYG_FILTER_KEYWORD}=False"
            )
        return (
            f"the training loader at line {call.lineno} is torch_geometric's {ast.unparse(call.func)} and {why}: "
            "such a loader turns each sampled batch into a Data object in its own iterator, which accelerate's "
            "prepare() does not keep (it rebuilds the loader as a plain DataLoader with the same collate_fn), so the "
            "prepared loader would yield raw SamplerOutput objects and the script would fail at its first batch; keep "
            f"the graph on the CPU or pass {PYG_FILTER_KEYWORD}=True (with num_workers=0), or convert by hand"
        )
    return None


def _placed_graph(view: LintView, parsed: ast.Module, call: ast.Call) -> ast.Call | None:
    """The ``.to(...)``/``.cuda()`` call that puts the graph ``call`` samples on a device, if the
    file shows one: the argument itself, the value its name is bound to where the loader is
    built, or a statement ``graph.to(device)`` above the loader."""
    graph = call.args[0] if call.args else next((kw.value for kw in call.keywords if kw.arg == "data"), None)
    if graph is None:
        return None
    if (placed := _placing_call(graph)) is not None:
        return placed
    if not isinstance(graph, ast.Name) or view.roles is None:
        return None
    where = view.where_inside(graph)
    bound = view.roles.bindings.lookup(graph, where) if where is not None else None
    if bound is not None and isinstance(bound.value, ast.expr) and (placed := _placing_call(bound.value)) is not None:
        return placed
    for stmt in walk(parsed):
        if (
            isinstance(stmt, ast.Expr)
            and stmt.lineno < call.lineno
            and (placed := _placing_call(stmt.value)) is not None
            and isinstance(placed.func, ast.Attribute)
            and isinstance(placed.func.value, ast.Name)
            and placed.func.value.id == graph.id
        ):
            return placed
    return None


def _placing_text(call: ast.Call) -> str:
    func = call.func
    return f"{func.attr}({', '.join(ast.unparse(a) for a in call.args)})" if isinstance(func, ast.Attribute) else ""


def _placing_call(expr: ast.expr) -> ast.Call | None:
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _PLACING:
        return expr
    return None
