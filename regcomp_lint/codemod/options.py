"""What the caller asks of a conversion, and what it gets back."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from regcomp_lint.plan import Plan

#: The refusal of a file without a training step (most files of a repository).
NO_TRAINING_STEP = "no training step found (no X.backward() call); regcomp-fix converts training scripts only"


@dataclass(frozen=True)
class ConvertOptions:
    """Settings from the command line. ``None`` means "not given": the plan, then the script,
    then the defaults decide. ``regional=None`` lets the conversion decide from the model."""

    backend: str | None = None
    mode: str | None = None
    fullgraph: bool | None = None
    dynamic: bool | None = None
    regional: bool | None = None
    plan: Plan | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConvertOptions:
        """From JSON-like data (fixtures, config); ``plan`` may be a plan document."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown conversion option {unknown[0]!r}; known: {', '.join(sorted(known))}")
        values = dict(data)
        if isinstance(values.get("plan"), dict):
            values["plan"] = Plan.from_dict(values["plan"])
        return cls(**values)

    def explicit_plugin_settings(self) -> dict[str, Any]:
        """The plugin keywords the caller fixed, by their ``TorchDynamoPlugin`` names."""
        given = {
            "backend": self.backend,
            "mode": self.mode,
            "fullgraph": self.fullgraph,
            "dynamic": self.dynamic,
            "use_regional_compilation": self.regional,
        }
        return {k: v for k, v in given.items() if v is not None}


@dataclass
class ConversionResult:
    """``text``: the new source (the input, unchanged, when refused). ``refused``: one line
    saying why nothing was changed and what to do. ``notes``: what was done, one item each.
    ``data``: the new file content as bytes (same encoding, BOM) when the input was bytes.
    ``unchanged``: why a script that was read (not refused) needs no change, when it says so.
    ``unreadable``: the refusal is that the input is not Python this interpreter parses (bad
    input: an error, exit 2, not a refusal the user opts out of)."""

    text: str
    changed: bool
    refused: str | None = None
    notes: list[str] = field(default_factory=list)
    data: bytes | None = None
    unchanged: str | None = None
    unreadable: bool = False
