"""Experiment trackers log from the main process only (codemod/trackers.py)."""

from __future__ import annotations

from regcomp_lint.codemod.convert import convert_source

SCRIPT = """\
import torch
import wandb
from torch.utils.tensorboard import SummaryWriter


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    wandb.init(project="demo")
    writer = SummaryWriter("runs/demo")
    model = torch.nn.Linear(4, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(2, 4, device=device)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        wandb.log({"loss": loss.item()})
        writer.add_scalar("loss", loss.item(), step)
    wandb.finish()


if __name__ == "__main__":
    main()
"""


def _convert(text: str):
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    return result


def test_wandb_init_after_the_accelerator_starts_one_run_from_the_main_process():
    result = _convert(SCRIPT)
    assert '    wandb.init(project="demo", mode=None if accelerator.is_main_process else "disabled")\n' in result.text
    assert any("wandb.init() at line 8 gets mode=" in note for note in result.notes), result.notes


def test_a_tracker_without_a_switch_is_named_in_a_note():
    result = _convert(SCRIPT)
    assert '    writer = SummaryWriter("runs/demo")\n' in result.text
    assert any("SummaryWriter() at line 9 logs from every process" in note for note in result.notes), result.notes


def test_wandb_init_that_chooses_its_mode_keeps_it_on_the_main_process():
    """lucidrains' enwik8 trainers: ``mode = 'online' if TRACK_EXPERIMENT_ONLINE else 'disabled'``."""
    chosen = _convert(SCRIPT.replace('wandb.init(project="demo")', 'wandb.init(project="demo", mode=args_mode)'))
    assert 'mode=args_mode if accelerator.is_main_process else "disabled")\n' in chosen.text
    conditional = _convert(
        SCRIPT.replace(
            'wandb.init(project="demo")', "wandb.init(project=\"demo\", mode = 'online' if ONLINE else 'disabled')"
        )
    )
    assert (
        "mode = ('online' if ONLINE else 'disabled') if accelerator.is_main_process else \"disabled\")\n"
        in conditional.text
    )


def test_wandb_init_under_a_rank_test_is_left_alone():
    ranked = _convert(
        SCRIPT.replace(
            '    wandb.init(project="demo")\n',
            '    if int(os.environ.get("RANK", 0)) == 0:\n        wandb.init(project="demo")\n',
        ).replace("import torch\n", "import os\n\nimport torch\n", 1)
    )
    assert "is_main_process else" not in ranked.text


def test_a_tracker_built_only_on_the_main_process_by_a_conditional_expression_gets_no_note():
    """Survey 23c (SHOT adaptation of a SwinUNETR under torchrun):
    ``writer = SummaryWriter(...) if is_main_process() else None`` starts one event file; the
    note said every process logs."""
    text = SCRIPT.replace(
        '    writer = SummaryWriter("runs/demo")\n',
        '    writer = SummaryWriter("runs/demo") if int(os.environ.get("RANK", 0)) == 0 else None\n',
    ).replace("import torch\n", "import os\n\nimport torch\n", 1)
    result = _convert(text)
    assert not any("logs from every process" in note for note in result.notes), result.notes
    other = _convert(text.replace('int(os.environ.get("RANK", 0)) == 0', 'os.environ.get("TENSORBOARD")'))
    assert any("SummaryWriter() at line 11 logs from every process" in n for n in other.notes), other.notes
