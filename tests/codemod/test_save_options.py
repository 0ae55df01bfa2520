"""torch.save() options that accelerator.save() does not take.

survey21c moco_pp3: ``torch.save(encoder.state_dict(), path, _use_new_zipfile_serialization=False)``
became ``accelerator.save(..., _use_new_zipfile_serialization=False)``, and ``Accelerator.save(obj,
f, safe_serialization=False)`` raised ``TypeError: ... unexpected keyword argument`` (the script's
bare ``except:`` then saved in the other format). A save with such options keeps ``torch.save``
and runs under ``if accelerator.is_main_process:``.
"""

from __future__ import annotations

import inspect

import pytest
from accelerate import Accelerator

from regcomp_lint.codemod import ConvertOptions, convert_source
from regcomp_lint.knowledge import accelerate_api

SCRIPT = """
import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4)
    for (x,) in loader:
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    SAVE


if __name__ == "__main__":
    main()
"""


def convert(save: str) -> tuple[str, list[str]]:
    result = convert_source(SCRIPT.replace("SAVE", save), "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    return result.text, result.notes


@pytest.mark.parametrize(
    "options",
    ["_use_new_zipfile_serialization=False", "pickle_protocol=4", "pickle_module=pickle"],
)
def test_a_model_state_saved_with_options_keeps_torch_save_on_the_main_process(options):
    text, notes = convert(f'torch.save(model.state_dict(), "w.pt", {options})')
    assert (
        "    if accelerator.is_main_process:\n"
        '        torch.save(accelerator.unwrap_model(model, keep_torch_compile=False).state_dict(), "w.pt", '
        f"{options})\n"
    ) in text
    assert "accelerator.save(" not in text
    assert any("accelerator.save() does not take" in n and "line 15" in n for n in notes), notes


def test_a_whole_model_saved_with_options_keeps_torch_save_on_the_main_process():
    text, _ = convert('torch.save(model, "m.pt", pickle_protocol=4)')
    assert (
        '        torch.save(accelerator.unwrap_model(model, keep_torch_compile=False), "m.pt", pickle_protocol=4)\n'
    ) in text
    assert "    if accelerator.is_main_process:\n" in text


def test_a_save_of_nothing_prepared_with_options_keeps_torch_save_on_the_main_process():
    text, _ = convert('torch.save({"n": 1}, "meta.pt", _use_new_zipfile_serialization=False)')
    assert (
        "    if accelerator.is_main_process:\n"
        '        torch.save({"n": 1}, "meta.pt", _use_new_zipfile_serialization=False)\n'
    ) in text


def test_a_plain_save_still_becomes_accelerator_save():
    text, _ = convert('torch.save(model.state_dict(), "w.pt")')
    assert (
        '    accelerator.save(accelerator.unwrap_model(model, keep_torch_compile=False).state_dict(), "w.pt")\n' in text
    )


def test_the_parameters_accelerator_save_takes():
    """The knowledge the rewrite relies on: beyond the object and the file, accelerator.save()
    takes only safe_serialization, which torch.save() has not."""
    params = list(inspect.signature(Accelerator.save).parameters)[1:]
    assert tuple(params) == accelerate_api.SAVE_PARAMETERS
