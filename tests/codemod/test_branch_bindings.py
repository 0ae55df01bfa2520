"""Objects to prepare that an ``if`` builds on some of its paths only (codemod/branch_bindings.py)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

MUON = """\
import torch
import torch.nn as nn


class Muon(torch.optim.Optimizer):
    def __init__(self, params, lr=0.05, momentum=0.95):
        super().__init__(params, dict(lr=lr, momentum=momentum))

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-g["lr"])


def run(opt_name, steps=4):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    if opt_name == "adamw":
        opts = [torch.optim.AdamW(model.parameters(), lr=1e-3)]
    else:
        hidden = [p for p in model.parameters() if p.ndim == 2]
        rest = [p for p in model.parameters() if p.ndim < 2]
        muon = Muon(hidden, lr=0.02)
        adam = torch.optim.Adam(rest, lr=3e-3)
        opts = [muon, adam]
    for step in range(steps):
        x = torch.randn(8, 4)
        loss = model(x).pow(2).mean()
        loss.backward()
        for o in opts:
            o.step()
        model.zero_grad(set_to_none=True)


if __name__ == "__main__":
    run("muon")
"""


CHOICE = MUON[MUON.index('    if opt_name == "adamw":') : MUON.index("    for step in range(steps):")]


def _with_choice(choice: str, script: str = MUON):
    """The script with another choice of optimizers; it must convert."""
    result = convert_source(script.replace(CHOICE, choice), "micro.py")
    assert result.refused is None, result.refused
    return result


def test_optimizers_built_on_one_branch_only_are_refused_naming_the_if():
    """survey20a micro_muon (without its --bench block): the prepare() after the if named muon and
    adam, unbound on the adamw path: UnboundLocalError at prepare() where the original trained."""
    result = convert_source(MUON, "micro.py")
    assert result.refused is not None, result.text
    assert "muon (line 25), adam (line 26) are built on some paths" in result.refused, result.refused
    assert 'the if at line 20 (opt_name == "adamw")' in result.refused, result.refused
    assert "UnboundLocalError" in result.refused


def test_an_optimizer_built_on_every_branch_still_converts():
    """torchvision's `if opt_name == "sgd": optimizer = ... elif ...: ... else: raise`."""
    result = _with_choice(
        '    if opt_name == "adamw":\n        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\n'
        '    elif opt_name == "muon":\n        optimizer = Muon(model.parameters(), lr=0.02)\n'
        "    else:\n        raise ValueError(opt_name)\n    opts = [optimizer]\n"
    )
    assert "model, optimizer = accelerator.prepare(model, optimizer)" in result.text, result.text


def test_an_optimizer_rebuilt_on_one_branch_after_it_is_built_converts():
    _with_choice(
        "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
        '    if opt_name == "muon":\n        optimizer = Muon(model.parameters(), lr=0.02)\n    opts = [optimizer]\n'
    )


def test_an_optimizer_built_under_a_one_line_if_only_is_prepared_under_it():
    result = convert_source(
        MUON.replace(CHOICE, '    if opt_name == "sgd": optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n'),
        "micro.py",
    )
    assert result.refused is None, result.refused
    assert '    if opt_name == "sgd":\n        optimizer = accelerator.prepare(optimizer)\n' in result.text, result.text


def test_an_optimizer_the_training_needs_on_every_path_converts():
    """`if ...: optimizer = A elif ...: optimizer = B` without an else, and `optimizer.step()` in the
    loop: where no branch matches, the original fails as well (NameError at the step), so the
    conversion fails no earlier than it on any path the original trains on."""
    script = MUON.replace("        for o in opts:\n            o.step()\n", "        optimizer.step()\n")
    result = _with_choice(
        '    if opt_name == "adamw":\n        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\n'
        '    elif opt_name == "muon":\n        optimizer = Muon(model.parameters(), lr=0.02)\n',
        script,
    )
    assert "model, optimizer = accelerator.prepare(model, optimizer)" in result.text, result.text


ARMS = """\
import torch
import torch.nn as nn


def run(arm, steps=4):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    if arm == "F":
        aux_head = nn.Linear(4, 2)
        aux_opt = torch.optim.Adam(aux_head.parameters(), lr=3e-3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(steps):
        x = torch.randn(8, 4)
        loss = model(x).pow(2).mean()
        if arm == "F":
            loss = loss + aux_head(x).pow(2).mean()
        opt.zero_grad()
        if arm == "F":
            aux_opt.zero_grad()
        loss.backward()
        opt.step()
        if arm == "F":
            aux_opt.step()


if __name__ == "__main__":
    run("F")
"""


def test_objects_built_under_a_plain_if_are_prepared_under_the_same_test():
    """fno_ema_arms (survey23h): aux_head and aux_opt exist only when `args.arm == "F"`; they are
    prepared by a second prepare() under the same test, right after the one of the objects every
    path builds (the test's names are not rebound in between, so it picks the same path)."""
    result = convert_source(ARMS, "arms.py")
    assert result.refused is None, result.refused
    assert (
        "    model, opt = accelerator.prepare(model, opt)\n"
        '    if arm == "F":\n'
        "        aux_head, aux_opt = accelerator.prepare(aux_head, aux_opt)\n"
    ) in result.text, result.text


def test_a_test_whose_names_are_rebound_before_the_prepare_is_still_refused():
    """Between the if and the prepare the test may change its value: the second prepare() could
    take the other path than the if did. Refused as before, naming the if."""
    script = ARMS.replace(
        "    opt = torch.optim.Adam(model.parameters(), lr=1e-3)\n",
        '    arm = "A"\n    opt = torch.optim.Adam(model.parameters(), lr=1e-3)\n',
    )
    result = convert_source(script, "arms.py")
    assert result.refused is not None
    assert "aux_head (line 9), aux_opt (line 10) are built on some paths" in result.refused, result.refused


def test_a_test_that_calls_is_still_refused():
    """A call in the test may not answer the same the second time (a random draw, a counter)."""
    script = ARMS.replace('    if arm == "F":\n        aux_head', "    if pick(arm):\n        aux_head", 1)
    result = convert_source(script, "arms.py")
    assert result.refused is not None and "built on some paths" in result.refused, result.refused
