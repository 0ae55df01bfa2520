"""What a refusal says of an optimizer the conversion cannot recognise (codemod/unknown_optimizers)."""

from __future__ import annotations

import textwrap

import libcst as cst
from libcst.metadata import MetadataWrapper

from regcomp_lint.codemod.tree import Tree, find_all
from regcomp_lint.codemod.unknown_optimizers import unknown_optimizer_of, unrecognised_optimizer


def _tree(text: str) -> Tree:
    return Tree(MetadataWrapper(cst.parse_module(textwrap.dedent(text))))


def test_names_the_call_that_makes_what_is_stepped() -> None:
    tree = _tree(
        """
        def train(model):
            optimizer = get_optimizer(model, config)
            for x in data:
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step_and_update_lr()
        """
    )
    assert unrecognised_optimizer(tree) == (
        "optimizer = get_optimizer(...) at line 3, stepped by optimizer.step_and_update_lr() at line 7, "
        "is not one the conversion can tell is an optimizer"
    )


def test_an_optimizer_kept_on_an_object_of_another_module() -> None:
    tree = _tree("def train(netD):\n    netD.optimizer.step()\n")
    assert unrecognised_optimizer(tree) == (
        "netD.optimizer.step() at line 2 uses an optimizer kept on netD, built where netD's class builds it, "
        "out of the conversion's sight"
    )


def test_the_model_and_nothing_stepped_say_nothing() -> None:
    assert unrecognised_optimizer(_tree("def train(model):\n    model.zero_grad()\n")) == ""
    assert unrecognised_optimizer(_tree("x = 1\n")) == ""


def test_what_a_function_holding_a_backward_steps() -> None:
    tree = _tree("def pretrain(m):\n    opt = make(m)\n    m(1).backward()\n    opt.step()\n")
    holder = next(iter(find_all(tree.module, cst.FunctionDef)))
    assert unknown_optimizer_of(tree, holder) == (
        ": pretrain() steps opt = make(...) at line 2, stepped by opt.step() at line 4, "
        "which the conversion cannot tell is an optimizer"
    )
