"""Tie a runtime graph break to the static rule that predicts it (same code for the same cause).

The file that broke is linted with the RC2xx rules; a finding on the break's line gives the code.
Without one (code the static analysis cannot reach, such as a library's internals), the break's
``GBnnnn`` id names the rule when exactly one rule lists it in ``knowledge.graph_breaks``.
"""

from __future__ import annotations

from functools import lru_cache

from regcomp_lint.knowledge.graph_breaks import REGISTRY, RULE_BREAKS


@lru_cache(maxsize=256)
def _findings(path: str) -> dict[int, tuple[str, ...]]:
    from regcomp_lint.lint.config import Settings
    from regcomp_lint.lint.engine import lint_source

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return {}
    by_line: dict[int, list[str]] = {}
    for diagnostic in lint_source(data, path, Settings(select=("RC2",), ignore=("RC210",))):
        by_line.setdefault(diagnostic.location.row, []).append(diagnostic.code)
    return {line: tuple(sorted(set(codes))) for line, codes in by_line.items()}


def _rules_by_gb() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for code, ids in RULE_BREAKS.items():
        for gb in ids:
            out.setdefault(gb, []).append(code)
    return out


_BY_GB = _rules_by_gb()


def rule_for(path: str, line: int, gb_id: str | None) -> tuple[str | None, str]:
    """``(code, how)``: ``how`` is ``"static"`` (the lint fired on that line) or ``"gb-id"``."""
    codes = _findings(path).get(line, ())
    if codes:
        if gb_id and len(codes) > 1:
            preferred = [c for c in codes if gb_id in RULE_BREAKS.get(c, ())]
            if preferred:
                return preferred[0], "static"
        return codes[0], "static"
    candidates = _BY_GB.get(gb_id or "", [])
    if len(candidates) == 1:
        return candidates[0], "gb-id"
    return None, "none"


@lru_cache(maxsize=1)
def _torch_registry() -> dict:
    """The installed torch's ``graph_break_registry.json`` (all ~500 ids), or {} if it has none."""
    import json
    import os

    import torch._dynamo

    path = os.path.join(os.path.dirname(torch._dynamo.__file__), "graph_break_registry.json")
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def registry_entry(gb_id: str | None) -> dict:
    """``{type, explanation, hints}`` for an id: from the installed torch, else our copy, else {}."""
    entries = _torch_registry().get(gb_id or "")
    if entries:
        first = entries[0]
        return {
            "type": first.get("Gb_type", ""),
            "explanation": first.get("Explanation", ""),
            "hints": list(first.get("Hints", [])),
        }
    return dict(REGISTRY.get(gb_id or "", {}))
