"""The edges of the call graph: what a call inside a function may run (methods through ``self``
and ``super()``, submodules, loops over containers, closures, module-level functions, callables
passed on), and each function's callees, found once and replayed or memoized across graphs."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from regcomp_lint.analysis import dependencies
from regcomp_lint.analysis.reachability import modules
from regcomp_lint.analysis.reachability.classes import ModuleClass, _is_self, _last_name
from regcomp_lint.analysis.reachability.facts import FunctionFacts
from regcomp_lint.analysis.reachability.functions import Function
from regcomp_lint.analysis.reachability.modules import FUNCTION_DEFS, _stamp
from regcomp_lint.analysis.reachability.resolution import Resolver


class CallEdges(Resolver):
    """What each function of the graph calls: the edges :class:`~.graph.Reachability` follows."""

    def call_targets(self, func: ast.AST, caller: Function) -> list[Function]:
        """What calling ``func`` (the ``func`` of an ``ast.Call``) inside ``caller`` may run."""
        known = self._targets.get((id(func), id(caller)))
        if known is not None and known[0] is func and known[1] is caller and dependencies.current() is known[3]:
            return list(known[2])
        return self._call_targets(func, caller, self.facts(caller))

    def _remember(self, func: ast.AST, caller: Function, targets: list[Function]) -> None:
        """Keep what building the graph found for a call, for :meth:`call_targets` (RC207 asks
        again about the calls of reached functions). Kept with the recording it was found under:
        the files it read are recorded there already, and asked under another (the lint of
        another file, a graph kept with a parsed module), it is found again, recording them."""
        self._targets[(id(func), id(caller))] = (func, caller, targets, dependencies.current())

    def _callees(self, caller: Function) -> Iterator[tuple[Function, ast.Call]] | list[tuple[Function, ast.Call]]:
        if caller.module is not self.module:
            if self.functions and caller.cls is None and caller.module.path is not None:
                return self._foreign_callees(caller)
            return self._find_callees(caller)
        shallow = self._classes_from
        if shallow is not None:
            specs = shallow._local_specs.get((id(caller.node), id(caller.cls)))
            if specs is not None:
                return self._replay_local(caller, specs)
        if not self.functions:
            specs = []
            found = list(self._find_callees(caller, specs))
            self._local_specs[(id(caller.node), id(caller.cls))] = specs
            return found
        return self._find_callees(caller)

    def _replay_local(self, caller: Function, specs: list) -> list[tuple[Function, ast.Call]]:
        """The callees of a function of the linted file, from what the default graph (whose
        classes this graph shares) found: the same, but for the calls of imported names it left
        unresolved (``callee`` None), which are resolved here."""
        functions = self._functions
        result: list[tuple[Function, ast.Call]] = []
        for callee, call in specs:
            if callee is None:
                targets = self._call_targets(call.func, caller, self.facts(caller))
                self._remember(call.func, caller, targets)
                result.extend((found, call) for found in targets)
                continue
            if callee.parent is not None:  # a closure: keyed and labelled as :meth:`_closures` does
                key = (id(callee.node), id(caller.cls))
                found = functions.get(key)
                if found is None:
                    found = functions[key] = Function(
                        callee.node,
                        caller.cls,
                        caller.module,
                        f"{caller.label}.{callee.node.name}",
                        caller.local,
                        parent=caller,
                    )
            else:  # as :meth:`function` makes it (the label comes from the same class objects)
                key = (id(callee.node), id(callee.cls))
                found = functions.get(key)
                if found is None:
                    found = functions[key] = Function(
                        callee.node, callee.cls, callee.module, callee.label, callee.module is self.module
                    )
            result.append((found, call))
        return result

    def _foreign_callees(self, caller: Function) -> list[tuple[Function, ast.Call]]:
        """The callees of a plain function (or closure) of another file: they resolve in its own
        module alone, so they are found once per process (and generation of parsed modules) and
        mapped onto this graph's nodes, closures keyed and labelled as :meth:`_closures` does."""
        memo = caller.module.__dict__.setdefault("_callee_memo", {})
        found = memo.get(id(caller.node))
        if found is None or found[0] != modules._generation or any(_stamp(path) != stamp for path, stamp in found[2]):
            generation = modules._generation  # a module parsed again meanwhile: the entry is stale at once
            with dependencies.recording() as paths:
                callees = list(self._find_callees(caller))
            specs = [(callee.node, callee.module if callee.parent is None else None, call) for callee, call in callees]
            memo[id(caller.node)] = (generation, specs, tuple((path, _stamp(path)) for path in paths))
            for path in paths:
                dependencies.record(path)
            return callees
        _, specs, stamps = found
        for path, _ in stamps:
            dependencies.record(path)
        result = []
        functions = self._functions
        for node, module, call in specs:
            if module is not None:
                callee = self.function(node, None, module)
            else:
                key = (id(node), id(caller.cls))
                closure = functions.get(key)
                if closure is None:
                    closure = functions[key] = Function(
                        node, caller.cls, caller.module, f"{caller.label}.{node.name}", caller.local, parent=caller
                    )
                callee = closure
            result.append((callee, call))
        return result

    def _find_callees(self, caller: Function, specs: list | None = None) -> Iterator[tuple[Function, ast.Call]]:
        """``specs``: also record there each (callee, call) and, as (None, call), each call of an
        imported name this graph does not follow into a local module (see :meth:`_replay_local`)."""
        facts = self.facts(caller)
        body = caller.node.body
        start = (body[0].lineno, body[0].col_offset) if body else (0, 0)
        for call in facts.calls:
            if (call.lineno, call.col_offset) < start:
                continue  # a decorator, default or annotation: run when the def is made, not by a call
            if specs is not None:
                self._hole = False
                targets = self._call_targets(call.func, caller, facts)
                if self._hole:
                    specs.append((None, call))
                for callee in targets:
                    specs.append((callee, call))
            else:
                targets = self._call_targets(call.func, caller, facts)
            self._remember(call.func, caller, targets)
            for callee in targets:
                yield callee, call
            checkpoint = "checkpoint" in (_last_name(call.func) or "")
            for arg in [*call.args, *(kw.value for kw in call.keywords)]:
                if type(arg) is ast.Starred:
                    arg = arg.value
                # A method or submodule passed on (``checkpoint(self.block, x)``) is called there.
                if (type(arg) is ast.Attribute and (arg.attr == "__call__" or _is_self(arg.value))) or (
                    checkpoint and type(arg) in (ast.Name, ast.Subscript)
                ):
                    for callee in self._call_targets(arg, caller, facts, passed=True):
                        if specs is not None:
                            specs.append((callee, call))
                        yield callee, call

    def _call_targets(
        self, func: ast.AST, caller: Function, facts: FunctionFacts, passed: bool = False
    ) -> list[Function]:
        """Functions a call of ``func`` inside ``caller`` may run."""
        cls = caller.cls
        if isinstance(func, ast.Attribute) and func.attr == "__call__":
            func = func.value
        if isinstance(func, ast.Attribute):
            value = func.value
            if _is_self(value) and cls is not None:
                method = cls.method(func.attr)
                if method is not None:
                    owner, node = method
                    return [self.function(node, cls, owner.module, owner)]
                sub = cls.submodule(func.attr)
                return self._forwards(sub.classes) if sub is not None else []
            if _is_super_call(value) and cls is not None:
                for base in cls.mro()[1:]:
                    if func.attr in base.local_methods:
                        return [self.function(base.local_methods[func.attr], cls, base.module, base)]
                return []
            if passed:
                return []
            owners = self._module_classes_of(value, caller, facts)
            if owners:
                found = []
                for owner_cls in owners:
                    method = owner_cls.method(func.attr)
                    if method is not None:
                        defining, node = method
                        found.append(self.function(node, owner_cls, defining.module, defining))
                return found
            resolved = self.resolve_function(func, caller.module)
            return [self.function(resolved[1], None, resolved[0])] if resolved else []
        if isinstance(func, ast.Subscript):
            return self._forwards(self._module_classes_of(func, caller, facts))
        if isinstance(func, ast.Name):
            classes = self._module_classes_of(func, caller, facts)
            if classes:
                return self._forwards(classes)
            bindings = facts.bindings.get(func.id)
            if bindings:
                return self._closures(func.id, bindings, caller)
            if passed:
                return []
            resolved = self.resolve_function(func, caller.module)
            return [self.function(resolved[1], None, resolved[0])] if resolved else []
        return []

    def _closures(self, name: str, bindings: list, caller: Function) -> list[Function]:
        """``gate(h)`` where ``def gate(t): ...`` is defined inside the caller."""
        found = []
        for kind, value, _ in bindings:
            if kind != "unknown" or type(value) not in FUNCTION_DEFS or value.name != name:
                continue
            key = (id(value), id(caller.cls))
            func = self._functions.get(key)
            if func is None:
                func = Function(value, caller.cls, caller.module, f"{caller.label}.{name}", caller.local, parent=caller)
                self._functions[key] = func
            found.append(func)
        return found

    def _forwards(self, classes: Iterable[ModuleClass]) -> list[Function]:
        found = []
        for cls in classes:
            method = cls.method("forward")
            if method is not None:
                owner, node = method
                found.append(self.function(node, cls, owner.module, owner))
        return found

    def _module_classes_of(
        self, expr: ast.AST, caller: Function, facts: FunctionFacts, depth: int = 0
    ) -> list[ModuleClass]:
        """Local module classes an expression may hold: ``self.attn``, ``self.h[i]``, a loop
        variable over ``self.h``, a name bound to one of those."""
        if depth > 4:
            return []
        cls = caller.cls
        if isinstance(expr, ast.Attribute) and _is_self(expr.value) and cls is not None:
            sub = cls.submodule(expr.attr)
            return list(sub.classes) if sub is not None else []
        if isinstance(expr, ast.Attribute):
            value = expr.value
            if isinstance(value, ast.Attribute) and _is_self(value.value) and cls is not None:
                container = cls.submodule(value.attr)
                if container is not None and container.container:
                    return list(container.classes)  # a ModuleDict member: self.layers.h
            owners = self._module_classes_of(value, caller, facts, depth + 1)
            found: list[ModuleClass] = []
            for owner in owners:
                sub = owner.submodule(expr.attr)
                if sub is not None:
                    found.extend(sub.classes)
            return found
        if isinstance(expr, ast.Subscript):
            return self._module_classes_of(expr.value, caller, facts, depth + 1)
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in ("values", "children", "modules")
        ):
            return self._module_classes_of(expr.func.value, caller, facts, depth + 1)
        if isinstance(expr, ast.Name):
            found = []
            for kind, bound, index in facts.bindings.get(expr.id, ()):
                if kind == "value" and index is None:
                    found.extend(self._module_classes_of(bound, caller, facts, depth + 1))
                elif kind == "iter":
                    found.extend(self._iterated(bound, index, caller, facts, depth + 1))
            return found
        return []

    def _iterated(
        self, iterable: ast.AST, index: int | None, caller: Function, facts: FunctionFacts, depth: int
    ) -> list[ModuleClass]:
        """Classes of the loop variable at tuple position ``index`` over ``iterable``."""
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name):
            if iterable.func.id == "enumerate" and iterable.args:
                return self._iterated(iterable.args[0], None, caller, facts, depth) if index == 1 else []
            if iterable.func.id == "zip":
                if index is not None and index < len(iterable.args):
                    return self._iterated(iterable.args[index], None, caller, facts, depth)
                return []
            if iterable.func.id in ("reversed", "list", "tuple", "iter") and iterable.args:
                return self._iterated(iterable.args[0], index, caller, facts, depth)
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Attribute)
            and iterable.func.attr == "items"
        ):
            return self._module_classes_of(iterable.func.value, caller, facts, depth) if index == 1 else []
        if index is not None:
            return []
        if isinstance(iterable, ast.Subscript):  # self.h[:n]
            iterable = iterable.value
        return self._module_classes_of(iterable, caller, facts, depth)


def _is_super_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
