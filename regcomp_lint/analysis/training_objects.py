"""What a constructor call makes in a training script: a model, an optimizer, a data loader or
an LR scheduler -- the four things ``accelerator.prepare`` must see.

Recognised by the import-resolved name of what is called, never by importing it:
``torch.optim.AdamW(...)``, ``bnb.optim.AdamW8bit(...)``, ``DataLoader(...)``,
``get_linear_schedule_with_warmup(...)``, ``AutoModel.from_pretrained(...)``, ``Net()`` for an
``nn.Module`` subclass defined in the file, ``torchvision.models.resnet18()``, ``nn.Sequential``.
Loss modules (``nn.CrossEntropyLoss``) and parameterless layers are not models.
"""

from __future__ import annotations

import ast
import enum
import sys
from collections.abc import Callable

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.models import transformers_model_class
from regcomp_lint.analysis.reachability.modules import ParsedModule, is_third_party, load_module, module_file
from regcomp_lint.knowledge.model_classes import (
    DIFFUSERS,
    DIFFUSERS_MODEL_PREFIXES,
    DIFFUSERS_MODEL_SUFFIXES,
    FACTORY_METHODS,
    MODEL_FACTORIES,
    MODEL_MODULES,
    PRETRAINED_MODEL,
)
from regcomp_lint.knowledge.torch_api import MODEL_LAYERS, MODULE, NOT_OPTIMIZER_MODULES, SCHEDULER_MODULES
from regcomp_lint.knowledge.training_libraries import (
    DATALOADERS,
    OPTIMIZER_MODULES,
    OPTIMIZERS,
    SCHEDULER_FACTORY_MODULES,
    SCHEDULERS,
)


class Kind(str, enum.Enum):
    MODEL = "model"
    OPTIMIZER = "optimizer"
    DATALOADER = "data loader"
    SCHEDULER = "LR scheduler"


#: Prefixes of qualified names, dotted so ``torch.optim.`` does not match ``torch.optimize``.
_OPTIMIZER_PREFIXES = tuple(m + "." for m in OPTIMIZER_MODULES)
_NOT_OPTIMIZER_PREFIXES = tuple(m + "." for m in NOT_OPTIMIZER_MODULES)
_SCHEDULER_PREFIXES = tuple(m + "." for m in SCHEDULER_MODULES)
_MODULE_BASES = (*MODULE, *PRETRAINED_MODEL)
#: ``from torch.optim import *``: a bare ``AdamW`` is read as coming from the first of these.
STAR_MODULES = ("torch", "transformers", "diffusers", "bitsandbytes", "accelerate")


def constructor_kind(ctx: FileContext, call: ast.Call, classes: dict[str, ast.ClassDef]) -> Kind | None:
    """The kind of training object ``call`` builds, or None."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in FACTORY_METHODS:
        return Kind.MODEL if _model_class(ctx, func.value, classes, factory=True) else None
    if _model_class(ctx, func, classes, factory=False):
        return Kind.MODEL
    local = local_class_kind(ctx, func, classes) or project_class_kind(ctx, func)
    if local is not None:
        return local
    name = _imported_name(ctx, func) or _chosen_by_name(ctx, func)
    if name is None:
        return None
    last = name.rsplit(".", 1)[-1]
    if name in DATALOADERS:
        return Kind.DATALOADER
    if name in SCHEDULERS or (name.startswith(_SCHEDULER_PREFIXES) and last[:1].isupper()):
        return Kind.SCHEDULER
    if name.rsplit(".", 1)[0] in SCHEDULER_FACTORY_MODULES and last.startswith("get_") and "schedule" in last:
        return Kind.SCHEDULER
    if name in OPTIMIZERS or (
        name.startswith(_OPTIMIZER_PREFIXES)
        and not name.startswith(_NOT_OPTIMIZER_PREFIXES)
        and last[:1].isupper()
        and last != "Optimizer"  # the base class, in torch and the other libraries
    ):
        return Kind.OPTIMIZER
    if (
        name in MODEL_FACTORIES
        or name.startswith(MODEL_MODULES)
        or (name.startswith("torch.nn.") and last in MODEL_LAYERS)
    ):
        return Kind.MODEL
    return None


#: The last part given a class a script picks from a module by name at run time: capitalised, as
#: the module's public classes are, so ``getattr(torch.optim, args.optimizer)`` reads as an optimizer.
_PICKED_AT_RUN_TIME = "PickedAtRunTime"


def _chosen_by_name(ctx: FileContext, func: ast.AST) -> str | None:
    """``getattr(torch.optim.lr_scheduler, "StepLR")`` -> ``torch.optim.lr_scheduler.StepLR``, and
    ``getattr(torch.optim, args.optimizer)`` or ``torch.optim.__dict__[args.optimizer]`` -> a
    class of ``torch.optim`` picked at run time (research scripts choose their optimizer, scheduler
    and architecture by a flag)."""
    if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Attribute) and func.value.attr == "__dict__":
        module, attr = func.value.value, func.slice
    elif (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "getattr"
        and not ctx.imports.imported("getattr")
        and len(func.args) >= 2
    ):
        module, attr = func.args[0], func.args[1]
    else:
        return None
    prefix = _imported_name(ctx, module)
    if prefix is None:
        return None
    if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
        return f"{prefix}.{attr.value}"
    return f"{prefix}.{_PICKED_AT_RUN_TIME}"


def _imported_name(ctx: FileContext, func: ast.AST) -> str | None:
    """``func``'s qualified name when it comes from an import (directly or by a star import)."""
    if ctx.imports.root_is_import(func):
        return ctx.qualname(func)
    if isinstance(func, ast.Name) and not ctx.imports.imported(func.id):
        for module in ctx.imports.star_modules:
            if module.startswith(STAR_MODULES):
                return f"{module}.{func.id}"
    return None


def _model_class(ctx: FileContext, cls: ast.AST, classes: dict[str, ast.ClassDef], factory: bool) -> bool:
    name = transformers_model_class(ctx, cls)
    if name is not None:
        return factory or not name.startswith("Auto")
    qualname = _imported_name(ctx, cls)
    if qualname and qualname.startswith(DIFFUSERS + ".") and factory:
        last = qualname.rsplit(".", 1)[-1]
        return last.startswith(DIFFUSERS_MODEL_PREFIXES) or last.endswith(DIFFUSERS_MODEL_SUFFIXES)
    if isinstance(cls, ast.Name) and not ctx.imports.imported(cls.id) and cls.id in classes:
        return is_module_class(ctx, classes[cls.id], classes)
    return False


def is_module_class(
    ctx: FileContext, cls: ast.ClassDef, classes: dict[str, ast.ClassDef], seen: frozenset[str] = frozenset()
) -> bool:
    """``cls`` derives from ``nn.Module`` (directly, through a transformers model class, or
    through another class of the file)."""
    return _derives(
        ctx,
        cls,
        classes,
        lambda base: ctx.resolves_to(base, *_MODULE_BASES) or bool(transformers_model_class(ctx, base)),
        seen,
    )


def local_class_kind(ctx: FileContext, func: ast.AST, classes: dict[str, ast.ClassDef]) -> Kind | None:
    """What an instance of a class of the file is, by its bases: an optimizer (a Muon-style
    ``class Muon(torch.optim.Optimizer)``) or an LR scheduler (``class Warmup(LRScheduler)``)."""
    if not isinstance(func, ast.Name) or func.id not in classes or ctx.imports.imported(func.id):
        return None
    cls = classes[func.id]

    def under(prefixes: tuple[str, ...]) -> Callable[[ast.expr], bool]:
        return lambda base: (_imported_name(ctx, base) or "").startswith(prefixes)

    if _derives(ctx, cls, classes, under(_SCHEDULER_PREFIXES)):
        return Kind.SCHEDULER
    optimizer = under(_OPTIMIZER_PREFIXES)
    if _derives(ctx, cls, classes, lambda base: optimizer(base) and not under(_NOT_OPTIMIZER_PREFIXES)(base)):
        return Kind.OPTIMIZER
    return None


def project_class_kind(ctx: FileContext, func: ast.AST) -> Kind | None:
    """What an instance of a class imported from a module of the script's project is, by that
    module's bases, as :func:`local_class_kind` answers for the file's own classes: ``from lars
    import LARS`` with ``class LARS(Optimizer)`` in ``lars.py`` beside the script (survey 24a's
    SimCLR trainer). Only a module found next to the script (never a library), read, not imported."""
    qualname = _imported_name(ctx, func) if ctx.imports.root_is_import(func) else None
    dotted, _, name = (qualname or "").rpartition(".")
    root = dotted.split(".")[0]  # '' for a relative import: the project's own
    if not dotted or is_third_party(root) or root in sys.stdlib_module_names:
        return None
    path = module_file(ctx.filename, dotted)
    module = load_module(path) if path is not None else None
    if module is None or name not in module.classes:
        return None

    def under(prefixes: tuple[str, ...]) -> Callable[[ast.expr], bool]:
        def passes(base: ast.expr) -> bool:
            found = module.imports.qualname(base) if module.imports.root_is_import(base) else None
            return (found or "").startswith(prefixes)

        return passes

    optimizer = under(_OPTIMIZER_PREFIXES)
    roots: list[tuple[Kind, Callable[[ast.expr], bool]]] = [
        (Kind.SCHEDULER, under(_SCHEDULER_PREFIXES)),
        (Kind.OPTIMIZER, lambda base: optimizer(base) and not under(_NOT_OPTIMIZER_PREFIXES)(base)),
    ]
    for kind, is_root in roots:
        if _module_derives(module, module.classes[name], is_root, frozenset()):
            return kind
    return None


def _module_derives(
    module: ParsedModule, cls: ast.ClassDef, is_root: Callable[[ast.expr], bool], seen: frozenset[str]
) -> bool:
    """``cls`` of another module has a base passing ``is_root``, directly or through that
    module's other classes."""
    for base in cls.bases:
        if is_root(base):
            return True
        if isinstance(base, ast.Name) and base.id in module.classes and base.id not in seen | {cls.name}:
            if _module_derives(module, module.classes[base.id], is_root, seen | {cls.name}):
                return True
    return False


def _derives(
    ctx: FileContext,
    cls: ast.ClassDef,
    classes: dict[str, ast.ClassDef],
    is_root: Callable[[ast.expr], bool],
    seen: frozenset[str] = frozenset(),
) -> bool:
    """``cls`` has a base passing ``is_root``, directly or through other classes of the file."""
    for base in cls.bases:
        if is_root(base):
            return True
        if (
            isinstance(base, ast.Name)
            and base.id in classes
            and base.id not in seen
            and not ctx.imports.imported(base.id)
        ):
            if _derives(ctx, classes[base.id], classes, is_root, seen | {cls.name}):
                return True
    return False
