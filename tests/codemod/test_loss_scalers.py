"""A script whose backward runs inside a loss-scaler call (timm's ``NativeScaler``, BEiT/MAE/ConvNeXt's
``NativeScalerWithGradNormCount``: ``loss_scaler(loss, optimizer, clip_grad=..., parameters=...)``
runs backward, unscale, clip and ``optimizer.step()``) has no ``X.backward()`` of its own. It trains:
it is refused, naming the call, not reported as "no training script found" (survey 21a,
adaptive_vit: an AdaptiveEffiSelecViT search script, exit 0 and "No changes; no training script found")."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

DEIT_LIKE = """\
import torch
import torch.nn as nn
from timm.utils import NativeScaler


def train_one_epoch(model, criterion, loader, optimizer, loss_scaler, max_norm=0):
    model.train()
    for samples, targets in loader:
        with torch.cuda.amp.autocast():
            loss = criterion(model(samples), targets)
        optimizer.zero_grad()
        loss_scaler(loss, optimizer, clip_grad=max_norm, parameters=model.parameters())


def main():
    model = nn.Linear(4, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_scaler = NativeScaler()
    loader = [(torch.randn(8, 4), torch.randint(0, 2, (8,)))]
    for epoch in range(2):
        train_one_epoch(model, nn.CrossEntropyLoss(), loader, optimizer, loss_scaler)


if __name__ == "__main__":
    main()
"""


def test_a_backward_inside_a_loss_scaler_call_is_refused_naming_the_call(tmp_path):
    result = convert_source(DEIT_LIKE, str(tmp_path / "train.py"))
    assert result.refused is not None
    assert "no training step found" not in result.refused, result.refused
    assert (
        "loss_scaler(loss, optimizer, clip_grad=max_norm, parameters=model.parameters()) at line 12" in result.refused
    )
    assert "NativeScaler() at line 18" in result.refused, result.refused


def test_a_local_copy_of_the_scaler_reached_through_a_module_is_named_too(tmp_path):
    source = DEIT_LIKE.replace("from timm.utils import NativeScaler\n", "import utils\n").replace(
        "loss_scaler = NativeScaler()", "loss_scaler = utils.NativeScalerWithGradNormCount()"
    )
    result = convert_source(source, str(tmp_path / "train.py"))
    assert result.refused is not None
    assert "utils.NativeScalerWithGradNormCount() at line 18" in result.refused, result.refused


def test_a_script_that_only_builds_a_scaler_and_never_calls_it_still_trains_nothing(tmp_path):
    source = "from timm.utils import NativeScaler\n\nloss_scaler = NativeScaler()\nprint(loss_scaler.state_dict())\n"
    result = convert_source(source, str(tmp_path / "train.py"))
    assert result.refused is not None and "no training step found" in result.refused, result.refused


IN_FILE_CLASS = """

class NativeScaler:
    state_dict_key = "amp_scaler"

    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer, clip_grad=None, parameters=None, create_graph=False):
        self._scaler.scale(loss).backward(create_graph=create_graph)
        if clip_grad is not None:
            self._scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
        self._scaler.step(optimizer)
        self._scaler.update()
"""


def test_a_loss_scaler_class_copied_into_the_file_is_named_not_the_model_built_elsewhere(tmp_path):
    """Before: "the model and optimizer are built in main(), which does not run the training loop"."""
    source = DEIT_LIKE.replace("from timm.utils import NativeScaler\n", IN_FILE_CLASS)
    result = convert_source(source, str(tmp_path / "train.py"))
    assert result.refused is not None
    assert "the only backward is in NativeScaler.__call__ (line 12)" in result.refused, result.refused
    assert (
        "loss_scaler(loss, optimizer, clip_grad=max_norm, parameters=model.parameters()) at line 26" in result.refused
    )


def test_a_script_with_its_own_backward_beside_a_scaler_class_is_not_refused_for_it(tmp_path):
    source = DEIT_LIKE.replace("from timm.utils import NativeScaler\n", IN_FILE_CLASS).replace(
        "        loss_scaler(loss, optimizer, clip_grad=max_norm, parameters=model.parameters())\n",
        "        loss.backward()\n        optimizer.step()\n",
    )
    result = convert_source(source, str(tmp_path / "train.py"))
    assert result.refused is None or "loss scaler" not in result.refused, result.refused
