"""What a scheduler's step count is computed from (analysis/step_counts.py), as the training
roles ask it: ``TrainingRoles.sized_from_prepared_loader``, which RC402 reads."""

from __future__ import annotations

import pytest

from tests.test_training_roles import Roles

PREPARED = """\
import math
import torch.distributed as dist
from accelerate import Accelerator
accelerator = Accelerator()
dl = DataLoader(ds)
model, opt, dl = accelerator.prepare(model, opt, dl)
"""


def sized(body: str) -> bool:
    roles = Roles(PREPARED + body)
    return roles.roles.sized_from_prepared_loader(roles.built("sched"))


@pytest.mark.parametrize(
    "body",
    [
        "sched = OneCycleLR(opt, 0.1, total_steps=len(dl) * 3)\n",
        "n = len(dl)\nsched = OneCycleLR(opt, 0.1, total_steps=3 * n)\n",
        "sched = OneCycleLR(opt, 0.1, epochs=3, steps_per_epoch=len(dl))\n",
        # several hops through math.ceil, a division, a product and int()
        "per = math.ceil(len(dl) / accum)\ntotal = per * epochs\nsched = OneCycleLR(opt, 0.1, total_steps=int(total))\n",
        # a field of the arguments, set in one branch of an `if`
        "if args.max_steps is None:\n    args.max_steps = len(dl) * args.epochs\n"
        "sched = OneCycleLR(opt, 0.1, total_steps=args.max_steps)\n",
        # an element of a tuple assignment, a conditional expression
        "steps, warm = len(dl) * 3, 10\nsched = OneCycleLR(opt, 0.1, total_steps=steps if steps else 1)\n",
        # the argument of a helper the count goes through
        "sched = OneCycleLR(opt, 0.1, total_steps=total_steps(len(dl), 3))\n",
        # a product with something that is not the number of processes
        "sched = OneCycleLR(opt, 0.1, total_steps=len(dl) * args.gradient_accumulation_steps)\n",
        # inside a function
        "def main(args):\n    n = len(dl)\n    args.t = n * 2\n    sched = OneCycleLR(opt, 0.1, total_steps=args.t)\n",
    ],
)
def test_a_count_computed_from_the_prepared_loader(body):
    assert sized(body)


@pytest.mark.parametrize(
    "body",
    [
        "sched = OneCycleLR(opt, 0.1, total_steps=1000)\n",
        "sched = OneCycleLR(opt, 0.1, total_steps=args.max_steps)\n",
        # the field is set only after the scheduler is built (run_clm_no_trainer's recomputation)
        "sched = OneCycleLR(opt, 0.1, total_steps=args.max_steps)\nargs.max_steps = len(dl) * 3\n",
        # a field of another object, a field set in another function
        "other.max_steps = len(dl)\nsched = OneCycleLR(opt, 0.1, total_steps=args.max_steps)\n",
        "def f(args):\n    args.max_steps = len(dl)\nsched = OneCycleLR(opt, 0.1, total_steps=args.max_steps)\n",
        # every process's steps: the number of processes, directly, through a name or torch.distributed
        "sched = OneCycleLR(opt, 0.1, total_steps=len(dl) * 3 * accelerator.num_processes)\n",
        "world = accelerator.num_processes\nsched = OneCycleLR(opt, 0.1, total_steps=world * len(dl))\n",
        "n = len(dl) * 3\nt = n * dist.get_world_size()\nsched = OneCycleLR(opt, 0.1, total_steps=t)\n",
        # the optimizer is not followed: the loader it was prepared with is no count
        "sched = StepLR(opt, 10)\n",
    ],
)
def test_a_count_not_computed_from_the_prepared_loader(body):
    assert not sized(body)


def test_the_unprepared_loader_s_length_is_no_prepared_length():
    roles = Roles(
        "from accelerate import Accelerator\naccelerator = Accelerator()\ndl = DataLoader(ds)\nn = len(dl)\n"
        "model, opt, dl = accelerator.prepare(model, opt, dl)\nsched = OneCycleLR(opt, 0.1, total_steps=n * 3)\n"
    )
    assert not roles.roles.sized_from_prepared_loader(roles.built("sched"))


def test_a_trainer_s_own_attribute():
    roles = Roles(
        "from accelerate import Accelerator\nclass T:\n    def __init__(self):\n"
        "        self.acc = Accelerator()\n        self.dl = self.acc.prepare(DataLoader(ds))\n"
        "        self.total = len(self.dl) * 3\n        self.sched = OneCycleLR(opt, 0.1, total_steps=self.total)\n"
    )
    assert roles.roles.sized_from_prepared_loader(roles.built("self.sched"))
