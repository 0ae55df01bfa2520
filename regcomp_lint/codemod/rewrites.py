"""Shared machinery of both conversions: removing statements, reaching the accelerator from a
function (adding an ``accelerator`` parameter where needed), the rewrites every converted script
gets (``backward``, ``.cuda()``, ``device``), and finding a place for new statements.

Everything is decided here before the tree is touched, so a script that cannot be converted
completely raises :class:`Refusal` and comes back byte-identical.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import libcst as cst

from regcomp_lint.codemod.builders import expression, keyword, with_keyword
from regcomp_lint.codemod.device_choice import (
    choice_text,
    compared_with_an_index,
    gpu_choice_keys,
    is_chosen_device,
    kept_config,
    reads_gpu_choice,
)
from regcomp_lint.codemod.device_kinds import holds_a_string
from regcomp_lint.codemod.edits import EditPlan, replaced_by
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.options import ConvertOptions
from regcomp_lint.codemod.per_process import PerProcess
from regcomp_lint.codemod.roles import CallGraph, bindings, bound_keys
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import (
    Block,
    Function,
    Tree,
    code,
    comments_in,
    dotted,
    find_all,
    is_main_guard,
    parameter_names,
    single_target,
)
from regcomp_lint.knowledge import accelerate_api

#: compound statements a new statement may go inside of when everything happens there
_DESCENDABLE = (cst.With, cst.Try)


@dataclass
class Conversion:
    edits: EditPlan
    notes: list[str]
    imports: list[tuple[str, str | None]] = field(default_factory=list)  # (module, None): import module
    unused_imports: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    #: why nothing is edited, when nothing is (the script already compiles through Accelerate)
    unchanged: str | None = None


def function_name(function: Function) -> str:
    return "module level" if isinstance(function, cst.Module) else f"{function.name.value}()"


class Planner:
    def __init__(self, tree: Tree, options: ConvertOptions) -> None:
        self.tree = tree
        self.module = tree.module
        self.options = options
        self.edits = EditPlan()
        self.notes: list[str] = []
        #: the keys of the models the conversion prepares (a plain script's, found by PlainPlanner.plan();
        #: none for a script that already uses Accelerate)
        self.models: list[str] = []
        self.imports: list[tuple[str, str | None]] = []
        self.unused_imports: list[tuple[str, str | None, str | None]] = []
        self.graph = CallGraph.build(tree)
        #: what may differ between processes (the planner adds the evaluations it knows run alike)
        self.varies = PerProcess(tree)
        #: where the accelerator lives and how that function spells it
        self.scope: Function = tree.module
        self.acc_key = "accelerator"
        #: The Accelerator is a module global, made by a helper that hands the training objects to
        #: the training code through module globals (NNI's prepare(); module_globals.py).
        self.global_accelerator = False
        self._injected: set[cst.FunctionDef] = set()
        #: (callee, call) for the calls being handed the accelerator, innermost last: what a refusal names
        self._handing: list[tuple[cst.FunctionDef, cst.Call]] = []
        self._need: str | None = None  # why the accelerator is asked for, for a refusal to name
        #: nodes in the scope that will read the accelerator (for placing its creation)
        self.uses: list[cst.CSTNode] = []
        #: module-level functions that load a checkpoint themselves (checkpoint_writes), listed on first ask
        self.checkpoint_loaders: list[cst.FunctionDef] | None = None
        #: module-level calls that run a method of the script's own loader class (``train_loader.next_batch()``)
        self.batch_method_calls: dict[int, list[cst.Call]] = {}
        #: device assignments rewritten: node -> (target, new value source)
        self.device_values: dict[cst.CSTNode, tuple[str, str]] = {}
        #: device flags read inline, ``x.to(args.device)``: each becomes a CPU switch of the Accelerator
        self.inline_device_flags: list[str] = []
        #: device keys the script assigns (``args.device = "cuda:{}".format(args.local_rank)``): the
        #: assignment gives ``accelerator.device`` instead, so every reader of the key follows it
        self.assigned_device_keys: set[str] = set()
        #: keys the script set its one GPU from (``torch.cuda.set_device(args.gpu)``)
        self.gpu_choice_keys: set[str] = gpu_choice_keys(tree)
        #: how the script placed its model on its one GPU (``device_ids[0]``, ``self.gpu_id``): set by the planner
        self.model_gpu_choices: set[str] = set()
        #: why the plan is empty, when it is (see :attr:`Conversion.unchanged`)
        self.unchanged: str | None = None
        #: ``try`` statements removed with the only statement of their body (its handlers with them)
        self.removed_tries: list[cst.Try | cst.TryStar] = []

    def conversion(self) -> Conversion:
        return Conversion(self.edits, self.notes, self.imports, self.unused_imports, self.unchanged)

    # -- removing ---------------------------------------------------------------------------
    def remove_small(self, small: cst.BaseSmallStatement) -> None:
        """Delete one small statement (and its line, or its ``if`` or ``try``, when nothing else is left)."""
        self.edits.remove.add(small)
        line = self.tree.parent(small)
        if isinstance(line, cst.SimpleStatementLine) and all(s in self.edits.remove for s in line.body):
            self.remove_statement(line)
        elif isinstance(line, cst.SimpleStatementSuite) and all(s in self.edits.remove for s in line.body):
            self._remove_emptied_owner(line)

    def remove_statement(self, stmt: cst.CSTNode) -> None:
        self.edits.remove.add(stmt)
        block = self.tree.block_of(stmt)
        if isinstance(block, cst.IndentedBlock) and all(s in self.edits.remove for s in block.body):
            self._remove_emptied_owner(block)

    def _remove_emptied_owner(self, body: cst.BaseSuite) -> None:
        """``body`` is left empty: remove the ``if`` it is the only branch of, or the ``try`` it is
        the body of when nothing else runs there (its handlers only caught what ``body`` raised;
        an ``else`` or ``finally`` would still run, so that ``try`` stays, with ``pass``)."""
        owner = self.tree.parent(body)
        if isinstance(owner, cst.If) and owner.orelse is None and owner.body is body and not self._is_elif(owner):
            self.remove_statement(owner)
        elif (
            isinstance(owner, (cst.Try, cst.TryStar))
            and owner.body is body
            and owner.orelse is None
            and owner.finalbody is None
        ):
            self.removed_tries.append(owner)
            self.remove_statement(owner)

    def _is_elif(self, node: cst.If) -> bool:
        parent = self.tree.parent(node)
        return isinstance(parent, cst.If) and parent.orelse is node

    def remove_hand_compile(self, remove: cst.BaseSmallStatement | None, call: cst.Call, origin: str) -> None:
        """Take out a compile the plugin takes over: its statement, or the call around the model
        (``model = torch.compile(Net())`` -> ``model = Net()``); a ``try`` that only guarded it
        goes too, and a note says its fallback is gone."""
        tries = len(self.removed_tries)
        if remove is not None:
            self.remove_small(remove)
        else:
            self.edits.on(call, lambda u: u.args[0].value)
        for gone in self.removed_tries[tries:]:
            self.notes.append(
                f"removed the try at line {self.tree.line(gone)} that guarded {origin}, with its except: the eager "
                "fallback on a compile error is gone (where torch.compile raises, on a Python or platform it does "
                "not support or for an unknown backend, prepare() now raises instead of training uncompiled)"
            )

    def is_removed(self, node: cst.CSTNode) -> bool:
        # (no climb while nothing is removed, and the climb stops at the first removed ancestor:
        # the list of every ancestor was built before the first test)
        remove = self.edits.remove
        return bool(remove) and (node in remove or any(n in remove for n in self.tree.ancestors(node)))

    def forget_import(self, func: cst.BaseExpression) -> None:
        """Drop ``from m import Name`` once the removed code was its last user (comment-free lines only)."""
        if not isinstance(func, cst.Name):
            return
        for stmt in self.module.body:
            if not isinstance(stmt, cst.SimpleStatementLine) or comments_in(stmt):
                continue
            for small in stmt.body:
                if (
                    isinstance(small, cst.ImportFrom)
                    and not small.relative
                    and not isinstance(small.names, cst.ImportStar)
                    and small.module is not None
                ):
                    for alias in small.names:
                        local = alias.evaluated_alias or code(alias.name)
                        if local == func.value:
                            asname = alias.evaluated_alias
                            self.unused_imports.append((code(small.module), code(alias.name), asname))

    # -- reaching the accelerator ---------------------------------------------------------------
    def replace(self, node: cst.CSTNode, source: str) -> None:
        """Rewrite ``node`` to the expression ``source`` (``accelerator.save``, an unwrap)."""
        self.edits.on(node, replaced_by(expression(source, self.module)))

    def accelerator_in(self, function: Function) -> str:
        """How ``function`` spells the accelerator; adds an ``accelerator`` parameter if it has none."""
        tree = self.tree
        if function is self.scope or isinstance(self.scope, cst.Module):
            return self.acc_key
        if self.global_accelerator and not isinstance(function, cst.Module):
            return self.acc_key  # module level may run before the helper made it: refused below
        if any(f is self.scope for f in tree.enclosing_functions(function)):
            return self.acc_key
        scope_class = tree.class_of(self.scope)
        if self.acc_key.startswith("self.") and scope_class is not None and tree.class_of(function) is scope_class:
            if _first_param(function) == "self":
                return self.acc_key
        if isinstance(function, cst.Module):
            if self._handing:  # the module-level call of a function the accelerator is handed to
                callee, call = self._handing[-1]
                raise Refusal(
                    f"{callee.name.value}() (line {tree.line(callee)}) needs the accelerator{self._need or ''}, "
                    f"which is created in {function_name(self.scope)}, but is called at module level (line "
                    f"{tree.line(call)}), before that accelerator exists; move that work into "
                    f"{function_name(self.scope)} or create the Accelerator in {callee.name.value}() by hand"
                )
            raise Refusal(
                f"module-level code needs the accelerator, which is created in {function_name(self.scope)}; move that code into it"
            )
        outer = [f for f in tree.enclosing_functions(function) if f is not function]
        if outer and tree.class_of(outer[-1]) is None:
            return self.accelerator_in(outer[-1])  # a nested function reads its definer's, as a closure
        self._inject(function)
        return "accelerator"

    def can_reach_accelerator(self, function: Function, seen: frozenset[int] = frozenset()) -> bool:
        """Would :meth:`accelerator_in` succeed here? Asks without editing anything."""
        tree = self.tree
        if function is self.scope or isinstance(self.scope, cst.Module) or function in self._injected:
            return True
        if self.global_accelerator and not isinstance(function, cst.Module):
            return True
        if any(f is self.scope for f in tree.enclosing_functions(function)):
            return True
        scope_class = tree.class_of(self.scope)
        if self.acc_key.startswith("self.") and scope_class is not None and tree.class_of(function) is scope_class:
            if _first_param(function) == "self":
                return True
        if isinstance(function, cst.Module) or id(function) in seen:
            return False
        outer = [f for f in tree.enclosing_functions(function) if f is not function]
        if outer and tree.class_of(outer[-1]) is None:
            return self.can_reach_accelerator(outer[-1], seen | {id(function)})
        if self._injection_problem(function) is not None:
            return False
        return all(
            self.can_reach_accelerator(caller, seen | {id(function)}) for caller, _ in self.graph.callers_of(function)
        )

    def _injection_problem(self, function: cst.FunctionDef) -> str | None:
        """Why ``function`` cannot be given an ``accelerator`` parameter, if it cannot."""
        tree = self.tree
        name = function.name.value
        cls = tree.class_of(function)
        if cls is not None:
            method = f"{cls.name.value}.{name}() (line {tree.line(function)})"
            if self._handing and tree.contains(function, self._handing[-1][1]):
                callee, call = self._handing[-1]
                return (
                    f"method {method} calls {callee.name.value}() at line {tree.line(call)}, which needs the "
                    f"accelerator, but {cls.name.value} does not hold one; pass it in by hand"
                )
            return f"method {method} needs the accelerator but its class does not hold one; pass it in by hand"
        callers = self.graph.callers_of(function)
        calls = {id(call.func) for _, call in callers}
        for ref in tree.references_to(function):
            if id(ref) not in calls:
                return f"{name}() needs the accelerator but is used other than by a call (line {tree.line(ref)}); pass it in by hand"
        return None  # never called here: it runs none of the training, and takes the parameter (see _inject)

    def _inject(self, function: cst.FunctionDef) -> None:
        if function in self._injected:
            return
        self._injected.add(function)
        problem = self._injection_problem(function)
        if problem is not None:
            raise Refusal(problem)
        name = function.name.value
        callers = self.graph.callers_of(function)
        if not _has_param(function, "accelerator"):
            self.edits.on(function, _add_parameter)
            if callers:
                self.notes.append(f"{name}() takes the accelerator as a new parameter")
            else:  # survey 26a: an evaluation written but never wired into the loop refused the whole script
                self.notes.append(
                    f"{name}() is never called in this file: it takes the accelerator as a new parameter, which "
                    "a caller elsewhere must hand it"
                )
        for caller, call in callers:
            self._handing.append((function, call))
            try:
                spelled = self.accelerator_in(caller)
            finally:
                self._handing.pop()
            if keyword(call, "accelerator") is None:
                self.edits.on(call, partial(with_keyword, name="accelerator", value=expression(spelled, self.module)))
                self.uses.append(call)

    # -- rewrites that every converted script gets --------------------------------------------
    def rewrite_backward(self, call: cst.Call) -> None:
        acc = self.accelerator_in(self.tree.function_of(call))
        module = self.module

        def rewrite(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call) and isinstance(updated.func, cst.Attribute)
            receiver = (
                updated.func.value.with_changes(lpar=[], rpar=[]) if updated.func.value.lpar else updated.func.value
            )
            first = cst.Arg(
                receiver,
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                if updated.args
                else cst.MaybeSentinel.DEFAULT,
            )
            return updated.with_changes(func=expression(f"{acc}.backward", module), args=[first, *updated.args])

        self.edits.on(call, rewrite)
        self.uses.append(call)

    def rewrite_cuda(self, call: cst.Call) -> None:
        """``x.cuda(...)`` -> ``x.to(accelerator.device, ...)`` keeping keyword arguments."""
        acc = self.accelerator_in(self.tree.function_of(call))
        module = self.module

        def rewrite(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call) and isinstance(updated.func, cst.Attribute)
            kept = [a for a in updated.args if a.keyword is not None and a.keyword.value != "device"]
            device = cst.Arg(
                expression(f"{acc}.device", module),
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if kept else cst.MaybeSentinel.DEFAULT,
            )
            if kept:
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(func=updated.func.with_changes(attr=cst.Name("to")), args=[device, *kept])

        self.edits.on(call, rewrite)
        self.uses.append(call)

    def rewrite_device(self, assign: cst.Assign) -> None:
        """``device = ...`` -> ``device = accelerator.device``; a string stays a string, the device's type
        (``"cuda"``: Accelerate has made each process's GPU the current one, and ``device == "cuda"``
        checks keep working), also where only another assignment or a read shows it is one
        (:func:`~regcomp_lint.codemod.device_kinds.holds_a_string`)."""
        scope = self.tree.function_of(assign)
        acc = self.accelerator_in(scope)
        new = f"{acc}.device.type" if holds_a_string(assign, scope) else f"{acc}.device"
        value = expression(new, self.module)
        self.device_values[assign] = (code(assign.targets[0].target), new)
        self.edits.on(assign, lambda u: u.with_changes(value=value))
        self.uses.append(assign)

    def device_and_cuda_rewrites(self, function: Function, device_key: str) -> tuple[int, int]:
        """Rewrite ``.cuda()`` calls, ``.to("cuda")`` and ``device = ...`` in ``function``."""
        tree = self.tree
        acc_device = f"{self.acc_key}.device"
        cudas = devices = 0
        for call in find_all(function, cst.Call, enter_functions=False):
            func = call.func
            if not isinstance(func, cst.Attribute) or tree.is_module_reference(func.value):
                continue
            if func.attr.value == "cuda" and not self.is_removed(call):
                if _moves_a_loop_object(tree, function, call):
                    self.notes.append(
                        f"{code(call).strip()} at line {tree.line(call)} kept: its result is discarded, so it moves an "
                        "object of the script's own in place (a tensor's .cuda() returns a copy), which may have no "
                        ".to(); Accelerate makes each process's GPU the current one, where .cuda() puts it"
                    )
                    continue
                self.rewrite_cuda(call)
                cudas += 1
            elif (
                func.attr.value == "to"
                and call.args
                and (
                    _is_cuda_literal(call.args[0].value)
                    or self._is_device_flag(call.args[0].value, function)
                    or choice_text(call.args[0].value) in self.model_gpu_choices
                    or self._is_global_cuda_device(call.args[0].value, function)
                )
                and not self.is_removed(call)
            ):
                flag = self._device_flag_read(call.args[0].value, function)
                kept = kept_config(tree, function, flag.split(".")[0]) if flag is not None else None
                if flag is not None and kept is not None:  # `cfg = self.cfg` in a method: read it as self.cfg
                    flag = kept + flag[len(flag.split(".")[0]) :]
                if flag is not None and flag not in self.inline_device_flags:
                    self.inline_device_flags.append(flag)  # `x.to(args.device)`: the user's --device
                acc = self.accelerator_in(function)
                value = expression(f"{acc}.device", self.module)
                self.edits.on(call.args[0], partial(cst.Arg.with_changes, value=value))
                self.uses.append(call)
                cudas += 1
        cudas += self._gpu_choice_rewrites(function)
        cudas += self._handed_gpu_choices(function)
        device_keys = {device_key, *self._local_cuda_device_names(function)}
        index_keys = compared_with_an_index(self.tree)
        for assign in find_all(function, cst.Assign, enter_functions=False):
            target = single_target(assign)
            if self.is_removed(assign):
                continue
            if target is None or target[0] not in device_keys:
                target = _attribute_target(assign, self.assigned_device_keys)  # args.device = ...
                if target is None:
                    continue
            if code(target[1]) in (acc_device, f"{acc_device}.type", "accelerator.device", "accelerator.device.type"):
                continue
            if (
                target[0] in index_keys
                and isinstance(target[1], cst.Name)
                and not isinstance(function, cst.Module)
                and target[1].value in parameter_names(function, keyword_only=False)
            ):
                continue  # `self.device = device` compared `== 0`: the handed process index (compared_with_an_index)
            if _an_objects_device(self.tree, target[1], function):
                continue  # `device = next(model.parameters()).device`: it follows the model, not the user
            self.rewrite_device(assign)
            devices += 1
        return cudas, devices

    def _local_cuda_device_names(self, function: Function) -> set[str]:
        """Names other than ``device`` that ``function``, the one the Accelerator is made in (not
        the module), binds to a fixed CUDA device (``dev = torch.device("cuda" if ... else
        "cpu")``): every process would use GPU 0, so the assignment gives the accelerator's device,
        as one named ``device`` does. A helper's locals stay (``pick_device()``'s ``name``: its
        callers' devices are rewritten where they are read)."""
        if isinstance(function, cst.Module) or function is not self.scope:
            return set()
        view = lint_view(self.tree)
        if view.devices is None:
            return set()
        names: set[str] = set()
        for assign in find_all(function, cst.Assign, enter_functions=False):
            target = single_target(assign)
            if target is None or not isinstance(assign.targets[0].target, cst.Name):
                continue
            name = view.any_expression_at(assign.targets[0].target)  # its place: the value's scope
            if name is None:
                continue
            if view.devices.fixed_cuda(view.any_expression_at(assign.value), view.where(name)):
                names.add(target[0])
        return names

    def _device_flag_read(self, value: cst.BaseExpression, function: Function) -> str | None:
        """The device flag a ``.to(value)`` follows: ``args.device`` read inline, or through a name
        bound only to it (``DEVICE = args.device``, survey 19b llm_tools_lora)."""
        if self._is_device_flag(value, function):
            return dotted(value)
        if not isinstance(value, cst.Name):
            return None
        for place in (function, self.tree.module):
            found = bindings(place, value.value)
            if not found:
                continue
            values = [t[1] for b in found if (t := single_target(b)) is not None]
            if len(values) != len(found) or not all(self._is_device_flag(v, place) for v in values):
                return None
            keys = {dotted(v) for v in values}
            return keys.pop() if len(keys) == 1 else None
        return None

    def _is_global_cuda_device(self, value: cst.BaseExpression, function: Function) -> bool:
        """``x.to(device)`` in a function the conversion rewrites, where ``device`` is a module-level
        ``torch.device("cuda" if ... else "cpu")`` the function does not bind itself (the captioning
        tutorial's global ``device``, read in ``main()``): every process would use GPU 0, as the
        lint's RC403 says; the function follows ``accelerator.device`` instead."""
        if not isinstance(value, cst.Name) or isinstance(function, cst.Module):
            return False
        if value.value in parameter_names(function, keyword_only=False) or bindings(function, value.value):
            return False
        if isinstance(self.scope, cst.Module) or any(
            self.is_removed(b) or b in self.edits.replace for b in bindings(self.tree.module, value.value)
        ):
            return False  # the module-level scope's own `device = ...`, which the conversion rewrites
        view = lint_view(self.tree)
        expr = view.any_expression_at(value)
        return expr is not None and view.devices is not None and view.devices.fixed_cuda(expr, view.where(expr))

    def _handed_gpu_choices(self, function: Function) -> int:
        """``train_one_epoch(..., device=CONFIG["device"])`` where the model was placed with
        ``CONFIG["device"]``: the function moves its batches there, so it gets the accelerator's
        device, as the model did."""
        count = 0
        if not self.model_gpu_choices:
            return count
        for call in find_all(function, cst.Call, enter_functions=False):
            if self.is_removed(call):
                continue
            for arg in call.args:
                if (
                    arg.keyword is not None
                    and arg.keyword.value == "device"
                    and choice_text(arg.value) in self.model_gpu_choices
                ):
                    value = expression(f"{self.accelerator_in(function)}.device", self.module)
                    self.edits.on(arg, partial(cst.Arg.with_changes, value=value))
                    self.uses.append(call)
                    count += 1
        return count

    def _gpu_choice_rewrites(self, function: Function) -> int:
        """``device=args.gpu`` (and ``device=f"cuda:{args.gpu}"``) where the script set its GPU
        with ``torch.cuda.set_device(args.gpu)``: snli's iterator would put every process's
        batches on that one GPU; they follow the accelerator's device, as ``.cuda(args.gpu)`` does."""
        keys = self.gpu_choice_keys - {"device", "self.device"} - self.assigned_device_keys
        count = 0
        if not keys:
            return count
        for call in find_all(function, cst.Call, enter_functions=False):
            if self.is_removed(call) or self.tree.resolves_to(call.func, "torch.cuda.set_device"):
                continue
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == "device" and reads_gpu_choice(arg.value, keys):
                    value = expression(f"{self.accelerator_in(function)}.device", self.module)
                    self.edits.on(arg, partial(cst.Arg.with_changes, value=value))
                    self.uses.append(call)
                    count += 1
        return count

    def _is_device_flag(self, value: cst.BaseExpression, function: Function) -> bool:
        """``args.device`` / ``cfg.train.device``: a device the user chooses, read inline (not the
        accelerator's own ``accelerator.device``, nor a module attribute such as ``torch.device``,
        nor the ``.device`` of a tensor or model, ``device_choice``). A key the script assigns
        itself is no flag to rewrite either: its assignment now gives ``accelerator.device``, and
        every reader follows."""
        key = dotted(value) if isinstance(value, cst.Attribute) else None
        if (
            not isinstance(value, cst.Attribute)
            or key is None
            or key.split(".")[0] in ("self", self.acc_key.split(".")[0], "accelerator")
        ):
            return False
        if key in self.assigned_device_keys or not is_chosen_device(self.tree, value, function):
            return False
        view = lint_view(self.tree)
        return view.devices is not None and view.devices.is_flag(view.any_expression_at(value))

    # -- placing new statements -------------------------------------------------------------
    def project(self, block: Block, node: cst.CSTNode) -> int | None:
        return self.tree.statement_in(block, node)

    def binding_index(self, block: Block, key: str, function: Function) -> int:
        """Index of the last statement of ``block`` that binds ``key`` (-1: only before it / a parameter)."""
        found = -1
        for node in bindings(function, key):
            if self.is_removed(node):
                continue
            index = self.project(block, node)
            if index is not None:
                found = max(found, index)
        return found

    def descend(self, block: Block, nodes: list[cst.CSTNode]) -> Block:
        """The innermost ``with``/``try``/main-guard body that holds every node, else ``block``."""
        while nodes:
            indices = {self.project(block, n) for n in nodes}
            index = indices.pop() if len(indices) == 1 else None
            if index is None:
                return block
            stmt = block.body[index]
            if not (isinstance(stmt, _DESCENDABLE) or is_main_guard(stmt)):
                return block
            body = stmt.body
            if not isinstance(body, cst.IndentedBlock) or not all(self.tree.contains(body, n) for n in nodes):
                return block
            block = body
        return block

    def indentation_of(self, block: Block) -> str:
        if isinstance(block, cst.Module):
            return ""
        return self.tree.indentation(block.body[0])


def _first_param(function: Function) -> str | None:
    if isinstance(function, cst.Module):
        return None
    params = parameter_names(function, keyword_only=False)
    return params[0] if params else None


def _has_param(function: cst.FunctionDef, name: str) -> bool:
    return name in parameter_names(function)


def _add_parameter(updated: cst.CSTNode) -> cst.CSTNode:
    """Append ``accelerator`` to a signature (keyword-only when defaults, ``*`` or ``**`` come first)."""
    assert isinstance(updated, cst.FunctionDef)
    params = updated.params
    new = cst.Param(cst.Name("accelerator"))
    simple = (
        not params.kwonly_params
        and not isinstance(params.star_arg, (cst.Param, cst.ParamStar))
        and not isinstance(params.star_kwarg, cst.Param)
    )
    simple = simple and all(p.default is None for p in params.params)
    if simple:
        return updated.with_changes(params=params.with_changes(params=_append(list(params.params), new)))
    # with **kwargs too: the body reads the name ``accelerator``, which only a parameter of its own
    # binds (survey 26a: left to **kwargs it raised NameError and landed in the kwargs it saves)
    if params.star_arg is cst.MaybeSentinel.DEFAULT and not params.kwonly_params and params.params:
        return updated.with_changes(params=_after_a_new_star(updated, params, new))
    star = params.star_arg if isinstance(params.star_arg, (cst.Param, cst.ParamStar)) else cst.ParamStar()
    return updated.with_changes(
        params=params.with_changes(star_arg=star, kwonly_params=_append(list(params.kwonly_params), new))
    )


def _after_a_new_star(function: cst.FunctionDef, params: cst.Parameters, new: cst.Param) -> cst.Parameters:
    """``..., *, accelerator`` after the last positional parameter, on lines of their own when the
    signature puts one parameter per line without a trailing comma (survey 23f: else
    ``tracer=None, \n*, accelerator)``, the newline before ``)`` left after ``tracer=None``)."""
    last = params.params[-1]
    own_lines = isinstance(last.whitespace_after_param, cst.ParenthesizedWhitespace) and isinstance(
        function.whitespace_before_params, cst.ParenthesizedWhitespace
    )
    if not own_lines or isinstance(last.comma, cst.Comma):
        return params.with_changes(star_arg=cst.ParamStar(), kwonly_params=[new])
    separator = cst.Comma(whitespace_after=function.whitespace_before_params)
    return params.with_changes(
        params=[
            *params.params[:-1],
            last.with_changes(comma=separator, whitespace_after_param=cst.SimpleWhitespace("")),
        ],
        star_arg=cst.ParamStar(comma=separator),
        kwonly_params=[new.with_changes(whitespace_after_param=last.whitespace_after_param)],
    )


def _append(items: list[cst.Param], new: cst.Param) -> list[cst.Param]:
    if not items:
        return [new]
    last = items[-1]
    if isinstance(last.comma, cst.Comma):  # trailing comma: one parameter per line
        separator = (
            items[-2].comma
            if len(items) > 1 and isinstance(items[-2].comma, cst.Comma)
            else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        return [*items[:-1], last.with_changes(comma=separator), new.with_changes(comma=last.comma)]
    if isinstance(last.whitespace_after_param, cst.ParenthesizedWhitespace) and len(items) > 1:
        between = items[-2].comma  # one parameter per line, no trailing comma: the newline before ``)`` moves
        if isinstance(between, cst.Comma) and isinstance(between.whitespace_after, cst.ParenthesizedWhitespace):
            moved = last.with_changes(comma=between, whitespace_after_param=cst.SimpleWhitespace(""))
            return [*items[:-1], moved, new.with_changes(whitespace_after_param=last.whitespace_after_param)]
    return [*items[:-1], last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), new]


def _attribute_target(assign: cst.Assign, keys: set[str]) -> tuple[str, cst.BaseExpression] | None:
    """``(key, value)`` for ``args.device = value`` when ``key`` is one of ``keys``."""
    key = dotted(assign.targets[0].target) if len(assign.targets) == 1 else None
    return (key, assign.value) if key is not None and key in keys else None


def _an_objects_device(tree: Tree, value: cst.BaseExpression, function: Function) -> bool:
    """``next(model.parameters()).device``, ``batch.device``: the device an object the script
    holds is on (:func:`~regcomp_lint.codemod.device_choice.is_chosen_device` says it is no flag).
    Rewritten to ``accelerator.device``, a helper called before ``prepare()`` (survey 19a
    minimind_pt's sampling) would send its inputs where the model is not."""
    return (
        isinstance(value, cst.Attribute)
        and value.attr.value == "device"
        and not is_chosen_device(tree, value, function)
    )


def _is_cuda_literal(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return isinstance(text, str) and (text == "cuda" or text.startswith("cuda:"))
    return False


def accelerator_calls(tree: Tree) -> list[cst.Call]:
    if "accelerate" not in tree.text and "Accelerator" not in tree.text:
        # (a name resolves to accelerate's class only through an import that names accelerate,
        # and a bare name under a star import is spelled Accelerator: most scripts have neither,
        # and asking every call's qualified names was a tenth of the planning of a small script)
        return []
    return [
        c
        for c in find_all(tree.module, cst.Call)
        if tree.resolves_to(c.func, *accelerate_api.ACCELERATOR) or _bare(tree, c.func, "Accelerator")
    ]


def plugin_calls(tree: Tree) -> list[cst.Call]:
    return [
        c
        for c in find_all(tree.module, cst.Call)
        if tree.resolves_to(c.func, *accelerate_api.DYNAMO_PLUGIN) or _bare(tree, c.func, "TorchDynamoPlugin")
    ]


def _bare(tree: Tree, func: cst.BaseExpression, name: str) -> bool:
    """A distinctive class name used with a star import we cannot see through."""
    if not (isinstance(func, cst.Name) and func.value == name):
        return False
    stars = [s for s in find_all(tree.module, cst.ImportFrom) if isinstance(s.names, cst.ImportStar)]
    return bool(stars) and not tree.qualnames(func)


def _moves_a_loop_object(tree: Tree, function: Function, call: cst.Call) -> bool:
    """``batch.cuda()`` as a statement, ``batch`` bound by a ``for`` of ``function``: what a loader
    yields, moved in place by its own method (ante's ``Batch.cuda()``, which has no ``.to()``)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name) or call.args:
        return False
    if not isinstance(tree.parent(call), cst.Expr):
        return False
    name = func.value.value
    return any(name in bound_keys(loop) for loop in find_all(function, cst.For, enter_functions=False))
