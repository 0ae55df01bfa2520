"""Values that can differ between processes: the one notion behind the checks that every process
steps alike (:mod:`~regcomp_lint.codemod.uneven_steps`: a loop that ends on such a value;
:mod:`~regcomp_lint.codemod.uneven_guards`: a backward under an ``if`` on one, or after an ``if``
on one that ``continue``s or ``return``s).

A value computed by a call while training runs (``done = env.step(a)``, ``loss.item()``,
``random.random()``) may differ: each process has its own batches, its own losses and its own
draws. Builtins (``len``, ``min``) and the calls the caller knows to be computed alike (an
evaluation of the synchronized model, :mod:`~regcomp_lint.codemod.synced_values`) do not; nor do
a draw from a generator the script builds and seeds with one value (``rng = random.Random(0)``,
``torch.rand(1, generator=g)`` after ``g.manual_seed(0)``), which every process draws alike, nor
a tensor that ``torch.distributed.all_reduce`` or ``broadcast`` made equal on every process, nor
an environment variable other than the rank's (``os.environ.get("CHECK")``). A function of the
file counts as what it returns (``def use_disc(epoch): return epoch >= WARMUP`` does not differ),
and so does a method of an object of the script's own classes that computes what it returns, and
every attribute it keeps, from what it is handed (YOLOv5's ``stopper(epoch=epoch, fitness=fi)``).
A draw from the global generator does, seeded or not: ``torch.manual_seed(0)`` starts every
process's generator alike, but each draws from it as its own data asks (a replica's masks
parted on 6 of 12 steps once each batch drew as many numbers as it had positive targets).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable

import libcst as cst

from regcomp_lint.codemod.object_classes import class_method, returns_what_it_is_handed
from regcomp_lint.codemod.synced_values import loop_evaluates_alike
from regcomp_lint.codemod.tree import Function, Tree, code, find_all, find_own, key_of, read_keys, single_target
from regcomp_lint.knowledge import torch_api

_BUILTINS = frozenset(dir(builtins))
#: Statements of a loop that are its own, not those of a nested loop or def (a loop's ending).
LOOP_OWN = (cst.For, cst.While, cst.FunctionDef, cst.ClassDef)
#: Statements of a function or loop, nested loops included (a flag decided anywhere in them).
NESTED = (cst.FunctionDef, cst.ClassDef)

#: The statements that compute a value into a name or ``self.attr``.
ASSIGNMENTS = (cst.Assign, cst.AugAssign, cst.AnnAssign)

#: Methods of a list, set or dict that put a value into it (``losses.append(epoch_loss)``).
_FILLING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})
#: Tells a call whose value every process computes alike (see :mod:`~regcomp_lint.codemod.synced_values`).
Alike = Callable[[cst.Call], bool]


class PerProcess:
    """What in a script may differ between processes, as read from ``tree``."""

    def __init__(self, tree: Tree, alike: Alike = lambda call: False, sharded: frozenset[str] = frozenset()) -> None:
        self.tree = tree
        self.alike = alike
        #: the loaders the conversion prepares: an evaluation loop over any other reads whole data
        #: (:func:`evaluations_in`)
        self.sharded = sharded
        #: the helpers whose returns are being read (a recursive one counts as the process's own)
        self._reading: set[cst.FunctionDef] = set()
        #: the ``S += <number>`` of epoch sums the conversion gathers across processes after their
        #: batch loop (:mod:`~regcomp_lint.codemod.reduced_sums`): read after it, the same everywhere
        self.summed: set[cst.CSTNode] = set()

    def call_in(self, expr: cst.CSTNode) -> cst.Call | None:
        """A call in ``expr`` whose value may differ between processes: anything but a builtin
        (``len``, ``min``), a call every process computes alike (``alike``), a draw from a
        generator seeded alike and a method of a tensor made equal across processes."""
        for call in find_all(expr, cst.Call):
            if isinstance(call.func, cst.Name) and call.func.value in _BUILTINS or self._computed_alike(call):
                continue
            return call
        return None

    def computed_in(
        self,
        scope: cst.CSTNode,
        name: str,
        stop_at: tuple[type, ...] = LOOP_OWN,
        seen: frozenset[str] = frozenset(),
        fills: bool = True,
        leave_out: tuple[cst.CSTNode, ...] = (),
    ) -> cst.CSTNode | None:
        """``name = <something with a call>`` (or unpacked from one) inside ``scope``'s body
        (what ``stop_at`` leaves in it), followed through plain assignments (``done = terminated
        or truncated``), and through the ``if`` tests that decide an assignment: an
        early-stopping counter (``patience += 1`` under ``if val_loss < best:``, ``val_loss =
        evaluate()``) differs between processes as the value it is decided by does. With
        ``fills=False`` (a test that reads only ``len(name)``) what a call puts into the container
        is no value of it: every process appends as many. What ``leave_out`` holds (nested loops
        every process runs alike, an evaluation of whole data) is not read."""
        if name in self._equalized(scope):
            return None
        body = scope.body if isinstance(scope, (cst.For, cst.While, cst.FunctionDef)) else scope
        writes = self._writes(body, name, stop_at, fills)
        writes = [
            (a, v)
            for a, v in writes
            if a not in self.summed and not any(self.tree.contains(loop, a) for loop in leave_out)
        ]
        for assign, value in writes:
            if value is not None and self._varies(assign, value, name):
                return assign
            reads = set(read_keys(value)) if value is not None else set()
            for test in self.deciding_tests(scope, assign):
                if self.call_in(test) is not None:
                    return assign
                reads |= set(read_keys(test))
            for read in reads - seen - {name}:
                found = self.computed_in(scope, read, stop_at, seen | {name}, leave_out=leave_out)
                if found is not None:
                    return found
        return None

    def _varies(self, assign: cst.CSTNode, value: cst.BaseExpression, name: str) -> bool:
        """``value``, which ``assign`` gives ``name``, calls something that may differ between
        processes. Where the whole call may and it is ``step, model, losses = train(...)`` of a
        function of the file that returns a tuple of that length everywhere, only ``name``'s own
        element counts, with the arguments (survey 26c's BraTS diffusion trainer returns its step
        counter beside the last batch)."""
        if self.call_in(value) is None:
            return False
        helper = self.tree.function_named(value) if isinstance(value, cst.Call) else None
        index = _unpacked_index(assign, name)
        if helper is None or index is None or _returned_arity(helper) != len(_unpacked_targets(assign)):
            return True
        assert isinstance(value, cst.Call)
        return any(self.call_in(arg.value) is not None for arg in value.args) or not self._returns_alike(helper, index)

    def _writes(
        self, body: cst.CSTNode, name: str, stop_at: tuple[type, ...], fills: bool
    ) -> list[tuple[cst.CSTNode, cst.BaseExpression | None]]:
        """Where ``body`` gives ``name`` a value, and that value: an assignment, or a call that
        fills the container it names (survey21c siamese_hw's ``losses.append(running_loss /
        len(train_loader))``, the list an early stop then compares)."""
        found: list[tuple[cst.CSTNode, cst.BaseExpression | None]] = []
        for node in find_own(body, (*ASSIGNMENTS, cst.Call), stop_at):
            if isinstance(node, cst.Call):
                func = node.func
                if (
                    fills
                    and isinstance(func, cst.Attribute)
                    and func.attr.value in _FILLING_METHODS
                    and key_of(func.value) == name
                ):
                    found.append((node, cst.Tuple(elements=[cst.Element(a.value) for a in node.args])))
                continue
            if name in [k for t in targets_of(node) for k in read_keys(t)]:
                found.append((node, node.value))
        return found

    def deciding_tests(self, scope: cst.CSTNode, node: cst.CSTNode) -> list[cst.BaseExpression]:
        """The tests of the ``if``/``elif`` statements inside ``scope`` that ``node`` runs under."""
        tests: list[cst.BaseExpression] = []
        for anc in self.tree.ancestors(node):
            if anc is scope:
                break
            if isinstance(anc, cst.If):
                tests.append(anc.test)
        return tests

    # -- what every process computes alike ------------------------------------------------

    def _computed_alike(self, call: cst.Call) -> bool:
        if self.alike(call) or self._reads_the_shared_environment(call) or self._tests_a_shared_file(call):
            return True
        if self.tree.resolves_under(call.func, *torch_api.PURE_FUNCTION_MODULES) or self.tree.resolves_to(
            call.func, *torch_api.PATH_FUNCTIONS, *torch_api.PURE_NUMPY_FUNCTIONS
        ):
            return True  # math.sqrt(se / n): what it is handed is read on (a call in it, a name's assignments)
        helper = self.tree.function_named(call)
        if helper is not None:
            return self._returns_alike(helper)
        method = class_method(self.tree, self.tree.function_of(call), call)
        if method is not None:  # ``stopper(epoch=epoch, fitness=fi)``: what it is handed is read on
            return returns_what_it_is_handed(method[1], method[2])
        generator = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "generator"), None)
        if generator is not None:
            return self._seeded_alike(generator)
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        receiver = func.value
        if isinstance(receiver, cst.Call):  # torch.rand(1, generator=g).item()
            return self._computed_alike(receiver)
        key = key_of(receiver)
        return key is not None and (self._seeded_alike(receiver) or key in self._equalized(call))

    def _returns_alike(self, helper: cst.FunctionDef, index: int | None = None) -> bool:
        """A function of the file returns what every process computes alike (``return epoch >=
        WARMUP``): no call of its own in what it returns that may differ (``return torch.rand(())
        > 0.5`` does), no local name computed from one, no ``self.`` attribute (set who knows
        where) and no module name some function rebinds (``global``). Its arguments are read
        where it is called. A generator, or a helper already being read (recursion), is not."""
        if helper in self._reading or find_all(helper, (cst.Yield, cst.Await), enter_functions=False):
            return False
        rebound = {n.value for g in find_all(self.tree.module, cst.Global) for n in (a.name for a in g.names)}
        self._reading.add(helper)
        try:
            for ret in find_own(helper.body, cst.Return, NESTED):
                if ret.value is None:
                    continue
                returned = ret.value
                if index is not None:  # one element of the tuple every return hands back
                    assert isinstance(returned, cst.Tuple)
                    returned = returned.elements[index].value
                reads_self = any(
                    isinstance(a.value, cst.Name) and a.value.value == "self" for a in find_all(returned, cst.Attribute)
                )
                if reads_self or self.call_in(returned) is not None:
                    return False
                for name in _read_names(returned):
                    if name in rebound or self.computed_in(helper, name, NESTED) is not None:
                        return False
            return True
        finally:
            self._reading.discard(helper)

    def _reads_the_shared_environment(self, call: cst.Call) -> bool:
        """``os.environ.get("CHECK")``: a variable every process is handed alike (not the rank's)."""
        if not call.args or not self.tree.resolves_to(call.func, *torch_api.ENVIRONMENT_READS):
            return False
        name = call.args[0].value
        return isinstance(name, cst.SimpleString) and not any(
            word in name.evaluated_value.upper() for word in torch_api.PROCESS_NUMBER_WORDS
        )

    def _tests_a_shared_file(self, call: cst.Call) -> bool:
        """``os.path.exists(save_path)`` (:data:`~regcomp_lint.knowledge.torch_api.FILE_TESTS`):
        every process of a launch sees the same file system, so the test is decided alike when its
        path names no process (:func:`per_process_path`, nor a call that may differ) and no
        process can have written the file yet: no call of the script handed the path comes before
        the test in its function, and where one exists at all the test runs in no loop and its
        function is called from none (the main process's write of an earlier pass might land
        between two processes' tests). A call handed the path counts as a write whatever it does.
        A call that only reads the file (:meth:`_reads_only`: ``print(path)``, ``open(path)``, a
        helper of the script that only opens it for reading) writes nothing. Shared across
        machines only where the disk is; byol_spot's cache test before training, fair_cst's test
        of each run's input file in its loop over the runs."""
        if not call.args or not self.tree.resolves_to(call.func, *torch_api.FILE_TESTS):
            return False
        path = call.args[0].value
        function = self.tree.function_of(call)
        if per_process_path(function, path) or self.call_in(path) is not None:
            return False
        names = set(read_keys(path))
        handed = [
            other
            for other in find_all(self.tree.module, cst.Call)
            if other is not call
            and any(names & set(read_keys(a.value)) for a in other.args)
            and not self._reads_only(other, names)
        ]
        if not handed:
            return True
        line = self.tree.line(call)
        if any(self.tree.function_of(w) is function and self.tree.line(w) < line for w in handed):
            return False
        callers = [c for c in find_all(self.tree.module, cst.Call) if self.tree.function_named(c) is function]
        return not any(_in_a_loop(self.tree, site) for site in [call, *callers])

    def _reads_only(self, call: cst.Call, names: set[str], depth: int = 0) -> bool:
        """``call``, handed a path read from ``names``, writes no file: a test of the file, a builtin
        but ``open`` (``print(f"MISSING: {data_path}")``), ``open`` in a mode that only reads, or a
        function of the script that uses each parameter given the path only by handing it to such
        calls (fair_cst's ``load_jsonl(path)``: ``with open(path) as f``), two calls deep at most."""
        func = call.func
        if self.tree.resolves_to(func, *torch_api.FILE_TESTS):
            return True
        helper = self.tree.function_named(call)
        if helper is None:
            if not isinstance(func, cst.Name) or func.value not in _BUILTINS:
                return False
            return func.value != "open" or _reading_mode(call)
        if depth > 1:
            return False
        params = helper.params.params
        for index, arg in enumerate(call.args):
            if not names & set(read_keys(arg.value)):
                continue
            if arg.star or (arg.keyword is None and index >= len(params)):
                return False
            param = arg.keyword.value if arg.keyword is not None else params[index].name.value
            uses = [c for c in find_all(helper, cst.Call) if any(param in read_keys(a.value) for a in c.args)]
            if not all(self._reads_only(use, {param}, depth + 1) for use in uses):
                return False
            handed = {id(n) for use in uses for a in use.args for n in find_all(a.value, cst.Name)}
            if any(n.value == param and id(n) not in handed for n in find_all(helper.body, cst.Name)):
                return False  # kept (`LAST["path"] = path`): what is done with it later is not read here
        return True

    def _seeded_alike(self, generator: cst.BaseExpression) -> bool:
        """``generator`` names a generator of the script's own, seeded with a value every process
        has: ``random.Random(0)``, ``numpy.random.default_rng(args.seed)``, a ``torch.Generator()``
        (whose default seed is fixed) reseeded only by ``g.manual_seed(<alike>)``."""
        key = key_of(generator)
        if key is None:
            return False
        builds = [
            assign.value
            for assign in find_all(self.tree.module, cst.Assign)
            if [key_of(t.target) for t in assign.targets] == [key]
            and isinstance(assign.value, cst.Call)
            and self.tree.resolves_to(assign.value.func, *torch_api.OWN_GENERATORS)
        ]
        if len(builds) != 1:
            return False
        build = builds[0]
        seeded = self.tree.resolves_to(build.func, "torch.Generator") or (
            bool(build.args) and all(self.call_in(a.value) is None for a in build.args)
        )
        for call in find_all(self.tree.module, cst.Call):
            func = call.func
            if (
                isinstance(func, cst.Attribute)
                and key_of(func.value) == key
                and func.attr.value in ("seed", "manual_seed")
            ):
                if not call.args or any(self.call_in(a.value) is not None for a in call.args):
                    return False
                seeded = True
        return seeded

    def _equalized(self, node: cst.CSTNode) -> set[str]:
        """Keys of the tensors that the function around ``node`` all-reduces or broadcasts."""
        function = self.tree.function_of(node)
        found: set[str] = set()
        for call in find_all(function, cst.Call, enter_functions=False):
            func = call.func
            name = self.tree.resolves_under(func, *torch_api.DISTRIBUTED_MODULES)
            if name is None or not call.args or name.rsplit(".", 1)[-1] not in torch_api.EQUALIZING_COLLECTIVES:
                continue
            key = key_of(call.args[0].value)
            if key is not None:
                found.add(key)
        return found


def _reading_mode(call: cst.Call) -> bool:
    """``open(path)``, ``open(path, "rb")``: the mode (second argument or ``mode=``) is absent or a
    string with none of the characters that write."""
    mode = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "mode"), None)
    if mode is None and len(call.args) > 1 and call.args[1].keyword is None:
        mode = call.args[1].value
    if mode is None:
        return True
    if not isinstance(mode, cst.SimpleString):
        return False
    text = mode.evaluated_value
    return isinstance(text, str) and not torch_api.WRITING_MODE_CHARACTERS & set(text)


def _in_a_loop(tree: Tree, node: cst.CSTNode) -> bool:
    """``node`` stands in a loop of its own function."""
    function = tree.function_of(node)
    return any(isinstance(a, (cst.For, cst.While)) and tree.contains(function, a) for a in tree.ancestors(node))


def evaluations_in(
    tree: Tree, loop: cst.While | cst.For, step: cst.CSTNode, sharded: frozenset[str]
) -> tuple[cst.For, ...]:
    """The loops nested in ``loop`` that do not run ``step`` and evaluate alike on every process
    (a DistilBERT fine-tune's ``for batch in val_loader: val_loss += loss.item()`` under
    ``model.eval()``, survey 21e): what they sum is no per-process value."""
    return tuple(
        inner
        for inner in find_all(loop.body, cst.For, enter_functions=False)
        if not tree.contains(inner, step) and loop_evaluates_alike(tree, loop, inner, sharded)
    )


def _read_names(expr: cst.BaseExpression) -> list[str]:
    """The plain names ``expr`` reads (``a.b`` reads ``a``, not ``b``), in source order."""
    attrs = {id(a.attr) for a in find_all(expr, cst.Attribute)}
    return list(dict.fromkeys(n.value for n in find_all(expr, cst.Name) if id(n) not in attrs))


def targets_of(assign: cst.Assign | cst.AugAssign | cst.AnnAssign) -> list[cst.BaseAssignTargetExpression]:
    """What an assignment binds: each target of ``a = b = ...``, the one of ``a += ...``."""
    return [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]


def read_as_values(expr: cst.BaseExpression) -> list[str]:
    """The keys ``expr`` reads (:func:`~regcomp_lint.codemod.tree.read_keys`), less a name it
    reads only as ``len(name)``."""
    sized = [
        call.args[0].value.value
        for call in find_all(expr, cst.Call)
        if isinstance(call.func, cst.Name)
        and call.func.value == "len"
        and len(call.args) == 1
        and isinstance(call.args[0].value, cst.Name)
    ]
    names = [n.value for n in find_all(expr, cst.Name)]
    return [k for k in read_keys(expr) if k != "len" and not (k in sized and names.count(k) == sized.count(k))]


def describe_assignment(tree: Tree, assign: cst.CSTNode) -> str:
    """``done = random.random() < 0.1`` (line 26): an assignment's first line and where it is."""
    return f"`{code(assign).strip().splitlines()[0]}` (line {tree.line(assign)})"


def per_process_path(place: Function, path: cst.BaseExpression, depth: int = 0) -> bool:
    """``path`` names the process it is written by (``f"ckpt_rank{rank}.pt"``,
    ``f"preds_{WORLD_RANK}.json"``, ``f"{args.gpu}.png"``, or a name ``place`` binds to such a
    path): one file per process, which every process must go on writing. Read from the names in
    it (any case, see :data:`~regcomp_lint.knowledge.torch_api.PER_PROCESS_PATH_WORDS`), not from
    its text: ``"ranking.csv"`` is one shared file."""
    parts = _path_parts(path)
    for node in parts:
        word = (node.value if isinstance(node, cst.Name) else node.attr.value).lower()
        if any(w in word for w in torch_api.PER_PROCESS_PATH_WORDS):
            return True
    if depth > 1:
        return False
    names = {n.value for n in parts if isinstance(n, cst.Name)}
    return any(
        target[0] in names and per_process_path(place, target[1], depth + 1)
        for assign in find_all(place, cst.Assign, enter_functions=False)
        if (target := single_target(assign)) is not None
    )


def _path_parts(path: cst.CSTNode) -> list[cst.Name | cst.Attribute]:
    """The names a path is made of: those of ``a if test else b``'s branches, not its test."""
    kind = type(path)  # (``type(x) is``: see tree.key_of)
    if kind is cst.IfExp:
        return [*_path_parts(path.body), *_path_parts(path.orelse)]  # type: ignore[attr-defined]
    if kind is cst.Name:
        return [path]  # type: ignore[list-item]
    if kind is cst.Attribute:
        return [path, *_path_parts(path.value)]  # type: ignore[list-item, attr-defined]
    return [part for child in path.children for part in _path_parts(child)]


def _unpacked_targets(assign: cst.CSTNode) -> list[cst.BaseExpression]:
    """The names ``a, b, c = ...`` unpacks into (empty for any other assignment, or a starred one)."""
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return []
    target = assign.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in target.elements):
        return []
    return [e.value for e in target.elements]


def _unpacked_index(assign: cst.CSTNode, name: str) -> int | None:
    """Where ``name`` stands among the names ``assign`` unpacks into, if it does (once)."""
    keys = [key_of(t) for t in _unpacked_targets(assign)]
    return keys.index(name) if keys.count(name) == 1 else None


def _returned_arity(helper: cst.FunctionDef) -> int | None:
    """The length of the tuple literal every ``return`` of ``helper`` hands back, if they all do."""
    lengths = {
        len(ret.value.elements)
        if isinstance(ret.value, cst.Tuple) and not any(isinstance(e, cst.StarredElement) for e in ret.value.elements)
        else None
        for ret in find_own(helper.body, cst.Return, NESTED)
    }
    return lengths.pop() if len(lengths) == 1 else None
