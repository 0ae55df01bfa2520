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
    assert "    train_model = model\n" in text and "train_model, opt = accelerator.prepare(train_model, opt)" in text, (
        text
    )
    assert text.index("train_model = model") < text.index("accelerator.prepare("), text
    assert "torch.save(model.state_dict()" in text or "accelerator.save(model.state_dict()" in text, text
    assert "DDP(" not in text, text


def test_a_second_wrap_of_the_model_is_still_refused_naming_it():
    more = "    if ddp:\n        train_model = DDP(model)\n"
    refused = convert_source(SCRIPT.format(more=more), "train.py").refused
    # eeg_lpft (survey25a): the refusal names both wraps (before: "does not wrap the trained model in place")
    assert refused is not None and "DDP(...) at line 17 wraps model again (first at line 15)" in refused, refused


def test_a_model_rebound_after_its_wrap_is_still_refused():
    more = "    model = torch.nn.Linear(4, 1)\n"
    refused = convert_source(SCRIPT.format(more=more), "train.py").refused
    assert refused is not None and "does not wrap the trained model in place" in refused, refused


GOLF = """\
import os
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    base_model = nn.Linear(4, 1)
    compiled_model = torch.compile(base_model, dynamic=False)
    model: nn.Module = (DDP(compiled_model, broadcast_buffers=False)
                        if distributed else compiled_model)
    optimizer = torch.optim.AdamW(base_model.parameters(), lr=0.1)
    for step in range(3):
        optimizer.zero_grad()
        loss = model(torch.randn(2, 4)).sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(base_model.parameters(), 1.0)
        optimizer.step()
{more}    if not distributed or dist.get_rank() == 0:
        torch.save(base_model.state_dict(), "final.pt")


main()
"""


def test_a_wrap_of_a_compiled_alias_only_it_reads_prepares_the_wrap_s_name():
    """golf_gpt2 (the parameter-golf GPT-2 baseline): ``compiled_model = torch.compile(base_model,
    ...)``, ``model: nn.Module = (DDP(compiled_model, ...) if distributed else compiled_model)``, the
    optimizer over ``base_model``: the compile's keywords go to the plugin, the DDP keywords to
    DistributedDataParallelKwargs, and ``model`` is prepared after the optimizer exists."""
    result = convert_source(GOLF.format(more=""), "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert "    compiled_model = base_model\n    model: nn.Module = compiled_model\n" in text, text
    assert "model, optimizer = accelerator.prepare(model, optimizer)" in text, text
    assert 'TorchDynamoPlugin(backend="inductor", dynamic=False)' in text, text
    assert "DistributedDataParallelKwargs(broadcast_buffers=False)" in text, text
    assert "torch.compile" not in text and "DDP(" not in text, text


def test_a_compiled_alias_read_beside_the_wrap_is_still_refused():
    more = "    print(compiled_model(torch.randn(1, 4)))\n"
    refused = convert_source(GOLF.format(more=more), "train.py").refused
    assert refused is not None and "does not wrap the trained model in place" in refused, refused


def test_a_wrap_the_training_does_not_run_through_is_still_refused():
    """The forward calls the plain model: the wrap is no alias of the trained model (the plugin
    would compile a model nothing runs)."""
    text = (
        SCRIPT.format(more="")
        .replace("loss = train_model(", "loss = model(")
        .replace("    for step", "    print(train_model)\n    for step")
    )
    refused = convert_source(text, "train.py").refused
    assert refused is not None and "does not wrap the trained model in place" in refused, refused
    # jit_lthc (survey25a): the refusal says what the wrap takes and what the optimizer trains
    assert "(it wraps model into train_model; the optimizer trains model)" in refused, refused
