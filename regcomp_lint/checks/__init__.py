"""The rule registry: every ``Rule`` subclass in this package, keyed by code.

Rules live one per file (``rc101_unknown_backend.py``); this module imports them all so that
``ALL_RULES['RC101']`` finds the class. Codes and names must be unique (checked at import).
"""

from __future__ import annotations

import importlib
import pkgutil

from regcomp_lint.checks.base import Invalid, Rule

__all__ = ["ALL_RULES", "Invalid", "Rule", "rule_by_name"]


def _load() -> dict[str, type[Rule]]:
    rules: dict[str, type[Rule]] = {}
    names: set[str] = set()
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("rc"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, Rule)
                and obj is not Rule
                and obj.__module__ == module.__name__
            ):
                if obj.code in rules or obj.name in names:
                    raise RuntimeError(f"duplicate rule {obj.code} {obj.name}")
                rules[obj.code] = obj
                names.add(obj.name)
    return dict(sorted(rules.items()))


ALL_RULES: dict[str, type[Rule]] = _load()


def rule_by_name(code_or_name: str) -> type[Rule] | None:
    key = code_or_name.strip()
    if key.upper() in ALL_RULES:
        return ALL_RULES[key.upper()]
    for rule in ALL_RULES.values():
        if rule.name == key:
            return rule
    return None
