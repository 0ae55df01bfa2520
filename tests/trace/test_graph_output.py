"""``write_graph``: the region graph as DOT, JSON and self-contained HTML."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import networkx as nx
import pytest

from regcomp_lint.trace.errors import TraceError
from regcomp_lint.trace.graph_output import render_dot, render_html, write_graph

NASTY = 'extra<b>&"x'  # a ModuleDict key may be any string: it must be escaped everywhere


def add(g, path, cls, params, parent=None, *, order=0, group=None, fullgraph=None, breaks=0, recompiles=0):
    g.add_node(
        path,
        cls=cls,
        params=params,
        buffers=0,
        order=order,
        group=group,
        fullgraph=fullgraph,
        breaks=breaks,
        recompiles=recompiles,
    )
    if parent is not None:
        g.add_edge(parent, path, name=path.rsplit(".", 1)[-1])


def make_graph(n_blocks=3):
    """root ─ embed, blocks (ModuleList of Block: attn + mlp), stem (Sequential of 2 Conv), head."""
    g = nx.DiGraph(model="TinyNet", device="cpu")
    add(g, "", "TinyNet", 1_234_567, order=0, fullgraph=False)
    add(g, "embed", "Embedding", 512, "", order=1)
    add(g, "blocks", "ModuleList", 3_000, "", order=None)
    members = []
    for i in range(n_blocks):
        p = f"blocks.{i}"
        members.append(p)
        add(g, p, "Block", 1_000, "blocks", order=2 + 3 * i, group="blocks", fullgraph=i != 1, recompiles=1 if i else 0)
        add(g, p + ".attn", "Attention", 600, p, order=3 + 3 * i, breaks=2 if i == 1 else 0)
        add(g, p + ".mlp", "MLP", 400, p, order=4 + 3 * i)
    add(g, "stem", "Sequential", 100, "", order=40)
    for i in range(2):
        add(g, f"stem.{i}", "Conv2d", 50, "stem", order=41 + i, group="stem", fullgraph=True)
    add(g, "head", "Linear", 2_000, "", order=50, breaks=1, fullgraph=False)
    add(g, NASTY, "Identity", 0, "", order=None)
    g.graph["groups"] = [
        {"name": "blocks", "class": "Block", "count": n_blocks, "container": "ModuleList", "members": members},
        {"name": "stem", "class": "Conv2d", "count": 2, "container": "Sequential", "members": ["stem.0", "stem.1"]},
    ]
    return g


# --- a small DOT reader: enough to check the structure --------------------------------------------

_QUOTED = r'"((?:[^"\\]|\\.)*)"'


def _unquote(text):
    return re.sub(r"\\(.)", r"\1", text)


def parse_dot(text):
    assert text.startswith("digraph ") and text.rstrip().endswith("}")
    stripped = re.sub(_QUOTED, '""', text)  # braces inside strings do not count
    assert stripped.count("{") == stripped.count("}")
    nodes, edges = {}, []
    for line in text.splitlines():
        edge = re.match(rf"\s*{_QUOTED}\s*->\s*{_QUOTED}\s*\[(.*)\];$", line)
        if edge:
            edges.append((_unquote(edge.group(1)), _unquote(edge.group(2))))
            continue
        node = re.match(rf"\s*{_QUOTED}\s*\[(.*)\];$", line)
        if node:
            nodes[_unquote(node.group(1))] = node.group(2)
    return nodes, edges


def label_of(attrs):
    match = re.search(r"label=" + _QUOTED, attrs)
    return [_unquote(line) for line in match.group(1).split("\\n")] if match else None


def test_dot_collapses_groups_into_clusters():
    g = make_graph()
    nodes, edges = parse_dot(render_dot(g))
    assert "blocks[0..2]" in nodes and "stem[0..1]" in nodes
    assert not any(n.startswith("blocks.") or n.startswith("stem.") for n in nodes)
    group = nodes["blocks[0..2]"]
    assert label_of(group)[:3] == ["blocks[0..2]", "Block ×3", "1K params each"]
    assert "2 graph breaks" in label_of(group) and "2 recompiles" in label_of(group)
    assert "#c0392b" in group  # a member has breaks: red
    assert "#2e7d32" in nodes["stem[0..1]"]  # every member fullgraph-ok: green
    assert "#c0392b" in nodes["head"]
    assert label_of(nodes[""])[:3] == ["(root)", "TinyNet", "1.2M params"]
    assert label_of(nodes[NASTY])[0] == NASTY  # quotes escaped, read back whole
    assert ("blocks", "blocks[0..2]") in edges and ("stem", "stem[0..1]") in edges
    assert ("", "head") in edges and ("", NASTY) in edges
    assert re.search(r'subgraph "cluster_group_0" \{\n\s+label="group blocks: Block ×3 \(ModuleList\)"', render_dot(g))


def test_dot_uncollapsed_has_every_node_and_edge():
    g = make_graph()
    nodes, edges = parse_dot(render_dot(g, collapse=False))
    assert set(g.nodes) <= set(nodes)
    assert set(g.edges) == set(edges)
    assert label_of(nodes["blocks.1.attn"]) == ["blocks.1.attn", "Attention", "600 params", "2 graph breaks"]


def test_dot_large_model_is_one_node_per_group(tmp_path):
    g = nx.DiGraph(model="Llama", device="meta")
    add(g, "", "LlamaForCausalLM", 70_000_000_000)
    add(g, "model", "LlamaModel", 69_000_000_000, "")
    add(g, "model.layers", "ModuleList", 68_000_000_000, "model", order=None)
    members = []
    for i in range(80):
        members.append(f"model.layers.{i}")
        add(g, members[-1], "LlamaDecoderLayer", 856_000_000, "model.layers", group="model.layers")
        for sub in ("self_attn", "mlp", "input_layernorm"):
            add(g, f"{members[-1]}.{sub}", sub, 1, members[-1])
    g.graph["groups"] = [
        {
            "name": "model.layers",
            "class": "LlamaDecoderLayer",
            "count": 80,
            "container": "ModuleList",
            "members": members,
        }
    ]
    out = tmp_path / "llama.dot"
    write_graph(g, str(out))
    nodes, _ = parse_dot(out.read_text())
    assert label_of(nodes["model.layers[0..79]"])[1:3] == ["LlamaDecoderLayer ×80", "856M params each"]
    assert len([n for n in nodes if not n.startswith("legend:")]) == 4
    assert label_of(nodes[""])[2] == "70B params"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_graphviz_accepts_the_dot(tmp_path):
    for collapse in (True, False):
        out = tmp_path / f"g{collapse}.dot"
        write_graph(make_graph(), str(out), collapse=collapse)
        done = subprocess.run(["dot", "-Tsvg", str(out)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "<svg" in done.stdout


def test_json_round_trips(tmp_path):
    g = make_graph()
    out = tmp_path / "g.json"
    write_graph(g, str(out))
    text = out.read_text(encoding="utf-8")
    data = json.loads(text)
    back = nx.node_link_graph(data, edges="edges")
    assert isinstance(back, nx.DiGraph)
    assert list(back.nodes) == list(g.nodes)
    assert dict(back.nodes(data=True)) == dict(g.nodes(data=True))
    assert {(u, v): d for u, v, d in back.edges(data=True)} == {(u, v): d for u, v, d in g.edges(data=True)}
    assert back.graph == g.graph
    # stable: keys sorted, the same bytes every time
    assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_graph(g, str(out))
    assert out.read_text(encoding="utf-8") == text


def test_json_makes_odd_values_safe(tmp_path):
    g = make_graph()
    g.nodes["head"]["shape"] = (2, 3)
    g.nodes["head"]["tags"] = {"b", "a"}
    g.nodes["head"]["score"] = float("nan")
    g.nodes["head"]["obj"] = object()
    g.graph["extra"] = {1: "one"}
    out = tmp_path / "g.json"
    write_graph(g, str(out))
    data = json.loads(out.read_text())
    head = next(n for n in data["nodes"] if n["id"] == "head")
    assert head["shape"] == [2, 3] and head["tags"] == ["a", "b"] and head["score"] is None
    assert head["obj"].startswith("<object object")
    assert data["graph"]["extra"] == {"1": "one"}


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.attrs, self.tags, self.raw_blocks = [], [], [], []
        self._in = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        self._in = tag if tag in ("script", "style") else None

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        (self.raw_blocks if self._in else self.text).append(data)


def test_html_is_self_contained_and_has_every_node(tmp_path):
    g = make_graph()
    g.add_node("<script>alert(1)</script>", cls="Evil</span>", params=0, order=None)
    g.add_edge("", "<script>alert(1)</script>", name="<script>alert(1)</script>")
    out = tmp_path / "g.html"
    write_graph(g, str(out))
    page_text = out.read_text(encoding="utf-8")
    page = _Page()
    page.feed(page_text)
    assert page.tags[0] == "html" and "title" in page.tags and "details" in page.tags
    assert page.tags.count("script") == 1 and page.tags.count("style") == 1  # inline only
    assert "<script>alert(1)</script>" not in page_text.replace("<script>", "", 1)  # escaped
    # nothing is fetched: no link/img/iframe tags, no src/href attributes, no URLs in code
    assert not {"link", "img", "iframe", "object", "embed", "base"} & set(page.tags)
    assert not [a for a in page.attrs if a[1] in ("src", "href", "action", "srcset")]
    assert not [a for a in page.attrs if re.search(r"(https?:)?//", a[2])]
    for block in page.raw_blocks:
        assert not re.search(r"https?://|@import|url\(", block)
    text = " ".join(page.text)
    for node in g.nodes:
        if node:
            assert node in text, node  # shown (and so escaped) once at least
    assert "TinyNet" in text and "legend" in text.lower()
    # the groups are collapsed: one summary per group, with the range and the count
    assert "blocks[0..2]" in text and "×3" in text and "stem[0..1]" in text
    assert "compile_regions" in text  # the Sequential group says Accelerate does not see it
    assert "2 graph breaks" in text and "1 graph break" in text and "fullgraph ✓" in text


def test_html_title_and_escaping_of_model_name():
    g = make_graph()
    g.graph["model"] = "A<&>B"
    page = render_html(g)
    assert "<title>Region graph — A&lt;&amp;&gt;B (cpu)</title>" in page
    assert "A<&>B" not in page


def test_groups_derived_from_node_attributes_when_missing():
    g = make_graph()
    del g.graph["groups"]
    nodes, _ = parse_dot(render_dot(g))
    assert "blocks[0..2]" in nodes and "stem[0..1]" in nodes


def test_non_contiguous_members_are_listed():
    g = make_graph()
    g.graph["groups"][0]["members"] = ["blocks.0", "blocks.2"]
    nodes, _ = parse_dot(render_dot(g))
    assert "blocks[0,2]" in nodes and "blocks.1" in nodes


def test_bad_suffix_and_unwritable_path(tmp_path):
    with pytest.raises(TraceError, match=r"\.dot, \.json or \.html"):
        write_graph(make_graph(), str(tmp_path / "g.png"))
    with pytest.raises(TraceError, match="cannot write"):
        write_graph(make_graph(), str(tmp_path / "no" / "such" / "g.json"))
    assert list(tmp_path.iterdir()) == []


def test_html_escape_helper_matches_stdlib():
    assert html.escape(NASTY, quote=True) in render_html(make_graph())
