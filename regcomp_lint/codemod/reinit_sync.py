"""The prepared model's parameters drawn again, in place, after ``prepare()``.

DDP broadcasts process 0's weights once, when ``prepare()`` wraps the model, and never again:
ABSA-PyTorch's ``run()`` builds the optimizer, then calls ``self._reset_params()`` (``xavier_uniform_``
/ ``uniform_`` on every parameter) in its repeat loop, and a training function may call
``model.apply(weights_init)`` in its run loop. Converted with ``prepare()`` after the optimizer,
each process draws its own values there and the replicas train apart for the whole run.

Such a call, as a statement of the scope after the ``prepare()`` point (in a loop too), or of a
training function the scope calls only after that point (``fit(net, ...)`` opening with
``net.apply(init)``: the copy goes right after the draw there, with ``fit``'s names for the model
and the accelerator, since a copy after ``fit()`` returns would follow its training), is
followed by a copy of process 0's values to every process (``accelerate.utils.broadcast``: a
no-op on one process, ``torch.distributed.broadcast`` on several). A call that runs once, before
the training, moves ``prepare()`` past it instead (``PlainPlanner._after_model_setup``).

A call counts when it draws the model's parameters anew in place: ``model.apply(f)`` or
``f(model)`` with ``f`` a function of the file whose body calls a random ``torch.nn.init``
function or ``uniform_`` / ``normal_`` (or ``copy_`` / ``fill_`` from a ``torch.rand*`` draw; ``f``
of another module of the project is read there, or, not beside the script, taken by its name),
``self.m()`` for such a method of the trainer class that reads the model,
``model.reset_parameters()``, ``model.m()`` for such a method of a class of the file, a
``for p in model.parameters():`` loop that does so, and ``model = reset(model)`` when ``reset``
returns the model it was handed (one that returns anything else is refused: the name would no
longer hold the prepared model). Constant writes and copies (an EMA's
``copy_``) are the same on every process and get no sync.

"Whose body" reaches through the calls the function makes to the file's own code, up to
``MAX_CALL_DEPTH`` calls deep (each function once, so recursion ends): ``reset(model)`` calling
``init_params(net)``, ``net.apply(init)`` or ``net.init_weights()`` is a re-initialisation like a
direct one. A called function that also trains (a ``.backward()`` among what it reaches) is not:
a copy after it returns would come after its training, too late. A method of a class called on
the model and returning a value (``model.sample()``) is called for that value, not to re-draw the
weights.

The copy is for processes that each hold the whole model (DDP; a no-op on one process), so it
runs only when ``accelerator.distributed_type`` is neither FSDP nor DeepSpeed. Under FSDP each
process holds its own shard of every parameter: the shards drawn apart make one model, and a
broadcast of them is wrong (FSDP1's flat shards differ by design) or fails (FSDP2's DTensors:
"c10d.broadcast_.default does not have a sharding strategy registered", 2 gloo processes,
torch 2.13). DeepSpeed's engine keeps the weights its optimizer steps in its own partitions, so
an in-place draw after ``prepare()`` does not reach them. What is not made right there (a fan-based
``xavier_`` / ``kaiming_`` init of FSDP1's flat shards, the draw lost under DeepSpeed) the note
says: re-initialise before ``prepare()`` for those launches.

A seed right before the draw (``torch.manual_seed(0)``) still gets the copy: the draw is alike
on every process only while every process's random stream is alike up to there, which the
conversion cannot see, and the copy holds either way for one broadcast per re-initialisation.
A draw before ``prepare()`` needs nothing: DDP copies process 0's weights when it wraps them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import statement
from regcomp_lint.codemod.local_modules import imported_function, importer_of, is_project_module, load_local
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import Block, Function, Tree, code, find_all, key_of, method_named, read_keys
from regcomp_lint.codemod.wrapped_access import called_after_prepare, handed_the_model, sees_prepared
from regcomp_lint.knowledge import accelerate_api
from regcomp_lint.knowledge.accelerate_api import BROADCAST_IMPORT, DISTRIBUTED_TYPE_IMPORT

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner

#: tensor methods that draw new values in place (what random initialisers end with)
RANDOM_IN_PLACE = frozenset(
    {
        "normal_",
        "uniform_",
        "bernoulli_",
        "exponential_",
        "geometric_",
        "cauchy_",
        "log_normal_",
        "random_",
        "reset_parameters",
    }
)
#: in-place writes that draw nothing themselves: random only when the values written are
COPYING_IN_PLACE = frozenset({"copy_", "fill_"})
INIT_MODULE = "torch.nn.init"
#: ``torch.nn.init`` functions that write constants (the same on every process)
CONSTANT_INITS = frozenset({"zeros_", "ones_", "constant_", "eye_", "dirac_", "calculate_gain"})
#: torch functions that draw random values (``p.data.copy_(torch.randn_like(p) * 0.02)``)
RANDOM_SOURCES = ("torch.rand", "torch.randn", "torch.randint", "torch.randperm", "torch.normal", "torch.bernoulli")
PARAMETER_WALKS = ("parameters", "named_parameters")
#: How many calls deep the file's own functions are followed from the statement after prepare().
MAX_CALL_DEPTH = 4
SYNC_FUNCTION = BROADCAST_IMPORT
#: Names a project function is given when it draws a model's weights (BasicSR's ``init_weights``,
#: pix2pix's ``init_net``, the DCGAN example's ``weights_init``, ``initialize_weights``): read
#: by name only where its module is not beside the script (:func:`initialiser_by_name`).
INITIALISER_NAME = re.compile(
    r"^(init_(weights|params|parameters|net|model)|weights?_init\w*|initiali[sz]e_(weights|params|parameters|model))$"
)
#: what the copy is guarded by: the launches whose processes hold shards, not replicas
GUARD_TYPE = DISTRIBUTED_TYPE_IMPORT
GUARD_TYPE_NAMES = (
    "accelerate.DistributedType",
    "accelerate.utils.DistributedType",
    "accelerate.utils.dataclasses.DistributedType",
)
SHARDED_TYPES = "(DistributedType.FSDP, DistributedType.DEEPSPEED)"


def draws_in_place(tree: Tree, function: cst.CSTNode) -> bool:
    """``function``'s own code writes tensors in place with values drawn at random, different on
    each process: a random ``torch.nn.init`` function, ``uniform_`` / ``normal_`` /
    ``reset_parameters()``, or a ``copy_`` / ``fill_`` beside a ``torch.rand*`` draw. Constants and
    copies of what every process holds alike (an EMA's ``copy_``) keep the processes in step."""
    copies = random = False
    for call in find_all(function, cst.Call, enter_functions=False):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in RANDOM_IN_PLACE:
            return True
        init = tree.resolves_under(func, INIT_MODULE)
        if init is not None and init.rsplit(".", 1)[-1] not in CONSTANT_INITS:
            return True
        if isinstance(func, cst.Attribute) and func.attr.value in COPYING_IN_PLACE:
            copies = True
        name = next(iter(sorted(tree.imported_names(func))), "")
        if any(name == r or name.startswith(r + "_") or name == r + "_like" for r in RANDOM_SOURCES):
            random = True
    return copies and random


def _callees(tree: Tree, node: cst.CSTNode) -> Iterator[cst.FunctionDef]:
    """The file's functions that the calls in ``node`` (not in functions nested in it) run: a
    module-level function by name, ``self.m()`` of the enclosing class, the function handed to
    ``.apply(f)``, and ``x.m()`` for methods ``m`` of the file's classes."""
    owner = tree.class_of(tree.function_of(node)) if not isinstance(node, cst.FunctionDef) else tree.class_of(node)
    for call in find_all(node, cst.Call, enter_functions=False):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "apply" and call.args:
            yield from _named_function(tree, call.args[0].value, owner)
        yield from _named_function(tree, func, owner)
        if isinstance(func, cst.Attribute) and not (isinstance(func.value, cst.Name) and func.value.value == "self"):
            yield from _class_methods(tree, func.attr.value)


def _named_function(tree: Tree, name: cst.BaseExpression, owner: cst.ClassDef | None) -> Iterator[cst.FunctionDef]:
    function = _file_function(tree, name)
    if function is not None:
        yield function
    elif isinstance(name, cst.Attribute) and isinstance(name.value, cst.Name) and name.value.value == "self":
        method = method_named(owner, name.attr.value)
        if method is not None:
            yield method


#: the last module seen (by identity, one kept): the methods of its top-level classes by name
_method_index: dict[int, tuple[cst.Module, dict[str, list[cst.FunctionDef]]]] = {}


def _class_methods(tree: Tree, name: str) -> list[cst.FunctionDef]:
    """The methods called ``name`` of the file's top-level classes, indexed once per module: a
    script of many classes would otherwise be scanned again for each ``x.m()`` call followed."""
    hit = _method_index.get(id(tree.module))
    if hit is None or hit[0] is not tree.module:
        index: dict[str, list[cst.FunctionDef]] = {}
        for cls in tree.module.body:
            if isinstance(cls, cst.ClassDef) and isinstance(cls.body, cst.IndentedBlock):
                for method in cls.body.body:
                    if isinstance(method, cst.FunctionDef):
                        index.setdefault(method.name.value, []).append(method)
        _method_index.clear()
        hit = _method_index[id(tree.module)] = (tree.module, index)
    return hit[1].get(name, [])


def _reached(tree: Tree, start: cst.CSTNode) -> list[cst.CSTNode]:
    """``start`` and the file's functions its calls reach, ``MAX_CALL_DEPTH`` calls deep at most,
    each once."""
    found: list[cst.CSTNode] = [start]
    frontier: list[cst.CSTNode] = [start]
    for _ in range(MAX_CALL_DEPTH):
        following: list[cst.CSTNode] = []
        for node in frontier:
            for callee in _callees(tree, node):
                if all(callee is not f for f in found):
                    found.append(callee)
                    following.append(callee)
        frontier = following
    return found


def redraws(tree: Tree, start: cst.CSTNode) -> bool:
    """Running ``start`` (a function, or a loop body) draws tensors anew in place, itself or
    through the file's functions it calls, and trains nothing on the way (a ``.backward()``
    there: a copy made once it returns would be too late)."""
    reached = _reached(tree, start)
    if any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward"
        for node in reached
        for c in find_all(node, cst.Call, enter_functions=False)
    ):
        return False
    return any(draws_in_place(tree, node) for node in reached)


def _returns_value(function: cst.FunctionDef) -> bool:
    return any(r.value is not None for r in find_all(function, cst.Return, enter_functions=False))


def _model_of(node: cst.CSTNode, models: list[str]) -> str | None:
    """The prepared model ``node`` is (``model``, ``self.model``) or a submodule of (``model.fc``)."""
    while True:
        key = key_of(node)
        if key in models:
            return key
        if not isinstance(node, cst.Attribute):
            return None
        node = node.value


def _file_function(tree: Tree, name: cst.BaseExpression) -> cst.FunctionDef | None:
    if not isinstance(name, cst.Name):
        return None
    # (``type(x) is``: see tree.key_of)
    return next((f for f in tree.module.body if type(f) is cst.FunctionDef and f.name.value == name.value), None)


def reinitialised_model(
    planner: PlainPlanner, stmt: cst.CSTNode, models: list[str] | None = None, where: Function | None = None
) -> str | None:
    """The prepared model whose parameters ``stmt`` (a statement) writes in place, else None;
    ``models``: how ``where`` (the scope unless given) names the prepared models."""
    tree = planner.tree
    models = list(planner.models) if models is None else models
    where = planner.scope if where is None else where
    if isinstance(stmt, cst.For):
        it = stmt.iter
        if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute)):
            return None
        model = _model_of(it.func.value, models) if it.func.attr.value in PARAMETER_WALKS else None
        return model if model is not None and redraws(tree, stmt.body) else None
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        return _rebound_after_redraw(tree, stmt, stmt.body[0], models)
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)):
        return None
    call = stmt.body[0].value
    if not isinstance(call, cst.Call):
        return None
    func = call.func
    if isinstance(func, cst.Attribute):
        model = _model_of(func.value, models)
        if model is not None:
            if func.attr.value == "reset_parameters":
                return model
            if func.attr.value == "apply" and call.args:
                initialiser = call.args[0].value
                applied = _file_function(tree, initialiser)
                if applied is not None:
                    return model if redraws(tree, applied) else None
                # `net.apply(weights_init)` with it from another module: read there, or taken by its name
                drawn = redraws_elsewhere(tree, initialiser) or initialiser_by_name(tree, initialiser) is not None
                return model if drawn else None
            methods = _class_methods(tree, func.attr.value)
            if any(not _returns_value(m) and redraws(tree, m) for m in methods):  # model.init_weights()
                return model
            return None
        if isinstance(func.value, cst.Name) and func.value.value == "self":  # self._reset_params()
            method = method_named(tree.class_of(where), func.attr.value)
            if method is None or not redraws(tree, method):
                return None
            read = {key for node in _reached(tree, method) for key in read_keys(node)}
            return next((m for m in models if m in read), None)
        return None
    handed = [m for m in (_model_of(a.value, models) for a in call.args if not a.star) if m is not None]
    if handed:
        function = _file_function(tree, func)
        if function is not None and redraws(tree, function):
            return handed[0]
        if function is None and (redraws_elsewhere(tree, func) or initialiser_by_name(tree, func) is not None):
            return handed[0]
    return None


def drawn_after_the_wrap(planner: PlainPlanner, wraps: list[cst.Call]) -> list[str]:
    """Notes for the statements that draw a model's weights again after the script's own DDP wrap of
    it, in the function that wraps it (survey 24d's VanilaGAN: ``netG = DDP(netG)`` then
    ``netG.apply(weights_init)``, unseeded). DDP copies process 0's weights only when it wraps, so
    in the original each process drew its own there and, unless every process's random stream was
    alike, the replicas trained apart (by the same offset at every step: DDP averages the gradients
    only). Converted, prepare() wraps after the draw (or a copy from process 0 follows it), so every
    process trains from process 0's draw: what DDP assumes, and kept, with this note."""
    tree = planner.tree
    notes: list[str] = []
    for wrap in wraps:
        line = tree.line(wrap)
        assign = tree.parent(wrap)
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            continue
        model = key_of(assign.targets[0].target)
        if model is None:
            continue
        where = tree.function_of(wrap)
        for stmt in find_all(where, (cst.SimpleStatementLine, cst.For), enter_functions=False):
            if tree.line(stmt) > line and reinitialised_model(planner, stmt, [model], where) == model:
                source = code(stmt.body[0]).strip() if isinstance(stmt, cst.SimpleStatementLine) else "for ..."
                notes.append(
                    f"{source} at line {tree.line(stmt)} draws {model}'s weights again after its DDP wrap (line "
                    f"{line}): in the original each process drew its own there (DDP copies process 0's weights only "
                    "when it wraps), so unless every process's random stream was alike the replicas trained apart; "
                    "converted, every process trains from process 0's draw, as DDP assumes"
                )
    return notes


def initialiser_by_name(tree: Tree, func: cst.BaseExpression) -> str | None:
    """The name of ``func`` when it is imported from a project module whose file is not beside
    the script and is named as an initialiser (:data:`INITIALISER_NAME`): survey 22c's ESRGAN
    trainer calls ``init_weights(netD, ...)`` from models/networks.py, which it does not ship.
    Taken as a draw: the copy from process 0 that follows is a no-op where the processes already
    agree, so a wrong guess costs one broadcast, a missed draw a run of replicas training apart."""
    if not isinstance(func, cst.Name) or not INITIALISER_NAME.match(func.value):
        return None
    qualname = next(iter(sorted(tree.imported_names(func))), "")
    if "." not in qualname or not is_project_module(qualname) or tree.filename is None:
        return None
    if load_local(importer_of(tree.filename), qualname.rsplit(".", 1)[0]) is not None:
        return None  # read: what it does is known (redraws_elsewhere)
    return func.value


def _by_name(tree: Tree, stmt: cst.CSTNode) -> str | None:
    """The initialiser ``stmt`` (``init_weights(model)``) calls, when taken by its name."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr):
        call = stmt.body[0].value
        if isinstance(call, cst.Call):
            return initialiser_by_name(tree, call.func)
    return None


def redraws_elsewhere(tree: Tree, func: cst.BaseExpression) -> bool:
    """``f(model)`` with ``f`` a function of another module of the project (read next to the
    script, ``ast`` only: BasicSR's ``init_weights(net)`` in models/networks.py, which applies
    ``functools.partial(weights_init_kaiming, ...)``): it, or that module's functions it names
    (called, handed to ``.apply`` or to ``partial``), ``MAX_CALL_DEPTH`` deep, draws in place and
    trains nothing, as :func:`redraws` asks of the file's own functions."""
    found = imported_function(tree, func)
    if found is None:
        return False
    parsed, start = found
    reached: list[ast.AST] = [start]
    frontier: list[ast.AST] = [start]
    for _ in range(MAX_CALL_DEPTH):
        named = {
            n.id for node in frontier for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in parsed.functions
        }
        frontier = [
            parsed.functions[name] for name in sorted(named) if all(parsed.functions[name] is not f for f in reached)
        ]
        reached += frontier
    calls = [c for node in reached for c in ast.walk(node) if isinstance(c, ast.Call)]
    if any(isinstance(c.func, ast.Attribute) and c.func.attr == "backward" for c in calls):
        return False
    copies = random = False
    for c in calls:
        attr = c.func.attr if isinstance(c.func, ast.Attribute) else None
        name = parsed.imports.qualname(c.func) or ""
        if attr in RANDOM_IN_PLACE:
            return True
        if name.startswith(INIT_MODULE + ".") and name.rsplit(".", 1)[-1] not in CONSTANT_INITS:
            return True
        copies = copies or attr in COPYING_IN_PLACE
        random = random or any(name == r or name.startswith(r + "_") for r in RANDOM_SOURCES)
    return copies and random


def _rebound_after_redraw(
    tree: Tree, stmt: cst.SimpleStatementLine, assign: cst.Assign, models: list[str]
) -> str | None:
    """``model = reset(model)``: a function of the file that re-initialises the model it is handed
    and returns it, so the name still holds the prepared model; the sync follows the statement as
    it follows ``reset(model)``. A function that re-initialises and returns something else is
    refused: what the name holds afterwards is no longer what prepare() wrapped."""
    found = _redrawn_and_returned(tree, assign)
    if found is None or found[0] not in models:
        return None
    model, returns_it = found
    if returns_it:
        return model
    assert isinstance(assign.value, cst.Call)
    raise Refusal(
        f"{code(stmt).strip()} (line {tree.line(stmt)}) re-initialises the prepared model {model} in place after "
        f"prepare() and binds {model} to what {code(assign.value.func)}() returns, which is not the model it was "
        "handed: re-initialise the model before prepare(), or return the model you were handed, before converting"
    )


def rebinds_itself(tree: Tree, node: cst.CSTNode) -> bool:
    """``model = reset(model)`` where ``reset`` re-initialises the model it is handed and returns
    it: the same object again, not a new model (the planner does not count it as one)."""
    found = _redrawn_and_returned(tree, node) if isinstance(node, cst.Assign) else None
    return found is not None and found[1]


def _redrawn_and_returned(tree: Tree, assign: cst.Assign) -> tuple[str, bool] | None:
    """For ``key = f(..., key, ...)`` with ``f`` a function of the file that re-draws what it is
    handed: ``key`` and whether ``f`` returns that argument on every ``return``; else None."""
    call = assign.value
    if len(assign.targets) != 1 or not isinstance(call, cst.Call):
        return None
    model = key_of(assign.targets[0].target)
    function = _file_function(tree, call.func)
    position = next(
        (i for i, a in enumerate(call.args) if a.keyword is None and not a.star and key_of(a.value) == model), None
    )
    if model is None or function is None or position is None or not redraws(tree, function):
        return None
    params = [*function.params.posonly_params, *function.params.params]
    handed = params[position].name.value if position < len(params) else None
    returned = [r.value for r in find_all(function, cst.Return, enter_functions=False)]
    return model, handed is not None and bool(returned) and all(
        isinstance(v, cst.Name) and v.value == handed for v in returned
    )


def _statements_after(block: Block, start: int) -> Iterator[tuple[Block, int, cst.BaseStatement]]:
    """Every statement of ``block`` from ``start`` on, and of the compound statements among them
    (not of functions or classes), with its block and index."""
    for index in range(start, len(block.body)):
        stmt = block.body[index]
        yield block, index, stmt
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        for inner in _inner_blocks(stmt):
            yield from _statements_after(inner, 0)


def _inner_blocks(stmt: cst.CSTNode) -> list[cst.IndentedBlock]:
    found: list[cst.IndentedBlock] = []
    for part in (
        getattr(stmt, "body", None),
        getattr(stmt, "orelse", None),
        getattr(stmt, "finalbody", None),
        *getattr(stmt, "handlers", ()),
    ):
        if type(part) is cst.IndentedBlock:  # (``type(x) is``: see tree.key_of)
            found.append(part)
        elif part is not None and type(part) is not cst.SimpleStatementSuite:
            found.extend(_inner_blocks(part))  # an else / elif / except clause
    return found


def sync_reinitialised(planner: PlainPlanner, block: Block, prepare_index: int) -> None:
    """After each in-place (re)initialisation of a prepared model that runs after ``prepare()``
    (in the scope, or in a training function it calls afterwards), copy process 0's values to
    every process; a note names the call."""
    tree = planner.tree
    if not planner.models:
        return
    synced: list[str] = []
    for where, body, start, models in _places(planner, block, prepare_index):
        skip: list[cst.CSTNode] = []
        for inner, index, stmt in _statements_after(body, start):
            if any(tree.contains(s, stmt) for s in skip):
                continue
            model = reinitialised_model(planner, stmt, models, where)
            if model is None:
                continue
            skip.append(stmt)
            acc = planner.accelerator_in(where)
            newline = planner.module.default_newline
            sync = statement(
                f"if {acc}.distributed_type not in {SHARDED_TYPES}:{newline}"
                f"    for param in {acc}.unwrap_model({model}, {accelerate_api.REGIONAL_UNWRAP}).parameters():{newline}"
                f"        param.data.copy_(broadcast(param.data))",
                planner.module,
            )
            planner.edits.add_statements(inner, index + 1, [sync], after=True)
            shown = code(stmt).strip().splitlines()[0].rstrip(":")
            named = _by_name(tree, stmt)
            read = f"; {named}() is read by its name, its module not being beside the script" if named else ""
            synced.append(f"{shown} (line {tree.line(stmt)}{read})")
    if synced:
        _refuse_taken_name(tree, "broadcast", (".".join(SYNC_FUNCTION),), "copying process 0's re-initialised weights")
        guard_imported = _refuse_taken_name(tree, "DistributedType", GUARD_TYPE_NAMES, "guarding that copy")
        for needed in (SYNC_FUNCTION, *(() if guard_imported else (GUARD_TYPE,))):
            if needed not in planner.imports:
                planner.imports.append(needed)
        planner.notes.append(
            f"{', '.join(synced)} re-initialises the model's parameters in place after prepare(): DDP copies "
            "process 0's weights only when prepare() wraps the model, so each process would draw its own values "
            "and train a different model; process 0's values are copied to every process right after it "
            "(accelerate.utils.broadcast, a no-op on one process). Not under FSDP or DeepSpeed, whose processes "
            "hold shards (a broadcast of them is wrong or fails): there the re-initialisation is not made right "
            "(FSDP1's flat shards lose the shapes xavier_/kaiming_ need; DeepSpeed's optimizer keeps its own copy "
            "of the weights); re-initialise before prepare() for those launches"
        )


def _places(
    planner: PlainPlanner, block: Block, prepare_index: int
) -> Iterator[tuple[Function, Block, int, list[str]]]:
    """Where a draw runs after ``prepare()``: the scope's statements from the prepare point on, and
    the whole body of each training function the scope calls only after it (``fit(model, ...)``
    drawing on its first line: a copy after ``fit()`` returns would come after its training),
    with the names each gives the prepared models (``net`` when called as ``fit(model)``)."""
    yield planner.scope, block, prepare_index, list(planner.models)
    models = set(planner.models)
    for function in planner.reach():
        if function is planner.scope or not isinstance(function, cst.FunctionDef):
            continue
        if any(f is planner.scope for f in planner.tree.enclosing_functions(function)):
            continue  # defined in the scope: may run before the prepare point
        if not called_after_prepare(planner, function, block, prepare_index):
            continue
        names = [m for m in planner.models if sees_prepared(function, m, planner)]
        names += sorted(handed_the_model(planner, function, models, 0) - set(names))
        if names:
            yield function, planner.tree.body_of(function), 0, names


def _refuse_taken_name(tree: Tree, wanted: str, qualified: tuple[str, ...], purpose: str) -> bool:
    """Refuse a script that names something else ``wanted``; True when it already names the
    accelerate object itself (its import serves)."""
    found = False
    for name in find_all(tree.module, cst.Name):
        parent = tree.parent(name)
        if name.value != wanted or (isinstance(parent, cst.Attribute) and parent.attr is name):
            continue  # dist.broadcast(...)
        importer = tree.parent(parent) if isinstance(parent, cst.ImportAlias) and parent.asname is None else None
        if isinstance(importer, cst.ImportFrom) and importer.module is not None:
            imported = f"{code(importer.module).strip()}.{wanted}"  # the import line itself
        elif tree.resolves_to(name, *qualified):
            imported = qualified[0]
        else:
            imported = ""
        if imported not in qualified:
            raise Refusal(
                f"the script names something '{wanted}' (line {tree.line(name)}), which the conversion needs for "
                f"{qualified[0]} ({purpose}): rename it"
            )
        found = True
    return found
