"""The distribution a script sets up by hand (analysis/distributed_setup.py)."""

from __future__ import annotations

import ast
import textwrap

from regcomp_lint.analysis.distributed_setup import LOCAL_RANK, RANK, WORLD_SIZE, DistributedSetup, SetupCall
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint.engine import walk


def setup_of(body: str) -> tuple[DistributedSetup, FileContext]:
    src = textwrap.dedent(body)
    ctx = FileContext(SourceFile("t.py", src), ast.parse(src))
    walk(ctx, [])  # records the imports
    return ctx.semantic.distributed_setup, ctx


def test_a_torchrun_script_with_env_ranks_and_ddp():
    setup, ctx = setup_of("""\
        import os
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        ddp = int(os.environ.get("RANK", -1)) != -1
        if ddp:
            dist.init_process_group(backend="nccl")
            rank = int(os.environ["RANK"])
            local_rank = int(os.environ["LOCAL_RANK"])
            world = int(os.getenv("WORLD_SIZE", 1))
            torch.cuda.set_device(local_rank)
        model = DDP(model, device_ids=[local_rank])
        print(dist.get_rank(), dist.get_world_size())
        dist.destroy_process_group()
        """)
    kinds = [(kind, ctx.source.segment(call.func)) for kind, call in setup.calls.values()]
    assert sorted(kinds, key=lambda k: k[1]) == sorted(
        [
            (SetupCall.INIT_PROCESS_GROUP, "dist.init_process_group"),
            (SetupCall.SET_DEVICE, "torch.cuda.set_device"),
            (SetupCall.DATA_PARALLEL, "DDP"),
            (SetupCall.DESTROY_PROCESS_GROUP, "dist.destroy_process_group"),
        ],
        key=lambda k: k[1],
    )
    assert setup.by_hand
    assert [read.reads for read in setup.rank_reads] == [RANK, RANK, LOCAL_RANK, WORLD_SIZE, RANK, WORLD_SIZE]


def test_spawned_workers_and_what_has_no_accelerate_equivalent():
    setup, ctx = setup_of("""\
        import torch.multiprocessing as mp
        import torch.distributed.rpc as rpc
        import deepspeed
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from lightning.fabric import Fabric
        mp.spawn(worker, nprocs=2)
        model = FSDP(model)
        rpc.init_rpc("w", rank=0, world_size=2)
        """)
    assert [ctx.source.segment(c.func) for c in setup.of_kind(SetupCall.SPAWN)] == ["mp.spawn"]
    assert [ctx.source.segment(c.func) for c in setup.of_kind(SetupCall.FSDP)] == ["FSDP"]
    assert [ctx.source.segment(c.func) for c in setup.of_kind(SetupCall.RPC)] == ["rpc.init_rpc"]
    assert [(framework, stmt.lineno) for framework, stmt in setup.foreign_frameworks] == [
        ("DeepSpeed", 3),
        ("Lightning Fabric", 5),
    ]


def test_a_single_process_script_sets_nothing_up():
    setup, _ = setup_of("""\
        import os
        import torch
        def init_process_group():
            pass
        init_process_group()
        seed = os.environ.get("SEED")
        model = torch.nn.Linear(2, 2)
        """)
    assert setup.calls == {}
    assert setup.rank_reads == []
    assert not setup.by_hand


def test_kind_of_answers_for_one_call():
    setup, ctx = setup_of("import torch\nm = torch.nn.DataParallel(net)\nx = net(y)\n")
    calls = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call)]
    assert [setup.kind_of(c) for c in calls] == [SetupCall.DATA_PARALLEL, None]
    assert setup.kind_of(None) is None


def test_a_framework_imported_with_a_stand_in_is_not_in_use():
    """minGPT's trainer: Lightning only when USE_LIGHTNING is set, its own stand-in otherwise."""
    setup, _ = setup_of(
        """
        import os
        if int(os.environ.get("USE_LIGHTNING", 0)):
            import pytorch_lightning as pl
        else:
            import mingpt.fake_lightning as pl
        try:
            import deepspeed
        except ImportError:
            deepspeed = None
        import horovod.torch as hvd
        """
    )
    # the try/except binds `deepspeed` by assignment, not import: still counted (a real dependency)
    assert [framework for framework, _ in setup.foreign_frameworks] == ["DeepSpeed", "Horovod"]
