"""Collect torch's own log records (graph breaks, recompiles) while dynamo runs, quietly.

``explain().break_reasons`` misses breaks that make dynamo skip a frame; the ``graph_breaks``
log artifact does not. torch prints those records to stderr through a handler on the ``torch``
logger: while collecting, that handler is swapped for ours, so the user sees our report only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from dataclasses import dataclass, field

GB_LINK = re.compile(r"gb/gb(\d{4})\.html")
FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
BREAK_AT = re.compile(r"in user code at (.+):(\d+)\s*$", re.MULTILINE)
TRACEBACK_HEADERS = ("User code traceback:", "from user code:", "from user code at:")


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class Collected:
    handler: _Records = field(default_factory=_Records)

    def messages(self, start: int = 0) -> list[str]:
        out = []
        for record in self.handler.records[start:]:
            try:
                out.append(record.getMessage())
            except Exception:  # noqa: BLE001 - a record whose args do not format is skipped
                continue
        return out

    def mark(self) -> int:
        return len(self.handler.records)


@contextlib.contextmanager
def collecting(graph_breaks: bool = True, recompiles: bool = True):
    """Turn on the artifacts, route torch's records to a list, restore everything afterwards.

    ``set_logs`` gives many ``torch.*`` loggers a stderr handler of their own and stops their
    propagation; ours replaces each of those handlers for the duration, so every record reaches
    the list exactly once and nothing reaches the terminal.
    """
    import torch

    collected = Collected()
    torch._logging.set_logs(graph_breaks=graph_breaks, recompiles=recompiles)
    swapped = []
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if not (name == "torch" or name.startswith("torch.")) or not isinstance(logger, logging.Logger):
            continue
        streams = [h for h in logger.handlers if type(h) is logging.StreamHandler]  # not the structured-trace one
        if streams:
            for handler in streams:
                logger.removeHandler(handler)
            logger.addHandler(collected.handler)
            swapped.append((logger, streams))
    try:
        yield collected
    finally:
        for logger, streams in swapped:
            logger.removeHandler(collected.handler)
            for handler in streams:
                logger.addHandler(handler)
        torch._logging.set_logs()


def gb_id(text: str) -> str | None:
    """The first ``GBnnnn`` link of a message: the break itself (later ones are follow-ups)."""
    found = GB_LINK.search(text)
    return f"GB{found.group(1)}" if found else None


def gb_type(text: str) -> str:
    """The short graph-break type: the line before the first ``Explanation:``."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("Explanation:") and i > 0:
            for previous in reversed(lines[:i]):
                if previous.strip():
                    return previous.strip().removeprefix("Graph Break Reason: ")
    for line in lines:
        if line.strip() and not line.startswith("Graph break in user code"):
            return line.strip()[:160]
    return "graph break"


def explanation(text: str) -> str | None:
    for line in text.splitlines():
        if line.strip().startswith("Explanation:"):
            return line.strip().removeprefix("Explanation:").strip()
    return None


def hints(text: str) -> list[str]:
    """The hints of the first break in a message (not of the follow-up ones)."""
    first = text.split("*** While handling this graph break", 1)[0]
    return [
        line.strip().removeprefix("Hint:").strip() for line in first.splitlines() if line.strip().startswith("Hint:")
    ]


def user_frames(text: str) -> list[tuple[str, int, str]]:
    """``(file, line, function)`` of the user-code traceback in a message, outermost first."""
    for header in TRACEBACK_HEADERS:
        if header in text:
            text = text.rsplit(header, 1)[1]
            break
    else:
        return []
    return [(m.group(1), int(m.group(2)), m.group(3)) for m in FRAME.finditer(text)]


def break_site(text: str) -> tuple[str, int] | None:
    found = BREAK_AT.search(text)
    return (found.group(1), int(found.group(2))) if found else None


def unshorten_torch_path(printed: str) -> str:
    """The real file behind a path torch printed through ``torch.utils._traceback.shorten_filename``.

    torch cuts a file's path at its common path with torch's own install folder (site-packages),
    not at the working directory: ``/work/proj/model.py`` with torch under ``/work/proj/.venv``
    prints ``model.py``, but with torch under ``/usr/lib/...`` the common path is ``/`` and it
    prints ``ome/me/proj/model.py`` (one character too many cut). Guard-failure sites come that
    way, so the report would name a file that does not exist. Library code installed beside torch
    keeps its short name (``transformers/cache_utils.py``); ``printed`` also comes back unchanged
    when no existing file matches.
    """
    import torch.utils._traceback as torch_traceback

    if not printed or os.path.isabs(printed):
        return printed
    ancestor = os.path.dirname(os.path.dirname(torch_traceback.__file__))
    libraries = os.path.dirname(ancestor)  # site-packages (or wherever torch is installed)
    while True:
        parent = os.path.dirname(ancestor)
        if parent == ancestor:  # the root: the first name lost its first character
            break
        candidate = os.path.join(ancestor, printed)
        if os.path.isfile(candidate):
            return printed if ancestor == libraries else candidate
        ancestor = parent
    first, _, rest = printed.partition("/")
    try:
        roots = [name for name in os.listdir(ancestor) if len(name) == len(first) + 1 and name[1:] == first]
    except OSError:
        return printed
    found = [os.path.join(ancestor, name, rest) for name in roots if os.path.isfile(os.path.join(ancestor, name, rest))]
    return found[0] if len(found) == 1 else printed
