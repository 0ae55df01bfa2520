"""A skip of the optimizer step on a non-finite loss, after the backward (survey 24b informer_ws:
``loss.backward()`` then ``if not torch.isfinite(loss): opt.zero_grad(); continue``), decides from
every process's loss once converted (codemod/finite_skips). Before, each process decided from its
own: with a NaN on one rank, the all-reduced gradients were NaN on all, the others stepped on
them and that rank skipped; a 2-process replica ended with NaN weights on one rank only."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import math

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


# Session 25: the step the `if` skips must be the optimizer's (a scheduler's or another object's
# `.step()` after it is no optimizer step), and the `math.*` / self-inequality spellings of the
# test decide per process as the torch ones did.

SCHEDULED = SCRIPT.replace(
    "    loader = ",
    '    sched = torch.optim.lr_scheduler.StepLR(opt, 2)\n    scaler = torch.amp.GradScaler("cpu", enabled=False)\n'
    "    loader = ",
).replace("            opt.step()\n            opt.zero_grad()\n", "            STEPS\n")


def _converted_steps(test: str, steps: str) -> str:
    result = convert_source(SCHEDULED.replace("TEST", test).replace("STEPS", steps), "train.py")
    assert result.refused is None, result.refused
    return result.text


def test_a_skip_before_a_scheduler_step_only_is_no_optimizer_step_skip():
    text = _converted_steps("not torch.isfinite(loss)", "sched.step()")
    assert "gather" not in text, text


def test_a_skip_before_a_scaler_step_of_the_optimizer_is_gathered():
    text = _converted_steps("not torch.isfinite(loss)", "scaler.step(opt)\n            scaler.update()")
    assert "if not torch.isfinite(accelerator.gather(loss)).all():" in text, text


HELPER = """\
import torch
import torch.nn as nn


def train_epoch(net, optim, loader):
    for x, y in loader:
        loss = nn.functional.mse_loss(net(x), y)
        loss.backward()
        if torch.isnan(loss):
            optim.zero_grad()
            continue
        optim.step()
        optim.zero_grad()


def main():
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
    for epoch in range(2):
        train_epoch(model, opt, loader)


if __name__ == "__main__":
    main()
"""


def test_a_skip_in_a_helper_stepping_the_optimizer_it_is_handed_is_gathered():
    result = convert_source(HELPER, "train.py")
    assert result.refused is None, result.refused
    assert "if torch.isnan(accelerator.gather(loss)).any():" in result.text, result.text


def test_math_isnan_of_the_item_is_gathered():
    text, notes = _converted("math.isnan(loss.item())")
    assert "if torch.isnan(accelerator.gather(loss)).any():" in text, text
    assert any("isnan" in n and "every process" in n for n in notes), notes


def test_not_math_isfinite_of_a_float_is_gathered_as_a_tensor_on_the_device():
    text, _ = _converted("not math.isfinite(float(loss))")
    assert (
        "if not torch.isfinite(accelerator.gather(torch.as_tensor(float(loss), device=accelerator.device))).all():"
        in text
    ), text


def test_math_isinf_of_a_name_gathers_it_as_a_tensor_on_the_device():
    text, _ = _converted("math.isinf(loss)")
    assert "if torch.isinf(accelerator.gather(torch.as_tensor(loss, device=accelerator.device))).any():" in text, text


def test_a_value_unequal_to_itself_is_a_nan_test_gathered():
    text, _ = _converted("loss.item() != loss.item()")
    assert "if torch.isnan(accelerator.gather(loss)).any():" in text, text


def test_an_inequality_of_two_values_is_left_as_it_is():
    text, _ = _converted("loss.item() != 0.0")
    assert "gather" not in text, text


# Session 26: an optimizer stepped through a list (`for o in opts: o.step()`, `[o.step() for o in
# opts]`) is an optimizer step the `if` skips, as `opt.step()` is.

LISTED = """\
import torch
import torch.nn as nn


def main():
    model = nn.Linear(4, 1)
    head = nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt2 = torch.optim.SGD(head.parameters(), lr=0.1)
    opts = [opt, opt2]
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.mse_loss(head(model(x)), y)
            loss.backward()
            if not torch.isfinite(loss):
                continue
            STEPS


if __name__ == "__main__":
    main()
"""


def _converted_listed(steps: str) -> str:
    result = convert_source(LISTED.replace("STEPS", steps), "train.py")
    assert result.refused is None, result.refused
    return result.text


def test_a_skip_before_a_loop_stepping_a_list_of_optimizers_is_gathered():
    text = _converted_listed("for o in opts:\n                o.step()\n                o.zero_grad()")
    assert "if not torch.isfinite(accelerator.gather(loss)).all():" in text, text


def test_a_skip_before_a_comprehension_stepping_a_list_of_optimizers_is_gathered():
    text = _converted_listed("[o.step() for o in opts]")
    assert "if not torch.isfinite(accelerator.gather(loss)).all():" in text, text


def test_a_skip_before_a_loop_over_a_tuple_of_the_optimizers_is_gathered():
    text = _converted_listed("for o in (opt, opt2):\n                o.step()")
    assert "if not torch.isfinite(accelerator.gather(loss)).all():" in text, text


def test_a_skip_before_a_loop_stepping_a_list_of_other_objects_is_left_as_it_is():
    script = LISTED.replace("    opts = [opt, opt2]\n", "    opts = [opt, opt2]\n    meters = [object()]\n")
    result = convert_source(script.replace("STEPS", "for m in meters:\n                m.step()"), "train.py")
    assert result.refused is None, result.refused
    assert "gather" not in result.text, result.text
