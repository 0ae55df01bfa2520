"""A method of the model's own class that writes a checkpoint (survey 23b mird_phase2's
``model_to_save.save_checkpoint(path)``, ``torch.save`` inside): after conversion every process
called it and wrote the same file, while the script's plain ``torch.save`` calls got the
main-process guard. The file's own class is read and its call guarded; a class of a module the
fixer cannot read is named in a note."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

OWN = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)

    def save_checkpoint(self, path):
        torch.save({"model": self.state_dict()}, path)

    def describe(self):
        return "net"


def main():
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model_to_save = model.module if hasattr(model, "module") else model
        model_to_save.save_checkpoint(f"ckpt_{epoch}.pt")
        print(model_to_save.describe())
    model.save_checkpoint("last.pt")


if __name__ == "__main__":
    main()
"""


def test_a_writing_method_of_the_models_own_class_runs_on_the_main_process():
    result = convert_source(OWN, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert (
        "        if accelerator.is_main_process:\n"
        '            model_to_save.save_checkpoint(f"ckpt_{epoch}.pt")\n'
        "        print(model_to_save.describe())\n"
    ) in text, text
    assert (
        "    if accelerator.is_main_process:\n"
        '        accelerator.unwrap_model(model, keep_torch_compile=False).save_checkpoint("last.pt")\n'
    ) in text, text
    assert any(n.startswith("model_to_save.save_checkpoint() at line 30 writes a checkpoint") for n in result.notes), (
        result.notes
    )


def test_a_method_already_under_a_rank_test_or_writing_nothing_is_left():
    source = OWN.replace(
        '    model.save_checkpoint("last.pt")',
        '    if torch.distributed.get_rank() == 0:\n        model.save_checkpoint("last.pt")',
    )
    text = convert_source(source, "train.py").text
    assert text.count("accelerator.is_main_process") == 1, text  # the loop's only


def test_a_writing_method_of_a_class_of_an_unread_module_is_named(tmp_path):
    source = OWN.replace("import torch.nn as nn\n", "import torch.nn as nn\nfrom model_agentic import Net\n")
    source = source[: source.index("class Net")] + source[source.index("def main") :]
    (tmp_path / "proj").mkdir()
    script = tmp_path / "proj" / "train.py"
    script.write_text(source)
    result = convert_source(source, str(script))
    assert result.refused is None, result.refused
    note = next((n for n in result.notes if n.startswith("model_to_save.save_checkpoint() at line 16, of ")), None)
    assert note is not None, result.notes
    assert "model_agentic.Net" in note and "not read" in note and "every process" in note, note
    assert not any(n.startswith("model_to_save.describe()") for n in result.notes)


def test_save_pretrained_of_a_model_of_an_unread_module_is_left_to_its_own_handling(tmp_path):
    """survey 20b gte_lora: ``model = get_peft_model(...)`` then ``model.save_pretrained(path)``:
    the prepared model's save_pretrained has its own rewrite; no unread-module note."""
    source = OWN.replace("import torch.nn as nn\n", "import torch.nn as nn\nfrom model_agentic import Net\n")
    source = source[: source.index("class Net")] + source[source.index("def main") :]
    source = source.replace("model_to_save.save_checkpoint(", "model_to_save.save_pretrained(")
    (tmp_path / "proj").mkdir()
    script = tmp_path / "proj" / "train.py"
    script.write_text(source)
    result = convert_source(source, str(script))
    assert not any(n.startswith("model_to_save.save_pretrained()") and "not read" in n for n in result.notes), (
        result.notes
    )
