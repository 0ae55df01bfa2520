"""codemod/wrapped_access.py's reading of what a backward differentiates: a loss summed in a loop
(``for fr, ff in zip(feat_real, feat_fake): d_loss += ...``) reads the model's method through the
loop's iterable and the augmented assignment, as a plain ``d_loss = ...`` would. Before, only
``=`` assignments were followed: a GAN discriminator's loss from ``discriminator.forward_all_layers``
converted to ``accelerator.unwrap_model(discriminator, ...).forward_all_layers(...)``, which bypasses
DDP's gradient sync (survey 20c, liver_gan: on 2 processes the discriminators of the two ranks
ended apart, weight sums 1.158205 and 0.716839, the generators equal)."""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

GAN = """import torch
import torch.nn as nn


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(8, 8)
        self.l2 = nn.Linear(8, 4)

    def forward_all_layers(self, x):
        a = torch.relu(self.l1(x))
        return [a, self.l2(a)]

    def forward(self, x):
        return self.forward_all_layers(x)[-1]


def main():
    generator = nn.Linear(8, 8)
    discriminator = Discriminator()
    generator = torch.compile(generator)
    discriminator = torch.compile(discriminator)
    opt_g = torch.optim.Adam(generator.parameters())
    opt_d = torch.optim.Adam(discriminator.parameters())
    for step in range(4):
        x = torch.randn(4, 8)
        fake = generator(x)
        feat_real = discriminator.forward_all_layers(x)
        feat_fake = discriminator.forward_all_layers(fake.detach())
        d_loss = 0.0
        for fr, ff in zip(feat_real, feat_fake):
            d_loss += (fr - ff).abs().mean()
        d_loss = d_loss / 2
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        g_loss = -discriminator(generator(x)).mean()
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
"""

ONE_MODEL = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(8, 8)

    def features(self, x):
        return [self.l1(x), torch.relu(self.l1(x))]


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    loss = 0.0
    for a, b in zip(model.features(x), model.features(y)):
        loss += (a - b).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def convert(text: str):
    return convert_source(text, "train.py", ConvertOptions())


def test_a_method_read_through_a_loop_and_an_augmented_assignment_is_refused_beside_two_models():
    result = convert(GAN)
    assert result.refused is not None, result.text
    assert "discriminator.forward_all_layers(...) at line 29 computes the loss with the model's own method" in (
        result.refused
    )


def test_a_method_read_through_a_loop_trains_through_a_wrapper_with_one_model():
    result = convert(ONE_MODEL)
    assert result.refused is None, result.refused
    assert "class _Features(torch.nn.Module):\n" in result.text
    assert "    for a, b in zip(features(x), features(y)):\n" in result.text
