"""Qualified names the conversion recognises, kept as data (read from torch 2.13 / accelerate 1.15)."""

from __future__ import annotations

import re

TORCH_COMPILE = ("torch.compile",)
ACCELERATOR = ("accelerate.Accelerator", "accelerate.accelerator.Accelerator")
DYNAMO_PLUGIN = (
    "accelerate.utils.TorchDynamoPlugin",
    "accelerate.utils.dataclasses.TorchDynamoPlugin",
    "accelerate.TorchDynamoPlugin",
)
DATALOADER = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
MODULE_LIST = ("torch.nn.ModuleList", "torch.nn.modules.container.ModuleList")
SCHEDULER_PREFIXES = ("torch.optim.lr_scheduler",)
OPTIMIZER_PREFIXES = ("torch.optim",)
NOT_OPTIMIZERS = ("torch.optim.lr_scheduler", "torch.optim.swa_utils", "torch.optim.Optimizer")

#: The script wraps the model for data parallelism itself; prepare() does this instead.
DATA_PARALLEL = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
)
INIT_PROCESS_GROUP = ("torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group")
CUDA_SET_DEVICE = ("torch.cuda.set_device",)
#: Set-ups the conversion never takes apart: it refuses the script.
SPAWN = ("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes", "torch.multiprocessing.spawn.spawn")
FSDP = (
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard.fully_shard",
)
#: Remote procedure calls between processes: a distribution model Accelerate does not replace.
RPC_PREFIX = "torch.distributed.rpc"
#: Imports of another training framework that owns distribution: (module prefix, what to call it).
FOREIGN_FRAMEWORKS = (
    ("deepspeed", "DeepSpeed"),
    ("lightning.fabric", "Lightning Fabric"),
    ("lightning_fabric", "Lightning Fabric"),
    ("lightning", "Lightning"),
    ("pytorch_lightning", "PyTorch Lightning"),
    ("horovod", "Horovod"),
)

#: torch.compile keywords and whether TorchDynamoPlugin takes them.
COMPILE_KEYWORDS = ("backend", "mode", "fullgraph", "dynamic", "options", "disable")
PLUGIN_KEYWORDS = ("backend", "mode", "fullgraph", "dynamic", "options", "disable", "use_regional_compilation")

#: transformers classes that are stacks of identical blocks (RC501's definition).
TRANSFORMERS_MODEL = re.compile(r"^(AutoModel\w*|\w*Model|\w*For\w+|\w*LMHeadModel)$")
TRANSFORMERS_FACTORIES = ("from_pretrained", "from_config")
#: a ModuleList of at least this many instances of one class counts as repeated blocks
MIN_REPEATED_BLOCKS = 4
