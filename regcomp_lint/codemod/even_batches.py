"""A prepared training loader whose epoch changes size on several processes: named in a note.

accelerate's ``prepare()`` gives every process the same number of batches (``even_batches``,
accelerate 1.15 ``BatchSamplerShard._iter_with_no_split``): unless the dataset's size is a
multiple of processes × batch size, the last batches of each epoch are filled with samples from its
start, so an epoch trains on more samples than the original (survey 20a poster_sam: 60 samples,
batch 8, 64 per epoch on 2 processes, measured). With ``drop_last=True`` the full batches that do
not make a round of one batch per process are dropped instead. How many processes a launch has is
not known when converting: a size read from the script is worked out for 2 (the smallest
multi-process launch); a size that cannot be read gets the general note.
"""

from __future__ import annotations

import ast

from regcomp_lint.analysis.training_roles import Origin
from regcomp_lint.codemod.lint_view import LintView

#: Tensor factories whose first argument is the first dimension (the dataset's length).
_SIZED_FACTORIES = ("torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty")
_PROCESSES = 2


def even_batches_notes(view: LintView, loaders: dict[str, Origin | None]) -> list[str]:
    """One note per prepared training loader (by key) whose epoch may change size."""
    notes: list[str] = []
    for key, origin in loaders.items():
        call = origin.built if origin is not None else None
        batch, drop_last = _batch_size(call), _drop_last(call)
        size = _dataset_size(view, call)
        if size is not None and batch is not None and drop_last is not None:
            note = _known(key, size, batch, drop_last)
        else:
            note = _unknown(key, batch, drop_last)
        if note is not None:
            notes.append(note)
    return notes


def _known(key: str, size: int, batch: int, drop_last: bool) -> str | None:
    batches = size // batch if drop_last else -(-size // batch)
    rounds = batches // _PROCESSES if drop_last else -(-batches // _PROCESSES)
    if rounds * _PROCESSES == batches and (drop_last or size % batch == 0):
        return None
    if drop_last:
        return (
            f"{key}: on {_PROCESSES} processes an epoch holds {rounds * _PROCESSES} batches of {batch}, not {batches}: "
            "with drop_last=True, accelerate's prepare() drops the full batches that do not make a round of one batch "
            "per process (on N processes an epoch is a multiple of N batches)"
        )
    padded = rounds * _PROCESSES * batch
    return (
        f"{key}: on {_PROCESSES} processes an epoch holds {padded} samples, not {size} ({padded - size} of its first "
        "samples again): accelerate's prepare() gives every process the same number of full batches (even_batches) "
        f"and fills the last ones from the start of the epoch (on N processes an epoch is a multiple of N × {batch} "
        "samples)"
    )


def _unknown(key: str, batch: int | None, drop_last: bool | None) -> str:
    size = f"N × {batch}" if batch is not None else "N × the batch size"
    if drop_last:
        return (
            f"{key}: on N processes, with drop_last=True, accelerate's prepare() drops the full batches that do not make "
            "a round of one batch per process, so an epoch may train on fewer samples than the original"
        )
    return (
        f"{key}: on N processes accelerate's prepare() gives every process the same number of full batches "
        f"(even_batches): unless the dataset's size is a multiple of {size}, the last batches of each epoch are "
        "filled with samples from its start, so an epoch trains on more samples than the original"
        + (" (or, with drop_last=True, on fewer)" if drop_last is None else "")
    )


def _keyword(call: ast.Call | None, name: str, position: int) -> ast.expr | None:
    if call is None:
        return None
    found = next((kw.value for kw in call.keywords if kw.arg == name), None)
    if found is None and len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args):
        found = call.args[position]
    return found


def _given(call: ast.Call, name: str, position: int) -> bool:
    """``call`` passes ``name`` (or ``**kwargs``, which may hold it), other than as None."""
    if any(kw.arg is None for kw in call.keywords):
        return True
    value = _keyword(call, name, position)
    return value is not None and not (isinstance(value, ast.Constant) and value.value is None)


def _batch_size(call: ast.Call | None) -> int | None:
    """``batch_size=8`` (1 when not given), or None when not a constant or a batch sampler decides."""
    if call is None or _given(call, "batch_sampler", 4):
        return None
    value = _keyword(call, "batch_size", 1)
    if value is None:
        return 1
    return _int(value)


def _drop_last(call: ast.Call | None) -> bool | None:
    value = _keyword(call, "drop_last", 8) if call is not None else None
    if call is not None and value is None:
        return False
    return value.value if isinstance(value, ast.Constant) and isinstance(value.value, bool) else None


def _dataset_size(view: LintView, call: ast.Call | None) -> int | None:
    """The length of the dataset the loader reads, where the script spells it: a ``TensorDataset``
    of tensors made with a constant first dimension (``torch.randn(60, 4)``), ``range(n)``, a list."""
    if call is None or _given(call, "sampler", 3):
        return None
    dataset = _value(view, _keyword(call, "dataset", 0))
    if isinstance(dataset, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in dataset.elts):
        return len(dataset.elts)
    if not isinstance(dataset, ast.Call) or view.roles is None:
        return None
    imports = view.roles.ctx.imports
    if isinstance(dataset.func, ast.Name) and dataset.func.id == "range" and len(dataset.args) == 1:
        return _int(dataset.args[0])
    if not imports.resolves_to(dataset.func, "torch.utils.data.TensorDataset") or not dataset.args:
        return None
    sizes = set()
    for arg in dataset.args:
        tensor = _value(view, arg)
        if not (isinstance(tensor, ast.Call) and imports.resolves_to(tensor.func, *_SIZED_FACTORIES, "torch.randint")):
            return None
        sizes.add(_first_dimension(tensor, imports.resolves_to(tensor.func, "torch.randint")))
    return sizes.pop() if len(sizes) == 1 else None


def _value(view: LintView, expr: ast.expr | None) -> ast.AST | None:
    """``expr``, or what the name it is was bound to."""
    if isinstance(expr, ast.Name) and view.roles is not None:
        where = view.where_inside(expr)
        bound = view.roles.bindings.lookup(expr, where) if where is not None else None
        value = bound.value if bound is not None else None
        if bound is not None and bound.index is not None:  # `x, y = torch.randn(60, 4), torch.randn(60, 1)`
            elements = value.elts if isinstance(value, (ast.Tuple, ast.List)) else []
            return elements[bound.index] if bound.index < len(elements) else None
        return value
    return expr


def _first_dimension(tensor: ast.Call, randint: bool) -> int | None:
    """``torch.randn(60, 4)``: 60; ``torch.randint(0, 10, (60,))``: 60 (its size is the third argument)."""
    shape = _keyword(tensor, "size", 2) if randint else (tensor.args[0] if tensor.args else None)
    if isinstance(shape, (ast.Tuple, ast.List)):
        shape = shape.elts[0] if shape.elts else None
    return _int(shape) if shape is not None else None


def _int(expr: ast.AST) -> int | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, int) and not isinstance(expr.value, bool):
        return expr.value
    return None


def whole_loader_per_rank_notes(keys: list[str]) -> list[str]:
    """A note for each prepared training loader of a script that runs several processes by hand
    (DDP) without sharding that loader: in the original every rank iterated all of its batches;
    prepared, each takes its share, so an epoch is N times fewer optimizer steps per process
    (survey26f ddpm_avgmodel: a per-rank seeded RandomSampler, 8 steps per rank an epoch in the
    original, 4 converted on 2 processes)."""
    return [
        f"{key}: in the original every process iterated all of its batches (no DistributedSampler); prepared, each "
        "process takes its share, so on N processes an epoch has N times fewer optimizer steps per process: leave it "
        "unprepared to keep the original's steps"
        for key in keys
    ]
