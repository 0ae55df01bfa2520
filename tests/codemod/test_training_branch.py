"""prepare() inside the branch that trains (codemod/plain.py, ``_trains_only_under``).

A survey script built its model first, then put the optimizer, the loaders and the training under
``if not args.eval_only:`` and reloaded the best weights after it. Its one backward was reported as
training twice ("a backward pass at line 110, then again at line 110"); prepare() belongs in that
branch, after the branch's objects.
"""

from __future__ import annotations

import ast

from regcomp_lint.codemod.convert import convert_source

SCRIPT = """\
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--eval-only", action="store_true")
    args = parser.parse_args()
    model = torch.nn.Linear(4, 2)
    if not args.eval_only:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
        for epoch in range(2):
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
        torch.save(model.state_dict(), "best.pt")
    model.load_state_dict(torch.load("best.pt"))
    print(model(torch.randn(1, 4)))


if __name__ == "__main__":
    main()
"""


def _converted() -> str:
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    ast.parse(result.text)
    return result.text


def test_prepare_goes_into_the_training_branch_after_its_objects():
    lines = _converted().splitlines()
    prepare = lines.index("        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)")
    assert lines[prepare - 1].lstrip().startswith("loader = DataLoader(")
    assert lines.index("    if not args.eval_only:") < prepare


def test_the_accelerator_is_made_before_the_branch_and_the_reload_after_it_reads_the_plain_model():
    out = _converted()
    assert out.index("accelerator = Accelerator(") < out.index("    if not args.eval_only:")
    assert "    accelerator.unwrap_model(model, keep_torch_compile=False).load_state_dict(" in out


def test_idempotent():
    out = _converted()
    again = convert_source(out, "train.py")
    assert again.refused is None and again.text == out


def test_training_on_both_paths_of_the_branch_is_refused_naming_the_statement():
    """It was "a backward pass at line 18, then again at line 18" (one backward, named twice)."""
    both = SCRIPT.replace(
        '        torch.save(model.state_dict(), "best.pt")\n',
        '        torch.save(model.state_dict(), "best.pt")\n    else:\n        model(torch.randn(2, 4)).sum().backward()\n',
    )
    result = convert_source(both, "train.py")
    assert result.refused is not None
    assert (
        "a backward pass at line 18 and the last object to prepare (loader, line 14) share the statement at line 12"
        in (result.refused)
    )


# survey26d room_baseline: the tracker's run opened with `with wandb.init(...) as run:`, the model
# its loader built inside it, all handed to train(); the body of a `with` runs once, in order
TRACKED = """\
import contextlib

import torch
from torch.utils.data import DataLoader, TensorDataset


def train(model, loader, optimizer, run):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def main():
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with contextlib.nullcontext() as run:
        loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
        train(model, loader, optimizer, run)
    return model


if __name__ == "__main__":
    main()
"""


def test_prepare_goes_into_a_with_block_that_builds_the_last_object_and_trains():
    result = convert_source(TRACKED, "train.py")
    assert result.refused is None, result.refused
    ast.parse(result.text)
    lines = result.text.splitlines()
    prepare = lines.index("        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)")
    assert (
        lines.index("    with contextlib.nullcontext() as run:")
        < prepare
        < lines.index("        train(model, loader, optimizer, run, accelerator=accelerator)")
    )
