"""What this file's Accelerate setup looks like, for the RC4xx rules: which calls build an
``Accelerator``, which names hold one where, which ``prepare`` calls there are, whether the
setup compiles, and which code runs inside a loop.

One per file, shared by the RC4xx rules (``ctx.semantic.accelerate_script``) and built on the
file's shared :class:`~regcomp_lint.analysis.bindings.Bindings`: the engine's one walk feeds it
(:meth:`AccelerateScript.walk_handlers`, after the bindings); its questions are asked in
``finish()``, when the whole file is known.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeGuard

from regcomp_lint.analysis import callsites
from regcomp_lint.analysis.bindings import Bindings, Where, binding_key
from regcomp_lint.analysis.file_context import FileContext, has_star_kwargs, is_none, is_true, keyword, string_literal
from regcomp_lint.analysis.training_loops import TrainingLoops
from regcomp_lint.knowledge.accelerate_api import DYNAMO_BACKEND_ENUM, PREPARE_METHODS

LOOPS = (ast.For, ast.AsyncFor, ast.While)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
MAX_DEPTH = 30

#: A parameter that holds an accelerator: (function node id, name).
ParamKey = tuple[int, str]


@dataclass(frozen=True)
class AcceleratorParam:
    """``def train(accelerator: Accelerator, ...)``: the object is not built here. ``certain``:
    annotated as ``Accelerator`` (else only named ``accelerator``)."""

    function: int
    name: str
    certain: bool


#: What an expression holding an accelerator resolves to: its construction or a parameter.
AcceleratorRef = ast.Call | AcceleratorParam


@dataclass(frozen=True)
class CompileState:
    """Whether an accelerator compiles the models it prepares. ``compiles``: True (certainly or
    from a non-literal backend, which scripts set to compile), False (no plugin, backend
    ``"no"``, ``disable=True``). ``regional``: True, False, or None when not a literal."""

    compiles: bool
    regional: bool | None = False


OFF = CompileState(False)


@dataclass(frozen=True)
class AcceleratorName:
    """How code at a point spells its accelerator (``accelerator``, ``self.accelerator``).
    ``certain``: it is built in this file or annotated, not guessed from a parameter's name."""

    text: str
    certain: bool


class AccelerateScript:
    def __init__(self, ctx: FileContext, bindings: Bindings) -> None:
        """``bindings``: fed the same walk, each node before this script is."""
        self.ctx = ctx
        self.bindings = bindings
        #: id of every ``Accelerator(...)`` call -> (call, where it is evaluated)
        self.accelerators: dict[int, tuple[ast.Call, Where]] = {}
        #: names and ``self.`` attributes assigned an accelerator or an alias of one
        self._holder_keys: dict[str, None] = {}
        self._params: dict[ParamKey, bool] = {}
        #: every ``X.prepare*(...)`` call, the statement holding it, and where it is
        self.prepares: list[tuple[ast.Call, ast.AST | None, Where]] = []
        self._training_loops: TrainingLoops | None = None

    # -- feeding ---------------------------------------------------------------------------
    def walk_handlers(self) -> tuple[dict[type, Callable[[ast.AST], None]], dict[type, Callable[[ast.AST], None]]]:
        """What a walk calls on visiting a node, by type (after the bindings'); nothing on leaving."""
        visit: dict[type, Callable] = {
            ast.Call: self._visit_call,
            ast.Assign: self._visit_assign,
            ast.AnnAssign: self._visit_assign,
            ast.FunctionDef: self._visit_function,
            ast.AsyncFunctionDef: self._visit_function,
        }
        return visit, {}

    def _visit_call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in PREPARE_METHODS and not self.ctx.imports.root_is_import(func.value):
                self.prepares.append((node, self.ctx.parent(), self.bindings.here(node)))
            elif func.attr == "Accelerator" and callsites.is_accelerator(self.ctx, func):
                self.accelerators[id(node)] = (node, self.bindings.here(node))
        elif isinstance(func, ast.Name) and callsites.is_accelerator(self.ctx, func):
            self.accelerators[id(node)] = (node, self.bindings.here(node))

    def _visit_assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        value = node.value
        if value is None or not isinstance(value, (ast.Call, ast.Name, ast.Attribute, ast.IfExp)):
            return
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            key = binding_key(target)
            if key is not None:
                self._holder_keys[key] = None

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = node.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            if arg.annotation is not None and self._names_accelerator(arg.annotation):
                self._params[(id(node), arg.arg)] = True
                self._holder_keys[arg.arg] = None
            elif arg.arg == "accelerator":
                self._params[(id(node), arg.arg)] = False
                self._holder_keys[arg.arg] = None

    def _names_accelerator(self, annotation: ast.expr) -> bool:
        """``Accelerator``, ``"Accelerator"``, ``Accelerator | None``, ``Optional[Accelerator]``."""
        text = string_literal(annotation)
        if text is not None:
            return text.strip() in (
                "Accelerator",
                "accelerate.Accelerator",
                "Accelerator | None",
                "Optional[Accelerator]",
            )
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            return self._names_accelerator(annotation.left) or self._names_accelerator(annotation.right)
        if isinstance(annotation, ast.Subscript):
            return self._names_accelerator(annotation.slice)
        return callsites.is_accelerator(self.ctx, annotation)

    # -- questions, after the walk -----------------------------------------------------------
    @property
    def builds_accelerator(self) -> bool:
        """The file constructs an ``Accelerator``: it is an Accelerate script."""
        return bool(self.accelerators)

    def accelerator_of(self, expr: ast.AST, where: Where, depth: int = 0) -> AcceleratorRef | None:
        """The ``Accelerator(...)`` call or accelerator parameter ``expr`` holds, if any."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, ast.Call):
            return expr if id(expr) in self.accelerators else None
        if isinstance(expr, ast.IfExp):
            return self.accelerator_of(expr.body, where, depth + 1) or self.accelerator_of(
                expr.orelse, where, depth + 1
            )
        key = binding_key(expr)
        if key is None:
            return None
        for bound in self.bindings.candidates(expr, where):
            if bound.value is None:
                function = bound.where.function
                if function is not None and bound.end == (function.lineno, function.col_offset):
                    certain = self._params.get((id(function), key))
                    if certain is not None:
                        return AcceleratorParam(id(function), key, certain)
                continue
            if bound.index is not None or isinstance(
                bound.value, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            ):
                continue
            found = self.accelerator_of(bound.value, bound.where, depth + 1)
            if found is not None:
                return found
        return None

    def _visible(self, where: Where) -> list[tuple[str, AcceleratorRef]]:
        found: list[tuple[str, AcceleratorRef]] = []
        for key in self._holder_keys:
            if key.startswith("self.") and where.cls is None:
                continue
            ref = self.accelerator_of(key_expr(key), where)
            if ref is not None:
                found.append((key, ref))
        return found

    def sees_accelerator(self, where: Where) -> bool:
        """Some name or ``self.`` attribute visible at ``where`` holds an accelerator."""
        return bool(self._visible(where))

    def accelerator_name(self, where: Where) -> AcceleratorName | None:
        """How code at ``where`` reaches the file's accelerator: the one name or ``self.``
        attribute visible there that holds it. None when none is visible or two visible names
        hold different accelerators (which one to use is the author's call)."""
        found = self._visible(where)
        if not found:
            return None
        refs = {id(ref) if isinstance(ref, ast.Call) else ref for _, ref in found}
        if len(refs) > 1:
            return None
        found.sort(key=lambda item: (not item[0].startswith("self."), item[0] != "accelerator", item[0]))
        key, ref = found[0]
        return AcceleratorName(key, not isinstance(ref, AcceleratorParam) or ref.certain)

    @property
    def training_loops(self) -> TrainingLoops:
        """Which loops train and which loaders they iterate (built on first use, after the walk)."""
        if self._training_loops is None:
            self._training_loops = TrainingLoops(self.ctx.tree)
        return self._training_loops

    def is_prepare_result(self, bound_value: ast.AST | None) -> TypeGuard[ast.Call]:
        """``bound_value`` is what an ``X.prepare*(...)`` call returned."""
        if not isinstance(bound_value, ast.Call):
            return False
        func = bound_value.func
        return isinstance(func, ast.Attribute) and func.attr in PREPARE_METHODS

    # -- compile configuration ---------------------------------------------------------------
    def compile_state(self, ref: AcceleratorRef | None) -> CompileState:
        """Whether models prepared by ``ref`` get compiled. A parameter (or None: an accelerator
        we cannot see) is judged by the file's ``Accelerator(...)`` calls: compiling when any of
        them compiles."""
        if isinstance(ref, ast.Call):
            return self._call_compile_state(ref, self.accelerators[id(ref)][1])
        states = [self._call_compile_state(call, where) for call, where in self.accelerators.values()]
        on = [s for s in states if s.compiles]
        if not on:
            return OFF
        regional = {s.regional for s in on}
        return CompileState(True, regional.pop() if len(regional) == 1 else None)

    def _call_compile_state(self, call: ast.Call, where: Where) -> CompileState:
        plugin_kw = keyword(call, "dynamo_plugin")
        backend_kw = keyword(call, "dynamo_backend")
        if plugin_kw is not None and not is_none(plugin_kw.value):
            plugin = self._plugin_call(plugin_kw.value, where)
            if plugin is None:
                return CompileState(True, None)
            return self._plugin_state(plugin)
        if backend_kw is not None and not is_none(backend_kw.value):
            return CompileState(self._backend_compiles(backend_kw.value), False)
        return OFF

    def _plugin_call(self, expr: ast.expr, where: Where) -> ast.Call | None:
        call = self.bindings.call_value(expr, where)
        return call if call is not None and callsites.is_dynamo_plugin(self.ctx, call.func) else None

    def _plugin_state(self, plugin: ast.Call) -> CompileState:
        if has_star_kwargs(plugin):
            return CompileState(True, None)
        disable = callsites.plugin_argument(plugin, "disable")
        if is_true(disable):
            return OFF
        backend = callsites.plugin_argument(plugin, "backend")
        if backend is None or is_none(backend):
            return OFF  # accelerate 1.15 reads ACCELERATE_DYNAMO_BACKEND, default "no"
        regional = callsites.plugin_argument(plugin, "use_regional_compilation")
        if regional is None or is_none(regional) or (isinstance(regional, ast.Constant) and regional.value is False):
            regional_state: bool | None = False
        elif is_true(regional):
            regional_state = True
        else:
            regional_state = None
        return CompileState(self._backend_compiles(backend), regional_state)

    def _backend_compiles(self, value: ast.expr) -> bool:
        """False only for a backend that certainly does not compile (``"no"``, ``DynamoBackend.NO``)."""
        text = string_literal(value)
        if text is not None:
            return text.strip().lower() != "no"
        qualname = self.ctx.qualname(value)
        if qualname and self.ctx.imports.root_is_import(value) and qualname.rsplit(".", 1)[0] in DYNAMO_BACKEND_ENUM:
            return qualname.rsplit(".", 1)[1] != "NO"
        return True


def in_loop_body(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` (being visited) runs inside the body of a ``for``/``while`` loop of its own
    function: not in a loop's header or ``else``, not in a function merely defined in a loop."""
    return bool(enclosing_loops(ctx, node))


def enclosing_loops(ctx: FileContext, node: ast.AST) -> tuple[ast.AST, ...]:
    """The loops of its own function whose bodies ``node`` (being visited) runs in, innermost first."""
    loops: list[ast.AST] = []
    child = node
    for anc in reversed(ctx.ancestors):
        if isinstance(anc, LOOPS) and any(stmt is child for stmt in anc.body):
            loops.append(anc)
        if isinstance(anc, SCOPES):
            break
        child = anc
    return tuple(loops)


def key_expr(key: str) -> ast.expr:
    """A synthetic expression for a binding key, to ask :class:`Bindings` about it."""
    if key.startswith("self."):
        return ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=key[5:], ctx=ast.Load())
    return ast.Name(id=key, ctx=ast.Load())
