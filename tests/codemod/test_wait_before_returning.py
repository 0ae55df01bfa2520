"""A checkpoint saved in one function and loaded back by another after it returned
(codemod/checkpoint_writes.wait_before_returning).

Survey 23e: a Kaggle-style ``train_one_seed(seed, ...)`` saves ``best_model.pt`` per seed and
returns its folder; the caller's ensemble ``load_local_model(d)`` then loads each one. Converted,
the save runs on the main process only and the other processes returned at once: a replica on 2
processes failed with FileNotFoundError on rank 1 (3 of 3 runs under load). A barrier at the end
of the training function fixes it; the file's golden case is fixtures/fix/save_read_after_return."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch


def load_model(path):
    model = torch.nn.Linear(4, 1)
    model.load_state_dict(torch.load(path))
    return model


def train(path, resume=None):
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if resume:
        model = load_model(resume)
    for x, y in [(torch.randn(8, 4), torch.randn(8, 1))]:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.save(model.state_dict(), path)
    return path
{after}

if __name__ == "__main__":
    train("m.pt")
    {call}
"""

READ_AFTER = """

def evaluate(path):
    return torch.load(path)
"""


def test_a_reader_run_after_the_training_function_returns_waits_for_the_save() -> None:
    result = convert_source(SCRIPT.format(after=READ_AFTER, call='print(evaluate("m.pt"))'), "t.py")
    assert result.refused is None
    assert "    accelerator.wait_for_everyone()\n    return path\n" in result.text
    assert any("end of train()" in note and "evaluate(" in note for note in result.notes)


def test_a_load_before_the_call_or_inside_it_adds_no_barrier() -> None:
    result = convert_source(
        SCRIPT.format(after=READ_AFTER, call="pass").replace(
            '    train("m.pt")', '    evaluate("old.pt")\n    train("m.pt")'
        ),
        "t.py",
    )
    assert result.refused is None
    assert "wait_for_everyone" not in result.text


def test_no_barrier_after_the_process_group_is_destroyed() -> None:
    """A training function that ends with ``torch.distributed.destroy_process_group()`` (by any
    spelling of it) leaves no process group to wait on: a barrier there would fail, so none is
    added even though the caller loads the checkpoint after it returned."""
    for spelling, call in (
        ("import torch.distributed as dist\n", "dist.destroy_process_group()"),
        ("from torch.distributed import destroy_process_group as teardown\n", "teardown()"),
    ):
        script = SCRIPT.format(after=READ_AFTER, call='print(evaluate("m.pt"))')
        script = script.replace("import torch\n", f"import torch\n{spelling}", 1)
        script = script.replace("    return path\n", f"    {call}\n    return path\n")
        result = convert_source(script, "t.py")
        assert result.refused is None, result.refused
        assert call in result.text
        assert "wait_for_everyone" not in result.text, result.text
