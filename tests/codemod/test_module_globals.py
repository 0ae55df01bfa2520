"""Objects a helper binds to module globals (``global optimizer`` in ``prepare()``) that the
training function reads through its own ``global`` declarations: NNI's CIFAR trainer (survey23g)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """
import torch
from torch.utils.data import DataLoader, TensorDataset

from sam import SAM

loader = None
net = None
optimizer = None


def prepare():
    global loader
    global net
    global optimizer
    global scheduler
    loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 2)), batch_size=4)
    net = torch.nn.Linear(4, 2)
    optimizer = SAM(net.parameters(), torch.optim.SGD, lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, 1, 2)


def train(epoch):
    global loader, net, optimizer, scheduler
    iters = len(loader)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(net(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.first_step(zero_grad=True)
        torch.nn.functional.mse_loss(net(x), y).backward()
        optimizer.second_step()
        scheduler.step(epoch + i / iters)


if __name__ == "__main__":
    prepare()
    for epoch in range(3):
        train(epoch)
"""


def test_objects_a_helper_binds_to_globals_are_prepared_there_with_a_global_accelerator():
    """nni_sam: SAM built in prepare() under `global optimizer`, zeroed in train() through its own
    `global optimizer`. The bindings kept prepare()'s assignment local to prepare(), so train()'s
    optimizer was the module's `optimizer = None` and the refusal said SAM "is fed model parameters
    but is not used as an optimizer". Now prepare() prepares them (its assignments rebind the
    globals) and makes the accelerator a global; train() reaches SAM's own methods through the
    wrapper and backpropagates through the accelerator."""
    result = convert_source(SCRIPT, "main.py")
    assert result.refused is None, result.refused
    text = result.text
    assert "    global accelerator\n" in text
    prepare_def, train_def = text.index("def prepare():"), text.index("def train(epoch):")
    made = text.index("    accelerator = Accelerator(")
    assert prepare_def < text.index("    global accelerator\n") < made < train_def
    assert "net, optimizer, loader = accelerator.prepare(" in text[made:train_def], text
    assert "optimizer.optimizer.first_step(zero_grad=True)" in text
    assert "optimizer.optimizer.second_step()" in text
    assert text.count("accelerator.backward(") == 2
    assert "def train(epoch):\n" in text  # no accelerator parameter: it reads the global


def test_a_model_left_local_to_the_helper_is_refused_naming_the_globals():
    """The optimizer a global, the model it trains a local of prepare(): train() cannot read the
    prepared model the way it reads the optimizer; refused with the true reason."""
    local_net = SCRIPT.replace("    global net\n", "", 1).replace(
        "global loader, net, optimizer", "global loader, optimizer"
    )
    local_net = local_net.replace("net(x)", "model(x)")
    result = convert_source(local_net, "main.py")
    assert result.refused is not None
    assert "built in prepare(), which does not run the training loop" in result.refused, result.refused
    assert "through module globals" in result.refused, result.refused


def test_a_local_of_the_same_name_is_not_the_global():
    """Without the `global` declaration in prepare(), its optimizer is its own local: the module's
    None is what train() reads, as before."""
    local = SCRIPT.replace("    global optimizer\n", "", 1)
    result = convert_source(local, "main.py")
    assert result.refused is not None
    assert "not used as an optimizer" in result.refused, result.refused


def test_module_level_code_that_needs_the_global_accelerator_is_refused():
    """Module-level code may run before the helper made the accelerator (NameError): a backward
    there is refused as before, not rewritten to read the global."""
    script = SCRIPT.replace(
        "    prepare()\n",
        "    prepare()\n    torch.nn.functional.mse_loss(net(torch.randn(2, 4)), torch.randn(2, 2)).backward()\n",
    )
    result = convert_source(script, "main.py")
    assert result.refused is not None, result.text
