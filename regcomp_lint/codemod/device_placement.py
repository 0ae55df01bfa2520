"""Whether a script places anything on a device at all.

A script that computes ``device = torch.device("cuda" if ... else "cpu")`` and never reads it
(survey 21d lstm_lbfgs_ts) trains on the CPU on every machine. Its conversion must too
(``Accelerator(cpu=True)``): ``prepare()`` would move the model to the GPU while the tensors the
script makes itself stay on the CPU. What counts is placement, not the word ``device``:

- a ``.cuda()`` call, or a ``.to(...)`` with anything but dtypes;
- a placing keyword (``device=``, ``map_location=``, ...) with anything but the CPU;
- a read of a device value the script assigned (``Net(device)``, ``train(model, device)``: the
  callee may place, and one out of sight cannot be judged);
- a ``torch.cuda`` use other than a query or a seed, or a string naming CUDA outside the device
  values (``torch.set_default_tensor_type("torch.cuda.FloatTensor")``).

Anything else that could place is taken as placement: the check only ever adds ``cpu=True``.
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.device_choice import is_cpu_value
from regcomp_lint.codemod.tree import Tree, code, dotted, find_all, single_target
from regcomp_lint.knowledge.torch_api import CUDA_QUERIES, PLACING_KEYWORDS, TORCH_DTYPES


def places_on_device(tree: Tree) -> bool:
    """Does the script put a model or a tensor on a device anywhere (see the module docstring)?"""
    if not any(word in tree.text for word in ("cuda", "device", ".to(", "mps")):
        return False
    values = _device_values(tree)
    keys = {key for key, _ in values}
    # the device values' own parts (`torch.cuda.is_available()`, "cuda"): a choice, not a placement
    inside = {id(n) for _, v in values for n in find_all(v, (cst.Name, cst.Attribute, cst.SimpleString))}
    for call in find_all(tree.module, cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
            return True
        if isinstance(func, cst.Attribute) and func.attr.value == "to" and not _dtypes_only(call):
            return True
        if any(
            arg.keyword is not None and arg.keyword.value in PLACING_KEYWORDS and not is_cpu_value(arg.value)
            for arg in call.args
        ):
            return True
    for node in find_all(tree.module, (cst.Name, cst.Attribute)):
        key = dotted(node)
        if key is None or id(node) in inside:
            continue
        if key in keys and _is_read(tree, node):
            return True
        if key.startswith("torch.cuda.") and key.split(".")[2] not in CUDA_QUERIES:
            return True
    return any(
        "cuda" in string.evaluated_value.lower()
        for string in find_all(tree.module, cst.SimpleString)
        if isinstance(string.evaluated_value, str) and id(string) not in inside
    )


def _device_values(tree: Tree) -> list[tuple[str, cst.BaseExpression]]:
    """``(key, value)`` of each assignment whose target names a device (``device``,
    ``args.device``, ``self.device``) or whose value builds one (``torch.device(...)``)."""
    found = []
    for assign in find_all(tree.module, cst.Assign):
        target = single_target(assign)
        if target is None:
            continue
        key, value = target
        last = key.split(".")[-1]
        if "device" in last or "torch.device(" in code(value):
            found.append((key, value))
    return found


def _dtypes_only(call: cst.Call) -> bool:
    """``x.to(torch.float32)``, ``x.to(dtype=torch.half)``: a conversion, not a placement."""
    return bool(call.args) and all(
        (arg.keyword is None or arg.keyword.value == "dtype")
        and (dotted(arg.value) or "").removeprefix("torch.") in TORCH_DTYPES
        for arg in call.args
    )


def _is_read(tree: Tree, node: cst.CSTNode) -> bool:
    """``node`` reads a value: not an assignment's target (``device = ...``), an attribute's name
    (``out.device``), a keyword (``device=``), a parameter or a definition's name."""
    parent = tree.parent(node)
    if isinstance(parent, cst.AssignTarget | cst.Param | cst.FunctionDef | cst.ClassDef | cst.ImportAlias):
        return False
    if isinstance(parent, cst.Attribute) and parent.attr is node:
        return False
    return not (isinstance(parent, cst.Arg) and parent.keyword is node)
