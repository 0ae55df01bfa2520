"""``regions.build``: the module tree, groups of identical blocks and the region partition."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from regcomp_lint.trace.regions import amount, build  # noqa: E402


class Block(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)


class Other(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(self.fc(x))


class ListModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.body = nn.Module()
        self.body.layers = nn.ModuleList([Block() for _ in range(3)])
        self.head = nn.Linear(4, 2)


class SeqModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 1)
        self.blocks = nn.Sequential(Block(), nn.ReLU(), Block(), nn.ReLU(), Block())
        self.head = nn.Linear(4, 2)


class MixedModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block(), Block(), Other(), Other(), Block(dim=8)])


def test_modulelist_group_and_partition():
    region = build(ListModel())
    (group,) = region.groups
    assert (group.name, group.cls, group.count, group.container) == ("body.layers", "Block", 3, "ModuleList")
    assert group.members == ["body.layers.0", "body.layers.1", "body.layers.2"]
    assert group.collapsed == "body.layers[0..2]"
    assert group.accelerate_sees is True and group.params_each == 20
    assert region.regions == ["embed", "body.layers.0", "body.layers.1", "body.layers.2", "head"]
    nodes = region.graph.nodes
    assert nodes["body.layers.1"]["group"] == "body.layers" and nodes["head"]["group"] is None
    assert nodes[""]["params"] == sum(p.numel() for p in ListModel().parameters())
    assert ("body.layers", "body.layers.2") in region.graph.edges
    assert region.graph.edges["body.layers", "body.layers.2"]["name"] == "2"


def test_sequential_group_skips_activations_and_is_not_seen_by_accelerate():
    region = build(SeqModel())
    (group,) = region.groups
    assert group.container == "Sequential" and group.accelerate_sees is False
    assert group.members == ["blocks.0", "blocks.2", "blocks.4"]
    assert group.collapsed == "blocks[0,2,4]"
    # the ReLUs are compiled with the rest of the container: their own regions
    assert region.regions == ["stem", "blocks.0", "blocks.1", "blocks.2", "blocks.3", "blocks.4", "head"]


def test_mixed_modulelist_has_one_group_per_signature():
    region = build(MixedModel())
    by_cls = {g.cls: g for g in region.groups}
    assert set(by_cls) == {"Block", "Other"}
    assert by_cls["Block"].members == ["layers.0", "layers.1"]  # layers.4 has other shapes
    assert by_cls["Other"].members == ["layers.2", "layers.3"]
    assert by_cls["Block"].name == "layers[Block]" and by_cls["Other"].name == "layers[Other]"
    assert all(g.accelerate_sees is False for g in region.groups)  # mixed classes


def test_region_of_is_the_longest_region_prefix():
    region = build(ListModel())
    assert region.region_of("body.layers.1.fc") == "body.layers.1"
    assert region.region_of("body.layers.1") == "body.layers.1"
    assert region.region_of("head") == "head"
    assert region.region_of("body") == "body"  # code of a container above the regions
    assert region.region_of("") == ""


def test_a_model_without_children_is_one_region():
    region = build(nn.Linear(2, 2))
    assert region.regions == [""] and region.groups == []


def test_amount():
    assert [amount(n) for n in (0, 999, 1_000, 1_234, 1_500, 12_345_678, 124_439_808, 7 * 10**10)] == [
        "0",
        "999",
        "1K",
        "1.2K",
        "1.5K",
        "12.3M",
        "124M",
        "70B",
    ]
    assert amount(None) == "?"
