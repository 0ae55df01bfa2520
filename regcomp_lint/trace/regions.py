"""The region graph: the module tree as a networkx graph, and the groups of repeated blocks.

A *group* is two or more structurally identical siblings (same class, same parameter and buffer
names, shapes and dtypes, same submodule layout) in an ``nn.ModuleList`` or ``nn.Sequential``:
the blocks regional compilation compiles once and reuses. Accelerate's ``compile_regions`` (and
``TorchDynamoPlugin(use_regional_compilation=True)``) only regionalize a ``ModuleList`` whose
children are all of one class; a group in a ``Sequential`` or in a mixed list is compiled there as
part of a bigger graph, and the report says so (``accelerate_sees``).

Node attributes (also the contract of ``graph_output``): ``cls``, ``params`` (subtree), ``buffers``,
``order`` (first call, from the probe run; None when never called), ``group``, ``fullgraph``,
``breaks``, ``recompiles``. Edges parent -> child carry ``name``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx


@dataclass
class Group:
    name: str  # "transformer.h" (the container), or "layers[Block]" in a mixed container
    cls: str
    container: str  # "ModuleList" | "Sequential"
    container_path: str
    members: list[str]  # module paths, in order
    params_each: int
    accelerate_sees: bool  # compile_regions regionalizes it

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def collapsed(self) -> str:
        """``transformer.h[0..11]`` for reports."""
        indices = [m.rsplit(".", 1)[-1] for m in self.members]
        if all(i.isdigit() for i in indices):
            first, last = int(indices[0]), int(indices[-1])
            if [int(i) for i in indices] == list(range(first, last + 1)):
                return f"{self.container_path}[{first}..{last}]"
            return f"{self.container_path}[{','.join(indices)}]"
        return self.name


@dataclass
class RegionGraph:
    graph: nx.DiGraph
    groups: list[Group] = field(default_factory=list)
    group_of: dict[str, Group] = field(default_factory=dict)  # member path -> its group

    regions: list[str] = field(default_factory=list)  # the partition, in module order
    region_set: set[str] = field(default_factory=set)

    def region_of(self, path: str) -> str:
        """The region containing module ``path``: the longest region prefix (``transformer.h.3``
        for ``transformer.h.3.attn``); code of a container above the regions (the root's own
        forward, ``transformer``'s) is the container itself."""
        parts = path.split(".") if path else []
        for i in range(len(parts), 0, -1):
            prefix = ".".join(parts[:i])
            if prefix in self.region_set:
                return prefix
        return path


def signature(module) -> tuple:
    """What makes two blocks interchangeable for one compiled artifact."""
    params = tuple((n, tuple(p.shape), str(p.dtype)) for n, p in module.named_parameters())
    buffers = tuple((n, tuple(b.shape), str(b.dtype)) for n, b in module.named_buffers())
    layout = tuple((n, type(m).__qualname__) for n, m in module.named_modules())
    return (type(module).__module__, type(module).__qualname__, params, buffers, layout)


def build(model) -> RegionGraph:
    import torch

    graph = nx.DiGraph(model=type(model).__name__)
    for path, module in model.named_modules(remove_duplicate=False):
        if path in graph:
            continue
        graph.add_node(
            path,
            cls=type(module).__name__,
            params=sum(p.numel() for p in module.parameters()),
            buffers=sum(b.numel() for b in module.buffers()),
            order=None,
            group=None,
            fullgraph=None,
            breaks=0,
            recompiles=0,
        )
        if path:
            parent, _, name = path.rpartition(".")
            graph.add_edge(parent, path, name=name)
    region = RegionGraph(graph)
    for path, module in model.named_modules():
        if isinstance(module, (torch.nn.ModuleList, torch.nn.Sequential)):
            region.groups.extend(_groups_in(path, module))
    for group in region.groups:
        for member in group.members:
            region.group_of[member] = group
            graph.nodes[member]["group"] = group.name
    region.regions = _partition(graph, "", region.group_of)
    region.region_set = set(region.regions)
    graph.graph["groups"] = [
        {"name": g.name, "class": g.cls, "count": g.count, "container": g.container, "members": list(g.members)}
        for g in region.groups
    ]
    return region


def _groups_in(path: str, container) -> list[Group]:
    import torch

    children = list(container.named_children())
    if len(children) < 2:
        return []
    by_signature: dict[tuple, list[tuple[str, torch.nn.Module]]] = {}
    for name, child in children:
        if not child._modules and not any(True for _ in child.parameters(recurse=False)):
            continue  # activations, dropout: nothing to compile separately
        by_signature.setdefault(signature(child), []).append((name, child))
    kind = "ModuleList" if isinstance(container, torch.nn.ModuleList) else "Sequential"
    one_class = len({type(c) for _, c in children}) == 1
    repeated = [members for members in by_signature.values() if len(members) >= 2]
    groups = []
    for members in repeated:
        cls = type(members[0][1]).__name__
        whole = len(members) == len(children)
        name = path if (whole and len(repeated) == 1) else f"{path}[{cls}]"
        groups.append(
            Group(
                name=name or "<root>",
                cls=cls,
                container=kind,
                container_path=path,
                members=[f"{path}.{n}" if path else n for n, _ in members],
                params_each=sum(p.numel() for p in members[0][1].parameters()),
                accelerate_sees=kind == "ModuleList" and one_class,
            )
        )
    return groups


def _partition(graph: nx.DiGraph, path: str, group_of: dict[str, Group]) -> list[str]:
    """What regional compilation compiles separately: every group member, and every subtree
    that holds no group (Accelerate's ``compile_regions`` does the same with ModuleList groups)."""
    if path in group_of:
        return [path]
    below = [child for child in graph.successors(path)]
    if path and not any(_holds_group(graph, child, group_of) for child in below):
        return [path]
    if not path and not below:
        return [""]
    out: list[str] = []
    for child in below:
        out.extend(_partition(graph, child, group_of))
    return out


def _holds_group(graph: nx.DiGraph, path: str, group_of: dict[str, Group]) -> bool:
    return path in group_of or any(_holds_group(graph, c, group_of) for c in graph.successors(path))


def amount(n: Any) -> str:
    """``1234567`` -> ``1.2M``: parameter counts in reports and region graphs (``?`` for no count)."""
    try:
        n = int(n)
    except (TypeError, ValueError):
        return "?"
    for limit, unit in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
        if abs(n) >= limit:
            value = n / limit
            text = f"{value:.1f}" if value < 100 else f"{value:.0f}"
            return text.removesuffix(".0") + unit
    return str(n)
