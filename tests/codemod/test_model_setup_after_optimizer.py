"""prepare() comes after the model's own set-up calls that follow the optimizer (airbench's
``model.reset()`` / ``model.init_whiten(batch)``): DDP copies process 0's weights only when it
wraps the model, so weights drawn after that differ between processes."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def reset(self):
        self.fc.reset_parameters()

    def forward(self, x):
        return self.fc(x)


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
print(model)
model.reset()
for step in range(5):
    loss = model(torch.randn(2, 4)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_prepare_follows_a_reset_of_the_model_after_the_optimizer():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    assert "model.reset()\ndynamo_plugin = " in result.text
    assert "model, optimizer = accelerator.prepare(model, optimizer)\nfor step" in result.text
    assert any("prepare() follows model.reset() (line 20)" in note for note in result.notes), result.notes


def test_a_submodule_method_counts_too():
    result = convert_source(SCRIPT.replace("model.reset()", "model.fc.reset_parameters()"), "train.py")
    assert "model.fc.reset_parameters()\ndynamo_plugin = " in result.text


def test_train_and_eval_are_not_set_up_calls():
    result = convert_source(SCRIPT.replace("model.reset()", "model.train()"), "train.py")
    assert "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\ndynamo_plugin" in result.text


def test_refused_when_something_in_between_holds_a_prepared_object():
    refused = convert_source(SCRIPT.replace("print(model)", "optimizers = [optimizer]"), "train.py").refused
    assert refused is not None and "model.reset() at line 20 changes the model" in refused, refused
