""" "Did you mean ...?" for a misspelt backend or mode, only when one answer is clearly best."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def _normalise(text: str, separator: str) -> str:
    return text.strip().lower().replace("-", separator).replace("_", separator).replace(" ", separator)


def did_you_mean(value: str, candidates: Iterable[str], separator: str = "_") -> str | None:
    """The one candidate ``value`` was most likely meant to be, or None when unsure.

    Spelling variants (case, spaces, ``-`` for ``_``) win outright; otherwise the closest
    candidate by ``difflib`` ratio must be close (≥ 0.75) and clearly ahead of the runner-up,
    so that an unrelated name (``backend="mytrt"``) gets no suggestion and no fix.
    """
    options = list(dict.fromkeys(candidates))
    key = _normalise(value, separator)
    if not key:
        return None
    exact = [c for c in options if _normalise(c, separator) == key]
    if len(exact) == 1:
        return exact[0]
    scored = sorted(
        ((difflib.SequenceMatcher(None, key, _normalise(c, separator)).ratio(), c) for c in options),
        key=lambda pair: -pair[0],
    )
    if not scored or scored[0][0] < 0.75:
        return None
    if len(scored) > 1 and scored[1][0] > scored[0][0] - 0.08:
        return None
    return scored[0][1]
