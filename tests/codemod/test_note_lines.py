"""Each note of a conversion is one line (codemod/convert.py ``_one_line``): the CLI prints a note
as one ``file: note`` line, and a note quoting code written over several lines (plant_ddpm,
survey26c: ``with open(\\n    OUTPUT_DIR / ...,\\n    "w"\\n)``) printed its continuation lines bare."""

from __future__ import annotations

from regcomp_lint.codemod.convert import _one_line, convert_source

SCRIPT = """\
import json
import torch

def main():
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(2, 4)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with open(
        "summary.json",
        "w"
    ) as f:
        json.dump({"loss": loss.item()}, f)

main()
"""


def test_a_note_quoting_code_of_several_lines_is_one_line():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    quoting = [n for n in result.notes if "with open(" in n]
    assert quoting and all("\n" not in n for n in result.notes), result.notes
    assert 'with open("summary.json", "w")' in quoting[0], quoting[0]


def test_one_line_joins_brackets_without_padding():
    assert _one_line("the `f(\n    a,\n    b,\n)` call") == "the `f(a, b)` call"
    assert _one_line("plain") == "plain"
