"""A re-initialisation reached through calls the training code makes after prepare(): a helper
of the file that hands the model on (``reset(model)`` calling ``init_params(net)`` or
``net.apply(init)``), a method of the file's model class (``model.init_weights()`` drawing with
``nn.init``), a trainer method that calls one of these. DDP copies process 0's weights only when
prepare() wraps the model, so each process would train from its own draw; the call is followed
by a copy of process 0's values, like a direct ``model.apply(init)``. Calls are followed a few
levels deep; recursion ends; a called function that trains is not synced after it returns."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


HELPERS
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 2)

    def init_weights(self):
        for p in self.parameters():
            nn.init.normal_(p, std=0.5)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def train():
    model = Net()
    x = torch.randn(64, 8)
    loader = DataLoader(TensorDataset(x, (x.sum(1) > 0).long()), batch_size=8, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for run in range(2):
        CALL
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    train()
"""


def _converted(helpers: str, call: str):
    result = convert_source(SCRIPT.replace("HELPERS\n", helpers).replace("CALL", call), "train.py")
    assert result.refused is None, result.refused
    return result


def _synced_after(call: str) -> str:
    return (
        f"        {call}\n"
        "        if accelerator.distributed_type not in (DistributedType.FSDP, DistributedType.DEEPSPEED):\n"
        "            for param in accelerator.unwrap_model(model, keep_torch_compile=False).parameters():\n"
        "                param.data.copy_(broadcast(param.data))\n"
        "        for xb, yb in loader:\n"
    )


def test_a_method_of_the_files_model_class_that_draws_with_nn_init():
    result = _converted("", "model.init_weights()")
    assert _synced_after("accelerator.unwrap_model(model, keep_torch_compile=False).init_weights()") in result.text, (
        result.text
    )
    assert any("model.init_weights() (line 26)" in note for note in result.notes), result.notes


def test_a_helper_that_hands_the_model_to_another_helper():
    helpers = (
        "def init_params(net):\n    for p in net.parameters():\n        nn.init.uniform_(p, -0.1, 0.1)\n\n\n"
        "def reset(net):\n    init_params(net)\n\n\n"
    )
    assert _synced_after("reset(model)") in _converted(helpers, "reset(model)").text


def test_a_helper_that_applies_an_init_function():
    helpers = (
        "def init(m):\n    if isinstance(m, nn.Linear):\n        nn.init.xavier_uniform_(m.weight)\n\n\n"
        "def reset(net):\n    net.apply(init)\n\n\n"
    )
    assert _synced_after("reset(model)") in _converted(helpers, "reset(model)").text


def test_a_helper_that_calls_the_model_classes_init_method():
    helpers = "def reset(net):\n    net.init_weights()\n\n\n"
    result = _converted(helpers, "reset(model)")
    assert "    accelerator.unwrap_model(net, keep_torch_compile=False).init_weights()\n" in result.text, result.text
    assert _synced_after("reset(model, accelerator=accelerator)") in result.text, result.text


def test_a_parameter_loop_that_calls_an_init_helper():
    helpers = "def draw(p):\n    nn.init.normal_(p, std=0.02)\n\n\n"
    result = _converted(helpers, "for p in model.parameters():\n            draw(p)")
    assert (
        "            draw(p)\n        if accelerator.distributed_type not in (DistributedType.FSDP," in result.text
    ), result.text


def test_mutual_recursion_ends_and_a_chain_too_deep_is_not_followed():
    loop = "def a(net, n):\n    if n:\n        b(net, n - 1)\n\n\ndef b(net, n):\n    a(net, n)\n\n\n"
    result = _converted(loop, "a(model, 3)")
    assert "broadcast" not in result.text, result.text
    chain = "".join(f"def h{i}(net):\n    h{i + 1}(net)\n\n\n" for i in range(8))
    chain += "def h8(net):\n    for p in net.parameters():\n        nn.init.normal_(p)\n\n\n"
    assert "broadcast" not in _converted(chain, "h0(model)").text
    near = chain.replace("def h0(net):\n    h1(net)", "def h0(net):\n    h6(net)")
    assert _synced_after("h0(model)") in _converted(near, "h0(model)").text


def test_what_the_called_functions_do_not_draw_gets_no_sync():
    helpers = "def show(net):\n    describe(net)\n\n\ndef describe(net):\n    print(sum(p.numel() for p in net.parameters()))\n\n\n"
    assert "broadcast" not in _converted(helpers, "show(model)").text
    constant = "def zero(net):\n    for p in net.parameters():\n        nn.init.zeros_(p)\n\n\ndef reset(net):\n    zero(net)\n\n\n"
    assert "broadcast" not in _converted(constant, "reset(model)").text


def test_a_method_called_for_its_value_is_not_a_reinit():
    """``samples = model.sample()``-style methods draw noise with ``normal_`` and return it: they
    are called for what they return, not to re-draw the weights."""
    sampler = SCRIPT.replace(
        "    def forward(self, x):",
        "    def noise(self):\n        z = torch.empty(4, 8)\n        z.normal_()\n        return z\n\n    def forward(self, x):",
    )
    result = convert_source(sampler.replace("HELPERS\n", "").replace("CALL", "model.noise()"), "train.py")
    assert "broadcast" not in result.text, result.text


def test_a_seeded_reinit_is_synced_too():
    """A seed right before the draw makes it alike on every process only while every process's
    random stream is alike up to there; the copy from process 0 holds either way and costs one
    broadcast per re-initialisation."""
    result = _converted("", "torch.manual_seed(0)\n        model.init_weights()")
    assert _synced_after("accelerator.unwrap_model(model, keep_torch_compile=False).init_weights()") in result.text, (
        result.text
    )


def test_once_before_the_loop_prepare_moves_past_a_two_level_helper():
    helpers = (
        "def init_params(net):\n    for p in net.parameters():\n        nn.init.uniform_(p, -0.1, 0.1)\n\n\n"
        "def reset(net):\n    init_params(net)\n\n\n"
    )
    script = SCRIPT.replace("HELPERS\n", helpers).replace(
        "    for run in range(2):\n        CALL\n", "    reset(model)\n    if True:\n"
    )
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert "broadcast" not in result.text, result.text
    assert result.text.index("    reset(model)\n") < result.text.index("accelerator.prepare("), result.text


def test_a_trainer_method_that_resets_through_a_helper():
    trainer = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def init_params(net):
    for p in net.parameters():
        nn.init.uniform_(p, -0.1, 0.1)


class Instructor:
    def __init__(self):
        self.model = nn.Linear(8, 2)
        x = torch.randn(64, 8)
        self.loader = DataLoader(TensorDataset(x, (x.sum(1) > 0).long()), batch_size=8, shuffle=True)

    def _reset(self):
        init_params(self.model)

    def run(self, repeats=2):
        optimizer = torch.optim.Adam(self.model.parameters(), lr=0.01)
        for i in range(repeats):
            self._reset()
            for x, y in self.loader:
                optimizer.zero_grad()
                loss = nn.functional.cross_entropy(self.model(x), y)
                loss.backward()
                optimizer.step()


if __name__ == "__main__":
    Instructor().run()
"""
    result = convert_source(trainer, "train.py")
    assert result.refused is None, result.refused
    assert (
        "            self._reset()\n"
        "            if self.accelerator.distributed_type not in (DistributedType.FSDP, DistributedType.DEEPSPEED):\n"
        "                for param in self.accelerator.unwrap_model(self.model, keep_torch_compile=False).parameters():\n"
        "                    param.data.copy_(broadcast(param.data))\n"
    ) in result.text, result.text


def test_a_rebinding_to_the_helpers_own_argument_in_the_repeat_loop_is_synced():
    """``model = reset(model)`` in the repeat loop, ``reset`` returning the model it re-initialised:
    the same object, not a model built anew in each pass (refused so before: "model is built anew
    in each pass of the loop"); synced like ``reset(model)``."""
    helpers = (
        "def reset(net):\n    for p in net.parameters():\n        nn.init.uniform_(p, -0.1, 0.1)\n    return net\n\n\n"
    )
    result = _converted(helpers, "model = reset(model)")
    assert _synced_after("model = reset(model)") in result.text, result.text
    assert result.text.index("accelerator.prepare(") < result.text.index("for run in range(2)"), result.text


def test_the_model_rebound_to_itself_is_still_the_prepared_model_afterwards():
    """What the script saves after the rebinding is the prepared model, unwrapped for saving as
    before it (the rebinding is no new, unprepared model from that line on)."""
    helpers = (
        "def reset(net):\n    for p in net.parameters():\n        nn.init.uniform_(p, -0.1, 0.1)\n    return net\n\n\n"
    )
    result = _converted(helpers, "model = reset(model)\n        torch.save(model.state_dict(), 'm.pt')")
    assert "accelerator.unwrap_model(model, keep_torch_compile=False).state_dict()" in result.text, result.text


NETWORKS = """\
import functools

from torch.nn import init


def weights_init_kaiming(m, scale=1):
    classname = m.__class__.__name__
    if classname.find('Linear') != -1:
        init.kaiming_normal_(m.weight.data, a=0, mode='fan_in')
        m.weight.data *= scale


def weights_init_constant(m):
    if hasattr(m, "bias") and m.bias is not None:
        init.zeros_(m.bias)


def init_weights(net, init_type='kaiming', scale=1):
    if init_type == 'kaiming':
        net.apply(functools.partial(weights_init_kaiming, scale=scale))
    else:
        raise NotImplementedError(init_type)


def zero_biases(net):
    net.apply(weights_init_constant)
"""


def _converted_with_module(tmp_path, call: str):
    (tmp_path / "networks.py").write_text(NETWORKS)
    text = SCRIPT.replace("import torch\n", "import torch\nfrom networks import init_weights, zero_biases\n", 1)
    result = convert_source(text.replace("HELPERS\n", "").replace("CALL", call), str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    return result


def test_a_helper_of_a_project_module_that_applies_a_partial_of_an_init_function(tmp_path):
    """Survey 22c's ESRGAN trainer calls BasicSR's ``init_weights(netD, init_type='kaiming')``
    from models/networks.py (``net.apply(functools.partial(weights_init_kaiming, scale=scale))``)
    after prepare(): not followed into the other module, it got no copy, and on 2 processes the
    replicas trained apart (replica, accelerate launch: netD's weight sum 4.287665 on rank 0,
    -2.180243 on rank 1)."""
    result = _converted_with_module(tmp_path, "init_weights(model, init_type='kaiming', scale=1)")
    assert _synced_after("init_weights(model, init_type='kaiming', scale=1)") in result.text, result.text


def test_a_helper_of_a_project_module_that_writes_constants_gets_no_sync(tmp_path):
    assert "broadcast" not in _converted_with_module(tmp_path, "zero_biases(model)").text


def test_an_initialiser_of_a_project_module_that_is_not_beside_the_script_is_taken_by_its_name():
    """Survey 22c's ESRGAN trainer as published: ``from models.networks import init_weights``
    with no models/ beside it. The copy from process 0 is harmless where the call draws nothing
    (the processes already agree), so a project function named as an initialiser gets it, and the
    note says it was taken by its name."""
    text = SCRIPT.replace("import torch\n", "import torch\nfrom models.networks import init_weights, describe\n", 1)
    result = convert_source(text.replace("HELPERS\n", "").replace("CALL", "init_weights(model, 'kaiming')"), "train.py")
    assert result.refused is None, result.refused
    assert _synced_after("init_weights(model, 'kaiming')") in result.text, result.text
    assert any("init_weights() is read by its name" in note for note in result.notes), result.notes
    other = convert_source(text.replace("HELPERS\n", "").replace("CALL", "describe(model)"), "train.py")
    assert "broadcast" not in other.text, other.text
