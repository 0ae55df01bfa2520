"""A model attribute DDP reads only when it wraps the model stays before prepare() (survey 19a,
MiniMind's pretrain script): ``model._ddp_params_and_buffers_to_ignore = {"pos_cis"}`` set just
before ``DistributedDataParallel(model)``. After prepare() it is too late: DDP took its ignore list
in ``__init__``, so it syncs the buffers the script told it to leave alone (measured on gloo, 2
processes: a per-rank buffer becomes rank 0's and ``parameters_to_ignore`` is empty)."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.register_buffer("pos_cis", torch.ones(4), persistent=False)

    def forward(self, x):
        return self.fc(x * self.pos_cis)


ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    dist.init_process_group(backend="gloo")
model = Net()
loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
if ddp:
    model._ddp_params_and_buffers_to_ignore = {"pos_cis"}
    model = DistributedDataParallel(model)
for (x,) in loader:
    loss = model(x).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_the_ignore_list_is_set_before_prepare():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert "accelerator.unwrap_model" not in text, text
    assert 'model._ddp_params_and_buffers_to_ignore = {"pos_cis"}' in text, text
    assert text.index("_ddp_params_and_buffers_to_ignore") < text.index("accelerator.prepare("), text
    assert any("_ddp_params_and_buffers_to_ignore" in note and "(line 26)" in note for note in result.notes), (
        result.notes
    )


def test_through_the_static_helper_too():
    script = SCRIPT.replace(
        '    model._ddp_params_and_buffers_to_ignore = {"pos_cis"}\n',
        '    DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, ["pos_cis"])\n',
    )
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert text.index("_set_params_and_buffers_to_ignore_for_model") < text.index("accelerator.prepare("), text


def test_another_attribute_written_after_the_optimizer_does_not_move_prepare():
    result = convert_source(SCRIPT.replace("_ddp_params_and_buffers_to_ignore", "tag"), "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n" in text
    assert text.index("accelerator.prepare(") < text.index(".tag = "), text


COMPILED_FIRST = SCRIPT.replace(
    "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nif ddp:\n"
    '    model._ddp_params_and_buffers_to_ignore = {"pos_cis"}\n',
    "if compile:\n"
    "    model = torch.compile(model)\n"
    "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nif ddp:\n"
    '    prefix = "_orig_mod." if compile else ""\n'
    '    model._ddp_params_and_buffers_to_ignore = {prefix + "pos_cis"}\n',
).replace("ddp = int(", "compile = True\nddp = int(")


def test_names_with_the_compile_prefix_are_refused():
    """baby-llama2-chinese's pretrain.py (survey 24c): the script compiles, then names the buffer
    DDP must skip as ``_orig_mod.freqs_cis``, the compiled module's name. prepare() wraps the
    uncompiled model in DDP and compiles after, so that name matches nothing and DDP broadcasts the
    buffer (measured on gloo, 2 processes, compile on: rank 1's per-rank buffer became rank 0's,
    its step-0 loss 0.131744 -> -0.126705). Refused, naming the assignment and the prefix."""
    assert "_orig_mod." in COMPILED_FIRST
    result = convert_source(COMPILED_FIRST, "train.py")
    assert result.refused is not None, result.text
    assert "model._ddp_params_and_buffers_to_ignore = ..." in result.refused, result.refused
    assert "line 30" in result.refused and "_orig_mod." in result.refused, result.refused
    assert "# " not in result.refused, result.refused


def test_names_without_the_prefix_still_convert():
    result = convert_source(COMPILED_FIRST.replace('"_orig_mod." if compile else ""', '""'), "train.py")
    assert result.refused is None, result.refused
