"""A DataLoader the file builds and hands to the training function as a parameter, iterated
there directly (survey 18c: a seq2seq script's ``trainIters(encoder, decoder, dataloader, ...)``
called from ``__main__``): prepared in that function with the model it is handed, so each process
takes its share (it was left whole, every process iterating all of its batches)."""

from regcomp_lint.codemod import convert_source

HANDED = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def train_iters(model, loader, n_iters):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(n_iters):
        for x, y in {iterated}:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()


if __name__ == "__main__":
    model = torch.nn.Linear(4, 1)
    loader = {built}
    train_iters(model, loader, 2)
"""

DATALOADER = "DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2, shuffle=True)"


def test_a_dataloader_handed_in_by_a_caller_of_this_file_is_prepared_with_the_model():
    for iterated in ("loader", "enumerate(loader)"):
        source = HANDED.format(iterated=iterated, built=DATALOADER)
        if iterated.startswith("enumerate"):
            source = source.replace("for x, y in enumerate(loader)", "for i, (x, y) in enumerate(loader)")
        result = convert_source(source, "seq2seq.py")
        assert result.refused is None, result.refused
        assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text, result.text
        assert "prepared: model, optimizer, loader" in result.notes, result.notes
        assert not any("what its callers hand in is not prepared here" in n for n in result.notes), result.notes


def test_a_handed_in_loader_that_is_no_dataloader_or_already_sharded_is_left_alone():
    sharded = (
        "DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2, "
        "sampler=torch.utils.data.distributed.DistributedSampler(TensorDataset(torch.randn(8, 4), torch.randn(8, 1))))"
    )
    for built in ("[(torch.randn(2, 4), torch.randn(2, 1))] * 4", sharded):
        result = convert_source(HANDED.format(iterated="loader", built=built), "seq2seq.py")
        assert result.refused is None, result.refused
        assert "prepare(model, optimizer)" in result.text, result.text
        assert "prepared: model, optimizer" in result.notes, result.notes
