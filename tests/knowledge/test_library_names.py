"""The knowledge tables agree with the torch, accelerate and transformers installed here.

Every qualified name must import and be the same object as the other spellings of its tuple;
the few kept for scripts written against other versions are listed here, so a new release that
adds or drops one fails this test.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest

from regcomp_lint.knowledge import accelerate_api, model_classes, torch_api, training_libraries

#: Spellings kept although the installed versions lack them (or lack the library).
NOT_INSTALLED = {
    "accelerate.TorchDynamoPlugin",  # never exported at top level; scripts write it anyway
    "transformers.AdamW",  # removed in transformers 5
    "transformers.optimization.AdamW",
    "accelerate.utils.DummyOptim",  # exported only when deepspeed is installed
    "accelerate.utils.DummyScheduler",
    "lion_pytorch.Lion",
    "schedulefree.AdamWScheduleFree",
    "torchdata.stateful_dataloader.StatefulDataLoader",
}

_MISSING = object()


def resolve(qualname: str) -> object:
    parts = qualname.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, _MISSING)
            if obj is _MISSING:
                return _MISSING
        return obj
    return _MISSING


SAME_OBJECT_TUPLES = {
    "TORCH_COMPILE": torch_api.TORCH_COMPILE,
    "DYNAMO_OPTIMIZE": torch_api.DYNAMO_OPTIMIZE,
    "MODULE": torch_api.MODULE,
    "MODULE_LIST": torch_api.MODULE_LIST,
    "DATALOADER": torch_api.DATALOADER,
    "OPTIMIZER_BASE": torch_api.OPTIMIZER_BASE,
    "INIT_PROCESS_GROUP": torch_api.INIT_PROCESS_GROUP,
    "CUDA_SET_DEVICE": torch_api.CUDA_SET_DEVICE,
    "DISTRIBUTED_SAMPLER": torch_api.DISTRIBUTED_SAMPLER,
    "ZERO_REDUNDANCY_OPTIMIZER": torch_api.ZERO_REDUNDANCY_OPTIMIZER,
    "DDP": torch_api.DATA_PARALLEL[:2],
    "DP": torch_api.DATA_PARALLEL[2:],
    "FSDP class": torch_api.FSDP[:2],
    "fully_shard": (torch_api.FSDP[2], torch_api.FSDP[4]),
    "ACCELERATOR": accelerate_api.ACCELERATOR,
    "DYNAMO_PLUGIN": accelerate_api.DYNAMO_PLUGIN,
    "COMPILE_REGIONS": accelerate_api.COMPILE_REGIONS,
    "DYNAMO_BACKEND_ENUM": accelerate_api.DYNAMO_BACKEND_ENUM,
    "PRETRAINED_MODEL": model_classes.PRETRAINED_MODEL,
    "DEEPCOPY": model_classes.DEEPCOPY,
}


@pytest.mark.parametrize("table", SAME_OBJECT_TUPLES, ids=str)
def test_every_spelling_resolves_to_one_object(table):
    names = SAME_OBJECT_TUPLES[table]
    found = {name: resolve(name) for name in names if name not in NOT_INSTALLED}
    assert _MISSING not in found.values(), f"{table}: {[n for n, o in found.items() if o is _MISSING]} do not resolve"
    assert len({id(obj) for obj in found.values()}) == 1, f"{table}: {found}"


def all_qualified_names() -> list[str]:
    names = [n for t in SAME_OBJECT_TUPLES.values() for n in t]
    names += [*torch_api.SPAWN, *torch_api.FSDP, torch_api.RPC_MODULE, *torch_api.NOT_OPTIMIZER_MODULES]
    names += [*training_libraries.OPTIMIZERS, *training_libraries.SCHEDULERS, *training_libraries.DATALOADERS]
    names += [*accelerate_api.DUMMY_OPTIMIZERS, *accelerate_api.DUMMY_SCHEDULERS]
    names += [*torch_api.SCHEDULER_MODULES, torch_api.OPTIMIZER_MODULE, "transformers.optimization"]
    return sorted(set(names))


#: Listed names that older releases still export (the tables keep them for scripts written then).
STILL_IN_OLDER = {"transformers.AdamW": ("transformers", 5), "transformers.optimization.AdamW": ("transformers", 5)}


def _expected_missing() -> set[str]:
    import importlib

    expected = set(NOT_INSTALLED)
    for name, (package, removed_in) in STILL_IN_OLDER.items():
        major = int(importlib.import_module(package).__version__.split(".")[0])
        if major < removed_in:
            expected.discard(name)
    return expected


def test_not_installed_list_is_exact():
    """A name resolves exactly when it is not listed as missing: both ways can fail."""
    missing = {name for name in all_qualified_names() if resolve(name) is _MISSING}
    assert missing == _expected_missing() & set(all_qualified_names())


def test_deepspeed_placeholders_live_in_accelerate_utils_deepspeed():
    assert resolve("accelerate.utils.deepspeed.DummyOptim") is not _MISSING
    assert resolve("accelerate.utils.deepspeed.DummyScheduler") is not _MISSING


def test_torch_compile_keywords_are_its_signature():
    import torch

    params = inspect.signature(torch.compile).parameters
    assert set(torch_api.TORCH_COMPILE_KWARGS) == {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY}


def test_plugin_fields_are_the_dataclass_fields_in_order():
    from accelerate.utils import TorchDynamoPlugin

    assert accelerate_api.PLUGIN_FIELDS == tuple(f.name for f in dataclasses.fields(TorchDynamoPlugin))
    assert accelerate_api.REGIONAL_FIELD in accelerate_api.PLUGIN_FIELDS
    assert set(accelerate_api.PLUGIN_COMPILE_KEYWORDS) <= torch_api.TORCH_COMPILE_KWARGS


def test_ddp_kwargs_fields_are_ddp_keywords_accelerate_passes_on():
    from accelerate.utils import DistributedDataParallelKwargs
    from torch.nn.parallel import DistributedDataParallel

    fields = {f.name for f in dataclasses.fields(DistributedDataParallelKwargs)}
    assert set(accelerate_api.DDP_KWARGS_FIELDS) <= fields
    assert set(accelerate_api.DDP_KWARGS_FIELDS) <= set(inspect.signature(DistributedDataParallel).parameters)


def test_module_api_is_nn_modules_public_api():
    import torch
    from torch.nn.parallel import DistributedDataParallel

    # torch's own API only: another library imported earlier in the run may patch nn.Module
    # (transformers adds `smart_apply`), which is not an API every module has
    public = {
        n
        for n in dir(torch.nn.Module)
        if not n.startswith("_")
        and getattr(getattr(torch.nn.Module, n), "__module__", "torch").split(".")[0] == "torch"
    } | {"training"}
    assert torch_api.MODULE_API <= public, torch_api.MODULE_API - public
    missing = public - torch_api.MODULE_API - {"T_destination", "call_super_init", "dump_patches"}
    assert not missing, f"new nn.Module API in this torch: {sorted(missing)}"
    assert {"no_sync", "require_backward_grad_sync"} <= set(dir(DistributedDataParallel)) | {
        "require_backward_grad_sync"  # an instance attribute
    }


def test_prepare_methods_are_accelerator_methods():
    from accelerate import Accelerator

    for name in accelerate_api.PREPARE_METHODS:
        assert callable(getattr(Accelerator, name)), name
    assert set(accelerate_api.MODEL_PREPARE_METHODS) <= accelerate_api.PREPARE_METHODS


def test_accelerator_only_methods_are_accelerator_methods_not_tensor_or_module_ones():
    import torch
    from accelerate import Accelerator

    for name in accelerate_api.ACCELERATOR_ONLY_METHODS:
        assert callable(getattr(Accelerator, name)), name
        assert not hasattr(torch.Tensor, name) and not hasattr(torch.nn.Module, name), name


def test_same_module_methods_return_the_module():
    import torch

    model = torch.nn.Linear(2, 2)
    calls = {"to": ("cpu",), "type": (torch.float32,), "apply": (lambda m: None,), "to_empty": ()}
    skip = {"cuda", "xpu"}  # need the device; they are nn.Module methods all the same
    for name in torch_api.SAME_MODULE_METHODS:
        assert callable(getattr(torch.nn.Module, name)), name
        if name in skip:
            continue
        kwargs = {"device": "cpu"} if name == "to_empty" else {}
        assert getattr(model, name)(*calls.get(name, ()), **kwargs) is model, name


def test_torch_layer_tables_name_torch_nn_modules():
    import torch

    for name in torch_api.MODEL_LAYERS | torch_api.TORCH_STACKS | set(torch_api.MODULE_CONTAINERS):
        assert issubclass(getattr(torch.nn, name), torch.nn.Module), name
    for name in torch_api.TORCH_STACKS:  # they hold a ModuleList of identical layers
        assert any(isinstance(c, torch.nn.ModuleList) for c in _small_stack(name).modules()), name


def _small_stack(name: str):
    import torch

    if name == "Transformer":
        return torch.nn.Transformer(d_model=4, nhead=1, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=4)
    layer_cls = torch.nn.TransformerEncoderLayer if name == "TransformerEncoder" else torch.nn.TransformerDecoderLayer
    return getattr(torch.nn, name)(layer_cls(d_model=4, nhead=1, dim_feedforward=4), num_layers=2)


def test_foreign_framework_prefixes_are_module_paths():
    for prefix, label in training_libraries.FOREIGN_FRAMEWORKS:
        assert prefix.replace("_", "").replace(".", "").isalnum() and label


def test_skipped_third_party_is_dynamos_skiplist_without_numpy():
    from torch._dynamo import trace_rules

    from regcomp_lint.knowledge.graph_breaks import SKIPPED_THIRD_PARTY

    assert set(trace_rules.THIRDPARTY_SKIPLIST) - {"numpy"} == SKIPPED_THIRD_PARTY


def test_every_grad_scaler_is_torchs_grad_scaler():
    """The device-specific scalers are (deprecated) subclasses of torch.amp.GradScaler."""
    base = resolve("torch.amp.GradScaler")
    for name in torch_api.GRAD_SCALERS:
        found = resolve(name)
        assert found is not _MISSING, name
        assert isinstance(found, type) and issubclass(found, base), name


def test_module_only_methods_are_modules_not_tensors_nor_optimizers():
    import torch

    for name in torch_api.MODULE_ONLY_METHODS:
        assert callable(getattr(torch.nn.Module, name)), name
        assert not hasattr(torch.Tensor, name) and not hasattr(torch.optim.Optimizer, name), name


def test_container_builtins_build_sized_containers_of_their_argument():
    """``CONTAINER_BUILTINS`` are builtins whose result has one entry per item of a sequence
    argument (so ``len()`` of it counts those items, not a share of the data)."""
    import builtins

    items = [3, 1, 2]
    for name in training_libraries.CONTAINER_BUILTINS:
        made = getattr(builtins, name)(items) if name != "dict" else builtins.dict(enumerate(items))
        assert len(made) == len(items), name
