"""``FILE_OR_MODULE:FACTORY`` references: load the factory, call it, check what it returned.

``models.py:make_model`` loads a file (its folder goes first on ``sys.path`` so it can import its
siblings), ``pkg.models:make_model`` imports a module. The factory is called without arguments;
it may also be an ``nn.Module`` class or an already-built object. This runs user code, which is
why only ``trace`` uses it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from regcomp_lint.trace.batch import Batch
from regcomp_lint.trace.errors import TraceError


def split_reference(reference: str, option: str) -> tuple[str, str]:
    target, sep, name = reference.rpartition(":")
    if not sep or not target or not name or not name.replace(".", "_").isidentifier():
        raise TraceError(
            f"{option} {reference!r}: expected FILE_OR_MODULE:FACTORY, e.g. models.py:make_model or mypkg.models:build"
        )
    return target, name


def load_factory(reference: str, option: str) -> Callable[[], Any] | Any:
    """The object ``reference`` names (not yet called)."""
    target, name = split_reference(reference, option)
    module = _load_module(target, option)
    value: Any = module
    for part in name.split("."):
        if not hasattr(value, part):
            available = sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n, None)))
            hint = f"; callables there: {', '.join(available[:12])}" if available else ""
            raise TraceError(f"{option} {reference!r}: {target} has no {name!r}{hint}")
        value = getattr(value, part)
    return value


def _load_module(target: str, option: str):
    path = Path(target)
    if target.endswith(".py") or os.sep in target or path.is_file():
        if not path.is_file():
            raise TraceError(f"{option}: file {target} not found")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        module_name = f"_regcomp_trace_{path.stem}"
        if module_name in sys.modules and getattr(sys.modules[module_name], "__file__", None) == str(path.resolve()):
            return sys.modules[module_name]
        spec = importlib.util.spec_from_file_location(module_name, path.resolve())
        if spec is None or spec.loader is None:
            raise TraceError(f"{option}: {target} is not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        _run_user_code(lambda: spec.loader.exec_module(module), f"importing {target}")
        return module
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name and target.startswith(exc.name):
            raise TraceError(f"{option}: no file or module named {target!r} (a file needs its .py suffix)") from None
        raise TraceError(f"{option}: importing {target} failed: {user_error(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - user code
        raise TraceError(f"{option}: importing {target} failed: {user_error(exc)}") from None


def build_model(reference: str, device: str):
    """Call the model factory (under ``torch.device("meta")`` for the meta device) and check it is a module."""
    import torch

    factory = load_factory(reference, "--model")

    def build():
        if isinstance(factory, torch.nn.Module):
            return factory
        if not callable(factory):
            raise TraceError(
                f"--model {reference!r} is a {type(factory).__name__}, not a factory: name a function or class that returns an nn.Module"
            )
        if device == "meta":
            with torch.device("meta"):
                return factory()
        return factory()

    model = _run_user_code(build, f"--model {reference}")
    if not isinstance(model, torch.nn.Module):
        raise TraceError(f"--model {reference!r} returned {type(model).__name__}, not a torch.nn.Module")
    return model


def build_batch(reference: str, device: str) -> Batch:
    import torch

    factory = load_factory(reference, "--inputs")

    def build():
        if isinstance(factory, (torch.Tensor, tuple, list, dict)):
            return factory
        if not callable(factory):
            raise TraceError(
                f"--inputs {reference!r} is a {type(factory).__name__}: name a function that returns the batch"
            )
        if device == "meta":
            with torch.device("meta"):
                return factory()
        return factory()

    return Batch.from_value(_run_user_code(build, f"--inputs {reference}"), f"--inputs {reference!r}")


def _run_user_code(fn, what: str):
    try:
        return fn()
    except TraceError:
        raise
    except SystemExit as exc:
        raise TraceError(f"{what}: the code called sys.exit({exc.code!r})") from None
    except Exception as exc:  # noqa: BLE001 - user code: any failure becomes one line
        raise TraceError(f"{what} raised {user_error(exc)}") from None


def user_error(exc: BaseException) -> str:
    """``ValueError: bad size (models.py:12 in make_model)``: the exception and the innermost
    frame that is not torch's, Python's or ours: the line the user can go and fix."""
    text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}".rstrip(": ")
    frame = innermost_user_frame(traceback.extract_tb(exc.__traceback__))
    return f"{text} ({frame.filename}:{frame.lineno} in {frame.name})" if frame else text


def display_path(path: str | None) -> str | None:
    """A path relative to the working directory when it is under it (as reports show paths)."""
    if not path:
        return path
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def innermost_user_frame(frames):
    best = None
    for frame in frames:
        if is_user_file(frame.filename):
            best = frame
    return best


def is_user_file(filename: str) -> bool:
    """Code the user wrote (their model, their script, or a model library such as transformers),
    as opposed to torch, the standard library, accelerate and regcomp-lint itself."""
    if not filename or filename.startswith("<"):
        return False
    path = os.path.realpath(filename)
    if any(path.startswith(root) for root in _not_user_roots()):
        return False
    in_site = f"{os.sep}site-packages{os.sep}" in path or f"{os.sep}dist-packages{os.sep}" in path
    return in_site or not path.startswith(_stdlib_root())


def _stdlib_root() -> str:
    import sysconfig

    return os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep


_ROOTS: list[str] | None = None


def _not_user_roots() -> list[str]:
    global _ROOTS
    if _ROOTS is None:
        roots = {os.path.realpath(str(Path(__file__).resolve().parents[1])) + os.sep}
        for name in ("torch", "accelerate", "functorch", "sympy", "numpy"):
            spec = importlib.util.find_spec(name) if name in sys.modules or _findable(name) else None
            if spec and spec.submodule_search_locations:
                roots.update(os.path.realpath(p) + os.sep for p in spec.submodule_search_locations)
        _ROOTS = sorted(roots)
    return _ROOTS


def _findable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
