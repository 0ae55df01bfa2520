"""A helper of the script that asks the user with ``input()`` (survey 23e cpc_libri's
``make_save_dir()``: an exists test, then ``input()`` or ``os.mkdir``): after conversion every
process ran it. On 2 processes, with a fresh folder, the main process made it and the other then
found it and prompted (6 of 6 runs of the replica: EOFError with stdin closed; on a terminal both
processes wait for one answer). The main process alone runs it now, and the others take what it
returned."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
DL_train = DataLoader(data, batch_size=8)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def make_save_dir():
    save_dir = os.path.join(os.getcwd(), "trained_models/run")
    if os.path.exists(save_dir):
        answer = input(f"Directory {save_dir} exists. Overwrite? [yes/no] ")
        if answer == "no":
            quit()
    else:
        os.mkdir(save_dir)
    return save_dir


def train(model, DL_train, optimizer):
    CALL
    for epoch in range(2):
        for x, y in DL_train:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


train(model, DL_train, optimizer)
"""


def test_a_prompting_helper_runs_on_the_main_process_and_its_result_is_handed_round():
    result = convert_source(SCRIPT.replace("CALL", "save_dir = make_save_dir()"), "train.py")
    assert result.refused is None, result.refused
    assert (
        "    save_dir = make_save_dir() if accelerator.is_main_process else None\n"
        "    save_dir = broadcast_object_list([save_dir])[0]\n"
    ) in result.text, result.text
    assert "from accelerate.utils import TorchDynamoPlugin, broadcast_object_list" in result.text, result.text
    assert any(n.startswith("make_save_dir() at line 25 asks with input() (line 16)") for n in result.notes), (
        result.notes
    )


def test_a_prompting_helper_whose_result_is_unused_runs_on_the_main_process_before_a_barrier():
    result = convert_source(SCRIPT.replace("CALL", "make_save_dir()"), "train.py")
    assert (
        "    if accelerator.is_main_process:\n        make_save_dir()\n    accelerator.wait_for_everyone()\n"
    ) in result.text, result.text


def test_a_prompt_under_a_rank_test_is_left():
    source = SCRIPT.replace("CALL", "if torch.distributed.get_rank() == 0:\n        make_save_dir()")
    result = convert_source(source, "train.py")
    assert "broadcast_object_list" not in result.text and "wait_for_everyone" not in result.text, result.text


def test_an_input_written_in_the_training_function_is_asked_once_and_handed_round():
    result = convert_source(SCRIPT.replace("CALL", 'answer = input("Train? [y/n] ")'), "train.py")
    assert result.refused is None, result.refused
    assert (
        '    answer = input("Train? [y/n] ") if accelerator.is_main_process else None\n'
        "    answer = broadcast_object_list([answer])[0]\n"
    ) in result.text, result.text
    assert any(n.startswith("input() at line 25 asks") for n in result.notes), result.notes


def test_a_bare_input_in_the_training_function_runs_on_the_main_process_and_the_others_wait():
    result = convert_source(SCRIPT.replace("CALL", 'input("Press enter to start")'), "train.py")
    assert result.refused is None, result.refused
    assert (
        "    if accelerator.is_main_process:\n"
        '        input("Press enter to start")\n'
        "    accelerator.wait_for_everyone()\n"
    ) in result.text, result.text


def test_an_input_used_another_way_in_the_training_function_is_named():
    result = convert_source(SCRIPT.replace("CALL", 'if input("Train? ") == "n":\n        return'), "train.py")
    assert result.refused is None, result.refused
    assert 'input("Train? ")' in result.text
    assert any(n.startswith("input() at line 25 asks") and "by hand" in n for n in result.notes), result.notes
