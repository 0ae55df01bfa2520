"""own_batch_methods: the loader methods a module-level script runs from module code (survey 22a
modded_flex's ``train_loader.next_batch()``), whose ``"cuda"`` placements follow the accelerator."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper

from regcomp_lint.codemod.batch_methods import own_batch_methods
from regcomp_lint.codemod.tree import Tree

LOADER = (
    "import torch\nclass Loader:\n    def __init__(self, t):\n        self.t = t\n"
    "    def next_batch(self):\n        return self.t.to(device='cuda')\n"
    "    def reset(self):\n        self.t = self.t.cuda()\n"
)


def _found(text: str) -> list[tuple[str, int]]:
    tree = Tree(MetadataWrapper(cst.parse_module(text)))
    return [(method.name.value, len(calls)) for method, calls in own_batch_methods(tree)]


def test_module_level_calls_through_a_module_level_instance():
    text = (
        LOADER
        + "loader = Loader(torch.ones(3))\nx = loader.next_batch()\nfor _ in range(3):\n    x = loader.next_batch()\n"
    )
    assert _found(text) == [("next_batch", 2)]


def test_a_call_from_a_function_may_run_anywhere():
    text = LOADER + "loader = Loader(torch.ones(3))\ndef warm():\n    loader.reset()\nx = loader.next_batch()\n"
    assert _found(text) == [("next_batch", 1)]


def test_modules_and_datasets_and_dunder_methods_are_not_theirs():
    text = (
        "import torch\nclass Net(torch.nn.Module):\n    def step(self):\n        return torch.ones(1).cuda()\n"
        "net = Net()\nnet.step()\n" + LOADER + "loader = Loader(torch.ones(3))\nloader.__init__(torch.ones(3))\n"
    )
    assert _found(text) == []
