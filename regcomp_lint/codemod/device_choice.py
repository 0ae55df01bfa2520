"""Which device values the script chose, and where it chose the CPU.

Only a device the script picked is the user's choice: a command-line flag (``args.device``), a
value it assigns (``args.device = "cuda:{}".format(args.local_rank)``), an ``if``/``else`` over
where to run. The ``.device`` of a tensor or a module (``y.to(y_hat.device)``) follows that
object, never the user, so a conversion must leave it alone.
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.roles import bindings
from regcomp_lint.codemod.tree import (
    Function,
    Tree,
    argument_for,
    code,
    dotted,
    find_all,
    is_main_guard,
    key_of,
    methods_of,
    single_target,
)
from regcomp_lint.knowledge import torch_api

#: methods of ``argparse.ArgumentParser`` whose result is the command line's namespace
_COMMAND_LINE_PARSES = frozenset({"parse_args", "parse_known_args", "parse_intermixed_args"})
#: the option ``torch.distributed.launch`` passes and ``torchrun`` / ``accelerate launch`` do not
#: (torch/distributed/launch.py; accelerate/commands/launch.py passes no such option)
LOCAL_RANK_OPTIONS = ("--local_rank", "--local-rank")


def is_chosen_device(tree: Tree, value: cst.Attribute, function: Function) -> bool:
    """Is ``value`` (``args.device``, ``cfg.train.device``), read in ``function``, a device the
    script chose rather than the device of a tensor or model it holds (``y_hat.device``)?

    The root name decides: a command-line namespace, a parameter, or a global we cannot see
    bound are the user's; a local (or module-level) name bound from anything but
    ``parser.parse_args()`` is an object that lives on a device (a tensor, a batch, a model).
    A key the script assigns itself (``args.device = ...``) is always its choice."""
    key = dotted(value)
    if key is None:
        return False
    if key in assigned_device_keys(tree):
        return True
    root = key.split(".")[0]
    for place in (function, tree.module):
        if tree.is_parameter(root, place):
            return not _handed_objects(tree, place, root, 0)
        found = bindings(place, root)
        if found and place is function and kept_config(tree, function, root) is not None:
            return True  # `cfg = self.cfg` of the config __init__ was handed (swara_jepa's _build_model)
        if found:
            return any(_is_command_line(node) for node in found)
    return True


def kept_config(tree: Tree, function: Function, name: str) -> str | None:
    """``self.cfg`` when ``name`` is bound in ``function`` (a method) only as ``name =
    self.cfg``, and its class's ``__init__`` keeps its parameter there (``self.cfg = cfg``): a
    config the caller handed in, not an object that lives on a device. None otherwise."""
    if not isinstance(function, cst.FunctionDef):
        return None
    values = [t[1] for b in bindings(function, name) if (t := single_target(b)) is not None]
    if len(values) != len(bindings(function, name)) or not values:
        return None
    keys = {dotted(v) for v in values}
    attribute = keys.pop() if len(keys) == 1 else None
    if attribute is None or not attribute.startswith("self.") or attribute.count(".") != 1:
        return None
    cls = tree.class_of(function)
    init = next((m for m in methods_of(cls) if m.name.value == "__init__"), None) if cls is not None else None
    if init is None:
        return None
    kept = [t[1] for b in bindings(init, attribute) if (t := single_target(b)) is not None]
    if len(kept) != 1 or not isinstance(kept[0], cst.Name) or not tree.is_parameter(kept[0].value, init):
        return None
    return attribute if not _handed_objects(tree, init, kept[0].value, 0) else None


def _handed_objects(tree: Tree, function: Function, name: str, depth: int) -> bool:
    """Every call of ``function`` in the file fills its parameter ``name`` with an object its
    caller holds: a name bound there from anything but the command line (survey21c kd_addsum's
    ``evaluate(student, ...)`` and ``evaluate(teacher, ...)``, whose ``.to(model.device)``
    follows the model handed in), or one handed to the caller so in turn. False when the file
    never calls it, or a call passes the command line's namespace, a literal or an expression."""
    if not isinstance(function, cst.FunctionDef) or depth > 2:
        return False
    calls = [
        parent
        for ref in tree.references_to(function)
        if isinstance(parent := tree.parent(ref), cst.Call) and parent.func is ref
    ]
    if not calls:
        return False
    for call in calls:
        value = argument_for(tree, function, call, name)
        if not isinstance(value, cst.Name):
            return False
        caller = tree.function_of(call)
        if tree.is_parameter(value.value, caller):
            if not _handed_objects(tree, caller, value.value, depth + 1):
                return False
            continue
        found = bindings(caller, value.value) or bindings(tree.module, value.value)
        if not found or any(_is_command_line(node) for node in found):
            return False
    return True


def assigned_device_keys(tree: Tree, function: Function | None = None) -> set[str]:
    """Keys like ``args.device`` that the script (or ``function``, not its nested defs) assigns
    itself; never ``self.device``, which the trainer class conversion handles as its ``device``."""
    found: set[str] = set()
    where = tree.module if function is None else function
    for assign in find_all(where, cst.Assign, enter_functions=function is None):
        key = dotted(assign.targets[0].target) if len(assign.targets) == 1 else None
        if key is not None and is_device_attribute_key(key):
            found.add(key)
    return found


def is_device_attribute_key(key: str) -> bool:
    parts = key.split(".")
    return len(parts) > 1 and parts[-1] == "device" and parts[0] not in ("self", "accelerator")


def _is_command_line(node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.Assign):
        return False
    value = node.value.value if isinstance(node.value, cst.Subscript) else node.value  # parse_known_args()[0]
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in _COMMAND_LINE_PARSES
    )


def is_cpu_value(node: cst.BaseExpression) -> bool:
    """``"cpu"`` or ``torch.device("cpu")``."""
    return _is_device_of_kind(node, "cpu")


def is_cuda_value(node: cst.BaseExpression) -> bool:
    """``"cuda"`` or ``torch.device("cuda")``."""
    return _is_device_of_kind(node, "cuda")


def _is_device_of_kind(node: cst.BaseExpression, kind: str) -> bool:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value == kind
    if isinstance(node, cst.Call) and code(node.func).endswith("device") and len(node.args) == 1:
        return _is_device_of_kind(node.args[0].value, kind)
    return False


def mps_or_cpu_condition(choice: cst.IfExp) -> str | None:
    """``"mps" if torch.backends.mps.is_available() else "cpu"`` (crnn_ocr, survey 23d): a choice
    that never names CUDA. Accelerate's own choice would be CUDA on a CUDA machine, so the CPU
    branch's condition is kept as ``cpu=`` even where the test reads only torch; Accelerate picks
    MPS before CUDA (``PartialState.default_device``), so ``cpu=False`` there is MPS. Several
    processes must still be joined on the CPU (gloo has no MPS): the caller adds that
    (hand_distribution.join_processes_without_cuda). None for any other choice."""
    if _is_device_of_kind(choice.body, torch_api.MPS_DEVICE) and is_cpu_value(choice.orelse):
        return negated(choice.test)
    if is_cpu_value(choice.body) and _is_device_of_kind(choice.orelse, torch_api.MPS_DEVICE):
        return _parenthesised(code(choice.test).strip())
    return None


def earlier_choices(tree: Tree, choice: cst.IfExp) -> list[cst.IfExp]:
    """The choices ``choice`` is the last branch of, outermost first: in ``"cuda" if args.cuda
    else "mps" if torch.backends.mps.is_available() else "cpu"`` the script reaches the inner
    choice only when ``args.cuda`` fails, so its CPU condition holds only with ``not args.cuda``."""
    found: list[cst.IfExp] = []
    node: cst.CSTNode = choice
    while isinstance(parent := tree.parent(node), cst.IfExp) and parent.orelse is node:
        found.append(parent)
        node = parent
    found.reverse()
    return found


def branch_condition(tree: Tree, stmt: cst.CSTNode) -> tuple[str, list[cst.BaseExpression]] | None:
    """The condition under which ``stmt`` runs when it sits in an ``if``/``elif``/``else`` branch
    (``args.cpu``, ``not use_accel``, ``not a and b`` for an ``elif b``) and the tests it reads,
    else None."""
    parts: list[str] = []
    tests: list[cst.BaseExpression] = []
    node: cst.CSTNode = stmt
    for anc in tree.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.Module, cst.ClassDef)) or is_main_guard(anc):
            break  # `if __name__ == "__main__":` always runs when the script trains
        if isinstance(anc, cst.If):
            tests.append(anc.test)
            if tree.contains(anc.body, node):
                parts.append(_parenthesised(code(anc.test).strip()))
            else:
                parts.append(negated(anc.test))
            parent = tree.parent(anc)
            if not (isinstance(parent, (cst.If, cst.Else))):
                break  # the outermost if of an if/elif chain
        node = anc
    if not parts:
        return None
    parts.reverse()
    return " and ".join(parts), tests


def only_moves_devices(body: cst.BaseSuite) -> bool:
    """Does this ``if`` body do nothing but move things to the GPU (``model.cuda()``,
    ``criterion = criterion.cuda()``)? Only then is its test a switch for the GPU."""
    statements = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else []
    smalls: list[cst.CSTNode] = []
    for stmt in statements:
        if not isinstance(stmt, (cst.SimpleStatementLine, cst.BaseSmallStatement)):
            return False
        smalls += list(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else [stmt]
    for small in smalls:
        value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
        values = (
            [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
        )  # a, b = a.cuda(), b.cuda()
        if not all(_is_move(v) for v in values):
            return False
    return bool(smalls)


def _is_move(value: cst.BaseExpression | None) -> bool:
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in ("cuda", "to")
    )


def negated(test: cst.BaseExpression) -> str:
    """``not <test>`` as source: ``not x`` for a plain name, ``x`` for ``not x``, else ``not (...)``."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return code(test.expression).strip()
    text = code(test).strip()
    return f"not ({text})" if " " in text else f"not {text}"


def _parenthesised(text: str) -> str:
    return f"({text})" if " " in text else text


def local_rank_option(tree: Tree) -> cst.Call | None:
    """``parser.add_argument("--local_rank", ...)``: the rank ``torch.distributed.launch`` passes
    on the command line, which ``accelerate launch`` and ``torchrun`` never do."""
    for call in find_all(tree.module, cst.Call):
        if (
            isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "add_argument"
            and any(
                isinstance(arg.value, cst.SimpleString) and arg.value.evaluated_value in LOCAL_RANK_OPTIONS
                for arg in call.args
                if arg.keyword is None
            )
        ):
            return call
    return None


def local_rank_note(tree: Tree) -> str | None:
    """What a converted script that reads its rank from ``--local_rank`` must be told, when its
    default cannot be made to read ``LOCAL_RANK`` (:func:`local_rank_from_env`)."""
    option = local_rank_option(tree)
    if option is None:
        return None
    return (
        f"the rank option at line {tree.line(option)} (--local_rank) is passed only by python -m "
        "torch.distributed.launch; accelerate launch and torchrun leave it at its default on every process, so "
        "code that tests it (rank-0 logging, sampling, saving) runs on every process and per-rank seeds are equal; "
        "read accelerator.local_process_index or accelerator.is_main_process there"
    )


def visible_devices_note(tree: Tree) -> str | None:
    """A script that sets ``CUDA_VISIBLE_DEVICES`` itself (``os.environ["CUDA_VISIBLE_DEVICES"] =
    "0"``, ``setdefault``) pins every process of a launch to the same GPUs: accelerate launch on
    several GPUs puts process N on cuda:N, which then does not exist."""
    for node in find_all(tree.module, (cst.Assign, cst.Call)):
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
            if any(isinstance(t, cst.Subscript) and _visible_devices_key(tree, t) for t in targets):
                return _visible_devices_text(tree, node)
        elif (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "setdefault"
            and tree.resolves_to(node.func.value, "os.environ")
            and node.args
            and _is_visible_devices(node.args[0].value)
        ):
            return _visible_devices_text(tree, node)
    return None


def _visible_devices_key(tree: Tree, target: cst.Subscript) -> bool:
    element = target.slice[0].slice if len(target.slice) == 1 else None
    return (
        tree.resolves_to(target.value, "os.environ")
        and isinstance(element, cst.Index)
        and _is_visible_devices(element.value)
    )


def _is_visible_devices(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "CUDA_VISIBLE_DEVICES"


def _visible_devices_text(tree: Tree, node: cst.CSTNode) -> str:
    return (
        f"CUDA_VISIBLE_DEVICES set at line {tree.line(node)} pins every process to the same GPUs: under "
        "accelerate launch on several GPUs process N runs on cuda:N, which it then cannot see; drop the setting "
        "and choose the GPUs with accelerate launch --gpu_ids (one process: CUDA_VISIBLE_DEVICES in the shell)"
    )


def local_rank_from_env(tree: Tree) -> tuple[cst.Call, str] | None:
    """``parser.add_argument("--local_rank", type=int, default=-1)`` -> ``default=os.environ.get(
    "LOCAL_RANK", -1)``, PyTorch's own advice for moving from ``torch.distributed.launch`` to
    ``torchrun``: both ``torchrun`` and ``accelerate launch`` (several processes) set ``LOCAL_RANK``
    and pass no option, so the script's ``if args.local_rank != -1:`` set-up, its sampler and its
    rank-0 saves would otherwise see -1 on every process (every rank on the whole data). argparse
    converts a string default with ``type``; a run without the variable keeps the old default, and
    ``torch.distributed.launch`` still passes the option. Returns (option, new default source), or
    None when the option has no ``type=int`` and no literal default to convert."""
    option = local_rank_option(tree)
    if option is None:
        return None
    typed = any(
        a.keyword is not None and a.keyword.value == "type" and code(a.value).strip() == "int" for a in option.args
    )
    default = next((a for a in option.args if a.keyword is not None and a.keyword.value == "default"), None)
    if default is not None and not isinstance(default.value, (cst.Integer, cst.UnaryOperation, cst.Name)):
        return None  # a computed default: left as it is, with the note
    fallback = code(default.value).strip() if default is not None else "None"
    if typed:
        value = f'os.environ.get("LOCAL_RANK", {fallback})'
    elif isinstance(default.value if default is not None else None, (cst.Integer, cst.UnaryOperation)):
        value = f'int(os.environ.get("LOCAL_RANK", {fallback}))'
    else:
        return None
    return option, value


def gpu_choice_keys(tree: Tree) -> set[str]:
    """Keys the script hands to ``torch.cuda.set_device`` (``args.gpu``, ``local_rank``): the one
    GPU it picked, which under several processes must be each process's own."""
    found: set[str] = set()
    if "set_device" not in tree.text:
        return found  # (no name can resolve to it: every spelling, an import's too, holds the word)
    for call in find_all(tree.module, cst.Call):
        if len(call.args) == 1 and tree.resolves_to(call.func, "torch.cuda.set_device"):
            key = dotted(call.args[0].value)
            if key is not None:
                found.add(key)
    return found


#: Words that make an expression a device index rather than a dtype (``.to(self.gpu_id)``).
_INDEX_WORDS = ("gpu", "device", "rank", "cuda")


def choice_text(expr: cst.BaseExpression) -> str:
    """An expression's text with one quote style: ``CONFIG["device"]`` and ``CONFIG['device']`` match."""
    return code(expr).strip().replace('"', "'")


def model_gpu_choices(tree: Tree, models: set[str]) -> set[str]:
    """The expressions the script places its model with (``.cuda(device_ids[0])``,
    ``self.model = model.to(gpu_id)``), and the ``self.x`` attributes that keep them
    (``self.gpu_id = gpu_id``): one fixed GPU, which the batches follow with ``.to(...)``. Under
    several processes each must be the process's own device (the DDP tutorial's ``device = 0``)."""
    found: set[str] = set()
    index_keys = compared_with_an_index(tree)
    for call in find_all(tree.module, cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and call.args and call.args[0].keyword is None):
            continue
        arg = call.args[0].value
        if isinstance(arg, (cst.SimpleString, cst.FormattedString, cst.Integer)) or tree.is_module_reference(arg):
            continue
        text = choice_text(arg)
        name = dotted(arg)
        if not any(word in text.lower() for word in _INDEX_WORDS) or (
            name is not None and name.split(".")[-1] == "device" and name not in index_keys
        ):
            continue  # a dtype; or a `device` variable, whose assignment the conversion rewrites itself
        if func.attr.value == "cuda":
            found.add(text)
        elif func.attr.value == "to":
            parent = tree.parent(call)
            target = single_target(parent) if isinstance(parent, cst.Assign) and parent.value is call else None
            if key_of(func.value) in models or (target is not None and target[0] in models):
                found.add(text)
    if not found:  # (nothing to keep: no value can match, and none is printed to find out)
        return found
    for assign in find_all(tree.module, cst.Assign):
        target = single_target(assign)
        if target is not None and target[0].startswith("self.") and choice_text(target[1]) in found:
            found.add(target[0])
    return found


def compared_with_an_index(tree: Tree) -> set[str]:
    """Keys the script compares with a whole number (``if self.device == 0:``, the rank-0 check of
    a DDP course script whose trainer keeps the mp.spawn index as ``self.device``): they hold a
    process index, not a device, so their assignment stays as written (``accelerator.device`` is
    never equal to ``0``) and the placements that read them follow the accelerator instead."""
    found: set[str] = set()
    for comparison in find_all(tree.module, cst.Comparison):
        if len(comparison.comparisons) != 1:
            continue
        target = comparison.comparisons[0]
        if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            continue
        sides = (comparison.left, target.comparator)
        for side, other in (sides, sides[::-1]):
            key = dotted(side)
            if key is not None and isinstance(other, cst.Integer):
                found.add(key)
    return found


def reads_gpu_choice(value: cst.BaseExpression, keys: set[str]) -> bool:
    """``args.gpu`` or ``f"cuda:{args.gpu}"`` for a key the script set its GPU from."""
    if dotted(value) in keys:
        return True
    if isinstance(value, cst.FormattedString):
        parts = value.parts
        return (
            len(parts) == 2
            and isinstance(parts[0], cst.FormattedStringText)
            and parts[0].value == "cuda:"
            and isinstance(parts[1], cst.FormattedStringExpression)
            and dotted(parts[1].expression) in keys
        )
    return False
