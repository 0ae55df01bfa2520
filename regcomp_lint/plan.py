"""The compilation plan: what ``regcomp-lint trace`` decides and ``regcomp-fix --plan`` applies.

One small, versioned JSON document shared by both sides, so the tracer can be written later
without the codemod changing. It is validated strictly: a plan that names an unknown key or has
a value of the wrong type is a ``PlanError`` with a message that says which field and why,
never a silent default.

Example::

    {
      "version": 1,
      "strategy": "regional",
      "regions": ["transformer.h"],
      "plugin": {"backend": "inductor", "fullgraph": true, "use_regional_compilation": true},
      "why": ["24 identical GPT2Block regions; full compile cold start 52 s, regional 23 s"],
      "model": "GPT"
    }

Optional top-level key ``"method"`` (``apply_plan`` only; ``regcomp-fix`` ignores it, because
Accelerate's ``TorchDynamoPlugin`` cannot express it) says how ``regcomp_lint.apply_plan``
compiles a ``"regional"`` plan:

- ``"blocks"`` (what a plan without the key means): every block of each region is compiled on
  its own, in place; the glue between and around the blocks, and the loss, run eagerly. The
  same compiled code serves all identical blocks, as with ``compile_regions``.
- ``"split"``: one in-place compile of the whole model, split into graphs at the blocks: every
  block call ends the caller's graph and the block is compiled as a frame of its own, once for
  all identical blocks; the glue and the loss are compiled too, except in the frame that loops
  over the blocks (dynamo cannot resume a graph inside a loop).
- ``"nested"``: one in-place compile of the whole model, with every block of each region marked
  as a ``torch.compiler.nested_compile_region``: dynamo and inductor compile one block once and
  reuse it for the others, inside a single graph that also holds the glue and the loss.

It is allowed only with strategy ``"regional"`` and is written to JSON only when set.

Optional top-level key ``"repeated_blocks"`` (a list of class names; ``apply_plan`` only): a
diffusers model's ``_repeated_blocks``. A ``"regional"`` plan then compiles every submodule of
those classes wherever it sits, as diffusers' ``ModelMixin.compile_repeated_blocks()`` does
(a UNet's transformer blocks are spread over ``down_blocks[i].attentions[j]``, ``mid_block``
and ``up_blocks[i]``: no one container holds them), besides the blocks of ``regions``. Also
regional only, written only when non-empty.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PLAN_VERSION = 1
STRATEGIES = ("full", "regional", "none")
#: values of the optional ``method`` key (how ``apply_plan`` compiles a regional plan).
METHODS = ("blocks", "split", "nested")

#: TorchDynamoPlugin keyword -> the Python types a plan may give it (None allowed where listed).
PLUGIN_KEYS: dict[str, tuple[type, ...]] = {
    "backend": (str,),
    "mode": (str, type(None)),
    "fullgraph": (bool,),
    "dynamic": (bool, type(None)),
    "use_regional_compilation": (bool,),
}
_TOP_KEYS = ("version", "strategy", "regions", "plugin", "why", "model", "method", "repeated_blocks")


class PlanError(ValueError):
    """The plan file or document is not a valid plan (the message says what to change)."""


def _type_names(types: tuple[type, ...]) -> str:
    names = {
        bool: "true/false",
        str: "a string",
        type(None): "null",
        int: "an integer",
        list: "a list",
        dict: "an object",
    }
    return " or ".join(names.get(t, t.__name__) for t in types)


def _check_type(where: str, value: Any, types: tuple[type, ...]) -> None:
    # bool is an int in Python; a plan saying "version": true is still wrong.
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if not ok:
        raise PlanError(f"plan: {where} must be {_type_names(types)}, got {json.dumps(value)}")


@dataclass
class Plan:
    """How to compile one model: ``strategy`` plus the exact ``TorchDynamoPlugin`` keywords.

    ``regions`` names the repeated submodules (``transformer.h``) the tracer found, ``why`` the
    evidence, ``model`` the class or variable the plan was made for, ``method`` (optional,
    regional only) how ``apply_plan`` compiles the regions: ``"blocks"`` (the default),
    ``"split"`` or ``"nested"``; ``repeated_blocks`` (regional only) the block classes compiled
    wherever they sit (a diffusers model's ``_repeated_blocks``).
    """

    strategy: str = "full"
    regions: list[str] = field(default_factory=list)
    plugin: dict[str, Any] = field(default_factory=dict)
    why: list[str] = field(default_factory=list)
    model: str | None = None
    version: int = PLAN_VERSION
    method: str | None = None
    repeated_blocks: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.validate()

    # -- validation -----------------------------------------------------------------------
    def validate(self) -> None:
        _check_type("version", self.version, (int,))
        if self.version != PLAN_VERSION:
            raise PlanError(f"plan: unknown version {self.version}; this regcomp-lint reads version {PLAN_VERSION}")
        _check_type("strategy", self.strategy, (str,))
        if self.strategy not in STRATEGIES:
            raise PlanError(f"plan: strategy must be one of {', '.join(STRATEGIES)}, got {json.dumps(self.strategy)}")
        self._check_list("regions", self.regions)
        self._check_list("why", self.why)
        _check_type("model", self.model, (str, type(None)))
        _check_type("plugin", self.plugin, (dict,))
        for key, value in self.plugin.items():
            if key not in PLUGIN_KEYS:
                raise PlanError(f"plan: unknown plugin key {json.dumps(key)}; known keys: {', '.join(PLUGIN_KEYS)}")
            _check_type(f"plugin.{key}", value, PLUGIN_KEYS[key])
        self._check_strategy_agrees()
        _check_type("method", self.method, (str, type(None)))
        if self.method is not None:
            if self.method not in METHODS:
                raise PlanError(f"plan: method must be one of {', '.join(METHODS)}, got {json.dumps(self.method)}")
            if self.strategy != "regional":
                raise PlanError(
                    f"plan: method {json.dumps(self.method)} is for strategy regional only, but strategy is {json.dumps(self.strategy)}"
                )
        self._check_list("repeated_blocks", self.repeated_blocks)
        if self.repeated_blocks and self.strategy != "regional":
            raise PlanError(
                f"plan: repeated_blocks is for strategy regional only, but strategy is {json.dumps(self.strategy)}"
            )

    @staticmethod
    def _check_list(name: str, value: Any) -> None:
        _check_type(name, value, (list,))
        for i, item in enumerate(value):
            _check_type(f"{name}[{i}]", item, (str,))

    def _check_strategy_agrees(self) -> None:
        regional = self.plugin.get("use_regional_compilation")
        backend = self.plugin.get("backend")
        if self.strategy == "regional" and regional is False:
            raise PlanError("plan: strategy is regional but plugin.use_regional_compilation is false")
        if self.strategy == "full" and regional is True:
            raise PlanError("plan: strategy is full but plugin.use_regional_compilation is true")
        if self.strategy == "none" and backend not in (None, "no"):
            raise PlanError(
                f'plan: strategy is none but plugin.backend is {json.dumps(backend)} (use "no" or leave it out)'
            )
        if self.strategy != "none" and backend is not None and backend.lower() == "no":
            raise PlanError('plan: plugin.backend "no" disables compilation; use strategy "none" for that')

    # -- what the codemod applies ---------------------------------------------------------
    def plugin_settings(self) -> dict[str, Any]:
        """The plugin keywords this plan fixes, with what ``strategy`` implies filled in."""
        settings = dict(self.plugin)
        if self.strategy == "none":
            settings["backend"] = "no"
        else:
            settings.setdefault("use_regional_compilation", self.strategy == "regional")
        return settings

    # -- JSON -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "version": self.version,
            "strategy": self.strategy,
            "regions": list(self.regions),
            "plugin": dict(self.plugin),
            "why": list(self.why),
            "model": self.model,
        }
        if self.method is not None:
            data["method"] = self.method
        if self.repeated_blocks:
            data["repeated_blocks"] = list(self.repeated_blocks)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_dict(cls, data: Any) -> Plan:
        if not isinstance(data, dict):
            raise PlanError(f"plan: the document must be a JSON object, got {type(data).__name__}")
        unknown = [k for k in data if k not in _TOP_KEYS]
        if unknown:
            raise PlanError(f"plan: unknown key {json.dumps(unknown[0])}; known keys: {', '.join(_TOP_KEYS)}")
        if "version" not in data:
            raise PlanError(f'plan: missing "version" (this regcomp-lint reads version {PLAN_VERSION})')
        if "strategy" not in data:
            raise PlanError(f'plan: missing "strategy" (one of {", ".join(STRATEGIES)})')
        return cls(
            version=data["version"],
            strategy=data["strategy"],
            regions=data.get("regions", []),
            plugin=data.get("plugin", {}),
            why=data.get("why", []),
            model=data.get("model"),
            method=data.get("method"),
            repeated_blocks=data.get("repeated_blocks", []),
        )

    @classmethod
    def from_json(cls, text: str) -> Plan:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PlanError(f"plan: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Plan:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise PlanError(f"plan: cannot read {os.fspath(path)}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise PlanError(f"plan: {os.fspath(path)} is not UTF-8 text") from None
        try:
            return cls.from_json(text)
        except PlanError as exc:
            raise PlanError(f"{os.fspath(path)}: {exc}") from None

    def dump(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")
