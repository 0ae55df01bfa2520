"""RC405 unused-plugin."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from regcomp_lint.analysis import callsites
from regcomp_lint.analysis.bindings import Where
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Severity

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
#: Parents under which reading a name only inspects the plugin (``if plugin is None``).
INSPECTING = (ast.Compare, ast.If, ast.While, ast.Assert, ast.UnaryOp, ast.IfExp)


@dataclass
class _Plugin:
    name: str
    call: ast.Call
    target: ast.Name
    statement: ast.stmt
    module_level: bool


class UnusedPlugin(Rule):
    """## What it does
    Reports a `TorchDynamoPlugin(...)` bound to a name that the file never hands on: never
    passed to an `Accelerator(...)` or any other call, never returned, stored on an object or
    in a container. Reading the plugin's fields (`plugin.backend`) or testing it
    (`if plugin is None`) does not count as handing it on.

    A plugin defined at module level in a file that builds no `Accelerator` is not reported:
    such a file is usually a config module whose plugin is imported elsewhere.

    ## Why is this bad
    A plugin that no `Accelerator` receives configures nothing. The script looks like it
    compiles with the settings written there (backend, mode, regional compilation), but the
    accelerator falls back to `ACCELERATE_DYNAMO_*` environment variables or `accelerate
    config`, which usually means no compilation at all. It happens when a plugin is added and
    the `Accelerator(...)` line is not updated, or when a second `Accelerator` is built from
    scratch in another branch.

    ## Example
    ```python
    dynamo_plugin = TorchDynamoPlugin(backend="inductor", use_regional_compilation=True)
    accelerator = Accelerator(mixed_precision="bf16")
    ```

    ## Use instead
    ```python
    dynamo_plugin = TorchDynamoPlugin(backend="inductor", use_regional_compilation=True)
    accelerator = Accelerator(mixed_precision="bf16", dynamo_plugin=dynamo_plugin)
    ```

    ## Fix safety
    No fix: which `Accelerator` should receive the plugin (or whether the plugin is left over
    and should go) is the author's decision. `regcomp-fix` passes it to every `Accelerator(...)`
    of the script when it converts one.

    ## References
    - [Accelerate: compilation](https://huggingface.co/docs/accelerate/usage_guides/compilation)
    - [`TorchDynamoPlugin`](https://huggingface.co/docs/accelerate/package_reference/utilities#accelerate.utils.TorchDynamoPlugin)
    """

    code = "RC405"
    name = "unused-plugin"
    severity = Severity.WARNING
    message = "`TorchDynamoPlugin` is never passed to an `Accelerator`: it configures nothing"
    triggers = ("DynamoPlugin",)

    valid = [
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
        "plugin = TorchDynamoPlugin(backend='inductor')\naccelerator = Accelerator(dynamo_plugin=plugin)\n",
        # returned from a factory, passed to a helper, stored on self or in a dict
        "from accelerate.utils import TorchDynamoPlugin\nfrom accelerate import Accelerator\ndef make():\n"
        "    plugin = TorchDynamoPlugin(backend='eager')\n    return plugin\nacc = Accelerator()\n",
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\nacc = Accelerator()\n"
        "def main():\n    p = TorchDynamoPlugin(backend='eager')\n    build_accelerator(p)\n",
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\nclass T:\n    def __init__(self):\n"
        "        plugin = TorchDynamoPlugin(backend='inductor')\n        self.plugin = plugin\n        self.acc = Accelerator()\n",
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
        "plugin = TorchDynamoPlugin(backend='inductor')\nacc = Accelerator(**{'dynamo_plugin': plugin})\n",
        # used by a function defined before it (module-level name read at call time)
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
        "def main():\n    return Accelerator(dynamo_plugin=PLUGIN)\nPLUGIN = TorchDynamoPlugin(backend='inductor')\n",
        # a config module: the plugin is imported by the training script
        "from accelerate.utils import TorchDynamoPlugin\nDYNAMO = TorchDynamoPlugin(backend='inductor', mode='max-autotune')\n",
        # not accelerate's plugin
        "from mylib import TorchDynamoPlugin\nfrom accelerate import Accelerator\np = TorchDynamoPlugin()\nacc = Accelerator()\n",
    ]
    invalid = [
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "dynamo_plugin = TorchDynamoPlugin(backend='inductor', use_regional_compilation=True)\n"
            "accelerator = Accelerator(mixed_precision='bf16')\n",
            message="`dynamo_plugin`",
        ),
        # only inspected and configured, never handed on
        Invalid(
            "import accelerate\nfrom accelerate.utils import TorchDynamoPlugin as TDP\ndef main(args):\n"
            "    plugin = TDP(backend=args.backend)\n    plugin.use_regional_compilation = True\n"
            "    if plugin is not None and plugin.backend != 'no':\n        print('compiling with', plugin.backend)\n"
            "    accelerator = accelerate.Accelerator()\n",
        ),
        # rebound before use: the first plugin is lost
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "plugin = TorchDynamoPlugin(backend='inductor')\nplugin = TorchDynamoPlugin(backend='eager')\n"
            "acc = Accelerator(dynamo_plugin=plugin)\n",
        ),
        # a function-local plugin; the accelerator elsewhere is built without it
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "def setup():\n    plugin = TorchDynamoPlugin(backend='inductor')\n    return Accelerator()\n",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.bindings = ctx.semantic.bindings
        self._plugins: list[_Plugin] = []
        self._reads: list[tuple[ast.Name, ast.AST | None, Where]] = []
        self._builds_accelerator = False
        self._exported: set[str] = set()

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1:
            self._binding(node.targets[0], node.value, node)
            if isinstance(node.targets[0], ast.Name) and node.targets[0].id == "__all__" and not self.ctx.ancestors[1:]:
                self._exported |= {
                    e.value
                    for e in getattr(node.value, "elts", [])
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._binding(node.target, node.value, node)

    def _binding(self, target: ast.AST, value: ast.AST, statement: ast.stmt) -> None:
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Call)
            and callsites.is_dynamo_plugin(self.ctx, value.func)
        ):
            module_level = not any(isinstance(a, SCOPES) for a in self.ctx.ancestors)
            self._plugins.append(_Plugin(target.id, value, target, statement, module_level))

    def visit_Call(self, node: ast.Call) -> None:
        if not self._builds_accelerator and callsites.is_accelerator(self.ctx, node.func):
            self._builds_accelerator = True

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._reads.append((node, self.ctx.parent(), self.bindings.here(node)))

    def finish(self) -> None:
        for plugin in self._plugins:
            if plugin.module_level and (not self._builds_accelerator or plugin.name in self._exported):
                continue
            if not self._handed_on(plugin):
                message = f"`{plugin.name}` is a `TorchDynamoPlugin` that no `Accelerator` receives: pass `dynamo_plugin={plugin.name}`"
                self.report(plugin.target, message, end_node=plugin.statement)

    def _handed_on(self, plugin: _Plugin) -> bool:
        for name, parent, where in self._reads:
            if name.id != plugin.name:
                continue
            bound = self.bindings.lookup(name, where)
            if bound is None or bound.value is not plugin.call:
                continue
            if isinstance(parent, ast.Attribute) and parent.value is name:
                continue  # plugin.backend, plugin.use_regional_compilation = ...
            if isinstance(parent, INSPECTING) and not isinstance(parent, ast.IfExp):
                continue
            if isinstance(parent, ast.IfExp) and parent.test is name:
                continue
            return True
        return False
