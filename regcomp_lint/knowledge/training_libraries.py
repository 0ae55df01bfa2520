"""Other libraries' optimizers, schedulers, data loaders and distribution frameworks (read
from transformers 5.24 and accelerate 1.15; the others are not installed here and are kept by
their documented module paths).

What ``accelerator.prepare`` must see besides torch's own classes (those are in
:mod:`regcomp_lint.knowledge.torch_api`), and the frameworks whose scripts the conversion refuses.
"""

from __future__ import annotations

from regcomp_lint.knowledge import accelerate_api, torch_api

#: Every public class of these modules is an optimizer.
OPTIMIZER_MODULES = (
    torch_api.OPTIMIZER_MODULE,
    "bitsandbytes.optim",
    "apex.optimizers",
    "timm.optim",
    "deepspeed.ops.adam",
    "deepspeed.ops.lamb",
)
#: Not optimizers although under an optimizer module: schedulers, SWA helpers, the base class.
NOT_OPTIMIZERS = (*torch_api.NOT_OPTIMIZER_MODULES, *torch_api.OPTIMIZER_BASE)
#: Optimizer classes outside those modules. ``transformers.AdamW`` was removed in transformers 5
#: and is kept for scripts written against 4.x.
OPTIMIZERS = (
    "transformers.AdamW",
    "transformers.Adafactor",
    "transformers.optimization.AdamW",
    "transformers.optimization.Adafactor",
    *accelerate_api.DUMMY_OPTIMIZERS,
    *torch_api.ZERO_REDUNDANCY_OPTIMIZER,
    "lion_pytorch.Lion",
    "schedulefree.AdamWScheduleFree",
)
#: Optimizer wrappers that are no ``torch.optim.Optimizer``: apex's ``LARC(optimizer, trust_coefficient,
#: clip)`` is a plain object holding the optimizer in ``self.optim`` (SwAV, DINO-era SSL scripts).
#: ``accelerator.prepare`` wraps only ``torch.optim.Optimizer`` instances (accelerate 1.15,
#: ``Accelerator._prepare_one``) and hands anything else back as it is.
UNPREPARED_OPTIMIZER_WRAPPERS = ("apex.parallel.LARC.LARC", "apex.parallel.LARC")
#: Library functions that build an optimizer from the model passed first (``model_or_params``).
OPTIMIZER_FACTORIES = (
    "timm.optim.create_optimizer_v2",
    "timm.optim.create_optimizer",
    "timm.optim.optim_factory.create_optimizer_v2",
    "timm.optim.optim_factory.create_optimizer",
    "timm.optim._optim_factory.create_optimizer_v2",
)
#: Model methods that return the model's optimizer, by the convention nanoGPT and Lightning
#: share (``optimizer = model.configure_optimizers(weight_decay, lr, betas, device_type)``), and
#: the singular that build-nanogpt's forks name it (``raw_model.configure_optimizer(weight_decay=0.1,
#: learning_rate=6e-4, device=device)``, survey22a ddpinfo_trainer; seven such models in the index).
OPTIMIZER_FACTORY_METHODS = ("configure_optimizers", "configure_optimizer")
#: ``transformers.get_linear_schedule_with_warmup`` and friends, ``get_scheduler``; diffusers'.
SCHEDULER_FACTORY_MODULES = ("transformers", "transformers.optimization", "diffusers.optimization")
SCHEDULERS = (*accelerate_api.DUMMY_SCHEDULERS, *torch_api.OTHER_SCHEDULERS)
#: Model methods that write files unless told they run off the main process, by keyword and the
#: position that keyword also takes: transformers' ``PreTrainedModel.save_pretrained(save_directory,
#: is_main_process=True, ...)`` (5.24; since 4.6), diffusers' ``ModelMixin`` and PEFT's
#: ``PeftModel`` alike. Every process still calls it (a sharded model's ``state_dict`` is gathered
#: by all of them); only the one told ``True`` writes.
MAIN_PROCESS_KEYWORDS = {"save_pretrained": ("is_main_process", 1)}
DATALOADERS = (*torch_api.DATALOADER, "torchdata.stateful_dataloader.StatefulDataLoader")
#: torch_geometric's loaders whose ``_get_iterator`` turns each batch the collate_fn sampled into a
#: ``Data``/``HeteroData`` (``NodeLoader``/``LinkLoader``'s ``filter_fn``, 2.8.1) unless
#: ``filter_per_worker=True``, which PyG infers from the graph: True on the CPU, False for a graph on
#: the GPU (``infer_filter_per_worker``). accelerate's ``prepare()`` rebuilds a loader as a plain
#: DataLoader with the same collate_fn, so the rebuilt one yields the raw ``SamplerOutput``.
PYG_FILTERING_LOADERS = tuple(
    f"torch_geometric.{module}.{name}"
    for module, names in (
        ("loader", ("NeighborLoader", "LinkNeighborLoader", "HGTLoader", "NodeLoader", "LinkLoader", "ZipLoader")),
        ("loader.neighbor_loader", ("NeighborLoader",)),
        ("loader.link_neighbor_loader", ("LinkNeighborLoader",)),
        ("loader.hgt_loader", ("HGTLoader",)),
        ("loader.node_loader", ("NodeLoader",)),
        ("loader.link_loader", ("LinkLoader",)),
        ("distributed", ("DistNeighborLoader", "DistLinkNeighborLoader")),
    )
    for name in names
)
#: The keyword that makes those loaders filter in their collate_fn (what ``prepare()`` keeps).
PYG_FILTER_KEYWORD = "filter_per_worker"

#: Experiment trackers that start a run by a call and take a keyword that turns the run off:
#: ``wandb.init(mode="disabled")`` makes every later ``wandb.log``/``wandb.finish`` of that process a
#: no-op (wandb documents the mode for exactly this, "disabled" since 0.10). Launched on N processes
#: a script without it starts N runs.
TRACKER_RUNS = {"wandb.init": ("mode", '"disabled"')}
#: Trackers with no such switch: each process of a launch logs its own copy (TensorBoard shows N
#: event files' points on one chart, MLflow and Neptune record N runs). Named in a note.
TRACKERS_WITHOUT_SWITCH = (
    "torch.utils.tensorboard.SummaryWriter",
    "torch.utils.tensorboard.writer.SummaryWriter",
    "tensorboardX.SummaryWriter",
    "mlflow.start_run",
    "neptune.init_run",
    "comet_ml.Experiment",
    "aim.Run",
)

#: Imports of another training framework that owns distribution: (module prefix, what to call it).
FOREIGN_FRAMEWORKS = (
    ("deepspeed", "DeepSpeed"),
    ("lightning.fabric", "Lightning Fabric"),
    ("lightning_fabric", "Lightning Fabric"),
    ("lightning", "Lightning"),
    ("pytorch_lightning", "PyTorch Lightning"),
    ("horovod", "Horovod"),
)

#: Libraries whose trainers own their training loop (``transformers.Trainer(...).train()``,
#: ``lightning.Trainer.fit``): a script that hands its model to one of them is not pointed at the
#: trainer's module as "the file to convert" (that is the project's own trainers only).
LIBRARY_TRAINER_ROOTS = (
    "transformers",
    "trl",
    "accelerate",
    "lightning",
    "pytorch_lightning",
    "lightning_fabric",
    "ignite",
    "fastai",
    "composer",
    "mmengine",
    "detectron2",
    "deepspeed",
    "sklearn",
    "keras",
    "tensorflow",
    "jax",
    "flax",
)

#: Calls that hand on the items of the iterable they are given, one by one: iterating
#: ``tqdm(loader)`` or ``itertools.cycle(loader)`` iterates the loader (its sampler decides which
#: batches a process sees). ``iter`` and ``enumerate`` are builtins and are read by name.
ITERATION_WRAPPERS = (
    "tqdm.tqdm",
    "tqdm.auto.tqdm",
    "tqdm.notebook.tqdm",
    "tqdm.std.tqdm",
    "tqdm.rich.tqdm",
    "torch.hub.tqdm",
    "itertools.cycle",
    "itertools.islice",
    "rich.progress.track",
)
#: Progress bars over a range of numbers (``for epoch in trange(epochs)``): an epoch counter, never
#: a batch source, like ``tqdm(range(n))`` (an ``ITERATION_WRAPPERS`` call of ``range``).
PROGRESS_RANGES = ("tqdm.trange", "tqdm.auto.trange", "tqdm.notebook.trange", "tqdm.std.trange", "tqdm.rich.trange")
#: Builtins that hand on their first argument's items: ``list(loader)`` and ``tuple(loader)``
#: hold its batches in its order (one pass of its sampler), so a loader prepared before them
#: gives each process its share (``train_list = list(train_loader)`` iterated every epoch).
ITERATION_BUILTINS = ("iter", "enumerate", "list", "tuple")
#: The calls, as a loop's header spells them, through which a loop iterates the loader they are
#: handed (``enumerate(loader)``, ``tqdm(loader)``, ``iter(loader)``): the bare names only, read
#: from the source as written (host_batches, container_loaders).
LOOP_PASS_THROUGH = ("enumerate", "tqdm", "iter")
#: Builtins that build a container of their argument's items: ``len()`` of what they return
#: counts those items (``len(list(history))``), a number no share of the data changes unless the
#: argument is a loader.
CONTAINER_BUILTINS = ("list", "tuple", "dict", "set", "sorted", "frozenset")
#: Builtins whose arguments are integers: a name handed to ``range(start_epoch, epochs)`` is a
#: count or a bound, never what the loop iterates (``range(len(loader))`` still reaches the loader,
#: through ``len``).
INTEGER_BUILTINS = ("range",)

#: Loss scalers called as ``loss_scaler(loss, optimizer, clip_grad=..., parameters=...)``: one call runs
#: ``scale(loss).backward()``, unscales, clips and steps the optimizer (timm.utils's ``NativeScaler`` and
#: ``ApexScaler``; the copies BEiT, MAE and ConvNeXt keep in their ``utils.py`` / ``util/misc.py`` as
#: ``NativeScalerWithGradNormCount``). Matched by the class's last name, as the copies live in each project.
LOSS_SCALER_CLASSES = frozenset(
    {"NativeScaler", "ApexScaler", "NativeScalerWithGradNormCount", "NativeScalerWithGradAccum"}
)

#: Calls that make a copy of the model they are handed (an EMA or SWA average starts as one): made
#: of the prepared model, the copy would be a DDP or compile wrapper (DDP cannot be deep-copied on
#: several processes; the compiled copy's state_dict carries ``_orig_mod.`` keys).
#: ``torch_ema.ExponentialMovingAverage(model.parameters())`` keeps the parameters themselves and is
#: not one of them.
MODEL_COPIES = (
    "copy.deepcopy",
    "torch.optim.swa_utils.AveragedModel",
    "timm.utils.ModelEma",
    "timm.utils.ModelEmaV2",
    "timm.utils.ModelEmaV3",
    "timm.utils.model_ema.ModelEma",
    "timm.utils.model_ema.ModelEmaV2",
    "timm.utils.model_ema.ModelEmaV3",
    "ema_pytorch.EMA",
)

#: Where each of :data:`MODEL_COPIES` keeps its copy: the attributes between the copy's own name and
#: the model it copied (``AveragedModel(model).module``, ``ema_pytorch.EMA(model).ema_model``; a deep
#: copy is the model itself). Made of a DDP wrapper, the copied wrapper's ``.module`` follows them.
MODEL_COPY_HOLDERS: dict[str, tuple[str, ...]] = {
    "copy.deepcopy": (),
    "torch.optim.swa_utils.AveragedModel": ("module",),
    "timm.utils.ModelEma": ("ema",),
    "timm.utils.ModelEmaV2": ("module",),
    "timm.utils.ModelEmaV3": ("module",),
    "timm.utils.model_ema.ModelEma": ("ema",),
    "timm.utils.model_ema.ModelEmaV2": ("module",),
    "timm.utils.model_ema.ModelEmaV3": ("module",),
    "ema_pytorch.EMA": ("ema_model",),
}

#: diffusers pipelines (``DDPMPipeline(unet=model, scheduler=...)``, ``StableDiffusionPipeline.
#: from_pretrained(path, unet=unet)``): every one is a ``DiffusionPipeline`` exported by the top
#: module under a name ending in ``Pipeline``. ``register_modules`` reads each module's class and
#: the pipeline's call reads ``unet.config``, which DDP does not pass on: handed the prepared model,
#: it raised "'DistributedDataParallel' object has no attribute 'config'" on 2 processes (survey 15,
#: diffusers 0.42.1, verified on CPU); diffusers' own training examples hand it
#: ``accelerator.unwrap_model(unet)``.
DIFFUSERS_MODULE = "diffusers"
PIPELINE_CLASS_SUFFIX = "Pipeline"

#: Progress bars that call ``iter(iterable)`` in their ``__init__`` (tqdm 4.70 ``tqdm.asyncio.tqdm_asyncio``,
#: the class ``tqdm.auto.tqdm`` is outside a notebook and a base of inside one): on a plain
#: DataLoader that builds an iterator, which draws its base seed from torch's global generator
#: (``_BaseDataLoaderIter.__init__``), and the loop then builds another. ``tqdm.tqdm`` does not.
EAGER_ITERATING_BARS = (
    "tqdm.auto.tqdm",
    "tqdm.asyncio.tqdm",
    "tqdm.asyncio.tqdm_asyncio",
)

#: Methods handed the training's step counter that schedule something against a total counted
#: in optimizer steps before ``prepare()``: PEFT's AdaLoRA ``update_and_allocate(global_step)``
#: prunes the rank budget from ``tinit`` to ``total_step - tfinal`` (``AdaLoraConfig``; the PEFT
#: example sets ``total_step = len(train_dataloader) * num_epochs``). A prepared loader gives
#: each of N processes 1/N of the steps, so the budget reaches only 1/N of its schedule.
STEP_COUNTED_METHODS = ("update_and_allocate",)
