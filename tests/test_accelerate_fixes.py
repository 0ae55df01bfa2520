"""How a fix spells accelerate names, and the ``dynamo_backend`` → plugin rewrite."""

from __future__ import annotations

import ast

from regcomp_lint.analysis import callsites
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.checks.accelerate_fixes import backend_keyword_to_plugin, local_name
from regcomp_lint.files.source import SourceFile, apply_edits
from regcomp_lint.lint.engine import walk


def context(src: str) -> FileContext:
    ctx = FileContext(SourceFile("a.py", src), ast.parse(src))
    walk(ctx, [])  # fills the import map
    return ctx


def spell_compile_regions(src: str):
    found = local_name(context(src), callsites.COMPILE_REGIONS, "accelerate.utils", "compile_regions")
    if found is None:
        return None
    name, edit = found
    return name, edit is not None


def test_local_name_reuses_imports_and_aliases():
    assert spell_compile_regions("from accelerate.utils import compile_regions\n") == ("compile_regions", False)
    assert spell_compile_regions("from accelerate.utils.other import compile_regions as cr\n") == ("cr", False)
    assert spell_compile_regions("from accelerate.utils import *\n") == ("compile_regions", False)
    assert spell_compile_regions("import torch\n") == ("compile_regions", True)


def test_local_name_refuses_to_shadow():
    assert spell_compile_regions("from mylib import compile_regions\n") is None
    assert spell_compile_regions("def compile_regions(m):\n    return m\n") is None
    assert spell_compile_regions("compile_regions = None\n") is None


def rewrite(src: str, extra: str = "") -> str | None:
    ctx = context(src)
    call = next(n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call))
    kw = next(k for k in call.keywords if k.arg == "dynamo_backend")
    edits = backend_keyword_to_plugin(ctx, kw, extra)
    return None if edits is None else apply_edits(src, edits)


def test_backend_keyword_rewrite_keeps_value_text():
    src = "from accelerate.utils import TorchDynamoPlugin\nA(dynamo_backend =  ('eager'))\n"
    assert rewrite(src, ", use_regional_compilation=True") == (
        "from accelerate.utils import TorchDynamoPlugin\nA(dynamo_plugin=TorchDynamoPlugin(backend=('eager'), use_regional_compilation=True))\n"
    )


def test_backend_keyword_rewrite_refuses_a_taken_name():
    assert rewrite("from mylib import TorchDynamoPlugin\nA(dynamo_backend='eager')\n") is None
