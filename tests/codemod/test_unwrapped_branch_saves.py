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


def test_a_model_compiled_after_its_ddp_wrap_is_said_to_have_saved_orig_mod_module_keys():
    """clip_ddp (survey 23a): ``model = DDP(model)`` then ``model = torch.compile(model)``: the
    original's ``model.state_dict()`` keys start with ``_orig_mod.module.`` (``_orig_mod.`` on one
    process), not ``module.``; the note says what the original wrote."""
    wrap = "if world_size > 1:\n    model = DDP(model)\n"
    for compiled, prefix in (
        (wrap + "model = torch.compile(model)\n", "`_orig_mod.module.`"),
        ("model = torch.compile(model)\n" + wrap, "`module._orig_mod.`"),  # DDP of the compiled model
    ):
        text = SCRIPT.format(save='torch.save(model.state_dict(), "m.pth")').replace(wrap, compiled)
        result = convert_source(text, "cifar.py")
        assert result.refused is None, result.refused
        notes = [n for n in result.notes if "the original saved" in n]
        assert len(notes) == 1, result.notes
        assert prefix in notes[0] and "whose keys start with `module.`" not in notes[0], notes


def test_an_isinstance_test_of_the_prepared_model_against_ddp_is_said_to_be_always_false():
    """gpt2_chakra (survey 23f): ``if isinstance(model, DDP):`` stays after prepare(); with the
    plugin the prepared model is the compiled wrapper (around the DDP wrap on several processes),
    never a DDP, so the test is false on every process (measured: OptimizedModule on 1 and 2 gloo
    processes). ``hasattr(model, "module")`` is true on several processes and is not named."""
    for save, test in zip(BRANCHES[:2], ("isinstance(model, DDP)", "isinstance(model, (DDP, torch.nn.DataParallel))")):
        result = convert_source(SCRIPT.format(save=save), "cifar.py")
        note = next((n for n in result.notes if n.startswith(f"{test} at line 20 is always false")), None)
        assert note is not None, (save, result.notes)
        assert "never a DDP" in note, note
    replaced = 'raw = model.module if isinstance(model, DDP) else model\ntorch.save(raw.state_dict(), "m.pth")'
    for save in (BRANCHES[2], replaced):  # the second: the conversion replaces the whole expression
        result = convert_source(SCRIPT.format(save=save), "cifar.py")
        assert not any("is always false" in n for n in result.notes), result.notes
