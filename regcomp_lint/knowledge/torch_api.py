"""Qualified names and signatures of torch, as scripts spell them (read from torch 2.13).

One home for what both the lint and the conversion recognise: a ``torch.compile`` call, a data
loader, an optimizer, a DDP/FSDP wrapper, a process spawn. Each tuple lists the public spelling
and the defining module's spelling, because ``from torch.nn.parallel.distributed import
DistributedDataParallel`` resolves to the latter. ``tests/knowledge/test_torch_api.py`` imports
every name here and checks it is the same object as its public twin.
"""

from __future__ import annotations

TORCH_COMPILE = ("torch.compile",)
#: ``torch._dynamo.optimize(backend)(model)``: the older spelling; its first argument is the backend.
DYNAMO_OPTIMIZE = ("torch._dynamo.optimize",)
#: Keyword parameters of ``torch.compile``; ``nn.Module.compile(**kwargs)`` forwards them.
TORCH_COMPILE_KWARGS = frozenset(
    {
        "fullgraph",
        "dynamic",
        "backend",
        "mode",
        "options",
        "name",
        "disable",
        "recompile_limit",
        "isolate_recompiles",
        "shapes_spec",
    }
)

MODULE = ("torch.nn.Module", "torch.nn.modules.module.Module")
#: ``torch.nn`` containers of modules (the ones regional compilation looks into).
MODULE_CONTAINERS = ("ModuleList", "Sequential", "ModuleDict")
MODULE_LIST = ("torch.nn.ModuleList", "torch.nn.modules.container.ModuleList")
#: ``nn.Module`` methods that return the module itself (``model = Net().to(device)``).
SAME_MODULE_METHODS = frozenset(
    {
        "to",
        "cuda",
        "cpu",
        "xpu",
        "half",
        "float",
        "double",
        "bfloat16",
        "type",
        "train",
        "eval",
        "requires_grad_",
        "to_empty",
        "share_memory",
        "apply",
    }
)
#: ``nn.Module`` methods that, called as a statement (their result dropped), change the module in
#: place: its dtype, device, mode, weights or ``requires_grad``.
MODULE_STATE_CHANGERS = SAME_MODULE_METHODS | {"load_state_dict"}
#: ``torch.nn`` modules that build a ModuleList of identical layers inside them.
TORCH_STACKS = frozenset({"TransformerEncoder", "TransformerDecoder", "Transformer"})
#: ``torch.nn`` layers people train directly as "the model" (a loss or an activation is not one).
MODEL_LAYERS = frozenset(
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

DATALOADER = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
#: The module of loaders, datasets and samplers: every other ``torch.*`` function makes tensors (or
#: values), never a DataLoader.
DATA_MODULE = "torch.utils.data"
#: Tensor methods that hand back a tensor (or its pieces) of the same data: ``torch.tensor(x).cuda(gpu)``
#: is still a tensor, never a loader.
TENSOR_METHODS = frozenset(
    {
        "to",
        "cuda",
        "cpu",
        "long",
        "int",
        "float",
        "double",
        "half",
        "bool",
        "detach",
        "clone",
        "contiguous",
        "view",
        "reshape",
        "flatten",
        "squeeze",
        "unsqueeze",
        "split",
        "chunk",
        "unbind",
        "tolist",
    }
)
#: Dataset base classes, and the methods a DataLoader reads items through.
DATASETS = (
    "torch.utils.data.Dataset",
    "torch.utils.data.IterableDataset",
    "torch.utils.data.dataset.Dataset",
    "torch.utils.data.dataset.IterableDataset",
)
DATASET_ITEM_METHODS = ("__getitem__", "__getitems__", "__iter__")
#: The attribute under which ``torch.compile``'s wrapper (``OptimizedModule``) keeps the module it
#: compiles: scripts unwrap it by hand with ``getattr(model, "_orig_mod", model)``.
COMPILE_WRAPPER_ATTRIBUTE = "_orig_mod"
#: The streaming dataset base: a DataLoader over one is sharded by accelerate's prepare() by
#: dispatching its batches from the main process (see codemod/iterable_batches.py).
ITERABLE_DATASETS = ("torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset")
#: Every public class of this module is an optimizer, except the ones below.
OPTIMIZER_MODULE = "torch.optim"
NOT_OPTIMIZER_MODULES = ("torch.optim.lr_scheduler", "torch.optim.swa_utils")
#: Optimizers whose ``step(closure)`` calls the closure a number of times that depends on the loss
#: it returns: ``LBFGS`` stops its inner iterations when ``abs(loss - prev_loss) < tolerance_change``
#: (and its strong-Wolfe line search compares losses), torch 2.13.
LOSS_DRIVEN_OPTIMIZERS = ("torch.optim.LBFGS", "torch.optim.lbfgs.LBFGS")
OPTIMIZER_BASE = ("torch.optim.Optimizer",)
#: ``DistributedSampler.set_epoch(epoch)``: reshuffles the sampler's per-rank shard each epoch
SAMPLER_SET_EPOCH = "set_epoch"
#: The attribute of a ``DataLoader`` holding its sampler (``train_loader.sampler.set_epoch(epoch)``).
LOADER_SAMPLER_ATTRIBUTE = "sampler"
#: ``torch.optim.Optimizer``'s own methods: any other method an optimizer is called with comes from
#: its class (SAM's ``first_step``/``second_step``, Sophia's ``update_hessian``)
OPTIMIZER_API = frozenset(
    {
        "add_param_group",
        "load_state_dict",
        "state_dict",
        "step",
        "zero_grad",
        "register_step_pre_hook",
        "register_step_post_hook",
        "register_state_dict_pre_hook",
        "register_state_dict_post_hook",
        "register_load_state_dict_pre_hook",
        "register_load_state_dict_post_hook",
    }
)
#: Every public class of these modules is an LR scheduler.
SCHEDULER_MODULES = ("torch.optim.lr_scheduler",)
#: LR schedulers outside those modules: SWA's ``SWALR`` (an ``LRScheduler`` subclass, stepped per
#: epoch once averaging starts).
OTHER_SCHEDULERS = ("torch.optim.swa_utils.SWALR",)

#: Passes over a data loader that recompute a model's BatchNorm statistics (SWA's finishing step,
#: ``update_bn(loader, swa_model)``): over a prepared loader, each process sees its shard only.
BATCHNORM_UPDATES = ("torch.optim.swa_utils.update_bn",)

#: ``nn.Module``'s public API: reachable through any wrapper (DDP, FSDP, ``torch.compile``) since
#: the wrapper is a module too. Any other attribute (a custom method such as ``generate`` or
#: ``configure_optimizers``, ``config``, a submodule) is the wrapped model's own: DDP does not
#: forward it ("'DistributedDataParallel' object has no attribute ...").
MODULE_API = frozenset(
    {
        "add_module", "apply", "bfloat16", "buffers", "children", "compile", "cpu", "cuda", "double",
        "eval", "extra_repr", "float", "forward", "get_buffer", "get_extra_state", "get_parameter",
        "get_submodule", "half", "ipu", "load_state_dict", "modules", "mtia", "named_buffers",
        "named_children", "named_modules", "named_parameters", "parameters", "register_backward_hook",
        "register_buffer", "register_forward_hook", "register_forward_pre_hook",
        "register_full_backward_hook", "register_full_backward_pre_hook",
        "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook", "register_module",
        "register_parameter", "register_state_dict_post_hook", "register_state_dict_pre_hook",
        "requires_grad_", "set_extra_state", "set_submodule", "share_memory", "state_dict", "to",
        "to_empty", "train", "training", "type", "xpu", "zero_grad",
    }
)  # fmt: skip
#: The part of ``MODULE_API`` that walks the module tree by name, which the wrappers change:
#: through torch.compile's ``OptimizedModule`` ``children()`` yields the whole model (its
#: ``_orig_mod``) and names gain ``_orig_mod.`` (``module.`` under DDP). ``parameters()`` and
#: ``buffers()`` yield the same tensors either way.
STRUCTURE_API = frozenset(
    {"children", "modules", "named_buffers", "named_children", "named_modules", "named_parameters"}
)
#: Calls that trace the model handed to them first: tensorboard's ``SummaryWriter.add_graph``
#: runs ``torch.jit.trace``, which raises "Detected that you are using FX to torch.jit.trace a
#: dynamo-optimized function" for a compiled model (torch 2.13, one process).
TRACING_METHODS = ("add_graph",)
TRACING_FUNCTIONS = ("torch.jit.trace",)
#: What ``DistributedDataParallel.__init__`` reads off the module it wraps, and only then (torch
#: 2.13): the attribute ``_ddp_params_and_buffers_to_ignore`` (parameters and buffers DDP neither
#: broadcasts nor all-reduces) and the static helper that sets it. Set after the wrap it is not
#: seen: measured on gloo, 2 processes, ``parameters_to_ignore`` stays empty and a per-rank buffer
#: becomes rank 0's. MiniMind sets it for its complex ``pos_cis`` buffer.
DDP_CONSTRUCTION_ATTRIBUTES = frozenset({"_ddp_params_and_buffers_to_ignore"})
DDP_CONSTRUCTION_CALLS = frozenset({"_set_params_and_buffers_to_ignore_for_model"})
#: DDP's switch for gradient accumulation, read in ``forward()`` (torch 2.13 ``_pre_forward`` /
#: ``_post_forward``: true arms the reducer for the backward that follows), not in ``backward()``.
DDP_GRAD_SYNC_FLAG = "require_backward_grad_sync"
#: What DDP adds on top (the conversion handles each of them itself).
DATA_PARALLEL_API = frozenset({"module", "no_sync", "require_backward_grad_sync"})
#: Every public attribute a ``DistributedDataParallel`` instance has beyond ``MODULE_API`` (torch
#: 2.13, a CPU module under gloo): read through the wrapper, these are DDP's own (``model.device``
#: works on a wrapped model, ``model.config`` does not).
DATA_PARALLEL_INSTANCE_API = frozenset(
    {
        "batched_grad_copy", "broadcast_bucket_size", "broadcast_buffers", "bucket_bytes_cap",
        "bucket_bytes_cap_default", "bucket_bytes_cap_list", "device", "device_ids", "device_type", "dim",
        "find_unused_parameters", "forward_sync_buffers", "gather", "gradient_as_bucket_view",
        "is_multi_device_module", "join", "join_device", "join_hook", "join_process_group", "logger",
        "mixed_precision", "module", "modules_buffers", "named_module_buffers", "no_sync", "output_device",
        "parameters_to_ignore", "process_group", "reducer", "register_comm_hook", "require_backward_grad_sync",
        "require_forward_param_sync", "scatter", "skip_all_reduce_unused_params", "static_graph", "to_kwargs",
        "use_side_stream_for_tensor_copies", "will_sync_module_buffers",
    }
)  # fmt: skip

#: The script wraps the model for data parallelism itself; ``accelerator.prepare`` does this instead.
DATA_PARALLEL = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
)
#: The single-process, multi-GPU wrap among them.
SINGLE_PROCESS_DATA_PARALLEL = DATA_PARALLEL[2:]
#: Collectives a script sums or gathers its metrics with across ranks: name -> the position of
#: the local value (torch 2.13 ``distributed_c10d``: ``all_reduce(tensor)``, ``reduce(tensor, dst)``,
#: ``all_gather(tensor_list, tensor)``, ``all_gather_object(object_list, obj)``,
#: ``all_gather_into_tensor(output, input)``, ``gather(tensor, gather_list, dst)``).
COLLECTIVES = {
    "all_reduce": 0,
    "reduce": 0,
    "all_gather": 1,
    "all_gather_object": 1,
    "all_gather_into_tensor": 1,
    "gather": 0,
}
DISTRIBUTED_MODULES = ("torch.distributed", "torch.distributed.distributed_c10d")
INIT_PROCESS_GROUP = ("torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group")
DESTROY_PROCESS_GROUP = (
    "torch.distributed.destroy_process_group",
    "torch.distributed.distributed_c10d.destroy_process_group",
)
GET_WORLD_SIZE = ("torch.distributed.get_world_size", "torch.distributed.distributed_c10d.get_world_size")
#: ``torch.distributed`` queries false on every process of a launch once the group is set up (as
#: Accelerate does for more than one process), true in a run of one: ``not dist.is_initialized() or
#: dist.get_rank() == 0`` holds on the main process alone.
GROUP_QUERIES = (
    "torch.distributed.is_initialized",
    "torch.distributed.is_available",
    "torch.distributed.distributed_c10d.is_initialized",
)
#: Methods of ``nn.Module`` that tensors and optimizers do not have: a name they are called on
#: holds a module (a model of another file, known by what the script does with it).
MODULE_ONLY_METHODS = ("train", "eval", "parameters", "named_parameters", "named_modules", "children", "modules")
#: Gradients as values: with ``create_graph=True`` (a WGAN-GP gradient penalty) the loss is
#: differentiated twice, which torch.compile's aot_autograd ("does not currently support double
#: backward") and DDP's reducer do not support.
AUTOGRAD_GRAD = ("torch.autograd.grad",)
#: A loss scaler of the script's own mixed precision (the device-specific ones are deprecated aliases).
GRAD_SCALERS = (
    "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
    "torch.cuda.amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler",
    "torch.cpu.amp.GradScaler",
    "torch.cpu.amp.grad_scaler.GradScaler",
)
#: ``torch.device("cuda")``, and the call that names the current CUDA device by its index.
TORCH_DEVICE = ("torch.device",)
CUDA_DEVICE_CALLS = ("torch.cuda.current_device",)
#: ``torch.save`` and ``torch.load``: a checkpoint written and read back.
TORCH_SAVE = ("torch.save", "torch.serialization.save")
TORCH_LOAD = ("torch.load", "torch.serialization.load")
#: File objects that belong to the process that made them (a buffer in memory, an anonymous
#: temporary file): a ``torch.save`` into one fills that process's copy, shared with no other.
PROCESS_LOCAL_FILES = (
    "io.BytesIO",
    "_io.BytesIO",
    "tempfile.TemporaryFile",
    "tempfile.SpooledTemporaryFile",
)
#: Names of the calls that write a state dict out, whoever owns them: ``torch.save``,
#: ``accelerator.save``/``save_model``/``save_state``, safetensors' ``save_file``,
#: transformers' ``save_pretrained``.
STATE_WRITERS = frozenset({"save", "save_file", "save_model", "save_pretrained", "save_state"})
#: Names of flags that are true in the main process only (``if master_process:``).
MAIN_PROCESS_FLAGS = frozenset(
    {"master_process", "is_main_process", "is_local_main_process", "is_master", "main_process"}
)
#: ``torch.autocast(device_type, dtype=None, enabled=True)`` (torch 2.13 ``amp/autocast_mode.py``).
AUTOCAST = ("torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast")
#: The deprecated device-specific spellings: ``(enabled=True, dtype=<the device's default>)``,
#: the device fixed by the class.
DEVICE_AUTOCASTS = {
    "cuda": ("torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"),
    "cpu": ("torch.cpu.amp.autocast", "torch.cpu.amp.autocast_mode.autocast"),
}
#: The dtype an autocast without ``dtype=`` runs in, per device (``torch.get_autocast_dtype``).
AUTOCAST_DEFAULT_DTYPES = {"cuda": "float16", "cpu": "bfloat16"}
#: ``torch.<name>`` dtypes by the name Accelerate's ``mixed_precision`` gives them.
HALF_DTYPES = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16"}
#: Random index draws a hand-written batch source samples its rows with.
RANDOM_DRAWS = (
    "torch.randint",
    "torch.randperm",
    "torch.multinomial",
    "numpy.random.randint",
    "numpy.random.choice",
    "numpy.random.permutation",
    "random.randint",
    "random.sample",
    "random.choice",
)
#: A sampler that already gives each rank its own shard of the data.
DISTRIBUTED_SAMPLER = ("torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler")
#: Keywords a sampler is told its rank's share by (``DistributedSampler``'s own): a sampler of any
#: class built with them (VITS's ``DistributedBucketSampler(ds, bs, num_replicas=n, rank=r)``)
#: gives each rank its own shard already.
SHARD_KEYWORDS = ("num_replicas", "rank")
#: ``DataLoader``'s parameters that take a sampler, by name and by position
#: (``DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)``).
LOADER_SAMPLER_KEYWORDS = ("sampler", "batch_sampler")
LOADER_SAMPLER_POSITIONS = (3, 4)
#: Keywords by which a data factory is told it runs distributed (``get_dataloaders(...,
#: distributed=True)``, ``build_loader(cfg, rank=rank, world_size=ws)``): in a script that sets up
#: its own process group, its loaders are likely sharded inside already.
DISTRIBUTED_FLAG_KEYWORDS = (
    "distributed",
    "is_distributed",
    "use_distributed",
    "ddp",
    "use_ddp",
    "dist",
    "rank",
    "local_rank",
    "global_rank",
    "world_size",
    "num_replicas",
    "num_shards",
    "shard_id",
)
#: Calls that tell a process its rank; with the ``RANK``/``LOCAL_RANK`` environment variables
#: (torchrun's), Accelerate's ``process_index`` attributes and a worker's first parameter under
#: ``mp.spawn``, what a data set split by hand per rank reads.
RANK_CALLS = ("torch.distributed.get_rank", "torch.distributed.distributed_c10d.get_rank")
#: What each variable torchrun sets for its workers holds.
TORCHRUN_VARIABLES = {"RANK": "rank", "LOCAL_RANK": "local_rank", "WORLD_SIZE": "world_size"}
RANK_ATTRIBUTES = ("process_index", "local_process_index")
#: Words of the names in a file path (any case) that make it one file per process (``f"ckpt_rank{rank}.pt"``,
#: ``f"preds_{args.gpu}.json"``): each process writes its own, so the conversion leaves it so.
PER_PROCESS_PATH_WORDS = ("rank", "process_index", "gpu")
#: Calls that make a fresh tensor holding no gradient history: a recurrent model's
#: ``init_hidden`` returning ``weight.new_zeros(...)`` or ``torch.zeros(...)`` computes no loss.
FRESH_TENSOR_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "new"})
FRESH_TENSOR_FUNCTIONS = frozenset(
    {"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like"}
)
#: Methods that keep a fresh tensor fresh (placed, cast, detached, zeroed).
FRESH_TENSOR_KEEPERS = frozenset({"to", "cuda", "cpu", "detach", "zero_", "fill_", "float", "half", "requires_grad_"})
#: Context managers and decorators under which nothing is recorded for backward: a model only
#: ever called there (a DQN's target network, a distillation teacher) is never trained.
NO_GRAD = ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad")
#: Methods and keywords that say where data lives: a rank passed there is a device, not a split.
PLACEMENT_METHODS = ("to", "cuda")
PLACEMENT_KEYWORDS = ("device", "device_ids", "map_location", "output_device")
CUDA_SET_DEVICE = ("torch.cuda.set_device",)
SPAWN = ("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes", "torch.multiprocessing.spawn.spawn")
#: Python's calls that end the process by raising SystemExit (``quit()`` on a "no" to a prompt).
PROCESS_EXITS = ("builtins.quit", "builtins.exit", "sys.exit")
#: Python's call that ends the process at once, raising nothing (no ``except``, ``finally`` or
#: ``atexit`` sees it); ``sys.exit(code)`` ends it with the same status, by raising SystemExit.
HARD_PROCESS_EXITS = ("os._exit",)
#: The keyword of the function a spawn call starts (``mp.spawn(fn=worker, ...)``); torch calls it as
#: ``fn(i, *args)``, the process index first.
SPAWN_FUNCTION_KEYWORD = "fn"
#: ``functools.partial(worker, a)`` handed to a spawn: the index comes after the arguments it binds.
PARTIAL = ("functools.partial",)
FSDP = (
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard.fully_shard",
)
#: Remote procedure calls between processes: a distribution model Accelerate does not replace.
RPC_MODULE = "torch.distributed.rpc"
ZERO_REDUNDANCY_OPTIMIZER = ("torch.distributed.optim.ZeroRedundancyOptimizer",)

#: Where a compile keeps what the next process can reuse (torch 2.13): inductor's cache folder
#: holds the FX graph cache (``fxgraph/``) and the AOT autograd cache (``aotautograd/``); Triton
#: kernels (GPU) have their own folder. The two ``..._CACHE`` switches force those caches on.
COMPILER_CACHE_DIR_ENV = "TORCHINDUCTOR_CACHE_DIR"
TRITON_CACHE_DIR_ENV = "TRITON_CACHE_DIR"
COMPILER_CACHE_SWITCHES = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}
#: Environment that would disturb a measured compile (caches off, debug dumps, extra logging).
COMPILER_DISTURBING_ENV = ("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "TORCH_COMPILE_DEBUG", "TORCH_LOGS")
#: Random generators that start from OS entropy in every process unless seeded.
UNSEEDED_RANDOM_MODULES = ("random", "numpy.random")
#: Standard-library modules of pure functions: the same arguments give the same value in every
#: process (``math.sqrt(se / n)`` of an evaluation's sums), so only what they are handed can differ.
PURE_FUNCTION_MODULES = ("math",)
#: NumPy functions of the same kind (YOLOv5's warmup ``np.interp(ni, xi, [1, nbs / batch_size])``
#: of the batch counter): computed from what they are handed alone. ``numpy.random`` is not here.
PURE_NUMPY_FUNCTIONS = tuple(
    f"numpy.{name}"
    for name in (
        "interp",
        "clip",
        "exp",
        "log",
        "sqrt",
        "cos",
        "sin",
        "floor",
        "ceil",
        "round",
        "abs",
        "mean",
        "sum",
        "min",
        "max",
        "argmin",
        "argmax",
        "isnan",
        "isfinite",
    )
)
#: Seeding calls: after one of them a script's draws repeat from run to run (with one seed for
#: every rank, between processes too; seeded from the rank, every process draws its own batches).
SEEDS = (
    "random.seed",
    "numpy.random.seed",
    "torch.manual_seed",
    "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all",
    "transformers.set_seed",
    "accelerate.utils.set_seed",
)
#: Calls that fill new tensors or values from a random generator: run before training with one
#: seed per process, they would make each process's data (not only its batches) different.
RANDOM_VALUES = (
    *RANDOM_DRAWS,
    "torch.rand",
    "torch.randn",
    "torch.rand_like",
    "torch.randn_like",
    "torch.randint_like",
    "torch.normal",
    "torch.bernoulli",
    "torch.poisson",
)
#: torch's draws from its default CPU generator, which starts from OS entropy in every process too
#: (torch 2.13, measured: ``torch.initial_seed()`` differs between two fresh processes, and two
#: unseeded ranks draw different ``torch.randperm`` orders; ``CPUGeneratorImpl`` is made with
#: ``getNonDeterministicRandom()``). A draw given ``generator=`` or ``device=`` may use another
#: generator (CUDA's start from one fixed seed, ``default_rng_seed_val``), and ``*_like`` draws
#: follow their input's device: not counted.
CPU_DEFAULT_DRAWS = tuple(name for name in RANDOM_VALUES if name.startswith("torch.") and not name.endswith("_like"))
#: Generators a script builds for itself: seeded with one value (``random.Random(0)``,
#: ``numpy.random.default_rng(args.seed)``, ``g = torch.Generator(); g.manual_seed(0)``), every
#: process draws the same values from one, whatever else it draws.
OWN_GENERATORS = (
    "random.Random",
    "numpy.random.default_rng",
    "numpy.random.RandomState",
    "numpy.random.Generator",
    "torch.Generator",
)
#: Reads of the environment: torchrun, ``accelerate launch`` and ``mp.spawn`` hand every process
#: the same one but for the variables that number it (:data:`PROCESS_NUMBER_WORDS`), so
#: ``os.environ.get("CHECK")`` is the same on every process and ``os.environ.get("RANK")`` is not.
ENVIRONMENT_READS = ("os.environ.get", "os.getenv")
#: Words of the environment variables that differ between processes (``RANK``, ``LOCAL_RANK``,
#: ``GROUP_RANK``, SLURM's ``SLURM_PROCID`` / ``SLURM_LOCALID``), any case.
PROCESS_NUMBER_WORDS = ("RANK", "PROCID", "LOCALID")
#: Attributes of a tensor set by the code that made it, not by the values of the process's data:
#: ``if not loss.requires_grad: continue`` (a loss of frozen parts only) is decided alike on
#: every process, since every process runs the same model and the same code.
STRUCTURAL_TENSOR_ATTRIBUTES = ("requires_grad", "is_leaf", "dtype", "device")
#: Tests of the file system: every process of one launch sees the same files, so a test of a
#: path that names no process, before the run writes it, is decided alike (survey21c byol_spot's
#: ``if save_path and os.path.exists(save_path): return`` ahead of training).
FILE_TESTS = ("os.path.exists", "os.path.isfile", "os.path.isdir", "os.path.lexists")
#: Functions of ``os.path`` that compute a path from what they are handed and read no file (the
#: working directory ``abspath`` reads is the launcher's, the same for every process): handed
#: values every process has, they return the same path everywhere (survey25c fair_cst's
#: ``data_path = os.path.join(DATA_DIR, cfg["data"])``, tested with ``os.path.exists``).
PATH_FUNCTIONS = (
    "os.path.join",
    "os.path.basename",
    "os.path.dirname",
    "os.path.splitext",
    "os.path.normpath",
    "os.path.abspath",
    "os.path.expanduser",
)
#: The characters of an ``open()`` mode that write the file (``"w"``, ``"a"``, ``"x"``, ``"r+"``).
WRITING_MODE_CHARACTERS = frozenset("wax+")
#: Collectives after which a tensor holds the same value on every process (torch 2.13
#: ``distributed_c10d``: ``all_reduce(tensor)``, ``broadcast(tensor, src)``, both in place).
EQUALIZING_COLLECTIVES = ("all_reduce", "broadcast")
#: The generator a seeding call or a random draw belongs to, by the qualified name's prefix;
#: the seeding helpers of transformers and Accelerate seed all three.
GENERATOR_OF_PREFIX = (("numpy.random.", "numpy"), ("random.", "random"), ("torch.", "torch"))
SEEDS_EVERY_GENERATOR = ("transformers.set_seed", "accelerate.utils.set_seed")
#: Calls that write a file of samples, plots or arrays (not a checkpoint): run by every process of
#: a launch, they write the same file at once; the main process alone writes them.
FILE_WRITERS = (
    "torchvision.utils.save_image",
    "matplotlib.pyplot.savefig",
    "numpy.save",
    "numpy.savez",
    "numpy.savez_compressed",
    "numpy.savetxt",
    "torchaudio.save",
    "soundfile.write",
    "imageio.imwrite",
    "imageio.v2.imwrite",
    "cv2.imwrite",
    "skimage.io.imsave",
    # medical volumes (survey 26c's BraTS diffusion trainer: `nib.save(nib.Nifti1Image(...), path)`)
    "nibabel.save",
    "nibabel.loadsave.save",
    "SimpleITK.WriteImage",
    # uploads to the Hugging Face Hub: each process would push the same commit (cleanRL's TD3)
    "huggingface_hub.upload_folder",
    "huggingface_hub.upload_file",
    "huggingface_hub.HfApi.upload_folder",
    "huggingface_hub.HfApi.upload_file",
    # a TorchScript export (survey 19e kochi_bin's `torch.jit.save(scripted, path)`)
    "torch.jit.save",
    "torch.jit._serialization.save",
    # ml_logger's `logger` (an ML_Logger): `save_torch(obj, *keys, path=None)` torch.saves into a
    # temporary file and hands it to its log client's `save_file`; `torch_save = save_torch`
    # (geyang/ml_logger, ml_logger/ml_logger.py; survey 21f lucid_act)
    "ml_logger.logger.save_torch",
    "ml_logger.logger.torch_save",
)
#: Functions that open a file with ``open(path, mode)``'s arguments (the mode second); a
#: ``.open(...)`` of anything else is read as ``pathlib.Path.open(mode)`` (the mode first).
FILE_OPENERS = ("gzip.open", "bz2.open", "lzma.open", "io.open", "codecs.open", "tarfile.open")
#: The letters of a literal ``open`` mode (``"w"``, ``"ab+"``, ``"wt"``, ``"w:gz"`` for tarfile);
#: a mode that writes has one of ``FILE_WRITE_MODES``.
FILE_MODE_LETTERS = frozenset("rwxabt+U:gzbz2xz")
FILE_WRITE_MODES = "wax"
#: Methods that only write a file, whatever their receiver: ``pathlib.Path.write_text`` /
#: ``write_bytes`` and pandas' ``DataFrame.to_csv`` (a Kaggle submission). Read by name: the
#: receiver's type is rarely known statically.
FILE_WRITER_METHODS = ("write_text", "write_bytes", "to_csv")
#: Calls that move or copy a file already written (``torch.save(state, tmp)`` then
#: ``os.replace(tmp, path)``, the atomic-save idiom; the ImageNet example's ``shutil.copyfile``
#: to ``model_best.pth.tar``): after a main-process-only write, every process running one would
#: move the same file (the second rename raises FileNotFoundError) or copy a file not written yet.
FILE_MOVERS = ("os.replace", "os.rename", "shutil.move", "shutil.copyfile", "shutil.copy", "shutil.copy2")
#: Calls that fetch data from the network or unpack an archive into a folder: a script that runs them
#: in every process downloads (or extracts) into the same place at once (pytorch/examples' GCN
#: fetches Cora with ``requests.get`` and ``tarfile.open(...).extractall()``).
DOWNLOADERS = (
    "requests.get",
    "urllib.request.urlretrieve",
    "urllib.request.urlopen",
    "wget.download",
    "gdown.download",
    "torch.hub.download_url_to_file",
    "torchvision.datasets.utils.download_url",
    "torchvision.datasets.utils.download_and_extract_archive",
    "torchvision.datasets.utils.download_file_from_google_drive",
    "tarfile.open",
    "zipfile.ZipFile",
    "shutil.unpack_archive",
)
#: Calls that upload to the Hub whatever defines them: ``model.push_to_hub(repo)`` (transformers,
#: diffusers), a project helper of that name (cleanRL's ``cleanrl_utils.huggingface.push_to_hub``).
HUB_UPLOAD_NAMES = ("push_to_hub",)
#: Gradient clipping, by the ``Accelerator`` method that replaces it, and the arguments that
#: method takes: ``accelerator.clip_grad_norm_`` first unscales the gradients of fp16 mixed
#: precision (a plain clip would clip the scaled ones) and clips FSDP's sharded parameters whole.
GRADIENT_CLIPPING = {
    "torch.nn.utils.clip_grad_norm_": ("clip_grad_norm_", ("parameters", "max_norm", "norm_type")),
    "torch.nn.utils.clip_grad.clip_grad_norm_": ("clip_grad_norm_", ("parameters", "max_norm", "norm_type")),
    "torch.nn.utils.clip_grad_value_": ("clip_grad_value_", ("parameters", "clip_value")),
    "torch.nn.utils.clip_grad.clip_grad_value_": ("clip_grad_value_", ("parameters", "clip_value")),
}
#: ``torch.<name>`` dtypes: ``x.to(torch.float32)`` converts, it places nothing on a device.
TORCH_DTYPES = frozenset(
    {
        "float", "float16", "float32", "float64", "half", "double", "bfloat16", "int", "int8", "int16",
        "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128", "cfloat", "cdouble",
    }
)  # fmt: skip
#: ``torch.cuda`` calls that ask about the GPU or seed it without putting anything on it.
CUDA_QUERIES = frozenset(
    {"is_available", "device_count", "manual_seed", "manual_seed_all", "empty_cache", "is_initialized"}
)
#: Keywords that put what a call makes or loads on a device (``torch.zeros(n, device=...)``,
#: ``torch.load(f, map_location=...)``, DDP's ``device_ids=``/``output_device=``).
PLACING_KEYWORDS = frozenset({"device", "map_location", "device_ids", "output_device"})
#: Words of a function's name that say it writes a file (``save_checkpoint``, ``write_json``,
#: ``atomic_save_numpy``, ``dump_config``): a call of a module the fixer cannot read is named in a
#: note when it may write the same file from every process.
WRITER_NAME_WORDS = frozenset({"save", "write", "dump", "export"})
#: Words of a class that stops training early (pytorchtools' ``EarlyStopping``, YOLO's ``EarlyStopper``):
#: its call keeps the counter every process decides on, and saves the model when the metric improves.
EARLY_STOPPER_WORDS = frozenset({"stopping", "stopper"})
#: Keywords by which a call is handed the file it writes (survey 21f pusht_state_dp's
#: ``evaluate_model(..., out_path=f"log/eval_epoch_{n}.mp4")``, a video per evaluation): a call of
#: code the fixer does not know, handed one, writes that file from every process.
OUTPUT_FILE_KEYWORDS = frozenset(
    {"out_path", "output_path", "save_path", "out_file", "output_file", "save_file", "video_path", "out_fname"}
)

#: Top-level names a ``from module import *`` of a project module brings as the torch module
#: itself (the module did ``import torch``): survey 22c's ESRGAN trainer has no ``import torch`` of
#: its own and reaches ``torch.save`` through ``from models.architecture import *``. Only
#: ``torch``: nothing else a star import exports is taken to be a library by its name alone.
STAR_EXPORTED_MODULES = ("torch",)

#: The device type of Apple's GPU (``torch.device("mps")``), which ``torch.backends.mps.is_available()`` tests.
MPS_DEVICE = "mps"

#: Element-wise tests of a loss for NaN/inf, each with the reduction that keeps its meaning over the
#: values of every process (``torch.isfinite(gathered).all()``: every process's loss is finite).
NON_FINITE_TESTS = {"torch.isfinite": "all", "torch.isnan": "any", "torch.isinf": "any"}
#: The same tests of a Python number (``math.isnan(loss.item())``), each with the torch test that
#: reads the gathered tensor in its place. ``x != x`` (true of NaN alone) is read as ``torch.isnan``.
NUMBER_NON_FINITE_TESTS = {
    "math.isfinite": "torch.isfinite",
    "math.isnan": "torch.isnan",
    "math.isinf": "torch.isinf",
    "numpy.isfinite": "torch.isfinite",
    "numpy.isnan": "torch.isnan",
    "numpy.isinf": "torch.isinf",
}
NAN_TEST = "torch.isnan"
