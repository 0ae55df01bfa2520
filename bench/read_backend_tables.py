"""Read the backend and mode tables that RC101/RC102 encode, from a real torch + accelerate.

regcomp-lint never imports torch; its tables (``regcomp_lint/knowledge/``) are data copied from
what this script prints. Run it in a throwaway environment that has the versions to target:

    python3 -m venv /tmp/truth && /tmp/truth/bin/pip install torch==2.13.0 accelerate==1.15.0
    /tmp/truth/bin/python bench/read_backend_tables.py            # print the tables as JSON
    /tmp/truth/bin/python bench/read_backend_tables.py --check    # diff them against knowledge/

It probes behaviour, not docs: every accelerate backend goes through
``Accelerator(dynamo_plugin=TorchDynamoPlugin(backend=X)).prepare(nn.Linear)`` plus one forward
pass on CPU, and every mode through ``torch.compile``. Backends that need hardware or a vendor
package (tvm, tensorrt, hpu_backend, neuron) fail here for that reason; the knowledge module
records which failures mean "dead in this torch" and which mean "needs a plugin".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings


def _error(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__module__}.{type(exc).__name__}: {first[:160]}"


def torch_tables() -> dict:
    import torch
    import torch._dynamo as dynamo
    import torch._inductor as inductor

    linear = torch.nn.Linear(2, 2)
    case_probe = {}
    for name in ("Inductor", "EAGER"):
        try:
            torch.compile(linear, backend=name)
            case_probe[name] = "accepted"
        except Exception as exc:  # noqa: BLE001 - we record whatever torch raises
            case_probe[name] = _error(exc)

    mode_probe = {}
    for mode in ("bogus", "Max-Autotune", "max_autotune"):
        for backend in ("inductor", "eager"):
            try:
                torch.compile(linear, mode=mode, backend=backend)
                mode_probe[f"{mode} (backend={backend})"] = "accepted at compile()"
            except Exception as exc:  # noqa: BLE001
                mode_probe[f"{mode} (backend={backend})"] = _error(exc)

    options_probe = {}
    for mode, options in (
        ("default", {"max_autotune": True}),
        ("default", {}),
        (None, {"max_autotune": True}),
        ("max-autotune", None),
    ):
        key = f"mode={mode!r}, options={options!r}"
        try:
            torch.compile(linear, mode=mode, options=options)
            options_probe[key] = "accepted"
        except Exception as exc:  # noqa: BLE001
            options_probe[key] = _error(exc)

    return {
        "torch_version": torch.__version__.split("+")[0],
        "backends_all": sorted(dynamo.list_backends(exclude_tags=())),
        "backends_default": sorted(dynamo.list_backends()),
        "backend_lookup_case": case_probe,
        "modes": sorted(inductor.list_mode_options()),
        "mode_probe": mode_probe,
        "mode_with_options_probe": options_probe,
    }


def _fresh_accelerator_state() -> None:
    from accelerate.state import AcceleratorState, GradientState, PartialState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    PartialState._reset_state()


def _prepare_and_run(**plugin_kwargs) -> str:
    import torch
    from accelerate import Accelerator
    from accelerate.utils import TorchDynamoPlugin

    _fresh_accelerator_state()
    torch._dynamo.reset()
    stage = "TorchDynamoPlugin()"
    try:
        plugin = TorchDynamoPlugin(**plugin_kwargs)
        stage = "prepare()"
        model = Accelerator(dynamo_plugin=plugin, cpu=True).prepare(torch.nn.Linear(4, 4))
        stage = "forward"
        model(torch.randn(2, 4))
        return "ok"
    except Exception as exc:  # noqa: BLE001
        return f"fails at {stage}: {_error(exc)}"


def accelerate_tables() -> dict:
    import accelerate
    from accelerate import Accelerator
    from accelerate.utils import DynamoBackend

    members = [m.value.lower() for m in DynamoBackend]
    prepare = {name: _prepare_and_run(backend=name) for name in members}
    extra = {name: _prepare_and_run(backend=name) for name in ("Inductor", "openxla", "aot_nvfuser")}
    modes = {
        mode: _prepare_and_run(backend="inductor", mode=mode)
        for mode in ("lite", "max-autotune-no-cudagraphs", "max_autotune", "bogus")
    }
    modes_eager = {mode: _prepare_and_run(backend="eager", mode=mode) for mode in ("bogus",)}
    # accelerate drops a mode equal to its default ("default") before calling torch.compile
    mode_options = {
        f"mode={mode!r}, options={{...}}": _prepare_and_run(
            backend="inductor", mode=mode, options={"max_autotune": True}
        )
        for mode in (None, "default", "max-autotune")
    }
    legacy = {}
    for name in ("INDUCTOR", "openxla"):
        _fresh_accelerator_state()
        try:
            Accelerator(dynamo_backend=name, cpu=True)
            legacy[name] = "accepted"
        except Exception as exc:  # noqa: BLE001
            legacy[name] = _error(exc)
    return {
        "accelerate_version": accelerate.__version__,
        "dynamo_backend_members": members,
        "prepare_and_forward": prepare,
        "plugin_other_strings": extra,
        "plugin_modes_inductor": modes,
        "plugin_modes_eager": modes_eager,
        "plugin_mode_with_options": mode_options,
        "accelerator_dynamo_backend": legacy,
    }


def check(tables: dict) -> int:
    """Compare what torch/accelerate report with regcomp_lint.knowledge; 1 when they differ."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir))
    from regcomp_lint.knowledge import backends, modes

    problems = []
    if set(tables["backends_all"]) != set(backends.TORCH_BACKENDS):
        problems.append(f"torch backends differ: {sorted(set(tables['backends_all']) ^ set(backends.TORCH_BACKENDS))}")
    if set(tables["modes"]) != set(modes.INDUCTOR_MODES):
        problems.append(f"modes differ: {sorted(set(tables['modes']) ^ set(modes.INDUCTOR_MODES))}")
    if set(tables["dynamo_backend_members"]) != set(backends.ACCELERATE_BACKENDS):
        problems.append(
            f"accelerate members differ: {sorted(set(tables['dynamo_backend_members']) ^ set(backends.ACCELERATE_BACKENDS))}"
        )
    for name, outcome in tables["prepare_and_forward"].items():
        if (
            "InvalidBackend" in outcome
            and name not in backends.ACCELERATE_DEAD
            and name not in backends.ACCELERATE_NEEDS_PLUGIN
        ):
            problems.append(f"accelerate backend {name!r} now fails: {outcome}")
        if outcome == "ok" and name in backends.ACCELERATE_DEAD:
            problems.append(f"accelerate backend {name!r} recorded dead but works")
    for line in problems:
        print(line)
    print("knowledge tables match" if not problems else f"{len(problems)} difference(s)")
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="compare with regcomp_lint/knowledge and exit 1 on a difference"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    tables = {**torch_tables(), **accelerate_tables()}
    if args.check:
        return check(tables)
    print(json.dumps(tables, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
