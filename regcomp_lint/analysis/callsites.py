"""Recognise the places where a script configures compilation, through any import spelling.

Shared by the RC1xx/RC4xx/RC5xx rules so they agree on what a ``torch.compile`` call, a
``TorchDynamoPlugin(...)`` or an ``Accelerator(...)`` is.
"""

from __future__ import annotations

import ast
import enum
import re

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.knowledge.accelerate_api import ACCELERATOR, COMPILE_REGIONS, DYNAMO_PLUGIN, PLUGIN_FIELDS
from regcomp_lint.knowledge.torch_api import DYNAMO_OPTIMIZE, TORCH_COMPILE, TORCH_COMPILE_KWARGS

#: Last names of every call :func:`compile_config_site` can recognise without an import alias.
_SITE_NAMES = frozenset({"compile", "optimize", "TorchDynamoPlugin", "Accelerator", "compile_regions"})

# -- prefilter words (``Rule.required``/``Rule.triggers``) for the rules that judge those calls --
# A call is recognised by one of the names above, which the file must spell (an import alias
# included: ``from torch import compile as tc``). ``compile`` and ``optimize`` must be names of
# their own, not parts of one: ``_can_compile_fullgraph``, ``is_torchdynamo_compiling`` and
# ``optimizer`` occur in most model files that never compile anything.

#: ``compile`` or ``compile_regions`` as a whole name (``torch.compile``, ``model.compile``).
COMPILE_NAME = re.compile(r"compile(?<!\wcompile)(?:_regions)?(?!\w)")
#: ``optimize`` as a whole name (``torch._dynamo.optimize``).
OPTIMIZE_NAME = re.compile(r"optimize(?<!\woptimize)(?!\w)")
#: Some call :func:`compile_config_site` knows for a torch.compile or a ``TorchDynamoPlugin``
#: (any site but ``Accelerator(...)``) may be in the file.
COMPILE_SITE_WORDS = (COMPILE_NAME, OPTIMIZE_NAME, "TorchDynamoPlugin")


class Site(str, enum.Enum):
    TORCH_COMPILE = "torch.compile"  # torch.compile(model, ...) call or @torch.compile(...)
    MODULE_COMPILE = "nn.Module.compile"  # model.compile(...)
    DYNAMO_PLUGIN = "TorchDynamoPlugin"
    ACCELERATOR = "Accelerator"
    COMPILE_REGIONS = "compile_regions"
    DYNAMO_OPTIMIZE = "torch._dynamo.optimize"  # backend is the first positional argument


def _named(ctx: FileContext, func: ast.AST, qualnames: tuple[str, ...], bare: str | None = None) -> bool:
    if ctx.resolves_to(func, *qualnames):
        return True
    # a distinctive class name used without any import we can see (star import, re-export)
    return bare is not None and isinstance(func, ast.Name) and func.id == bare and not ctx.imports.imported(bare)


def is_torch_compile(ctx: FileContext, func: ast.AST) -> bool:
    return ctx.resolves_to(func, *TORCH_COMPILE)


def is_dynamo_optimize(ctx: FileContext, func: ast.AST) -> bool:
    """``torch._dynamo.optimize(backend, ...)``: the older spelling of ``torch.compile``."""
    return ctx.resolves_to(func, *DYNAMO_OPTIMIZE)


def is_dynamo_plugin(ctx: FileContext, func: ast.AST) -> bool:
    return _named(ctx, func, DYNAMO_PLUGIN, "TorchDynamoPlugin")


def is_accelerator(ctx: FileContext, func: ast.AST) -> bool:
    return _named(ctx, func, ACCELERATOR, "Accelerator")


def is_compile_regions(ctx: FileContext, func: ast.AST) -> bool:
    return _named(ctx, func, COMPILE_REGIONS, "compile_regions")


def is_module_compile(ctx: FileContext, call: ast.Call) -> bool:
    """``obj.compile(...)`` where ``obj`` is not an imported module (``re.compile`` is not)."""
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr == "compile" and not ctx.imports.root_is_import(func.value)


def is_torch_module_compile(ctx: FileContext, call: ast.Call) -> bool:
    """:func:`is_module_compile` whose arguments also fit ``nn.Module.compile`` (keywords of
    ``torch.compile`` only, ``**kwargs`` allowed), so Keras' ``model.compile(optimizer=...)`` is not."""
    if not is_module_compile(ctx, call) or call.args:
        return False
    return all(kw.arg is None or kw.arg in TORCH_COMPILE_KWARGS for kw in call.keywords)


def classify(ctx: FileContext, call: ast.Call) -> Site | None:
    """What kind of compile-configuration call ``call`` is, if any."""
    func = call.func
    if is_torch_compile(ctx, func):
        return Site.TORCH_COMPILE
    if is_dynamo_plugin(ctx, func):
        return Site.DYNAMO_PLUGIN
    if is_accelerator(ctx, func):
        return Site.ACCELERATOR
    if is_compile_regions(ctx, func):
        return Site.COMPILE_REGIONS
    if is_module_compile(ctx, call):
        return Site.MODULE_COMPILE
    return None


def compile_config_site(ctx: FileContext, call: ast.Call) -> Site | None:
    """Like :func:`classify`, stricter about ``obj.compile(...)`` (see
    :func:`is_torch_module_compile`) and also knowing ``torch._dynamo.optimize``: for rules that
    read the arguments (backend, mode, options) and must not judge another library's call."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr not in _SITE_NAMES:
            return None
    elif not isinstance(func, ast.Name) or (
        func.id not in _SITE_NAMES
        and (ctx.qualname(func) or "").rpartition(".")[2] not in _SITE_NAMES  # (never None for a name)
    ):
        return None  # cheap exit for most calls (`from torch import compile as tc`: tc means torch.compile)
    if isinstance(func, ast.Attribute) and func.attr == "compile" and not ctx.imports.root_is_import(func.value):
        return Site.MODULE_COMPILE if is_torch_module_compile(ctx, call) else None
    if is_dynamo_optimize(ctx, func):
        return Site.DYNAMO_OPTIMIZE
    site = classify(ctx, call)
    return None if site is Site.MODULE_COMPILE else site


def plugin_argument(call: ast.Call, name: str) -> ast.expr | None:
    """The value given for field ``name`` of a ``TorchDynamoPlugin(...)`` call, by keyword or position."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    index = PLUGIN_FIELDS.index(name)
    if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return None


def decorator_compile_call(ctx: FileContext, decorator: ast.expr) -> ast.Call | None | bool:
    """For ``@torch.compile(...)`` the Call; for bare ``@torch.compile`` True; else None."""
    if isinstance(decorator, ast.Call) and is_torch_compile(ctx, decorator.func):
        return decorator
    if is_torch_compile(ctx, decorator):
        return True
    return None
