"""Statements that tell DDP about the model before it wraps it, so prepare() must follow them.

``DistributedDataParallel.__init__`` reads ``model._ddp_params_and_buffers_to_ignore`` (set by hand
or by ``DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, names)``) once,
when it wraps the model (see :data:`~regcomp_lint.knowledge.torch_api.DDP_CONSTRUCTION_ATTRIBUTES`).
Scripts set it just before their own wrap, often in the same ``if ddp:`` block (MiniMind's
pretrain script, for its complex ``pos_cis`` buffer). The conversion drops that wrap and wraps in
``prepare()``; placed before such a statement, prepare() would build DDP without the list, and the
statement, now after it, would change nothing.

Names written with torch.compile's ``_orig_mod.`` prefix (baby-llama2-chinese's pretrain.py:
``prefix = "_orig_mod." if opt.compile else ""``, the script compiling before its own wrap) are
the compiled module's names; prepare() wraps the uncompiled model and compiles after, so they
match nothing there: :func:`compile_prefixed` finds them, and the conversion refuses.
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.tree import find_all, key_of
from regcomp_lint.knowledge.torch_api import (
    COMPILE_WRAPPER_ATTRIBUTE,
    DDP_CONSTRUCTION_ATTRIBUTES,
    DDP_CONSTRUCTION_CALLS,
)


def tells_ddp(stmt: cst.CSTNode, models: set[str]) -> tuple[str, cst.CSTNode] | None:
    """What in ``stmt`` (a statement of the block prepare() goes in, compound ones searched
    through, nested functions not) sets, on one of ``models``, what DDP reads only when it wraps
    the model: that assignment or call (its source, shortened, and its node), or ``None``."""
    for assign in find_all(stmt, cst.Assign, enter_functions=False):
        for target in assign.targets:
            node = target.target
            if (
                isinstance(node, cst.Attribute)
                and node.attr.value in DDP_CONSTRUCTION_ATTRIBUTES
                and key_of(node.value) in models
            ):
                return f"{cst.Module([]).code_for_node(node)} = ...", assign
    for call in find_all(stmt, cst.Call, enter_functions=False):
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in DDP_CONSTRUCTION_CALLS
            and call.args
            and key_of(call.args[0].value) in models
        ):
            return f"{cst.Module([]).code_for_node(func)}(...)", call
    return None


def compile_prefixed(stmt: cst.CSTNode) -> cst.SimpleString | None:
    """A string in ``stmt`` (the statement that tells DDP, compound ones searched through, nested
    functions not) that holds the compiled module's ``_orig_mod.`` prefix, or ``None``."""
    for string in find_all(stmt, cst.SimpleString, enter_functions=False):
        value = string.evaluated_value
        if isinstance(value, str) and f"{COMPILE_WRAPPER_ATTRIBUTE}." in value:
            return string
    return None
