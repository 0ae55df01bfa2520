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


TRAINER = """\
import torch
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model, train_loader: DataLoader, max_steps):
        self.model = model
        self.train_loader = train_loader
        self.max_steps = max_steps
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train(self):
        ITERATION
"""

BY_NEXT = """train_iter = iter(self.train_loader)
        for step in range(self.max_steps):
            try:
                batch = next(train_iter)
            except StopIteration:
                train_iter = iter(self.train_loader)
                batch = next(train_iter)
            self.optimizer.zero_grad()
            self.model(batch).mean().backward()
            self.optimizer.step()"""

BY_FOR = """for batch in self.train_loader:
            self.optimizer.zero_grad()
            self.model(batch).mean().backward()
            self.optimizer.step()"""


def test_a_loader_handed_to_a_trainer_is_named_as_the_callers_not_as_the_scripts_own_batches():
    """card_ar (survey 21b): ``iter(self.train_loader)`` / ``next()`` over the DataLoader handed to
    ``__init__``. Before, the note said "its batches come from the script's own code"."""
    for iteration in (BY_NEXT, BY_FOR):
        result = convert_source(TRAINER.replace("ITERATION", iteration), "trainer.py")
        assert result.refused is None, result.refused
        assert not any("its batches come from the script's own code" in n for n in result.notes), result.notes
        note = next((n for n in result.notes if "self.train_loader" in n), None)
        assert note is not None, result.notes
        assert "parameter train_loader of Trainer.__init__" in note, note
        assert "every process iterates all of its batches" in note, note


BUILT_IN_HELPER = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm


class Trainer:
    def __init__(self, epochs):
        self.epochs = epochs
        self._build_data()
        self.model = torch.nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def _build_data(self):
        data = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
        self.train_loader = DataLoader(data, batch_size=4, shuffle=True)

    def train(self):
        for epoch in range(self.epochs):
            bar = tqdm(self.train_loader)
            for x, y in bar:
                self.optimizer.zero_grad()
                torch.nn.functional.mse_loss(self.model(x), y).backward()
                self.optimizer.step()
"""


def test_a_loader_built_in_a_data_helper_of_init_is_prepared_with_the_model():
    """swara_jepa (survey 21b): ``self.train_loader = DataLoader(...)`` in ``_build_data()``, which
    ``__init__`` calls once. Before (21b): left unprepared with the note "DataLoader(...) at line 15
    feeds the training loop and is not prepared"; session 21 before that: "its batches come from
    the script's own code"."""
    result = convert_source(BUILT_IN_HELPER, "trainer.py")
    assert result.refused is None, result.refused
    assert "        self.model, self.optimizer, self.train_loader = self.accelerator.prepare(\n" in result.text
    assert not any("its batches come from the script's own code" in n for n in result.notes), result.notes
    assert not any("feeds the training loop" in n for n in result.notes), result.notes


def test_a_loader_of_a_data_helper_called_again_by_training_is_named_not_called_the_scripts_own_batches():
    """``self._build_data()`` again at the start of train(): the helper is not __init__'s alone,
    so its loader stays unprepared (each process iterates all of it, as the original did)."""
    text = BUILT_IN_HELPER.replace(
        "        for epoch in range(self.epochs):\n",
        "        self._build_data()\n        for epoch in range(self.epochs):\n",
    )
    result = convert_source(text, "trainer.py")
    assert result.refused is None, result.refused
    assert not any("its batches come from the script's own code" in n for n in result.notes), result.notes
    note = next((n for n in result.notes if "DataLoader(...) at line 15 feeds the training loop" in n), None)
    assert note is not None, result.notes
    assert "not prepared" in note and "every process iterates all of its batches" in note, note


IN_MAIN = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def train_one(model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def train(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        LOOP


def main():
    model = torch.nn.Linear(4, 1)
    loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2, shuffle=True)
    train(model, loader)


if __name__ == "__main__":
    main()
"""

OWN_LOOP = """for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()"""


def test_a_dataloader_main_binds_by_name_and_hands_to_the_training_function_is_prepared_there():
    """survey 26c (LoRA-CLM layout): main() builds ``loader = DataLoader(...)`` and calls
    ``train(model, loader)``, which makes the optimizer and iterates it. It was refused ("module-level
    code needs the accelerator"): the loader was prepared inline in main(), which main()'s module-level
    caller cannot hand an accelerator."""
    result = convert_source(IN_MAIN.replace("LOOP", OWN_LOOP), "lora_clm.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text, result.text
    assert "def main():" in result.text and "accelerator" not in result.text.split("def main():")[1], result.text


def test_a_loader_the_training_function_hands_on_to_a_helper_loop_is_prepared_there_too():
    """LoRA-CLM again: train() makes the optimizer and calls ``train_one(model, optimizer, loader)``,
    whose loop iterates the loader main() built: prepared in train() (was refused as above)."""
    result = convert_source(IN_MAIN.replace("LOOP", "train_one(model, optimizer, loader)"), "lora_clm.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text, result.text
    assert "train_one(model, optimizer, loader, accelerator=accelerator)" in result.text, result.text


def test_a_loader_main_hands_on_that_the_scope_does_not_prepare_is_refused_naming_main_and_the_loader():
    """The loader reaches the loop through a list (``held[0]``): not a parameter the scope can
    prepare, and main() cannot get the accelerator train() makes; the refusal names both, with lines
    (it said "module-level code needs the accelerator")."""
    source = IN_MAIN.replace("LOOP", "train_one(model, optimizer, held[0])").replace(
        "    optimizer = torch.optim.SGD", "    held = [loader]\n    optimizer = torch.optim.SGD"
    )
    result = convert_source(source, "lora_clm.py")
    assert result.refused is not None
    assert "main() (line 19) needs the accelerator to prepare the training DataLoader of loader (line 21" in (
        result.refused
    ), result.refused
    assert "called at module level (line 26)" in result.refused, result.refused
    assert "module-level code needs" not in result.refused, result.refused


def test_a_handed_loader_the_training_function_wraps_in_a_bar_each_epoch_is_prepared_before_the_loop():
    """LoRA-CLM's own loop: ``loader = tqdm(loader, leave=True)`` in train()'s epoch loop, then
    ``train_one(model, optimizer, loader)``. The bar is no new loader: the one main() hands in is
    prepared before the loop (was refused: "loader is built anew in each pass of the loop")."""
    loop = "loader = tqdm(loader, leave=True)\n        train_one(model, optimizer, loader)"
    source = "from tqdm import tqdm\n" + IN_MAIN.replace("LOOP", loop)
    result = convert_source(source, "lora_clm.py")
    assert result.refused is None, result.refused
    assert (
        "    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n    for epoch" in result.text
    ), result.text
    assert "        loader = tqdm(loader, leave=True)\n" in result.text, result.text
