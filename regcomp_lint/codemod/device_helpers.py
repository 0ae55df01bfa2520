"""Devices the script chose through a helper of its own that reads its device setting.

survey 19c hydra_vae: ``device = get_device(cfg)``, where ``get_device`` returns
``torch.device(cfg.device)`` unless the setting says ``auto``. The device assignment becomes
``accelerator.device`` like any other; the device flags the conversion follows
(``Accelerator(cpu=str(args.device) == "cpu")``) are the ones read in the assignment itself, so a
setting read inside the helper is dropped: ``device: cpu`` trains on the GPU where there is one.
Following it would mean calling the helper for ``cpu=`` (its side effects, a GPU index it picks
for one process), which is not the same program; the note names the call and what it reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.tree import code, dotted, find_all, parameter_names

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def name_device_helpers(planner: Planner) -> None:
    """A note for each rewritten device assignment whose value calls a local function that reads
    a device setting of its parameters (``cfg.device``)."""
    tree = planner.tree
    for assign in planner.device_values:
        if assign not in planner.edits.replace:
            continue
        for call in find_all(assign, cst.Call):
            helper = tree.function_named(call)
            settings = _settings_read(helper) if helper is not None else []
            if not settings:
                continue
            planner.notes.append(
                f"{code(call).strip()} at line {tree.line(call)} chose the device from the script's setting "
                f"({', '.join(settings)} in {code(call.func).strip()}()): it is now {planner.acc_key}.device, which "
                "does not read that setting, so a CPU setting is no longer followed on a machine with a GPU; pass "
                "cpu=True to Accelerator(...) (or launch with accelerate launch --cpu) to train on the CPU"
            )


def _settings_read(helper: cst.FunctionDef) -> list[str]:
    """``cfg.device`` and the like: a ``...device...`` attribute of one of the helper's parameters."""
    params = set(parameter_names(helper))
    found: list[str] = []
    for node in find_all(helper, cst.Attribute):
        key = dotted(node)
        if key is not None and "device" in node.attr.value and key.split(".")[0] in params and key not in found:
            found.append(key)
    return found
