"""Which module instance ran each graph break, and in what order modules are called.

Dynamo inlines submodule calls and identical blocks share one code object, so a break's frame
does not say whether it ran in ``transformer.h.2`` or ``h.7``. The *probe run* answers that: the
model runs once eagerly (no grad) with global forward hooks keeping a stack of module paths and a
line tracer armed only on the break lines; every hit records the module on top of the stack.
The same run gives the call order and checks that the batch fits before dynamo is involved.

When the probe cannot run (the meta device with code that reads tensor data eagerly), breaks are
placed *by code*: the innermost frame of the break's traceback that belongs to a module class's
method names the class, and every instance of it is blamed. The report marks which way was used.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field

from regcomp_lint.trace.batch import Batch
from regcomp_lint.trace.errors import TraceError
from regcomp_lint.trace.explain import BreakSite
from regcomp_lint.trace.loading import user_error


@dataclass
class Probe:
    ok: bool
    error: str | None = None
    order: list[str] = field(default_factory=list)  # module paths by first call
    hits: dict[tuple[str, int], list[str]] = field(default_factory=dict)  # break line -> module paths


def probe(model, batch: Batch, lines: set[tuple[str, int]], fatal: bool) -> Probe:
    """Run the model once eagerly, recording call order and which module runs each of ``lines``."""
    import torch

    names = {id(m): p for p, m in model.named_modules(remove_duplicate=False)}
    stack: list[str] = []
    seen: dict[str, None] = {}
    hits: dict[tuple[str, int], dict[str, None]] = {}
    files = {f for f, _ in lines}

    def pre(module, args):
        path = names.get(id(module))
        if path is not None:
            stack.append(path)
            seen.setdefault(path, None)

    def post(module, args, output):
        if names.get(id(module)) is not None and stack:
            stack.pop()

    def local(frame, event, arg):
        if event == "line":
            key = (frame.f_code.co_filename, frame.f_lineno)
            if key in lines:
                hits.setdefault(key, {})[stack[-1] if stack else ""] = None
        return local

    def global_trace(frame, event, arg):
        return local if frame.f_code.co_filename in files else None

    handles = [
        torch.nn.modules.module.register_module_forward_pre_hook(pre),
        torch.nn.modules.module.register_module_forward_hook(post),
    ]
    old_trace = sys.gettrace()
    try:
        if lines:
            sys.settrace(global_trace)
        with torch.no_grad():
            batch.call(model)
    except Exception as exc:  # noqa: BLE001 - the user's model
        if fatal:
            raise TraceError(f"the model raised on the sample batch ({batch.describe()}): {user_error(exc)}") from None
        return Probe(False, user_error(exc), list(seen))
    finally:
        sys.settrace(old_trace)
        for handle in handles:
            handle.remove()
    return Probe(True, None, list(seen), {k: list(v) for k, v in hits.items()})


def place_by_code(model, site: BreakSite) -> list[str]:
    """Module paths whose class's methods contain the innermost frame of ``site`` that is a method."""
    owners: dict[type, list[str]] = {}
    for path, module in model.named_modules():
        owners.setdefault(type(module), []).append(path)
    spans = []
    for cls in owners:
        for klass in cls.__mro__:
            if klass.__module__.startswith("torch."):
                continue
            for value in vars(klass).values():
                code = getattr(getattr(value, "__func__", value), "__code__", None)
                if code is None:
                    continue
                try:
                    lines, start = inspect.getsourcelines(code)
                except (OSError, TypeError):
                    continue
                spans.append((code.co_filename, start, start + len(lines), cls))
    for file, line, _ in reversed(site.frames or [(site.file, site.line, site.function)]):
        for span_file, start, end, cls in spans:
            if span_file == file and start <= line < end:
                return owners[cls]
    return []
