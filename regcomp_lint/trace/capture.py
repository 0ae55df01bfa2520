"""Script capture mode of ``regcomp-lint trace train.py [-- ARGS...]``.

**This is the only module of regcomp-lint that runs user code.** ``capture_script`` runs the
user's training script in this process (``runpy.run_path`` with ``__name__ == "__main__"``,
``sys.argv = [path, *argv]``, the script's folder first on ``sys.path``, the working directory
unchanged) with hooks that make compilation a no-op while it runs:

- ``torch.compile`` (called on a module or a function, or used as a decorator with or without
  arguments) returns what it was given;
- ``nn.Module.compile`` does nothing;
- ``accelerate.utils.compile_regions`` (everywhere Accelerate exposes it) returns its module;
- ``Accelerator.prepare`` / ``prepare_model`` return their arguments unchanged (one object or a
  tuple, as the real ones do): the model is neither moved nor wrapped in DDP. The accelerator's
  ``TorchDynamoPlugin`` settings are recorded when its backend is not ``"no"``.

Each hook records a :class:`CompileRequest` (what the script asked for). The model is the first
``nn.Module`` passed to ``prepare``/``compile``/``compile_regions``; when none ever is, the first
root module whose forward is called. A forward pre-hook on the model records the arguments of its
first call and stops the script *before* that forward runs, so no backward, optimizer step or
checkpoint write happens. The script's stdout goes to stderr while it runs, so a report on stdout
stays clean. Everything is restored afterwards (``sys.argv``, ``sys.path``, the patched functions,
the hooks, ``SIGALRM``), also when the script fails; every failure is one :class:`TraceError`
line the user can act on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import signal
import sys
import threading
import tokenize
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from regcomp_lint.errors import install_hint
from regcomp_lint.trace.errors import TraceError

__all__ = ["CompileRequest", "Captured", "capture_script"]

_FALLBACK_HINT = "pass --model/--inputs instead"


@dataclass
class CompileRequest:
    """One compile the script asked for, so the report can compare it with the recommendation."""

    api: str  # "torch.compile" | "Module.compile" | "compile_regions" | "TorchDynamoPlugin"
    kwargs: dict  # literal keyword values; values that are not JSON are repr()'d
    where: str | None  # "train.py:42": the line of the script that made the call
    #: what built it when not the script's own code: "transformers Trainer" (from TrainingArguments)
    via: str | None = None


@dataclass
class Captured:
    """The model a script compiles or prepares, and the arguments of its first forward call."""

    model: Any  # torch.nn.Module, the un-compiled object
    args: tuple
    kwargs: dict
    requests: list[CompileRequest] = field(default_factory=list)
    where: str | None = None  # "train.py:57": the line of the script of the first forward call


class _StopScript(BaseException):
    """Raised by the forward pre-hook to stop the script before the model's forward runs."""


class _ScriptTimeout(BaseException):
    """Raised by the SIGALRM handler when the script runs past ``max_seconds``."""


def _json_safe(value: Any) -> Any:
    """``value`` when it is plain JSON (after turning enums into their values), else its repr()."""
    value = getattr(value, "value", value) if _is_enum(value) else value
    try:
        return json.loads(json.dumps(value, allow_nan=False))  # tuples become lists
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _is_enum(value: Any) -> bool:
    import enum

    return isinstance(value, enum.Enum)


class _Session:
    """The state of one capture: the hooks, what they saw, and how to undo them."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.abspath = os.path.abspath(path)
        self.model: Any = None
        self.model_handle: Any = None
        self.requests: list[CompileRequest] = []
        self.captured: Captured | None = None
        self.depth = 0
        self.undo: list[Callable[[], None]] = []
        self.seen_plugins: set[int] = set()

    # -- where in the script ------------------------------------------------------------------
    def where(self) -> str | None:
        """``path:line`` of the innermost frame that runs the script's own file."""
        frame: types.FrameType | None = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename == self.path or os.path.abspath(filename) == self.abspath:
                return f"{self.path}:{frame.f_lineno}"
            frame = frame.f_back
        return None

    def request(self, api: str, kwargs: dict, via: str | None = None) -> None:
        safe = {str(k): _json_safe(v) for k, v in kwargs.items()}
        self.requests.append(CompileRequest(api=api, kwargs=safe, where=self.where(), via=via))

    # -- the model ------------------------------------------------------------------------------
    def offer_model(self, obj: Any) -> None:
        """Take ``obj`` as the model if it is the first ``nn.Module`` handed to a hook."""
        import torch

        if self.model is not None or not isinstance(obj, torch.nn.Module):
            return
        orig = getattr(obj, "_orig_mod", None)  # an OptimizedModule made some other way
        if isinstance(orig, torch.nn.Module):
            obj = orig
        self.model = obj
        self.model_handle = obj.register_forward_pre_hook(self._pre_hook, with_kwargs=True)

    def _pre_hook(self, module: Any, args: tuple, kwargs: dict) -> None:
        if self.captured is None:
            self.captured = Captured(
                model=module,
                args=tuple(args),
                kwargs=dict(kwargs),
                requests=self.requests,
                where=self.where(),
            )
        raise _StopScript()

    # -- patching -------------------------------------------------------------------------------
    def patch(self, owner: Any, name: str, new: Any) -> None:
        if isinstance(owner, dict):
            old = owner[name]
            owner[name] = new
            self.undo.append(lambda: owner.__setitem__(name, old))
        else:
            old = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
            setattr(owner, name, new)
            self.undo.append(lambda: setattr(owner, name, old))

    def install(self) -> None:
        import torch

        session = self
        real_compile = torch.compile

        @functools.wraps(real_compile)
        def compile_hook(model: Any = None, **kwargs: Any) -> Any:
            session.request("torch.compile", kwargs)
            if model is None:  # @torch.compile(...) with arguments: return the decorator

                def decorator(fn: Any) -> Any:
                    session.offer_model(fn)
                    return fn

                return decorator
            session.offer_model(model)
            owner = getattr(model, "__self__", None)  # torch.compile(model.forward)
            if owner is not None:
                session.offer_model(owner)
            return model

        self.patch(torch, "compile", compile_hook)

        module_cls = torch.nn.Module

        def module_compile_hook(module: Any, *args: Any, **kwargs: Any) -> None:
            session.request("Module.compile", kwargs)
            session.offer_model(module)

        functools.update_wrapper(module_compile_hook, module_cls.compile)
        self.patch(module_cls, "compile", module_compile_hook)

        real_call = module_cls.__call__

        def call_hook(module: Any, *args: Any, **kwargs: Any) -> Any:
            if session.captured is not None:  # the script caught our stop: stop it again
                raise _StopScript()
            if session.model is None and session.depth == 0:
                session.offer_model(module)  # a root module called before any compile/prepare
            session.depth += 1
            try:
                return real_call(module, *args, **kwargs)
            finally:
                session.depth -= 1

        self.patch(module_cls, "__call__", call_hook)
        self._install_accelerate()

    def _install_accelerate(self) -> None:
        try:
            import accelerate
            import accelerate.accelerator as acc_mod
            import accelerate.utils as acc_utils
            import accelerate.utils.other as acc_other
        except Exception:  # accelerate not installed (or broken): scripts cannot use it anyway
            return
        session = self
        real_regions = acc_other.compile_regions

        @functools.wraps(real_regions)
        def compile_regions_hook(module: Any, *args: Any, **kwargs: Any) -> Any:
            session.request("compile_regions", kwargs)
            session.offer_model(module)
            return module

        for owner in (acc_utils, acc_other):
            if getattr(owner, "compile_regions", None) is real_regions:
                self.patch(owner, "compile_regions", compile_regions_hook)
        if acc_mod.__dict__.get("compile_regions") is real_regions:
            self.patch(acc_mod.__dict__, "compile_regions", compile_regions_hook)

        accelerator_cls = accelerate.Accelerator

        def record_plugin(accelerator: Any) -> None:
            state = getattr(accelerator, "state", None)
            plugin = getattr(state, "dynamo_plugin", None)
            if plugin is None or id(accelerator) in session.seen_plugins:
                return
            backend = getattr(plugin, "backend", None)
            backend = str(getattr(backend, "value", backend) or "no").lower()
            if backend == "no":
                return
            session.seen_plugins.add(id(accelerator))
            if dataclasses.is_dataclass(plugin):
                settings = {f.name: getattr(plugin, f.name) for f in dataclasses.fields(plugin)}
            else:
                settings = dict(vars(plugin))
            settings["backend"] = backend
            session.request("TorchDynamoPlugin", settings, via=_builder())

        def prepare_hook(accelerator: Any, *args: Any, device_placement: Any = None) -> Any:
            import torch

            modules = [a for a in args if isinstance(a, torch.nn.Module)]
            if modules:
                record_plugin(accelerator)
                session.offer_model(modules[0])
            if len(args) == 1:
                return args[0]
            return args

        def prepare_model_hook(accelerator: Any, model: Any, *args: Any, **kwargs: Any) -> Any:
            record_plugin(accelerator)
            session.offer_model(model)
            return model

        functools.update_wrapper(prepare_hook, accelerator_cls.prepare)
        functools.update_wrapper(prepare_model_hook, accelerator_cls.prepare_model)
        self.patch(accelerator_cls, "prepare", prepare_hook)
        self.patch(accelerator_cls, "prepare_model", prepare_model_hook)

        # Accelerate keeps one process-wide state; forget what this script set up, so that a
        # later script (or a later capture in the same process) starts from scratch.
        try:
            from accelerate.state import AcceleratorState, GradientState, PartialState

            if not PartialState._shared_state and not AcceleratorState._shared_state:

                def reset_accelerate() -> None:
                    AcceleratorState._reset_state(reset_partial_state=True)
                    GradientState._reset_state()

                self.undo.append(reset_accelerate)
        except Exception:  # pragma: no cover - an accelerate without these internals
            pass

    def restore(self) -> None:
        if self.model_handle is not None:
            self.model_handle.remove()
            self.model_handle = None
        while self.undo:
            undo = self.undo.pop()
            with contextlib.suppress(Exception):
                undo()


def _check_script(path: str) -> None:
    if not os.path.exists(path):
        raise TraceError(f"script not found: {path}")
    if not os.path.isfile(path):
        raise TraceError(f"not a file: {path} (give the training script itself)")
    try:
        with tokenize.open(path) as f:
            source = f.read()
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise TraceError(
            f"{path} is not a Python script: {exc.msg} (line {exc.lineno}); "
            "give the training script, or pass --model/--inputs"
        ) from exc
    except (UnicodeDecodeError, ValueError) as exc:
        raise TraceError(f"{path} is not a Python script ({exc}); give the training script") from exc
    except OSError as exc:
        raise TraceError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _script_line(exc: BaseException, path: str) -> str | None:
    """``path:line`` of the innermost traceback frame in the script's own file."""
    abspath = os.path.abspath(path)
    found = None
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename == path or os.path.abspath(filename) == abspath:
            found = f"{path}:{tb.tb_lineno}"
        tb = tb.tb_next
    if found is None and isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        found = f"{exc.filename}:{exc.lineno}"
    return found


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


@contextlib.contextmanager
def _alarm(max_seconds: float | None):
    """Raise ``_ScriptTimeout`` in the main thread after ``max_seconds`` (no limit elsewhere)."""
    if (
        max_seconds is None
        or max_seconds <= 0
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _ScriptTimeout()

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    old_timer = signal.setitimer(signal.ITIMER_REAL, float(max_seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_timer[0] > 0:
            signal.setitimer(signal.ITIMER_REAL, *old_timer)


def capture_script(path: str, argv: list[str], max_seconds: float = 300.0) -> Captured:
    """Run the training script at ``path`` with ``argv`` until its model's first forward call.

    Returns the model (un-compiled), the arguments of that call, the compile requests the script
    made and where. Raises :class:`TraceError` when the script cannot be run, fails, exits, ends
    without calling a forward, or runs longer than ``max_seconds``.
    """
    import runpy

    try:
        import torch  # noqa: F401
    except ImportError as exc:  # pragma: no cover - the trace extra is missing
        raise TraceError(f"trace needs torch: {install_hint('trace')}") from exc

    path = os.fspath(path)
    _check_script(path)
    session = _Session(path)
    old_argv = sys.argv
    old_path = list(sys.path)
    script_dir = os.path.dirname(os.path.abspath(path))
    outcome: BaseException | None = None
    try:
        sys.argv = [path, *map(str, argv)]
        sys.path.insert(0, script_dir)
        session.install()
        try:
            with contextlib.redirect_stdout(sys.stderr), _alarm(max_seconds):
                runpy.run_path(path, run_name="__main__")
        except _StopScript:
            pass
        except (Exception, SystemExit, _ScriptTimeout) as exc:
            outcome = exc
    finally:
        session.restore()
        sys.argv = old_argv
        sys.path[:] = old_path

    if session.captured is not None:  # captured, even if the script swallowed our stop
        return session.captured
    if isinstance(outcome, _ScriptTimeout):
        raise TraceError(
            f"{path} ran for more than {max_seconds:g} s without calling a model's forward; "
            f"raise --max-seconds, or {_FALLBACK_HINT}"
        )
    if isinstance(outcome, SystemExit):
        code = outcome.code
        if code is None or isinstance(code, int):
            status = f"status {code or 0}"
        else:
            status = f"message {_first_line(str(code))!r}"
        hint = " (argparse exits 2 on bad arguments)" if code == 2 else ""
        raise TraceError(
            f"{path} exited (sys.exit, {status}) before calling a model's forward{hint}; "
            f"pass the arguments it needs after `--`, or {_FALLBACK_HINT}"
        ) from outcome
    if outcome is not None:
        where = _script_line(outcome, path)
        message = _first_line(str(outcome))
        text = type(outcome).__name__ + (f": {message}" if message else "")
        raise TraceError(
            f"{path} raised {text}"
            + (f" at {where}" if where else "")
            + f" before calling a model's forward; fix the script, or {_FALLBACK_HINT}"
        ) from outcome
    raise TraceError(f"{path} ended but never called a model's forward; {_FALLBACK_HINT}")


def _builder() -> str | None:
    """ "transformers Trainer" when the accelerator being prepared is the Trainer's: it builds the
    plugin from ``TrainingArguments(torch_compile=...)``, so the script has no plugin to edit."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("transformers.trainer"):
            return "transformers Trainer"
        frame = frame.f_back
    return None
