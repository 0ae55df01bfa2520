"""Whether a statement before ``prepare()`` keeps a reference to an object to prepare.

``prepare()`` rebinds the model, optimizer and loaders to their prepared objects; a name or
container that took one of them before (``optimizers = [opt1, opt2]``, ``trainer =
Trainer(model, optimizer)``) would go on using the plain object: a forward of the plain module
skips DDP's gradient sync, a step of the plain optimizer skips the Accelerator's scaler. A
statement that only reads them, such as a checkpoint load into the plain model and optimizer
(IDDM's ``if resume: start_epoch = load_ckpt(model=model, optimizer=optimizer, ...)``), keeps
nothing, and running it before ``prepare()`` is exact: DDP broadcasts the loaded weights when it
wraps the model, and the optimizer keeps its loaded state in its wrapper."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

import libcst as cst

from regcomp_lint.codemod.tree import Tree, find_all, key_of, read_keys

#: Names of the functions and methods that load a checkpoint into the objects handed to them
#: (``load_ckpt``, ``load_checkpoint``, ``load_state_dict``, ``resume_from_checkpoint``,
#: ``restore``): what they return (an epoch, missing keys) is taken not to be those objects.
LOADER_NAME = re.compile(r"^(load|resume|restore)(_\w+)?$")


@dataclass
class Held:
    """What a statement does with the objects to prepare: ``keeps`` one in a name or container;
    ``loads``: the load-named calls whose results it binds, taken by their name to return none."""

    keeps: bool = False
    loads: list[cst.Call] = field(default_factory=list)


def held_objects(stmt: cst.CSTNode, prepared: set[str], removed: Collection[cst.CSTNode] = ()) -> Held:
    """What ``stmt`` (a simple or compound statement, read to any depth) keeps of ``prepared``:
    an assignment whose value reads one of them keeps it, unless that value is a call to a
    :data:`LOADER_NAME` function handed them, or it is one of ``removed`` (``model =
    torch.compile(model)`` under ``if compile:``, which the conversion removes); so does a ``for``
    over them (not over a call such as ``model.parameters()``) or a ``with ... as`` over them. A
    call for its effect keeps nothing."""
    held = Held()
    assignments: list[cst.Assign | cst.AnnAssign | cst.AugAssign | cst.NamedExpr] = [
        *find_all(stmt, (cst.Assign, cst.AnnAssign)),
        *find_all(stmt, (cst.AugAssign, cst.NamedExpr)),
    ]
    for node in assignments:
        value = node.value
        if value is None or not set(read_keys(value)) & prepared or any(node is r for r in removed):
            continue
        if isinstance(value, cst.Call) and _load_call(value):
            held.loads.append(value)
        else:
            held.keeps = True
    for loop in find_all(stmt, cst.For):
        if not isinstance(loop.iter, cst.Call) and set(read_keys(loop.iter)) & prepared:
            held.keeps = True
    for item in find_all(stmt, cst.WithItem):
        if item.asname is not None and set(read_keys(item.item)) & prepared:
            held.keeps = True
    return held


def _load_call(value: cst.Call) -> bool:
    """``load_ckpt(model=model, optimizer=optimizer)``, ``model.load_state_dict(state)``: a call
    named as a load, of a function or of a named object's method."""
    func = value.func
    if isinstance(func, cst.Name):
        name = func.value
    elif isinstance(func, cst.Attribute) and isinstance(func.value, (cst.Name, cst.Attribute)):
        name = func.attr.value
    else:
        return False
    return LOADER_NAME.match(name) is not None


def told_of_the_wrap(tree: Tree, stmt: cst.CSTNode, wraps: list[cst.Call], models: set[str]) -> WrapFlag | None:
    """A call in ``stmt`` handed a model and the flag that decided whether the original wrapped
    that model in DDP before it (IDDM's ``load_ckpt(model=model, is_distributed=distributed)``
    after ``if distributed: model = DDP(model)``): the original handed it the wrapper whenever
    the flag was true; run before ``prepare()`` it gets the plain module, still told the flag, so
    code there that adds or strips ``module.`` by it (IDDM's pretrained loads) no longer matches."""
    for wrap in wraps:
        if tree.line(wrap) >= tree.line(stmt):
            continue
        flags = {key for anc in tree.ancestors(wrap) if isinstance(anc, cst.If) for key in read_keys(anc.test)}
        for call in find_all(stmt, cst.Call):
            handed = [key_of(a.value) for a in call.args]
            model = next((k for k in handed if k in models), None)
            flag = next((k for k in handed if k in flags), None)
            if model is not None and flag is not None:
                return WrapFlag(call, model, flag, wrap)
    return None


@dataclass
class WrapFlag:
    """What :func:`told_of_the_wrap` found: the call, the model and flag it is handed, the wrap."""

    call: cst.Call
    model: str
    flag: str
    wrap: cst.Call
