"""RC402 unprepared-object."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.accelerate_script import key_expr
from regcomp_lint.analysis.bindings import Where, binding_key
from regcomp_lint.analysis.main_process import main_process_only
from regcomp_lint.analysis.training_objects import Kind, is_module_class
from regcomp_lint.analysis.training_roles import Cadence, Origin, Use
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.checks.text_edits import append_keyword
from regcomp_lint.diagnostics import Applicability, Edit, Fix, Severity

#: How the loop uses an object, and which kinds of object that use means.
USES = {
    "called": (Kind.MODEL,),
    "stepped": (Kind.OPTIMIZER, Kind.SCHEDULER),
    "iterated": (Kind.DATALOADER,),
    "passed": tuple(Kind),
}


class UnpreparedObject(Rule):
    """## What it does
    Reports a model, optimizer, data loader or LR scheduler that an Accelerate script uses in its
    training loop but never passes to `accelerator.prepare(...)` (or `prepare_model`,
    `prepare_optimizer`, `prepare_data_loader`, `prepare_scheduler`).

    Objects are recognised by how they are built: `torch.optim.*`, `bitsandbytes`, transformers'
    and apex optimizers; `DataLoader(...)`; `torch.optim.lr_scheduler.*` and transformers'
    `get_*_schedule*` factories; models from transformers (`from_pretrained`, `from_config`,
    constructor), diffusers, `torchvision.models`, `timm.create_model`, `nn.Sequential`-style
    torch layers and `nn.Module` subclasses defined in the file. "Used in the training loop"
    means, inside a `for`/`while` body: a model is called, an optimizer or scheduler is
    `.step()`ped or `.zero_grad()`ed, or any of them is passed to a function of the same file
    (outside a loop, a model counts only where that function reaches the training step: not
    `heads = classifier_modules(base_model)` before `get_peft_model(base_model, ...)`).
    A data loader counts when it feeds training: iterated (also through `enumerate`, `tqdm`,
    `zip`, `iter`) by a loop that reaches a `.backward(...)` call (directly or through the
    file's own functions), or passed to a function of the file whose such loop iterates it; an
    evaluation loader iterated only by loops without a backward pass may stay whole (unsharded,
    as `regcomp-fix` leaves it), and so may one a loop reaches only on the evaluation branch of a
    flag of its function (`if train: loader = train_loader` / `else: loader = test_loader`, with the
    step under `if train:`): the loader of the training branch is the one judged. Likewise a scheduler stepped once per epoch (its `.step()` in a
    loop around the one where its optimizer steps, followed through the file's functions) is not
    reported: prepared, it would step once per process. Nor is one stepped with a value
    (`scheduler.step(val_loss)` of a `ReduceLROnPlateau`): prepared, it would take the metric once
    per process and run out of patience that many times faster. Nor is any scheduler of a
    training loop that iterates no loader `prepare` shards (full-batch training, batches the script
    draws in `for it in range(max_iters)`, a loader its own `DistributedSampler` shards, one whose
    origin is unknown, such as a parameter no call of the file hands in): every process takes all
    the steps, and prepared, the scheduler would step once per process at each. Nor is a per-step
    scheduler of a loop whose number of steps a counter fixes (`while global_step < total_steps:`
    around the loader loop, `while not done:` whose `done = True` an `if global_step >= max_steps:`
    sets, `for step in range(max_steps):` drawing `next(data_iter)`): each
    process takes the original's steps over its shard, so prepared, its schedule would run out
    part-way. Nor is a loader fed a `DistributedSampler` (`sampler=` or
    `batch_sampler=`, directly, positionally, through a name bound on either branch of an `if`, or
    inside the `**kwargs` dict it is given): it already gives each rank its own shard, and
    `prepare` would shard it again. Nor is a scheduler sized from the length of an already
    prepared loader (`len(train_dl) * epochs` after `prepare`): it counts one process's steps, and
    prepared it would step once per process. The length is followed through the values the
    scheduler's arguments are computed from: names, `self.` attributes and fields such as
    `args.max_train_steps` assigned before it (in either branch of an `if`), `math.ceil`,
    division and products (transformers' `*_no_trainer` examples); a product with the number of
    processes (`* accelerator.num_processes`) counts every process's steps and is still reported. Names are followed through assignments, `.to(device)`-style
    calls, DDP and `torch.compile` wrappers, `iter(...)`, tuple unpacking and local functions that return
    the object. The roles come from `analysis/training_roles.py`, the model `regcomp-fix` reads too.

    Only files that train are checked: some `.backward(...)` or `.step()` call must occur (a
    loop that only calls a model is inference). Not reported: frozen models
    (`requires_grad_(False)`, or `.eval()` outside any loop and no `.train()`), as diffusers
    scripts keep their VAE and text encoder, and models only ever called under `torch.no_grad()`
    (a DQN's target network, a distillation teacher); modules whose parameters no optimizer of the
    file is fed, when every optimizer's models are known (a loss module, `criterion =
    LabelSmoothing()`); objects reached only through parameters; loops
    where no accelerator is in sight (a plain-PyTorch baseline beside the Accelerate code);
    files with a `prepare(*objects)` call (what it prepares is unknown); a scheduler stepped only in
    a loop that does not train (`for _ in range(start_epoch): scheduler.step()` on resume); a
    submodule called through `self.` inside its own model's methods.

    A scheduler stepped by the main process alone (`if accelerator.is_main_process:
    scheduler.step()`) is reported with that message and no fix: prepared or not, the other
    processes' learning rate never moves, so the step must leave the rank test first.

    ## Why is this bad
    `prepare` is what makes the script distributed and compiled: it moves the model to the
    right device, wraps it in DDP/FSDP/DeepSpeed and, with a `TorchDynamoPlugin`, compiles it;
    it wraps the optimizer so gradient accumulation and fp16 scaling work; it shards the data
    loader across processes and puts batches on the device; and it makes the scheduler step in
    line with the optimizer. An object left out trains every process on the whole data set,
    runs uncompiled, or steps its learning rate at the wrong pace -- all silently.

    ## Example
    ```python
    model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)
    for batch in train_loader:
        ...
        scheduler.step()
    ```

    ## Use instead
    ```python
    model, optimizer, train_loader, scheduler = accelerator.prepare(model, optimizer, train_loader, scheduler)
    ```

    ## Fix safety
    Unsafe: preparing an object changes what it does. A sharded loader yields fewer batches per
    process. A prepared scheduler skips the steps where gradients accumulate and, unless
    `split_batches=True`, steps once per process on every optimizer step, so its total steps
    must count the whole data set (`len(loader)` taken before `prepare`); a scheduler built
    from the prepared loader's length is then stepped too fast. The fix adds
    the object to the arguments and the assignment targets of the one `a, b = X.prepare(a, b)`
    call whose targets and arguments are the same names, when the object's name already holds
    it there and is not rebound before the loop. Otherwise there is no fix: create the object
    before `prepare` and add it by hand.

    ## References
    - [`Accelerator.prepare`](https://huggingface.co/docs/accelerate/package_reference/accelerator#accelerate.Accelerator.prepare)
    - [Accelerate: migrating your code](https://huggingface.co/docs/accelerate/basic_tutorials/migration)
    """

    code = "RC402"
    name = "unprepared-object"
    severity = Severity.ERROR
    message = "used in the training loop but never passed to `accelerator.prepare(...)`"
    triggers = ("Accelerator",)
    fix_applicability = Applicability.UNSAFE

    valid = [
        "import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
        "accelerator = Accelerator()\nmodel = torch.nn.Linear(4, 2)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "loader = DataLoader(ds, batch_size=8)\nmodel, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for x, y in loader:\n    accelerator.backward(loss_fn(model(x), y))\n    optimizer.step()\n    optimizer.zero_grad()\n",
        # resumed through a helper that hands back the caller's own model and optimizer (brats_diff)
        "import torch\nfrom accelerate import Accelerator\n"
        "def load_ckp(path, model, optimizer):\n    ckpt = torch.load(path)\n    optimizer.load_state_dict(ckpt['opt'])\n"
        "    return model, optimizer, ckpt['epoch']\n"
        "def main(resume=None):\n    accelerator = Accelerator()\n    model = torch.nn.Linear(4, 1)\n"
        "    optimizer = torch.optim.AdamW(model.parameters())\n    if resume:\n"
        "        model, optimizer, epoch = load_ckp(resume, model, optimizer)\n"
        "    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "    for x in loader:\n        accelerator.backward(model(x).sum())\n        optimizer.step()\n",
        # prepared one at a time, under other names
        "import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\nacc = Accelerator()\n"
        "net = acc.prepare_model(torch.nn.Linear(4, 2))\nopt = torch.optim.AdamW(net.parameters())\nopt = acc.prepare_optimizer(opt)\n"
        "dl = acc.prepare_data_loader(DataLoader(ds))\nfor x in dl:\n    net(x)\n    opt.step()\n",
        # a plain PyTorch script
        "import torch\nfrom torch.utils.data import DataLoader\nmodel = torch.nn.Linear(4, 2)\nfor x in DataLoader(ds):\n    model(x)\n",
        # a DQN's target network: only ever called under torch.no_grad(), copied from the trained one
        "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\nq_net = torch.nn.Linear(4, 2)\n"
        "target_net = torch.nn.Linear(4, 2)\nopt = torch.optim.Adam(q_net.parameters())\n"
        "q_net, opt = accelerator.prepare(q_net, opt)\nfor obs in env_steps():\n    with torch.no_grad():\n"
        "        target = target_net(obs).max(1)[0]\n    accelerator.backward((q_net(obs).max(1)[0] - target).pow(2).mean())\n"
        "    opt.step()\n",
        # a frozen model (diffusers' text encoder), a loss module
        "from accelerate import Accelerator\nfrom torch import nn\nfrom transformers import CLIPTextModel\naccelerator = Accelerator()\n"
        "text_encoder = CLIPTextModel.from_pretrained('x')\ntext_encoder.requires_grad_(False)\ncriterion = nn.MSELoss()\n"
        "for batch in loader:\n    h = text_encoder(batch['ids'])\n    criterion(h, batch['y'])\n",
        # an inference loop: nothing in the file trains
        "import torch\nfrom accelerate import Accelerator\nacc = Accelerator()\nmodel = torch.nn.Linear(4, 2)\nfor x in data:\n    print(model(x))\n",
        # used outside any loop
        "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\nmodel = torch.nn.Linear(4, 2)\nprint(model(x))\n",
        # a trainer class that prepares in another method
        "import torch\nfrom accelerate import Accelerator\nclass Trainer:\n    def __init__(self):\n        self.accelerator = Accelerator()\n"
        "        self.model = torch.nn.Linear(4, 2)\n        self.model = self.accelerator.prepare(self.model)\n"
        "    def fit(self, loader):\n        for x in loader:\n            self.model(x)\n",
        # evaluation loaders iterated by loops without a backward pass, directly or in a function
        # of the file, stay whole: regcomp-fix leaves them unprepared on purpose
        "from accelerate import Accelerator\nfrom torch.utils.data import DataLoader\nacc = Accelerator()\n"
        "train_dl = DataLoader(train_ds, shuffle=True)\neval_dl = DataLoader(eval_ds)\n"
        "def test(model, loader):\n    for batch in loader:\n        model(batch)\n"
        "model, optimizer, train_dl = acc.prepare(model, optimizer, train_dl)\n"
        "for epoch in range(3):\n    for batch in train_dl:\n        acc.backward(model(batch).loss)\n"
        "    for batch in eval_dl:\n        evaluate(batch)\n    test(model, eval_dl)\n",
        # a submodule called in a loop of its model's own forward (a time-sequence model's head)
        "import torch\nfrom torch import nn\nfrom accelerate import Accelerator\nclass Seq(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.cell = nn.Linear(1, 8)\n"
        "    def forward(self, x):\n        for t in x.chunk(4, dim=1):\n            h = self.cell(t)\n        return h[0]\n"
        "acc = Accelerator()\nseq = Seq()\nopt = torch.optim.SGD(seq.parameters())\nseq, opt = acc.prepare(seq, opt)\n"
        "for x in data:\n    acc.backward(seq(x).sum())\n    opt.step()\n",
        # a per-epoch scheduler fast-forwarded on resume, in a loop that does not train
        "import torch\nfrom accelerate import Accelerator\nacc = Accelerator()\nmodel = torch.nn.Linear(4, 2)\n"
        "opt = torch.optim.SGD(model.parameters())\nsched = torch.optim.lr_scheduler.StepLR(opt, 1)\n"
        "model, opt, dl = acc.prepare(model, opt, dl)\nfor _ in range(start_epoch):\n    sched.step()\n"
        "for epoch in range(9):\n    for x in dl:\n        acc.backward(model(x).sum())\n        opt.step()\n    sched.step()\n",
        # a scheduler sized from the prepared (sharded) loader: one process's steps, left unprepared
        "from accelerate import Accelerator\nfrom transformers import get_linear_schedule_with_warmup\nacc = Accelerator()\n"
        "model, opt, dl = acc.prepare(model, opt, dl)\nsched = get_linear_schedule_with_warmup(opt, 100, len(dl) * 3)\n"
        "for batch in dl:\n    acc.backward(model(**batch).loss)\n    opt.step()\n    sched.step()\n",
        # the same, through the values it is computed from (transformers' run_clm_no_trainer)
        "import math\nfrom accelerate import Accelerator\nfrom transformers import get_scheduler\nacc = Accelerator()\n"
        "model, opt, dl = acc.prepare(model, opt, dl)\nper_epoch = math.ceil(len(dl) / args.gradient_accumulation_steps)\n"
        "if args.max_train_steps is None:\n    args.max_train_steps = args.num_train_epochs * per_epoch\n"
        "sched = get_scheduler('linear', opt, num_warmup_steps=0, num_training_steps=args.max_train_steps)\n"
        "for batch in dl:\n    acc.backward(model(**batch).loss)\n    opt.step()\n    sched.step()\n",
        # a torchrun script's loader sharded by its own DistributedSampler (what regcomp-fix keeps)
        "import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "acc = Accelerator()\nmodel = torch.nn.Linear(4, 2)\nopt = torch.optim.SGD(model.parameters())\n"
        "sampler = DistributedSampler(ds) if ddp else None\nloader = DataLoader(ds, sampler=sampler)\n"
        "model, opt = acc.prepare(model, opt)\nfor x in loader:\n    acc.backward(model(x).sum())\n    opt.step()\n",
        # full-batch training: no loader to shard, every process takes all the steps, so the
        # per-step scheduler steps once per step unprepared (prepared, it would step once per process)
        "import torch\nfrom accelerate import Accelerator\nacc = Accelerator()\nmodel = torch.nn.Linear(4, 2)\n"
        "opt = torch.optim.Adam(model.parameters())\nsched = torch.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=50)\n"
        "model, opt = acc.prepare(model, opt)\nfor it in range(50):\n    acc.backward(model(x).pow(2).mean())\n"
        "    opt.step()\n    sched.step()\n",
        # prepared through a starred argument: unknown, so silent
        "import torch\nfrom accelerate import Accelerator\nacc = Accelerator()\nopt = torch.optim.SGD(p)\nobjs = acc.prepare(*things)\n"
        "for x in data:\n    opt.step()\n",
    ]
    invalid = [
        # the classic: the scheduler is left out
        Invalid(
            "import torch\nfrom accelerate import Accelerator\nfrom transformers import AutoModelForCausalLM, get_cosine_schedule_with_warmup\n"
            "accelerator = Accelerator()\nmodel = AutoModelForCausalLM.from_pretrained('gpt2')\n"
            "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)\nscheduler = get_cosine_schedule_with_warmup(optimizer, 10, 100)\n"
            "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
            "for batch in loader:\n    accelerator.backward(model(**batch).loss)\n    optimizer.step()\n    scheduler.step()\n",
            fixed="import torch\nfrom accelerate import Accelerator\nfrom transformers import AutoModelForCausalLM, get_cosine_schedule_with_warmup\n"
            "accelerator = Accelerator()\nmodel = AutoModelForCausalLM.from_pretrained('gpt2')\n"
            "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)\nscheduler = get_cosine_schedule_with_warmup(optimizer, 10, 100)\n"
            "model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)\n"
            "for batch in loader:\n    accelerator.backward(model(**batch).loss)\n    optimizer.step()\n    scheduler.step()\n",
            message="`scheduler` (LR scheduler)",
        ),
        # evaluated under no_grad, but trained too: not frozen
        Invalid(
            "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\nnet = torch.nn.Linear(4, 2)\n"
            "opt = torch.optim.Adam(net.parameters())\nopt = accelerator.prepare(opt)\nfor x in batches():\n"
            "    with torch.no_grad():\n        net(x)\n    accelerator.backward(net(x).sum())\n    opt.step()\n",
            fixed="import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\nnet = torch.nn.Linear(4, 2)\n"
            "opt = torch.optim.Adam(net.parameters())\nopt, net = accelerator.prepare(opt, net)\nfor x in batches():\n"
            "    with torch.no_grad():\n        net(x)\n    accelerator.backward(net(x).sum())\n    opt.step()\n",
            message="`net` (model)",
        ),
        # the training loader left out (the eval loader may stay whole); a multi-line prepare keeps its layout
        Invalid(
            "from accelerate import Accelerator\nfrom torch.utils.data import DataLoader\nacc = Accelerator()\n"
            "train_dl = DataLoader(train_ds, shuffle=True)\neval_dl = DataLoader(eval_ds)\n"
            "model, optimizer = acc.prepare(\n    model,\n    optimizer,\n)\n"
            "for epoch in range(3):\n    for i, batch in enumerate(train_dl):\n        acc.backward(model(batch).loss)\n    for batch in eval_dl:\n        evaluate(batch)\n",
            fixed="from accelerate import Accelerator\nfrom torch.utils.data import DataLoader\nacc = Accelerator()\n"
            "train_dl = DataLoader(train_ds, shuffle=True)\neval_dl = DataLoader(eval_ds)\n"
            "model, optimizer, train_dl = acc.prepare(\n    model,\n    optimizer,\n    train_dl,\n)\n"
            "for epoch in range(3):\n    for i, batch in enumerate(train_dl):\n        acc.backward(model(batch).loss)\n    for batch in eval_dl:\n        evaluate(batch)\n",
            message="`train_dl` (data loader)",
        ),
        # a model of the file's own nn.Module class, moved by hand and never prepared;
        # a single-name prepare target grows into a tuple
        Invalid(
            "import torch\nimport torch.nn as nn\nfrom accelerate import Accelerator\n"
            "class Net(nn.Module):\n    def forward(self, x):\n        return x\n"
            "def main():\n    accelerator = Accelerator()\n    model = Net().to(accelerator.device)\n"
            "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n    optimizer = accelerator.prepare(optimizer)\n"
            "    while True:\n        out = model(x)\n        optimizer.step()\n",
            fixed="import torch\nimport torch.nn as nn\nfrom accelerate import Accelerator\n"
            "class Net(nn.Module):\n    def forward(self, x):\n        return x\n"
            "def main():\n    accelerator = Accelerator()\n    model = Net().to(accelerator.device)\n"
            "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n    optimizer, model = accelerator.prepare(optimizer, model)\n"
            "    while True:\n        out = model(x)\n        optimizer.step()\n",
            message="`model` (model)",
        ),
        # the helper hands back its own new optimizer, not the caller's: that one is not prepared
        Invalid(
            "import torch\nfrom accelerate import Accelerator\n"
            "def rebuild(model, optimizer):\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "    return model, optimizer\n"
            "def main():\n    accelerator = Accelerator()\n    model = torch.nn.Linear(4, 1)\n"
            "    optimizer = torch.optim.AdamW(model.parameters())\n"
            "    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
            "    model, optimizer = rebuild(model, optimizer)\n"
            "    for x in loader:\n        accelerator.backward(model(x).sum())\n        optimizer.step()\n",
            message="`optimizer` (optimizer)",
        ),
        # created after prepare: reported, fixed by hand
        Invalid(
            "import torch\nimport bitsandbytes as bnb\nfrom accelerate import Accelerator\nacc = Accelerator()\n"
            "model = acc.prepare(model)\noptimizer = bnb.optim.AdamW8bit(model.parameters())\n"
            "for x in loader:\n    optimizer.step()\n",
            message="`optimizer` (optimizer)",
        ),
        # sized from the prepared loader for every process: only a prepared scheduler takes that many steps
        Invalid(
            "from accelerate import Accelerator\nfrom transformers import get_linear_schedule_with_warmup\nacc = Accelerator()\n"
            "model, opt, dl = acc.prepare(model, opt, dl)\ntotal = len(dl) * 3 * acc.num_processes\n"
            "sched = get_linear_schedule_with_warmup(opt, 100, total)\n"
            "for batch in dl:\n    acc.backward(model(**batch).loss)\n    opt.step()\n    sched.step()\n",
            message="`sched` (LR scheduler)",
        ),
        # passed to the file's own training function inside the epoch loop (mnist style)
        Invalid(
            "import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
            "def train(model, loader, optimizer):\n    for x, y in loader:\n        optimizer.step()\n"
            "accelerator = Accelerator()\nmodel = torch.nn.Sequential(torch.nn.Linear(4, 2))\n"
            "optimizer = torch.optim.Adadelta(model.parameters())\nloader = DataLoader(ds)\n"
            "model, optimizer = accelerator.prepare(model, optimizer)\n"
            "for epoch in range(10):\n    train(model, loader, optimizer)\n",
            fixed="import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
            "def train(model, loader, optimizer):\n    for x, y in loader:\n        optimizer.step()\n"
            "accelerator = Accelerator()\nmodel = torch.nn.Sequential(torch.nn.Linear(4, 2))\n"
            "optimizer = torch.optim.Adadelta(model.parameters())\nloader = DataLoader(ds)\n"
            "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
            "for epoch in range(10):\n    train(model, loader, optimizer)\n",
        ),
        # nothing prepared at all: every object is reported, nothing to extend
        Invalid(
            "import torch\nfrom accelerate import Accelerator\nfrom torch.optim.lr_scheduler import StepLR\n"
            "from torch.utils.data import DataLoader\n"
            "accelerator = Accelerator()\nmodel = torch.nn.Linear(4, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "sched = StepLR(opt, 10)\nloader = DataLoader(ds)\n"
            "for x in loader:\n    model(x)\n    opt.step()\n    sched.step()\n",
            count=4,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.script = ctx.semantic.accelerate_script
        self.roles = ctx.semantic.training_roles
        self.bindings = self.script.bindings
        #: ids of the receivers of ``X.step()`` calls that only the main process makes
        self._main_only_steps: set[int] = set()

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "step" and main_process_only(self.ctx.ancestors):
            self._main_only_steps.add(id(func.value))

    def finish(self) -> None:
        roles = self.roles
        if not (self.script.builds_accelerator and roles.trains and roles.uses):
            return
        prepared = self._prepared_origins()
        if prepared is None:
            return
        frozen: set[int] | None = None  # asked for at the first model to judge (a search per optimizer step)
        reported: set[int] = set()
        for use in roles.uses:
            if use.how == "passed" and not self._is_local_function(use.callee, use.where):
                continue
            origin = roles.origin(use.expr, use.where)
            if isinstance(origin, Origin) and origin.kind is Kind.DATALOADER and roles.flag_leaves_out(use, origin):
                # `loader` bound to test_loader last, but the loop trains on the branch binding train_loader
                origin = next((o for o in roles.flag_trained_origins(use) if id(o.call) not in prepared), None)
            if not isinstance(origin, Origin) or id(origin.call) in prepared or id(origin.call) in reported:
                continue
            if origin.kind not in USES[use.how]:
                continue
            if origin.kind is Kind.MODEL:
                if frozen is None:
                    frozen = roles.frozen_origins() | roles.unoptimized_models()
                if id(origin.call) in frozen:
                    continue
            if origin.kind is Kind.MODEL and use.how == "passed" and not use.loops and not self._trains_in(use):
                continue  # `heads = classifier_modules(base_model)` before training: read, not trained
            if origin.kind is Kind.MODEL and self._inside_a_module(use):
                continue  # `self.linear(h)` in a model's own forward: a submodule, prepared with its model
            if origin.kind is Kind.DATALOADER and not roles.trains_on(use):
                continue  # an evaluation loader: left whole on purpose (the converter does too)
            if origin.kind is Kind.SCHEDULER and roles.sized_from_prepared_loader(origin):
                continue  # sized in one process's steps already: prepared, it would step N times too fast
            if origin.kind is Kind.DATALOADER and (
                roles.shard_reason(origin) is not None or roles.sharded_on_a_branch(use.expr, use.where) is not None
            ):
                continue  # already one shard per rank (on the branch a distributed run takes): prepare() would shard it again
            if origin.kind is Kind.SCHEDULER and not roles.trains_on(use):
                continue  # stepped in a loop apart from training (fast-forwarding the schedule on resume)
            if origin.kind is Kind.SCHEDULER and roles.cadence(origin)[0] in (
                Cadence.PER_EPOCH,
                Cadence.BY_VALUE,
                Cadence.WRAPPED,
            ):
                continue  # stepped once per epoch, with a metric or by another scheduler: prepared, it would step once per process
            if origin.kind is Kind.SCHEDULER and roles.counted_loop(origin) is not None:
                continue  # a counter fixes the steps: every process takes the original's, once each
            if origin.kind is Kind.SCHEDULER and not roles.shards_training_data():
                continue  # no loader prepare() shards: every process takes the original's steps, once each
            if not self.script.sees_accelerator(use.where):
                continue  # a plain-PyTorch baseline beside the Accelerate code
            reported.add(id(origin.call))
            self._report(use, origin)

    def _inside_a_module(self, use: Use) -> bool:
        cls = use.where.cls
        return (
            cls is not None
            and isinstance(use.expr, ast.Attribute)
            and isinstance(use.expr.value, ast.Name)
            and use.expr.value.id == "self"
            and is_module_class(self.ctx, cls, self.bindings.classes)
        )

    def _report(self, use: Use, origin: Origin) -> None:
        name = self.script.accelerator_name(use.where)
        spelled = name.text if name else "accelerator"
        text = self.ctx.source.segment(use.expr)
        prepare = f"`{spelled}.prepare(...)`"
        if origin.kind is Kind.SCHEDULER and use.how == "stepped" and id(use.expr) in self._main_only_steps:
            # pdiff (survey 25d): preparing it would not move the other processes' LR either
            message = (
                f"`{text}` ({origin.kind.value}) is stepped by the main process alone (under a test of the rank), "
                "so on every other process the learning rate never moves and the ranks train apart: step it on "
                f"every process, then pass it to {prepare}"
            )
            self.report(use.expr, message)
            return
        message = f"`{text}` ({origin.kind.value}) is used in the training loop but never passed to {prepare}"
        self.report(use.expr, message, fix=self._fix(use))

    def _prepared_origins(self) -> set[int] | None:
        """ids of the constructor calls whose objects some ``prepare`` call receives; None when
        a ``prepare(*objects)`` hides what it receives."""
        found: set[int] = set()
        for call, _, where in self.script.prepares:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords):
                return None
            for arg in [*call.args, *(kw.value for kw in call.keywords)]:
                origin = self.roles.origin(arg, where)
                if isinstance(origin, Origin):
                    found.add(id(origin.call))
        return found

    def _trains_in(self, use: Use) -> bool:
        """The local function ``use`` hands its object to reaches the training step (``fit(model, ...)``)."""
        bound = self.bindings.lookup(use.callee, use.where) if use.callee is not None else None
        function = bound.value if bound is not None else None
        return isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            self.script.training_loops.function_trains(function)
        )

    def _is_local_function(self, callee: ast.expr | None, where: Where) -> bool:
        bound = self.bindings.lookup(callee, where) if callee is not None else None
        return bound is not None and isinstance(bound.value, (ast.FunctionDef, ast.AsyncFunctionDef))

    # -- the fix ---------------------------------------------------------------------------
    def _fix(self, use: Use) -> Fix | None:
        key = binding_key(use.expr)
        held = self.bindings.candidates(use.expr, use.where)
        if key is None or not held:
            return None
        eligible = []
        for call, statement, where in self.script.prepares:
            targets = _lined_up(call, statement)
            if targets is None or key in {binding_key(t) for t in targets}:
                continue
            visible = self.bindings.candidates(key_expr(key), where)
            if not visible or visible[0] is not held[0] or held[0].end > where.pos:
                continue
            if where.function is use.where.function and where.pos > use.where.pos:
                continue
            if where.function is not use.where.function and not key.startswith("self."):
                continue
            eligible.append((call, targets))
        if len(eligible) != 1:
            return None
        call, targets = eligible[0]
        src = self.ctx.source
        text = src.segment(use.expr)
        last_target = src.end(targets[-1])
        edits = [Edit(f", {text}", last_target, last_target), *append_keyword(self.ctx, call, text)]
        return self.make_fix(f"Pass `{text}` to `prepare`", edits)


def _lined_up(call: ast.Call, statement: ast.AST | None) -> list[ast.expr] | None:
    """The assignment targets of ``a, b = X.prepare(a, b)`` when they are the argument names in
    order; None for any other shape."""
    if not isinstance(statement, ast.Assign) or statement.value is not call or len(statement.targets) != 1:
        return None
    if not isinstance(call.func, ast.Attribute) or call.func.attr != "prepare" or call.keywords or not call.args:
        return None
    target = statement.targets[0]
    targets = list(target.elts) if isinstance(target, (ast.Tuple, ast.List)) else [target]
    if len(targets) != len(call.args):
        return None
    for t, a in zip(targets, call.args, strict=True):
        key = binding_key(t)
        if key is None or key != binding_key(a):
            return None
    return targets
