"""A training DataLoader over the script's own IterableDataset that yields whole batches: refused.

``DataLoader(stream, batch_size=None)`` hands on what the dataset's ``__iter__`` yields, batch by
batch, as it is: the LibriSpeech trainer of survey 20c pads each batch to its own length and yields
the audio seconds and token count beside the tensors, as Python numbers. On several processes
accelerate's ``prepare()`` shards a loader over an IterableDataset by dispatching its batches (its
``dispatch_batches`` default): the main process reads one batch per process, concatenates them and
hands each process its slice. That works only when every value of a batch is a tensor, of one shape
past the first dimension in all batches, which nothing in the script promises (the replica: alike on
one process, ``TypeError: Can only concatenate tensors but got <class 'float'>`` at the first batch
on two). Which values the stream yields is not read here, so such a loader is refused, naming it and
the dataset class. A loader that batches single items itself (``batch_size=8``) collates them into
tensors and still converts.
"""

from __future__ import annotations

import ast

from regcomp_lint.analysis.training_roles import Origin
from regcomp_lint.codemod.lint_view import LintView
from regcomp_lint.knowledge.torch_api import ITERABLE_DATASETS


def whole_batch_stream_refusal(view: LintView, loaders: list[Origin]) -> str | None:
    """Why the script is not converted, when one of the training ``loaders`` (prepared by the
    conversion) has ``batch_size=None`` and reads an instance of a local IterableDataset class."""
    for origin in loaders:
        call = origin.built
        if not any(
            kw.arg == "batch_size" and isinstance(kw.value, ast.Constant) and kw.value.value is None
            for kw in call.keywords
        ):
            continue
        dataset = call.args[0] if call.args else next((kw.value for kw in call.keywords if kw.arg == "dataset"), None)
        cls = _iterable_class(view, dataset)
        if cls is None:
            continue
        return (
            f"the training DataLoader at line {call.lineno} reads {cls.name}, an IterableDataset (line {cls.lineno}) "
            "that yields whole batches (batch_size=None): on several processes accelerate's prepare() dispatches "
            "such a loader's batches (the main process reads one batch per process, concatenates them and hands "
            "each process its slice), which works only when every value of a batch is a tensor of one shape past "
            "the first dimension (a float or an int in a batch, or batches padded to their own length, fail with "
            "TypeError or a size mismatch); give each process its own stream in the dataset (by "
            "accelerator.process_index) and leave the loader unprepared, or convert by hand"
        )
    return None


def _iterable_class(view: LintView, dataset: ast.expr | None) -> ast.ClassDef | None:
    """The script's own IterableDataset subclass that ``dataset`` is an instance of: built right
    there (``DataLoader(Stream(...))``) or bound to a name from its constructor call."""
    roles, parsed = view.roles, view.parsed
    if dataset is None or roles is None or parsed is None:
        return None
    value: ast.AST | None = dataset
    if isinstance(dataset, ast.Name):
        bound = roles.bindings.lookup(dataset, view.where(dataset))
        value = bound.value if bound is not None else None
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return None
    name = value.func.id
    for stmt in parsed.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == name:
            imports = roles.ctx.imports
            return stmt if any(imports.resolves_to(base, *ITERABLE_DATASETS) for base in stmt.bases) else None
    return None
