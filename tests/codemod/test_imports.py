"""Added imports join the script's third-party group (codemod/imports.py)."""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.imports import place_added_imports

ADDED = "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"


def placed(header: str, libcst_result: str) -> str:
    return place_added_imports(cst.parse_module(header), cst.parse_module(libcst_result)).code


def test_added_imports_move_before_the_local_group():
    header = '"""Doc."""\nimport os\n\nimport torch\nimport numpy as np\n\nfrom model import GPT\n\n\nx = 1\n'
    libcst = header.replace("from model import GPT\n", "from model import GPT\n" + ADDED)
    assert placed(header, libcst) == (
        '"""Doc."""\nimport os\n\nimport torch\nimport numpy as np\n' + ADDED + "\nfrom model import GPT\n\n\nx = 1\n"
    )


def test_a_torch_group_at_the_end_keeps_libcst_placement():
    header = "import os\n\nimport torch\n\n\nx = 1\n"
    libcst = header.replace("import torch\n", "import torch\n" + ADDED)
    assert placed(header, libcst) == libcst


def test_without_a_torch_import_nothing_moves():
    header = "import os\n\nfrom model import GPT\n\nx = 1\n"
    libcst = header.replace("from model import GPT\n", "from model import GPT\n" + ADDED)
    assert placed(header, libcst) == libcst


def test_an_added_standard_library_import_joins_the_standard_library_group_in_order():
    header = '"""Doc."""\nimport argparse\nimport sys\nfrom pathlib import Path\n\nimport torch\n\nfrom model import GPT\n\nx = 1\n'
    libcst = header.replace("from model import GPT\n", "from model import GPT\nimport os\n" + ADDED)
    assert placed(header, libcst) == (
        '"""Doc."""\nimport argparse\nimport os\nimport sys\nfrom pathlib import Path\n\nimport torch\n'
        + ADDED
        + "\nfrom model import GPT\n\nx = 1\n"
    )


def test_an_added_standard_library_import_first_in_its_group_keeps_the_group_s_leading_lines():
    header = '"""Doc."""\n\nimport sys\n\nimport torch\n\nx = 1\n'
    libcst = header.replace("import torch\n", "import torch\nimport os\n")
    assert placed(header, libcst) == '"""Doc."""\n\nimport os\nimport sys\n\nimport torch\n\nx = 1\n'


def test_imports_already_there_are_not_moved():
    header = "import torch\n\nfrom accelerate import Accelerator\n\nx = 1\n"
    assert placed(header, header) == header


def test_an_import_the_conversion_made_unused_is_dropped_and_one_still_used_stays():
    import libcst as cst

    from regcomp_lint.codemod.imports import drop_unused_imports

    module = cst.parse_module(
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from torch.distributed import barrier, init_process_group\n"
        "init_process_group('gloo')\n"
    )
    unused = [
        ("torch.nn.parallel", "DistributedDataParallel", "DDP"),
        ("torch.distributed", "barrier", None),
        ("torch.distributed", "init_process_group", None),
    ]
    assert drop_unused_imports(module, unused).code == (
        "from torch.distributed import init_process_group\ninit_process_group('gloo')\n"
    )


def merged(header: str) -> str:
    """The header with ``TorchDynamoPlugin`` added the way the conversion adds it (libcst, then
    ``place_added_imports``)."""
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    before = cst.parse_module(header)
    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, "accelerate.utils", "TorchDynamoPlugin")
    return place_added_imports(before, before.visit(AddImportsVisitor(context))).code


def test_a_name_added_to_an_existing_from_import_goes_where_isort_puts_it():
    """diffusers' `from accelerate.utils import ProjectConfiguration, set_seed`: ruff's isort
    orders constants, classes, then functions, case-insensitively (TorchDynamoPlugin was put first)."""
    assert merged("from accelerate.utils import ProjectConfiguration, set_seed\n\nx = 1\n") == (
        "from accelerate.utils import ProjectConfiguration, TorchDynamoPlugin, set_seed\n\nx = 1\n"
    )
    assert merged("from accelerate.utils import DistributedDataParallelKwargs\n") == (
        "from accelerate.utils import DistributedDataParallelKwargs, TorchDynamoPlugin\n"
    )
    assert merged("from accelerate.utils import LoggerType, set_seed as seed_all\n") == (
        "from accelerate.utils import LoggerType, TorchDynamoPlugin, set_seed as seed_all\n"
    )
    assert merged("from accelerate.utils import DEFAULT_X, set_seed\n") == (
        "from accelerate.utils import DEFAULT_X, TorchDynamoPlugin, set_seed\n"
    )


def test_a_name_added_to_an_unsorted_from_import_goes_after_the_names_that_sort_before_it():
    assert merged("from accelerate.utils import set_seed, ProjectConfiguration\n") == (
        "from accelerate.utils import set_seed, ProjectConfiguration, TorchDynamoPlugin\n"
    )


def test_a_name_added_to_a_parenthesized_from_import_follows_its_layout():
    header = "from accelerate.utils import (\n    ProjectConfiguration,  # config\n    set_seed,\n)\n"
    assert merged(header) == (
        "from accelerate.utils import (\n    ProjectConfiguration,  # config\n    TorchDynamoPlugin,\n    set_seed,\n)\n"
    )
    header = "from accelerate.utils import (\n    DistributedType,\n    ProjectConfiguration,\n)\n"
    assert merged(header) == (
        "from accelerate.utils import (\n    DistributedType,\n    ProjectConfiguration,\n    TorchDynamoPlugin,\n)\n"
    )
    header = "from accelerate.utils import (ProjectConfiguration,\n                              set_seed)\n"
    assert merged(header) == (
        "from accelerate.utils import (ProjectConfiguration,\n                              TorchDynamoPlugin,\n"
        "                              set_seed)\n"
    )


def test_imports_libcst_put_above_a_leading_try_leave_no_blank_first_line_when_moved():
    # survey 20e (h-mem bAbI train.py): `try: import comet_ml` first, a whitespace-only line
    # after the torch group; libcst put the imports above the try, with a blank line before it,
    # and the move left that blank line as the file's first line
    header = (
        "try:\n    import wandb\nexcept ImportError:\n    wandb = None\n\nimport torch\n    \nimport logging\n\nx = 1\n"
    )
    result = placed(header, ADDED + "\n" + header)
    assert result.startswith("try:\n"), result
    assert "import torch\n" + ADDED in result, result
