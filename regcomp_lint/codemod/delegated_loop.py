"""A script without a training step of its own that hands its model to a trainer it imports.

minGPT's ``projects/chargpt/chargpt.py`` builds ``Trainer(config, model, dataset)`` from
``mingpt/trainer.py`` and calls ``trainer.run()``; improved-diffusion's ``image_train.py`` calls
``TrainLoop(model=model, ...).run_loop()``. Neither file has an ``X.backward()``, so both looked
like "nothing to convert" (exit 0, no word). This module names the trainer method that runs the
loop, so the refusal says where the training happens and what to convert instead.

Evidence, strongest first: the trainer's module is readable (next to the script or in a folder
above it, as Python would import it) and the method, or a method of its class it calls, has an
``X.backward()``; or, when the module cannot be read, an object the script uses as a model
(``.to()``, ``.parameters()``, ``.state_dict()``, ...) is handed to the trainer. Only the
project's own modules count: a library's trainer (transformers, Lightning) is not this tool's to
convert. ``ast`` only; nothing is imported or run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from regcomp_lint.analysis.name_resolution import ImportMap, module_imports
from regcomp_lint.analysis.reachability.modules import ParsedModule
from regcomp_lint.codemod.local_modules import importer_of, is_project_module, load_local, star_source
from regcomp_lint.files.discovery import shown_path
from regcomp_lint.knowledge.torch_api import NOT_OPTIMIZER_MODULES

#: Methods that use an object as an ``nn.Module``: a name the script calls them on is a model.
_MODEL_METHODS = frozenset(
    {"to", "cuda", "parameters", "named_parameters", "state_dict", "load_state_dict", "train", "eval"}
)
#: Methods of an imported helper that never run a training loop (an EMA's ``update()``).
_NOT_LOOPS = frozenset({"update", "step", "zero_grad", "load", "save", "close"})
#: Words in a helper's name that mark it as checkpoint I/O: MAE's ``misc.save_model(args=args,
#: model=model, optimizer=optimizer, ...)`` is handed the model and its optimizer like a training
#: function, and was named as the training loop (survey23a).
_CHECKPOINT_WORDS = ("save", "load", "checkpoint", "ckpt", "resume", "restore")
#: How many ``from .x import Trainer`` re-exports (a package ``__init__``) are followed.
_MAX_REEXPORTS = 3
#: How many ``self.method()`` calls deep the trainer's methods are searched for a backward.
_MAX_SELF_CALLS = 4


@dataclass(frozen=True)
class DelegatedLoop:
    """``trainer.run()`` at ``line`` of the script runs ``qualname`` (``mingpt.trainer.Trainer.run``)."""

    qualname: str
    line: int
    #: the trainer's file, when it could be read
    path: str | None = None
    #: where the method is defined and where its ``X.backward()`` is, in ``path``
    method_line: int | None = None
    backward_line: int | None = None
    #: the model-like names the script hands to the trainer (evidence when ``path`` is None)
    models: tuple[str, ...] = ()
    #: a function of that module (``train(config, model, ...)``), not a trainer class's method
    function: bool = False


def find_delegated_loop(tree: ast.Module, filename: str) -> DelegatedLoop | None:
    """The imported trainer method this script (which has no backward) runs, or None."""
    imports = module_imports(tree)
    constructed = _constructions(tree)
    models = _model_names(tree)
    importer = importer_of(filename)
    names = _Names(importer, imports, _bound_names(tree))
    unread: DelegatedLoop | None = None
    calls = [s for s in ast.walk(tree) if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)]
    backward = _unread_backward_function(tree, names, models, _optimizer_names(constructed, names))
    for stmt in sorted(calls, key=lambda s: (s.lineno, s.col_offset)):
        call = stmt.value
        assert isinstance(call, ast.Call)
        function = _function_with_backward(importer, names, call)
        if function is not None:  # `train(config, model, train_iter, ...)` from train_eval.py
            return DelegatedLoop(function[0], stmt.lineno, *function[1:], function=True)
        if not isinstance(call.func, ast.Attribute):
            continue
        receiver, method = call.func.value, call.func.attr
        ctor = receiver if isinstance(receiver, ast.Call) else None
        if ctor is None and isinstance(receiver, ast.Name):
            ctor = constructed.get(receiver.id)
        qualname = names.qualname(ctor.func) if ctor is not None else None
        if ctor is None or qualname is None or "." not in qualname or not is_project_module(qualname):
            continue
        module, cls = qualname.rsplit(".", 1)
        found = _method_with_backward(importer, module, cls, method)
        if found is not None:
            path, method_line, backward_line = found
            if backward_line is not None:
                return DelegatedLoop(f"{qualname}.{method}", stmt.lineno, path, method_line, backward_line)
            continue  # the class is readable and this method trains nothing
        if method in _MODEL_METHODS or method in _NOT_LOOPS:
            continue  # `ema.eval()`, `ema.update()`: a model-like helper's own method, not a training loop
        handed = tuple(dict.fromkeys(name for name in _argument_names(ctor) if name in models))
        if handed and (unread is None or unread.qualname.rsplit(".", 1)[0] == qualname):
            # unreadable: the last method the script runs on the trainer (``trainer.run()`` after
            # ``trainer.register_callback(...)``) is taken for the one that trains
            unread = DelegatedLoop(f"{qualname}.{method}", stmt.lineno, models=handed)
    return unread or backward


def _unread_backward_function(
    tree: ast.Module, names: _Names, models: set[str], optimizers: set[str]
) -> DelegatedLoop | None:
    """A function of an unreadable project module named like a backward step
    (``step_loss_backward``), called or wrapped in ``partial(step_loss_backward, network=model, ...)``
    with a model, or any function of one handed a model and an optimizer the script builds
    (``train_loop(model=model, optimizer=optimizer, ...)`` of ``model_utils``): where the script's
    backward runs when it has none of its own."""
    for call in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda c: (c.lineno, c.col_offset)):
        func: ast.expr = call.func
        args = call
        wrapped = (isinstance(func, ast.Name) and func.id == "partial") or (
            isinstance(func, ast.Attribute) and func.attr == "partial"
        )
        if wrapped:
            if not call.args:
                continue
            func = call.args[0]
        qualname = names.qualname(func)
        if qualname is None or "." not in qualname or not is_project_module(qualname):
            continue
        arguments = _argument_names(args)
        name = qualname.rsplit(".", 1)[1]
        if any(word in name.lower() for word in _CHECKPOINT_WORDS):
            continue  # it saves or loads what it is handed; it trains nothing
        if "backward" not in name and not (
            not wrapped
            and any(name in optimizers for name in arguments)
            and load_local(names.importer, qualname.rsplit(".", 1)[0]) is None
        ):
            continue
        handed = tuple(dict.fromkeys(name for name in arguments if name in models))
        if handed:
            return DelegatedLoop(qualname, call.lineno, models=handed, function=True)
    return None


#: ``torch.optim.lr_scheduler.StepLR`` and SWA's helpers are not optimizers (dotted prefixes).
_NOT_OPTIMIZER_PREFIXES = tuple(m + "." for m in NOT_OPTIMIZER_MODULES)


def _optimizer_names(constructed: dict[str, ast.Call], names: _Names) -> set[str]:
    """Names the script binds (once) to a ``torch.optim`` optimizer it builds."""
    found = set()
    for name, call in constructed.items():
        qualname = names.qualname(call.func) or ""
        last = qualname.rsplit(".", 1)[-1]
        if (
            qualname.startswith("torch.optim.")
            and not qualname.startswith(_NOT_OPTIMIZER_PREFIXES)
            and last[:1].isupper()
        ):
            found.add(name)
    return found


@dataclass(frozen=True)
class _Names:
    """What the script's names of imported things stand for: ``mingpt.trainer.Trainer`` for
    ``Trainer`` imported by name, or brought by ``from mingpt.trainer import *`` when the script
    binds no ``Trainer`` itself."""

    importer: str
    imports: ImportMap
    bound: frozenset[str]

    def qualname(self, func: ast.expr) -> str | None:
        if self.imports.root_is_import(func):
            return self.imports.qualname(func)
        if not isinstance(func, ast.Name) or func.id in self.bound:
            return None
        found = star_source(self.importer, self.imports.star_modules, func.id)
        return f"{found[1]}.{func.id}" if found is not None else None


def _bound_names(tree: ast.Module) -> frozenset[str]:
    """Every name the script binds anywhere (assignments, defs, classes, parameters, imports by name)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
    return frozenset(found)


def refusal(found: DelegatedLoop, converts: str | None) -> str:
    """The one line a user reads. ``converts``: None when the trainer's file converts on its own,
    else why it does not (only asked when the file was read)."""
    head = (
        f"no X.backward() in this script: the training loop runs in {found.qualname}(), "
        f"which it imports and runs at line {found.line}"
    )
    if found.path is None:
        module = found.qualname.rsplit(".", 1 if found.function else 2)[0]  # a function's module, or a class's
        return (
            f"{head} (handing it {', '.join(found.models)}); {module.replace('.', '/')}.py is not found next to "
            f"the script or in a folder above it: convert that module where it is (regcomp-fix <path to it>), "
            "or convert by hand"
        )
    where = shown_path(found.path)
    head += f" ({where}, line {found.method_line}; X.backward() at line {found.backward_line})"
    if converts is None:
        return f"{head}; regcomp-fix converts that file on its own: run regcomp-fix {where}"
    if found.function:
        return (
            f"{head}; regcomp-fix refuses that file too ({converts}): the model is built here and trained there, so "
            "neither file converts on its own; convert by hand: create the Accelerator here, before the call, and "
            "prepare the model, optimizer and loaders where that function builds them"
        )
    return f"{head}; convert that file, but regcomp-fix refuses it too: {converts}"


def _constructions(tree: ast.Module) -> dict[str, ast.Call]:
    """``trainer = Trainer(...)``: names bound (once, anywhere) to a call."""
    found: dict[str, ast.Call] = {}
    seen: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in seen:
                found.pop(name, None)  # bound twice: not one clear trainer
            elif isinstance(node.value, ast.Call):
                found[name] = node.value
            seen.add(name)
    return found


def _model_names(tree: ast.Module) -> set[str]:
    """Names the script uses as an ``nn.Module`` (``model.to(device)``, ``model.state_dict()``)."""
    return {
        node.func.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _MODEL_METHODS
        and isinstance(node.func.value, ast.Name)
    }


def _argument_names(call: ast.Call) -> list[str]:
    values = [*call.args, *(k.value for k in call.keywords)]
    return [v.id for v in values if isinstance(v, ast.Name)]


def _method_with_backward(
    importer: str, module: str, cls: str, method: str
) -> tuple[str, int | None, int | None] | None:
    """(path, method line, backward line) when ``module.cls`` is readable; None when it is not."""
    parsed = load_local(importer, module)
    for _ in range(_MAX_REEXPORTS):
        if parsed is None:
            return None
        if cls in parsed.classes:
            break
        target = parsed.imports.qualname(ast.Name(cls, ast.Load()))
        if target is None or target == cls or "." not in target:
            return None
        next_module, cls = target.rsplit(".", 1)
        parsed = load_local(parsed.path or importer, next_module)
    if parsed is None or cls not in parsed.classes or parsed.path is None:
        return None
    methods = _methods(parsed, parsed.classes[cls])
    if method not in methods:
        return parsed.path, None, None
    return parsed.path, methods[method].lineno, _backward_line(methods, method)


def _function_with_backward(importer: str, names: _Names, call: ast.Call) -> tuple[str, str, int, int] | None:
    """(qualname, path, def line, backward line) when ``call`` runs a function of a project module
    that has an ``X.backward()`` (or calls a function of its module that has one)."""
    qualname = names.qualname(call.func)
    if qualname is None or "." not in qualname or not is_project_module(qualname):
        return None
    module, name = qualname.rsplit(".", 1)
    parsed = load_local(importer, module)
    if parsed is None or parsed.path is None or name not in parsed.functions:
        return None
    line = _backward_line(dict(parsed.functions), name, local_calls=True)
    return (qualname, parsed.path, parsed.functions[name].lineno, line) if line is not None else None


def _methods(parsed: ParsedModule, node: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The class's methods, with those of base classes defined in the same file (the class's own first)."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    pending, seen = [node], set()
    while pending:
        current = pending.pop(0)
        if current.name in seen:
            continue
        seen.add(current.name)
        for stmt in current.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.setdefault(stmt.name, stmt)
        pending += [parsed.classes[b.id] for b in current.bases if isinstance(b, ast.Name) and b.id in parsed.classes]
    return found


def _backward_line(
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef], start: str, local_calls: bool = False
) -> int | None:
    """The first ``X.backward()`` in ``start`` or the ``self.method()``s it calls (a few deep);
    ``local_calls``: the functions it calls by name instead (a module's functions)."""
    todo, seen = [(start, 0)], set()
    while todo:
        name, depth = todo.pop(0)
        if name in seen or name not in methods:
            continue
        seen.add(name)
        calls = [
            node
            for node in ast.walk(methods[name])
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        ]
        backwards = [call.lineno for call in calls if call.func.attr == "backward"]  # type: ignore[attr-defined]
        if backwards:
            return min(backwards)
        if depth < _MAX_SELF_CALLS:
            todo += [
                (call.func.attr, depth + 1)  # type: ignore[attr-defined]
                for call in calls
                if isinstance(call.func.value, ast.Name) and call.func.value.id == "self"  # type: ignore[attr-defined]
            ]
            if local_calls:
                todo += [
                    (node.func.id, depth + 1)
                    for node in ast.walk(methods[name])
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                ]
    return None
