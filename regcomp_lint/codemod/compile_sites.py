"""Hand compiles of a model that the plugin takes over.

``model = torch.compile(model, **kw)``, ``model = torch.compile(model) if cond else model``,
``model = torch.compile(Net())`` and ``model.compile(**kw)`` — also under ``if cond:`` — are
removed (or unwrapped) and their keywords and condition handed to the plugin. A compiled alias
that trains while the plain name keeps saving and loading (``fwd_model = torch.compile(model) if
args.compile else model``) becomes ``fwd_model = model``: after ``prepare()`` both names hold
the prepared model, and the conversion's checkpoint rewrites unwrap it for saving. Compiles of
anything else (a compiled function, a helper) are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from regcomp_lint.codemod.settings import Refusal, ScriptSettings
from regcomp_lint.codemod.tree import Function, Tree, code, find_all, is_main_guard, key_of, single_target
from regcomp_lint.knowledge import accelerate_api, torch_api


@dataclass
class CompileSite:
    call: cst.Call
    key: str
    #: the small statement to delete, or None when the call is unwrapped in place
    remove: cst.BaseSmallStatement | None
    condition: cst.BaseExpression | None
    origin: str
    #: ``fwd_model = torch.compile(model) [if c else model]``: the assignment, whose value
    #: becomes the model's name (``fwd_model = model``)
    alias: cst.Assign | None = None
    #: ``torch.compile(model)`` as a statement: its result is dropped, so it compiles nothing
    #: (torch.compile returns a wrapper and leaves the model as it is); removed as dead code, its
    #: keywords and condition not handed to the plugin
    discarded: bool = False

    def removal_note(self) -> str:
        """What the conversion says of taking this compile out."""
        if self.discarded:
            return (
                f"removed {self.origin}: its result was discarded, so it compiled nothing (torch.compile returns a "
                f"compiled wrapper and leaves {self.key} as it is) and the original trained {self.key} uncompiled; "
                "the plugin compiles it in prepare(), as for any uncompiled model"
            )
        return f"removed {self.origin}: the plugin compiles the model in prepare()"


def find_compile_sites(tree: Tree, function: Function, models: set[str]) -> list[CompileSite]:
    sites = []
    for call in find_all(function, cst.Call, enter_functions=False):
        site = _site(tree, function, call, models)
        if site is not None:
            sites.append(site)
    return sites


def refuse_compiles_in_builders(tree: Tree, function: Function, models: set[str]) -> None:
    """``model = build()`` with ``build`` a function of the file, called once, that compiles the
    model it returns (or a part of it) by hand: the plugin would compile it again in prepare(),
    around that compile and whatever its settings; refused, naming both lines. A part or a loop
    over the blocks gets the part refusal, naming the compile's line; a compile whose result is
    dropped compiles nothing and is left alone."""
    for assign in find_all(function, cst.Assign, enter_functions=False):
        built = single_target(assign)
        call = assign.value
        if built is None or built[0] not in models or not isinstance(call, cst.Call):
            continue
        builder = tree.function_named(call)
        returns = [r.value for r in find_all(builder, cst.Return, enter_functions=False)] if builder else []
        returned = key_of(returns[0]) if len(returns) == 1 and returns[0] is not None else None
        if builder is None or returned is None or len(tree.references_to(builder)) != 1:
            continue
        where = (
            f"in {builder.name.value}(), which makes the trained model `{built[0]}` ({built[0]} = "
            f"{code(call.func)}(...) at line {tree.line(assign)})"
        )
        try:
            sites = find_compile_sites(tree, builder, {returned})
        except Refusal as part:  # a part or the blocks compiled by hand there
            raise Refusal(f"{where}: {part}") from None
        for site in sites:
            if not site.discarded:
                raise Refusal(
                    f"{site.origin} compiles {returned} {where}: the plugin would compile it again in prepare(), "
                    f"around that compile; compile the model where the script makes it (`{built[0]} = "
                    f"torch.compile({built[0]}, ...)`) before converting, or keep the script as it is "
                    "(`# regcomp-fix: skip`)"
                )


def _site(tree: Tree, function: Function, call: cst.Call, models: set[str]) -> CompileSite | None:
    if tree.resolves_to(call.func, *torch_api.TORCH_COMPILE):
        origin = _origin(tree, call)
        target = call.args[0].value if call.args and call.args[0].keyword is None and not call.args[0].star else None
        parent = tree.parent(call)
        if isinstance(parent, cst.Assign) and target is not None:
            _refuse_a_part(tree, function, call, target, models, into=[t.target for t in parent.targets])
        elif target is not None and not isinstance(parent, cst.Expr):  # [torch.compile(b) for b in model.h]
            _refuse_a_part(tree, function, call, target, models, into=[])
        if isinstance(parent, cst.Assign):
            assigned = single_target(parent)
            model = key_of(target) if target is not None else None
            if assigned is not None and assigned[0] not in models and model in models:
                assert model is not None  # fwd_model = torch.compile(model, mode=...)
                return CompileSite(call, model, None, _condition(tree, function, parent), origin, alias=parent)
            if assigned is None or assigned[0] not in models:
                _refuse_if_model(target, models, origin)
                return None
            if target is not None and key_of(target) == assigned[0]:
                return CompileSite(call, assigned[0], parent, _condition(tree, function, parent), origin)
            if target is not None and key_of(target) is None:  # model = torch.compile(Net(...))
                return CompileSite(call, assigned[0], None, _condition(tree, function, parent), origin)
            raise Refusal(
                f"{origin} compiles {code(target) if target else 'nothing'} into {assigned[0]}; compile the model in place before converting"
            )
        if isinstance(parent, cst.IfExp) and parent.body is call:
            assign = tree.parent(parent)
            assigned = single_target(assign) if isinstance(assign, cst.Assign) else None
            if (
                isinstance(assign, cst.Assign)
                and assigned
                and assigned[0] in models
                and target is not None
                and key_of(target) == assigned[0]
                and key_of(parent.orelse) == assigned[0]
            ):
                own = _condition(tree, function, assign)
                if own is not None:
                    raise Refusal(f"{origin} is conditional twice; simplify it before converting")
                return CompileSite(call, assigned[0], assign, parent.test, origin)
            model = key_of(target) if target is not None else None
            if (
                isinstance(assign, cst.Assign)
                and assigned
                and model in models
                and key_of(parent.orelse) == model
                and _condition(tree, function, assign) is None
            ):  # fwd_model = torch.compile(model) if args.compile else model
                assert model is not None
                return CompileSite(call, model, None, parent.test, origin, alias=assign)
        if isinstance(parent, cst.Expr) and target is not None and key_of(target) in models:
            model = key_of(target)
            assert model is not None
            return CompileSite(call, model, parent, None, origin, discarded=True)
        _refuse_if_model(target, models, origin)
        return None
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "compile":
        _refuse_a_part(tree, function, call, func.value, models, into=[func.value])
    key = key_of(func.value) if isinstance(func, cst.Attribute) and func.attr.value == "compile" else None
    if key is not None and key in models:
        origin = _origin(tree, call)
        parent = tree.parent(call)
        if isinstance(parent, cst.Expr):
            return CompileSite(call, key, parent, _condition(tree, function, parent), origin)
        raise Refusal(f"{origin}: the result of nn.Module.compile() is used; call it as a statement before converting")
    return None


def _origin(tree: Tree, call: cst.Call) -> str:
    """How notes and refusals name a compile call (printed only for those: the scope's other
    calls are many)."""
    return f"{code(call.func)}(...) at line {tree.line(call)}"


def _refuse_if_model(target: cst.BaseExpression | None, models: set[str], origin: str) -> None:
    if target is not None and key_of(target) in models:
        raise Refusal(
            f"{origin} compiles the model in a way the conversion does not take apart; use model = torch.compile(model, ...) before converting"
        )


def _model_part(node: cst.BaseExpression, models: set[str]) -> str | None:
    """The model ``node`` is a part of (``model.encoder``, ``model[0]``, ``self.net.head``), or None."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
        key = key_of(node)
        if key is not None and key in models:
            return key
    return None


def _refuse_a_part(
    tree: Tree,
    function: Function,
    call: cst.Call,
    target: cst.BaseExpression,
    models: set[str],
    into: list[cst.BaseExpression],
) -> None:
    """A part of the model compiled by hand and put back (``model.encoder =
    torch.compile(model.encoder)``, ``model.layers[i] = torch.compile(layer)``,
    ``model.encoder.compile()``): the plugin compiles the whole model in prepare(), around the
    compiled part, whose own keywords the outer compile does not follow, and also where the
    script's condition skips the line; so the script is refused, not compiled twice."""
    part = next((t for t in into if _model_part(t, models) is not None), None)
    loop = next((found for t in [target, *into] if (found := _loop_over_parts(tree, function, t, models))), None)
    if part is None and loop is None:
        return
    model = _model_part(part, models) if part is not None else loop[1] if loop is not None else None
    what = code(target) if part is None or code(target) == code(part) else f"{code(target)} into {code(part)}"
    if loop is not None:
        what += f", each module of `for {code(loop[0].target)} in {code(loop[0].iter)}` (line {tree.line(loop[0])})"
    conditional = False
    for anc in tree.ancestors(call):
        if anc is function:
            break
        conditional = conditional or (isinstance(anc, cst.If) and not is_main_guard(anc))
    skipped = " and also where the script's condition skips that line" if conditional else ""
    raise Refusal(
        f"{_origin(tree, call)} compiles {what}, one part of the trained model `{model}`, by hand: the plugin "
        f"would compile the whole of `{model}` in prepare(), around the compiled part (whose own settings it "
        f"does not follow){skipped}{_NOT_REGIONAL if loop else ''}; compile the whole model instead (`{model} = torch.compile({model}, ...)`) "
        "before converting, or keep the script as it is (`# regcomp-fix: skip`)"
    )


#: a hand loop over the blocks is not what regional compilation does (accelerate_api.REGIONAL_ALSO_COMPILES)
_NOT_REGIONAL = (
    f"; use_regional_compilation=True would not be the same either: it also compiles "
    f"{accelerate_api.REGIONAL_ALSO_COMPILES}"
)

#: calls that hand a loop the modules of what they are called on (``enumerate(model.h)``, ``model.children()``)
_ITERATING_FUNCTIONS = frozenset({"enumerate", "reversed", "list", "tuple"})
_ITERATING_METHODS = frozenset({"children", "named_children", "modules", "named_modules", "values", "items"})


def _loop_over_parts(
    tree: Tree, function: Function, node: cst.BaseExpression, models: set[str]
) -> tuple[cst.For | cst.CompFor, str] | None:
    """The ``for`` loop (or comprehension) around ``node`` that binds it to the modules of a
    trained model or a part of one (``for block in model.blocks:``, ``for i, b in
    enumerate(model.h):``, ``[torch.compile(b) for b in model.h]``), and that model."""
    if not isinstance(node, cst.Name):
        return None
    for anc in tree.ancestors(node):
        if anc is function:
            return None
        if isinstance(anc, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            anc = anc.for_in
        if not isinstance(anc, (cst.For, cst.CompFor)) or node.value not in _names_bound(anc.target):
            continue
        source = anc.iter
        while isinstance(source, cst.Call):
            func = source.func
            if isinstance(func, cst.Name) and func.value in _ITERATING_FUNCTIONS and source.args:
                source = source.args[0].value
            elif isinstance(func, cst.Attribute) and func.attr.value in _ITERATING_METHODS:
                source = func.value
            else:
                break
        key = key_of(source)
        model = key if key is not None and key in models else _model_part(source, models)
        return (anc, model) if model is not None else None
    return None


def _names_bound(target: cst.BaseExpression) -> set[str]:
    return {name.value for name in find_all(target, cst.Name)}


def _condition(tree: Tree, function: Function, stmt: cst.CSTNode) -> cst.BaseExpression | None:
    """The test of the ``if`` blocks around ``stmt`` (joined with ``and``), not the script's
    ``if __name__ == "__main__":``; refuses else-branches and loops."""
    tests: list[cst.BaseExpression] = []
    child: cst.CSTNode = stmt
    for anc in tree.ancestors(stmt):
        if anc is function:
            break
        if is_main_guard(anc) and tree.contains(anc.body, child):
            pass  # the script's entry point: it always runs when the script trains
        elif isinstance(anc, cst.If):
            if not tree.contains(anc.body, child):
                raise Refusal(
                    f"the compile at line {tree.line(stmt)} is in an else branch; move it under a plain if before converting"
                )
            tests.append(anc.test)
        elif isinstance(anc, (cst.For, cst.While)):
            raise Refusal(
                f"the compile at line {tree.line(stmt)} runs inside a loop (RC104); compile once before the loop"
            )
        child = anc
    if not tests:
        return None
    if len(tests) == 1:
        return tests[0]
    from regcomp_lint.codemod.builders import parenthesized

    joined = " and ".join(parenthesized(t) for t in reversed(tests))
    return cst.parse_expression(joined)


def collect_settings(tree: Tree, sites: list[CompileSite], settings: ScriptSettings) -> None:
    """Fold every compile's keywords and condition into ``settings`` (refusing what the plugin cannot take)."""
    for site in sites:
        if site.discarded:
            continue  # compiled nothing in the original
        args = site.call.args[1:] if _is_torch_compile(tree, site.call) else site.call.args
        for arg in args:
            _take_keyword(tree, arg, site, settings)
        settings.require(site.condition, site.origin)


def _is_torch_compile(tree: Tree, call: cst.Call) -> bool:
    return tree.resolves_to(call.func, *torch_api.TORCH_COMPILE)


def _take_keyword(tree: Tree, arg: cst.Arg, site: CompileSite, settings: ScriptSettings) -> None:
    if arg.star:
        raise Refusal(
            f"{site.origin} passes {arg.star}{code(arg.value)}; spell the compile keywords out before converting"
        )
    if arg.keyword is None:
        raise Refusal(f"{site.origin} passes a positional argument after the model; use keywords before converting")
    name = arg.keyword.value
    if name == "model":
        return
    if name not in accelerate_api.PLUGIN_COMPILE_KEYWORDS:
        raise Refusal(f"{site.origin} passes {name}=, which TorchDynamoPlugin does not take")
    if name == "backend" and not _could_be_backend_name(tree, arg.value):
        raise Refusal(
            f"{site.origin} uses a callable backend ({code(arg.value)}); TorchDynamoPlugin takes backend names only"
        )
    settings.add(name, arg.value, site.origin, hand_compile=True)


def _could_be_backend_name(tree: Tree, value: cst.BaseExpression) -> bool:
    if isinstance(value, (cst.Lambda,)):
        return False
    if isinstance(value, cst.Name):
        return not any(isinstance(s, cst.FunctionDef) and s.name.value == value.value for s in tree.module.body)
    return True
