"""``torch.load(path, map_location=device)`` where the conversion made ``device`` the accelerator's.

Under several CPU processes ``accelerator.device`` is ``cpu:0``, and ``torch.load`` cannot map
storages there (``don't know how to restore data location ... (tagged with cpu:0)``); the original
script loaded onto ``torch.device("cpu")``. PyTorch's DDP tutorials keep
``loc = str(self.device)`` and resume with ``torch.load(snapshot, map_location=loc)``: converted,
the resume crashed on CPU (checked on 2 gloo processes). The load keeps its location on an
accelerator and loads onto ``"cpu"`` on a CPU process, as the original did.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import expression
from regcomp_lint.codemod.tree import Function, code, find_all, key_of, single_target

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner


def keep_cpu_load_locations(planner: PlainPlanner, places: list[Function]) -> int:
    """Rewrite the ``map_location=`` of ``torch.load`` calls in ``places`` that reads a device the
    conversion set to ``accelerator.device`` (directly, or through a local made from it in the same
    function: ``loc = str(self.device)``). Returns how many."""
    tree = planner.tree
    count = 0
    for place in places:
        devices = accelerator_devices(planner, place)
        if not devices:
            continue
        for call in find_all(place, cst.Call, enter_functions=False):
            if planner.is_removed(call) or not tree.resolves_to(call.func, "torch.load"):
                continue
            arg = _location(call)
            if arg is None or not _reads_device(arg.value, place, devices):
                continue
            acc = planner.accelerator_in(place)
            value = expression(f'{code(arg.value)} if {acc}.device.type != "cpu" else "cpu"', planner.module)
            planner.edits.on(arg, partial(cst.Arg.with_changes, value=value))
            planner.uses.append(call)
            count += 1
    if count:
        planner.notes.append(
            f'{count} torch.load(map_location=<device>) call(s) load onto "cpu" on a CPU process: under several '
            "processes accelerator.device is cpu:0 there, which torch.load cannot map to"
        )
    return count


def accelerator_devices(planner: PlainPlanner, place: Function) -> set[str]:
    """The keys that hold ``accelerator.device`` (not its ``.type``, a plain string) in ``place``:
    ``self.`` attributes the conversion assigns it anywhere, names assigned it in ``place`` itself
    or at module level."""
    tree = planner.tree
    keys: set[str] = set()
    for assign, (target, value) in planner.device_values.items():
        where = tree.function_of(assign)
        if value.endswith(".device") and (
            target.startswith("self.") or where is place or isinstance(where, cst.Module)
        ):
            keys.add(target)
    if place is planner.scope:
        for line in planner.after_accelerator:  # a handed device parameter: `device = accelerator.device`
            target, _, value = line.partition(" = ")
            if value.endswith(".device"):
                keys.add(target)
    return keys


def _location(call: cst.Call) -> cst.Arg | None:
    for index, arg in enumerate(call.args):
        if (arg.keyword is not None and arg.keyword.value == "map_location") or (arg.keyword is None and index == 1):
            return arg
    return None


def _reads_device(value: cst.BaseExpression, place: Function, devices: set[str]) -> bool:
    """``device`` / ``self.device``, ``str(device)``, or a local of ``place`` assigned one of them."""
    if key_of(value) in devices or _stringified(value, devices):
        return True
    if not isinstance(value, cst.Name):
        return False
    assigned = [
        target[1]
        for assign in find_all(place, cst.Assign, enter_functions=False)
        if (target := single_target(assign)) is not None and target[0] == value.value
    ]
    return len(assigned) == 1 and (key_of(assigned[0]) in devices or _stringified(assigned[0], devices))


def _stringified(value: cst.BaseExpression, devices: set[str]) -> bool:
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value == "str"
        and len(value.args) == 1
        and key_of(value.args[0].value) in devices
    )
