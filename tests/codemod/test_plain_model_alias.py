"""A plain name for the model taken after its optimizer and before the script compiles and wraps
it (survey 24c, a PEFT LoRA fine-tune: ``uncompiled_model = model`` then ``model =
torch.compile(model)`` and ``model = DDP(model)``; eval, ``generate`` and ``save_pretrained`` go
through ``uncompiled_model``). In the original that name is the plain module; prepare() placed
before it made it the prepared model: on 2 processes a DDP wrapper, which has no
``save_pretrained`` (AttributeError, measured on a gloo replica under torchrun and accelerate
launch), and its evaluation compiled. prepare() now follows the alias."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

use_compile = True
ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    dist.init_process_group(backend="gloo")
model = nn.Linear(4, 1)
loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
uncompiled_model = model
if use_compile:
    model = torch.compile(model)
if ddp:
    model = DDP(model)
for (x,) in loader:
    loss = model(x).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.save(uncompiled_model.state_dict(), "model.pt")
"""


def test_prepare_follows_the_plain_alias():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert "uncompiled_model = model\n" in text, text
    assert text.index("uncompiled_model = model") < text.index("accelerator.prepare("), text
    assert any("uncompiled_model = model (line 15)" in note for note in result.notes), result.notes


def test_an_alias_the_original_does_not_wrap_after_leaves_prepare_where_it_was():
    script = SCRIPT.replace("if use_compile:\n    model = torch.compile(model)\nif ddp:\n    model = DDP(model)\n", "")
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert text.index("accelerator.prepare(") < text.index("uncompiled_model = model"), text


FLAGGED = SCRIPT.replace(
    "uncompiled_model = model\nif use_compile:\n    model = torch.compile(model)\nif ddp:\n    model = DDP(model)\n",
    '# compile the model\nif use_compile:\n    print("compiling")\n    unoptimized_model = model\n    model = torch.compile(model)\n'
    "# wrap it\nif ddp:\n    # keep the buffer out of DDP's broadcast\n"
    '    model._ddp_params_and_buffers_to_ignore = {"freqs"}\n    model = DDP(model)\n',
).replace('torch.save(uncompiled_model.state_dict(), "model.pt")\n', "")


def test_an_alias_under_the_compile_flag_is_passed_like_one_of_its_own():
    """baby_pretrain (survey 24c): the optimizer exists before `if compile: unoptimized_model =
    model; model = torch.compile(model)` and `if ddp:` tells DDP what to ignore; prepare() must
    follow that setting, and the compile block in between only names the plain module (the
    compile is removed): refused before, quoting the whole `if ddp:` block."""
    result = convert_source(FLAGGED, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert "    unoptimized_model = model\n" in text, text
    assert text.index("unoptimized_model = model") < text.index("accelerator.prepare("), text
    assert "torch.compile(" not in text and "DDP(" not in text, text
    assert any("if use_compile: ... (line 16)" in note for note in result.notes), result.notes


def test_a_compile_under_a_flag_without_an_alias_keeps_nothing():
    script = FLAGGED.replace('    print("compiling")\n    unoptimized_model = model\n', "")
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert result.text.index("model._ddp_params_and_buffers_to_ignore") < result.text.index("accelerator.prepare("), (
        result.text
    )


def test_an_alias_under_the_compile_flag_with_nothing_after_it_is_still_passed():
    """Without the `if ddp:` setting, prepare() went before the compile block and made
    `unoptimized_model` the prepared model (a compile or DDP wrapper) where the original's is the
    plain module."""
    script = FLAGGED.replace('    model._ddp_params_and_buffers_to_ignore = {"freqs"}\n', "")
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert result.text.index("unoptimized_model = model") < result.text.index("accelerator.prepare("), result.text


def test_a_compile_block_that_keeps_a_prepared_object_is_refused_naming_its_header():
    script = FLAGGED.replace(
        "    model = torch.compile(model)\n", "    model = torch.compile(model)\n    opts = [optimizer]\n"
    )
    refused = convert_source(script, "train.py").refused
    assert refused is not None and "line 16 already uses them" in refused, refused
    assert "if ddp: ... at line 22 changes the model" in refused, refused
    assert "#" not in refused and "DDP(model)" not in refused, refused


def test_a_compile_block_that_takes_the_plain_name_and_keeps_a_prepared_object_is_refused_naming_it():
    script = FLAGGED.replace('    model._ddp_params_and_buffers_to_ignore = {"freqs"}\n', "").replace(
        "    model = torch.compile(model)\n", "    model = torch.compile(model)\n    opts = [optimizer]\n"
    )
    refused = convert_source(script, "train.py").refused
    assert refused is not None and "if use_compile: ... at line 16 takes a plain name for the model" in refused, refused
