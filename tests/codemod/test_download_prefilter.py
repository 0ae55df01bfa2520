"""``first_downloads.may_download``: the text test that lets a script without any download skip
the statement-by-statement search must say yes whenever a statement downloads."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from regcomp_lint.codemod.first_downloads import downloads, may_download
from regcomp_lint.codemod.source_metadata import resolve_scopes
from regcomp_lint.codemod.tree import Tree, clear_find_cache, find_all
from regcomp_lint.knowledge.torch_api import DOWNLOADERS

CASES = {
    "keyword": ("from torchvision import datasets\nd = datasets.MNIST('.', download=True)\n", True),
    "alias": ("import requests as r\nwith r.get(url) as f:\n    pass\n", True),
    "from_import_alias": ("from tarfile import open as o\nwith o(path) as t:\n    t.extractall()\n", True),
    "submodule": ("import urllib.request\nurllib.request.urlretrieve(url, path)\n", True),
    "none": ("import torch\nx = torch.ones(2)\nopen(path).read()\n", False),
    "local_get": ("def get(url):\n    return url\nget('x')\n", False),
}


def _tree(text: str) -> Tree:
    wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
    resolve_scopes(wrapper)
    return Tree(wrapper)


@pytest.mark.parametrize("name", sorted(CASES))
def test_may_download_says_yes_where_a_statement_downloads(name: str) -> None:
    text, downloading = CASES[name]
    tree = _tree(text)
    try:
        found = any(downloads(tree, s) for s in find_all(tree.module, (cst.SimpleStatementLine, cst.With)))
        assert found == downloading
        assert may_download(tree) or not found
        if name == "none":
            assert not may_download(tree)
    finally:
        clear_find_cache()


def test_every_downloader_written_out_is_seen() -> None:
    for name in DOWNLOADERS:
        module, _, attr = name.rpartition(".")
        tree = _tree(f"import {module}\n{name}(x)\n")
        try:
            assert may_download(tree)
            assert downloads(tree, tree.module.body[1])
        finally:
            clear_find_cache()
