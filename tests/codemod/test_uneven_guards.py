"""A backward that runs on some processes only: under an ``if`` on a value each process computes
for itself (its own loss, a random draw), decided in the step's function or in a caller that hands
the flag down. Converted, the processes decide differently once their losses differ, and the one
that skips the backward leaves the others waiting in its all-reduce (gan_yolo's replica aborted in
gloo at epoch 3). A condition every process computes alike (a counter, a config flag, a draw from
a generator seeded alike, a value reduced across processes) still converts."""

from __future__ import annotations

import textwrap

from regcomp_lint.codemod import convert_source

HEAD = """\
import argparse
import random

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--train-d", action="store_true")
args = parser.parse_args()
gen = torch.nn.Linear(4, 4)
disc = torch.nn.Linear(4, 1)
opt_g = torch.optim.Adam(gen.parameters())
opt_d = torch.optim.Adam(disc.parameters())
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)


def d_step(real, train):
    d_loss = F.softplus(-disc(real)).mean() + F.softplus(disc(gen(real).detach())).mean()
    if train:
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
    return d_loss


def g_step(real):
    g_loss = F.softplus(-disc(gen(real))).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    return g_loss

"""


def _convert(body: str):
    return convert_source(HEAD + textwrap.dedent(body), "gan.py")


def test_a_flag_handed_down_two_calls_from_the_process_s_own_loss_and_a_draw_is_refused():
    result = _convert(
        """
        def should_train(d_loss):
            return torch.rand(1).item() < torch.sigmoid(torch.tensor(d_loss - 0.5)).item()


        def train_epoch(train_d):
            total = 0.0
            for (real,) in loader:
                total += d_step(real, train=train_d).item()
                g_step(real)
            return total / len(loader)


        train_d = False
        for epoch in range(8):
            d_loss = train_epoch(train_d)
            next_d = should_train(d_loss)
            if next_d and epoch > 2:
                train_d = True
            elif not next_d:
                train_d = False
        """
    )
    assert not result.changed
    assert result.refused == (
        "gan.py: not converted: a training step can run on some processes only: the X.backward() at line 22 "
        "runs under `if train:` (line 20), where `train` is handed down by train_epoch() as `train_d` (line 42); "
        "there `train_d` is handed down by the module as `train_d` (line 49); there `train_d` is computed from "
        "`next_d = should_train(d_loss)` (line 50); each process decides from its own values (its own loss, "
        "its own random draws), so one skips a backward the others run and leaves them waiting in its "
        "all-reduce (a 2-process run hangs); convert by hand, deciding once for every process (reduce the "
        "value across processes, or draw it from a generator seeded alike); not done here, since a reduced skip "
        "also drops, on every other process, a batch the original trained"
    )


def test_a_flag_handed_down_one_call_from_a_random_draw_is_refused():
    result = _convert(
        """
        for epoch in range(8):
            train_d = random.random() < 0.5
            for (real,) in loader:
                d_step(real, train_d)
                g_step(real)
        """
    )
    assert result.refused is not None
    assert "the X.backward() at line 22 runs under `if train:` (line 20), where `train` is handed down by the " in (
        result.refused
    )
    assert "module as `train_d` (line 38); there `train_d` is computed from `train_d = random.random() < 0.5` " in (
        result.refused
    )


def test_a_condition_on_the_process_s_own_loss_in_the_step_s_function_is_refused():
    result = _convert(
        """
        for epoch in range(8):
            for (real,) in loader:
                d_loss = F.softplus(-disc(real)).mean()
                if d_loss.item() > 0.3:
                    opt_d.zero_grad()
                    d_loss.backward()
                    opt_d.step()
                g_step(real)
        """
    )
    assert result.refused is not None
    assert (
        "a training step can run on some processes only: the X.backward() at line 40 runs under "
        "`if d_loss.item() > 0.3:` (line 38), where `d_loss.item() > 0.3` calls d_loss.item()"
    ) in result.refused


def test_a_draw_in_the_condition_itself_is_refused():
    result = _convert(
        """
        for epoch in range(8):
            for (real,) in loader:
                d_loss = F.softplus(-disc(real)).mean()
                if random.random() < 0.5:
                    d_loss.backward()
                    opt_d.step()
                g_step(real)
        """
    )
    assert result.refused is not None
    assert "`if random.random() < 0.5:` (line 38), where `random.random() < 0.5` calls random.random()" in (
        result.refused
    )


def _converts(body: str) -> None:
    result = _convert(body)
    assert result.refused is None, result.refused
    assert result.changed


def test_an_epoch_counter_and_a_config_flag_handed_down_still_convert():
    _converts(
        """
        for epoch in range(8):
            for (real,) in loader:
                d_step(real, train=epoch >= 2 and args.train_d)
                g_step(real)
        """
    )


def test_a_flag_decided_from_a_counter_in_the_loop_still_converts():
    _converts(
        """
        train_d = False
        for epoch in range(8):
            if epoch % 2 == 0:
                train_d = not train_d
            for (real,) in loader:
                d_step(real, train_d)
                g_step(real)
        """
    )


def test_a_draw_from_a_generator_seeded_alike_still_converts():
    _converts(
        """
        rng = random.Random(0)
        for epoch in range(8):
            train_d = rng.random() < 0.5
            for (real,) in loader:
                d_step(real, train_d)
                g_step(real)
        """
    )


def test_a_torch_generator_seeded_alike_still_converts():
    _converts(
        """
        g = torch.Generator()
        g.manual_seed(1234)
        for epoch in range(8):
            train_d = torch.rand(1, generator=g).item() < 0.5
            for (real,) in loader:
                d_step(real, train_d)
                g_step(real)
        """
    )


def test_a_loss_reduced_across_processes_still_converts():
    _converts(
        """
        import torch.distributed as dist

        train_d = True
        for epoch in range(8):
            total = torch.zeros(())
            for (real,) in loader:
                total += d_step(real, train_d).detach()
                g_step(real)
            if dist.is_initialized():
                dist.all_reduce(total)
            train_d = total.item() > 0.3
        """
    )


def test_a_backward_in_both_branches_still_converts():
    _converts(
        """
        for epoch in range(8):
            for (real,) in loader:
                d_loss = F.softplus(-disc(real)).mean()
                if d_loss.item() > 0.3:
                    (2 * d_loss).backward()
                else:
                    d_loss.backward()
                opt_d.step()
                g_step(real)
        """
    )


def test_a_generator_built_without_a_seed_is_its_own_to_each_process():
    result = _convert(
        """
        rng = random.Random()
        for epoch in range(8):
            train_d = rng.random() < 0.5
            for (real,) in loader:
                d_step(real, train_d)
                g_step(real)
        """
    )
    assert result.refused is not None
    assert "there `train_d` is computed from `train_d = rng.random() < 0.5` (line 37)" in result.refused


def test_constant_flags_of_a_train_and_an_eval_pass_still_convert():
    _converts(
        """
        def run_epoch(train):
            for (real,) in loader:
                d_step(real, train)
                if train:
                    g_step(real)


        for epoch in range(8):
            run_epoch(True)
            run_epoch(train=False)
        """
    )


def test_a_call_of_the_step_under_a_condition_on_the_loss_in_the_caller_is_refused():
    result = _convert(
        """
        for epoch in range(8):
            for (real,) in loader:
                g_loss = g_step(real)
                if g_loss.item() < 0.7:
                    d_step(real, True)
        """
    )
    assert result.refused is not None
    assert (
        "the X.backward() at line 22 (through the call at line 39) runs under `if g_loss.item() < 0.7:` (line 38), "
        "where `g_loss.item() < 0.7` calls g_loss.item()"
    ) in result.refused


def test_a_call_of_the_step_in_both_branches_still_converts():
    _converts(
        """
        for epoch in range(8):
            for (real,) in loader:
                g_loss = g_step(real)
                if g_loss.item() < 0.7:
                    d_step(real, True)
                else:
                    d_step(2 * real, True)
        """
    )


def test_a_test_whether_the_loss_exists_still_converts():
    """``if loss is not None:`` (a model that returns a loss only when given labels) asks whether a
    value exists, which the script's own control flow decides alike on every process; a value test
    joined to it is still read."""
    body = """
        for epoch in range(8):
            for (real,) in loader:
                d_loss = disc(real).mean() if real.numel() else None
                if {test}:
                    opt_d.zero_grad()
                    d_loss.backward()
                    opt_d.step()
                g_step(real)
        """
    for test in ("d_loss is not None", "not d_loss is None"):
        result = _convert(body.format(test=test))
        assert result.refused is None, (test, result.refused)
    result = _convert(body.format(test="d_loss is not None and d_loss.item() > 0.3"))
    assert result.refused is not None and "calls d_loss.item()" in result.refused, result.refused


# -- a backward skipped by `continue` / `return` before it -------------------------------------


def test_a_continue_before_the_backward_on_the_process_s_own_loss_is_refused():
    """``if not batch_ok: continue`` with ``batch_ok = loss.item() < 1.0``: a replica converted and
    launched on 2 gloo processes skipped every backward on rank 0, which finished while rank 1 failed
    in its first backward ("Connection closed by peer")."""
    result = _convert(
        """
        for epoch in range(8):
            for (real,) in loader:
                d_loss = F.softplus(-disc(real)).mean()
                batch_ok = d_loss.item() < 1.0
                if not batch_ok:
                    continue
                opt_d.zero_grad()
                d_loss.backward()
                opt_d.step()
        """
    )
    assert not result.changed
    assert result.refused == (
        "gan.py: not converted: a training step can run on some processes only: the X.backward() at line 42 "
        "is skipped by the `continue` under `if not batch_ok:` (line 39), where `batch_ok` is computed from "
        "`batch_ok = d_loss.item() < 1.0` (line 38); each process decides from its own "
        "values (its own loss, its own random draws), so one skips a backward the others run and leaves "
        "them waiting in its all-reduce (a 2-process run hangs); convert by hand, deciding once for every "
        "process (reduce the value across processes, or draw it from a generator seeded alike); not done here, "
        "since a reduced skip also drops, on every other process, a batch the original trained"
    )


def test_a_return_before_the_backward_of_a_step_function_is_refused():
    result = _convert(
        """
        def careful_step(real):
            g_loss = F.softplus(-disc(gen(real))).mean()
            if not torch.isfinite(g_loss):
                return None
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
            return g_loss


        for epoch in range(8):
            for (real,) in loader:
                careful_step(real)
        """
    )
    assert result.refused is not None
    assert (
        "the X.backward() at line 40 is skipped by the `return` under `if not torch.isfinite(g_loss):` (line 37), "
        "where `torch.isfinite(g_loss)` calls torch.isfinite()"
    ) in result.refused


def test_a_continue_in_the_caller_before_the_call_of_the_step_is_refused():
    result = _convert(
        """
        for epoch in range(8):
            for (real,) in loader:
                if real.abs().max().item() > 3.0:
                    continue
                g_step(real)
        """
    )
    assert result.refused is not None
    assert (
        "the X.backward() at line 30 (through the call at line 39) is skipped by the `continue` under "
        "`if real.abs().max().item() > 3.0:` (line 37)"
    ) in result.refused


def test_a_continue_on_a_counter_or_a_config_flag_still_converts():
    _converts(
        """
        for epoch in range(8):
            if epoch < 2 and not args.train_d:
                continue
            for step, (real,) in enumerate(loader):
                if step % 3 == 2:
                    continue
                d_step(real, True)
                g_step(real)
        """
    )


def test_a_continue_of_an_inner_loop_before_the_backward_still_converts():
    """The ``continue`` ends an iteration of a loop that does not run the backward."""
    _converts(
        """
        for epoch in range(8):
            for (real,) in loader:
                for value in real.tolist():
                    if value[0] > 0.5:
                        continue
                    print(value)
                g_step(real)
        """
    )


# -- a flag of a trainer class set in another method -------------------------------------------

TRAINER = """\
import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--train-d", action="store_true")
args = parser.parse_args()


class GanTrainer:
    def __init__(self, train_d=True):
        self.gen = torch.nn.Linear(4, 4)
        self.disc = torch.nn.Linear(4, 1)
        self.opt_g = torch.optim.Adam(self.gen.parameters())
        self.opt_d = torch.optim.Adam(self.disc.parameters())
        self.loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)
        self.train_d = train_d
        self.use_d = args.train_d or bool(int("1"))

    def disc_step(self, real):
        d_loss = F.softplus(-self.disc(real)).mean() + F.softplus(self.disc(self.gen(real).detach())).mean()
        if {flag}:
            self.opt_d.zero_grad()
            d_loss.backward()
            self.opt_d.step()
        return d_loss

    def gen_step(self, real):
        g_loss = F.softplus(-self.disc(self.gen(real))).mean()
        self.opt_g.zero_grad()
        g_loss.backward()
        self.opt_g.step()

    def end_epoch(self, epoch, d_loss):
        {decision}

    def fit(self):
        for epoch in range(8):
            total = 0.0
            for (real,) in self.loader:
                total += self.disc_step(real).item()
                self.gen_step(real)
            self.end_epoch(epoch, total / len(self.loader))


GanTrainer().fit()
"""


def test_a_flag_of_the_trainer_set_from_the_loss_in_another_method_is_refused():
    result = convert_source(
        TRAINER.format(flag="self.train_d", decision="self.train_d = torch.rand(1).item() < d_loss"), "gan.py"
    )
    assert result.refused is not None
    assert (
        "the X.backward() at line 26 runs under `if self.train_d:` (line 24), where `self.train_d` is set by "
        "end_epoch() from `self.train_d = torch.rand(1).item() < d_loss` (line 37)"
    ) in result.refused


def test_a_flag_of_the_trainer_set_from_the_loss_its_caller_hands_in_is_refused():
    """A replica of this trainer converted by main and launched on 2 gloo processes: after epoch 4
    the ranks' own losses (1.434468, 1.471212) set ``self.train_d`` apart (threshold 1.44); in epoch 5
    rank 0 aborted (SIGABRT) and rank 1 failed with "Connection reset by peer"."""
    result = convert_source(TRAINER.format(flag="self.train_d", decision="self.train_d = d_loss > 1.44"), "gan.py")
    assert result.refused is not None
    assert (
        "where `self.train_d` is set by end_epoch() as `self.train_d = d_loss > 1.44` (line 37), where `d_loss` "
        "is handed down by fit() as `total / len(self.loader)` (line 45); there `total` is computed from "
        "`total += self.disc_step(real).item()` (line 43)"
    ) in result.refused, result.refused


def test_a_flag_of_the_trainer_set_from_a_counter_or_in_init_still_converts():
    for flag, decision in (
        ("self.train_d", "self.train_d = epoch % 2 == 0"),
        ("self.use_d", "self.train_d = torch.rand(1).item() < d_loss"),
    ):
        result = convert_source(TRAINER.format(flag=flag, decision=decision), "gan.py")
        assert result.refused is None, (flag, result.refused)


def test_an_environment_switch_still_converts_and_the_rank_s_variable_does_not():
    """The launchers hand every process the same environment but for the variables that number it."""
    body = """
        import os

        for epoch in range(8):
            for (real,) in loader:
                d_step(real, train={test})
                g_step(real)
        """
    assert _convert(body.format(test='bool(os.environ.get("TRAIN_D"))')).refused is None
    refused = _convert(body.format(test='os.environ.get("LOCAL_RANK", "0") == "0"')).refused
    assert refused is not None and "calls os.environ.get()" in refused, refused


# -- a helper of the file is judged by what it returns ----------------------------------------


def test_a_helper_returning_a_test_on_the_epoch_still_converts():
    _converts(
        """
        WARMUP = 2


        def use_disc(epoch):
            return epoch >= WARMUP and args.train_d


        for epoch in range(8):
            for (real,) in loader:
                d_step(real, use_disc(epoch))
                g_step(real)
        """
    )


def test_a_helper_returning_a_draw_from_the_global_generator_is_refused():
    """``torch.manual_seed`` makes every process's global generator start alike, but each process
    draws from it as its own data asks: a replica on 2 gloo processes (shuffled prepared loader,
    dropout) drew the same 12 masks on both ranks while every batch drew alike, and 6 of 12
    differed once each batch drew as many numbers as it had positive targets."""
    result = _convert(
        """
        torch.manual_seed(0)


        def sample_mask():
            return torch.rand(()) > 0.5


        for epoch in range(8):
            for (real,) in loader:
                d_step(real, bool(sample_mask()))
                g_step(real)
        """
    )
    assert result.refused is not None
    assert "`bool(sample_mask())` calls sample_mask()" in result.refused, result.refused


def test_a_helper_handed_the_process_s_own_loss_or_drawing_inside_is_refused():
    for helper, call in (
        ("def should_train(loss):\n    return loss > 0.5", "should_train(g_step(real).item())"),
        ("def should_train():\n    value = random.random()\n    return value < 0.5", "should_train()"),
    ):
        result = _convert(
            helper
            + f"""


for epoch in range(8):
    for (real,) in loader:
        d_step(real, {call})
"""
        )
        assert result.refused is not None, helper


# -- tests every process decides alike (session 21d) ------------------------------------------


def test_a_test_whether_the_loss_requires_grad_still_converts():
    """``if not loss.requires_grad: continue`` / ``if loss.requires_grad:`` around the backward:
    whether a tensor requires grad follows from the model and the script's code, not from the
    values of the process's batch, so every process decides alike."""
    for body in (
        """
        for epoch in range(8):
            for (real,) in loader:
                d_loss = F.softplus(-disc(real)).mean()
                if not d_loss.requires_grad:
                    continue
                opt_d.zero_grad()
                d_loss.backward()
                opt_d.step()
        """,
        """
        for epoch in range(8):
            for (real,) in loader:
                d_loss = F.softplus(-disc(real)).mean()
                if d_loss.requires_grad:
                    opt_d.zero_grad()
                    d_loss.backward()
                    opt_d.step()
        """,
    ):
        _converts(body)
    result = _convert(
        """
        for epoch in range(8):
            for (real,) in loader:
                d_loss = F.softplus(-disc(real)).mean()
                if d_loss.requires_grad and d_loss.item() < 1.0:
                    opt_d.zero_grad()
                    d_loss.backward()
                    opt_d.step()
        """
    )
    assert result.refused is not None and "calls d_loss.item()" in result.refused, result.refused


CACHED = """
    import os


    def train_features(save_path=None):
        if save_path and os.path.exists({tested}):
            return None
        for epoch in range(4):
            for (real,) in loader:
                g_step(real)
        torch.save(gen.state_dict(), {written})
        return gen


    {call}
    """


def test_a_cache_file_test_before_training_still_converts():
    """byol_spot's ``if save_path and os.path.exists(save_path): return`` before it trains: the path
    names no process and nothing the run writes comes before the test, so every process sees the
    same file system there and returns, or trains, alike."""
    _converts(CACHED.format(tested="save_path", written="save_path", call='train_features("cache.pt")'))


def test_a_file_test_after_a_write_of_the_same_path_or_on_a_per_process_path_is_refused():
    """Run in a loop, the test may follow the main process's write of an earlier pass (another
    process may test before it lands); a path that names the process is one file per process."""
    in_a_loop = CACHED.format(
        tested="save_path",
        written="save_path",
        call='for run in range(2):\n        train_features("cache.pt")',
    )
    per_process = CACHED.format(tested='f"cache_{rank}.pt"', written="save_path", call='train_features("c.pt")')
    for text in (in_a_loop, per_process):
        result = _convert(text)
        assert result.refused is not None and "calls os.path.exists()" in result.refused, result.refused


DATA_FILES = """
    import os

    DATA_DIR = "/content"


    def load_rows(path, limit):
        rows = []
        with open(path{mode}) as f:
            for line in f:
                rows.append(line)
        return rows[:limit]


    def train_one(rows):
        for epoch in range(2):
            for (real,) in loader:
                g_step(real)


    for name in ["cst-8k.jsonl", "spm-8k.jsonl"]:
        data_path = os.path.join(DATA_DIR, name)
        if not os.path.exists(data_path):
            print(f"MISSING: {{data_path}}")
            continue
        train_one(load_rows(data_path, 8))
    """


def test_a_test_of_input_files_in_a_loop_of_runs_that_only_read_them_still_converts():
    """survey25c fair_cst: ``data_path = os.path.join(DATA_DIR, cfg["data"])``, ``if not
    os.path.exists(data_path): print(...); continue`` in a loop over the runs: the path is joined
    from values every process has, and what it is handed to (``print``, a helper that only opens it
    for reading) writes no file, so every process sees the same files at every pass and trains, or
    skips, alike."""
    for mode in ("", ', "r"', ', "rb"'):
        _converts(DATA_FILES.format(mode=mode))


def test_a_test_of_a_file_a_helper_writes_in_the_loop_is_still_refused():
    """A helper that opens the tested path for writing (or appending) writes it in an earlier pass:
    the main process's file may land between two processes' tests; one that keeps the path somewhere
    is not known to only read it."""
    kept = DATA_FILES.format(mode="").replace("        rows = []\n", '        rows = []\n        LAST["path"] = path\n')
    kept = kept.replace('    DATA_DIR = "/content"\n', '    DATA_DIR = "/content"\n    LAST = {}\n')
    assert 'LAST["path"] = path' in kept
    for text in [*(DATA_FILES.format(mode=mode) for mode in (', "w"', ', mode="a"', ", 'r+'")), kept]:
        result = _convert(text)
        assert result.refused is not None and "calls os.path.exists()" in result.refused, result.refused


def test_a_continue_in_an_except_handler_before_the_backward_is_refused_naming_the_try():
    """dpo_video (survey 21c): ``try: batch = process_example(...)`` ``except Exception: continue``
    ahead of the backward: the process whose example fails to load skips a step the others take."""
    result = _convert(
        """
        def load(real):
            return real * 2


        for epoch in range(8):
            for (real,) in loader:
                try:
                    batch = load(real)
                except Exception as e:
                    print("skip", e)
                    continue
                g_step(batch)
        """
    )
    assert result.refused is not None, "converted"
    assert (
        "the X.backward() at line 30 (through the call at line 46) is skipped by the `continue` under "
        "`except Exception as e:` (line 43) of the `try:` at line 41, where `load(real)` may raise on "
        "the process's own data"
    ) in result.refused, result.refused


def test_an_except_handler_that_does_not_leave_or_that_restarts_an_iterator_still_converts():
    """A handler that goes on to the step, or one that catches only ``StopIteration`` (the end of a
    prepared loader, which every process reaches at the same step), skips nothing per process."""
    for catch, handler in (("Exception", "batch = real"), ("StopIteration", "continue")):
        _converts(
            f"""
            for epoch in range(8):
                batches = iter(loader)
                for step in range(8):
                    try:
                        (real,) = next(batches)
                    except {catch}:
                        {handler}
                    g_step(real)
            """
        )
