"""codemod/iterator_calls.py: the builtins next() and iter() are found by what they resolve to, so
the two refusals that read them (iterator_loaders, drawn_batches) agree, and a script's own
``next`` is not taken for the builtin."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper

from regcomp_lint.codemod import ConvertOptions, convert_source
from regcomp_lint.codemod.iterator_calls import iterator_starts, next_calls
from regcomp_lint.codemod.tree import Tree, code

LOOP = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
{own}

def main():
    train_loader = DataLoader(TensorDataset(torch.randn(64, 2)), batch_size=8)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(100):
        (x,) = next(train_loader)
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""
OWN_NEXT = '''
def next(loader):
    """The script's own next(): draws a fresh batch from the loader's iterator."""
    return list(iter(loader))[0]
'''


def _convert(source: str):
    return convert_source(source, "train.py", ConvertOptions())


def test_next_of_a_loader_is_refused_naming_the_call():
    result = _convert(LOOP.format(own=""))
    assert result.refused is not None and "next(train_loader) at line 10" in result.refused


def test_a_scripts_own_next_is_not_the_builtin():
    result = _convert(LOOP.format(own=OWN_NEXT))
    assert result.refused is None, result.refused
    assert "accelerator.prepare(" in result.text


def test_next_and_iter_are_found_by_what_they_resolve_to():
    tree = Tree(
        MetadataWrapper(
            cst.parse_module(
                "import builtins\n"
                "it = iter(xs)\n"
                "other = builtins.iter(ys)\n"
                "a = next(it)\n"
                "b = builtins.next(other, None)\n"
                "def f(next):\n"
                "    return next(it)\n"
            )
        )
    )
    assert [code(c).strip() for c in next_calls(tree, tree.module)] == ["next(it)", "builtins.next(other, None)"]
    assert [(it, code(x).strip()) for it, _, x in iterator_starts(tree, tree.module)] == [("it", "xs"), ("other", "ys")]
