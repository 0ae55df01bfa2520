"""RC210 fullgraph-blocked: the model's class may live in another file of the project."""

from __future__ import annotations

import textwrap

from regcomp_lint.api import lint_source


def write(folder, name, text):
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def rc210(path):
    return [d for d in lint_source(path.read_text(), str(path)) if d.code == "RC210"]


LAYERS = """
    import torch
    from torch import nn

    class Block(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                x = -x
            return x
"""
MODEL = """
    from torch import nn
    from .layers import Block

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.h = nn.ModuleList([Block() for _ in range(4)])
        def forward(self, x):
            for block in self.h:
                x = block(x)
            return x
"""


def project(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    write(pkg, "__init__.py", "")
    write(pkg, "layers.py", LAYERS)
    write(pkg, "model.py", MODEL)
    return pkg


def test_break_in_another_file_is_named(tmp_path):
    project(tmp_path)
    train = write(
        tmp_path,
        "train.py",
        """
        import torch
        from pkg.model import GPT
        model = GPT()
        model = torch.compile(model, fullgraph=True)
    """,
    )
    found = rc210(train)
    assert len(found) == 1
    message = found[0].message
    assert "`GPT` breaks the graph at pkg/layers.py:7: RC202 GB0170" in message
    assert message.endswith("(reached via GPT.forward → Block.forward)")
    assert (found[0].location.row, found[0].location.column) == (5, 40)


def test_plugin_with_the_prepared_model_in_a_function(tmp_path):
    project(tmp_path)
    train = write(
        tmp_path,
        "train.py",
        """
        from accelerate import Accelerator
        from accelerate.utils import TorchDynamoPlugin
        from pkg.model import GPT

        def main():
            plugin = TorchDynamoPlugin(backend="inductor", fullgraph=True)
            accelerator = Accelerator(dynamo_plugin=plugin)
            model = GPT().to(accelerator.device)
            model, opt = accelerator.prepare(model, make_optimizer())
    """,
    )
    assert len(rc210(train)) == 1


def test_model_held_by_a_trainer(tmp_path):
    project(tmp_path)
    train = write(
        tmp_path,
        "train.py",
        """
        import torch
        from pkg.model import GPT

        class Trainer:
            def __init__(self):
                self.model = GPT()
            def setup(self):
                self.model = torch.compile(self.model, fullgraph=True)
    """,
    )
    assert len(rc210(train)) == 1


def test_clean_model_and_captured_breaks_are_not_reported(tmp_path):
    pkg = tmp_path / "clean"
    pkg.mkdir()
    write(pkg, "__init__.py", "")
    write(
        pkg,
        "model.py",
        """
        import torch
        from torch import nn
        class Net(nn.Module):
            def forward(self, x):
                n = x.sum().item()        # captured under fullgraph=True
                return x[x > 0] * n       # also captured
    """,
    )
    train = write(
        tmp_path,
        "train.py",
        """
        import torch
        from clean.model import Net
        model = torch.compile(Net(), fullgraph=True)
        other = torch.compile(Net())
    """,
    )
    assert rc210(train) == []


def test_unknown_model_is_not_reported(tmp_path):
    train = write(
        tmp_path,
        "train.py",
        """
        import torch
        from transformers import AutoModel
        model = AutoModel.from_pretrained("gpt2")
        model = torch.compile(model, fullgraph=True)
    """,
    )
    assert rc210(train) == []


def test_more_breaks_are_counted(tmp_path):
    train = write(
        tmp_path,
        "m.py",
        """
        import torch
        from torch import nn
        class Net(nn.Module):
            def forward(self, x):
                print(x.shape)
                torch._dynamo.graph_break()
                return x
        net = torch.compile(Net(), fullgraph=True)
    """,
    )
    (found,) = rc210(train)
    assert "at line 6: RC203 GB0059, print-or-logging (and 1 more)" in found.message
