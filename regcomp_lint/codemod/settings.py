"""Which ``TorchDynamoPlugin`` keywords the converted script gets, and where each came from.

Precedence, highest first: explicit options > the plan > what the script had (its
``torch.compile`` / ``model.compile`` / ``dynamo_backend`` / existing plugin) > how the project
launches the script (``accelerate launch --dynamo_*`` in its launch files, their config files:
such a field is left unset, so the launch still decides it) > defaults (``backend="inductor"``;
``use_regional_compilation=True`` when the model has repeated blocks). A compile that only ran
under a condition keeps it: ``backend="inductor" if args.compile else "no"`` (``None if ... else
"no"`` when the launch chooses the backend).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst

from regcomp_lint.analysis.compile_settings.launches import LaunchedField
from regcomp_lint.codemod.builders import literal, parenthesized
from regcomp_lint.codemod.options import ConvertOptions
from regcomp_lint.codemod.tree import code
from regcomp_lint.knowledge.accelerate_api import PLUGIN_FIELDS

#: What every conversion that writes its own plugin says: the launch no longer picks what the
#: plugin sets (``settings.resolve`` reads launch files, not the flags a person types).
LAUNCH_FLAGS_NOTE = (
    "the script passes its own plugin: `accelerate launch --dynamo_*` flags and `accelerate config` only fill "
    "the plugin fields it leaves unset"
)


class Refusal(Exception):
    """The script cannot be converted completely and correctly; the message says why and what to do."""


class StepElsewhere(Refusal):
    """The script wraps its model for data parallelism but its training step runs in another
    module: the refusal names that module's loop when it can be found (torchvision's detection
    ``train.py`` and ``engine.train_one_epoch``)."""


@dataclass
class ScriptSettings:
    """Plugin keywords as the script spelled them, gathered from every place it configures compilation."""

    values: dict[str, cst.BaseExpression] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    condition: cst.BaseExpression | None = None
    condition_origin: str = ""
    #: keywords that came from a hand compile of the bare model (not from an Accelerate plugin)
    from_hand_compile: set[str] = field(default_factory=set)

    def add(self, keyword: str, value: cst.BaseExpression, origin: str, *, hand_compile: bool = False) -> None:
        if hand_compile:
            self.from_hand_compile.add(keyword)
        if keyword in self.values and code(self.values[keyword]) != code(value):
            raise Refusal(
                f"{self.origins[keyword]} and {origin} set {keyword} differently "
                f"({code(self.values[keyword])} vs {code(value)}); make them agree or pass --{keyword.replace('_', '-')}"
            )
        self.values.setdefault(keyword, value)
        self.origins.setdefault(keyword, origin)

    def require(self, condition: cst.BaseExpression | None, origin: str) -> None:
        """Record that compilation happened only when ``condition`` held (None: always)."""
        text = None if condition is None else code(condition)
        if not self.condition_origin:
            self.condition, self.condition_origin = condition, origin
            return
        previous = None if self.condition is None else code(self.condition)
        if previous != text:
            raise Refusal(
                f"{self.condition_origin} and {origin} compile under different conditions; compile in one place before converting"
            )


@dataclass(frozen=True)
class Setting:
    source: str  # "option" | "plan" | "script" | "default"
    code: str


def resolve(
    script: ScriptSettings,
    options: ConvertOptions,
    regional_reason: str | None,
    launched: Mapping[str, LaunchedField] | None = None,
) -> tuple[dict[str, Setting], list[str]]:
    """The plugin's keywords in ``PLUGIN_FIELDS`` order (absent keys are left to the plugin),
    and notes about settings that could not be carried over as they were. ``launched``: the
    fields the project's launch commands set for the script (:mod:`~regcomp_lint.analysis.compile_settings.launches`)."""
    explicit = options.explicit_plugin_settings()
    planned = options.plan.plugin_settings() if options.plan is not None else {}
    launched = launched or {}
    out: dict[str, Setting] = {}
    left_to_launch: list[LaunchedField] = []
    for key in PLUGIN_FIELDS:
        if key in explicit:
            out[key] = Setting("option", literal(explicit[key]))
        elif key in planned:
            out[key] = Setting("plan", literal(planned[key]))
        elif key in script.values:
            out[key] = Setting("script", code(script.values[key]))
        elif key in launched:
            left_to_launch.append(launched[key])
        elif key == "backend":
            out[key] = Setting("default", literal("inductor"))
        elif key == "use_regional_compilation" and regional_reason:
            out[key] = Setting("default", "True")
    backend = out.get("backend", Setting("launch", "None"))
    if script.condition is not None and backend.code not in ('"no"', "'no'"):
        condition = parenthesized(script.condition)
        value = backend.code if backend.source != "script" else parenthesized(script.values["backend"])
        out["backend"] = Setting(backend.source, f'{value} if {condition} else "no"')
    if "mode" in out and "options" in out and out["mode"].code != "None" and out["options"].code != "None":
        raise Refusal("mode and options would both reach torch.compile, which refuses that; drop one (RC103)")
    notes = [
        f"{f.field} is left to the project's launch ({f.where}): TorchDynamoPlugin reads it from there only "
        "while the plugin leaves it unset"
        for f in left_to_launch
    ]
    regional = out.get("use_regional_compilation", Setting("", "False")).code == "True"
    if (
        "fullgraph" in script.from_hand_compile
        and out.get("fullgraph", Setting("", "")) == Setting("script", "True")
        and not regional
    ):
        # prepare() compiles the DDP-wrapped model; DDP's forward breaks the graph (GB0156), so
        # fullgraph=True would raise under several processes. Regional compilation compiles the
        # blocks inside the wrapper and keeps it.
        del out["fullgraph"]
        notes.append(
            "fullgraph=True was not carried over: prepare() compiles the DDP-wrapped model and DDP's forward "
            "breaks the graph under several processes (pass --fullgraph to keep it anyway)"
        )
    elif out.get("fullgraph", Setting("", "")).code == "True" and not regional:
        notes.append(
            "fullgraph=True with a whole-model compile raises under several processes (DDP's forward breaks the graph); regional compilation avoids that"
        )
    return out, notes
