"""The model's own attributes, reached through the unwrapped model once it is prepared.

``prepare`` may hand back the model inside DDP (several processes) and ``torch.compile``'s
wrapper. The wrapper is an ``nn.Module`` too, so ``train()``, ``parameters()`` and the rest of
``nn.Module``'s API still work, but the model's own methods and attributes (``generate``,
``configure_optimizers``, ``config``, a submodule such as ``transformer``) do not pass through
DDP: "'DistributedDataParallel' object has no attribute ...". A write (``model.hidden = h``)
would land on the wrapper where ``forward`` never sees it, and neither wrapper can be indexed
(``model[0]`` of an ``nn.Sequential``). After ``prepare`` the conversion reaches them through
``accelerator.unwrap_model(model, keep_torch_compile=False)``, the plain model (see
:data:`~regcomp_lint.knowledge.accelerate_api.REGIONAL_UNWRAP`); before it, the script's own
object is still the plain model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.checkpoint_writes import under_rank_test
from regcomp_lint.codemod.file_writes import tell_main_process
from regcomp_lint.codemod.fresh_state import defines_member, makes_fresh_state
from regcomp_lint.codemod.method_loss import left_plain, not_wrapped, through_wrapper, without_grad
from regcomp_lint.codemod.module_globals import declared_global
from regcomp_lint.codemod.roles import bindings, bound_keys
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.trainer_models import later_methods
from regcomp_lint.codemod.tree import Block, Function, Tree, code, find_all, key_of, parameter_names, read_keys
from regcomp_lint.knowledge import accelerate_api
from regcomp_lint.knowledge.torch_api import (
    COMPILE_WRAPPER_ATTRIBUTE,
    DATA_PARALLEL_API,
    DATA_PARALLEL_INSTANCE_API,
    MODULE_API,
    STRUCTURE_API,
    TRACING_FUNCTIONS,
    TRACING_METHODS,
)
from regcomp_lint.knowledge.training_libraries import DIFFUSERS_MODULE, PIPELINE_CLASS_SUFFIX

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner


def read_through_wrapper(planner: PlainPlanner, block: Block, prepare_index: int) -> None:
    """Rewrite ``model.own_attribute`` after ``prepare`` to ``accelerator.unwrap_model(model).own_attribute``."""
    tree = planner.tree
    models = set(planner.models)
    rewritten: list[str] = []
    unreachable: list[str] = []
    written_once: list[str] = []
    walked: list[tuple[int, str]] = []
    own_unwraps: list[str] = []
    own_compile_unwraps: list[str] = []
    to_pipelines: list[str] = []
    trains = planner.reach()
    later = later_methods(planner)  # a trainer's methods that may run after its training method prepared
    places = places_using_prepared(planner)
    for function in [*places, *_handed_further(planner, places, models)]:
        handed = handed_the_model(planner, function, models, 0) if function is not planner.scope else set()
        further = all(function is not place for place in places)
        if further and not handed:
            continue
        traced = traced_models(tree, function)
        pipelines = piped_models(tree, function)
        piped = {id(m) for m in pipelines}
        traced += [m for m in pipelines if all(m is not t for t in traced)]
        probes = probed_models(function)
        probed = {id(m): attribute for m, attribute in probes}
        for attr in [
            *find_all(function, (cst.Attribute, cst.Subscript), enter_functions=False),
            *traced,
            *(m for m, _ in probes),
        ]:
            structure = False  # ``model.children()``: through the wrappers it walks them (see STRUCTURE_API)
            if isinstance(attr, cst.Subscript):
                owner, name = key_of(attr.value), "[...]"  # DDP and the compile wrapper are not subscriptable
            elif isinstance(attr, cst.Attribute):
                owner, name = key_of(attr.value), attr.attr.value
                structure = name in STRUCTURE_API
                own_unwrap = name == "module" and not planner.distribution.by_hand
                if ((name in MODULE_API and not structure) or name in DATA_PARALLEL_API) and not own_unwrap:
                    continue  # the script's own DDP wraps: hand_distribution reads model.module
            elif id(attr) in probed:  # hasattr(model, "config"): DDP has none, the probe answers False
                owner, name = key_of(attr), probed[id(attr)]
            else:  # the model handed to ``writer.add_graph``: traced, which a compiled model refuses
                owner, name = key_of(attr), "traced"
            if (owner not in models and owner not in handed) or planner.is_removed(attr):
                continue
            if function is planner.scope:
                index = planner.project(block, attr)
                if index is None or index < planner.prepared_at.get(owner, prepare_index):
                    continue  # still the script's own, unprepared model
            elif (structure or name == "traced") and not called_after_prepare(planner, function, block, prepare_index):
                continue  # `make_optimizer(model)` walks named_parameters() of the model not yet prepared
            elif owner in handed:
                pass  # greedy_decode(model, ...) called as greedy_decode(transformer, ...)
            elif further:
                continue  # a helper further down: only what its callers hand it is the prepared model
            elif not sees_prepared(function, owner, planner) or (
                owner.startswith("self.") and function not in trains and function not in later
            ):
                continue
            call = tree.parent(attr)
            if (
                isinstance(attr, cst.Subscript)
                and isinstance(call, cst.Call)
                and call.func is attr
                and feeds_the_loss(planner, function, call)
                and not without_grad(tree, call)
            ):
                raise Refusal(_indexed_part(tree, attr))
            if (
                isinstance(attr, cst.Attribute)
                and not structure
                and isinstance(call, cst.Call)
                and call.func is attr
                and feeds_the_loss(planner, function, call)
                and not makes_fresh_state(tree, name)
                and not left_plain(planner, call)
                and not without_grad(tree, call)
            ):
                if through_wrapper(planner, call):
                    continue
                if not defines_member(tree, name):
                    raise Refusal(_unseen_method(planner, owner, name, attr))
                raise Refusal(
                    f"{owner}.{name}(...) at line {tree.line(attr)} computes the loss with the model's own method: "
                    "through the prepared model it would bypass DDP's gradient sync and the compile (only forward() "
                    f"goes through them), and {not_wrapped(planner)}; compute it in forward(), or convert by hand"
                )
            if not planner.can_reach_accelerator(function):
                unreachable.append(f"{owner}.{name} (line {tree.line(attr)})")
                continue
            acc = planner.accelerator_in(function)
            if isinstance(attr, cst.Attribute) and name == "module":
                # ``model.module if hasattr(model, "module") else model``: the script's own unwrap
                # of a DDP wrap it expects a launcher to make; under regional compilation the inner
                # module keeps its compiled regions (``_orig_mod.`` keys in what it saves)
                planner.unwrap(attr, owner)
                own_unwraps.append(f"{owner}.module (line {tree.line(attr)})")
                continue
            if isinstance(attr, cst.Attribute) and name == COMPILE_WRAPPER_ATTRIBUTE:
                # ``unet._orig_mod.state_dict()``: the script's own unwrap of the compile it made,
                # which the plugin now makes; the plain model has no ``_orig_mod`` (survey 20c)
                planner.unwrap(attr, owner)
                own_compile_unwraps.append(f"{owner}._orig_mod (line {tree.line(attr)})")
                continue
            # always the plain model: the compile wrapper passes attribute reads on to it anyway (a
            # method read so runs uncompiled either way), but not indexing nor writes; and under
            # regional compilation on several processes accelerate 1.15 hands back the DDP wrapper
            # itself unless told keep_torch_compile=False (accelerate_api.REGIONAL_UNWRAP)
            unwrapped = f"{acc}.unwrap_model({owner}, {accelerate_api.REGIONAL_UNWRAP})"
            whole = name == "traced" or id(attr) in probed
            planner.replace(attr if whole else attr.value, unwrapped)  # type: ignore[attr-defined]
            planner.uses.append(attr)
            if id(attr) in piped:
                to_pipelines.append(f"{owner} (line {tree.line(attr)})")
            elif name == "traced" or structure:
                walked.append((tree.line(attr), owner))
            else:
                rewritten.append(f"{owner}{name}" if isinstance(attr, cst.Subscript) else f"{owner}.{name}")
            if isinstance(call, cst.Call) and call.func is attr and _write_once(planner, call, name, acc):
                written_once.append(f"{owner}.{name}() at line {tree.line(call)}")
    if rewritten:
        shown = ", ".join(dict.fromkeys(rewritten))
        planner.notes.append(
            f"{shown} reached through {planner.acc_key}.unwrap_model(...) after prepare(): DDP does not pass the model's "
            "own attributes through (reads, writes and indexing)"
        )
    if own_compile_unwraps:
        planner.notes.append(
            f"{', '.join(own_compile_unwraps)} -> {planner.acc_key}.unwrap_model(..., {accelerate_api.REGIONAL_UNWRAP}): "
            "the script's own unwrap of the compile it made, which the plugin makes now (the plain model it reached "
            "has no _orig_mod)"
        )
    if own_unwraps:
        planner.notes.append(
            f"{', '.join(own_unwraps)} -> {planner.acc_key}.unwrap_model(..., {accelerate_api.REGIONAL_UNWRAP}): the "
            "script's own unwrap of a DDP wrap would keep the plugin's compile (its saves would get _orig_mod. keys)"
        )
    if walked:
        planner.notes.append(
            f"{', '.join(f'{owner} (line {line})' for line, owner in sorted(set(walked)))}: the model traced (add_graph) or walked by name (children(), "
            f"named_parameters(), ...) after prepare() is {planner.acc_key}.unwrap_model(..., keep_torch_compile=False): "
            "a compiled model cannot be traced, and through the compile and DDP wrappers children() yields the whole "
            "model and names gain _orig_mod. or module."
        )
    if to_pipelines:
        planner.notes.append(
            f"{', '.join(dict.fromkeys(to_pipelines))}: the model handed to a diffusers pipeline after prepare() is "
            f"{planner.acc_key}.unwrap_model(..., keep_torch_compile=False): the pipeline reads the model's config, "
            "which DDP does not pass on"
        )
    if written_once:
        planner.notes.append(
            f"{', '.join(written_once)} gets is_main_process={planner.acc_key}.is_main_process: every process "
            "still calls it (a sharded model's weights are gathered by all), the main process alone writes"
        )
    if unreachable:
        planner.notes.append(
            f"{', '.join(unreachable)}: the model's own attribute, read through the prepared model where no "
            "accelerator is in reach; under several processes read it from accelerator.unwrap_model(model)"
        )


def _indexed_part(tree, part: cst.Subscript) -> str:
    """The refusal for a loss computed by a part of the model taken by index (a diffusion policy's
    ``nets["noise_pred_net"](...)`` of an ``nn.ModuleDict`` without forward(), ``model[0](x)``):
    through the prepared model the part can only be reached unwrapped, outside DDP and the compile,
    so on several processes no gradient would be synced and the ranks would train apart."""
    return (
        f"{code(part).strip()}(...) at line {tree.line(part)} runs a part of the model taken by index, and its "
        "result feeds the loss: through the prepared model it would bypass DDP's gradient sync and the compile "
        "(only forward() goes through them; DDP and the compile wrapper cannot be indexed); compute the loss in "
        "a forward() of the model (a module whose forward() calls the parts), or convert by hand"
    )


def _unseen_method(planner: PlainPlanner, owner: str, name: str, attr: cst.Attribute) -> str:
    """The refusal for a model method whose result feeds the loss and that no file the converter
    can read defines (as a method or a submodule): it may run the model (a loss outside forward())
    or only make a fresh state (an RNN's zero hidden state, which converts); which one is unknown,
    so it is not said."""
    tree = planner.tree
    built = ""
    for node in bindings(planner.scope, owner):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            built = f" (the model comes from {code(node.value.func).strip()}(...), line {tree.line(node)})"
            break
    return (
        f"{owner}.{name}(...) at line {tree.line(attr)} calls the model's own method {name}(), which no file "
        f"regcomp-fix can read defines{built}, and its result feeds the loss: if it runs the model, through the "
        "prepared model it would bypass DDP's gradient sync and the compile (only forward() goes through them); "
        "one that only makes a fresh state (an RNN's zero hidden state) converts once the module that defines it "
        "is next to the script; otherwise compute it in forward(), or convert by hand"
    )


def called_after_prepare(
    planner: PlainPlanner, function: Function, block: Block, prepare_index: int, depth: int = 0
) -> bool:
    """Every call of ``function`` runs after ``prepare()``: the scope calls it (or calls what calls it)
    at or after the prepare statement. A model's own names are the same before and after (the
    script's object), so a structure walk is only rewritten where it surely sees the prepared one."""
    if not isinstance(function, cst.FunctionDef):
        return False
    callers = planner.graph.callers_of(function)
    if not callers or depth > 3:
        return depth > 0 or any(function is r for r in planner.reach())
    for caller, call in callers:
        if caller is planner.scope:
            index = planner.project(block, call)
            if index is None or index < prepare_index:
                return False
        elif not called_after_prepare(planner, caller, block, prepare_index, depth + 1):
            return False
    return True


def piped_models(tree, function: Function) -> list[cst.BaseExpression]:
    """What a diffusers pipeline is built with (``DDPMPipeline(unet=model, ...)``,
    ``StableDiffusionPipeline.from_pretrained(path, unet=unet)``): each argument that names an object."""
    found: list[cst.BaseExpression] = []
    for call in find_all(function, cst.Call, enter_functions=False):
        func = call.func
        pipeline = (
            func.value if isinstance(func, cst.Attribute) and not tree.resolves_under(func, DIFFUSERS_MODULE) else func
        )
        name = tree.resolves_under(pipeline, DIFFUSERS_MODULE)
        if name is None or not name.rsplit(".", 1)[-1].endswith(PIPELINE_CLASS_SUFFIX):
            continue
        found += [a.value for a in call.args if not a.star and isinstance(a.value, (cst.Name, cst.Attribute))]
    return found


def probed_models(function: Function) -> list[tuple[cst.BaseExpression, str]]:
    """``hasattr(model, "config")`` / ``getattr(model, "config", None)``: what is probed for an
    attribute of its own (not one ``nn.Module`` or DDP has, which a wrapper answers itself), with
    that attribute's name."""
    found = []
    for call in find_all(function, cst.Call, enter_functions=False):
        if not (isinstance(call.func, cst.Name) and call.func.value in ("hasattr", "getattr")) or len(call.args) < 2:
            continue
        name = call.args[1].value
        attribute = name.evaluated_value if isinstance(name, cst.SimpleString) else None
        if not isinstance(attribute, str) or attribute in MODULE_API or attribute in DATA_PARALLEL_API:
            continue
        if attribute in DATA_PARALLEL_INSTANCE_API or attribute.startswith("_"):
            continue
        found.append((call.args[0].value, attribute))
    return found


def traced_models(tree, function: Function) -> list[cst.BaseExpression]:
    """What ``writer.add_graph(model, x)`` and ``torch.jit.trace(model, x)`` hand over to be traced."""
    found = []
    for call in find_all(function, cst.Call, enter_functions=False):
        func = call.func
        tracing = (isinstance(func, cst.Attribute) and func.attr.value in TRACING_METHODS) or tree.resolves_to(
            func, *TRACING_FUNCTIONS
        )
        if tracing and call.args and call.args[0].keyword is None and not call.args[0].star:
            found.append(call.args[0].value)
    return found


def _write_once(planner: PlainPlanner, call: cst.Call, method: str, acc: str) -> bool:
    """Tell ``model.save_pretrained(path)`` whether it runs on the main process (see
    :data:`~regcomp_lint.knowledge.training_libraries.MAIN_PROCESS_KEYWORDS`): launched on several
    processes, each would write the same files at once. Not when the script already says it, by
    keyword, position or ``**kwargs``, or calls it under a rank test."""
    return not under_rank_test(planner, call) and tell_main_process(planner, call, method, acc)


def handed_the_model(planner: PlainPlanner, function: Function, models: set[str], depth: int) -> set[str]:
    """Parameters of ``function`` under another name than the model's that its callers fill with
    the prepared model (``def greedy_decode(model, ...)`` called as ``greedy_decode(transformer, ...)``,
    or from a function that was itself handed it), up to three calls up."""
    if not isinstance(function, cst.FunctionDef) or depth > 2:
        return set()
    params = parameter_names(function)
    if params and params[0] in ("self", "cls"):
        params = params[1:]  # called as self.method(...)
    found: set[str] = set()
    for caller, call in planner.graph.callers_of(function):
        theirs = models | handed_the_model(planner, caller, models, depth + 1)
        for index, arg in enumerate(call.args):
            if arg.star:
                break
            name = arg.keyword.value if arg.keyword is not None else params[index] if index < len(params) else None
            if name is not None and name not in models and key_of(arg.value) in theirs:
                found.add(name)
    return found


def run_without_grad(planner: PlainPlanner) -> list[str]:
    """Why some of a prepared model's parameters get no gradient: the training code runs a part of
    it outside ``forward()`` under ``torch.no_grad()`` to feed the loss as data (LeRobot's
    ``obs_features = model.vision_encoder(obs)``). That part's parameters still require grad and
    DDP waits for them unless it looks for unused ones; one phrase per call. A method that also
    computes the loss through its wrapper module (PPO's rollout, ``method_loss``) is not one."""
    tree = planner.tree
    models = set(planner.models)
    found: list[str] = []
    for function in planner.reach():
        for call in find_all(function, cst.Call, enter_functions=False):
            func = call.func
            if not isinstance(func, cst.Attribute) or key_of(func.value) not in models:
                continue
            if func.attr.value in MODULE_API or func.attr.value in DATA_PARALLEL_API:
                continue
            if (
                without_grad(tree, call)
                and not left_plain(planner, call)
                and _before_a_backward(tree, function, call)
                and feeds_the_loss(planner, function, call)
            ):
                found.append(
                    f"{key_of(func.value)}.{func.attr.value}(...) (line {tree.line(call)}) runs under torch.no_grad() "
                    "outside forward() to feed the loss"
                )
    return found


def _before_a_backward(tree: Tree, function: Function, call: cst.Call) -> bool:
    """A ``.backward()`` of ``function`` can run after ``call``: later in the source, or in a loop
    around both. PEFT's AdaLoRA example ends with ``outputs = model.generate(...)`` under no_grad
    after its training loop, the name ``outputs`` being the training forward's too (survey 22c):
    it feeds no loss. What ``function`` returns to a caller's backward is left to
    :func:`feeds_the_loss` (no backward of its own: the call may precede the caller's)."""
    backwards = [
        c
        for c in find_all(function, cst.Call, enter_functions=False)
        if isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward"
    ]
    if not backwards:
        return True
    loops = [a for a in tree.ancestors(call) if isinstance(a, (cst.For, cst.While))]
    return any(tree.line(b) > tree.line(call) or any(tree.contains(loop, b) for loop in loops) for b in backwards)


def feeds_the_loss(planner: PlainPlanner, function: Function, call: cst.Call) -> bool:
    """``call`` feeds a backward of ``function``, or what ``function`` returns, where a caller's
    backward reads that result (``def compute_loss(model, x): return model.training_step(x)``)."""
    tree = planner.tree
    if _feeds_the_loss(tree, function, call):
        return True
    if not isinstance(function, cst.FunctionDef) or not _feeds(
        tree, function, call, list(find_all(function, cst.Return, enter_functions=False))
    ):
        return False
    return any(_feeds_the_loss(tree, caller, used) for caller, used in planner.graph.callers_of(function))


def _feeds_the_loss(tree, function: Function, call: cst.Call) -> bool:
    """``call`` is part of what a ``X.backward()`` of ``function`` differentiates: inside ``X``,
    or in an assignment whose names ``X`` reads, followed back through the function's assignments."""
    backwards = [
        c
        for c in find_all(function, cst.Call, enter_functions=False)
        if isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward"
    ]
    return _feeds(tree, function, call, backwards)


def _feeds(tree, function: Function, call: cst.Call, ends: list[cst.Call] | list[cst.Return]) -> bool:
    """``call`` is inside one of ``ends`` (backward calls: their receiver; returns: their value), or
    in an assignment whose names they read, followed back through the function's assignments."""
    if not ends:
        return False
    sources: list[cst.CSTNode] = []
    for end in ends:
        if isinstance(end, cst.Return):
            if end.value is not None:
                sources.append(end.value)
        elif isinstance(end.func, cst.Attribute):
            sources.append(end.func.value)
    needed = {key for source in sources for key in read_keys(source)}
    pending = list(find_all(function, _BINDERS, enter_functions=False))
    changed = True
    while changed:
        changed = False
        for binder in list(pending):
            value = _bound_from(binder)
            if value is not None and set(_written_keys(binder)) & needed:
                pending.remove(binder)
                sources.append(value)
                needed |= set(read_keys(value))
                changed = True
    return any(tree.contains(source, call) for source in sources)


# what binds a name from a value the loss may read: ``d_loss += (fr - ff).abs().mean()`` and
# ``for fr, ff in zip(feat_real, feat_fake):`` as well as ``d_loss = ...`` (a GAN's loss summed
# over a discriminator's layers, survey 20c)
_BINDERS = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For)


def _bound_from(binder: cst.CSTNode) -> cst.BaseExpression | None:
    """The expression a binder's names come from: its value, or a for loop's iterable."""
    if type(binder) is cst.For:  # (``type(x) is``: see tree.key_of)
        return binder.iter
    return binder.value  # type: ignore[attr-defined]  # None for a bare annotation


def _written_keys(binder: cst.CSTNode) -> list[str]:
    """Names a binder writes, ``buf`` of ``buf[i] = ...`` included (it fills ``buf``)."""
    keys = list(bound_keys(binder))
    targets: list[cst.BaseExpression] = [t.target for t in binder.targets] if isinstance(binder, cst.Assign) else []
    for node in targets:
        while type(node) is cst.Subscript:  # (``type(x) is``: see tree.key_of)
            node = node.value
        key = key_of(node)
        if key is not None and key not in keys:
            keys.append(key)
    return keys


def places_using_prepared(planner: PlainPlanner) -> list[Function]:
    """Where the prepared model is used: the code that trains, what the scope calls (evaluation,
    sampling) and, for a module-level script, every top-level function."""
    tree = planner.tree
    places = list(planner.reach())
    places += [callee for callee, _ in planner.graph.calls_from(planner.scope)]
    if isinstance(planner.scope, cst.Module):
        places += [f for f in find_all(tree.module, cst.FunctionDef) if tree.class_of(f) is None]
    places += later_methods(planner)
    unique: list[Function] = []
    for place in places:
        if all(place is not u for u in unique):
            unique.append(place)
    return unique


def _handed_further(planner: PlainPlanner, places: list[Function], models: set[str]) -> list[cst.FunctionDef]:
    """The functions that ``places`` call, not among them (one call further down): a galaxy
    diffusion trainer's ``build_checkpoint(unet, ...)`` calls ``get_raw_state_dict(unet)``, whose
    own compile unwrap (``model._orig_mod if hasattr(model, "_orig_mod") else model``) reads the
    prepared model, the DDP wrapper on several processes (``module.`` keys, survey 21e). The caller
    keeps only those handed the model (:func:`handed_the_model`)."""
    further: list[cst.FunctionDef] = []
    for place in places:
        for callee, _ in planner.graph.calls_from(place):
            if isinstance(callee, cst.FunctionDef) and all(callee is not f for f in [*places, *further]):
                further.append(callee)
    return further


def sees_prepared(function: Function, owner: str, planner: PlainPlanner) -> bool:
    """Does ``owner`` in this (non-scope) function name the prepared model? ``self.model`` in the
    trainer's methods, a parameter of that name, or the global the module-level script (or a helper
    binding module globals) prepares."""
    if owner.startswith("self."):
        return True
    if isinstance(function, cst.FunctionDef):
        if owner in parameter_names(function):
            return True
        if planner.global_accelerator and owner in declared_global(planner.scope):
            return not bindings(function, owner)  # NNI's prepare() binds the globals (module_globals.py)
        return isinstance(planner.scope, cst.Module) and not bindings(function, owner)
    return False
