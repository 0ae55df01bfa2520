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

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.models import FACTORY_METHODS, transformers_model_class


class Kind(str, enum.Enum):
    MODEL = "model"
    OPTIMIZER = "optimizer"
    DATALOADER = "data loader"
    SCHEDULER = "LR scheduler"


OPTIMIZER_MODULES = (
    "torch.optim.",
    "bitsandbytes.optim.",
    "apex.optimizers.",
    "timm.optim.",
    "deepspeed.ops.adam.",
    "deepspeed.ops.lamb.",
)
OPTIMIZERS = (
    "transformers.AdamW",
    "transformers.Adafactor",
    "transformers.optimization.AdamW",
    "transformers.optimization.Adafactor",
    "accelerate.utils.DummyOptim",
    "torch.distributed.optim.ZeroRedundancyOptimizer",
    "lion_pytorch.Lion",
    "schedulefree.AdamWScheduleFree",
)
NOT_OPTIMIZER_MODULES = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")
SCHEDULER_MODULES = ("torch.optim.lr_scheduler.",)
#: ``transformers.get_linear_schedule_with_warmup`` and friends, ``get_scheduler``; diffusers'.
SCHEDULER_FACTORY_MODULES = ("transformers", "transformers.optimization", "diffusers.optimization")
SCHEDULERS = ("accelerate.utils.DummyScheduler",)
DATALOADERS = (
    "torch.utils.data.DataLoader",
    "torch.utils.data.dataloader.DataLoader",
    "torchdata.stateful_dataloader.StatefulDataLoader",
)
MODULE_BASES = (
    "torch.nn.Module",
    "torch.nn.modules.module.Module",
    "transformers.PreTrainedModel",
    "transformers.modeling_utils.PreTrainedModel",
)
#: torch.nn layers people train directly as "the model" (a loss or an activation is not one).
TORCH_MODEL_LAYERS = frozenset(
    {
        "Sequential",
        "Linear",
        "Bilinear",
        "Conv1d",
        "Conv2d",
        "Conv3d",
        "LSTM",
        "GRU",
        "RNN",
        "Transformer",
        "TransformerEncoder",
        "TransformerDecoder",
        "Embedding",
        "EmbeddingBag",
        "MultiheadAttention",
    }
)
MODEL_FACTORIES = ("timm.create_model",)
MODEL_MODULES = ("torchvision.models.",)
DIFFUSERS_MODEL_SUFFIXES = ("Model", "Model2D", "ConditionModel")
#: ``from torch.optim import *``: a bare ``AdamW`` is read as coming from the first of these.
STAR_MODULES = ("torch", "transformers", "diffusers", "bitsandbytes", "accelerate")


def constructor_kind(ctx: FileContext, call: ast.Call, classes: dict[str, ast.ClassDef]) -> Kind | None:
    """The kind of training object ``call`` builds, or None."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in FACTORY_METHODS:
        return Kind.MODEL if _model_class(ctx, func.value, classes, factory=True) else None
    if _model_class(ctx, func, classes, factory=False):
        return Kind.MODEL
    name = _imported_name(ctx, func)
    if name is None:
        return None
    last = name.rsplit(".", 1)[-1]
    if name in DATALOADERS:
        return Kind.DATALOADER
    if name in SCHEDULERS or (name.startswith(SCHEDULER_MODULES) and last[:1].isupper()):
        return Kind.SCHEDULER
    if name.rsplit(".", 1)[0] in SCHEDULER_FACTORY_MODULES and last.startswith("get_") and "schedule" in last:
        return Kind.SCHEDULER
    if name in OPTIMIZERS or (
        name.startswith(OPTIMIZER_MODULES)
        and not name.startswith(NOT_OPTIMIZER_MODULES)
        and last[:1].isupper()
        and last not in ("Optimizer",)
    ):
        return Kind.OPTIMIZER
    if (
        name in MODEL_FACTORIES
        or name.startswith(MODEL_MODULES)
        or (name.startswith("torch.nn.") and last in TORCH_MODEL_LAYERS)
    ):
        return Kind.MODEL
    return None


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
    if qualname and qualname.startswith("diffusers.") and factory:
        last = qualname.rsplit(".", 1)[-1]
        return last.startswith(("UNet", "Autoencoder")) or last.endswith(DIFFUSERS_MODEL_SUFFIXES)
    if isinstance(cls, ast.Name) and not ctx.imports.imported(cls.id) and cls.id in classes:
        return is_module_class(ctx, classes[cls.id], classes)
    return False


def is_module_class(
    ctx: FileContext, cls: ast.ClassDef, classes: dict[str, ast.ClassDef], seen: frozenset[str] = frozenset()
) -> bool:
    """``cls`` derives from ``nn.Module`` (directly, through a transformers model class, or
    through another class of the file)."""
    for base in cls.bases:
        if ctx.resolves_to(base, *MODULE_BASES) or transformers_model_class(ctx, base):
            return True
        if (
            isinstance(base, ast.Name)
            and base.id in classes
            and base.id not in seen
            and not ctx.imports.imported(base.id)
        ):
            if is_module_class(ctx, classes[base.id], classes, seen | {cls.name}):
                return True
    return False
