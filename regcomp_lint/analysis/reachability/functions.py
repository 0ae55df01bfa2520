"""The nodes of the call graph (:class:`Function`) and the chains that name how a forward reaches one."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from regcomp_lint.analysis.reachability.classes import ModuleClass
from regcomp_lint.analysis.reachability.modules import ParsedModule

DISABLE = ("torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo")


@dataclass(eq=False)
class Function:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: ModuleClass | None
    module: ParsedModule
    label: str
    local: bool
    #: For a function defined inside another (a closure), the enclosing one: names the closure
    #: does not bind are the enclosing function's.
    parent: Function | None = None

    def __repr__(self) -> str:
        return f"Function({self.label})"

    @property
    def is_method(self) -> bool:
        """Called bound (its first parameter is ``self``): a method, not a closure inside one."""
        return self.cls is not None and self.parent is None

    @property
    def disabled(self) -> bool:
        """Decorated with ``torch.compiler.disable``: dynamo runs it eagerly and traces nothing in it."""
        found = self.__dict__.get("_disabled")
        if found is None:
            imports = self.module.imports
            found = any(
                imports.resolves_to(d.func if isinstance(d, ast.Call) else d, *DISABLE)
                for d in self.node.decorator_list
            )
            self.__dict__["_disabled"] = found
        return found


@dataclass(frozen=True)
class Chain:
    labels: tuple[str, ...]

    def __str__(self) -> str:
        return "reached via " + " → ".join(self.labels)
