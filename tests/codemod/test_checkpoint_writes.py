"""codemod/checkpoint_writes.py: checkpoint-writing helpers run on the main process only, and a
read-back of a main-process write waits for it, without ever adding a barrier one rank skips."""

from __future__ import annotations

import textwrap

from regcomp_lint.codemod import ConvertOptions, convert_source

HEAD = """
import os
import shutil
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset


def save_checkpoint(state, is_best, filename="checkpoint.pth"):
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, "best.pth")


def synced_save(state):
    dist.barrier()
    torch.save(state, "synced.pth")


def main(rank=0):
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4)
    for epoch in range(2):
        for (x,) in loader:
            loss = model(x).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def convert(tail: str) -> str:
    source = HEAD + textwrap.indent(textwrap.dedent(tail), "    ")
    result = convert_source(source, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    return result.text


def test_a_helper_writing_a_checkpoint_runs_on_the_main_process_only():
    out = convert('save_checkpoint({"model": model.state_dict()}, True)\n')
    assert "    if accelerator.is_main_process:\n        save_checkpoint(" in out


def test_a_helper_already_called_under_a_rank_test_is_left_alone():
    out = convert('if rank == 0:\n    save_checkpoint({"model": model.state_dict()}, True)\n')
    assert "is_main_process" not in out


def test_a_helper_making_a_collective_call_is_never_guarded():
    out = convert('synced_save({"model": model.state_dict()})\n')
    assert "is_main_process" not in out


def test_a_helper_whose_result_is_used_is_left_with_a_note():
    source = HEAD.replace(
        'shutil.copyfile(filename, "best.pth")', 'shutil.copyfile(filename, "best.pth")\n    return filename'
    )
    source += '    path = save_checkpoint({"model": model.state_dict()}, True)\n'
    result = convert_source(source, "train.py", ConvertOptions())
    assert "is_main_process" not in result.text
    assert any("its result is used" in note for note in result.notes)


def test_a_read_back_waits_for_the_main_process_write():
    out = convert('save_checkpoint({"model": model.state_dict()}, True)\nstate = torch.load("checkpoint.pth")\n')
    lines = out.splitlines()
    wait = lines.index("    accelerator.wait_for_everyone()")
    assert lines[wait + 1] == '    state = torch.load("checkpoint.pth")'


def test_a_read_inside_the_same_branch_as_the_write_waits_there():
    """cleanrl's ``if args.save_model:`` saves, then ``evaluate(model_path, ...)`` reads it back:
    every process takes that branch, so the barrier goes inside it, before the call handed the path."""
    out = convert(
        'if os.environ.get("CHECK"):\n    path = "checkpoint.pth"\n'
        "    torch.save(model.state_dict(), path)\n    check(path)\n"
    )
    assert '    if os.environ.get("CHECK"):\n' in out
    assert "        accelerator.wait_for_everyone()\n        check(path)\n" in out


def test_no_barrier_under_a_test_on_the_rank():
    """Under ``if rank == 0:`` the other processes never reach a barrier put there."""
    out = convert('if rank == 0:\n    torch.save(model.state_dict(), "m.pth")\n    torch.load("m.pth")\n')
    assert "wait_for_everyone" not in out


def test_a_read_back_under_an_if_on_the_process_s_own_loss_is_refused():
    """``if epoch_loss < best: save, then load back``: the barrier before the read would sit in a
    branch each process decides from its own loss. A replica converted and launched on 2 gloo
    processes hung there at epoch 4 (the ranks' losses 0.510 and 0.970 had parted)."""
    source = HEAD + textwrap.indent(
        textwrap.dedent(
            """
            best = float("inf")
            for epoch in range(2):
                running = 0.0
                for (x,) in loader:
                    running += model(x).sum().item()
                epoch_loss = running / len(loader)
                if epoch_loss < best:
                    best = epoch_loss
                    torch.save(model.state_dict(), "best.pth")
                    model.load_state_dict(torch.load("best.pth"))
            """
        ),
        "    ",
    )
    result = convert_source(source, "train.py", ConvertOptions())
    assert result.refused is not None
    assert (
        "the read at line 40 of the checkpoint the main process writes at line 39 would wait for it under "
        "`if epoch_loss < best:` (line 37), where `epoch_loss` is computed from "
        "`running += model(x).sum().item()` (line 35)"
    ) in result.refused, result.refused


def test_a_read_back_under_an_if_every_process_decides_alike_still_waits_there():
    out = convert(
        'for epoch in range(2):\n    if epoch % 2 == 1:\n        torch.save(model.state_dict(), "m.pth")\n'
        '        model.load_state_dict(torch.load("m.pth"))\n'
    )
    assert "            accelerator.wait_for_everyone()\n            accelerator.unwrap_model(model, " in out, out


DDP_BEST = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def evaluate(model, data_loader):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in data_loader:
            total += torch.nn.functional.mse_loss(model(x), y).item()
    model.train()
    return total / len(data_loader)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    val_loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=8)
    best = float("inf")
    for epoch in range(2):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        val_loss = evaluate(model, val_loader)
        if val_loss < best:
            best = val_loss
            torch.save(model.state_dict(), "best.pth")
            model.load_state_dict(torch.load("best.pth"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def test_a_ddp_script_s_read_back_under_an_evaluation_of_whole_data_still_waits_there():
    """The evaluation of the synchronized model on a loader left whole is the same on every
    process (synced_values), in a DDP script as in a plain one: the branch is taken alike."""
    result = convert_source(DDP_BEST, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    assert (
        "            accelerator.wait_for_everyone()\n            accelerator.unwrap_model(model, keep_torch_compile=False)"
        ".load_state_dict(" in result.text
    ), result.text


def test_an_evaluation_that_saves_when_accuracy_improves_runs_on_every_process():
    """kuangliu's CIFAR ``test()`` runs the prepared model over the test set, then saves: on one
    process only, DDP's forward (buffer broadcast) would wait forever for the others."""
    source = HEAD.replace(
        "def main(rank=0):",
        'def test(model, loader):\n    for (x,) in loader:\n        model(x)\n    torch.save(model.state_dict(), "ckpt.pth")\n\n\ndef main(rank=0):',
    )
    source += "    test(model, loader)\n"
    result = convert_source(source, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    assert "is_main_process" not in result.text


def test_a_helper_pickling_the_model_whole_in_its_checkpoint_dict_gets_the_unwrapped_model():
    """The SSD tutorial: torch.save({'epoch': epoch, 'model': model, ...}) pickled the DDP wrapper,
    which does not load in one process ("Default process group has not been initialized")."""
    from regcomp_lint.codemod import convert_source

    text = (
        "import torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\n"
        "def save_checkpoint(epoch, model, optimizer):\n"
        "    state = {'epoch': epoch, 'model': model, 'optimizer': optimizer}\n"
        "    torch.save(state, 'checkpoint.pth.tar')\n\n\n"
        "def main():\n    model = nn.Linear(4, 1)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)\n"
        "    for epoch in range(2):\n        for x, y in loader:\n"
        "            loss = nn.functional.mse_loss(model(x), y)\n"
        "            optimizer.zero_grad()\n            loss.backward()\n            optimizer.step()\n"
        "        save_checkpoint(epoch, model, optimizer)\n\n\nmain()\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert (
        "        if accelerator.is_main_process:\n"
        "            save_checkpoint(epoch, accelerator.unwrap_model(model, keep_torch_compile=False), optimizer)\n"
    ) in result.text
    assert any("pickles model whole" in n for n in result.notes)


def test_a_checkpoint_helper_of_another_module_runs_on_the_main_process_with_the_plain_model(tmp_path):
    """The SSD tutorial's utils.save_checkpoint: every process wrote the file, pickling DDP."""
    from regcomp_lint.codemod import convert_source

    (tmp_path / "utils.py").write_text(
        "import torch\n\n\ndef save_checkpoint(epoch, model, optimizer):\n"
        "    state = {'epoch': epoch, 'model': model, 'optimizer': optimizer}\n"
        "    torch.save(state, 'checkpoint_ssd300.pth.tar')\n\n\n"
        "def evaluate_and_save(model, loader):\n    for x in loader:\n        model(x)\n    torch.save(model, 'm.pt')\n"
    )
    text = (
        "import torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "from utils import evaluate_and_save, save_checkpoint\n\n"
        "model = nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)\n"
        "for epoch in range(2):\n    for x, y in loader:\n        loss = nn.functional.mse_loss(model(x), y)\n"
        "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n"
        "    save_checkpoint(epoch, model, optimizer)\n    evaluate_and_save(model, loader)\n"
    )
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert (
        "    if accelerator.is_main_process:\n"
        "        save_checkpoint(epoch, accelerator.unwrap_model(model, keep_torch_compile=False), optimizer)\n"
    ) in result.text
    assert "    evaluate_and_save(model, loader)\n" in result.text  # it loops over the model: every process runs it


def test_a_checkpoint_helper_brought_by_a_star_import_runs_on_the_main_process_with_the_plain_model(tmp_path):
    """The SSD tutorial's train.py does ``from utils import *``: every process wrote the file,
    pickling DDP, when the star import was not seen through."""
    from regcomp_lint.codemod import convert_source

    (tmp_path / "utils.py").write_text(
        "import torch\n\n\ndef save_checkpoint(epoch, model, optimizer):\n"
        "    state = {'epoch': epoch, 'model': model, 'optimizer': optimizer}\n"
        "    torch.save(state, 'checkpoint_ssd300.pth.tar')\n"
    )
    text = (
        "import torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "from utils import *\n\n"
        "model = nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)\n"
        "for epoch in range(2):\n    for x, y in loader:\n        loss = nn.functional.mse_loss(model(x), y)\n"
        "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n"
        "    save_checkpoint(epoch, model, optimizer)\n"
    )
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert (
        "    if accelerator.is_main_process:\n"
        "        save_checkpoint(epoch, accelerator.unwrap_model(model, keep_torch_compile=False), optimizer)\n"
    ) in result.text


SWA = """\
import torch
from torch.optim.swa_utils import AveragedModel

model = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
swa_model = AveragedModel(model)
for step in range(4):
    optimizer.zero_grad()
    model(torch.randn(2, 8)).sum().backward()
    optimizer.step()
    swa_model.update_parameters(model)
torch.save(swa_model.state_dict(), "swa.pt")
torch.save(swa_model.state_dict(), f"swa_rank{rank}.pt")
"""


def test_a_save_of_nothing_prepared_is_written_by_the_main_process():
    """An SWA or EMA copy saved at the end: every process would write the same file at once."""
    result = convert_source(SWA, "train.py")
    assert result.refused is None, result.refused
    assert 'accelerator.save(swa_model.state_dict(), "swa.pt")\n' in result.text
    assert 'torch.save(swa_model.state_dict(), f"swa_rank{rank}.pt")\n' in result.text  # one file per process
    assert any("torch.save() at line 12 -> accelerator.save()" in note for note in result.notes), result.notes
    assert convert_source(result.text, "train.py").changed is False


TRAIN_FUNCTION = """\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset


def train(model, loader, optimizer, scheduler, save_dir):
    for epoch in range(2):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
        train_state = {"epoch": epoch + 1, "optimizer_state_dict": optimizer.state_dict()}
        minimal_state = {"epoch": epoch + 1, "loss": loss.item()}
        torch.save(train_state, f"{save_dir}train_state.pt")
        torch.save(minimal_state, f"{save_dir}minimal_state.pt")
        torch.save(model.state_dict(), f"{save_dir}model.pt")


if __name__ == "__main__":
    model = torch.nn.Linear(4, 1)
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4, shuffle=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    train(model, loader, optimizer, scheduler, save_dir="out/")
"""


def test_a_training_state_saved_in_the_training_function_is_written_by_the_main_process():
    """survey 19b llm_tools_lora: ``torch.save(train_state, ...)`` in ``train(model, ...)``, the
    function that trains (the accelerator is made in the caller), ran in every process of the
    conversion, each writing the same file; only the model's own state became accelerator.save."""
    result = convert_source(TRAIN_FUNCTION, "train.py")
    assert result.refused is None, result.refused
    assert 'accelerator.save(train_state, f"{save_dir}train_state.pt")\n' in result.text
    assert 'accelerator.save(minimal_state, f"{save_dir}minimal_state.pt")\n' in result.text
    assert "torch.save(" not in result.text
    assert any("torch.save() at line 16 -> accelerator.save()" in note for note in result.notes), result.notes


def test_a_save_whose_path_names_the_rank_through_a_variable_or_a_constant_stays_in_every_process():
    """One test of "this path is one file per process" for checkpoints and files alike."""
    saves = 'path = f"swa_rank{rank}.pt"\ntorch.save(swa_model.state_dict(), path)\ntorch.save(swa_model.state_dict(), f"swa_{RANK}.pt")\n'
    result = convert_source(
        SWA.replace('torch.save(swa_model.state_dict(), f"swa_rank{rank}.pt")\n', saves), "train.py"
    )
    assert result.refused is None, result.refused
    assert "torch.save(swa_model.state_dict(), path)\n" in result.text
    assert 'torch.save(swa_model.state_dict(), f"swa_{RANK}.pt")\n' in result.text
    assert 'accelerator.save(swa_model.state_dict(), "swa.pt")\n' in result.text


MAIN_FLAG = """\
import json
import os
import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])
    is_main = rank == 0
    if is_main:
        with open("args.json", "w") as f:
            json.dump({"a": 1}, f)
    data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data))
    model = DDP(torch.nn.Linear(4, 1))
    raw = model.module
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def save(path, epoch):
        torch.save({"model": raw.state_dict(), "epoch": epoch}, path)
        np.savez("meta.npz", epoch=epoch)

    for epoch in range(2):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if not is_main:
            continue
        with open("log.jsonl", "a") as f:
            f.write(json.dumps({"epoch": epoch}) + "\\n")
        save("last.pt", epoch)
        torch.save(raw.state_dict(), "weights.pth")
    if rank != 0:
        return
    np.save("final.npy", np.zeros(2))


if __name__ == "__main__":
    main()
"""


def test_writes_under_a_main_process_flag_or_after_an_early_exit_get_no_second_guard():
    """survey 19e sphere_flow: ``is_main = rank == 0``, ``if is_main:`` blocks and ``if not
    is_main: continue`` before the saves. The conversion added ``if accelerator.is_main_process:``
    around each write there, with notes claiming every process wrote the file (false)."""
    result = convert_source(MAIN_FLAG, "train.py")
    assert result.refused is None, result.refused
    assert "is_main_process" not in result.text, result.text
    assert "accelerator.save(" not in result.text
    notes = " ".join(result.notes)
    assert "every process" not in notes.replace("every process must", ""), result.notes
    unguarded = MAIN_FLAG.replace("        if not is_main:\n            continue\n", "")
    result = convert_source(unguarded, "train.py")
    assert '        if accelerator.is_main_process:\n            with open("log.jsonl", "a") as f:\n' in result.text


OWN_UNWRAP = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def save_models(epoch, encoder, discriminator):
    checkpoint = {
        "epoch": epoch,
        "encoder_state_dict": getattr(encoder, "_orig_mod", encoder).state_dict(),
        "discriminator_state_dict": getattr(discriminator, "_orig_mod", discriminator).state_dict(),
    }
    torch.save(checkpoint, f"checkpoint_{epoch}.pt")


def main():
    generator = torch.compile(nn.Linear(4, 4))
    discriminator = torch.compile(nn.Linear(4, 1))
    opt_g = torch.optim.Adam(generator.parameters())
    opt_d = torch.optim.Adam(discriminator.parameters())
    loader = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4)
    for epoch in range(2):
        for (x,) in loader:
            d_loss = discriminator(generator(x).detach()).mean() - discriminator(x).mean()
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            g_loss = -discriminator(generator(x)).mean()
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
        save_models(epoch, generator, discriminator)


main()
"""


def test_a_helper_that_unwraps_the_compile_by_getattr_gets_the_unwrapped_models():
    """survey 20c, gan_yolo: ``getattr(encoder, "_orig_mod", encoder).state_dict()`` in the helper
    strips the compile the original made, not the DDP wrapper prepare() adds: on 2 processes the
    converted checkpoint held ``module.0.weight`` keys for both models (strict load into the plain
    model failed), on 1 process ``0.weight`` as the original's."""
    result = convert_source(OWN_UNWRAP, "train.py")
    assert result.refused is None, result.refused
    assert (
        "            save_models(epoch, accelerator.unwrap_model(generator, keep_torch_compile=False), "
        "accelerator.unwrap_model(discriminator, keep_torch_compile=False))\n"
    ) in result.text
    assert any("save_models() gets accelerator.unwrap_model(discriminator" in n for n in result.notes)


def test_a_helper_saving_a_differently_named_model_whole_still_gets_the_unwrapped_model():
    """Kept while adding the getattr form: ``torch.save(net, path)`` of the helper's parameter."""
    text = OWN_UNWRAP.replace(
        "def save_models(epoch, encoder, discriminator):\n",
        "def save_whole(net, path):\n    torch.save(net, path)\n\n\ndef save_models(epoch, encoder, discriminator):\n",
    ).replace("        save_models(epoch, generator, discriminator)\n", '        save_whole(generator, "g.pt")\n')
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert (
        '            save_whole(accelerator.unwrap_model(generator, keep_torch_compile=False), "g.pt")\n' in result.text
    )


def test_printing_or_logging_the_written_path_is_not_a_read():
    """survey20d's CIFAR notebook: ``torch.save(..., model_path)`` then ``print('Model saved on ',
    model_path, ...)`` under ``if test_accuracy > best_test_accuracy:``. The print reads nothing; a
    barrier put before it sits in a branch each process decides from its own evaluation."""
    for show in ("print('saved on', path)", "logger.info('saved on %s', path)"):
        out = convert(
            "best = 0\nacc = float(loss)\nif acc > best:\n    best = acc\n    path = 'best.pth'\n"
            f"    torch.save(model.state_dict(), path)\n    {show}\n"
        )
        assert "wait_for_everyone" not in out, out


HELPER_FLAG = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def save_flagged(model, path, rank):
    is_main = rank == 0
    if is_main:
        torch.save(model.state_dict(), path)


def save_after_exit(model, path, rank):
    if rank != 0:
        return
    torch.save(model.state_dict(), path)


def main():
    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])
    data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data))
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        save_flagged(model.module, "a.pt", rank)
        save_after_exit(model.module, "b.pt", rank)


if __name__ == "__main__":
    main()
"""


def test_a_helper_that_saves_under_its_own_main_process_flag_or_early_exit_is_no_writer_to_guard():
    """The lint's checkpoints (analysis/main_process.py) now see ``is_main = rank == 0`` and
    ``if rank != 0: return`` as the fixer does. Before, both helpers counted as writers every
    process ran: each call went under ``if accelerator.is_main_process:`` with a note saying so,
    where a helper testing ``if rank == 0:`` itself got none."""
    result = convert_source(HELPER_FLAG, "train.py")
    assert result.refused is None, result.refused
    assert "if accelerator.is_main_process:" not in result.text, result.text
    assert not [n for n in result.notes if "writes a checkpoint" in n], result.notes


HELPER_RANK_TEST = """import os
import torch
from torch.utils.data import DataLoader, TensorDataset


def is_main(rank: int) -> bool:
    return rank == 0


def save_checkpoint(out_dir, step, model, rank):
    if not is_main(rank):
        return
    torch.save({"step": step, "model": model.state_dict()}, os.path.join(out_dir, "last.pt"))


def main():
    rank = int(os.environ.get("RANK", 0))
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4)
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        save_checkpoint("out", step, model, rank)


main()
"""


def test_a_helper_leaving_early_through_a_rank_test_helper_gets_no_second_guard():
    """survey 21a drift_dit: ``save_checkpoint`` starts with ``if not is_main(rank): return``, where
    ``is_main(rank)`` is ``rank == 0``. The conversion wrapped its calls in ``if
    accelerator.is_main_process:`` too, with a note that every process would write."""
    result = convert_source(HELPER_RANK_TEST, "train.py")
    assert result.refused is None, result.refused
    assert "is_main_process" not in result.text, result.text
    assert not any("runs under `if accelerator.is_main_process:`" in n for n in result.notes), result.notes
    inverted = HELPER_RANK_TEST.replace("return rank == 0", "return rank != 0")  # not a main-process test
    assert "if accelerator.is_main_process:" in convert_source(inverted, "train.py").text


STAR_TORCH = """\
from torch.utils.data import DataLoader, TensorDataset
from models.architecture import *

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.save({'epoch': epoch, 'model_state_dict': model.state_dict()}, f'netG_epoch={epoch}')
"""


def test_torch_brought_by_a_star_import_still_saves_once():
    """Survey 22c's ESRGAN trainer imports ``torch`` and ``nn`` only through ``from
    models.architecture import *``: its ``torch.save`` calls did not resolve to torch.save, stayed
    as they were, and on 2 processes both ranks wrote each checkpoint (measured: ``SAVE rank=0``
    and ``SAVE rank=1`` for every epoch's file)."""
    from regcomp_lint.codemod import convert_source

    result = convert_source(STAR_TORCH, "train.py")
    assert result.refused is None, result.refused
    assert "    accelerator.save({'epoch': epoch, 'model_state_dict': accelerator.unwrap_model(" in result.text
    assert "torch.save(" not in result.text


def test_a_torch_the_script_binds_itself_is_not_taken_for_the_module():
    """A name ``torch`` the script binds (here a parameter) is not the module, star import or not."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from regcomp_lint.codemod.tree import Tree, find_all

    text = "from helpers import *\n\n\ndef f(torch):\n    torch.save(1, 'x')\n\n\ntorch.save(2, 'y')\n"
    tree = Tree(MetadataWrapper(cst.parse_module(text)))
    saves = list(find_all(tree.module, cst.Call))
    assert [tree.resolves_to(c.func, "torch.save") for c in saves] == [False, True]


CASTING_SAVE = """\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset


def save_model(model, output_dir):
    os.makedirs(output_dir, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(output_dir, "float32.pt"))
    model.to(torch.bfloat16)
    torch.save(model.state_dict(), os.path.join(output_dir, "bfloat16.pt"))


def main():
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4)
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    save_model(model, "out")
    print(model(torch.randn(2, 4, dtype=torch.bfloat16)))


main()
"""


def test_a_save_helper_that_changes_the_model_in_place_runs_on_every_process():
    """llm.c's save_model (survey 22a llmc_save) casts the model to bf16 between its two saves: under
    `if accelerator.is_main_process:` the other ranks kept a float32 model, and the forward after it
    differed from the original's (measured: rank 1's last loss 0.464407 against 0.464038). Every
    process runs it, as in the original; the saves inside write once."""
    result = convert_source(CASTING_SAVE, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    assert '\n    save_model(model, "out", accelerator=accelerator)\n' in result.text, result.text
    assert "is_main_process" not in result.text, result.text
    assert result.text.count("accelerator.save(") == 2, result.text


ATOMIC_SAVE = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def is_rank0():
    return not dist.is_initialized() or dist.get_rank() == 0


def save_ckpt(path, epoch, model, optimizer):
    state = {
        "epoch": epoch,
        "model": model.module.state_dict() if hasattr(model, "module") else model.state_dict(),
        "optimizer": optimizer.state_dict(),
    }
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    for epoch in range(2):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        CALL
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def test_no_barrier_inside_a_helper_that_runs_on_the_main_process_only():
    """Survey 23c (a PSMA SegResNet trainer under torchrun): ``save_ckpt()`` writes ``path.tmp``,
    then ``os.replace(tmp, path)``; its calls run under ``if is_rank0():`` (or are put under
    ``if accelerator.is_main_process:``). The rename read the written path, so a
    ``wait_for_everyone()`` went before it, inside the helper: the main process waited there for
    processes that never call the helper. A replica converted and launched with torchrun on 2 gloo
    processes hung at the first save (timeout after 90 s; the original finished in 3 s)."""
    for call in (
        'if is_rank0():\n            save_ckpt("last.pt", epoch, model, optimizer)',
        'save_ckpt("last.pt", epoch, model, optimizer)',
    ):
        result = convert_source(ATOMIC_SAVE.replace("CALL", call), "train.py", ConvertOptions())
        assert result.refused is None, result.refused
        assert "wait_for_everyone" not in result.text, result.text
        assert "    accelerator.save(state, tmp)\n    os.replace(tmp, path)\n" in result.text, result.text


def test_a_helper_every_process_calls_still_waits_before_reading_back():
    """The same write and read in a function every process runs (the training function itself):
    the barrier stays."""
    source = ATOMIC_SAVE.replace(
        "        CALL\n",
        '        torch.save(model.state_dict(), "m.pth")\n        model.load_state_dict(torch.load("m.pth"))\n'
        '        if is_rank0():\n            save_ckpt("last.pt", epoch, model, optimizer)\n',
    )
    result = convert_source(source, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    assert result.text.count("accelerator.wait_for_everyone()") == 1, result.text
    assert "        accelerator.wait_for_everyone()\n        accelerator.unwrap_model(model, " in result.text, (
        result.text
    )


def test_a_loop_variable_rebound_after_the_if_from_the_checkpoint_is_decided_alike():
    """survey24b pointnet_ddp: ``for epoch in pbar: if (epoch + 1) % save_period == 0:`` save on
    rank 0, then ``epoch = ckpt_dict["epoch"]`` read back below the test. The ``for`` rebinds
    ``epoch`` before the test is read again, so the test sees only the loop's own values, alike on
    every process: the read-back converts with its barrier (main refused it as decided apart)."""
    out = convert(
        'for epoch in range(2):\n    if (epoch + 1) % 2 == 0:\n        torch.save({"epoch": epoch}, "m.pth")\n'
        '        ckpt = torch.load("m.pth")\n        epoch = ckpt["epoch"]\n'
    )
    assert "accelerator.wait_for_everyone()\n            ckpt = torch.load(" in out, out


def test_a_loop_variable_rebound_before_the_if_is_still_decided_apart():
    """``epoch = ckpt["epoch"]`` ahead of the test in the same pass does reach it: still refused."""
    source = HEAD + textwrap.indent(
        textwrap.dedent(
            """
            for epoch in range(2):
                epoch = int(torch.load("m.pth")["epoch"]) if os.path.exists("m.pth") else epoch
                if (epoch + 1) % 2 == 0:
                    torch.save({"epoch": epoch}, "m.pth")
                    model.load_state_dict(torch.load("m.pth"))
            """
        ),
        "    ",
    )
    result = convert_source(source, "train.py", ConvertOptions())
    assert result.refused is not None and "`epoch` is computed from" in result.refused, result.refused


def test_a_read_back_through_a_helper_of_the_file_waits_for_the_main_process_write():
    """Survey 25b: a k-fold script saves through ``save_checkpoint(...)`` (guarded to the main
    process) and, for its ensemble, reads back through ``load_checkpoint(path, model)``, a helper
    that calls torch.load. No barrier went before it: a replica on 2 processes (accelerate launch)
    crashed on rank 1 in 3 of 3 runs, reading the file while rank 0 was still writing it
    (PytorchStreamReader failed reading zip archive / EOFError)."""
    source = HEAD.replace(
        "def synced_save(state):",
        'def load_checkpoint(path, model):\n    model.load_state_dict(torch.load(path)["model"])\n\n\n'
        "def synced_save(state):",
    )
    source += '    save_checkpoint({"model": model.state_dict()}, True)\n'
    source += '    net = torch.nn.Linear(4, 2)\n    load_checkpoint("checkpoint.pth", net)\n'
    result = convert_source(source, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    assert '    accelerator.wait_for_everyone()\n    load_checkpoint("checkpoint.pth", net' in result.text, result.text
    assert any("wait_for_everyone() before the read at line" in n for n in result.notes), result.notes


def test_a_rename_of_the_written_file_into_place_runs_on_the_main_process_only():
    """survey 25e framediff: ``torch.save(payload, tmp)`` then ``os.replace(tmp, path)`` in the
    training loop. The save became the main process's; a barrier went before the rename as if it
    read the file, and every process renamed it: a replica under `accelerate launch` on 2 gloo
    processes raised FileNotFoundError in 4 of 4 runs (0 of 4 after). The rename is part of the
    write: main process only, then the barrier before a read of the renamed file."""
    out = convert(
        'tmp = "latest.pt.tmp"\ntorch.save(model.state_dict(), tmp)\nos.replace(tmp, "latest.pt")\n'
        'state = torch.load("latest.pt")\n'
    )
    assert "    accelerator.save(" in out, out
    assert '    if accelerator.is_main_process:\n        os.replace(tmp, "latest.pt")\n' in out, out
    assert '    accelerator.wait_for_everyone()\n    state = torch.load("latest.pt")\n' in out, out
    assert out.count("wait_for_everyone") == 1, out


def test_a_copy_of_the_written_file_runs_on_the_main_process_only():
    out = convert('torch.save(model.state_dict(), "m.pth")\nshutil.copyfile("m.pth", "best.pth")\n')
    assert '    if accelerator.is_main_process:\n        shutil.copyfile("m.pth", "best.pth")\n' in out, out
    assert "wait_for_everyone" not in out, out


def test_a_rename_already_under_a_rank_test_is_left_alone():
    out = convert('if rank == 0:\n    torch.save(model.state_dict(), "m.tmp")\n    os.replace("m.tmp", "m.pth")\n')
    assert "is_main_process" not in out, out
