"""An Accelerate script whose Accelerator is built elsewhere (codemod/outside_accelerator.py).

Survey 19e: a pAUC verifier's ``train_pAUC(config, raw_questions, accelerator, ...)`` prepares,
accumulates and gathers through the accelerator its caller hands in. With no ``Accelerator(...)``
in the file it was read as a plain script: a second Accelerator made after its own prepare(), the
model prepared twice, and ``accelerator.backward(loss)`` rewritten into
``accelerator.backward(accelerator, loss)`` (a TypeError at the first step). A latent-diffusion
``train_loop`` whose accelerator comes from ``setup_accelerator(config)`` in a module not here was
refused for a handed-in optimizer that it already prepares. Both are refused now, naming the
prepare() line and where the accelerator comes from."""

from regcomp_lint.codemod import convert_source

HANDED_IN = """\
import torch
from accelerate import Accelerator


def train(loader, accelerator, epochs=2):
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(epochs):
        for x, y in loader:
            with accelerator.accumulate(model):
                loss = torch.nn.functional.mse_loss(model(x), y)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
"""

FROM_A_HELPER = """\
import torch
from utils.training import setup_accelerator


def train_loop(config, model, loader):
    accelerator, repo = setup_accelerator(config)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_handed_in_accelerator_is_refused_not_doubled():
    result = convert_source(HANDED_IN, "t.py")
    assert result.refused is not None, result.text
    assert "accelerator.prepare(...) at line 8" in result.refused, result.refused
    assert "parameter of train() (line 5)" in result.refused, result.refused
    assert "accelerate launch --dynamo_backend inductor" in result.refused, result.refused


def test_an_accelerator_from_a_helper_module_is_named():
    result = convert_source(FROM_A_HELPER, "t.py")
    assert result.refused is not None, result.text
    assert "accelerator.prepare(...) at line 8" in result.refused, result.refused
    assert "comes from setup_accelerator(config) at line 6" in result.refused, result.refused


def test_a_prepare_method_of_something_else_is_not_an_accelerator():
    text = FROM_A_HELPER.replace("from utils.training import setup_accelerator\n", "").replace(
        "    accelerator, repo = setup_accelerator(config)\n", ""
    )
    text = text.replace("accelerator.prepare(model, optimizer, loader)", "pipeline.prepare(model, optimizer, loader)")
    text = text.replace("accelerator.backward(loss)", "loss.backward()")
    text = text.replace(
        "model, optimizer, loader = pipeline", "pipeline = None\n    model, optimizer, loader = pipeline"
    )
    result = convert_source(text, "t.py")
    assert result.refused is None or "does not build" not in result.refused, result.refused


def test_an_accelerator_built_in_the_file_still_gets_its_plugin():
    text = HANDED_IN + "\n\nif __name__ == '__main__':\n    train([], Accelerator())\n"
    result = convert_source(text, "t.py")
    assert result.refused is None, result.refused
    assert "TorchDynamoPlugin(" in result.text, result.text
