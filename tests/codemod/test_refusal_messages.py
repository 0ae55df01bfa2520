"""Refusals name the class, function and line of what they refuse (survey 13's message review)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source


def test_an_optimizer_a_layer_builds_for_itself_names_the_layer_and_line():
    """The forward-forward example: each layer builds Adam(self.parameters()) in its __init__."""
    text = (
        "import torch\nfrom torch.optim import Adam\n\n\nclass Layer(torch.nn.Linear):\n"
        "    def __init__(self, i, o):\n        super().__init__(i, o)\n        self.opt = Adam(self.parameters(), lr=0.03)\n\n"
        "    def train_step(self, x):\n        loss = self.forward(x).pow(2).mean()\n        self.opt.zero_grad()\n"
        "        loss.backward()\n        self.opt.step()\n\n\nlayer = Layer(4, 4)\nfor _ in range(3):\n"
        "    layer.train_step(torch.randn(2, 4))\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is not None
    assert "the optimizer is built from self.parameters() in Layer.__init__() (line 6)" in result.refused
