"""codemod/method_loss.py: a loss from one of the model's own methods trains through a module
whose forward() calls it, prepared in the model's place; the script's model stays plain."""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

AGENT = """import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.critic = nn.Linear(4, 1)
        self.actor = nn.Linear(4, 2)

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        probs = Categorical(logits=self.actor(x))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


agent = Agent()
optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-4)
for update in range(3):
    obs = torch.randn(16, 4)
    with torch.no_grad():
        actions, logprobs, _, values = agent.get_action_and_value(obs)
    for epoch in range(2):
        _, newlogprob, entropy, newvalue = agent.get_action_and_value(obs, actions.long())
        loss = -(newlogprob - logprobs).exp().mean() + ((newvalue - values) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
torch.save(agent.state_dict(), "agent.pt")
"""

TRAINER = """import torch
import torch.nn.functional as F


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 8)
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.body(x))

    def training_step(self, batch):
        x, y = batch
        return F.cross_entropy(self(x), y)


class Trainer:
    def __init__(self, model, optimizer, loader):
        self.model = model
        self.optimizer = optimizer
        self.loader = loader

    def train(self):
        for batch in self.loader:
            loss = self.model.training_step(batch)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


def main():
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4
    )
    Trainer(model, optimizer, loader).train()
"""


def convert(text: str):
    return convert_source(text, "train.py", ConvertOptions())


def test_one_method_of_the_model_is_prepared_through_a_wrapper_module():
    result = convert(AGENT)
    assert result.refused is None, result.refused
    out = result.text
    assert "class _GetActionAndValue(torch.nn.Module):\n" in out
    assert "        return self.model.get_action_and_value(*args, **kwargs)\n" in out
    assert "get_action_and_value, optimizer = accelerator.prepare(_GetActionAndValue(agent), optimizer)\n" in out
    assert "        _, newlogprob, entropy, newvalue = get_action_and_value(obs, actions.long())\n" in out
    # the script's own model stays the plain module: its saves keep their keys
    assert "agent = accelerator.prepare" not in out and ", agent" not in out.split("prepare(", 1)[1].split(")")[0]
    assert "accelerator.unwrap_model(agent, keep_torch_compile=False).state_dict()" in out  # agent itself
    assert any(
        "computes the loss: it runs through get_action_and_value = _GetActionAndValue(agent)" in n for n in result.notes
    )


def test_the_wrapper_class_is_defined_before_the_scripts_own_classes():
    out = convert(AGENT).text
    assert out.index("class _GetActionAndValue") < out.index("class Agent")
    assert "        return self.model.get_action_and_value(*args, **kwargs)\n\n\nclass Agent(nn.Module):" in out


def test_a_rollout_call_without_grad_stays_on_the_plain_model():
    """cleanrl's PPO samples its actions under no_grad: eager, as the original did (through the
    compiled wrapper a sampled action could differ); no gradient, so no DDP sync is missed."""
    out = convert(AGENT).text
    assert (
        "        actions, logprobs, _, values = accelerator.unwrap_model(agent, keep_torch_compile=False).get_action_and_value(obs)\n"
        in out
    )


def test_a_trainers_training_step_runs_through_an_attribute_of_the_trainer():
    result = convert(TRAINER)
    assert result.refused is None, result.refused
    out = result.text
    assert "        self.training_step, self.optimizer, self.loader = self.accelerator.prepare(" in out
    assert "            _TrainingStep(self.model), self.optimizer, self.loader\n" in out
    assert "            loss = self.training_step(batch)\n" in out


def test_the_wrapper_name_does_not_clash_with_the_trainers_own():
    text = TRAINER.replace(
        "        self.loader = loader\n", "        self.loader = loader\n        self.training_step = 0\n"
    )
    out = convert(text).text
    assert "            loss = self.training_step_2(batch)\n" in out
    assert "        self.training_step = 0\n" in out


def test_a_method_that_leaves_a_submodule_out_asks_ddp_to_find_unused_parameters():
    text = AGENT.replace("probs.entropy(), self.critic(x)", "probs.entropy(), None").replace(
        " + ((newvalue - values) ** 2).mean()", ""
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)]" in result.text
    assert any("Agent.get_action_and_value (the loss) does not use self.critic" in n for n in result.notes)


def test_a_method_of_a_model_with_repeated_blocks_leaves_regional_compilation_off():
    """compile_regions copies the modules on the way to the blocks, the model among them: the
    script's agent.train()/eval() would no longer reach the copy's training flag (measured)."""
    text = AGENT.replace(
        "        self.actor = nn.Linear(4, 2)\n",
        "        self.actor = nn.Linear(4, 2)\n        self.blocks = nn.ModuleList([Block() for _ in range(4)])\n",
    ).replace("class Agent(nn.Module):", BLOCK + "\n\nclass Agent(nn.Module):")
    text = text.replace("logits=self.actor(x)", "logits=self.actor(self.blocks[0](x))")
    through_forward = text.replace("def get_action_and_value(", "def forward(").replace(
        "agent.get_action_and_value(", "agent("
    )
    assert "use_regional_compilation=True" in convert(through_forward).text
    result = convert(text)
    assert result.refused is None, result.refused
    assert "use_regional_compilation" not in result.text
    assert any("regional compilation is left off: it copies agent inside _GetActionAndValue" in n for n in result.notes)


BLOCK = """class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return x + self.fc(x)
"""


def test_several_methods_in_one_loss_stay_refused():
    text = AGENT.replace(
        "_, newlogprob, entropy, newvalue = agent.get_action_and_value(obs, actions.long())",
        "_, newlogprob, entropy, _ = agent.get_action_and_value(obs, actions.long())\n"
        "        newvalue = agent.get_value(obs)",
    )
    result = convert(text)
    assert result.refused is not None
    assert "and the loss comes from several of its methods (agent.get_action_and_value (line 29), " in result.refused
    assert "agent.get_value (line 30)" in result.refused


def test_the_models_forward_beside_its_method_stays_refused():
    text = TRAINER.replace(
        "loss = self.model.training_step(batch)", "loss = self.model.training_step(batch) + self.model(batch[0]).sum()"
    )
    result = convert(text)
    assert result.refused is not None
    assert "the model's forward() feeds the same loss as self.model.training_step (line 27)" in result.refused


HELPER = """import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def training_step(self, x):
        return self.fc(x).pow(2).mean()


def compute_loss(model, x):
    return model.training_step(x)


def main():
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = compute_loss(model, torch.randn(8, 4))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_method_whose_result_a_helper_returns_to_the_loss_is_refused():
    """It converted to ``accelerator.unwrap_model(model).training_step(x)``: the loss bypassed
    DDP's gradient sync without a word. The wrapper made in main() is not in reach of the helper."""
    result = convert(HELPER)
    assert result.refused is not None
    assert "model.training_step(...) at line 14 computes the loss with the model's own method" in result.refused
    assert "it is called in compute_loss() (line 14), where a wrapper prepared in main() is not in reach" in (
        result.refused
    )
