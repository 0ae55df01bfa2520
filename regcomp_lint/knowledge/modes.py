"""The ``mode`` strings torch.compile accepts (RC102) and what each one sets (RC103).

Read from torch 2.13.0 with ``bench/read_backend_tables.py``: ``torch._inductor.list_mode_options()``.
Only the inductor backend checks ``mode``: with the default backend (``"inductor"``) an unknown
mode raises ``RuntimeError: Unrecognized mode=...`` as soon as ``torch.compile`` is called
(case-sensitive; ``max_autotune`` is not ``max-autotune``). Other backends receive the mode as a
keyword argument and may ignore it (``eager`` logs "ignoring extra kwargs") or define their own.
``TorchDynamoPlugin(mode=...)`` passes the string on to ``torch.compile`` unchecked, so
``prepare()`` raises the same error; its own default is ``"default"``, which it drops before
calling ``torch.compile``.
"""

from __future__ import annotations

from regcomp_lint.knowledge.backends import TORCH_VERSION

__all__ = ["INDUCTOR_MODES", "MODE_OPTIONS", "PLUGIN_DEFAULT_MODE", "TORCH_VERSION"]

#: torch._inductor.list_mode_options(mode) for every mode in torch 2.13.0: the inductor config
#: patches a mode stands for. ``torch.compile(mode=m)`` is ``torch.compile(options=MODE_OPTIONS[m])``.
MODE_OPTIONS: dict[str, dict[str, bool]] = {
    "default": {},
    "lite": {
        "fallback_by_default": True,
        "selective_decompose": True,
        "reorder_for_peak_memory": False,
        "reorder_for_compute_comm_overlap": False,
        "triton.reorder_for_reducing_graph_partitions": False,
        "use_pre_grad_passes": False,
        "use_joint_graph_passes": False,
        "use_post_grad_passes": False,
        "use_dce": False,
        "allow_buffer_reuse": False,
    },
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True, "coordinate_descent_tuning": True},
    "max-autotune": {"max_autotune": True, "triton.cudagraphs": True, "coordinate_descent_tuning": True},
}

#: Modes in the order torch's docs list them.
INDUCTOR_MODES: tuple[str, ...] = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs", "lite")

#: ``TorchDynamoPlugin.mode`` after ``__post_init__`` when none is given (and no
#: ``ACCELERATE_DYNAMO_MODE``); ``to_kwargs()`` omits it, so it never reaches torch.compile.
PLUGIN_DEFAULT_MODE = "default"
