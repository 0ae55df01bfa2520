"""What RC201-RC209 share: reachability, chains, skipped code, prefilters, graph-break ids."""

from __future__ import annotations

import textwrap

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.checks import ALL_RULES
from regcomp_lint.checks.forward_rule import ForwardRule
from regcomp_lint.knowledge import graph_breaks
from regcomp_lint.lint.engine import active_rules

RC2 = [code for code in ALL_RULES if code.startswith("RC2")]


def lint(src: str, *codes: str, filename: str = "model.py"):
    found = lint_source(textwrap.dedent(src), filename)
    return [d for d in found if not codes or d.code in codes]


MODEL = """
import logging
import time
import torch
from torch import nn

logger = logging.getLogger(__name__)

def stats(t):
    print("mean", t.mean())
    return t

class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        if q.abs().max() > 1e3:
            q = q / 1e3
        return stats(q @ k.transpose(-1, -2)) @ v

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
    def forward(self, x, layer_idx):
        if layer_idx > 0:
            x = x * 2
        return x + self.attn(x)

class GPT(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.h = nn.ModuleList([Block() for _ in range(n)])
    def forward(self, idx, targets=None):
        x = idx
        for i, block in enumerate(self.h):
            x = block(x, i)
        if targets is not None and x.shape[0] > 1:
            logger.info("training")
        return x
    def generate(self, idx):
        start = time.time()
        out = self(idx)
        print(out.sum().item(), time.time() - start)
        return out

model = GPT(4)
for step in range(3):
    loss = model(torch.ones(2, 8)).sum()
    print(loss.item())
"""


def test_findings_name_their_chain_and_only_reached_code_is_judged():
    found = {(d.code, d.location.row): d.message for d in lint(MODEL, *RC2)}
    assert set(found) == {("RC202", 19), ("RC203", 10), ("RC203", 41)}
    assert found[("RC202", 19)].endswith("(reached via GPT.forward → Block.forward → Attention.forward)")
    assert found[("RC203", 10)].endswith("(reached via GPT.forward → Block.forward → Attention.forward → stats)")
    assert "GB0291" in found[("RC203", 41)]


def test_generate_and_training_loop_are_not_judged():
    rows = {d.location.row for d in lint(MODEL, *RC2)}
    assert not rows & {46, 47, 48, 50, 51, 52, 53}


@pytest.mark.parametrize(
    "guard,skipped",
    [
        ("if not torch.compiler.is_compiling():", True),
        ("if not torch._dynamo.is_compiling():", True),
        ("if not is_torchdynamo_compiling():", True),
        ("if torch.compiler.is_compiling():\n            pass\n        else:", True),
        ("if torch.compiler.is_compiling():", False),
        ("if self.training:", False),
    ],
)
def test_code_dynamo_skips_is_not_judged(guard, skipped):
    src = f"""
    import torch
    from torch import nn
    from transformers.utils import is_torchdynamo_compiling
    class Net(nn.Module):
        def forward(self, x):
            {guard}
                print(x.sum().item())
            return x
    """
    codes = {d.code for d in lint(src, "RC201", "RC203")}
    assert (codes == set()) is skipped, codes


def test_rc2_rules_need_forward_in_the_file():
    src = "import torch\ndef f(x):\n    print(x.item())\n    return x\n"
    assert not any(r.code in RC2 for r in active_rules(src, ALL_RULES))
    assert lint(src, *RC2) == []


def test_several_rules_share_one_walk_and_each_reports():
    src = """
    import copy
    import random
    import torch
    from torch import nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 4)
        def forward(self, x):
            a = x.sum().item()
            if x.any():
                x = -x
            print(a)
            y = x[x > 0]
            r = random.random()
            c = copy.deepcopy(x)
            p = nn.Parameter(torch.zeros(2))
            torch._dynamo.graph_break()
            out, _ = self.rnn(x)
            return out
    """
    assert sorted(d.code for d in lint(src, *RC2)) == [
        "RC201",
        "RC202",
        "RC203",
        "RC204",
        "RC205",
        "RC206",
        "RC207",
        "RC208",
        "RC209",
    ]


def test_a_rule_alone_still_gets_its_facts():
    """With one RC2xx rule selected it feeds the facts itself."""
    from regcomp_lint.lint.config import Settings

    src = textwrap.dedent(MODEL)
    settings = Settings(select=("RC202",))
    found = [d for d in lint_source(src, "m.py", settings)]
    assert [(d.code, d.location.row) for d in found] == [("RC202", 19)]


def test_graph_break_ids_are_data_and_known_to_the_registry():
    for code in RC2:
        rule = ALL_RULES[code]
        if code == "RC210":
            continue
        assert issubclass(rule, ForwardRule)
        assert rule.graph_break_ids and set(rule.graph_break_ids) <= set(graph_breaks.RULE_BREAKS[code])
        for gb in rule.graph_break_ids:
            assert gb in graph_breaks.REGISTRY, gb
            assert gb in rule.docs(), f"{code} docs do not name {gb}"
    assert graph_breaks.REGISTRY_TORCH_VERSION == graph_breaks.TORCH_VERSION == "2.13.0"
    assert graph_breaks.url("GB0124").endswith("/gb/gb0124.html")
    assert graph_breaks.describe("GB0170") == "GB0170 (Data-dependent branching)"


def test_no_torch_import():
    import subprocess
    import sys

    code = (
        "import sys, textwrap\nfrom regcomp_lint.api import lint_source\n"
        f"lint_source(textwrap.dedent({MODEL!r}), 'model.py')\n"
        "print(sorted(m for m in ('torch', 'transformers', 'accelerate', 'networkx') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"  # nor networkx: the call graph needs no import on the lint path


@pytest.mark.parametrize("code,knob", [(c, k) for c, knobs in graph_breaks.RULE_KNOBS.items() for k in knobs])
def test_every_knob_is_documented_by_its_rule(code, knob):
    setting = knob.split("torch._dynamo.config.", 1)[1].split()[0]
    assert setting in ALL_RULES[code].docs(), f"{code} docs do not mention {setting}"
