"""Is this expression a tensor? A cheap, conservative answer for code reached from ``forward``.

RC2xx rules ask it before calling ``.item()``-like or branch-on-value code a graph break: a
false "yes" is a false alarm, so every doubt answers "no" (precision over recall). Shape logic
(``x.shape[0] > 1``, ``x.size(-1)``, ``x.dim()``, ``x.ndim``, ``x.dtype``, ``x.device``),
``isinstance``, ``is None``, ``self.training``, config attributes, ``len(...)`` and loop counters
are never tensors.

Tensors are: parameters of a top-level ``forward`` (other than ``self``) without a non-tensor
annotation or a default; parameters of a reached function that every known call site fills with
a tensor; results of ``torch.*`` / ``torch.nn.functional.*`` / ``torch.linalg.*``... calls, of
tensor methods, of submodule calls and of local functions whose every ``return`` is a tensor;
parameters, buffers and tensors stored on ``self``; subscripts, arithmetic and comparisons of
tensors. A local name is a tensor only when every value bound to it in the function is.

    oracle = tensors.oracle(reach, func)   # func: a reachability.Function; valid while reach lives
    oracle.is_tensor(expr)
    oracle.reads_tensor_value(test)       # would ``if test:`` read a tensor's data?
"""

from __future__ import annotations

import ast
import weakref
from typing import cast

from regcomp_lint.analysis.reachability import Function, Reachability, traced_operands

#: Attributes of a tensor that are not tensors.
NON_TENSOR_ATTRS = frozenset(
    {
        "shape",
        "dtype",
        "device",
        "ndim",
        "is_cuda",
        "requires_grad",
        "layout",
        "names",
        "is_sparse",
        "is_quantized",
        "is_meta",
        "is_leaf",
        "grad_fn",
        "itemsize",
        "nbytes",
        "is_nested",
        "is_mps",
        "is_cpu",
        "output_nr",
        "_version",
    }
)
#: Attributes of a tensor that are tensors.
TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "grad", "data"})
#: Attributes of a submodule that are tensors (``self.fc.weight``).
MODULE_TENSOR_ATTRS = frozenset({"weight", "bias"})
#: Tensor methods whose result is not a tensor.
NON_TENSOR_METHODS = frozenset(
    {
        "size",
        "dim",
        "ndimension",
        "numel",
        "nelement",
        "item",
        "tolist",
        "numpy",
        "is_contiguous",
        "is_floating_point",
        "is_complex",
        "is_signed",
        "data_ptr",
        "element_size",
        "stride",
        "get_device",
        "storage_offset",
        "is_pinned",
        "is_shared",
        "is_set_to",
        "untyped_storage",
        "storage",
        "dim_order",
        "equal",
        "allclose",
        "type",
        "has_names",
        "is_inference",
        "__len__",
        "__repr__",
        "__str__",
        "__format__",
        "__bool__",
        "__int__",
        "__float__",
        "__index__",
        "unbind_shapes",
        "register_hook",
        "backward",
        "retain_grad",
        "is_same_size",
        "is_nonzero",
        "isclose_all",
    }
)
#: ``torch.<name>`` functions whose result is not a tensor.
NON_TENSOR_TORCH = frozenset(
    {
        "is_tensor",
        "is_storage",
        "is_floating_point",
        "is_complex",
        "is_nonzero",
        "numel",
        "get_default_dtype",
        "is_grad_enabled",
        "is_inference_mode_enabled",
        "is_autocast_enabled",
        "device",
        "dtype",
        "finfo",
        "iinfo",
        "no_grad",
        "enable_grad",
        "set_grad_enabled",
        "inference_mode",
        "autocast",
        "manual_seed",
        "seed",
        "initial_seed",
        "compile",
        "typename",
        "result_type",
        "promote_types",
        "can_cast",
        "broadcast_shapes",
        "set_default_dtype",
        "use_deterministic_algorithms",
        "are_deterministic_algorithms_enabled",
        "equal",
        "allclose",
        "is_same_size",
        "is_conj",
        "is_neg",
        "empty_cache",
        "set_printoptions",
        "get_num_threads",
        "set_num_threads",
        "vmap",
        "cond",
        "sym_int",
        "sym_float",
        "sym_max",
        "sym_min",
        "sym_not",
        "sym_ite",
        "is_deterministic_algorithms_warn_only_enabled",
        "get_device",
        "get_float32_matmul_precision",
        "set_float32_matmul_precision",
        "save",
        "load",
        "is_anomaly_enabled",
        "set_rng_state",
        "get_default_device",
        "set_default_device",
        "is_warn_always_enabled",
        "export",
        "library",
    }
)
#: Sub-namespaces of torch whose functions return tensors.
TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.", "torch.nn.init.")
EINOPS = ("einops.rearrange", "einops.repeat", "einops.reduce", "einops.einsum")
#: Builtins whose result follows their (single) tensor argument.
TENSOR_PRESERVING_BUILTINS = frozenset({"abs"})
NOT_VALUE_COMPARES = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


def oracle(reach: Reachability, func: Function) -> TensorOracle:
    """The oracle for one reached function, shared by all rules of the run."""
    cache = reach.__dict__.setdefault("_tensor_oracles", {})
    found = cache.get(func)
    if found is None:
        found = cache[func] = TensorOracle(reach, func)
    return found


class TensorOracle:
    def __init__(self, reach: Reachability, func: Function) -> None:
        # A proxy: the reachability caches its oracles, and a cycle would keep each linted
        # file's tree alive until the cyclic garbage collector runs.
        # (the proxy stands in for the Reachability: typed as one)
        self.reach = cast(Reachability, reach if isinstance(reach, weakref.ProxyType) else weakref.proxy(reach))
        self.func = func
        self.facts = reach.facts(func)
        self.imports = func.module.imports
        self._names: dict[str, bool] = {}
        self._params: dict[str, bool] = {}

    # -- conditions -------------------------------------------------------------------------
    def reads_tensor_value(self, test: ast.AST) -> bool:
        """True when evaluating ``test`` as a condition reads a tensor's data (``bool(t)``)."""
        if isinstance(test, ast.BoolOp):
            return any(self.reads_tensor_value(v) for v in traced_operands(test))
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.reads_tensor_value(test.operand)
        if isinstance(test, ast.Compare):
            if any(isinstance(op, NOT_VALUE_COMPARES) for op in test.ops):
                return False
            return any(self.is_tensor(side) for side in (test.left, *test.comparators))
        if isinstance(test, ast.NamedExpr):
            return self.is_tensor(test.value)
        return self.is_tensor(test)

    # -- expressions ------------------------------------------------------------------------
    def is_tensor(self, expr: ast.AST | None, depth: int = 0) -> bool:
        if expr is None or depth > 30:
            return False
        if type(expr) is ast.Name:
            return self._name(expr.id)
        if type(expr) is ast.Attribute:
            return self._attribute(expr, depth)
        if type(expr) is ast.Subscript:
            return self.is_tensor(expr.value, depth + 1)
        if type(expr) is ast.Call:
            return self._call(expr, None, depth)
        if type(expr) is ast.BinOp:
            return self.is_tensor(expr.left, depth + 1) or self.is_tensor(expr.right, depth + 1)
        if type(expr) is ast.UnaryOp:
            return not isinstance(expr.op, ast.Not) and self.is_tensor(expr.operand, depth + 1)
        if type(expr) is ast.Compare:
            if any(isinstance(op, NOT_VALUE_COMPARES) for op in expr.ops):
                return False
            return any(self.is_tensor(side, depth + 1) for side in (expr.left, *expr.comparators))
        if type(expr) is ast.IfExp:
            return self.is_tensor(expr.body, depth + 1) and self.is_tensor(expr.orelse, depth + 1)
        if type(expr) is ast.BoolOp:
            return all(self.is_tensor(v, depth + 1) for v in expr.values)
        if type(expr) is ast.NamedExpr:
            return self.is_tensor(expr.value, depth + 1)
        return False

    def element_is_tensor(self, value: ast.AST, index: int | None, depth: int = 0) -> bool:
        """Is position ``index`` of ``value`` a tensor (``a, b = value``)? ``None``: the whole."""
        if index is None:
            return self.is_tensor(value, depth)
        if isinstance(value, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in value.elts) or index >= len(value.elts):
                return False
            return self.is_tensor(value.elts[index], depth + 1)
        if isinstance(value, ast.Call):
            return self._call(value, index, depth)
        if isinstance(value, ast.Attribute) and value.attr in ("shape",):
            return False
        return self.is_tensor(value, depth + 1)

    def _name(self, name: str) -> bool:
        found = self._names.get(name)
        if found is not None:
            return found
        bindings = self.facts.bindings.get(name)
        if not bindings:
            parent = self.func.parent  # a closure reads the enclosing function's names
            found = parent is not None and oracle(self.reach, parent)._name(name)
            self._names[name] = found
            return found
        self._names[name] = True  # in progress: ``x = x.view(...)`` leans on x's other bindings
        result = all(self._binding(kind, value, index) for kind, value, index in bindings)
        self._names[name] = result
        return result

    def _binding(self, kind: str, value: ast.AST, index: int | None) -> bool:
        if kind == "value":
            return self.element_is_tensor(value, index)
        if kind == "iter":
            return self._iterated(value, index)
        if kind == "param":  # (a parameter binding holds its ast.arg)
            return isinstance(value, ast.arg) and self.param_is_tensor(value)
        return False

    def _iterated(self, iterable: ast.AST, index: int | None) -> bool:
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and not self.imports.imported(iterable.func.id)
        ):
            name = iterable.func.id
            if name == "enumerate" and iterable.args:
                return index == 1 and self.is_tensor(iterable.args[0])
            if name == "zip":
                if (
                    index is None
                    or index >= len(iterable.args)
                    or any(isinstance(a, ast.Starred) for a in iterable.args)
                ):
                    return False
                return self.is_tensor(iterable.args[index])
            if name in ("range", "len", "sorted", "dict", "set", "map", "filter"):
                return False
        return index is None and self.is_tensor(iterable)

    def _attribute(self, expr: ast.Attribute, depth: int) -> bool:
        value = expr.value
        cls = self.func.cls
        if isinstance(value, ast.Name) and value.id == "self" and self._self_bound():
            return cls is not None and cls.has_tensor_attr(expr.attr)
        if expr.attr in MODULE_TENSOR_ATTRS and isinstance(value, ast.Attribute) and self._self_submodule(value):
            return True
        if expr.attr in TENSOR_ATTRS:
            return self.is_tensor(value, depth + 1)
        return False

    def _self_bound(self) -> bool:
        """``self`` is the receiver (the first parameter of a method, or the one a closure sees),
        not a rebound name."""
        func = self.func
        while func.parent is not None and "self" not in self.reach.facts(func).bindings:
            func = func.parent
        return func.is_method and all(kind == "param" for kind, _, _ in self.reach.facts(func).bindings.get("self", ()))

    def _self_submodule(self, expr: ast.Attribute) -> bool:
        cls = self.func.cls
        return (
            cls is not None
            and isinstance(expr.value, ast.Name)
            and expr.value.id == "self"
            and self._self_bound()
            and cls.submodule(expr.attr) is not None
        )

    # -- calls -------------------------------------------------------------------------------
    def _call(self, call: ast.Call, index: int | None, depth: int) -> bool:
        func = call.func
        imports = self.imports
        if isinstance(func, ast.Name) and not imports.imported(func.id) and func.id not in self.facts.bindings:
            if func.id in TENSOR_PRESERVING_BUILTINS and len(call.args) == 1:
                return self.is_tensor(call.args[0], depth + 1)
            if func.id in __builtins_names__:
                return False
        qualname = imports.qualname(func) if imports.root_is_import(func) else None
        if qualname is not None:
            if qualname.startswith("torch."):
                return _torch_returns_tensor(qualname)
            if qualname in EINOPS:
                return bool(call.args) and self.is_tensor(call.args[0], depth + 1)
        if isinstance(func, ast.Attribute):
            if func.attr in NON_TENSOR_METHODS:
                return False
            if self.is_tensor(func.value, depth + 1):
                return True
        if self._is_submodule_call(func):
            targets = self._targets(func)
            local = [t for t in targets if t.node.name == "forward"]
            if local and index is not None:
                return all(self._returns_tensor(t, index) for t in local)
            return True
        targets = self._targets(func)
        return bool(targets) and all(self._returns_tensor(t, index) for t in targets)

    def _is_submodule_call(self, func: ast.AST) -> bool:
        """``self.attn(x)``, ``self.h[i](x)``, ``block(x)`` for ``block`` in ``self.h``."""
        cls = self.func.cls
        if cls is None or not self._self_bound():
            return False
        node = func
        while isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return cls.method(node.attr) is None and cls.submodule(node.attr) is not None
        if isinstance(node, ast.Name):
            bindings = self.facts.bindings.get(node.id, ())
            return bool(bindings) and all(self._holds_submodule(kind, value, index) for kind, value, index in bindings)
        return False

    def _holds_submodule(self, kind: str, value: ast.AST, index: int | None) -> bool:
        if kind == "iter":
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id == "enumerate"
                and value.args
            ):
                return index == 1 and self._is_submodule_call(value.args[0])
            return index is None and self._is_submodule_call(value)
        return kind == "value" and index is None and self._is_submodule_call(value)

    def _targets(self, func: ast.AST) -> list[Function]:
        return self.reach._call_targets(func, self.func, self.facts)

    def _returns_tensor(self, callee: Function, index: int | None) -> bool:
        cache = self.reach.__dict__.setdefault("_returns_tensor", {})
        key = (callee, index)
        if key in cache:
            return cache[key]
        cache[key] = False  # in progress: recursion proves nothing
        inner = oracle(self.reach, callee)
        returns = inner.facts.returns
        result = bool(returns) and all(inner.element_is_tensor(value, index) for value in returns)
        cache[key] = result
        return result

    # -- parameters ----------------------------------------------------------------------------
    def param_is_tensor(self, arg: ast.arg) -> bool:
        found = self._params.get(arg.arg)
        if found is None:
            self._params[arg.arg] = False  # in progress (recursion through call sites)
            found = self._params[arg.arg] = self._param(arg)
        return found

    def _param(self, arg: ast.arg) -> bool:
        node = self.func.node
        args = node.args
        if arg is args.vararg or arg is args.kwarg:
            return False
        if arg.annotation is not None:
            return _annotation_is_tensor(arg.annotation)
        positional = [*args.posonlyargs, *args.args]
        if self.func.is_method and positional and positional[0] is arg:
            return False  # self
        default = _default_of(args, arg)
        if default is not None and not (isinstance(default, ast.Constant) and default.value is None):
            return False
        direct = [
            (caller, call)
            for caller, call in self.reach.callers(self.func)
            if self.func in self._callee_of(caller, call)
        ]
        if not direct:
            return default is None and node.name == "forward"
        for caller, call in direct:
            passed = _argument_for(call, self.func, arg)
            if passed is _UNMAPPABLE:
                return False
            if passed is None or not oracle(self.reach, caller).is_tensor(passed):
                return False
        return True

    def _callee_of(self, caller: Function, call: ast.Call) -> list[Function]:
        return self.reach._call_targets(call.func, caller, self.reach.facts(caller))


_UNMAPPABLE = ast.Constant(value=...)


def _argument_for(call: ast.Call, callee: Function, arg: ast.arg) -> ast.AST | None:
    """The expression a call passes for parameter ``arg``; None when the default is used;
    ``_UNMAPPABLE`` when ``*args``/``**kwargs`` hide it."""
    for kw in call.keywords:
        if kw.arg == arg.arg:
            return kw.value
    args = callee.node.args
    positional = [*args.posonlyargs, *args.args]
    if callee.is_method:
        positional = positional[1:]
    if arg in positional and arg not in args.kwonlyargs:
        position = positional.index(arg)
        for i, value in enumerate(call.args):
            if isinstance(value, ast.Starred):
                return _UNMAPPABLE
            if i == position:
                return value
    if any(kw.arg is None for kw in call.keywords):
        return _UNMAPPABLE
    return None


def _default_of(args: ast.arguments, arg: ast.arg) -> ast.expr | None:
    positional = [*args.posonlyargs, *args.args]
    if arg in positional:
        offset = len(positional) - len(args.defaults)
        position = positional.index(arg)
        return args.defaults[position - offset] if position >= offset else None
    if arg in args.kwonlyargs:
        return args.kw_defaults[args.kwonlyargs.index(arg)]
    return None


def _annotation_is_tensor(annotation: ast.AST) -> bool:
    """``torch.Tensor``, ``Tensor``, ``Optional[Tensor]``, ``Tensor | None``, ``"torch.FloatTensor"``."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        text = annotation.value
        return (
            "Tensor" in text and "[" not in text.replace("Optional[", "") and "Tuple" not in text and "List" not in text
        )
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = (annotation.left, annotation.right)
        return any(_annotation_is_tensor(s) for s in sides) and all(
            _annotation_is_tensor(s) or _is_none_annotation(s) for s in sides
        )
    if isinstance(annotation, ast.Subscript):
        outer = _last(annotation.value)
        if outer == "Optional":
            return _annotation_is_tensor(annotation.slice)
        return False
    name = _last(annotation)
    return name is not None and name.endswith("Tensor")


def _is_none_annotation(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _last(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _torch_returns_tensor(qualname: str) -> bool:
    parts = qualname.split(".")
    if len(parts) == 2:
        name = parts[1]
        return name[:1].islower() and not name.startswith("_") and name not in NON_TENSOR_TORCH
    if qualname.startswith(TENSOR_NAMESPACES):
        last = parts[-1]
        return last[:1].islower() and not last.startswith(("_", "has_", "handle_"))
    return False


__builtins_names__ = frozenset(dir(__import__("builtins")))
