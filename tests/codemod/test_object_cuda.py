"""``batch.cuda()`` as a statement on what the loader yields (survey 20e, a toki pona
transformer's train.py: ante's ``Batch`` class has ``cuda()``, which moves its tensors in place
and returns itself, and no ``to()``). A tensor's ``.cuda()`` returns a copy, so a discarded call
only does something on such an object of the script's own; the conversion rewrote it to
``batch.to(accelerator.device)``, which raised ``AttributeError: 'Batch' object has no attribute
'to'`` at the first step (replica, 1 process). It is kept now: Accelerate makes each process's
GPU the current one, so ``.cuda()`` lands where ``accelerator.device`` is."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader


class Batch:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def cuda(self):
        self.x, self.y = self.x.cuda(), self.y.cuda()
        return self


def collate(rows):
    return Batch(torch.stack([r[0] for r in rows]), torch.stack([r[1] for r in rows]))


def main():
    data = [(torch.randn(8), torch.randn(1)) for _ in range(64)]
    loader = DataLoader(data, batch_size=8, collate_fn=collate)
    model = nn.Linear(8, 1).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for step, batch in enumerate(loader):
            batch.cuda()
            loss = nn.functional.mse_loss(model(batch.x), batch.y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_a_discarded_cuda_call_on_a_batch_object_is_kept():
    result = convert_source(SCRIPT, "t.py")
    assert result.refused is None, result.refused
    assert "            batch.cuda()\n" in result.text, result.text
    assert "batch.to(" not in result.text, result.text
    assert any("batch.cuda() at line 26" in note and "kept" in note for note in result.notes), result.notes


def test_the_models_cuda_call_still_goes_to_the_accelerators_device():
    result = convert_source(SCRIPT, "t.py")
    assert "nn.Linear(8, 1).to(accelerator.device)" in result.text, result.text
