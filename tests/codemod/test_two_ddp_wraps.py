"""codemod/hand_distribution.py: two models wrapped in DDP by hand, each with its options.

survey21c ntxent_ddp: ``encoder = DDP(encoder, ..., find_unused_parameters=True)`` and
``head = DDP(head, ..., find_unused_parameters=False)``. Accelerate wraps every prepared model
with the one ``DistributedDataParallelKwargs`` it is given; with both models trained, the
conversion wrote ``DistributedDataParallelKwargs(find_unused_parameters=True,
find_unused_parameters=False)``, which Python will not compile ("keyword argument repeated").
Different values are refused naming both wraps; the same value is passed once.
"""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

SCRIPT = """\
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    encoder = torch.nn.Linear(8, 8)
    head = torch.nn.Linear(8, 2)
    encoder = DDP(encoder, find_unused_parameters=ENC)
    head = DDP(head, find_unused_parameters=HEAD)
    optimizer = torch.optim.AdamW([{"params": head.parameters()}, {"params": encoder.parameters()}])
    data = TensorDataset(torch.randn(32, 8))
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data))
    for (x,) in loader:
        loss = head(encoder(x)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def convert(enc: str, head: str):
    return convert_source(SCRIPT.replace("ENC", enc).replace("HEAD", head), "train.py", ConvertOptions())


def test_two_wraps_differing_in_find_unused_parameters_pass_true_naming_both():
    """survey 22c colorize_gan: ``EG`` wrapped with ``find_unused_parameters=True``, ``D`` with
    ``False``. A model that ran with ``False`` uses every parameter in each forward (DDP raises
    otherwise), so searching it for unused ones finds none: the same gradients, a little slower."""
    result = convert("True", "False")
    assert result.refused is None, result.refused
    assert "DistributedDataParallelKwargs(find_unused_parameters=True)]" in result.text
    assert any("DDP(...) at line 16 set find_unused_parameters=False" in n for n in result.notes), result.notes
    compile(result.text, "train.py", "exec")


def test_two_wraps_with_other_different_options_are_refused_naming_both():
    result = convert("True, broadcast_buffers=False", "True, broadcast_buffers=True")
    assert result.refused is not None
    assert "broadcast_buffers" in result.refused
    assert "line 15" in result.refused and "line 16" in result.refused, result.refused


FROZEN = (
    SCRIPT.replace("ENC", "True")
    .replace("HEAD", "False")
    .replace(
        "    head = DDP(head, find_unused_parameters=False)\n",
        "    head = DDP(head, find_unused_parameters=False)\n"
        "    perceptual = torch.nn.Linear(2, 2).requires_grad_(False)\n"
        "    perceptual = DDP(perceptual, find_unused_parameters=True)\n",
    )
    .replace("loss = head(encoder(x)).pow(2).mean()", "loss = perceptual(head(encoder(x))).pow(2).mean()")
)


def test_a_wrap_of_a_network_no_optimizer_steps_is_replaced_by_a_copy_of_process_0s_values():
    """survey 22c colorize_gan: ``vgg_per = DDP(vgg_per, ...)``, a perceptual network no optimizer
    steps. Accelerate wraps only what it prepares; what DDP did for it, copying process 0's
    parameters and buffers when it wrapped it, is done in its place."""
    result = convert_source(FROZEN, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    assert "perceptual = DDP(" not in result.text
    assert (
        "    perceptual = torch.nn.Linear(2, 2).requires_grad_(False)\n"
        "    if torch.distributed.is_initialized():\n"
        "        for param_or_buffer in [*perceptual.parameters(), *perceptual.buffers()]:\n"
        "            torch.distributed.broadcast(param_or_buffer.data, src=0)\n"
    ) in result.text, result.text
    assert any("DDP(...) at line 18 wrapped perceptual, which no optimizer steps" in n for n in result.notes), (
        result.notes
    )
    compile(result.text, "train.py", "exec")


def test_two_wraps_with_the_same_options_pass_them_once():
    result = convert("True", "True")
    assert result.refused is None, result.refused
    assert "DistributedDataParallelKwargs(find_unused_parameters=True)]" in result.text
    compile(result.text, "train.py", "exec")


def test_a_wrap_in_place_of_a_model_the_optimizer_is_not_seen_to_train_says_so():
    """The original survey21c script: the encoder's parameters join the optimizer only under ``if
    not cfg.freeze_encoder:`` (``param_groups.append(...)``). Its in-place wrap was refused as one
    that "does not wrap the trained model in place (model = DDP(model, ...))", which it does."""
    text = (
        SCRIPT.replace("ENC", "True")
        .replace("HEAD", "True")
        .replace(
            '    optimizer = torch.optim.AdamW([{"params": head.parameters()}, {"params": encoder.parameters()}])\n',
            '    groups = [{"params": head.parameters()}]\n'
            "    if os.environ.get('TRAIN_ENCODER'):\n"
            '        groups.append({"params": encoder.parameters()})\n'
            "    optimizer = torch.optim.AdamW(groups)\n",
        )
    )
    result = convert_source(text, "train.py", ConvertOptions())
    assert result.refused is not None
    assert "does not wrap the trained model in place" not in result.refused, result.refused
    assert "DDP(...) at line 15 wraps encoder in place" in result.refused, result.refused
    assert "head" in result.refused
