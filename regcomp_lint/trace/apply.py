"""``apply_plan``: compile a model **in place** the way a plan says.

A training job applies a plan that ``regcomp-lint trace --plan`` wrote earlier, elsewhere::

    from regcomp_lint.trace.apply import apply_plan
    model = apply_plan(model, "plan.json")      # the same object, compiled in place

Everything is compiled with ``nn.Module.compile(...)``, which sets the module's
``_compiled_call_impl`` and leaves the module tree alone. So, unlike ``torch.compile(model)`` and
Accelerate's ``compile_regions`` (both return new wrapper objects):

- ``state_dict()`` keys stay exactly what they were (no ``_orig_mod.`` prefix),
- hooks registered on the modules (FSDP2's ``fully_shard``, DeepSpeed's) stay on the call path,
- the returned object *is* ``model``.

Strategies (``plan.strategy``):

- ``"full"``: ``model.compile(**kw)``.
- ``"regional"``: the child blocks of each container in ``plan.regions`` (dotted paths such as
  ``"transformer.h"``; an ``nn.ModuleList`` or ``nn.Sequential``), as ``plan.method`` says:

  - ``"blocks"`` (the default): every block is compiled on its own, in place; the glue around
    the blocks (embeddings, final norm, head, loss) runs eagerly.
  - ``"split"``: the whole model is compiled once, in place, and every block's ``forward`` is
    wrapped so that its call ends the caller's graph and the block runs as a frame of its own,
    which that compile compiles once and reuses for the identical blocks. Like ``"blocks"``,
    plus the glue compiled where dynamo can resume after a block: a frame that calls the blocks
    in a loop (GPT-2's ``GPT2Model.forward``) runs eagerly (torch 2.13 cannot resume a graph
    inside a loop), its callers (``GPT2LMHeadModel.forward``: head and loss) are compiled.
  - ``"nested"``: every block's ``forward`` is marked ``torch.compiler.nested_compile_region``
    (on the instance: one marked function per block class, shared by its instances, so the class
    and other models are untouched) and the whole model is compiled once, in place. Dynamo and
    inductor compile one block and reuse it for the identical others, inside one graph that
    also holds the glue and the loss. In eager mode the mark is a no-op. It needs a backend
    that runs AOT autograd (``inductor``, ``aot_eager``): with ``backend="eager"`` torch 2.13
    cannot run the backward of a nested region, so that is an ``ApplyError``.
  With ``plan.repeated_blocks`` (a diffusers model's ``_repeated_blocks``), the blocks are also
  every submodule whose class name is listed, wherever it sits, as diffusers'
  ``ModelMixin.compile_repeated_blocks()`` finds them (``for m in model.modules(): if
  type(m).__name__ in names``): a UNet's ``BasicTransformerBlock``s in
  ``down_blocks[i].attentions[j]``, ``mid_block`` and ``up_blocks[i]`` are in no one container.
  No block is compiled inside another: a named block inside a named block is left to the outer
  one, and a region child that holds named blocks, or sits inside one, gives way to them (its
  other layers run eagerly, as with ``compile_repeated_blocks``).
- ``"none"``: nothing is compiled.

``kw`` comes from ``plan.plugin``: ``backend`` (default ``"inductor"``), ``mode``, ``fullgraph``,
``dynamic``. ``use_regional_compilation`` is Accelerate's switch, not a ``torch.compile``
argument, and is not passed on.

Problems a user can act on (a region path the model does not have, a region that is not a
container, an empty one, ``repeated_blocks`` that name no class of the model, a model that is
already an out-of-place ``torch.compile`` wrapper) are an ``ApplyError`` naming the path or
class and what the model has instead.

torch is imported only when ``apply_plan`` runs, so ``ApplyError`` can be imported without it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from regcomp_lint.plan import Plan

if TYPE_CHECKING:  # pragma: no cover
    from torch import nn

__all__ = ["ApplyError", "apply_plan", "compile_kwargs"]

#: plugin keys that are ``torch.compile`` keywords (the rest are Accelerate's own).
_COMPILE_KEYS = ("backend", "mode", "fullgraph", "dynamic")


class ApplyError(ValueError):
    """The plan does not fit the model (the message names the path and what the model has)."""


def compile_kwargs(plan: Plan) -> dict[str, Any]:
    """The ``torch.compile`` keywords a plan asks for (``backend`` defaults to ``"inductor"``)."""
    kwargs: dict[str, Any] = {"backend": "inductor"}
    for key in _COMPILE_KEYS:
        if key in plan.plugin:
            kwargs[key] = plan.plugin[key]
    # "default" is torch.compile's own default mode; None means the same.
    if kwargs.get("mode") is None:
        kwargs.pop("mode", None)
    return kwargs


def apply_plan(model: nn.Module, plan: Plan | str | os.PathLike[str]) -> nn.Module:
    """Compile ``model`` in place as ``plan`` (a ``Plan`` or the path of a plan file) says.

    Returns ``model`` itself. Raises ``regcomp_lint.plan.PlanError`` for a plan file that cannot
    be read or is not a valid plan, and ``ApplyError`` when the plan does not fit the model.
    """
    import torch
    from torch import nn

    if not isinstance(plan, Plan):
        if not isinstance(plan, (str, os.PathLike)):
            raise TypeError(f"apply_plan: plan must be a Plan or the path of a plan file, got {type(plan).__name__}")
        plan = Plan.load(plan)
    if not isinstance(model, nn.Module):
        raise TypeError(f"apply_plan: model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(model, torch._dynamo.eval_frame.OptimizedModule):
        raise ApplyError(
            "apply_plan: the model is already an out-of-place torch.compile wrapper (OptimizedModule); "
            "pass the original module (its `_orig_mod`) and let the plan compile it in place"
        )

    if plan.strategy == "none":
        return model
    kwargs = compile_kwargs(plan)
    if plan.strategy == "full":
        model.compile(**kwargs)
        return model

    # regional
    if not plan.regions and not plan.repeated_blocks:
        raise ApplyError(
            "apply_plan: the plan's strategy is regional but it names no regions and no repeated_blocks "
            "(plan.regions and plan.repeated_blocks are empty)"
        )
    blocks = _regional_blocks(model, plan)
    method = plan.method or "blocks"
    if method == "split":
        if kwargs.get("fullgraph"):
            raise ApplyError(
                'apply_plan: method "split" ends the graph at every block call, so it cannot run with plugin.fullgraph true; '
                'drop fullgraph or use method "nested" (one graph)'
            )
        _split_at_blocks(blocks)
        model.compile(**kwargs)
    elif method == "nested":
        if kwargs["backend"] == "eager":
            # torch 2.13: the backward of an invoke_subgraph run by the eager backend fails
            # ("fake_mode should be enabled for HOPs"); only AOT autograd lowers it.
            raise ApplyError(
                'apply_plan: method "nested" needs a backend that runs AOT autograd ("inductor", "aot_eager"); '
                'backend "eager" cannot run the backward of a nested compile region (use "aot_eager" to debug)'
            )
        _mark_nested(blocks)
        model.compile(**kwargs)
    else:
        for block in blocks:
            block.compile(**kwargs)
    return model


def _block_function(block: nn.Module) -> Any:
    """The plain function behind ``block.forward`` (its class's, unless the instance has its own)."""
    import types

    current = block.__dict__.get("forward")
    if current is None:
        return type(block).forward
    if isinstance(current, types.MethodType) and current.__self__ is block:
        return current.__func__
    raise ApplyError(
        f"apply_plan: a {type(block).__name__} block has an instance attribute `forward` that is not one of "
        "its methods; apply_plan needs a plain method to wrap"
    )


def _split_at_blocks(blocks: list[nn.Module]) -> None:
    """Make every block call its own frame under the model's compile (idempotent).

    ``block.forward = torch.compiler.disable(functools.partial(Class.forward, block),
    recursive=False)``: dynamo does not trace the call into the block as part of the caller's
    graph (the caller's graph ends there and resumes after it), and only the wrapper's own frame
    is skipped, so ``Class.forward`` runs as a new frame that the same compile compiles once and
    reuses for every identical block (the parameters are graph inputs). The glue is compiled
    where dynamo can resume after the block call; the frame with the loop over the blocks is not.
    """
    import functools

    import torch

    for block in blocks:
        current = block.__dict__.get("forward")
        if getattr(current, "__regcomp_split__", False):
            continue  # already split by an earlier apply_plan
        wrapper = torch.compiler.disable(functools.partial(_block_function(block), block), recursive=False)
        wrapper.__regcomp_split__ = True
        block.forward = wrapper


def _mark_nested(blocks: list[nn.Module]) -> None:
    """Make each block's ``forward`` a nested compile region, per instance (idempotent).

    The instance gets ``forward = functools.partial(marked, block)``, ``marked`` being one
    ``nested_compile_region(Class.forward)`` per block class. Not ``types.MethodType(marked,
    block)``: torch 2.13's dynamo then reuses the first block's parameters for every block
    (wrong outputs, no gradients for the others); with a partial, or with the mark on the
    class, each block's parameters are the subgraph's inputs.
    """
    import functools

    import torch

    marked: dict[Any, Any] = {}
    for block in blocks:
        current = block.__dict__.get("forward")
        if isinstance(current, functools.partial) and hasattr(current.func, "__marked_compile_region_fn__"):
            continue  # already marked by an earlier apply_plan
        func = _block_function(block)
        if func not in marked:
            marked[func] = (
                func if hasattr(func, "__marked_compile_region_fn__") else torch.compiler.nested_compile_region(func)
            )
        block.forward = functools.partial(marked[func], block)


def _regional_blocks(model: nn.Module, plan: Plan) -> list[nn.Module]:
    """Every block a regional plan compiles, in module order, none inside another; checked
    before any compile."""
    region = _region_blocks(model, plan.regions) if plan.regions else []
    named = _named_blocks(model, plan.repeated_blocks) if plan.repeated_blocks else []
    order = {id(module): (index, path) for index, (path, module) in enumerate(model.named_modules())}
    named_paths = [order[id(m)][1] for m in named]

    def inside(path: str, outer: str) -> bool:
        return outer == "" or path.startswith(outer + ".")

    kept = [m for m, path in zip(named, named_paths) if not any(inside(path, o) for o in named_paths if o != path)]
    for child in region:
        path = order[id(child)][1]
        if any(inside(path, o) or inside(o, path) or o == path for o in named_paths):
            continue  # the named blocks are compiled one by one instead, as compile_repeated_blocks does
        kept.append(child)
    return sorted(kept, key=lambda m: order[id(m)][0])


def _named_blocks(model: nn.Module, names: list[str]) -> list[nn.Module]:
    """Every submodule whose class name is in ``names`` (``compile_repeated_blocks``' test)."""
    wanted = set(names)
    found = [module for module in model.modules() if type(module).__name__ in wanted]
    if not found:
        counts: dict[str, int] = {}
        for module in model.modules():
            counts[type(module).__name__] = counts.get(type(module).__name__, 0) + 1
        repeated = ", ".join(f"{name} ({n})" for name, n in counts.items() if n > 1 and name not in _CONTAINERS)
        raise ApplyError(
            f"apply_plan: repeated_blocks names {', '.join(names)} but the model ({type(model).__name__}) has no "
            f"submodule of those classes (classes with several instances here: {repeated or 'none'})"
        )
    return found


#: containers hold blocks; they are not a block class to suggest
_CONTAINERS = ("ModuleList", "Sequential", "ModuleDict")


def _region_blocks(model: nn.Module, regions: list[str]) -> list[nn.Module]:
    """The child blocks of every region container, in order, each once; checked before any compile."""
    from torch import nn

    blocks: list[nn.Module] = []
    seen: set[int] = set()
    for path in regions:
        container = _resolve(model, path)
        if not isinstance(container, (nn.ModuleList, nn.Sequential)):
            kids = ", ".join(name for name, _ in container.named_children()) or "none"
            raise ApplyError(
                f"apply_plan: region {path!r} is a {type(container).__name__}, not an nn.ModuleList or "
                f"nn.Sequential of blocks (its children: {kids})"
            )
        children = list(container.children())
        if not children:
            raise ApplyError(
                f"apply_plan: region {path!r} is an empty {type(container).__name__}: there are no blocks to compile"
            )
        for child in children:
            if id(child) not in seen:
                seen.add(id(child))
                blocks.append(child)
    return blocks


def _resolve(model: nn.Module, path: str) -> nn.Module:
    """``model.get_submodule(path)`` with an error that says where the path stops matching."""
    if not isinstance(path, str) or not path.strip():
        raise ApplyError(f"apply_plan: region path {path!r} is empty; name a container such as 'transformer.h'")
    current = model
    walked: list[str] = []
    for part in path.split("."):
        children = dict(current.named_children())
        if part not in children:
            where = ".".join(walked) or "the model"
            where_desc = f"{where!s} ({type(current).__name__})" if walked else f"the model ({type(current).__name__})"
            have = ", ".join(children) or "no submodules"
            hint = ""
            if "_orig_mod" in children:
                hint = "; the model holds a torch.compile wrapper there: pass the original module"
            raise ApplyError(
                f"apply_plan: region {path!r} not found: {where_desc} has no submodule {part!r} (it has: {have}){hint}"
            )
        current = children[part]
        walked.append(part)
    return current
