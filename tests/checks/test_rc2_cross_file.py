"""RC201-RC209 across files: a forward that calls code of another local module.

A diagnostic belongs to the file being linted. A break inside a function of another file of the
project, reached from a ``forward`` of the linted file, is reported in the linted file at the
call that leaves it, naming the other file's line and the chain; the other file reports its own
breaks (the ones its own ``forward`` s reach) itself, and nothing is reported twice.
"""

from __future__ import annotations

import textwrap

from regcomp_lint.api import lint_source
from regcomp_lint.checks import ALL_RULES
from regcomp_lint.checks.forward_rule import elsewhere

RC2 = tuple(code for code in ALL_RULES if "RC201" <= code <= "RC209")


def write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def lint(path, *codes):
    codes = codes or RC2
    found = lint_source(path.read_text(), str(path))
    return [d for d in found if d.code in codes]


def where(diags):
    return [(d.code, d.location.row, d.location.column) for d in diags]


OPS = """
    import torch

    def scale_by_norm(x):
        if x.norm() > 1:
            x = x / x.norm()
        return x

    def log_loss(loss):
        print(loss.item())
        return loss

    def width(n):
        if n > 4:
            return n
        return 4
"""

NET = """
    import torch
    from torch import nn
    from _ops import scale_by_norm, width

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
        def forward(self, x):
            h = self.fc(x)
            n = width(x.shape[-1])
            return scale_by_norm(h) * n
"""


def test_break_in_an_imported_helper_is_reported_at_the_call_with_the_other_line(tmp_path):
    write(tmp_path, "_ops.py", OPS)
    net = write(tmp_path, "net.py", NET)
    found = lint(net)
    assert where(found) == [("RC202", 13, 16)]
    message = found[0].message
    assert message.startswith("at _ops.py:5, in code this call runs: ")
    assert "GB0170" in message
    assert message.endswith("(reached via Net.forward → _ops.scale_by_norm)")
    assert elsewhere(message) == ("_ops.py", 5, 5)


def test_the_imported_file_alone_reports_nothing(tmp_path):
    ops = write(tmp_path, "_ops.py", OPS)
    write(tmp_path, "net.py", NET)
    assert lint(ops) == []


def test_helper_called_only_from_the_training_loop_or_with_numbers_is_not_reported(tmp_path):
    """`log_loss` is never reached from forward; `width` gets a shape int: no tensor branch."""
    write(tmp_path, "_ops.py", OPS)
    train = write(
        tmp_path,
        "train.py",
        """
        import torch
        from torch import nn
        from _ops import log_loss, width

        class Net(nn.Module):
            def forward(self, x):
                return x * width(x.shape[0])

        model = Net()
        log_loss(model(torch.ones(2, 4)).sum())
    """,
    )
    assert lint(train) == []


def test_relative_import_in_a_package_and_a_module_attribute_call(tmp_path):
    pkg = tmp_path / "pkg"
    write(pkg, "__init__.py", "")
    write(
        pkg,
        "ops.py",
        """
        import time

        def stamp(x):
            t = time.time()
            return x * 2
    """,
    )
    write(
        pkg,
        "util.py",
        """
        def show(x):
            print(x.shape)
            return x
    """,
    )
    model = write(
        pkg,
        "model.py",
        """
        from torch import nn
        from . import util
        from .ops import stamp

        class Net(nn.Module):
            def forward(self, x):
                x = stamp(x)
                return util.show(x)
    """,
    )
    found = lint(model)
    assert sorted(where(found)) == [("RC203", 9, 16), ("RC205", 8, 13)]
    by_code = {d.code: d.message for d in found}
    assert by_code["RC205"].startswith("at ops.py:5, in code this call runs: ")
    assert by_code["RC205"].endswith("(reached via Net.forward → ops.stamp)")
    assert by_code["RC203"].startswith("at util.py:3, in code this call runs: ")


def test_every_break_once_however_many_calls_reach_it(tmp_path):
    write(
        tmp_path,
        "_ops.py",
        """
        def noisy(x):
            print(x.shape)
            if x.sum() > 0:
                x = -x
            return x
    """,
    )
    net = write(
        tmp_path,
        "net.py",
        """
        from torch import nn
        from _ops import noisy

        class Block(nn.Module):
            def forward(self, x):
                return noisy(x)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([Block() for _ in range(3)])
            def forward(self, x):
                x = noisy(x)
                for block in self.blocks:
                    x = block(x)
                return noisy(x)
    """,
    )
    found = lint(net)
    assert sorted(where(found)) == [("RC202", 14, 13), ("RC203", 14, 13)]
    assert all(d.message.endswith("(reached via Net.forward → _ops.noisy)") for d in found)


def test_a_module_class_of_another_file_reports_its_own_breaks_there(tmp_path):
    """`Block` (another file) breaks in its own forward: `layers.py` reports it, `net.py` does not."""
    write(
        tmp_path,
        "layers.py",
        """
        from torch import nn

        class Block(nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    x = -x
                return x
    """,
    )
    net = write(
        tmp_path,
        "net.py",
        """
        from torch import nn
        from layers import Block

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
            def forward(self, x):
                return self.block(x)
    """,
    )
    assert lint(net) == []
    assert where(lint(tmp_path / "layers.py")) == [("RC202", 6, 12)]


def test_a_chain_through_another_files_module_is_reported_by_that_file(tmp_path):
    """net.Net → layers.Block (a module of layers.py) → ops.shout: layers.py reports it, once."""
    write(tmp_path, "ops.py", "def shout(x):\n    print(x)\n    return x\n")
    layers = write(
        tmp_path,
        "layers.py",
        """
        from torch import nn
        from ops import shout

        class Block(nn.Module):
            def forward(self, x):
                return shout(x)
    """,
    )
    net = write(
        tmp_path,
        "net.py",
        """
        from torch import nn
        from layers import Block

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
            def forward(self, x):
                return self.block(x)
    """,
    )
    assert lint(net) == []
    found = lint(layers)
    assert where(found) == [("RC203", 7, 16)]
    assert found[0].message.startswith("at ops.py:2, in code this call runs: ")


def test_a_helper_its_own_file_already_reaches_is_reported_there_only(tmp_path):
    ops = write(
        tmp_path,
        "ops.py",
        """
        from torch import nn

        def shout(x):
            print(x)
            return x

        class Loud(nn.Module):
            def forward(self, x):
                return shout(x)
    """,
    )
    net = write(
        tmp_path,
        "net.py",
        """
        from torch import nn
        from ops import shout

        class Net(nn.Module):
            def forward(self, x):
                return shout(x)
    """,
    )
    assert where(lint(ops)) == [("RC203", 5, 5)]
    assert lint(net) == []


def test_two_hops_through_plain_functions_name_the_last_file(tmp_path):
    write(tmp_path, "deep.py", "import random\n\ndef jitter(x):\n    return x * random.random()\n")
    write(tmp_path, "mid.py", "from deep import jitter\n\ndef mix(x):\n    return jitter(x) + x\n")
    net = write(
        tmp_path,
        "net.py",
        """
        from torch import nn
        from mid import mix

        class Net(nn.Module):
            def forward(self, x):
                return mix(x)
    """,
    )
    found = lint(net)
    assert where(found) == [("RC205", 7, 16)]
    assert found[0].message.startswith("at deep.py:4, in code this call runs: ")
    assert found[0].message.endswith("(reached via Net.forward → mid.mix → deep.jitter)")


def test_calls_dynamo_skips_are_not_followed_and_an_imported_disabled_callee_is_rc207(tmp_path):
    write(
        tmp_path,
        "_ops.py",
        """
        import torch

        def shout(x):
            print(x)
            return x

        @torch.compiler.disable
        def quiet(x):
            print(x)
            return x
    """,
    )
    net = write(
        tmp_path,
        "net.py",
        """
        import torch
        from torch import nn
        from _ops import quiet, shout

        class Net(nn.Module):
            def forward(self, x):
                if not torch.compiler.is_compiling():
                    shout(x)
                return quiet(x)
    """,
    )
    found = lint(net)
    # not followed into `quiet`, but the call of a disabled function is itself a break (RC207)
    assert where(found) == [("RC207", 10, 16)]
    assert found[0].message.startswith("`quiet` runs a `torch.compiler.disable`d function")


def test_closures_and_methods_of_an_imported_plain_class(tmp_path):
    write(
        tmp_path,
        "_ops.py",
        """
        class Scaler:
            def __call__(self, x):
                return x

        def gated(x):
            def gate(t):
                return t * t.sum().item()
            return gate(x)
    """,
    )
    net = write(
        tmp_path,
        "net.py",
        """
        from torch import nn
        from _ops import gated

        class Net(nn.Module):
            def forward(self, x):
                return gated(x)
    """,
    )
    found = lint(net)
    assert where(found) == [("RC201", 7, 16)]
    assert found[0].message.startswith("at _ops.py:8, in code this call runs: ")
    assert found[0].message.endswith("(reached via Net.forward → _ops.gated → _ops.gated.gate)")


def test_a_suppression_at_the_call_silences_it(tmp_path):
    write(tmp_path, "_ops.py", OPS)
    net = write(
        tmp_path, "net.py", NET.replace("return scale_by_norm(h) * n", "return scale_by_norm(h) * n  # noqa: RC202")
    )
    assert [d.code for d in lint_source(net.read_text(), str(net))] == []


def test_stdin_and_unknown_files_follow_nothing():
    src = textwrap.dedent(NET)
    assert [d for d in lint_source(src, "<stdin>") if d.code in RC2] == []


def test_cached_result_goes_stale_when_either_file_changes(tmp_path):
    """The finding in net.py is computed from _ops.py: editing either file must re-lint net.py."""
    from regcomp_lint.lint import runner
    from regcomp_lint.lint.config import Settings

    ops = write(tmp_path, "_ops.py", OPS)
    net = write(tmp_path, "net.py", NET)
    settings = Settings(root=str(tmp_path), cache_dir=str(tmp_path / "cache"), select=("RC2",))

    def run():
        result = runner.run([str(net)], settings, jobs=1, use_cache=True)
        return [(d.code, d.location.row) for d in result.diagnostics], result.cached

    assert run() == ([("RC202", 13)], 0)
    assert run() == ([("RC202", 13)], 1)
    ops.write_text(ops.read_text().replace("if x.norm() > 1:", "if x.shape[0] > 1:"))
    assert run() == ([], 0)  # the break is gone from the other file
    ops.write_text(textwrap.dedent(OPS))
    assert run() == ([("RC202", 13)], 0)  # ... and back
    net.write_text(net.read_text().replace("return scale_by_norm(h) * n", "return h * n"))
    assert run() == ([], 0)  # the call is gone from this file


def test_decorated_functions_of_another_file_are_not_followed(tmp_path):
    """`lru_cache` or a wrapper may change what runs (transformers makes some compile-time
    constants): nothing inside is judged, nor what they call."""
    write(
        tmp_path,
        "_ops.py",
        """
        import logging
        from functools import lru_cache

        logger = logging.getLogger(__name__)

        def _probe():
            logger.debug("probing")
            return True

        @lru_cache
        def available():
            return _probe()

        @staticmethod
        def plain(x):
            print(x)
            return x
    """,
    )
    net = write(
        tmp_path,
        "net.py",
        """
        from torch import nn
        from _ops import available, plain

        class Net(nn.Module):
            def forward(self, x):
                if available():
                    x = x * 2
                return plain(x)
    """,
    )
    assert where(lint(net)) == [("RC203", 9, 16)]
