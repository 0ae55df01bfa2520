"""Adapting a script that sets up its own distribution (torchrun env-rank DDP) to Accelerate.

The script keeps what still works under both ``torchrun`` and ``accelerate launch`` — its
``RANK``/``LOCAL_RANK``/``WORLD_SIZE`` reads, ``master_process``, ``DistributedSampler`` +
``set_epoch``, ``dist.all_reduce``/``barrier``, ``destroy_process_group`` — and loses only what
Accelerate now owns:

- the DDP/DataParallel wrap (``accelerator.prepare`` wraps; DDP keywords move to
  ``DistributedDataParallelKwargs``);
- ``torch.cuda.set_device`` (Accelerate sets each process's device);
- a second process-group initialisation (``init_process_group`` is guarded by
  ``is_initialized()``: the ``Accelerator`` may have created the group already);
- ``model.no_sync()`` becomes ``accelerator.no_sync(model)`` and ``model.module`` reads the
  unwrapped model.

Loaders fed by a ``DistributedSampler`` are already sharded and stay unprepared, so every rank
sees exactly the batches it saw before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import expression, guarded, statement
from regcomp_lint.codemod.device_choice import local_rank_from_env, local_rank_option
from regcomp_lint.codemod.handed_in import handing_over
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.reinit_sync import drawn_after_the_wrap
from regcomp_lint.codemod.roles import bindings
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.trainer_models import refuse_wrap_handed_in
from regcomp_lint.codemod.tree import (
    Function,
    Tree,
    code,
    dotted,
    find_all,
    key_of,
    parameter_names,
    single_target,
)
from regcomp_lint.codemod.unprepared_wraps import replace_unprepared_wrap
from regcomp_lint.codemod.wrapped_access import feeds_the_loss
from regcomp_lint.codemod.wrapped_copies import reads_through_the_wrap, wrapped_copies
from regcomp_lint.knowledge import accelerate_api, torch_api

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner

#: DDP's second and third parameters: no effect once Accelerate places the model (it passes the
#: device itself).
_DEVICE_KEYWORDS = ("device_ids", "output_device")
#: The ``cpu=`` condition that keeps a CPU run of the script's processes distributed.
_NO_CUDA = "not torch.cuda.is_available()"
_NO_CUDA_NOTE = (
    "cpu=not torch.cuda.is_available(): on a machine without CUDA, Accelerate joins the script's "
    "processes only when told to use the CPU"
)


def _read_copies_one_module_less(planner: PlainPlanner) -> None:
    """A copy (an EMA average) made of the DDP-wrapped model is made of the plain module once the
    wrap is gone: its reads through the copied wrapper drop that ``.module``."""
    tree = planner.tree
    for name, holder, call in wrapped_copies(tree, planner.distribution.multi_process_wraps(tree)):
        reads = reads_through_the_wrap(tree, name, holder)
        for attr in reads:
            planner.edits.on(attr, lambda updated: updated.value)
        through = (
            f"; {len(reads)} read(s) through that wrapper (line {tree.line(reads[0])}) now drop its .module"
            if reads
            else ""
        )
        planner.notes.append(
            f"{name} = {code(call).strip()} (line {tree.line(call)}) copied the DDP-wrapped model; the conversion "
            f"copies the plain module (prepare() follows it){through}; what it saves loses the wrapper's `module.` "
            "key prefix (strip it to load an old checkpoint)"
        )


def adapt_distribution(planner: PlainPlanner) -> None:
    """Remove the wraps, guard the process-group set-up and read the model through the wrapper."""
    tree = planner.tree
    dist = planner.distribution
    models = set(planner.models)
    ddp_keywords = _one_set_of_options(
        planner, [(call, _remove_wrap(planner, call, models)) for call in dist.data_parallel]
    )
    _read_copies_one_module_less(planner)
    workers = [w for w in (_spawned_worker(planner, call) for call in dist.spawn) if w is not None]
    # a spawned worker joins its group before the Accelerator exists; torchrun scripts may join after
    guarded = [] if workers else dist.init_process_group
    for call in guarded:
        _guard_initialisation(planner, call)
    for call in dist.set_device:  # Accelerate sets each process's device itself (and CPU has none to set)
        expr = tree.parent(call)
        if isinstance(expr, cst.Expr):
            planner.remove_small(expr)
    unwraps = 0
    aliases: dict[int, set[str]] = {}  # per function, found once
    for attr in find_all(tree.module, cst.Attribute):
        owner = key_of(attr.value)
        if owner is None:
            continue
        if owner not in models:
            function = tree.function_of(attr)
            if id(function) not in aliases:
                aliases[id(function)] = _aliases(function, models)
            if owner not in aliases[id(function)]:
                continue
        if attr.attr.value == "no_sync":
            _rewrite_no_sync(planner, attr, owner)
        elif attr.attr.value == "module":
            planner.unwrap(attr, owner)
            unwraps += 1
            _unwrap_plain_aliases(planner, attr, owner)
            _name_a_loss_outside_forward(planner, attr, owner)
    if ddp_keywords:
        handler = f"DistributedDataParallelKwargs({', '.join(ddp_keywords)})"
        planner.accelerator_keywords.append(f"kwargs_handlers=[{handler}]")
        planner.imports.append((accelerate_api.UTILS_MODULE, "DistributedDataParallelKwargs"))
    for worker, joined, bound in workers:
        _tell_accelerate_the_rank(planner, worker, joined, bound)
    single = [c for c in dist.data_parallel if tree.resolves_to(c.func, *torch_api.SINGLE_PROCESS_DATA_PARALLEL)]
    # without CUDA, Accelerate treats the script's processes as one unless told to use the CPU; a
    # DDP wrap says so too where a helper of another module sets up the group (survey 23b)
    if dist.init_process_group or len(single) < len(dist.data_parallel):
        planner.cpu_conditions.append(_NO_CUDA)
        if not _torch_is_imported(tree):  # `import torch as t` binds no `torch` for the condition
            planner.imports.append(("torch", None))
    starts = "its own workers, as before" if workers else "torchrun as before, and with accelerate launch"
    if not workers and local_rank_from_env(tree) is not None:
        starts = "python -m torch.distributed.launch as before, and with torchrun and accelerate launch"
    elif not workers and local_rank_option(tree) is not None:
        starts = "python -m torch.distributed.launch as before, and with accelerate launch (see the rank option below)"
    if single:
        planner.notes.append(
            f"removed the DataParallel wrap (line {tree.line(single[0])}): one process now drives one GPU; start it "
            "with accelerate launch to use several (one process each, DDP); checkpoints the original saved while "
            "wrapped have `module.`-prefixed keys, the converted script saves and loads clean ones"
        )
        if planner.loaders:
            _split_batches_as_data_parallel_did(planner)
    if len(single) < len(dist.data_parallel):
        planner.notes.append(
            f"removed {len(dist.data_parallel) - len(single)} DDP wrap(s): accelerator.prepare() wraps the model; the script's own "
            f"rank set-up is kept, so it starts with {starts}"
        )
        planner.notes += drawn_after_the_wrap(planner, [c for c in dist.data_parallel if c not in single])
    if guarded:
        planner.notes.append(
            "init_process_group() runs only when the Accelerator has not set up the process group already"
        )
    if _NO_CUDA in planner.cpu_conditions:
        planner.notes.append(_NO_CUDA_NOTE)
    if unwraps:
        planner.notes.append("model.module -> accelerator.unwrap_model(model, keep_torch_compile=False)")


def join_processes_without_cuda(planner: PlainPlanner) -> None:
    """A device the script chose among MPS and the CPU only (crnn_ocr, survey 23d): its CPU
    branch is a ``cpu=`` condition, and several processes without CUDA must still be joined on the
    CPU (gloo has no MPS); :func:`join_processes_only` then narrows "no CUDA" to several processes,
    so one process keeps MPS."""
    if _NO_CUDA not in planner.cpu_conditions:
        planner.cpu_conditions.append(_NO_CUDA)
        planner.notes.append(_NO_CUDA_NOTE)
        if not _torch_is_imported(planner.tree):  # nanovit (survey25a): `import torch as t` binds no `torch`
            planner.imports.append(("torch", None))


def join_processes_only(planner: PlainPlanner) -> None:
    """Once every ``cpu=`` condition is known: where the script makes its own choice of the CPU
    (cifar_basics, survey 22b: CUDA, else MPS, else the CPU), ``not torch.cuda.is_available()``
    OR-ed with it sent one process on an Apple machine to the CPU where the script picked MPS.
    Only several processes need ``cpu=True`` to be joined (knowledge/accelerate_api.py); one
    process keeps the script's choice, which its own condition gives."""
    conditions = planner.cpu_conditions
    if _NO_CUDA not in conditions or all(c in (_NO_CUDA, "True") for c in conditions):
        return
    several = accelerate_api.SEVERAL_PROCESSES_WITHOUT_CUDA
    conditions[conditions.index(_NO_CUDA)] = several
    planner.imports.append(("os", None))
    planner.notes[planner.notes.index(_NO_CUDA_NOTE)] = (
        f"cpu={several} or ...: on a machine without CUDA, Accelerate joins the script's processes only when told "
        "to use the CPU; one process keeps the script's own choice (MPS on an Apple machine, as in the original)"
    )


def _name_a_loss_outside_forward(planner: PlainPlanner, attr: cst.Attribute, owner: str) -> None:
    """``model.module.encode(x)`` (or ``model.module(x)``) feeding the loss: the original's own
    DDP wrap never sees that method run (only ``forward`` arms its gradient sync), so each process
    trains on its own gradients there; the conversion, reading the same method from the unwrapped
    model, keeps that, and says so."""
    tree = planner.tree
    method = tree.parent(attr)
    if isinstance(method, cst.Call) and method.func is attr:  # model.module(x): the inner forward
        call, shown, advice = method, f"{owner}.module(...)", f"call {owner}(...) instead"
    else:
        outer = tree.parent(method) if isinstance(method, cst.Attribute) else None
        if not isinstance(method, cst.Attribute) or not isinstance(outer, cst.Call) or outer.func is not method:
            return
        call, shown, advice = outer, f"{owner}.module.{method.attr.value}(...)", "call it inside the model's forward()"
    function = tree.function_of(call)
    if feeds_the_loss(planner, function, call):
        planner.notes.append(
            f"{shown} at line {tree.line(call)} feeds the loss outside DDP's forward, as in the original: whatever "
            "gradients it gives the model's parameters are not averaged across processes (each keeps its own); "
            f"{advice} to have them averaged"
        )


def _unwrap_plain_aliases(planner: PlainPlanner, attr: cst.Attribute, owner: str) -> None:
    """torchvision's ``model_without_ddp = model`` beside ``if args.distributed: ...
    model_without_ddp = model.module``: the name is the unwrapped model on every path, so its
    plain binding becomes ``accelerator.unwrap_model(model, ...)`` too (on one process the
    prepared model is the compiled one, whose state dict has ``_orig_mod.`` keys)."""
    tree = planner.tree
    assign = tree.parent(attr)
    target = single_target(assign) if isinstance(assign, cst.Assign) and assign.value is attr else None
    if target is None:
        return
    function = tree.function_of(attr)
    for other in find_all(function, cst.Assign, enter_functions=False):
        bound = single_target(other)
        if other is assign or bound is None or bound[0] != target[0] or key_of(bound[1]) != owner:
            continue
        acc = planner.accelerator_in(function)
        planner.replace(other.value, f"{acc}.unwrap_model({owner}, keep_torch_compile=False)")
        planner.uses.append(other)


def _aliases(function: Function, models: set[str]) -> set[str]:
    """Local names for a model: ``model = self.model`` (minGPT-DDP's snapshot code)."""
    found = set()
    for assign in find_all(function, cst.Assign, enter_functions=False):
        target = single_target(assign)
        if target is not None and key_of(target[1]) in models:
            found.add(target[0])
    return found


def _split_batches_as_data_parallel_did(planner: PlainPlanner) -> None:
    """DataParallel split each batch across the GPUs; under ``accelerate launch`` each process
    would draw a whole batch of its own (N times the batch, 1/N of the steps per epoch, so
    another LR schedule). ``split_batches=True`` splits every batch across the processes instead."""
    config = accelerate_api.DATALOADER_CONFIGURATION
    planner.accelerator_keywords.append(f"dataloader_config={config}({accelerate_api.SPLIT_BATCHES_FIELD}=True)")
    planner.imports.append((accelerate_api.UTILS_MODULE, config))
    planner.notes.append(
        "dataloader_config=DataLoaderConfiguration(split_batches=True): as DataParallel split each batch across "
        "the GPUs, each of N processes takes 1/N of every batch, so the batch an optimizer step sees and the "
        "steps per epoch stay as before (the batch size must divide by N)"
    )


def _one_set_of_options(planner: PlainPlanner, wraps: list[tuple[cst.Call, list[str]]]) -> list[str]:
    """The DDP options of every wrap, each once: Accelerate wraps every prepared model with the one
    ``DistributedDataParallelKwargs`` it is given. Two wraps that set an option to different values
    (survey21c ntxent_ddp: ``find_unused_parameters=True`` for the encoder, ``False`` for the head)
    are refused, naming both; written twice, it would not compile ("keyword argument repeated")."""
    tree = planner.tree
    chosen: dict[str, tuple[str, cst.Call]] = {}
    for call, keywords in wraps:
        for keyword in keywords:
            name, value = keyword.split("=", 1)
            first = chosen.setdefault(name, (value, call))
            if first[0] != value and name == "find_unused_parameters" and {first[0], value} == {"True", "False"}:
                off = first[1] if first[0] == "False" else call
                chosen[name] = ("True", call)
                planner.notes.append(
                    f"{code(off.func)}(...) at line {tree.line(off)} set find_unused_parameters=False, another wrap "
                    "True: every prepared model gets True (Accelerate wraps them all with one set of DDP options); a "
                    "model that ran with False uses all its parameters in each forward, so DDP's search finds none "
                    "unused: the same gradients, a little slower"
                )
                continue
            if first[0] != value:
                raise Refusal(
                    f"{code(first[1].func)}(...) at line {tree.line(first[1])} sets {name}={first[0]}, and "
                    f"{code(call.func)}(...) at line {tree.line(call)} sets {name}={value}: Accelerate wraps every "
                    "prepared model with one set of DDP options (DistributedDataParallelKwargs); port it by hand"
                )
    return [f"{name}={value}" for name, (value, _) in chosen.items()]


def _remove_wrap(planner: PlainPlanner, call: cst.Call, models: set[str]) -> list[str]:
    """``model = DDP(model, ...)`` goes; ``model = DDP(Net(), ...)`` keeps ``Net()``; return the
    keywords Accelerate must pass on."""
    tree = planner.tree
    wrap = _conditional_wrap(tree, call)
    assign = _assignment_through_moves(tree, wrap)
    target = _assigned(assign)
    if isinstance(assign, cst.Assign) and _wraps_a_submodule_in_place(assign, call, models):
        planner.remove_small(assign)  # `model.features = DataParallel(model.features)`: prepare wraps all
        planner.forget_import(call.func)
        return []
    handed = planner.handed_in
    wrapped = target[0] if target is not None and target[0] not in models else None
    over = handing_over(tree, handed, wrapped) if handed is not None and wrapped is not None else None
    if over is not None and handed is not None:
        raise Refusal(
            f"{code(call.func)}(...) at line {tree.line(call)} wraps {wrapped}, then handed to "
            f"{handed.cls.name.value}(...) at line {tree.line(over)}, which trains it: the conversion prepares the "
            f"model where {handed.cls.name.value}.__init__ keeps it and does not take apart a wrap made before the "
            "hand-over; move the wrap into the trainer (or drop it), or port it by hand"
        )
    if planner.trainer_models is not None:  # `net = DDP(Net()); Trainer(net, args).train()`
        refuse_wrap_handed_in(planner, planner.trainer_models, call, wrap, wrapped)
    if (
        isinstance(assign, cst.Assign)
        and target is not None
        and target[0] not in models
        and call.args
        and key_of(call.args[0].value) == target[0]
    ):
        if replace_unprepared_wrap(planner, call, assign, target[0], _torch_is_imported(tree)):
            planner.forget_import(call.func)
            return []
        raise Refusal(
            f"{code(call.func)}(...) at line {tree.line(call)} wraps {target[0]} in place, but {target[0]} is not a "
            f"model the conversion prepares (it sees the optimizer train {', '.join(sorted(models))}); Accelerate's "
            "prepare() wraps only what it prepares, so port it by hand"
        )
    wrapped_arg = key_of(call.args[0].value) if call.args else None
    again = [
        c
        for c in planner.distribution.data_parallel
        if c is not call and c.args and key_of(c.args[0].value) == wrapped_arg
    ]
    if wrapped_arg is not None and again and (target is None or target[0] not in models):
        first = min([call, *again], key=tree.line)
        other = call if first is not call else min(again, key=tree.line)
        raise Refusal(  # eeg_lpft: the LP phase's wrap, then the FT phase unfreezes, re-wraps and builds a new optimizer
            f"{code(other.func)}(...) at line {tree.line(other)} wraps {wrapped_arg} again (first at line "
            f"{tree.line(first)}): a model wrapped twice (a phase that changes its trainable parameters and re-wraps "
            "it) cannot be mapped onto one prepare(); port it by hand"
        )
    if (
        not isinstance(assign, (cst.Assign, cst.AnnAssign))
        or target is None
        or target[0] not in models
        or not call.args
    ):
        raise Refusal(
            f"{code(call.func)}(...) at line {tree.line(call)} does not wrap the trained model in place "
            f"(model = DDP(model, ...)){_what_it_wraps(wrapped_arg, target, models)}; Accelerate's prepare() wraps "
            "the prepared model itself, so port it by hand"
        )
    kept: list[str] = []
    for position, arg in enumerate(call.args[1:], start=1):
        if arg.star or (arg.keyword is None and position > len(_DEVICE_KEYWORDS)):
            raise Refusal(
                f"{code(call.func)}(...) at line {tree.line(call)} passes options other than the devices by "
                "position; name them, or port it by hand"
            )
        name = arg.keyword.value if arg.keyword is not None else _DEVICE_KEYWORDS[position - 1]
        if name in _DEVICE_KEYWORDS:
            continue
        if name not in accelerate_api.DDP_KWARGS_FIELDS:
            raise Refusal(
                f"{code(call.func)}(..., {name}=...) at line {tree.line(call)} has no DistributedDataParallelKwargs "
                "equivalent; port it by hand"
            )
        kept.append(f"{name}={code(arg.value)}")
    if key_of(call.args[0].value) == target[0] and assign.value is wrap:
        planner.remove_small(assign)
    elif isinstance(wrap, cst.IfExp):  # `ddp_model = DDP(model) if ddp else model` -> `ddp_model = model`
        in_body = wrap.body is call
        planner.edits.on(wrap, lambda updated: _wrapped(updated.body if in_body else updated.orelse))
    else:
        planner.edits.on(call, lambda updated: updated.args[0].value)
    planner.forget_import(call.func)
    return kept


def _spawned_worker(planner: PlainPlanner, call: cst.Call) -> tuple[cst.FunctionDef, tuple[int, cst.Call], int] | None:
    """The function ``mp.spawn(worker, ...)`` starts (``fn=worker``, ``functools.partial(worker, ...)``:
    the lint's :func:`~regcomp_lint.analysis.distributed_setup.spawned_worker`), with the number of
    leading parameters a ``partial`` binds before the process index: it must join a process group
    (itself or through a function it calls) and build the Accelerator (itself, or in what it calls
    later, such as a ``Trainer(...)``). None for a spawn in a helper of the file that nothing calls."""
    tree = planner.tree
    view = lint_view(tree)
    setup = view.distributed_setup
    spawned = setup.worker_of(view.expression_at(call)) if setup is not None else None
    target = spawned.name if spawned is not None else None
    worker = next((f for f in find_all(tree.module, cst.FunctionDef) if f.name.value == target), None)
    if worker is None and target is not None:
        forwarded = _forwarded_worker(tree, call, target)
        if forwarded is _NEVER_CALLED:
            return None
        worker = forwarded if isinstance(forwarded, cst.FunctionDef) else None
    if worker is None or tree.class_of(worker) is not None:
        raise Refusal(
            f"{code(call.func)}(...) at line {tree.line(call)} does not start a function of this file; port it by hand"
        )
    if worker is not planner.scope and not _reaches_scope(planner, worker):
        raise Refusal(
            f"{code(call.func)}(...) at line {tree.line(call)} starts {worker.name.value}(), but the model and "
            f"optimizer are built elsewhere; build them in the worker, or port it by hand"
        )
    joined = _joining_statement(planner, worker)
    if joined is None:
        raise Refusal(
            f"{worker.name.value}(), started by {code(call.func)}(...) at line {tree.line(call)}, never calls "
            "init_process_group(); Accelerate cannot tell its processes apart, so port it by hand"
        )
    return worker, joined, spawned.bound if spawned is not None else 0


#: :func:`_forwarded_worker`'s answer for a spawning helper that nothing in the file calls.
_NEVER_CALLED = object()


def _forwarded_worker(tree: Tree, call: cst.Call, parameter: str) -> cst.FunctionDef | object | None:
    """The worker a spawning helper is handed: the DDP tutorial's ``def run_demo(demo_fn,
    world_size): mp.spawn(demo_fn, ...)`` called as ``run_demo(demo_basic, world_size)`` (survey
    24d). The one function of the file every call of the helper passes for ``parameter``;
    :data:`_NEVER_CALLED` when nothing calls the helper (its spawn never runs); else None."""
    helper = tree.function_of(call)
    if not isinstance(helper, cst.FunctionDef) or tree.class_of(helper) is not None:
        return None
    params = parameter_names(helper, keyword_only=False)
    if parameter not in params:
        return None
    position = params.index(parameter)
    references = tree.references_to(helper)
    if not references:
        return _NEVER_CALLED
    passed: set[str] = set()
    for ref in references:
        use = tree.parent(ref)
        if not isinstance(use, cst.Call) or use.func is not ref:
            return None
        positional = [a for a in use.args if a.keyword is None and not a.star]
        named = [a for a in use.args if a.keyword is not None and a.keyword.value == parameter]
        arg = named[0] if named else (positional[position] if position < len(positional) else None)
        if arg is None or not isinstance(arg.value, cst.Name):
            return None
        passed.add(arg.value.value)
    if len(passed) != 1:
        return None
    name = passed.pop()
    return next(
        (f for f in tree.module.body if isinstance(f, cst.FunctionDef) and f.name.value == name),
        None,
    )


def _reaches_scope(planner: PlainPlanner, worker: cst.FunctionDef) -> bool:
    """Does the worker run the code that builds the Accelerator (a call, or ``Trainer(...)``)?"""
    scope = planner.scope
    if isinstance(scope, cst.FunctionDef) and worker in planner.graph.closure_of_callers({scope}):
        return True
    owner = planner.tree.class_of(scope)
    return owner is not None and any(
        isinstance(c.func, cst.Name) and c.func.value == owner.name.value for c in find_all(worker, cst.Call)
    )


def _joining_statement(planner: PlainPlanner, worker: cst.FunctionDef) -> tuple[int, cst.Call] | None:
    """The worker's own statement that joins the process group (``init_process_group(...)`` or a
    call of the file's function that does, like ``ddp_setup(rank, world_size)``), with that init."""
    tree = planner.tree
    body = worker.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    for init in planner.distribution.init_process_group:
        holder = tree.function_of(init)
        if holder is worker:
            index = tree.statement_in(body, init)
        else:
            calls = [c for callee, c in planner.graph.calls_from(worker) if callee is holder]
            index = tree.statement_in(body, calls[0]) if calls else None
        if index is not None:
            return index, init
    return None


def _tell_accelerate_the_rank(
    planner: PlainPlanner, worker: cst.FunctionDef, joined: tuple[int, cst.Call], bound: int
) -> None:
    """Accelerate reads the process's place from ``RANK``/``LOCAL_RANK``/``WORLD_SIZE``, which
    torchrun sets and ``mp.spawn`` does not: the worker sets them from its group once it joined
    (its first parameter, or the first after a ``partial``'s, is the local rank mp.spawn passes). ``LOCAL_WORLD_SIZE`` too, unless
    the environment has it: on the CPU, Accelerate takes a local size unlike the world size for
    several machines and asks for ``MASTER_ADDR``, which a ``tcp://`` init_method carried instead
    (hifi-gan's style, survey 14)."""
    index, init = joined
    func = init.func
    prefix = f"{code(func.value)}." if isinstance(func, cst.Attribute) else ""
    if not prefix:
        planner.imports += [("torch.distributed", "is_initialized"), ("torch.distributed", "get_rank")]
        planner.imports.append(("torch.distributed", "get_world_size"))
    params = parameter_names(worker, keyword_only=False)
    if len(params) <= bound:
        raise Refusal(f"{worker.name.value}() takes no process index; port it by hand")
    local_rank = params[bound]
    nl, unit = planner.module.default_newline, planner.module.default_indent
    source = (
        f"if {prefix}is_initialized():  # started by mp.spawn: Accelerate reads the process's place from here{nl}"
        f"{unit}os.environ.update(RANK=str({prefix}get_rank()), LOCAL_RANK=str({local_rank}), "
        f"WORLD_SIZE=str({prefix}get_world_size())){nl}"
        f'{unit}os.environ.setdefault("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"])  # one machine, as mp.spawn starts them'
    )
    if worker is planner.scope:
        planner.before_accelerator.append(source)
        planner.accelerator_after.append(init if planner.tree.function_of(init) is worker else worker.body.body[index])
    else:
        assert isinstance(worker.body, cst.IndentedBlock)
        planner.edits.add_statements(worker.body, index + 1, [statement(source, planner.module)], after=True)
    planner.imports.append(("os", None))
    planner.notes.append(
        f"{worker.name.value}() is started by mp.spawn: once it joined its process group, RANK/LOCAL_RANK/"
        "WORLD_SIZE tell the Accelerator which process it is; the script still starts its own workers"
    )


def wrap_aliases(
    tree: Tree, scope: Function, calls: list[cst.Call], models: list[str], training: set[Function]
) -> tuple[dict[str, str], set[str]]:
    """The models the optimizer trains that the script wraps under a second name, each with that
    name: ``train_model = DDP(model) if ddp else model`` with ``opt = AdamW(model.parameters())``
    (edm_height, survey25a), where ``model`` stays the plain module the EMA reads and the
    checkpoint saves. The wrap's parameters are the model's own, so preparing ``train_model``
    in its place trains exactly the same; ``model`` keeps naming the plain module. Only one wrap
    of the model, its name bound once, in the optimizer's function, and the model not rebound
    after it (a second wrap, eeg_lpft's re-wrap after unfreezing, is no alias). The training must
    run through the wrap: the wrap's name is called or handed on in that function, and the plain
    model is neither called there nor handed to a function of the file that trains (a wrap made
    and left unused is no alias either: the plugin would compile a model nothing runs).

    The wrap may take a compiled alias of the model that nothing else reads (the parameter-golf
    ``compiled_model = torch.compile(base_model, ...)`` then ``model = DDP(compiled_model) if
    distributed else compiled_model``): the plugin compiles the prepared wrap instead. Second
    value: those compiled aliases' names."""
    found: dict[str, str] = {}
    fed: set[str] = set()
    for call in calls:
        model = key_of(call.args[0].value) if call.args else None
        if model is None or tree.function_of(call) is not scope:
            continue
        assign = _assignment_through_moves(tree, _conditional_wrap(tree, call))
        target = _assigned(assign)
        if assign is None or target is None or "." in target[0] or target[0] in models:
            continue
        alias = target[0]
        compiled = _compiled_input(tree, scope, model, models, assign) if model not in models else None
        plain = compiled if compiled is not None else model
        if plain not in models:
            continue
        wraps = [c for c in calls if c.args and key_of(c.args[0].value) in (model, plain)]
        after = [b for b in bindings(scope, plain) if tree.line(b) > tree.line(call)]
        if (
            len(wraps) == 1
            and bindings(scope, alias) == [assign]
            and not after
            and _trains_through(tree, scope, alias, plain, training)
        ):
            found[plain] = alias
            if compiled is not None:
                fed.add(model)
    return found, fed


def _what_it_wraps(wrapped: str | None, target: tuple[str, cst.BaseExpression] | None, models: set[str]) -> str:
    """`` (it wraps model into ddp_model; the optimizer trains raw_model)``: jit_lthc (survey25a) wraps
    a conditionally compiled alias of the optimizer's model."""
    if wrapped is None or not models:
        return ""
    into = f" into {target[0]}" if target is not None and target[0] != wrapped else ""
    return f" (it wraps {wrapped}{into}; the optimizer trains {', '.join(sorted(models))})"


def _assigned(stmt: cst.CSTNode | None) -> tuple[str, cst.BaseExpression] | None:
    """``(key, value)`` of ``key = value`` or of the annotated ``key: T = value`` (golf_gpt2's
    ``model: nn.Module = (DDP(compiled_model, ...) if distributed else compiled_model)``)."""
    if isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
        key = key_of(stmt.target)
        return (key, stmt.value) if key is not None else None
    return single_target(stmt) if stmt is not None else None


def _trains_through(tree: Tree, scope: Function, alias: str, plain: str, training: set[Function]) -> bool:
    """``alias`` is called or handed to a call in ``scope``; ``plain`` is not called there, nor handed
    to a function of the file that trains."""
    uses = [c for c in find_all(scope, cst.Call) if key_of(c.func) == alias or _hands(c, alias)]
    if not uses:
        return False
    for call in find_all(scope, cst.Call):
        if key_of(call.func) == plain:
            return False
        if _hands(call, plain):
            defined = tree.function_named(call)
            if defined is not None and defined in training:
                return False
    return True


def _hands(call: cst.Call, name: str) -> bool:
    return any(key_of(arg.value) == name for arg in call.args)


def _compiled_input(tree: Tree, scope: Function, name: str, models: list[str], wrap: cst.CSTNode) -> str | None:
    """The model ``name`` is a compiled alias of (``name = torch.compile(model, ...)``, bound once)
    when only the statement ``wrap`` reads it; else None."""
    bound = bindings(scope, name)
    if len(bound) != 1 or not isinstance(bound[0], cst.Assign):
        return None
    value = bound[0].value
    if not (isinstance(value, cst.Call) and tree.resolves_to(value.func, *torch_api.TORCH_COMPILE) and value.args):
        return None
    model = key_of(value.args[0].value)
    if model not in models or value.args[0].keyword is not None:
        return None
    reads = [
        n
        for n in find_all(scope, cst.Name)
        if n.value == name and not tree.contains(bound[0], n) and not tree.contains(wrap, n)
    ]
    return model if not reads else None


def _conditional_wrap(tree: Tree, call: cst.Call) -> cst.BaseExpression:
    """``DDP(model) if ddp else model`` (the wrap on one branch, the same model unwrapped on the
    other: the DDP tutorial's ``ddp_model``) as a whole; else the wrap call itself."""
    parent = tree.parent(call)
    if isinstance(parent, cst.IfExp) and call.args:
        other = parent.orelse if parent.body is call else parent.body
        if key_of(other) is not None and key_of(other) == key_of(call.args[0].value):
            return parent
    return call


def _wrapped(wrap: cst.BaseExpression) -> cst.BaseExpression:
    assert isinstance(wrap, cst.Call)
    return wrap.args[0].value


def _assignment_through_moves(tree: Tree, call: cst.BaseExpression) -> cst.CSTNode | None:
    """The statement a wrap is assigned in, through ``.cuda()``/``.to(...)`` chained on it
    (``model = DataParallel(model).cuda()``)."""
    node: cst.CSTNode = call
    parent = tree.parent(node)
    while (
        isinstance(parent, cst.Attribute)
        and parent.value is node
        and parent.attr.value in ("cuda", "to")
        and isinstance(tree.parent(parent), cst.Call)
    ):
        node = tree.parent(parent)  # type: ignore[assignment]
        parent = tree.parent(node)
    return parent


def _wraps_a_submodule_in_place(assign: cst.Assign, call: cst.Call, models: set[str]) -> bool:
    """``model.features = DataParallel(model.features)`` (the ImageNet example's AlexNet/VGG)."""
    if len(assign.targets) != 1 or assign.value is not call or len(call.args) != 1:
        return False
    target = dotted(assign.targets[0].target)
    return (
        target is not None and "." in target and target.split(".")[0] in models and dotted(call.args[0].value) == target
    )


def _guard_initialisation(planner: PlainPlanner, call: cst.Call) -> None:
    """``init_process_group(...)`` -> ``if not is_initialized(): init_process_group(...)``."""
    tree = planner.tree
    line = tree.call_line(call)
    if line is None:
        raise Refusal(
            f"{code(call.func)}(...) at line {tree.line(call)} is not a statement of its own; the Accelerator may "
            "set up the process group first, so guard it with is_initialized() by hand"
        )
    func = call.func
    if isinstance(func, cst.Attribute):
        check = f"{code(func.value)}.is_initialized()"
    else:
        check = "is_initialized()"
        planner.imports.append(("torch.distributed", "is_initialized"))
    test = expression(f"not {check}", planner.module)
    planner.edits.on(line, guarded(test))


def _rewrite_no_sync(planner: PlainPlanner, attr: cst.Attribute, owner: str) -> None:
    """``model.no_sync()`` -> ``accelerator.no_sync(model)`` (a no-op on one process, as before)."""
    tree = planner.tree
    call = tree.parent(attr)
    if not (isinstance(call, cst.Call) and call.func is attr and not call.args):
        raise Refusal(f"{owner}.no_sync at line {tree.line(attr)} is not called as {owner}.no_sync(); port it by hand")
    acc = planner.accelerator_in(tree.function_of(call))
    value = expression(f"{acc}.no_sync({owner})", planner.module)
    planner.edits.on(call, lambda updated: value.with_changes(lpar=updated.lpar, rpar=updated.rpar))
    planner.uses.append(call)


def _torch_is_imported(tree: Tree) -> bool:
    for stmt in tree.module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import) and any(
                    code(alias.name).split(".")[0] == "torch" and alias.asname is None for alias in small.names
                ):
                    return True
    return False
