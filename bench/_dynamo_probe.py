"""The torch side of ``bench/static_vs_dynamo.py``: run every fixture model under dynamo and
write what dynamo did, as JSON, for the comparison with the static lint.

Runs in an interpreter that has torch 2.13 and accelerate (the project's venv has neither), e.g.::

    /tmp/truth/bin/python bench/_dynamo_probe.py --models fixtures/models --out breaks.json

For each ``fixtures/models/<name>.py`` that defines ``make_model()`` and ``make_inputs()``:

- **breaks**: the model runs once under ``torch._dynamo.explain``. Its ``break_reasons`` miss
  breaks that make dynamo skip a whole frame (f-string of a tensor, ``data_ptr()``, RNN modules,
  ``copy.deepcopy``), so the graph-break log records (``TORCH_LOGS=graph_breaks``) are read
  too, and ``torch._dynamo.utils.counters`` are kept as a cross-check. Each break is mapped to
  the innermost frame of its user traceback that lies in the fixture folder: a break inside
  ``logging`` or ``copy`` is reported at the fixture line that called it.
- **fullgraph**: a fresh model under ``torch.compile(backend="eager", fullgraph=True)``: ok, or
  the ``gb_type`` and fixture line of the ``Unsupported`` error.
- **regional**: a fresh model through ``accelerate.utils.compile_regions(backend="eager")``,
  run once: what was compiled (whole model or regions), the error it raised, and every
  recompilation caused by a guard on a module attribute (``self.layer_idx == 1``) with the
  fixture line the guard came from, and whether ``recompile_limit`` was hit.

Nothing here is imported by the linter or its tests; the JSON is the interface.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import io
import json
import logging
import os
import platform
import re
import sys
import traceback
import warnings
from pathlib import Path

os.environ["PYTHONBREAKPOINT"] = "0"  # fixtures call breakpoint(): a graph break, a no-op when run

import torch
import torch._dynamo as dynamo
from torch._dynamo.utils import counters

from regcomp_lint.trace.dynamo_logs import gb_id, gb_type  # the tracer reads the same records

FRAME = re.compile(r'File "([^"]+)", line (\d+)')
#: ``Graph break in user code at F:N``, also ``Graph break (user stack suppressed ...) in user code at F:N``.
BREAK_AT = re.compile(r"in user code at (\S+):(\d+)")
#: ``- 0/1: self.layer_idx == 1   # code  # models/recomp_x.py:21 in forward`` in a recompile record.
GUARD_FAILURE = re.compile(r"-\s+\d+/\d+:\s+(self\.[^#]*?)\s+#.*?#\s+(\S+\.py):(\d+) in ")
TRACEBACK_HEADERS = ("User code traceback:", "from user code at:")


class Records(logging.Handler):
    """Collects dynamo's log records while a model runs."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self) -> list[str]:
        return [r.getMessage() for r in self.records]


@contextlib.contextmanager
def captured():
    handler = Records()
    target = logging.getLogger("torch._dynamo")
    target.addHandler(handler)
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield handler
    finally:
        target.removeHandler(handler)


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"fixture_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fresh(module):
    with contextlib.redirect_stdout(io.StringIO()):  # some fixtures print in __init__
        torch.manual_seed(0)
        model = module.make_model()
        torch.manual_seed(1)
        return model, tuple(module.make_inputs())


def reset() -> None:
    dynamo.reset()
    counters.clear()


# -- mapping a break to a fixture line -----------------------------------------------------------


def fixture_frame(text: str, models: Path) -> tuple[str, int] | None:
    """The innermost ``File "...", line N`` of the traceback in ``text`` inside ``models``."""
    for header in TRACEBACK_HEADERS:
        if header in text:
            text = text.rsplit(header, 1)[1]
            break
    else:
        found = BREAK_AT.search(text)
        return _in_models(found.group(1), int(found.group(2)), models) if found else None
    best = None
    for match in FRAME.finditer(text):
        site = _in_models(match.group(1), int(match.group(2)), models)
        if site is not None:
            best = site
    return best


def frames_site(frames, models: Path) -> tuple[str, int] | None:
    best = None
    for frame in frames or ():
        site = _in_models(frame.filename, frame.lineno, models)
        if site is not None:
            best = site
    return best


def _in_models(filename: str, line: int, models: Path) -> tuple[str, int] | None:
    try:
        relative = Path(filename).resolve().relative_to(models)
    except ValueError:
        return None
    return relative.as_posix(), line


# -- the three runs ---------------------------------------------------------------------------


def probe_breaks(module, models: Path) -> dict:
    reset()
    model, inputs = fresh(module)
    with captured() as logs:
        result = dynamo.explain(model)(*inputs)
    sites: dict[tuple[str, int], dict] = {}
    unmapped: list[str] = []
    for text in logs.messages():
        if "Graph break" not in text:
            continue
        site = fixture_frame(text, models)
        if site is None:
            unmapped.append(gb_type(text))
            continue
        entry = sites.setdefault(site, {"file": site[0], "line": site[1], "gb": None, "reason": None, "sources": []})
        if BREAK_AT.search(text):
            entry["gb"] = entry["gb"] or gb_id(text)
            entry["reason"] = entry["reason"] or gb_type(text)
        if "log" not in entry["sources"]:
            entry["sources"].append("log")
    for reason in result.break_reasons:
        site = frames_site(reason.user_stack, models)
        if site is None:
            unmapped.append(reason.reason.splitlines()[0])
            continue
        entry = sites.setdefault(
            site,
            {
                "file": site[0],
                "line": site[1],
                "gb": gb_id(reason.reason),
                "reason": gb_type(reason.reason),
                "sources": [],
            },
        )
        if "explain" not in entry["sources"]:
            entry["sources"].append("explain")
    for entry in sites.values():
        entry["reason"] = entry["reason"] or "graph break"
    return {
        "breaks": sorted(sites.values(), key=lambda e: (e["file"], e["line"])),
        "unmapped": sorted(set(unmapped)),
        "explain": {
            "graph_count": result.graph_count,
            "graph_break_count": result.graph_break_count,
            "break_reasons": len(result.break_reasons),
        },
        "counters": {
            "graph_break": sum(counters["graph_break"].values()),
            "unimplemented": sum(counters["unimplemented"].values()),
        },
    }


def probe_fullgraph(module, models: Path) -> dict:
    reset()
    model, inputs = fresh(module)
    try:
        with captured():
            torch.compile(model, backend="eager", fullgraph=True)(*inputs)
    except Exception as exc:  # noqa: BLE001 - the error is the measurement
        site = frames_site(getattr(exc, "real_stack", None), models) or fixture_frame(
            "".join(traceback.format_exception(exc)), models
        )
        return {
            "ok": False,
            "error": type(exc).__name__,
            "gb_type": gb_type(str(exc)),
            "file": site[0] if site else None,
            "line": site[1] if site else None,
        }
    return {"ok": True}


def probe_regional(module, models: Path) -> dict:
    from accelerate.utils import compile_regions
    from torch._dynamo.eval_frame import OptimizedModule

    reset()
    model, inputs = fresh(module)
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    out: dict = {}
    try:
        with captured() as logs:
            compiled = compile_regions(model, backend="eager")
            out["whole_model"] = isinstance(compiled, OptimizedModule)
            out["compiled"] = sorted(_compiled_names(compiled, OptimizedModule))
            try:
                compiled(*inputs)
                out["error"] = None
            except Exception as exc:  # noqa: BLE001
                out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        torch._logging.set_logs(graph_breaks=True)
    guards: dict[tuple[str, str, int], set[str]] = {}
    limit_hit = False
    for text in logs.messages():
        if "recompile_limit" in text and "hit config" in text:
            limit_hit = True
        for match in GUARD_FAILURE.finditer(text):
            name, _, value = match.group(1).strip().partition(" == ")
            site = _guard_site(match.group(2), int(match.group(3)), models)
            if site is not None:
                guards.setdefault((name, *site), set()).add(value)
    out["attribute_recompiles"] = [
        {"guard": g, "file": f, "line": n, "values": len(v)} for (g, f, n), v in sorted(guards.items())
    ]
    out["recompile_limit_hit"] = limit_hit
    out["frames"] = dict(counters["frames"])
    out["repeated_outside_modulelist"] = repeated_outside_modulelist(model)
    return out


def repeated_outside_modulelist(model) -> list[str]:
    """Containers holding two or more instances of one class of ours that are not a ModuleList
    of that class alone (what ``compile_regions`` cannot regionalize): ``"blocks: Block×6"``."""
    found = []
    for path, module in model.named_modules():
        if not isinstance(module, (torch.nn.Sequential, torch.nn.ModuleList)):
            continue
        children = list(module.children())
        kinds = [type(c) for c in children if not type(c).__module__.startswith("torch.")]
        same = (
            isinstance(module, torch.nn.ModuleList) and children and all(type(c) is type(children[0]) for c in children)
        )
        for kind in sorted(set(kinds), key=lambda k: k.__name__):
            if kinds.count(kind) >= 2 and not same:
                found.append(f"{path or '<model>'}: {kind.__name__}×{kinds.count(kind)}")
    return found


def _compiled_names(module, optimized, prefix: str = "") -> list[str]:
    if isinstance(module, optimized):
        return [prefix or "<model>"]
    names = []
    for name, child in module.named_children():
        names += _compiled_names(child, optimized, f"{prefix}.{name}" if prefix else name)
    return names


def _guard_site(shortened: str, line: int, models: Path) -> tuple[str, int] | None:
    """Recompile records shorten paths to their last two parts: match by file name."""
    name = Path(shortened).name
    return (name, line) if (models / name).is_file() else None


# -- driver -----------------------------------------------------------------------------------


def fixture_models(models: Path) -> list[Path]:
    found = []
    for path in sorted(models.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "def make_model(" in text and "def make_inputs(" in text:
            found.append(path)
    return found


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=Path(__file__).resolve().parent.parent / "fixtures" / "models")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("names", nargs="*", help="only these fixture names (stems)")
    args = parser.parse_args(argv)
    models = args.models.resolve()
    sys.path.insert(0, str(models))  # fixtures import their sibling helper modules
    torch._logging.set_logs(graph_breaks=True)
    import accelerate

    report = {
        "torch": torch.__version__,
        "accelerate": accelerate.__version__,
        "python": platform.python_version(),
        "files": {p.name: digest(p) for p in sorted(models.glob("*.py"))},
        "models": {},
    }
    for path in fixture_models(models):
        if args.names and path.stem not in args.names:
            continue
        print(f"probing {path.name}", file=sys.stderr, flush=True)
        module = load(path)
        entry: dict = {"file": path.name}
        for key, probe in (("dynamo", probe_breaks), ("fullgraph", probe_fullgraph), ("regional", probe_regional)):
            try:
                entry[key] = probe(module, models)
            except Exception as exc:  # noqa: BLE001 - a fixture that fails is reported, not fatal
                entry[key] = {"probe_error": f"{type(exc).__name__}: {exc}"}
        report["models"][path.stem] = entry
    args.out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
