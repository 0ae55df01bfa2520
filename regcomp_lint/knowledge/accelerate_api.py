"""Qualified names and fields of Accelerate, as scripts spell them (read from accelerate 1.15).

``Accelerator``, ``TorchDynamoPlugin`` (a dataclass: its fields can be passed positionally, in
``PLUGIN_FIELDS`` order) and ``compile_regions``, for the RC1xx/RC4xx/RC5xx rules and the
conversion. ``tests/knowledge/test_accelerate_api.py`` checks them against the installed package.
"""

from __future__ import annotations

ACCELERATOR = ("accelerate.Accelerator", "accelerate.accelerator.Accelerator")
#: ``accelerate.TorchDynamoPlugin`` is not exported by accelerate 1.15; scripts write it anyway
#: (their import fails), and the rules treat such a name as the plugin it means.
DYNAMO_PLUGIN = (
    "accelerate.utils.TorchDynamoPlugin",
    "accelerate.utils.dataclasses.TorchDynamoPlugin",
    "accelerate.TorchDynamoPlugin",
)
#: The module new ``TorchDynamoPlugin`` / ``compile_regions`` imports come from.
UTILS_MODULE = "accelerate.utils"
COMPILE_REGIONS = ("accelerate.utils.compile_regions", "accelerate.utils.other.compile_regions")
DYNAMO_BACKEND_ENUM = ("accelerate.utils.DynamoBackend", "accelerate.utils.dataclasses.DynamoBackend")
#: ``TorchDynamoPlugin``'s dataclass fields, in order.
PLUGIN_FIELDS = ("backend", "mode", "fullgraph", "dynamic", "options", "disable", "use_regional_compilation")
REGIONAL_FIELD = "use_regional_compilation"
#: The fields ``TorchDynamoPlugin`` passes on to ``torch.compile`` as keywords of the same name.
PLUGIN_COMPILE_KEYWORDS = tuple(f for f in PLUGIN_FIELDS if f != REGIONAL_FIELD)
#: ``Accelerator`` methods that wrap objects for the run (``accelerator.prepare(model, opt)``).
PREPARE_METHODS = frozenset(
    {"prepare", "prepare_model", "prepare_optimizer", "prepare_data_loader", "prepare_scheduler"}
)
#: The ones that take (and give back) a model.
MODEL_PREPARE_METHODS = ("prepare", "prepare_model")
#: ``Accelerator`` methods a script calls only on an accelerator: a file that calls them on an
#: object it does not build trains through an Accelerator made elsewhere.
ACCELERATOR_ONLY_METHODS = PREPARE_METHODS | frozenset(
    {"accumulate", "gather_for_metrics", "unwrap_model", "save_state", "load_state"}
)
#: ``Accelerator.save(obj, f, safe_serialization=False)``'s parameters: ``torch.save``'s pickle
#: options (``pickle_module``, ``pickle_protocol``, ``_use_new_zipfile_serialization``) are none of them.
SAVE_PARAMETERS = ("obj", "f", "safe_serialization")
#: ``DistributedDataParallelKwargs``' fields: the DDP options Accelerate passes on when it wraps.
DDP_KWARGS_FIELDS = (
    "dim",
    "broadcast_buffers",
    "bucket_cap_mb",
    "find_unused_parameters",
    "check_reduction",
    "gradient_as_bucket_view",
    "static_graph",
)
#: DeepSpeed placeholders the script hands to ``prepare`` in place of an optimizer / scheduler.
#: ``Accelerator(dataloader_config=DataLoaderConfiguration(split_batches=True))``: every batch the
#: loader yields is split across the processes (accelerate 1.15 ``data_loader.py``), as
#: ``nn.DataParallel`` split it across GPUs: the batch the optimizer sees and the steps per epoch
#: stay those of one process; the batch size must divide by the number of processes.
DATALOADER_CONFIGURATION = "DataLoaderConfiguration"
SPLIT_BATCHES_FIELD = "split_batches"
DUMMY_OPTIMIZERS = ("accelerate.utils.DummyOptim", "accelerate.utils.deepspeed.DummyOptim")
DUMMY_SCHEDULERS = ("accelerate.utils.DummyScheduler", "accelerate.utils.deepspeed.DummyScheduler")

#: ``Accelerator(mixed_precision=...)`` (accelerate 1.15): the model's forward runs under
#: ``torch.autocast(device_type, dtype)``; fp16 on CUDA also scales the loss (``GradScaler``).
MIXED_PRECISION_DTYPES = {"no": None, "bf16": "bfloat16", "fp16": "float16"}

#: The one method of a model that what ``prepare()`` wraps it in goes through (accelerate 1.15,
#: torch 2.13, measured on CPU): DDP arms its gradient sync in ``forward`` (a loss from another
#: method of the wrapped module is not averaged: on 2 gloo processes the ranks part), the plugin's
#: ``torch.compile`` and the mixed-precision autocast wrap ``forward`` (a method called inside it
#: runs under both). DDP broadcasts process 0's parameters in place when it wraps, so a module
#: that holds the model wraps the model's own parameters. ``compile_regions`` copies each module on
#: the way to the repeated blocks (``__dict__`` copied, children replaced; blocks and leaves are
#: compiled in place): such a copy's ``training`` flag no longer follows the original's
#: ``train()``/``eval()``.
WRAPPED_ENTRY = "forward"

#: What ``compile_regions`` (and so ``use_regional_compilation=True``) compiles besides the
#: repeated blocks: every other child on the way down that holds no repeated blocks, compiled
#: whole (accelerate 1.15, measured on CPU: a model of ``emb``, 3 blocks and ``head`` gets ``emb``,
#: ``blocks.0``-``blocks.2`` and ``head`` compiled; a hand ``for block in model.blocks:
#: block.compile()`` compiles the 3 blocks only). So a hand loop over the blocks is not what the
#: plugin's regional compilation does.
REGIONAL_ALSO_COMPILES = "the model's other (non-repeated) children"

#: The ``keep_torch_compile`` value that unwraps a prepared model to the plain model in every
#: launch (accelerate 1.15, torch 2.13, measured on 2 gloo processes): with regional compilation
#: ``prepare()`` copies the DDP wrapper as it compiles the blocks, and
#: ``accelerator.unwrap_model(model)`` hands back that DDP copy (``'DistributedDataParallel'
#: object has no attribute 'config'``), while ``unwrap_model(model.module,
#: keep_torch_compile=False)`` keeps the compiled regions (``bert.embeddings._orig_mod.`` keys).
#: With a full compile, ``unwrap_model(model)`` sets the prepared ``OptimizedModule``'s
#: ``_orig_mod`` to the bare model: from then on the prepared model's attributes (``no_sync``,
#: ``module``, ``state_dict`` keys) no longer reach the DDP layer (``forward`` stays bound to it).
#: ``unwrap_model(model, keep_torch_compile=False)`` gives the plain model on 1 and 2 processes,
#: full or regional compile. A full compile's wrapper only compiles ``forward`` (an attribute read
#: through it reaches the plain model's anyway); under regional compilation a submodule called
#: through the plain model runs uncompiled, the price of one spelling that works everywhere.
REGIONAL_UNWRAP = "keep_torch_compile=False"

#: What a prepared optimizer (``accelerate.optimizer.AcceleratedOptimizer``, accelerate 1.15)
#: answers itself: ``torch.optim.Optimizer``'s methods and the attributes it sets. Any other name
#: (SAM's ``first_step``, Sophia's ``update_hessian``, an ``lr`` attribute) raises AttributeError on
#: the wrapper; the optimizer it wraps is its ``optimizer`` attribute.
ACCELERATED_OPTIMIZER_ATTRIBUTES = frozenset(
    {
        "add_param_group",
        "defaults",
        "eval",
        "load_state_dict",
        "param_groups",
        "profile_hook_step",
        "register_load_state_dict_post_hook",
        "register_load_state_dict_pre_hook",
        "register_state_dict_post_hook",
        "register_state_dict_pre_hook",
        "register_step_post_hook",
        "register_step_pre_hook",
        "state",
        "state_dict",
        "step",
        "step_was_skipped",
        "train",
        "zero_grad",
        # set in __init__
        "accelerator_state",
        "device_placement",
        "gradient_state",
        "optimizer",
        "scaler",
    }
)
WRAPPED_OPTIMIZER_ATTRIBUTE = "optimizer"
#: ``AcceleratedOptimizer.step(closure)`` calls the wrapped optimizer's step and returns None
#: (accelerate 1.15), where ``torch.optim.Optimizer.step(closure)`` returns the closure's loss.
STEP_RETURNING_NONE = "step"
#: ``prepare(*objects, device_placement=[...])``: one bool per object; the results still match the objects
PREPARE_PLACEMENT_KEYWORD = "device_placement"
#: Where an ``Accelerator`` runs without CUDA (accelerate 1.15 ``PartialState._prepare_backend``
#: and ``default_device``): with ``cpu=False`` a process is never joined to the others (it sees
#: itself as the only one) and runs on MPS where ``torch.backends.mps`` is available, else the
#: CPU; with ``cpu=True`` it runs on the CPU and is joined over gloo when ``LOCAL_RANK`` is set or
#: ``WORLD_SIZE`` > 1. The condition for "several processes, no CUDA", as the conversion writes it:
SEVERAL_PROCESSES_WITHOUT_CUDA = 'not torch.cuda.is_available() and int(os.environ.get("WORLD_SIZE", "1")) > 1'
#: ``(module, name)`` of each Accelerate name a conversion adds an import for (all importable from
#: these modules since accelerate 1.8, the lowest pyproject allows)
ACCELERATOR_IMPORT = ("accelerate", "Accelerator")
DYNAMO_PLUGIN_IMPORT = ("accelerate.utils", "TorchDynamoPlugin")
DISTRIBUTED_TYPE_IMPORT = ("accelerate", "DistributedType")
BROADCAST_IMPORT = ("accelerate.utils", "broadcast")
BROADCAST_OBJECT_LIST_IMPORT = ("accelerate.utils", "broadcast_object_list")
GATHER_OBJECT_IMPORT = ("accelerate.utils", "gather_object")
