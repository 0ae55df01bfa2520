"""The diffusers ``_repeated_blocks`` table: its shape, that every entry cites its source line,
and that RC503 and the tracer read it (diffusers itself is not installed here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from regcomp_lint.checks.rc503_prefer_compile_repeated_blocks import PreferCompileRepeatedBlocks
from regcomp_lint.knowledge import diffusers_blocks
from regcomp_lint.knowledge.diffusers_blocks import (
    COMPILE_REPEATED_BLOCKS_SINCE,
    DIFFUSERS_REPEATED_BLOCKS,
    LISTED_FROM,
    repeated_blocks_of,
)

SOURCE = Path(diffusers_blocks.__file__).read_text(encoding="utf-8")
#: the model classes diffusers 0.35.0 (the release that added compile_repeated_blocks) already listed
IN_0_35 = {
    "ChromaTransformer2DModel",
    "FluxTransformer2DModel",
    "HunyuanVideoTransformer3DModel",
    "LTXVideoTransformer3DModel",
    "QwenImageTransformer2DModel",
    "UNet2DConditionModel",
    "WanTransformer3DModel",
}


def _entry_text(model_class: str) -> str:
    """The table's source text for one entry, up to and including its comment."""
    start = SOURCE.index(f'"{model_class}":')
    end = SOURCE.index("\n", SOURCE.index("#", start))
    return SOURCE[start:end]


@pytest.mark.parametrize("model_class", sorted(DIFFUSERS_REPEATED_BLOCKS))
def test_every_entry_names_blocks_and_cites_the_file_and_line(model_class):
    blocks = DIFFUSERS_REPEATED_BLOCKS[model_class]
    assert blocks and all(re.fullmatch(r"[A-Z][A-Za-z0-9]*", b) for b in blocks), blocks
    assert len(set(blocks)) == len(blocks)
    comment = _entry_text(model_class).rsplit("#", 1)[1]
    assert re.search(r"(transformers|unets|autoencoders)/\w+\.py:\d+", comment), comment
    assert ("since 0.35.0" in comment) is (model_class in IN_0_35)


def test_the_table_covers_the_release_it_was_read_from():
    # diffusers 0.42.1 sets _repeated_blocks in 48 model classes (ast scan of the wheel)
    assert LISTED_FROM == "0.42.1" and len(DIFFUSERS_REPEATED_BLOCKS) == 48
    assert IN_0_35 <= set(DIFFUSERS_REPEATED_BLOCKS)
    assert COMPILE_REPEATED_BLOCKS_SINCE == "0.35.0"


def test_block_classes_shared_between_models_are_the_same_name():
    # the Wan family reuses WanTransformerBlock; the UNet names the generic BasicTransformerBlock
    users = [m for m, blocks in DIFFUSERS_REPEATED_BLOCKS.items() if "WanTransformerBlock" in blocks]
    assert sorted(users) == [
        "ChronoEditTransformer3DModel",
        "WanAnimateTransformer3DModel",
        "WanTransformer3DModel",
        "WanVACETransformer3DModel",
    ]
    assert repeated_blocks_of("UNet2DConditionModel") == ("BasicTransformerBlock",)


def test_unknown_classes_name_no_blocks():
    assert repeated_blocks_of("AutoencoderKL") == ()
    assert repeated_blocks_of("") == ()


def test_rc503_docs_name_the_release_the_table_comes_from():
    docs = PreferCompileRepeatedBlocks.__doc__ or ""
    assert f"{len(DIFFUSERS_REPEATED_BLOCKS)} model classes" in docs
    assert f"diffusers {LISTED_FROM}" in docs and f"diffusers {COMPILE_REPEATED_BLOCKS_SINCE}" in docs


@pytest.mark.parametrize(
    "model_class", ["LTX2VideoTransformer3DModel", "HunyuanVideoTransformer3DModel", "ZImageTransformer2DModel"]
)
def test_rc503_reports_classes_beyond_the_first_five(model_class):
    from regcomp_lint.api import lint_source

    source = (
        "import torch\n"
        f"from diffusers import {model_class}\n"
        f"dit = {model_class}.from_pretrained('x', subfolder='transformer')\n"
        "dit = torch.compile(dit)\n"
    )
    found = [d for d in lint_source(source, "infer.py") if d.code == "RC503"]
    assert [d.location.row for d in found] == [4]
    assert repeated_blocks_of(model_class)[0] in found[0].message
