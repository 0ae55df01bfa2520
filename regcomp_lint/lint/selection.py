"""Turn ``select``/``ignore`` selectors (``ALL``, ``RC1``, ``RC101``, ``unknown-backend``) into codes."""

from __future__ import annotations

from collections.abc import Iterable


class UnknownSelector(ValueError):
    pass


def expand(selector: str, known: Iterable[str], names: dict[str, str] | None = None) -> set[str]:
    """Codes a selector stands for; raises UnknownSelector when it matches no rule."""
    sel = selector.strip()
    known = list(known)
    if sel.upper() == "ALL":
        return set(known)
    if names and sel in names:
        return {names[sel]}
    up = sel.upper()
    matched = {code for code in known if code.startswith(up)}
    if not matched or not up.startswith("RC"):
        raise UnknownSelector(selector)
    return matched


def resolve(
    select: Iterable[str],
    extend_select: Iterable[str],
    ignore: Iterable[str],
    known: Iterable[str],
    names: dict[str, str] | None = None,
) -> frozenset[str]:
    known = list(known)
    enabled: set[str] = set()
    for sel in list(select) + list(extend_select):
        enabled |= expand(sel, known, names)
    for sel in ignore:
        enabled -= expand(sel, known, names)
    return frozenset(enabled)
