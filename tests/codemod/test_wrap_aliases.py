"""A DDP wrap under a second name of the model the optimizer trains (codemod/hand_distribution.py
``wrap_aliases``): edm_height (survey25a) builds ``opt = AdamW(model.parameters())``, resumes, then
``train_model = DDP(model) if ddp else model``, trains through ``train_model`` and keeps ``model`` the
plain module its EMA reads and its checkpoint saves. Preparing ``train_model`` in the wrap's place
trains the same parameters; a second wrap of the model (eeg_lpft's re-wrap after unfreezing) is
still refused."""

from __future__ import annotations

from regcomp_lint.codemod.convert import convert_source

SCRIPT = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ddp = "RANK" in os.environ
    if ddp:
        dist.init_process_group("gloo")
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if os.path.exists("m.pt"):
        model.load_state_dict(torch.load("m.pt"))
    train_model = DDP(model) if ddp else model
{more}
    for step in range(3):
        opt.zero_grad()
        loss = train_model(torch.randn(2, 4)).sum()
        loss.backward()
        opt.step()
    if not ddp or dist.get_rank() == 0:
        torch.save(model.state_dict(), "m.pt")


main()
"""


def test_the_wrap_s_own_name_is_prepared_after_it_and_the_model_stays_plain():
    result = convert_source(SCRIPT.format(more=""), "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert "    train_model = model\n" in text and "train_model, opt = accelerator.prepare(train_model, opt)" in text, text
    assert text.index("train_model = model") < text.index("accelerator.prepare("), text
    assert "torch.save(model.state_dict()" in text or "accelerator.save(model.state_dict()" in text, text
    assert "DDP(" not in text, text


def test_a_second_wrap_of_the_model_is_still_refused_naming_it():
    more = "    if ddp:\n        train_model = DDP(model)\n"
    refused = convert_source(SCRIPT.format(more=more), "train.py").refused
    assert refused is not None and "at line 15 does not wrap the trained model in place" in refused, refused


def test_a_model_rebound_after_its_wrap_is_still_refused():
    more = "    model = torch.nn.Linear(4, 1)\n"
    refused = convert_source(SCRIPT.format(more=more), "train.py").refused
    assert refused is not None and "does not wrap the trained model in place" in refused, refused
