"""RC104 compile-in-loop."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from regcomp_lint.analysis.callsites import (
    COMPILE_NAME,
    OPTIMIZE_NAME,
    Site,
    compile_config_site,
    decorator_compile_call,
)
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Severity
from regcomp_lint.files.parsing import children, split_block, walk

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
LOOPS = (ast.For, ast.AsyncFor, ast.While)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
EXITS = (ast.Break, ast.Return, ast.Raise)


# -- names ------------------------------------------------------------------------------------


def names_in(node: ast.AST | None) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, ast.Name)} if node is not None else set()


def bound_names(target: ast.AST) -> set[str]:
    """Names a plain assignment target rebinds (``a``, ``a, (b, *c)``); attributes and
    subscripts mutate an existing object and rebind nothing."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(bound_names(t) for t in target.elts)) if target.elts else set()
    if isinstance(target, ast.Starred):
        return bound_names(target.value)
    return set()


def fresh_names(body: list[ast.stmt], targets: set[str]) -> set[str]:
    """Names that hold a new object on every pass through a loop ``body`` whose own targets
    are ``targets``: those, definitions, ``with ... as`` names, and assignments whose value does
    not read the name itself (``m = Model(cfg)`` is fresh, ``model = model.to(device)`` and
    ``model = torch.compile(model)`` are not)."""
    fresh = set(targets)
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            fresh.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Assign):
            reads = names_in(node.value)
            for target in node.targets:
                fresh |= bound_names(target) - reads
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            fresh |= bound_names(node.target) - names_in(node.value)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            fresh |= bound_names(node.optional_vars)
        stack.extend(children(node))
    return fresh


def comprehension_targets(comp: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> set[str]:
    return set().union(*(bound_names(gen.target) for gen in comp.generators))


# -- where a statement sits -------------------------------------------------------------------


def later_siblings(parent: ast.AST, child: ast.AST) -> list[ast.stmt]:
    """Statements after ``child`` in the same block of ``parent``."""
    around = split_block(parent, child)
    return around[1] if around is not None else []


@dataclass
class Repetition:
    """Where a compile runs again and again: the loop or comprehension that repeats it."""

    node: ast.stmt | ast.expr
    kind: str  # "loop" or "comprehension"


@dataclass
class _Path:
    """What was seen between the compile and the enclosing loop being judged."""

    exits: bool = False  # a break/return/raise follows the compile in the loop body
    guards: list[ast.expr] = field(default_factory=list)  # tests of the ifs around it


def find_repetition(chain: list[ast.AST], start: ast.AST, uses: set[str], result: set[str]) -> Repetition | None:
    """The innermost loop/comprehension that runs ``start`` many times, walking ``chain``
    (ancestors, outermost first) outwards, or None when it runs once per execution of its scope.

    ``uses``: names the compile reads; a loop whose targets (or names it rebinds) are among them
    compiles a different object each pass, which is compile-per-item, not a repeat (regional
    compilation by hand: ``for layer in model.layers: layer.compile()``). The compiled objects
    then come from the loop's iterable, so its names join ``uses`` for the loops further out:
    over a model built afresh each pass it is still per item, over the same model it repeats.
    ``result``: the
    assignment target's text; an ``if`` testing it (``if compiled is None:``) is a lazy, once-only
    compile.
    """
    path = _Path()
    child, grandchild = start, None
    for anc in reversed(chain):
        if isinstance(child, ast.stmt) and any(isinstance(s, EXITS) for s in later_siblings(anc, child)):
            path.exits = True
        if isinstance(anc, FUNCTIONS) and child in anc.body:
            return None  # runs when the function is called, not when it is defined
        if isinstance(anc, ast.Lambda) and child is anc.body:
            return None
        if isinstance(anc, ast.If) and child is not anc.test:
            path.guards.append(anc.test)
        if isinstance(anc, LOOPS):
            repeated = child in anc.body or (isinstance(anc, ast.While) and child is anc.test)
            if repeated:
                targets = bound_names(anc.target) if isinstance(anc, (ast.For, ast.AsyncFor)) else set()
                if path.exits or _guarded(path.guards, result):
                    pass
                elif uses & fresh_names(anc.body, targets):
                    uses = uses | names_in(getattr(anc, "iter", None))
                else:
                    return Repetition(anc, "loop")
            path = _Path()
        if isinstance(anc, COMPREHENSIONS):
            first_iter = child is anc.generators[0] and grandchild is anc.generators[0].iter
            if not first_iter:
                if not uses & comprehension_targets(anc):
                    return Repetition(anc, "comprehension")
                uses = uses | set().union(*(names_in(gen.iter) for gen in anc.generators))
            path = _Path()
        child, grandchild = anc, child
    return None


def _guarded(tests: list[ast.expr], result: set[str]) -> bool:
    if not result:
        return False
    for test in tests:
        for node in walk(test):
            if isinstance(node, (ast.Name, ast.Attribute)) and ast.unparse(node) in result:
                return True
    return False


def assigned_to(chain: list[ast.AST], call: ast.AST) -> set[str]:
    """Text of the targets the compile's result is assigned to (``compiled``, ``self.fn``)."""
    for anc in reversed(chain):
        if isinstance(anc, ast.Assign):
            return {ast.unparse(t) for t in anc.targets}
        if isinstance(anc, ast.AnnAssign):
            return {ast.unparse(anc.target)}
        if isinstance(anc, ast.stmt):
            return set()
    return set()


def enclosing_function(chain: list[ast.AST], node: ast.AST) -> ast.AST | None:
    """The function whose body (directly or through classes/ifs) defines ``node``."""
    child = node
    for anc in reversed(chain):
        if isinstance(anc, FUNCTIONS) and child in anc.body:
            return anc
        if isinstance(anc, ast.Lambda) and child is anc.body:
            return anc
        child = anc
    return None


class CompileInLoop(Rule):
    """## What it does
    Reports a compile that runs again and again, paying compile time (and compiler-cache
    memory) on every pass instead of once. Two forms count:

    - a `torch.compile(...)` (or `torch._dynamo.optimize(...)`, `model.compile(...)`,
      `accelerate.utils.compile_regions(...)`) call lexically inside the body of a `for`/`while`
      loop (or a `while` test), or inside a comprehension's element or conditions;
    - a `@torch.compile` / `@torch.compile(...)` decorator on a function defined in such a loop
      body, or defined inside another function's body (the decorator runs on every call of the
      outer function).

    Precisely: a decorator, a default value or a class body inside a loop runs per iteration
    (they run when the `def`/`class` statement runs), while a call inside the *body* of a
    function merely defined in a loop does not run until that function is called, so it is
    not reported. Code in a loop's `else:` block, in a `for` loop's iterable, or in the first
    iterable of a comprehension runs once and is not reported.

    Not reported either, because they compile something different each pass or only once:
    a compile whose arguments use the loop variable or a name the loop body assigns afresh
    (`for layer in model.layers: layer.compile()`, regional compilation by hand;
    `for mode in modes: bench(torch.compile(model, mode=mode))`); a compile followed in the
    loop body by `break`/`return`/`raise` (a retry loop); and a lazy compile under an `if`
    that tests its own result (`if compiled is None: compiled = torch.compile(model)`).

    ## Why is this bad
    Each `torch.compile` call builds a new compiled wrapper. The compiled code is cached per code
    object, so wrapping the same model again does not recompile it (torch 2.13, measured: five
    passes, one graph), but every pass pays the wrapper's set-up, a cache lookup and the guard
    checks (about 1 ms a pass for a 3-layer model on CPU, against 0.1 ms for a model compiled
    once). When something the compiled code captures changes between passes (a closure value, a
    new module object) it does recompile, until `recompile_limit` (8) is hit and the function
    silently runs uncompiled. Inside a training loop this turns a one-off cost into a per-step tax.

    ## Example
    ```python
    for batch in loader:
        model = torch.compile(model)
        loss = model(batch).loss

    def make_step(model):
        @torch.compile
        def step(batch):
            return model(batch)
        return step
    ```

    ## Use instead
    ```python
    model = torch.compile(model)
    for batch in loader:
        loss = model(batch).loss

    @torch.compile
    def step(model, batch):
        return model(batch)
    ```

    ## Fix safety
    No fix: where the compile belongs (before the loop, at module level) depends on what the
    loop changes.

    ## References
    - [torch.compile: caching and recompilation](https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html)
    - [Regional compilation recipe](https://docs.pytorch.org/tutorials/recipes/regional_compilation.html)
    """

    code = "RC104"
    name = "compile-in-loop"
    severity = Severity.WARNING
    message = "a compiled wrapper is built again and again: compile once, outside the loop"
    triggers = (COMPILE_NAME, OPTIMIZE_NAME)

    valid = [
        "import torch\nmodel = torch.compile(model)\nfor batch in loader:\n    loss = model(batch)\n",
        "import torch\nfor layer in model.layers:\n    layer.compile()\n",
        "import torch\nfor i, block in enumerate(model.h):\n    model.h[i] = torch.compile(block)\n",
        "import torch\nfor i in range(len(blocks)):\n    blocks[i] = torch.compile(blocks[i], mode='max-autotune')\n",
        "import torch\nblocks = [torch.compile(b) for b in model.blocks]\n",
        "import torch\nfor m in [torch.compile(model)]:\n    run(m)\n",
        "import torch\nouts = [step(x) for x in torch.compile(model)(batch)]\n",
        "import torch\nfor x in data:\n    pass\nelse:\n    model = torch.compile(model)\n",
        "import torch\nfor name in names:\n    model = build(name)\n    model = torch.compile(model)\n    bench(model)\n",
        "import torch\nfor mode in ('default', 'max-autotune'):\n    bench(torch.compile(model, mode=mode))\n",
        "import torch\nfor step in range(3):\n    def run(x):\n        return torch.compile(g)(x)\n",
        "import torch\n@torch.compile\ndef step(x):\n    return x\n",
        "import torch\nclass Block:\n    @torch.compile(fullgraph=True)\n    def forward(self, x):\n        return x\n",
        "import torch\ncompiled = None\nfor batch in loader:\n    if compiled is None:\n        compiled = torch.compile(model)\n    compiled(batch)\n",
        "import torch\nwhile True:\n    try:\n        model = torch.compile(model)\n        break\n    except RuntimeError:\n        pass\n",
        "import torch\nfor lr in rates:\n    model.compile(optimizer=opt, loss='mse')\n",
        "import re\nfor p in patterns:\n    rx = re.compile(p)\n",
        "import torch\ndef train(model, loader):\n    model = torch.compile(model)\n    for batch in loader:\n        model(batch)\n",
        "import torch\nfor batch in loader:\n    model(batch)\ncompiled = torch.compile(model)\n",
        "import keras\nfor lr in rates:\n    model.compile()\n",
    ]
    invalid = [
        Invalid(
            "import torch\nfor batch in loader:\n    out = torch.compile(model)(batch)\n",
            message="`for` loop on line 2",
        ),
        Invalid("import torch\nfor epoch in range(3):\n    model = torch.compile(model)\n    train(model)\n"),
        Invalid("import torch\nwhile step < total:\n    model.compile()\n    step += 1\n", message="`while` loop"),
        Invalid("import torch\nouts = [torch.compile(model)(x) for x in batches]\n", message="comprehension"),
        Invalid("import torch\nouts = {k: torch.compile(model) for k in keys}\n"),
        Invalid(
            "import torch\nfor i in range(3):\n    @torch.compile\n    def f(x):\n        return x + i\n",
            message="`@torch.compile`",
        ),
        Invalid(
            "import torch\ndef train(model):\n    @torch.compile(fullgraph=True)\n    def step(x):\n        return model(x)\n    return step\n",
            message="`train()`",
        ),
        Invalid(
            "import torch\ndef build():\n    class Head:\n        @torch.compile\n        def forward(self, x):\n            return x\n    return Head\n",
            message="`build()`",
        ),
        Invalid(
            "import torch\nfor epoch in range(3):\n    for layer in model.layers:\n        layer.compile()\n",
            message="line 2",
        ),
        Invalid("from torch import compile as tc\nfor b in loader:\n    tc(model, mode='reduce-overhead')(b)\n"),
        Invalid("import torch._dynamo as dynamo\nfor b in loader:\n    dynamo.optimize('inductor')(model)(b)\n"),
        Invalid(
            "from accelerate.utils import compile_regions\nfor epoch in range(10):\n    model = compile_regions(model)\n"
        ),
        Invalid(
            "import torch\nasync def serve(stream):\n    async for req in stream:\n        await torch.compile(model)(req)\n"
        ),
        Invalid(
            "import torch\nfor step in range(10):\n    if step % 100 == 0:\n        model = torch.compile(model)\n"
        ),
        Invalid(
            "import torch\ndef train():\n    for epoch in range(2):\n        @torch.compile\n        def step(x):\n            return x\n",
            message="loop",
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        what = self._compile_call(node)
        if what is None or self._is_decorator(node):
            return
        # what the compile reads: its arguments, and the receiver of `obj.compile()`
        uses = (names_in(node) - names_in(node.func)) | (names_in(getattr(node.func, "value", None)) - {"torch"})
        found = find_repetition(self.ctx.ancestors, node, uses, assigned_to(self.ctx.ancestors, node))
        if found is not None:
            self.report(node, self._message(what, found))

    def _compile_call(self, node: ast.Call) -> str | None:
        site = compile_config_site(self.ctx, node)
        if site is Site.TORCH_COMPILE:
            return "torch.compile(...)"
        if site is Site.DYNAMO_OPTIMIZE:
            return "torch._dynamo.optimize(...)"
        # (a MODULE_COMPILE site is a method call: ``obj.compile()``)
        if (
            site is Site.MODULE_COMPILE and isinstance(node.func, ast.Attribute) and "torch" in self.ctx.source.text
        ):  # Keras' model.compile() is not ours
            receiver = ast.unparse(node.func.value)
            return f"{receiver}.compile()" if len(receiver) <= 30 else ".compile()"
        if site is Site.COMPILE_REGIONS:
            return "compile_regions(...)"
        return None

    def _is_decorator(self, node: ast.Call) -> bool:
        """``@torch.compile(...)`` decorators are judged with their function (visit_FunctionDef)."""
        parent = self.ctx.parent()
        return (
            isinstance(parent, FUNCTIONS)
            and node in parent.decorator_list
            and bool(decorator_compile_call(self.ctx, node))
        )

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            if not decorator_compile_call(self.ctx, decorator):
                continue
            chain = [*self.ctx.ancestors, node]
            uses = names_in(decorator) - {"torch"} if isinstance(decorator, ast.Call) else set()
            found = find_repetition(chain, decorator, uses, set())
            if found is not None:
                self.report(decorator, self._message("@torch.compile", found))
                continue
            outer = enclosing_function(self.ctx.ancestors, node)
            if outer is not None:
                outer_name = f"`{outer.name}()`" if isinstance(outer, FUNCTIONS) else "a lambda"
                self.report(
                    decorator,
                    f"`@torch.compile` on `{node.name}`, defined inside {outer_name}: a new compiled "
                    "function is built on every call; define it once at module level",
                )

    visit_AsyncFunctionDef = visit_FunctionDef

    @staticmethod
    def _message(what: str, found: Repetition) -> str:
        cost = "a new compiled wrapper (set-up and guard checks; a recompile when what it captures changes)"
        if found.kind == "comprehension":
            return f"`{what}` inside a comprehension builds {cost} for every item: compile once, outside it"
        loop = "while" if isinstance(found.node, ast.While) else "for"
        return (
            f"`{what}` inside the `{loop}` loop on line {found.node.lineno} builds {cost} on every "
            "iteration: compile once, before the loop"
        )
