"""codemod/local_modules.py: the functions of the project's own modules a script's names refer
to, through ``from utils import save_checkpoint`` and through ``from utils import *``."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from regcomp_lint.codemod.local_modules import imported_function
from regcomp_lint.codemod.tree import Tree, code, find_all

UTILS = "import torch\n\n\ndef save_checkpoint(epoch, model):\n    torch.save(model, 'ckpt.pth')\n"


def _found(tmp_path, script: str, name: str = "save_checkpoint") -> str | None:
    """The file and name of the function the first call of ``name`` in ``script`` resolves to."""
    tree = Tree(MetadataWrapper(cst.parse_module(script)), str(tmp_path / "train.py"))
    call = next(c for c in find_all(tree.module, cst.Call) if code(c.func) == name)
    found = imported_function(tree, call.func)
    if found is None:
        return None
    parsed, function = found
    assert parsed.path is not None
    return f"{parsed.path.rsplit('/', 1)[-1]}:{function.name}"


@pytest.mark.parametrize(
    "head",
    [
        "from utils import save_checkpoint\n",
        "from utils import *\n",
        "import os\nfrom utils import *\nfrom torch.optim import *\n",  # a library's star import after it
    ],
)
def test_a_function_imported_from_a_project_module_is_found(tmp_path, head):
    (tmp_path / "utils.py").write_text(UTILS)
    assert _found(tmp_path, head + "def main(model):\n    save_checkpoint(1, model)\n") == "utils.py:save_checkpoint"


def test_a_name_bound_in_the_script_wins_over_the_star_import(tmp_path):
    (tmp_path / "utils.py").write_text(UTILS)
    script = "from utils import *\n\n\ndef save_checkpoint(epoch, model):\n    pass\n\n\nsave_checkpoint(1, None)\n"
    assert _found(tmp_path, script) is None
    script = "from utils import *\nfrom other import save_checkpoint\n\nsave_checkpoint(1, None)\n"
    assert _found(tmp_path, script) is None  # explicitly imported from a module that is not found


def test_the_last_star_import_that_defines_the_name_wins(tmp_path):
    (tmp_path / "utils.py").write_text(UTILS)
    (tmp_path / "ckpt.py").write_text("def save_checkpoint(epoch, model):\n    pass\n\n\ndef other():\n    pass\n")
    (tmp_path / "nothing.py").write_text("def unrelated():\n    pass\n")
    assert _found(tmp_path, "from utils import *\nfrom ckpt import *\nsave_checkpoint(1, None)\n") == (
        "ckpt.py:save_checkpoint"
    )
    assert _found(
        tmp_path, "from ckpt import *\nfrom utils import *\nfrom nothing import *\nsave_checkpoint(1, None)\n"
    ) == ("utils.py:save_checkpoint")
    # a later module defining the name as something else hides the earlier function, as in Python
    (tmp_path / "consts.py").write_text("save_checkpoint = None\n")
    assert _found(tmp_path, "from utils import *\nfrom consts import *\nsave_checkpoint(1, None)\n") is None


def test_a_star_import_respects_the_module_s_all(tmp_path):
    (tmp_path / "utils.py").write_text("__all__ = ['other']\n" + UTILS + "\n\ndef other():\n    pass\n")
    assert _found(tmp_path, "from utils import *\nsave_checkpoint(1, None)\n") is None
    assert _found(tmp_path, "from utils import *\nother()\n", "other") == "utils.py:other"
    (tmp_path / "utils.py").write_text("__all__ = ('save_checkpoint',)\n" + UTILS)
    assert _found(tmp_path, "from utils import *\nsave_checkpoint(1, None)\n") == "utils.py:save_checkpoint"


def test_a_private_name_is_not_brought_by_a_star_import(tmp_path):
    (tmp_path / "utils.py").write_text("def _save(model):\n    pass\n")
    assert _found(tmp_path, "from utils import *\n_save(None)\n", "_save") is None


def test_a_star_import_of_a_package_module_and_a_relative_one(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "utils.py").write_text(UTILS)
    assert _found(tmp_path, "from pkg.utils import *\nsave_checkpoint(1, None)\n") == "utils.py:save_checkpoint"
    (tmp_path / "utils.py").write_text(UTILS)
    assert _found(tmp_path, "from .utils import *\nsave_checkpoint(1, None)\n") == "utils.py:save_checkpoint"


def test_a_star_import_inside_the_imported_module_is_followed(tmp_path):
    (tmp_path / "ckpt.py").write_text(UTILS)
    (tmp_path / "utils.py").write_text("from ckpt import *\n\n\ndef other():\n    pass\n")
    assert _found(tmp_path, "from utils import *\nsave_checkpoint(1, None)\n") == "ckpt.py:save_checkpoint"
    (tmp_path / "a.py").write_text("from b import *\n")  # a cycle ends
    (tmp_path / "b.py").write_text("from a import *\n")
    assert _found(tmp_path, "from a import *\nsave_checkpoint(1, None)\n") is None
