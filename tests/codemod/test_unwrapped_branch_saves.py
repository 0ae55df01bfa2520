"""A DDP script that saves ``model.module.state_dict()`` when the model is wrapped and
``model.state_dict()`` only when it is not (``if isinstance(model, DDP): ... else: ...``, the
conditional expression, ``hasattr(model, "module")``: survey 19c's CIFAR ResNet): its checkpoints
never had ``module.`` keys, so the conversion must not tell the user to strip that prefix. A plain
``model.state_dict()`` of the wrapped model keeps the note."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

world_size = int(os.environ.get("WORLD_SIZE", 1))
if world_size > 1:
    dist.init_process_group("gloo")
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
if world_size > 1:
    model = DDP(model)
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2, shuffle=True)
for x, y in loader:
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
{save}
"""

BRANCHES = (
    'if isinstance(model, DDP):\n    torch.save(model.module.state_dict(), "m.pth")\n'
    'else:\n    torch.save(model.state_dict(), "m.pth")',
    'if not isinstance(model, (DDP, torch.nn.DataParallel)):\n    torch.save(model.state_dict(), "m.pth")\n'
    'else:\n    torch.save(model.module.state_dict(), "m.pth")',
    'torch.save(model.module.state_dict() if hasattr(model, "module") else model.state_dict(), "m.pth")',
)
PREFIX_NOTE = "whose keys start with `module.`"


def test_a_state_dict_taken_only_when_the_model_is_not_wrapped_has_no_prefix_note():
    for save in BRANCHES:
        result = convert_source(SCRIPT.format(save=save), "cifar.py")
        assert result.refused is None, result.refused
        assert "unwrap_model(model, keep_torch_compile=False).state_dict()" in result.text, result.text
        assert not any(PREFIX_NOTE in n for n in result.notes), (save, result.notes)


def test_the_wrapped_models_own_state_dict_keeps_the_prefix_note():
    result = convert_source(SCRIPT.format(save='torch.save(model.state_dict(), "m.pth")'), "cifar.py")
    assert result.refused is None, result.refused
    assert any(PREFIX_NOTE in n for n in result.notes), result.notes


def test_the_wraps_own_condition_as_the_branch_test_has_no_prefix_note():
    """Survey 23b, FiD-T5: ``if is_distributed: model = DDP(...)`` then ``sd =
    model.module.state_dict() if is_distributed else model.state_dict()``: the else branch reads
    the model only where it was never wrapped, so the checkpoint never had ``module.`` keys."""
    saves = (
        'torch.save(model.module.state_dict() if world_size > 1 else model.state_dict(), "m.pth")',
        'if world_size > 1:\n    torch.save(model.module.state_dict(), "m.pth")\n'
        'else:\n    torch.save(model.state_dict(), "m.pth")',
        'if not world_size > 1:\n    torch.save(model.state_dict(), "m.pth")',
    )
    for save in saves:
        result = convert_source(SCRIPT.format(save=save), "cifar.py")
        assert result.refused is None, result.refused
        assert not any(PREFIX_NOTE in n for n in result.notes), (save, result.notes)


def test_another_condition_than_the_wraps_keeps_the_prefix_note():
    save = 'torch.save(model.module.state_dict() if world_size > 2 else model.state_dict(), "m.pth")'
    result = convert_source(SCRIPT.format(save=save), "cifar.py")
    assert result.refused is None, result.refused
    assert any(PREFIX_NOTE in n for n in result.notes), result.notes
