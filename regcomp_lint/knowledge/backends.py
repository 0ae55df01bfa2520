"""Which backend strings ``torch.compile`` and Accelerate accept (RC101).

Read from torch 2.13.0 (CPU build) and accelerate 1.15.0 with ``bench/read_backend_tables.py``:

- ``TORCH_BACKENDS`` is ``torch._dynamo.list_backends(exclude_tags=())``; ``list_backends()``
  (which hides the "debug" and "experimental" tags) gives ``TORCH_LISTED_BACKENDS``. The lookup
  (``torch._dynamo.backends.registry.lookup_backend``) is an exact, case-sensitive dict lookup:
  ``backend="Inductor"`` raises ``InvalidBackend`` when ``torch.compile`` is called.
- ``ACCELERATE_BACKENDS`` are the members of ``accelerate.utils.DynamoBackend``;
  ``TorchDynamoPlugin`` and ``Accelerator(dynamo_backend=)`` parse the string with
  ``DynamoBackend(value.upper())``, so any case works, and anything else raises ``ValueError``
  when the plugin is built. ``prepare()`` then passes ``value.lower()`` to ``torch.compile``.
- Each Accelerate member was pushed through
  ``Accelerator(dynamo_plugin=TorchDynamoPlugin(backend=X)).prepare(nn.Linear)`` and one forward
  pass: the members in ``ACCELERATE_DEAD`` raise ``InvalidBackend`` in ``prepare()`` because
  torch no longer registers them; those in ``ACCELERATE_NEEDS_PLUGIN`` raise the same until the
  vendor package that registers them is installed (``tvm`` is registered by torch and needs
  Apache TVM only when the first forward pass compiles).
"""

from __future__ import annotations

TORCH_VERSION = "2.13.0"
ACCELERATE_VERSION = "1.15.0"

#: torch._dynamo.list_backends(exclude_tags=()) in torch 2.13.0.
TORCH_BACKENDS: frozenset[str] = frozenset(
    {
        "aot_eager",
        "aot_eager_decomp_partition",
        "aot_eager_decomp_partition_crossref",
        "aot_eager_decomp_partition_with_mode",
        "aot_eager_default_partitioner",
        "aot_ts",
        "cudagraphs",
        "dynamo_accuracy_minifier_backend",
        "dynamo_minifier_backend",
        "eager",
        "eager_debug",
        "eager_noexcept",
        "inductor",
        "invoke_subgraph",
        "non_leaf_compile_error_TESTING_ONLY",
        "openxla",
        "openxla_eval",
        "pre_dispatch_eager",
        "relu_accuracy_error_TESTING_ONLY",
        "relu_compile_error_TESTING_ONLY",
        "relu_runtime_error_TESTING_ONLY",
        "ts",
        "tvm",
    }
)

#: torch._dynamo.list_backends() (default tags excluded) in torch 2.13.0.
TORCH_LISTED_BACKENDS: frozenset[str] = frozenset({"cudagraphs", "inductor", "openxla", "tvm"})

#: Backends that third-party packages register when imported (or through the
#: ``torch_dynamo_backends`` entry point). Valid for ``torch.compile`` once the package is
#: installed, so they are never reported; the value names the package.
PLUGIN_BACKENDS: dict[str, str] = {
    "tensorrt": "torch_tensorrt",
    "torch_tensorrt": "torch_tensorrt",
    "openvino": "openvino",
    "ipex": "intel_extension_for_pytorch",
    "hidet": "hidet",
    "neuron": "torch-neuronx",
    "hpu_backend": "habana_frameworks (Intel Gaudi)",
}

#: Names that older torch versions or old tutorials used and that torch 2.13 no longer
#: registers, mapped to the backend to use instead (None: no direct replacement).
REMOVED_TORCH_BACKENDS: dict[str, str | None] = {
    "aot_nvfuser": "inductor",  # nvFuser backends were removed from torch
    "aot_ts_nvfuser": "inductor",
    "nvprims_nvfuser": "inductor",
    "nvprims_aten": "aot_eager",
    "aot_cudagraphs": "cudagraphs",
    "fx2trt": "tensorrt",  # now provided by torch_tensorrt
    "torchxla_trace_once": "openxla_eval",
    "aot_torchxla_trace_once": "openxla",
    "onnxrt": None,  # torch's ONNX Runtime backend was removed
    "ofi": None,  # TorchScript optimize_for_inference backend was removed
}

#: What a did-you-mean may offer for torch.compile (testing-only and minifier backends are
#: accepted but never suggested).
TORCH_SUGGESTIONS: tuple[str, ...] = (
    "inductor",
    "eager",
    "aot_eager",
    "aot_eager_decomp_partition",
    "cudagraphs",
    "openxla",
    "openxla_eval",
    "tvm",
    "ts",
    "aot_ts",
    *PLUGIN_BACKENDS,
)

#: accelerate.utils.DynamoBackend members, lower-cased, in declaration order (accelerate 1.15.0).
ACCELERATE_BACKENDS: tuple[str, ...] = (
    "no",
    "eager",
    "aot_eager",
    "inductor",
    "aot_ts_nvfuser",
    "nvprims_nvfuser",
    "cudagraphs",
    "ofi",
    "fx2trt",
    "onnxrt",
    "tensorrt",
    "aot_torchxla_trace_once",
    "torchxla_trace_once",
    "tvm",
    "hpu_backend",
    "neuron",
)

#: Accelerate members that torch 2.13 no longer registers: ``prepare()`` raises InvalidBackend.
ACCELERATE_DEAD: frozenset[str] = frozenset(
    {
        "aot_ts_nvfuser",
        "nvprims_nvfuser",
        "ofi",
        "fx2trt",
        "onnxrt",
        "aot_torchxla_trace_once",
        "torchxla_trace_once",
    }
)

#: Accelerate members that work only with a vendor package installed (never reported).
ACCELERATE_NEEDS_PLUGIN: dict[str, str] = {
    "tensorrt": PLUGIN_BACKENDS["tensorrt"],
    "hpu_backend": PLUGIN_BACKENDS["hpu_backend"],
    "neuron": PLUGIN_BACKENDS["neuron"],
}

#: What a did-you-mean may offer for Accelerate: the members that still work.
ACCELERATE_SUGGESTIONS: tuple[str, ...] = tuple(b for b in ACCELERATE_BACKENDS if b not in ACCELERATE_DEAD)


def torch_accepts(name: str) -> bool:
    """True when ``torch.compile(backend=name)`` can work (torch's own or a plugin's backend)."""
    return name in TORCH_BACKENDS or name in PLUGIN_BACKENDS


def accelerate_parses(name: str) -> bool:
    """True when ``TorchDynamoPlugin(backend=name)`` builds (any case, like ``DynamoBackend(name.upper())``)."""
    return name.upper() in _ACCELERATE_UPPER


_ACCELERATE_UPPER = frozenset(b.upper() for b in ACCELERATE_BACKENDS)
