"""The first parameter of an ``mp.spawn`` worker is its process index (the rank on one machine):
``if gpu == 0:`` there keeps code on the main process, for the lint and the fixer alike
(analysis/main_process). Before, survey 24a simclr_branch got the false note "open(logfilepath,
"w") ... writes the same file from every process" on a log file opened under ``if gpu == 0:``.
And a backward under a helper's rank-0 test (``if is_rank0(): loss.backward()``) is refused as one
under ``if rank == 0:`` is (plain._refuse_rank_guarded_steps)."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.main_process import main_process_only
from regcomp_lint.codemod import convert_source

SPAWNED = """\
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(gpu, args):
    dist.init_process_group("gloo", rank=gpu, world_size=2)
    model = DDP(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    GUARD
        log = open("train.log", "w")
    for epoch in range(2):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    mp.spawn(worker, nprocs=2, args=(None,))


if __name__ == "__main__":
    main()
"""


def _notes(source: str) -> list[str]:
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    return result.notes


def test_a_file_opened_under_the_spawn_index_test_is_written_once():
    notes = _notes(SPAWNED.replace("GUARD", "if gpu == 0:"))
    assert not any("every process" in n for n in notes), notes


def test_the_same_parameter_of_a_function_no_spawn_starts_is_not_a_rank():
    source = SPAWNED.replace("GUARD", "if gpu == 0:").replace(
        "mp.spawn(worker, nprocs=2, args=(None,))", "worker(0, None)"
    )
    assert any("writes the same file from every process" in n for n in _notes(source))


def test_a_later_parameter_of_the_worker_is_not_its_index():
    notes = _notes(SPAWNED.replace("GUARD", "if args == 0:"))
    assert any("writes the same file from every process" in n for n in notes), notes


def _ancestors_of_open(source: str) -> list[ast.AST]:
    module = ast.parse(source)
    chain: list[ast.AST] = []

    def visit(node: ast.AST, path: list[ast.AST]) -> bool:
        path = [*path, node]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            chain.extend(path)
            return True
        return any(visit(child, path) for child in ast.iter_child_nodes(node))

    visit(module, [])
    return chain


def test_the_lint_reads_the_spawn_index_as_the_rank():
    assert main_process_only(_ancestors_of_open(SPAWNED.replace("GUARD", "if gpu == 0:")))
    assert main_process_only(_ancestors_of_open(SPAWNED.replace("GUARD", "if not gpu:")))
    unspawned = SPAWNED.replace("GUARD", "if gpu == 0:").replace("mp.spawn(worker,", "print(worker,")
    assert not main_process_only(_ancestors_of_open(unspawned))


def test_a_write_after_other_indices_return_is_written_once():
    source = SPAWNED.replace("    GUARD\n        log = open", "    if gpu != 0:\n        return\n    log = open")
    notes = _notes(source)
    assert not any("every process" in n for n in notes), notes


HELPER = """\
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def is_rank0():
    return not dist.is_initialized() or dist.get_rank() == 0


def main():
    dist.init_process_group("nccl")
    model = DDP(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        GUARD
            loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_a_backward_under_a_helpers_rank0_test_is_refused():
    result = convert_source(HELPER.replace("GUARD", "if is_rank0():"), "train.py")
    assert result.refused is not None and "trains on the main process only" in result.refused, result.refused
    assert "if is_rank0()" in result.refused


def test_a_backward_under_the_spawn_index_test_is_refused():
    source = SPAWNED.replace('GUARD\n        log = open("train.log", "w")', "pass").replace(
        "        loss.backward()", "        if gpu == 0:\n            loss.backward()"
    )
    result = convert_source(source, "train.py")
    assert result.refused is not None and "trains on the main process only" in result.refused, result.refused


def test_a_backward_under_a_helper_that_is_no_rank_test_converts():
    source = HELPER.replace("GUARD", "if is_rank0():").replace(
        "return not dist.is_initialized() or dist.get_rank() == 0", "return True"
    )
    assert convert_source(source, "train.py").refused is None


# Session 25: the spawn forms other than `mp.spawn(worker, ...)` (the worker by keyword, through
# `functools.partial`, `start_processes`) start the same worker with the same index, read from
# analysis/distributed_setup for the lint's roles and the fixer alike.

FORMS = (
    "mp.spawn(fn=worker, nprocs=2, args=(None,))",
    "torch.multiprocessing.spawn(fn=worker, nprocs=2, args=(None,))",
    "mp.start_processes(worker, args=(None,), nprocs=2, start_method='spawn')",
    "mp.spawn(functools.partial(worker, args=None), nprocs=2)",
    "mp.spawn(partial(worker, args=None), nprocs=2)",
)


def _spawned_by(form: str) -> str:
    source = SPAWNED.replace("GUARD", "if gpu == 0:").replace("mp.spawn(worker, nprocs=2, args=(None,))", form)
    return source.replace("import torch\n", "import functools\nfrom functools import partial\n\nimport torch\n", 1)


def test_the_lint_reads_the_index_of_every_spawn_form():
    for form in FORMS:
        assert main_process_only(_ancestors_of_open(_spawned_by(form))), form


def test_a_partial_binding_the_first_parameter_moves_the_index_to_the_next():
    source = _spawned_by("mp.spawn(functools.partial(worker, 0), nprocs=2)")
    assert not main_process_only(_ancestors_of_open(source))


def test_a_worker_started_by_keyword_converts_with_its_index_as_the_rank():
    source = _spawned_by("mp.spawn(fn=worker, nprocs=2, args=(None,))")
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    assert "LOCAL_RANK=str(gpu)" in result.text, result.text
    assert not any("every process" in n for n in result.notes), result.notes


def _partial_after_bound() -> str:
    source = SPAWNED.replace("def worker(gpu, args):", "def worker(args, gpu):").replace(
        "mp.spawn(worker, nprocs=2, args=(None,))", "mp.spawn(functools.partial(worker, None), nprocs=2)"
    )
    return source.replace("GUARD", "if gpu == 0:").replace("import torch\n", "import functools\n\nimport torch\n", 1)


def test_a_worker_started_through_partial_takes_the_index_after_the_bound_arguments():
    source = _partial_after_bound()
    assert main_process_only(_ancestors_of_open(source))
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    assert "LOCAL_RANK=str(gpu)" in result.text, result.text
    assert not any("every process" in n for n in result.notes), result.notes
