"""Sample images and plots are written by the main process only (codemod/file_writes.py)."""

from __future__ import annotations

import pytest

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torchvision.utils as vutils
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
netG = nn.Linear(8, 12).to(device)
optimizer = torch.optim.Adam(netG.parameters(), lr=2e-4)
loader = DataLoader(TensorDataset(torch.randn(64, 8)), batch_size=8)
fixed_noise = torch.randn(4, 8)
for epoch in range(2):
    for i, (x,) in enumerate(loader):
        loss = netG(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i % 4 == 0:
            SAMPLES
"""


def _convert(samples: str):
    text = SCRIPT.replace("SAMPLES", samples.replace("\n", "\n            "))
    result = convert_source(text, "main.py")
    assert result.refused is None, result.refused
    return result


def test_a_sample_image_is_written_by_the_main_process():
    result = _convert(
        "fake = netG(fixed_noise)\n# the samples\nvutils.save_image(fake.detach(), 'fake_%03d.png' % epoch, normalize=True)"
    )
    assert (
        "            fake = netG(fixed_noise)\n"
        "            # the samples\n"
        "            if accelerator.is_main_process:\n"
        "                vutils.save_image(fake.detach(), 'fake_%03d.png' % epoch, normalize=True)\n"
    ) in result.text
    assert "vutils.save_image() at line 21 runs under `if accelerator.is_main_process:`" in " ".join(result.notes)


def test_a_plot_is_written_by_the_main_process():
    result = _convert("plt.plot([1, 2])\nplt.savefig('loss.png')")
    assert (
        "            plt.plot([1, 2])\n            if accelerator.is_main_process:\n                plt.savefig('loss.png')\n"
        in (result.text)
    )


def test_a_medical_volume_is_written_by_the_main_process():
    """survey 26c's BraTS diffusion trainer: ``nib.save(nib.Nifti1Image(...), path)`` of a sample scan
    each epoch ran on every process, all writing the same file; SimpleITK's ``WriteImage`` alike."""
    for imports, write in (
        ("import nibabel as nib", "nib.save(nib.Nifti1Image(x.numpy(), affine=None), 'scan.nii.gz')"),
        ("import SimpleITK as sitk", "sitk.WriteImage(sitk.GetImageFromArray(x.numpy()), 'scan.nii.gz')"),
    ):
        text = imports + "\n" + SCRIPT.replace("SAMPLES", write)
        result = convert_source(text, "main.py")
        assert result.refused is None, result.refused
        assert f"            if accelerator.is_main_process:\n                {write}\n" in result.text, result.text


def test_a_write_that_calls_the_prepared_model_is_left_with_a_note():
    """Run by one process, DDP's forward would wait for the others forever."""
    result = _convert("vutils.save_image(netG(fixed_noise).detach(), 'fake.png')")
    assert "            vutils.save_image(netG(fixed_noise).detach(), 'fake.png')\n" in result.text
    assert any("it calls the prepared model" in note for note in result.notes)


def test_a_write_already_under_a_rank_test_is_left_alone():
    result = _convert(
        "if accelerator_rank == 0:\n    vutils.save_image(x, 'real.png')".replace("accelerator_rank", "rank")
    )
    assert "is_main_process" not in result.text.split("if i % 4 == 0:")[1]


def test_a_hub_upload_runs_on_the_main_process():
    """cleanRL's TD3 pushes its run with a project helper: every process pushed the same commit."""
    result = _convert("from cleanrl_utils.huggingface import push_to_hub\npush_to_hub(args, 'me/td3', 'TD3', 'runs/x')")
    assert (
        "if accelerator.is_main_process:\n                push_to_hub(args, 'me/td3', 'TD3', 'runs/x')\n" in result.text
    )
    text = SCRIPT.replace("import torch\n", "import huggingface_hub\nimport torch\n", 1)
    text = text.replace("SAMPLES", "huggingface_hub.upload_folder(repo_id='me/gan', folder_path='out')")
    converted = convert_source(text, "main.py").text
    assert "if accelerator.is_main_process:\n                huggingface_hub.upload_folder(" in converted


def test_a_with_block_that_only_saves_is_opened_by_the_main_process():
    """word_language_model's best model: every process opened the file with 'wb', truncating
    what the main process wrote."""
    result = _convert("with open('best.pt', 'wb') as f:\n    torch.save(netG.state_dict(), f)")
    assert (
        "            if accelerator.is_main_process:\n"
        "                with open('best.pt', 'wb') as f:\n"
        "                    accelerator.save(accelerator.unwrap_model(netG, keep_torch_compile=False).state_dict(), f)\n"
    ) in result.text
    assert any("the `with open('best.pt', 'wb')` block at line 19 runs under" in n for n in result.notes)


def test_a_file_written_with_what_the_prepared_model_computes_is_named_not_guarded():
    """A predictions file filled by the prepared model: every process must run the model."""
    result = _convert("out = open('preds.txt', 'w')\nout.write(str(netG(fixed_noise).sum().item()))\nout.close()")
    assert "if accelerator.is_main_process:" not in result.text
    assert any(
        n.startswith("open('preds.txt', 'w') at line 19 writes the same file from every process") for n in result.notes
    )
    with_model = _convert("with open('preds.txt', 'w') as f:\n    f.write(str(netG(fixed_noise).sum().item()))")
    assert "if accelerator.is_main_process:" not in with_model.text
    assert any("writes the same file from every process" in n for n in with_model.notes)


def test_reading_a_file_is_not_named():
    result = _convert("with open('labels.txt') as f:\n    labels = f.read()")
    assert not any("writes the same file" in n for n in result.notes)


def test_an_appended_log_block_says_each_process_appended_not_truncated():
    """Sweep 15 (a BERT-LSTM trainer's `with open(log, "a+") as f: f.write(...)`): the note said
    every process truncated the file; in append mode each process adds the same lines again."""
    result = _convert("with open('loss.log', 'a+') as f:\n    f.write('x')")
    assert "            if accelerator.is_main_process:\n" in result.text
    note = next(n for n in result.notes if "the `with open('loss.log', 'a+')` block" in n)
    assert "truncating" not in note and "appended the same lines" in note, note


HF_SAVES = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
model = BertForSequenceClassification(BertConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
loader = DataLoader(TensorDataset(torch.randint(0, 100, (16, 8)), torch.randint(0, 2, (16,))), batch_size=4)
for epoch in range(2):
    for ids, labels in loader:
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
SAVES
"""


def test_a_tokenizer_and_a_config_are_saved_by_the_main_process():
    """``tokenizer.save_pretrained(out)`` ran in every process of the converted script: each
    wrote the same vocabulary and config files at once."""
    saves = 'tokenizer.save_pretrained("out")\nmodel.config.save_pretrained("out")'
    result = convert_source(HF_SAVES.replace("SAVES", saves), "train.py")
    assert result.refused is None, result.refused
    assert 'if accelerator.is_main_process:\n    tokenizer.save_pretrained("out")\n' in result.text
    assert (
        'if accelerator.is_main_process:\n    accelerator.unwrap_model(model, keep_torch_compile=False).config.save_pretrained("out")\n'
        in result.text
    )
    notes = " ".join(result.notes)
    assert "tokenizer.save_pretrained() at line 15 runs under `if accelerator.is_main_process:`" in notes


def test_an_alias_of_the_model_saves_with_is_main_process():
    """``model_to_save = model.module if hasattr(model, "module") else model`` (the transformers
    examples' idiom): every process calls its save_pretrained (a sharded model gathers), the main
    process alone writes."""
    saves = 'model_to_save = model.module if hasattr(model, "module") else model\nmodel_to_save.save_pretrained("out")'
    result = convert_source(HF_SAVES.replace("SAVES", saves), "train.py")
    assert result.refused is None, result.refused
    assert 'model_to_save.save_pretrained("out", is_main_process=accelerator.is_main_process)' in result.text
    assert "if accelerator.is_main_process:" not in result.text


def test_a_save_already_under_a_rank_test_is_left_alone():
    saves = 'if accelerator_rank == 0:\n    tokenizer.save_pretrained("out")'
    text = HF_SAVES.replace("SAVES", saves).replace("import torch\n", "import os\nimport torch\n", 1)
    text = text.replace("tokenizer = ", 'accelerator_rank = int(os.environ.get("RANK", 0))\ntokenizer = ', 1)
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "if accelerator.is_main_process:" not in result.text


def test_pathlib_and_pandas_writes_are_made_by_the_main_process():
    """survey 19b bert_conll: ``Path(out).write_text(report)`` ran in every process of the
    conversion; a Kaggle-style ``df.to_csv("submission.csv")`` the same."""
    result = _convert(
        'report = f"{epoch} {loss.item()}"\nPath("report.txt").write_text(report)\ndf.to_csv("losses.csv", index=False)'
    )
    assert (
        '            if accelerator.is_main_process:\n                Path("report.txt").write_text(report)\n'
        in result.text
    )
    assert (
        '            if accelerator.is_main_process:\n                df.to_csv("losses.csv", index=False)\n'
        in result.text
    )
    notes = " ".join(result.notes)
    assert "write_text() at line" in notes and "to_csv() at line" in notes


def test_a_file_named_by_the_rank_is_still_written_by_every_process():
    """A per-rank file (``f"preds_{rank}.json"``, ``save_image(x, f"{args.local_rank}.png")``) is
    each process's own: guarding it on the main process would drop the others' (seen by the
    survey 19c helper in a replica)."""
    samples = (
        'with open(f"stats_{rank}.json", "w") as f:\n    json.dump({"loss": loss.item()}, f)\n'
        "vutils.save_image(netG(fixed_noise).detach(), f'fake_{rank}.png')"
    )
    result = _convert_with_rank("rank", samples)
    assert "is_main_process" not in result.text, result.text


def _convert_with_rank(name: str, samples: str):
    """SCRIPT with ``name = int(os.environ.get("RANK", 0))`` bound before the loop."""
    text = SCRIPT.replace("import matplotlib", "import json\nimport os\nimport matplotlib").replace(
        "fixed_noise = ", f'{name} = int(os.environ.get("RANK", 0))\nfixed_noise = '
    )
    result = convert_source(text.replace("SAMPLES", samples.replace("\n", "\n            ")), "main.py")
    assert result.refused is None, result.refused
    return result


def test_a_torchscript_export_is_written_by_the_main_process():
    """survey 19e kochi_bin: ``torch.jit.save(scripted, path)`` at the end ran in every process,
    each writing the same file (the meta JSON beside it was guarded)."""
    result = _convert("scripted = torch.jit.script(netG)\ntorch.jit.save(scripted, 'gen.pt')")
    assert "            if accelerator.is_main_process:\n                torch.jit.save(scripted, 'gen.pt')\n" in (
        result.text
    )
    assert "torch.jit.save() at line 20 runs under `if accelerator.is_main_process:`" in " ".join(result.notes)


def test_a_path_opened_for_writing_in_a_with_block_is_written_by_the_main_process():
    """survey 19b bert_conll: ``with (run_dir / "predictions.jsonl").open("w") as fh:`` was
    neither guarded nor named, where the same block with ``open(path, "w")`` is guarded."""
    result = _convert(
        "preds = [1, 2]\n"
        'with (Path("runs") / "predictions.jsonl").open("w", encoding="utf-8") as fh:\n'
        "    for p in preds:\n"
        '        fh.write(str(p) + "\\n")'
    )
    assert (
        "            if accelerator.is_main_process:\n"
        '                with (Path("runs") / "predictions.jsonl").open("w", encoding="utf-8") as fh:\n'
    ) in result.text
    notes = " ".join(result.notes)
    assert 'the `with (Path("runs") / "predictions.jsonl").open("w", encoding="utf-8")` block at line 20' in notes
    read = _convert('with Path("labels.txt").open() as fh:\n    labels = fh.read()')
    assert "if accelerator.is_main_process:" not in read.text
    gz = _convert('import gzip\nwith gzip.open("preds.gz", "wt") as fh:\n    fh.write("x")')
    assert "            if accelerator.is_main_process:\n                with gzip.open(" in gz.text


def test_a_file_named_by_a_rank_constant_or_through_a_path_variable_is_still_written_by_every_process():
    """survey 19c's replica: ``with open(f"..._{WORLD_RANK}.json", "w")`` was guarded on the main
    process (the word test read ``rank`` in lower case only), and a path bound first
    (``path = f"stats_{rank}.json"``) was not followed: the other ranks' files were no longer written."""
    samples = (
        'with open(f"stats_{WORLD_RANK}.json", "w") as f:\n    json.dump({"loss": loss.item()}, f)\n'
        'path = f"preds_{WORLD_RANK}.json"\nwith open(path, "w") as f:\n    json.dump({"loss": loss.item()}, f)'
    )
    result = _convert_with_rank("WORLD_RANK", samples)
    assert "is_main_process" not in result.text, result.text
    shared = _convert('with open("ranking.json", "w") as f:\n    f.write("x")')
    assert "            if accelerator.is_main_process:\n" in shared.text  # a word in the text is not a rank


UNREAD = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

from myproject.checkpoint import load_checkpoint, save_checkpoint
from .utils import write_json


def main(resume):
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4)
    if resume:
        load_checkpoint(resume, model, optimizer)
    history = []
    for epoch in range(2):
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            history.append(loss.item())
        save_checkpoint("last.pt", model, optimizer)
        write_json("history.json", history)
"""


def test_calls_of_a_module_the_fixer_cannot_read_are_named(tmp_path):
    """lmforge_trainer (survey 21b), sgns_sparse (21d): saves through functions of a module that is
    not beside the script ran in every process, and the prepared model went in, with no note."""
    (tmp_path / "myproject").mkdir()
    script = tmp_path / "myproject" / "train.py"  # a module of its own package, not there
    script.write_text(UNREAD)
    result = convert_source(UNREAD, str(script))
    assert result.refused is None, result.refused
    notes = result.notes
    for call, line in (("save_checkpoint", 22), ("write_json", 23)):
        note = next((n for n in notes if n.startswith(f"{call}() at line {line}, of ")), None)
        assert note is not None, (call, notes)
        assert "not read" in note and "every process" in note and "is_main_process" in note, note
    for call, line in (("load_checkpoint", 13), ("save_checkpoint", 22)):  # prepare() lands above the load
        note = next((n for n in notes if n.startswith(f"{call}() at line {line}") and "the prepared model:" in n), None)
        assert note is not None, (call, notes)
        assert "_orig_mod." in note and "accelerator.unwrap_model(model, keep_torch_compile=False)" in note, note
    assert not any(n.startswith("load_checkpoint() at line 13") and "every process" in n for n in notes), notes


def test_the_per_process_path_test_is_asked_only_of_writes(monkeypatch):
    """A call that writes nothing is not given to ``per_process_path``, which reads every
    assignment of the function: asked of every call's arguments, it made a long function
    quadratic (13 % of the fixtures' time)."""
    import regcomp_lint.codemod.file_writes as file_writes

    asked = []
    real = file_writes.per_process_path

    def counting(place, path, depth=0):
        asked.append(path)
        return real(place, path, depth)

    monkeypatch.setattr(file_writes, "per_process_path", counting)
    result = _convert("\n".join([*(f"print(loss.item(), {n})" for n in range(40)), "plt.savefig(f'loss_{epoch}.png')"]))
    assert "plt.savefig" in result.text
    assert len(asked) == 1  # the savefig's one argument


LOSS_LOG = """\
import json


class LossLog:
    def __init__(self, path):
        self.path = path
        self.rows = []

    def add(self, step, loss):
        self.rows.append({"step": step, "loss": loss})
        self._flush()

    def _flush(self):
        with open(self.path, "w") as f:
            json.dump(self.rows, f)


"""


def test_an_object_of_the_script_s_class_that_writes_a_file_is_named():
    """dpo_video's ``LossLog`` (survey 21c): ``loss_log.add(...)`` in the loop rewrites
    ``loss_log.json`` through a method of the script's own class, from every process at once."""
    text = LOSS_LOG + SCRIPT.replace(
        "for epoch in range(2):", 'loss_log = LossLog("loss_log.json")\nfor epoch in range(2):'
    )
    text = text.replace("        if i % 4 == 0:\n            SAMPLES\n", "        loss_log.add(i, loss.item())\n")
    result = convert_source(text, "main.py")
    assert result.refused is None, result.refused
    assert any(
        n.startswith(
            "loss_log.add() at line 36 writes the same file from every process (LossLog.add() opens "
            '`open(self.path, "w")` at line 14)'
        )
        for n in result.notes
    ), result.notes
    per_rank = convert_source(text.replace('"loss_log.json"', 'f"loss_log_{rank}.json"'), "main.py")
    assert not any("writes the same file" in n for n in per_rank.notes), per_rank.notes


TRAIN_FUNCTION = """\
import pandas as pd
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train_loop(epochs):
    from ml_logger import logger

    model = nn.Linear(8, 1).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8, shuffle=True)
    for epoch in range(epochs):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        WRITE
    return pd.DataFrame({"epoch": [epochs]})


oof_df = train_loop(2)
oof_df.to_csv("oof_df.csv", index=False)
"""


def test_an_ml_logger_torch_save_is_written_by_the_main_process():
    """survey 21f lucid_act: ``logger.torch_save(policy.state_dict(), path)`` (ml_logger's
    ``ML_Logger.save_torch``, alias ``torch_save``: ``torch.save`` to a temporary file, then the
    log client's ``save_file``) ran in every process; the same content from each (DDP's weights)."""
    source = TRAIN_FUNCTION.replace("WRITE", 'logger.torch_save(model.state_dict(), f"checkpoints/policy_{epoch}.pt")')
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    assert (
        "        if accelerator.is_main_process:\n"
        "            logger.torch_save(accelerator.unwrap_model(model, keep_torch_compile=False).state_dict(), "
        'f"checkpoints/policy_{epoch}.pt")\n'
    ) in result.text
    assert "logger.torch_save() at line 19 runs under `if accelerator.is_main_process:`" in " ".join(result.notes)


def test_a_module_level_write_out_of_the_accelerator_s_reach_is_named():
    """survey 21f hms_eeg: ``oof_df.to_csv(...)`` at module level, after ``train_loop()`` (where
    the Accelerator is made) returns: every process writes it, and no accelerator is in reach there."""
    result = convert_source(TRAIN_FUNCTION.replace("WRITE", "pass"), "train.py")
    assert result.refused is None, result.refused
    assert 'oof_df.to_csv("oof_df.csv", index=False)\n' in result.text
    note = next(n for n in result.notes if "to_csv() at line 24" in n)
    assert "every process" in note and "PartialState().is_main_process" in note


def test_a_call_handed_an_output_file_path_is_named():
    """survey 21f pusht_state_dp: ``evaluate_model(..., out_path=f"log/eval_{epoch}.mp4")`` of a
    module not fetched writes a video per evaluation in every process (what it renders may differ
    between processes: named, not guarded)."""
    source = TRAIN_FUNCTION.replace(
        "        WRITE\n",
        '        results = evaluate_model(model=model, out_path=f"log/eval_{epoch}.mp4", num_envs=4)\n',
    ).replace("import pandas as pd\n", "import pandas as pd\nfrom eval_diffusion import evaluate_model\n")
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    note = next(n for n in result.notes if "evaluate_model() at line 20" in n)
    assert 'out_path=f"log/eval_{epoch}.mp4"' in note and "every process" in note


UNREAD_CLASS = """\
import torch
from utils import CheckpointManager


class Trainer:
    def __init__(self, model):
        self.model = model
        self.checkpoint_manager = CheckpointManager("checkpoints")

    def run(self, loader, epochs=2):
        model = self.model.cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(epochs):
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            self.checkpoint_manager.save_checkpoint(model=model, optimizer=optimizer, epoch=epoch)
"""


@pytest.mark.parametrize("receiver", ["self.checkpoint_manager", "manager"])
def test_a_save_method_of_an_unread_class_handed_the_prepared_model_is_named(tmp_path, receiver):
    """survey 22a mingpt_matching: ``self.checkpoint_manager.save_checkpoint(model=model, ...)`` of a
    ``CheckpointManager`` from ``utils`` (not beside the script) ran in every process and was handed
    the prepared model, with no note."""
    source = UNREAD_CLASS
    if receiver == "manager":
        source = source.replace("self.checkpoint_manager = ", "manager = ").replace(
            "        model = self.model.cuda()\n",
            '        model = self.model.cuda()\n        manager = CheckpointManager("checkpoints")\n',
        )
        source = source.replace("self.checkpoint_manager.save_checkpoint", "manager.save_checkpoint")
    script = tmp_path / "train.py"
    script.write_text(source)
    result = convert_source(source, str(script))
    assert result.refused is None, result.refused
    notes = [n for n in result.notes if n.startswith("CheckpointManager.save_checkpoint() at line ")]
    assert notes, result.notes
    assert any("of utils (not found beside the script" in n for n in notes), notes
    assert any("every process" in n and "is_main_process" in n for n in notes), notes
    assert any("_orig_mod." in n and "unwrap_model(model" in n for n in notes), notes


STAR_UNREAD = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

from utils.save_functions import *


def train(model, optimizer, loader, save_dir):
    save_config({"lr": 0.1}, save_dir)
    for epoch in range(2):
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        visualize(save_dir, loss.item())
        save_checkpoint(save_dir, model, epoch)


model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train(model, optimizer, DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4), "out")
"""


def test_writers_a_star_import_of_an_unread_module_brings_are_named(tmp_path):
    """cpc_libri (survey 23e): ``from utils.save_functions import *`` with no utils/ beside the
    script; ``save_config(cfg, save_dir)`` and ``save_checkpoint(save_dir, model, epoch)`` ran in
    every process with no note. A name the script binds itself, or a read module defines, is not."""
    script = tmp_path / "train.py"
    script.write_text(STAR_UNREAD)
    notes = convert_source(STAR_UNREAD, str(script)).notes
    for call, line in (("save_config", 8), ("save_checkpoint", 16)):
        note = next((n for n in notes if n.startswith(f"{call}() at line {line}, of utils.save_functions ")), None)
        assert note is not None, (call, notes)
        assert "not read" in note and "is_main_process" in note, note
    assert not any(n.startswith("visualize()") for n in notes), notes  # its name does not say it writes
    bound = STAR_UNREAD.replace("def train(", "def save_config(cfg, d):\n    print(cfg)\n\n\ndef train(")
    script.write_text(bound)
    assert not any(n.startswith("save_config()") for n in convert_source(bound, str(script)).notes)
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "save_functions.py").write_text("def save_config(cfg, d):\n    print(cfg)\n")
    script.write_text(STAR_UNREAD)
    assert not any("utils.save_functions (not found" in n for n in convert_source(STAR_UNREAD, str(script)).notes)
