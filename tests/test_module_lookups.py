"""module_file with the scope question's memo (Lookups) answers as it does without it."""

from __future__ import annotations

import os

from regcomp_lint.analysis.reachability.modules import Lookups, module_file, module_in_folder


def _tree(root):
    for rel in (
        "pkg/__init__.py",
        "pkg/a.py",
        "pkg/sub/__init__.py",
        "pkg/sub/b.py",
        "pkg/sub/deep/c.py",
        "torch.py",
        "pkg/sub/layers/__init__.py",
        "other/x.py",
    ):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    (root / "pkg" / "sub" / "notpkg").mkdir()


NAMES = [
    "pkg",
    "pkg.a",
    "pkg.sub",
    "pkg.sub.b",
    "pkg.sub.deep.c",
    "pkg.missing",
    "torch",
    "torch.nn",
    "other.x",
    "other",
    "layers",
    ".",
    ".b",
    ".layers",
    "..a",
    "...other.x",
    ".notpkg",
    "nothing.at.all",
    "sub.b",
]


def test_memo_gives_the_same_answers(tmp_path):
    _tree(tmp_path)
    importers = [
        tmp_path / "pkg" / "sub" / "deep" / "c.py",
        tmp_path / "pkg" / "sub" / "b.py",
        tmp_path / "pkg" / "a.py",
        tmp_path / "other" / "x.py",
        tmp_path / "main.py",
    ]
    memo = Lookups()
    for _ in range(2):  # the second round answers from the memo
        for importer in importers:
            for name in NAMES:
                plain = module_file(str(importer), name)
                assert module_file(str(importer), name, memo) == plain, (importer, name)
                folder = os.path.dirname(os.path.abspath(importer))
                assert module_in_folder(folder, name, memo) == plain, (importer, name)
