"""Converting a script that already uses Accelerate: give every ``Accelerator(...)`` the plugin.

Every construction (all branches) gets ``dynamo_plugin=``, keeping its other arguments; a legacy
``dynamo_backend=X`` becomes the plugin's ``backend`` (RC105); an existing ``TorchDynamoPlugin``
is edited, never duplicated; hand compiles of prepared models are folded in; left-over
``X.backward()`` calls go through the accelerator (RC401).
"""

from __future__ import annotations

from functools import partial

import libcst as cst

from regcomp_lint.analysis.compile_settings.launches import launched_fields
from regcomp_lint.codemod.builders import call_statement, expression, keyword, rename_keyword, with_keyword
from regcomp_lint.codemod.compile_sites import (
    CompileSite,
    collect_settings,
    find_compile_sites,
    refuse_compiles_in_builders,
)
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.main_only_steps import main_only_scheduler_steps
from regcomp_lint.codemod.named_reads import unwrap_for_named_reads
from regcomp_lint.codemod.options import ConvertOptions
from regcomp_lint.codemod.plain_model_access import reach_the_plain_model, unwrap_past_regions
from regcomp_lint.codemod.regional import repeated_blocks
from regcomp_lint.codemod.rewrites import Conversion, Planner, function_name, plugin_calls
from regcomp_lint.codemod.roles import backward_calls, bindings
from regcomp_lint.codemod.settings import LAUNCH_FLAGS_NOTE, Refusal, ScriptSettings, Setting, resolve
from regcomp_lint.codemod.tree import Function, Tree, code, find_all, key_of, read_keys, single_target
from regcomp_lint.knowledge.accelerate_api import DYNAMO_PLUGIN_IMPORT


class AcceleratePlanner(Planner):
    def __init__(self, tree: Tree, options: ConvertOptions, constructions: list[cst.Call]) -> None:
        super().__init__(tree, options)
        self.constructions = constructions

    def plan(self) -> Conversion:
        tree = self.tree
        self._find_accelerator()
        script = ScriptSettings()
        plugin = self._existing_plugin(script)
        for call in self.constructions:
            legacy = keyword(call, "dynamo_backend")
            if legacy is not None:
                if keyword(call, "dynamo_plugin") is not None:
                    raise Refusal(
                        f"Accelerator(...) at line {tree.line(call)} passes both dynamo_backend and dynamo_plugin, which raises (RC106); keep one"
                    )
                script.add("backend", legacy.value, f"dynamo_backend= at line {tree.line(call)}")
        prepared = self._prepared_keys()
        sites = find_compile_sites(tree, self.scope, prepared)
        refuse_compiles_in_builders(tree, self.scope, prepared)
        collect_settings(tree, sites, script)
        for site in sites:
            self.notes.append(site.removal_note())
            self.remove_hand_compile(site.remove, site.call, site.origin)
        reason = self._regional_reason(prepared)
        settings, setting_notes = resolve(script, self.options, reason, launched_fields(tree.filename or "-"))
        self.notes += setting_notes
        if plugin is None and not settings and not sites:
            # the launch chooses every field: Accelerator() reads it as it is, an empty plugin adds nothing
            self.notes.append("no plugin added: Accelerator() already takes the launch's compile settings")
        else:
            plugin_name = self._apply_plugin(plugin, settings, script)
            self._connect(plugin, plugin_name)
            if plugin is None and plugin_name is not None:
                self._compiled_models_note(sites, settings, script)
                unwrap_for_named_reads(self, self._prepared_models())
                if not sites and not any(keyword(c, "dynamo_backend") is not None for c in self.constructions):
                    reach_the_plain_model(self, self._prepared_models())  # the original reached the plain model
                elif "use_regional_compilation" in settings and settings["use_regional_compilation"].code == "True":
                    unwrap_past_regions(self)  # the original's whole-model wrapper read attributes through
        self._backwards()
        if reason and "use_regional_compilation" in settings and settings["use_regional_compilation"].code == "True":
            self.notes.append(f"use_regional_compilation=True: {reason}")
        if self.options.plan is not None:
            self.notes += [f"plan: {why}" for why in self.options.plan.why]
        steps = main_only_scheduler_steps(self)
        if self.edits.empty:
            self.unchanged = "; ".join([self._why_unchanged(plugin), *steps])
        self.notes += steps
        return self.conversion()

    def _why_unchanged(self, plugin: cst.Call | None) -> str:
        """Why an Accelerate script needs nothing: it passes its plugin already (or the launch
        decides), and whether the file trains at all."""
        tree = self.tree
        lines = ", ".join(str(tree.line(c)) for c in self.constructions)
        accelerators = f"Accelerator(...) at line{'s' if len(self.constructions) > 1 else ''} {lines}"
        if plugin is not None:
            shown = " ".join(code(plugin).split()).replace("( ", "(").replace(", )", ")").replace(",)", ")")
            if len(shown) > 100:
                shown = f"TorchDynamoPlugin({', '.join(f'{a.keyword.value}=...' for a in plugin.args if a.keyword)})"
            why = f"it already compiles through Accelerate: {shown} at line {tree.line(plugin)} is passed to {accelerators}"
        else:
            why = "; ".join(self.notes) or f"{accelerators} already gets its dynamo_plugin"
        trains = any(
            isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward"
            for c in find_all(tree.module, cst.Call)
        )
        if not trains:
            why += "; no X.backward() in this file (its training loop runs elsewhere)"
        return why

    def _find_accelerator(self) -> None:
        tree = self.tree
        functions: list[Function] = []
        keys: set[str] = set()
        for call in self.constructions:
            function = tree.function_of(call)
            if all(function is not f for f in functions):
                functions.append(function)
            parent = tree.parent(call)
            target = single_target(parent) if isinstance(parent, cst.Assign) else None
            if target is not None:
                keys.add(target[0])
        if len(functions) > 1:
            where = ", ".join(function_name(f) for f in functions)
            raise Refusal(
                f"Accelerator(...) is built in several functions ({where}); build it in one place before converting"
            )
        self.scope = functions[0]
        self.acc_key = keys.pop() if len(keys) == 1 else "accelerator"

    def _existing_plugin(self, script: ScriptSettings) -> cst.Call | None:
        tree = self.tree
        found = plugin_calls(tree)
        if len(found) > 1:
            lines = ", ".join(str(tree.line(c)) for c in found)
            raise Refusal(f"TorchDynamoPlugin(...) is built more than once (lines {lines}); keep one before converting")
        if not found:
            return None
        plugin = found[0]
        for arg in plugin.args:
            if arg.keyword is None or arg.star:
                raise Refusal(
                    f"TorchDynamoPlugin(...) at line {tree.line(plugin)} takes positional or ** arguments; spell them as keywords"
                )
            script.add(arg.keyword.value, arg.value, f"TorchDynamoPlugin(...) at line {tree.line(plugin)}")
        return plugin

    def _prepared_keys(self) -> set[str]:
        keys: set[str] = set()
        for call in find_all(self.scope, cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "prepare" and key_of(func.value) == self.acc_key:
                keys |= {key for a in call.args if (key := key_of(a.value))}
        return keys

    def _prepared_models(self) -> list[tuple[str, int]]:
        """The models given to the accelerator's ``prepare`` calls in the scope (as the lint's
        roles read them), with the line of their ``prepare``: each one the plugin compiles."""
        view = lint_view(self.tree)
        models: list[tuple[str, int]] = []
        for call in find_all(self.scope, cst.Call):
            func = call.func
            if not (
                isinstance(func, cst.Attribute) and func.attr.value == "prepare" and key_of(func.value) == self.acc_key
            ):
                continue
            for arg in call.args:
                key = key_of(arg.value)
                expr = view.expression_at(arg.value)
                if key is None or expr is None or view.roles is None or any(k == key for k, _ in models):
                    continue
                if view.roles.is_model(expr, view.where(expr)):
                    models.append((key, self.tree.line(call)))
        return models

    def _compiled_models_note(
        self, sites: list[CompileSite], settings: dict[str, Setting], script: ScriptSettings
    ) -> None:
        """Say which models the added plugin compiles when that is more than one model, or more
        than the script compiled by hand (``prepare`` compiles every model it is given)."""
        backend = settings.get("backend")
        if backend is not None and backend.code in ('"no"', "'no'"):
            return
        if any(keyword(c, "dynamo_backend") is not None for c in self.constructions):
            return  # dynamo_backend= compiled every prepared model already
        models = self._prepared_models()
        by_hand = list(dict.fromkeys(site.key for site in sites))
        others = [(key, line) for key, line in models if key not in by_hand]
        if not others or (not by_hand and len(models) < 2):
            return
        lines = sorted({line for _, line in others})
        at = f"prepare() at line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}"
        shown = ", ".join(key for key, _ in others)
        if not by_hand:
            self.notes.append(f"the plugin compiles every model prepared through the accelerator: {shown} ({at})")
            return
        how = ", ".join(f"{k}={s.code}" for k, s in settings.items() if k != "backend")
        when = f" when {code(script.condition)}" if script.condition is not None else ""
        self.notes.append(
            f"the plugin compiles every model prepared through the accelerator: {shown} ({at}) "
            f"{'is' if len(others) == 1 else 'are'} now compiled too{when}, not only {', '.join(by_hand)}"
            + (f", with {how}" if how else "")
        )

    def _regional_reason(self, prepared: set[str]) -> str | None:
        for key in sorted(prepared):
            for node in bindings(self.scope, key):
                if isinstance(node, cst.Assign) and not self.is_removed(node):
                    reason = repeated_blocks(self.tree, node.value)
                    if reason:
                        return reason
        return None

    # -- the plugin ---------------------------------------------------------------------------
    def _apply_plugin(
        self, plugin: cst.Call | None, settings: dict[str, Setting], script: ScriptSettings
    ) -> str | None:
        """Edit the existing plugin or plan a new one; the name the Accelerators pass (None: inline)."""
        tree = self.tree
        if plugin is not None:
            changes = {
                k: s
                for k, s in settings.items()
                if s.source != "script" and (k not in script.values or code(script.values[k]) != s.code)
            }
            if script.condition is not None and "backend" in settings:
                changes["backend"] = settings["backend"]
            if changes:
                module = self.module

                def edit(updated: cst.Call) -> cst.Call:
                    for key, setting in changes.items():
                        updated = with_keyword(updated, key, expression(setting.code, module))
                    return updated

                self.edits.on(plugin, edit)
                shown = ", ".join(f"{k}={s.code}" for k, s in changes.items())
                self.notes.append(f"TorchDynamoPlugin at line {tree.line(plugin)}: set {shown}")
            parent = tree.parent(plugin)
            target = single_target(parent) if isinstance(parent, cst.Assign) else None
            return target[0] if target else None
        if all(keyword(c, "dynamo_plugin") is not None for c in self.constructions):
            return None
        self._create_plugin(settings)
        self.imports.append(DYNAMO_PLUGIN_IMPORT)
        return "dynamo_plugin"

    def _create_plugin(self, settings: dict[str, Setting]) -> None:
        tree = self.tree
        for place in (self.scope, tree.module):
            if bindings(place, "dynamo_plugin"):
                raise Refusal("the script already uses the name 'dynamo_plugin'; rename it before converting")
        if len(self.constructions) == 1:
            line = tree.line_of(self.constructions[0])
            block = tree.block_of(line)
            index = block.body.index(line) if block is not None else None
        else:
            block = self.descend(tree.body_of(self.scope), list(self.constructions))
            index = min(i for i in (self.project(block, c) for c in self.constructions) if i is not None)
        if block is None or index is None:
            raise Refusal("cannot find a statement to put the TorchDynamoPlugin before; convert by hand")
        # in the settings' order, so the refusal names the same setting whatever the hash seed
        read = dict.fromkeys(
            k.split(".")[0] for s in settings.values() for k in read_keys(expression(s.code, self.module))
        )
        for name in read:
            if self.binding_index(block, name, self.scope) >= index:
                raise Refusal(
                    f"the plugin's settings use {name!r}, assigned after the Accelerator is built; move it up"
                )
        text = [f"{k}={s.code}" for k, s in settings.items()]
        plugin = call_statement("dynamo_plugin = ", "TorchDynamoPlugin", text, self.module, self.indentation_of(block))
        self.edits.add_statements(block, index, [plugin], after=False, under_comments=True)
        self.notes.append(
            f"created dynamo_plugin = TorchDynamoPlugin({', '.join(text)}) in {function_name(self.scope)}"
        )
        self.notes.append(LAUNCH_FLAGS_NOTE)

    def _connect(self, plugin: cst.Call | None, plugin_name: str | None) -> None:
        tree = self.tree
        for call in self.constructions:
            given = keyword(call, "dynamo_plugin")
            if given is not None:
                if given.value is not plugin and (plugin_name is None or key_of(given.value) != plugin_name):
                    self.notes.append(
                        f"Accelerator(...) at line {tree.line(call)} passes its own dynamo_plugin={code(given.value)}; left as is"
                    )
                continue
            if plugin_name is None:
                raise Refusal(
                    f"Accelerator(...) at line {tree.line(call)} needs the plugin, which is built inline elsewhere; assign it to a name first"
                )
            value = cst.Name(plugin_name)
            if keyword(call, "dynamo_backend") is not None:
                self.edits.on(
                    call, partial(rename_keyword, old="dynamo_backend", new_name="dynamo_plugin", value=value)
                )
                self.notes.append(
                    f"Accelerator(...) at line {tree.line(call)}: dynamo_backend= -> dynamo_plugin={plugin_name} (RC105)"
                )
            else:
                self.edits.on(call, partial(with_keyword, name="dynamo_plugin", value=value))
                self.notes.append(f"Accelerator(...) at line {tree.line(call)}: added dynamo_plugin={plugin_name}")

    def _backwards(self) -> None:
        tree = self.tree
        count = 0
        for call in backward_calls(tree, {self.acc_key}):
            if not self._reaches(tree.function_of(call)):
                self.notes.append(
                    f"backward() at line {tree.line(call)} runs outside {function_name(self.scope)}: left as is (RC401)"
                )
                continue
            self.rewrite_backward(call)
            count += 1
        if count:
            self.notes.append(f"{count} X.backward() call(s) -> {self.acc_key}.backward(X) (RC401)")

    def _reaches(self, function: Function) -> bool:
        """Does ``function`` run with the accelerator at hand (or get it through a parameter)?"""
        tree = self.tree
        if function is self.scope or isinstance(self.scope, cst.Module):
            return True
        if any(f is self.scope for f in tree.enclosing_functions(function)):
            return True
        owner = tree.class_of(self.scope)
        if self.acc_key.startswith("self.") and owner is not None and tree.class_of(function) is owner:
            return True
        seen: list[Function] = []
        frontier: list[Function] = [self.scope]
        while frontier:
            current = frontier.pop()
            for callee, _ in self.graph.calls_from(current):
                if callee is function:
                    return True
                if all(callee is not s for s in seen):
                    seen.append(callee)
                    frontier.append(callee)
        return False
