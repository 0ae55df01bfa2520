"""RC402 behaviour beyond the examples: one finding per object, where it points, when the fix
is offered, and how objects are followed (helpers, tuples, wrappers, trainer classes)."""

from __future__ import annotations

from regcomp_lint.api import fix_source, lint_source
from regcomp_lint.diagnostics import Applicability, Location
from regcomp_lint.lint.config import Settings

ONLY = Settings(select=("RC402",))
HEAD = (
    "import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
    "accelerator = Accelerator()\nmodel = torch.nn.Linear(4, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "loader = DataLoader(ds)\n"
)


def rc402(src: str):
    return [d for d in lint_source(src, "train.py", ONLY) if d.code == "RC402"]


def test_one_finding_per_object_at_its_first_use_in_a_loop():
    src = (
        HEAD
        + "model, opt = accelerator.prepare(model, opt)\nfor epoch in range(2):\n    for x in loader:\n        opt.step()\n    for x in loader:\n        pass\n"
    )
    [diag] = rc402(src)
    assert (diag.location, diag.end_location) == (Location(10, 14), Location(10, 20))
    assert (
        diag.message
        == "`loader` (data loader) is used in the training loop but never passed to `accelerator.prepare(...)`"
    )
    assert diag.fix.applicability is Applicability.UNSAFE


def test_fix_needs_unsafe_and_round_trips():
    src = HEAD + "model, opt = accelerator.prepare(model, opt)\nfor x in loader:\n    opt.step()\n"
    assert fix_source(src, config=ONLY)[0] == src
    fixed, remaining = fix_source(src, config=ONLY, unsafe=True)
    assert "model, opt, loader = accelerator.prepare(model, opt, loader)\n" in fixed
    assert remaining == []


def test_no_fix_when_names_do_not_line_up_or_two_prepares_fit():
    src = HEAD + "net, opt = accelerator.prepare(model, opt)\nfor x in loader:\n    opt.step()\n"
    [diag] = rc402(src)
    assert diag.fix is None
    src = (
        HEAD + "model = accelerator.prepare(model)\nopt = accelerator.prepare(opt)\nfor x in loader:\n    opt.step()\n"
    )
    [diag] = rc402(src)
    assert diag.fix is None


def test_no_fix_when_the_object_is_rebound_after_prepare():
    src = (
        HEAD
        + "model, opt = accelerator.prepare(model, opt)\nloader = DataLoader(other)\nfor x in loader:\n    opt.step()\n"
    )
    [diag] = rc402(src)
    assert diag.fix is None


def test_loaders_returned_by_a_helper_are_followed():
    helper = "def loaders():\n    return DataLoader(a), DataLoader(b)\n"
    src = (
        HEAD
        + helper
        + "train, val = loaders()\nval = accelerator.prepare(val)\nfor x in val:\n    pass\nfor x in train:\n    opt.step()\n"
    )
    assert [d.message.split("`")[1] for d in rc402(src)] == ["train", "opt"]


def test_helper_with_two_return_shapes_is_not_guessed():
    helper = (
        "def setup(full):\n    if full:\n        return DataLoader(a), DataLoader(b)\n    return (DataLoader(a),)\n"
    )
    src = HEAD + helper + "train, val = setup(True)\nfor x in val:\n    opt.step()\n"
    assert [d.message.split("`")[1] for d in rc402(src)] == ["opt"]


def test_compiled_and_ddp_wrapped_models_are_still_models():
    src = (
        HEAD
        + "from torch.nn.parallel import DistributedDataParallel as DDP\nnet = DDP(torch.compile(model))\n"
        + ("opt = accelerator.prepare(opt)\nfor x in data:\n    net(x).sum().backward()\n")
    )
    [diag] = rc402(src)
    assert diag.message.startswith("`net` (model)")


def test_trainer_class_attributes():
    src = (
        "import torch\nfrom accelerate import Accelerator\nclass Trainer:\n    def __init__(self, model, loader):\n"
        "        self.accelerator = Accelerator()\n        self.model = model\n        self.loader = loader\n"
        "        self.optimizer = torch.optim.AdamW(model.parameters())\n"
        "        self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, 10)\n"
        "        self.model, self.optimizer, self.loader = self.accelerator.prepare(self.model, self.optimizer, self.loader)\n"
        "    def fit(self):\n        for x in self.loader:\n            self.optimizer.step()\n            self.scheduler.step()\n"
    )
    [diag] = rc402(src)
    assert (
        diag.message
        == "`self.scheduler` (LR scheduler) is used in the training loop but never passed to `self.accelerator.prepare(...)`"
    )
    fixed, _ = fix_source(src, config=ONLY, unsafe=True)
    assert (
        "self.model, self.optimizer, self.loader, self.scheduler = self.accelerator.prepare(self.model, self.optimizer, self.loader, self.scheduler)\n"
        in fixed
    )


def test_eval_then_train_is_not_frozen_but_eval_alone_is():
    loop = "opt = accelerator.prepare(opt)\nfor x in data:\n    model(x)\n    opt.step()\n"
    assert len(rc402(HEAD + "model.eval()\n" + loop)) == 0
    assert len(rc402(HEAD + "model.eval()\nmodel.train()\n" + loop)) == 1


def test_plain_baseline_function_without_an_accelerator_is_not_judged():
    src = "import torch\nfrom accelerate import Accelerator\n" + (
        "def baseline(data):\n    m = torch.nn.Linear(4, 2)\n    o = torch.optim.SGD(m.parameters())\n"
        "    for x in data:\n        m(x).sum().backward()\n        o.step()\n"
        "def main(model, opt):\n    accelerator = Accelerator()\n    model, opt = accelerator.prepare(model, opt)\n"
    )
    assert rc402(src) == []


def test_optimizer_and_scheduler_spellings():
    for head, build, kind in (
        ("import bitsandbytes as bnb\n", "bnb.optim.AdamW8bit(p)", "optimizer"),
        ("from torch.optim import *\n", "Adam(p)", "optimizer"),
        ("from transformers import get_scheduler\n", "get_scheduler('linear', opt)", "LR scheduler"),
        ("from torch.optim.lr_scheduler import OneCycleLR\n", "OneCycleLR(opt, 1.0, 10)", "LR scheduler"),
    ):
        src = (
            "from accelerate import Accelerator\n"
            + head
            + f"acc = Accelerator()\nthing = {build}\ndata = acc.prepare(data)\nfor x in data:\n    thing.step()\n"
        )
        [diag] = rc402(src)
        assert f"({kind})" in diag.message, head


# -- training loaders (analysis.training_loops): what regcomp-fix leaves whole is not reported --
LOADERS = (
    "import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
    "accelerator = Accelerator()\nmodel = torch.nn.Linear(4, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "train_dl = DataLoader(a, shuffle=True)\nval_dl = DataLoader(b)\n"
)
PREPARED = "model, opt = accelerator.prepare(model, opt)\n"


def reported(src: str) -> list[str]:
    return [d.message.split("`")[1] for d in rc402(src)]


def test_only_the_loader_a_backward_loop_iterates_is_reported():
    src = (
        LOADERS
        + PREPARED
        + "for epoch in range(2):\n    for x in train_dl:\n        accelerator.backward(model(x).sum())\n        opt.step()\n"
        "    for x in val_dl:\n        opt.step()\n"  # a step without backward is not training
    )
    assert reported(src) == ["train_dl"]


def test_one_epoch_function_with_train_and_eval_loops_reports_the_train_loader_only():
    src = (
        LOADERS + "def run_epoch(model, opt, train, val):\n"
        "    for x in train:\n        loss = model(x).sum()\n        accelerator.backward(loss)\n        opt.step()\n"
        "    for x in val:\n        model(x)\n"
        + PREPARED
        + "for epoch in range(2):\n    run_epoch(model, opt, train_dl, val=val_dl)\n"
    )
    assert reported(src) == ["train_dl"]


def test_the_step_reached_through_the_files_functions_and_methods():
    step = "def step(model, x):\n    model(x).sum().backward()\n"
    src = LOADERS + step + PREPARED + "for x in val_dl:\n    model(x)\nfor x in train_dl:\n    step(model, x)\n"
    assert reported(src) == ["train_dl"]
    src = (
        "import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
        "class Trainer:\n    def __init__(self):\n        self.accelerator = Accelerator()\n"
        "        self.train_dl = DataLoader(a)\n        self.val_dl = DataLoader(b)\n"
        "    def update(self, x):\n        self.accelerator.backward(x.sum())\n"
        "    def fit(self):\n        for x in self.val_dl:\n            print(x)\n"
        "        for x in self.train_dl:\n            self.update(x)\n"
    )
    assert reported(src) == ["self.train_dl"]


def test_a_loader_passed_on_through_two_functions_is_followed():
    src = (
        LOADERS + "def inner(loader, model):\n    for x in loader:\n        model(x).sum().backward()\n"
        "def outer(model, loader):\n    inner(loader, model)\n"
        + PREPARED
        + "for epoch in range(2):\n    outer(model, train_dl)\n    outer(model, loader=val_dl)\n"
    )
    # both reach inner's backward loop: val_dl through the keyword too
    assert reported(src) == ["train_dl", "val_dl"]


def test_without_any_backward_the_steps_stand_for_training():
    src = LOADERS + PREPARED + "for x in train_dl:\n    opt.step()\nfor x in val_dl:\n    model(x)\n"
    assert reported(src) == ["train_dl"]


def test_a_per_step_scheduler_is_asked_for_only_when_a_loader_is_sharded():
    """What regcomp-fix leaves on purpose (survey 8: mmd, kaggle_fwi): with no training loader
    prepare() shards, every process takes the original's steps and the scheduler stays unprepared."""
    sched = "sched = torch.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=100)\n"
    loop = "    for x in {}:\n        accelerator.backward(model(x).sum())\n        opt.step()\n        sched.step()\n"
    head = LOADERS + sched + PREPARED
    assert reported(head + "def fit(loader):\n" + loop.format("loader")) == []  # unknown: a parameter nobody hands in
    assert reported(head + "for x in range(3):\n" + loop.format("batches(x)")) == []  # the script's own batches
    sharded = LOADERS.replace("shuffle=True", "sampler=torch.utils.data.DistributedSampler(a)")
    assert reported(sharded + sched + PREPARED + "for e in range(2):\n" + loop.format("train_dl")) == []
    prepared = head.replace(PREPARED, "model, opt, train_dl = accelerator.prepare(model, opt, train_dl)\n")
    assert reported(prepared + "for e in range(2):\n" + loop.format("train_dl")) == ["sched"]
    handed = prepared + "def fit(loader):\n" + loop.format("loader") + "fit(train_dl)\n"
    assert reported(handed) == ["sched"]  # the prepared loader, through the call
    unprepared = head + "for e in range(2):\n" + loop.format("train_dl")
    assert reported(unprepared) == ["train_dl", "sched"]  # the loader's fix prepares it: the scheduler too


def test_a_scheduler_stepped_once_per_epoch_is_left_alone():
    sched = "sched = torch.optim.lr_scheduler.StepLR(opt, 1)\n"
    train = "    for x in train_dl:\n        accelerator.backward(model(x).sum())\n        opt.step()\n"
    prepared = "model, opt, train_dl = accelerator.prepare(model, opt, train_dl)\n"
    per_epoch = LOADERS + sched + prepared + "for epoch in range(2):\n" + train + "    sched.step()\n"
    assert reported(per_epoch) == []
    per_step = LOADERS + sched + prepared + "for epoch in range(2):\n" + train + "        sched.step()\n"
    assert reported(per_step) == ["sched"]
    through_a_function = (
        LOADERS
        + sched
        + "def train(model, loader, opt):\n"
        + train.replace("train_dl", "loader")
        + prepared
        + "for epoch in range(2):\n    train(model, train_dl, opt)\n    sched.step()\n"
    )
    assert reported(through_a_function) == []
    assert reported(
        through_a_function.replace("    sched.step()\n", "    for i in range(1):\n        sched.step()\n")
    ) == ["sched"]  # its own loop: stepped per its own iterations, not known to be per epoch


# -- roles shared with regcomp-fix (analysis/training_roles.py) ----------------------------------
def test_an_optimizer_class_of_the_file_is_an_optimizer():
    src = (
        "import torch\nfrom accelerate import Accelerator\nclass Muon(torch.optim.Optimizer):\n    pass\n"
        "accelerator = Accelerator()\nmodel = torch.nn.Linear(4, 2)\nopt = Muon(model.parameters())\n"
        "model = accelerator.prepare(model)\nfor x in data:\n    accelerator.backward(model(x).sum())\n    opt.step()\n"
    )
    [diag] = rc402(src)
    assert diag.message.startswith("`opt` (optimizer)")


def test_a_loader_drawn_with_next_from_an_iterator_trains():
    src = (
        HEAD
        + "model, opt = accelerator.prepare(model, opt)\nit = iter(loader)\nfor step in range(10):\n"
        + "    x = next(it)\n    accelerator.backward(model(x).sum())\n    opt.step()\n"
    )
    [diag] = rc402(src)
    assert diag.message.startswith("`it` (data loader)")


def test_each_call_of_a_loader_factory_is_its_own_loader():
    src = (
        HEAD
        + "def make(ds):\n    return DataLoader(ds)\ntrain_dl = make(a)\nval_dl = make(b)\n"
        + "model, opt, train_dl = accelerator.prepare(model, opt, train_dl)\n"
        + "for x in train_dl:\n    accelerator.backward(model(x).sum())\n    opt.step()\nfor x in val_dl:\n    model(x)\n"
    )
    assert rc402(src) == []
    unprepared = src.replace(
        "model, opt, train_dl = accelerator.prepare(model, opt, train_dl)",
        "model, opt = accelerator.prepare(model, opt)",
    )
    [diag] = rc402(unprepared)
    assert diag.message.startswith("`train_dl` (data loader)")


def test_a_module_no_optimizer_is_fed_is_not_asked_for():
    """survey 8 (emotion): a loss module of the script, ``criterion = LabelSmoothing()``, is no
    model to prepare: regcomp-fix prepares its optimizers' models only."""
    loss = (
        "class LabelSmoothing(torch.nn.Module):\n    def forward(self, logits, y):\n"
        "        return torch.nn.functional.cross_entropy(logits, y, label_smoothing=0.1)\n"
        "criterion = LabelSmoothing()\nhead = torch.nn.Linear(2, 2)\n"
    )
    loop = "for x, y in loader:\n    accelerator.backward(criterion(head(model(x)), y))\n    opt.step()\n"
    prepared = "model, opt, loader = accelerator.prepare(model, opt, loader)\n"
    assert reported(HEAD + loss + prepared + loop) == []  # no optimizer trains the head either
    both = "opt = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=0.1)\n"
    assert reported(HEAD + loss + both + prepared + loop) == ["head"]  # optimized with the model: must be prepared
    alone = (
        HEAD
        + loss.replace("head = torch.nn.Linear(2, 2)\n", "")
        + prepared
        + loop.replace("head(model(x))", "model(x)")
    )
    assert reported(alone) == []
    unknown = alone.replace("opt = torch.optim.SGD(model.parameters(), lr=0.1)", "opt = make_optimizer(cfg)")
    assert reported(unknown) == ["criterion"]  # the optimizer's models are unknown: any model may train
    # the optimizer's model is of a class the roles cannot see (a star import), but it is built
    # by a call of its own: the loss module is not it (Kaggle UNet3D: `from utils import *`)
    star = alone.replace("model = torch.nn.Linear(4, 2)", "from unet_utils import *\nmodel = UNet(4, 2).to(device)")
    assert "UNet(4, 2)" in star
    assert reported(star) == []
    aliased = star.replace("model = UNet(4, 2).to(device)", "model = UNet(4, 2)\nmodel = criterion")
    assert reported(aliased) == ["criterion"]  # bound to a name: maybe the loss module itself
    # the step in a training function handed the optimizer: followed to what its caller hands it
    handed = star.replace(
        loop.replace("head(model(x))", "model(x)"),
        "def train_one_epoch(model, optimizer, loader):\n"
        "    for x, y in loader:\n"
        "        accelerator.backward(criterion(model(x), y))\n        optimizer.step()\n"
        "train_one_epoch(model, opt, loader)\n",
    )
    assert "def train_one_epoch" in handed
    assert reported(handed) == []


# -- a scheduler sized from the prepared loader's length, followed through the file's values ----
SIZED_HEAD = (
    "import math\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
    "from transformers import AutoModelForCausalLM, get_scheduler\n"
)
SIZED_LOOP = (
    "for epoch in range(3):\n    for step, batch in enumerate(loader):\n"
    "        accelerator.backward(model(**batch).loss)\n        optimizer.step()\n        sched.step()\n"
)
PREPARE_ALL = "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"


def sized(steps: str, before: str = "", after: str = "", prepare: str = PREPARE_ALL, indent: str = "") -> str:
    """A script whose scheduler is built after ``prepare`` with ``steps`` training steps;
    ``before``/``after``: lines before and after ``prepare``; ``indent``: inside ``def main()``."""
    body = (
        "accelerator = Accelerator()\nmodel = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)\nloader = DataLoader(ds, shuffle=True)\n"
        + before
        + prepare
        + after
        + f"sched = get_scheduler('linear', optimizer, num_warmup_steps=0, num_training_steps={steps})\n"
        + SIZED_LOOP
    )
    if indent:
        body = "def main(args):\n" + "".join(indent + line + "\n" for line in body.splitlines()) + "main(parse())\n"
    return "import torch\n" + SIZED_HEAD + body


def test_a_scheduler_sized_from_the_prepared_loader_through_a_name_is_left_unprepared():
    """transformers' run_clm_no_trainer (and the other *_no_trainer examples): the training steps
    are computed from the prepared loader's length into a name, then the scheduler is built."""
    assert reported(sized("len(loader) * 3")) == []  # inline: already known
    assert reported(sized("3 * n", after="n = len(loader)\n")) == []
    assert reported(sized("3 * n", after="n = len(loader)\n", indent="    ")) == []
    # several hops, math.ceil, a division and a multiplication
    hops = "per_epoch = math.ceil(len(loader) / accum)\ntotal = epochs * per_epoch\nsteps = total\n"
    assert reported(sized("steps", after=hops)) == []
    assert reported(sized("int(steps)", after=hops, indent="    ")) == []


def test_a_scheduler_sized_through_an_attribute_of_the_arguments_is_left_unprepared():
    """``args.max_train_steps``, set in an ``if`` after prepare (old run_clm_no_trainer)."""
    after = (
        "num_update_steps_per_epoch = math.ceil(len(loader) / args.gradient_accumulation_steps)\n"
        "if args.max_train_steps is None:\n"
        "    args.max_train_steps = args.num_train_epochs * num_update_steps_per_epoch\n"
        "else:\n"
        "    args.num_train_epochs = math.ceil(args.max_train_steps / num_update_steps_per_epoch)\n"
    )
    assert reported(sized("args.max_train_steps", after=after, indent="    ")) == []
    assert reported(sized("cfg.max_train_steps", after=after.replace("args", "cfg"))) == []  # module level


def test_a_scheduler_sized_before_prepare_or_from_a_constant_is_still_reported():
    assert reported(sized("3 * n", before="n = len(loader)\n")) == ["sched"]
    assert reported(sized("3 * n", before="n = len(loader)\n", indent="    ")) == ["sched"]
    assert reported(sized("1000")) == ["sched"]
    assert reported(sized("steps", after="steps = 1000\n")) == ["sched"]
    assert reported(sized("args.max_train_steps", indent="    ")) == ["sched"]  # the user's count
    # the name read is bound again after the scheduler is built: what it held then decides
    src = sized("steps", after="steps = 1000\n")
    late = src.replace("num_training_steps=steps)\n", "num_training_steps=steps)\nsteps = len(loader) * 3\n")
    assert late != src
    assert reported(late) == ["sched"]
    assert reported(sized("1000", after="n = len(loader)\n")) == ["sched"]  # the length is not what sizes it


def test_a_scheduler_sized_for_every_process_is_still_reported():
    """``* accelerator.num_processes``: the count of every process's steps, which a prepared
    scheduler takes (stepped once per process); unprepared, it would decay N times too slowly."""
    assert reported(sized("len(loader) * 3 * accelerator.num_processes")) == ["sched"]
    after = "n = len(loader)\ntotal = 3 * n\n"
    assert reported(sized("total * accelerator.num_processes", after=after)) == ["sched"]
    assert reported(sized("world", after=after + "world = total * accelerator.num_processes\n")) == ["sched"]


NEWER_CLM = (
    "    accelerator = Accelerator()\n    model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
    "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)\n"
    "    train_dataloader = DataLoader(ds, shuffle=True)\n    eval_dataloader = DataLoader(ev)\n"
    "    overrode_max_train_steps = False\n"
    "    num_update_steps_per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)\n"
    "    if args.max_train_steps is None:\n"
    "        args.max_train_steps = args.num_train_epochs * num_update_steps_per_epoch\n"
    "        overrode_max_train_steps = True\n"
    "    lr_scheduler = get_scheduler(\n        name=args.lr_scheduler_type,\n        optimizer=optimizer,\n"
    "        num_warmup_steps=args.num_warmup_steps * accelerator.num_processes,\n"
    "        num_training_steps=args.max_train_steps\n        if overrode_max_train_steps\n"
    "        else args.max_train_steps * accelerator.num_processes,\n    )\n"
    "    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = accelerator.prepare(\n"
    "        model, optimizer, train_dataloader, eval_dataloader, lr_scheduler\n    )\n"
    "    num_update_steps_per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)\n"
    "    if overrode_max_train_steps:\n"
    "        args.max_train_steps = args.num_train_epochs * num_update_steps_per_epoch\n"
    "    args.num_train_epochs = math.ceil(args.max_train_steps / num_update_steps_per_epoch)\n"
    "    for epoch in range(args.num_train_epochs):\n        model.train()\n"
    "        for step, batch in enumerate(train_dataloader):\n"
    "            with accelerator.accumulate(model):\n                accelerator.backward(model(**batch).loss)\n"
    "                optimizer.step()\n                lr_scheduler.step()\n                optimizer.zero_grad()\n"
)


def test_newer_run_clm_no_trainer_prepares_its_scheduler_sized_before_prepare():
    """Newer transformers build the scheduler from the unprepared loader's length (or the user's
    count times ``num_processes``) and prepare it; ``args.max_train_steps`` is recomputed after
    ``prepare``, once the scheduler is built: that later value does not size it."""
    src = "import torch\n" + SIZED_HEAD + "def main(args):\n" + NEWER_CLM + "main(parse())\n"
    assert reported(src) == []
    left_out = src.replace(", lr_scheduler = accelerator.prepare(", " = accelerator.prepare(").replace(
        "eval_dataloader, lr_scheduler\n", "eval_dataloader\n"
    )
    assert left_out != src
    assert reported(left_out) == ["lr_scheduler"]


def test_a_model_handed_before_training_to_a_helper_that_trains_nothing_is_not_reported():
    """gte_lora (survey 20b): ``heads = classifier_modules(base_model)`` reads the names of the
    model that ``get_peft_model(base_model, ...)`` then wraps and the script prepares; before, RC402
    said ``base_model`` was "used in the training loop"."""
    src = (
        "import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
        "def heads_of(m):\n    return [n for n, _ in m.named_modules()]\n"
        "def wrap(m):\n    return m\n"
        "accelerator = Accelerator()\nbase = torch.nn.Linear(4, 2)\nheads = heads_of(base)\nmodel = wrap(base)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nloader = DataLoader(ds)\n"
        "model, opt, loader = accelerator.prepare(model, opt, loader)\n"
        "for x in loader:\n    accelerator.backward(model(x).sum())\n    opt.step()\n"
    )
    assert rc402(src) == []


def test_a_model_handed_before_the_loop_to_a_helper_that_trains_it_is_reported():
    src = (
        "import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
        "def fit(m, opt, loader):\n    for x in loader:\n        accelerator.backward(m(x).sum())\n        opt.step()\n"
        "accelerator = Accelerator()\nmodel = torch.nn.Linear(4, 2)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nloader = DataLoader(ds)\n"
        "opt, loader = accelerator.prepare(opt, loader)\nfit(model, opt, loader)\n"
    )
    assert [d.message.split("`")[1] for d in rc402(src)] == ["model"]


def test_the_loader_of_a_flag_s_evaluation_branch_is_not_reported():
    """``data_pass(epoch, train)`` binds ``loader`` to ``train_loader`` under ``if train:`` and to
    ``test_loader`` otherwise, and trains only under ``if train:`` (survey24b mdrnn): with
    ``train_loader`` prepared, ``test_loader`` is an evaluation loader left whole on purpose."""
    src = (
        "import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
        "accelerator = Accelerator()\nmodel = torch.nn.Linear(4, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "train_loader = DataLoader(ds)\ntest_loader = DataLoader(ds)\n"
        "model, opt, train_loader = accelerator.prepare(model, opt, train_loader)\n"
        "def data_pass(epoch, train):\n    if train:\n        loader = train_loader\n    else:\n"
        "        loader = test_loader\n    for x in loader:\n        if train:\n"
        "            accelerator.backward(model(x).sum())\n            opt.step()\n"
        "data_pass(0, True)\ndata_pass(0, False)\n"
    )
    assert rc402(src) == []
    assert (
        len(
            rc402(
                src.replace(
                    ", train_loader = accelerator.prepare(model, opt, train_loader)",
                    " = accelerator.prepare(model, opt)",
                )
            )
        )
        == 1
    )


MAIN_ONLY_STEP = (
    HEAD + "sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 100)\n"
    "model, opt, loader = accelerator.prepare(model, opt, loader)\n"
    "for x in loader:\n    accelerator.backward(model(x).sum())\n    opt.step()\n"
    "    if accelerator.is_main_process:\n        sched.step()\n"
)


def test_a_scheduler_stepped_by_the_main_process_alone_gets_its_own_message_and_no_fix():
    """pdiff (survey 25d): preparing the scheduler does not move the other processes' LR."""
    [diag] = rc402(MAIN_ONLY_STEP)
    assert diag.message == (
        "`sched` (LR scheduler) is stepped by the main process alone (under a test of the rank), so on "
        "every other process the learning rate never moves and the ranks train apart: step it on every "
        "process, then pass it to `accelerator.prepare(...)`"
    )
    assert diag.fix is None
    assert fix_source(MAIN_ONLY_STEP, config=ONLY, unsafe=True)[0] == MAIN_ONLY_STEP


def test_a_scheduler_stepped_on_every_process_keeps_the_prepare_message():
    src = MAIN_ONLY_STEP.replace("    if accelerator.is_main_process:\n        sched.step()\n", "    sched.step()\n")
    [diag] = rc402(src)
    assert "never passed to `accelerator.prepare(...)`" in diag.message
    assert diag.fix is not None
