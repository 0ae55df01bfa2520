"""A skip of the optimizer step on a non-finite loss, after the backward (survey 24b informer_ws:
``loss.backward()`` then ``if not torch.isfinite(loss): opt.zero_grad(); continue``), decides from
every process's loss once converted (codemod/finite_skips). Before, each process decided from its
own: with a NaN on one rank, the all-reduced gradients were NaN on all, the others stepped on
them and that rank skipped; a 2-process replica ended with NaN weights on one rank only."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn


def main():
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            if TEST:
                opt.zero_grad()
                continue
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def _converted(test: str) -> tuple[str, list[str]]:
    result = convert_source(SCRIPT.replace("TEST", test), "train.py")
    assert result.refused is None, result.refused
    return result.text, result.notes


def test_a_skip_on_a_non_finite_loss_after_the_backward_is_decided_by_every_process():
    text, notes = _converted("not torch.isfinite(loss)")
    assert "if not torch.isfinite(accelerator.gather(loss)).all():" in text, text
    assert any("isfinite" in n and "every process" in n for n in notes), notes


def test_isnan_is_gathered_with_any():
    text, _ = _converted("torch.isnan(loss)")
    assert "if torch.isnan(accelerator.gather(loss)).any():" in text, text


def test_a_skip_on_another_value_is_left_as_it_is():
    text, _ = _converted("loss.item() > 100.0")
    assert "gather" not in text, text
