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


#: the helper asks and goes on whatever the answer (no quit() on "no")
NO_QUIT = SCRIPT.replace("            quit()", "            return None")


def test_a_prompting_helper_runs_on_the_main_process_and_its_result_is_handed_round():
    result = convert_source(NO_QUIT.replace("CALL", "save_dir = make_save_dir()"), "train.py")
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
    result = convert_source(NO_QUIT.replace("CALL", "make_save_dir()"), "train.py")
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


# Session 25: a "no" to make_save_dir()'s prompt quit() the main process alone; the others were
# left in the broadcast (a 2-process replica, "no" piped to stdin: rank 1 RuntimeError "Connection
# closed by peer", exit 1, where the original printed its message and exited 0). The main process
# now hands round the SystemExit it met, and every process raises it after the broadcast.


def test_a_quit_in_a_prompting_helper_reaches_every_process():
    result = convert_source(SCRIPT.replace("CALL", "save_dir = make_save_dir()"), "train.py")
    assert result.refused is None, result.refused
    assert (
        "    try:\n"
        "        save_dir = make_save_dir() if accelerator.is_main_process else None\n"
        "    except SystemExit as quitting:  # the main process quits: the others quit with it, below\n"
        "        save_dir = quitting\n"
        "    save_dir = broadcast_object_list([save_dir])[0]\n"
        "    if isinstance(save_dir, SystemExit):\n"
        "        raise save_dir\n"
    ) in result.text, result.text
    assert any("make_save_dir() at line 25" in n and "quits" in n for n in result.notes), result.notes


def test_a_quit_in_a_prompting_helper_whose_result_is_unused_reaches_every_process():
    result = convert_source(SCRIPT.replace("CALL", "make_save_dir()"), "train.py")
    assert (
        "    try:\n"
        "        quit_signal = None\n"
        "        if accelerator.is_main_process:\n"
        "            make_save_dir()\n"
        "    except SystemExit as quitting:  # the main process quits: the others quit with it, below\n"
        "        quit_signal = quitting\n"
        "    quit_signal = broadcast_object_list([quit_signal])[0]\n"
        "    if isinstance(quit_signal, SystemExit):\n"
        "        raise quit_signal\n"
    ) in result.text, result.text
    assert "wait_for_everyone" not in result.text, result.text


def test_the_names_the_quit_path_adds_avoid_the_script_s_own():
    source = SCRIPT.replace("CALL", "save_dir = make_save_dir()\n    quitting = 1")
    result = convert_source(source, "train.py")
    assert "except SystemExit as quitting_:" in result.text, result.text


# Session 26: `os._exit()` ends the process without raising: the `except SystemExit` round the
# call never saw it, and the main process ended alone (a 2-process replica, "no" piped in: rank 0
# exit 0, rank 1 "Connection closed by peer", exit 1). The helper's `os._exit(code)` becomes
# `sys.exit(code)` (the same exit status), handed round as a quit() is.

HARD_EXIT = SCRIPT.replace("            quit()", "            os._exit(0)")


def test_an_os_exit_in_a_prompting_helper_is_raised_and_handed_round():
    result = convert_source(HARD_EXIT.replace("CALL", "save_dir = make_save_dir()"), "train.py")
    assert result.refused is None, result.refused
    assert "            sys.exit(0)\n" in result.text, result.text
    assert "os._exit" not in result.text, result.text
    assert "import sys\n" in result.text, result.text
    assert (
        "    except SystemExit as quitting:  # the main process quits: the others quit with it, below\n"
        "        save_dir = quitting\n"
        "    save_dir = broadcast_object_list([save_dir])[0]\n"
        "    if isinstance(save_dir, SystemExit):\n"
        "        raise save_dir\n"
    ) in result.text, result.text
    assert any("os._exit(0) at line 18" in n and "sys.exit(0)" in n for n in result.notes), result.notes


def test_an_os_exit_in_a_helper_the_prompting_helper_calls_is_raised():
    source = HARD_EXIT.replace("            os._exit(0)", "            give_up(3)").replace(
        "def make_save_dir():", "def give_up(code):\n    os._exit(code)\n\n\ndef make_save_dir():"
    )
    result = convert_source(source.replace("CALL", "make_save_dir()"), "train.py")
    assert result.refused is None, result.refused
    assert "    sys.exit(code)\n" in result.text, result.text
    assert "quit_signal = broadcast_object_list([quit_signal])[0]" in result.text, result.text


def test_an_os_exit_outside_a_prompting_helper_is_left_as_it_is():
    source = NO_QUIT.replace("CALL", "save_dir = make_save_dir()").replace(
        "train(model, DL_train, optimizer)\n", "train(model, DL_train, optimizer)\nos._exit(0)\n"
    )
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    assert "os._exit(0)" in result.text, result.text
