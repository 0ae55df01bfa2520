"""A loss computed by a part of the model taken by index (``nets["encoder"](x)``, ``model[0](x)``)
is refused (codemod/wrapped_access.py).

A diffusion-policy trainer (survey 21f) keeps its encoders and noise net in an ``nn.ModuleDict``
with no forward() and calls each part by key. Converted, the calls went through
``accelerator.unwrap_model(nets)[...]``: the plain parts, outside DDP, so on two processes no
gradient was synced and the ranks trained apart (replica: weight sums -0.809865 and -0.643358,
the original -0.899406 on both), and outside the compile too.
"""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

SCRIPT = """import torch
import torch.nn as nn


def main():
    nets = nn.ModuleDict({"enc": nn.Linear(4, 4), "head": nn.Linear(4, 1)})
    opt = torch.optim.SGD(nets.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    for x, y in loader:
        h = nets["enc"](x)
        loss = ((nets["head"](h) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(nets.state_dict(), "m.pt")


if __name__ == "__main__":
    main()
"""


def convert(text: str):
    return convert_source(text, "train.py", ConvertOptions())


def test_a_loss_from_parts_of_a_module_dict_is_refused_naming_the_line():
    result = convert(SCRIPT)
    assert result.refused is not None
    assert 'nets["enc"](...) at line 11 runs a part of the model taken by index' in result.refused
    assert "bypass DDP's gradient sync and the compile" in result.refused


def test_a_loss_from_an_item_of_a_sequential_is_refused():
    text = SCRIPT.replace(
        'nn.ModuleDict({"enc": nn.Linear(4, 4), "head": nn.Linear(4, 1)})',
        "nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))",
    )
    text = text.replace('nets["enc"](x)', "nets[0](x)").replace('nets["head"](h)', "nets[1](h)")
    result = convert(text)
    assert result.refused is not None
    assert "nets[0](...) at line 11 runs a part of the model taken by index" in result.refused


def test_an_indexed_part_that_does_not_feed_the_loss_still_converts():
    text = (
        SCRIPT.replace(
            '        h = nets["enc"](x)\n        loss = ((nets["head"](h) - y) ** 2).mean()\n',
            '        loss = ((nets(x) - y) ** 2).mean()\n        with torch.no_grad():\n            feats = nets["enc"](x)\n',
        )
        .replace("nn.ModuleDict(", "nn.Sequential(")
        .replace('{"enc": nn.Linear(4, 4), "head": nn.Linear(4, 1)}', "")
    )
    text = text.replace("nn.Sequential()", "nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))").replace(
        'nets["enc"]', "nets[0]"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "feats = accelerator.unwrap_model(nets, keep_torch_compile=False)[0](x)" in result.text
