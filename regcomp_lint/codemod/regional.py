"""Does a model have repeated blocks, so regional compilation pays off (RC501's test)?

Yes for a transformers model (``*Model``/``*For*``/``*LMHeadModel`` built by ``from_pretrained``,
``from_config`` or its constructor) and for a class defined in the file whose ``__init__`` builds
an ``nn.ModuleList`` of at least four instances of one class (a comprehension over ``range(n)``
with unknown ``n`` counts), directly or in a class it instantiates there.
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.names import MIN_REPEATED_BLOCKS, MODULE_LIST, TRANSFORMERS_FACTORIES, TRANSFORMERS_MODEL
from regcomp_lint.codemod.tree import Tree, code, find_all


def repeated_blocks(tree: Tree, creation: cst.BaseExpression) -> str | None:
    """Why the model built by ``creation`` has repeated blocks, or None."""
    call = _innermost_constructor(creation)
    if call is None:
        return None
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in TRANSFORMERS_FACTORIES:
        owner = func.value
        name = owner.attr.value if isinstance(owner, cst.Attribute) else getattr(owner, "value", "")
        if isinstance(name, str) and TRANSFORMERS_MODEL.match(name):
            return f"{name}.{func.attr.value}() builds a transformers model (a stack of identical blocks)"
        return None
    transformers_name = tree.resolves_under(func, "transformers")
    if transformers_name and TRANSFORMERS_MODEL.match(transformers_name.rsplit(".", 1)[-1]):
        return f"{transformers_name.rsplit('.', 1)[-1]} is a transformers model (a stack of identical blocks)"
    local = _local_class(tree, func)
    if local is not None:
        return _class_blocks(tree, local, seen=set())
    return None


def _innermost_constructor(expr: cst.BaseExpression) -> cst.Call | None:
    """``Net(...)`` out of ``Net(...).to(device)`` / ``Net(...).cuda()`` chains."""
    while isinstance(expr, cst.Call):
        func = expr.func
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Call)
            and func.attr.value in ("to", "cuda", "cpu", "train", "eval", "float", "half", "bfloat16", "requires_grad_")
        ):
            expr = func.value
            continue
        return expr
    return None


def _local_class(tree: Tree, func: cst.BaseExpression) -> cst.ClassDef | None:
    if not isinstance(func, cst.Name):
        return None
    for stmt in tree.module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == func.value:
            return stmt
    return None


def _class_blocks(tree: Tree, cls: cst.ClassDef, seen: set[str]) -> str | None:
    if cls.name.value in seen:
        return None
    seen.add(cls.name.value)
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None:
        return None
    for call in find_all(init, cst.Call):
        if _is_module_list(tree, call):
            block = _repeated_element(call)
            if block is not None:
                return f"{cls.name.value}.__init__ builds an nn.ModuleList of repeated {block} blocks"
    for call in find_all(init, cst.Call):  # blocks one level down: self.encoder = Encoder(...)
        inner = _local_class(tree, call.func)
        if inner is not None:
            found = _class_blocks(tree, inner, seen)
            if found:
                return found
    return None


def _is_module_list(tree: Tree, call: cst.Call) -> bool:
    if tree.resolves_to(call.func, *MODULE_LIST):
        return True
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "ModuleList"


def _repeated_element(call: cst.Call) -> str | None:
    """The block class's name when the ModuleList holds >= 4 instances of one class."""
    if not call.args:
        return None
    items = call.args[0].value
    if isinstance(items, (cst.ListComp, cst.GeneratorExp)) and isinstance(items.elt, cst.Call):
        count = _range_count(items.for_in.iter)
        if count is None or count >= MIN_REPEATED_BLOCKS:
            return code(items.elt.func)
        return None
    if isinstance(items, cst.List):
        funcs = [code(el.value.func) for el in items.elements if isinstance(el.value, cst.Call)]
        if len(funcs) == len(items.elements) >= MIN_REPEATED_BLOCKS and len(set(funcs)) == 1:
            return funcs[0]
    return None


def _range_count(iterable: cst.BaseExpression) -> int | None:
    """``n`` of ``range(n)`` when it is a literal; None when unknown (counts as many)."""
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "range":
        if len(iterable.args) == 1 and isinstance(iterable.args[0].value, cst.Integer):
            return int(iterable.args[0].value.value)
    return None
