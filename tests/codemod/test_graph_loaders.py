"""torch_geometric's NeighborLoader family under prepare() (codemod/graph_loaders.py).

PyG turns each sample into a ``Data`` batch in the loader's own iterator when
``filter_per_worker`` is False (what it infers for a graph on the GPU); accelerate's ``prepare()``
rebuilds the loader as a plain DataLoader without that iterator, so the converted script got raw
``SamplerOutput`` objects (replica, survey 23d: AttributeError at the first batch on 1 and 2
processes). Over a CPU graph the rebuilt loader yields the same batches and the script converts.
"""

from __future__ import annotations

from regcomp_lint.codemod.convert import convert_source

SCRIPT = """\
import torch
import torch.nn.functional as F
from torch_geometric.datasets import Planetoid
from torch_geometric.loader import NeighborLoader
from torch_geometric.nn import SAGEConv


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = Planetoid("data", "Cora")[0]{placed}
    model = SAGEConv(data.num_features, 7).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loader = NeighborLoader(data, num_neighbors=[10, 5], batch_size=64, input_nodes=data.train_mask{keyword})
    for epoch in range(3):
        for batch in loader:
            batch = batch.to(device)
            out = model(batch.x, batch.edge_index)[: batch.batch_size]
            loss = F.cross_entropy(out, batch.y[: batch.batch_size])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
"""


def _result(placed: str = "", keyword: str = ""):
    return convert_source(SCRIPT.format(placed=placed, keyword=keyword), "gnn.py")


def test_a_graph_moved_to_the_gpu_is_refused_naming_the_loader_and_the_move():
    result = _result(placed=".to(device)")
    assert result.refused is not None
    assert "line 13" in result.refused and "NeighborLoader" in result.refused
    assert "line 10" in result.refused and "filter_per_worker=False" in result.refused


def test_a_graph_moved_in_place_is_refused():
    result = convert_source(
        SCRIPT.format(placed="", keyword="").replace("[0]\n", "[0]\n    data.to(device)\n", 1), "gnn.py"
    )
    assert result.refused is not None and "line 11 (.to(device))" in result.refused


def test_filter_per_worker_false_is_refused():
    result = _result(keyword=", filter_per_worker=False")
    assert result.refused is not None and "filter_per_worker=False" in result.refused


def test_a_cpu_graph_or_filtering_in_the_collate_fn_converts():
    for placed, keyword in (("", ""), (".to(device)", ", filter_per_worker=True")):
        result = _result(placed=placed, keyword=keyword)
        assert result.refused is None, result.refused
        assert "accelerator.prepare(model, optimizer, loader)" in result.text
