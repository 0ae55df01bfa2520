"""``trace --graph out.{dot,json,html}``: the region graph as a file people (or tools) can read.

The graph is the one ``regions`` builds (a ``networkx.DiGraph``):

- node id: the dotted module path (``""`` is the root model); attributes ``cls``, ``params``,
  ``buffers``, ``order`` (call order, None if never called), ``group`` (or None), ``fullgraph``
  (True / False / None unknown), ``breaks`` and ``recompiles`` (ints);
- edges parent → child with ``name`` (the child's attribute name);
- ``graph.graph``: ``model`` (class name), ``device``, ``groups``: ``[{name, class, count,
  container, members}]``.

Formats, by the file's suffix:

- ``.json``: ``networkx.node_link_data(graph, edges="edges")``, JSON-safe, keys sorted; read it
  back with ``networkx.node_link_graph(data, edges="edges")``.
- ``.dot``: Graphviz source written by hand (no pydot/graphviz needed to write it); groups are
  clusters and a group of identical blocks is one node (``transformer.h[0..11]`` ``GPT2Block ×12``);
  red = graph breaks, green = ``fullgraph=True`` works.
- ``.html``: one self-contained page (inline CSS and JS, nothing fetched): a collapsible module
  tree with classes, parameter counts and badges, the groups collapsed, a legend.
"""

from __future__ import annotations

import html
import json
import math
import os
import tempfile
from collections.abc import Iterable
from typing import Any, TypeGuard

import networkx as nx

from regcomp_lint.trace import html_report
from regcomp_lint.trace.errors import TraceError
from regcomp_lint.trace.regions import amount

__all__ = ["write_graph", "render_dot", "render_json", "render_html", "FORMATS"]

#: the suffixes ``write_graph`` knows (the CLI checks ``--graph`` against them before tracing)
FORMATS = (".dot", ".json", ".html", ".htm")


def write_graph(graph: nx.DiGraph, path: str, *, collapse: bool = True, report: dict | None = None) -> None:
    """Write ``graph`` to ``path`` as DOT, JSON or HTML, chosen by the suffix.

    ``collapse`` (DOT and HTML): draw each group of identical blocks as one node. ``report``
    (HTML): the JSON report, so the page holds every section of the text report too.
    """
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".dot":
        text = render_dot(graph, collapse=collapse)
    elif suffix == ".json":
        text = render_json(graph)
    elif suffix in (".html", ".htm"):
        text = render_html(graph, collapse=collapse, report=report)
    else:
        raise TraceError(f"cannot write a graph to {path!r}: give a file ending in .dot, .json or .html")
    _write_atomic(path, text)


def _write_atomic(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".regcomp-graph-", dir=folder)
    except OSError as exc:
        raise TraceError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise TraceError(f"cannot write {path}: {exc.strerror or exc}") from exc


# ---------------------------------------------------------------------------------------------
# the model of the picture: tree, groups, aggregates


class _View:
    """The graph as a tree, with groups resolved and subtree totals, shared by DOT and HTML."""

    def __init__(self, graph: nx.DiGraph) -> None:
        self.graph = graph
        self.model = str(graph.graph.get("model") or _attr(graph, "", "cls", "model"))
        self.device = graph.graph.get("device")
        self.roots = [n for n in graph.nodes if graph.in_degree(n) == 0]
        if "" in graph and "" in self.roots:
            self.roots.remove("")
            self.roots.insert(0, "")
        self.groups = self._groups()
        self.group_of: dict[Any, dict] = {}
        for group in self.groups:
            for member in group["members"]:
                self.group_of.setdefault(member, group)
        self.totals: dict[Any, tuple[int, int, bool | None]] = {}
        for root in self.roots:
            self._total(root)

    def _groups(self) -> list[dict]:
        graph = self.graph
        groups = []
        raw = graph.graph.get("groups")
        if raw is None:  # no group list: derive one from the nodes' ``group`` attributes
            by_name: dict[str, list] = {}
            for node, data in graph.nodes(data=True):
                if data.get("group"):
                    by_name.setdefault(str(data["group"]), []).append(node)
            raw = [
                {"name": name, "class": _attr(graph, members[0], "cls", "?"), "members": members}
                for name, members in by_name.items()
            ]
        for entry in raw:
            members = [m for m in entry.get("members") or [] if m in graph]
            if not members:
                continue
            name = str(entry.get("name", ""))
            groups.append(
                {
                    "name": name,
                    "class": str(entry.get("class") or _attr(graph, members[0], "cls", "?")),
                    "count": int(entry.get("count") or len(members)),
                    "container": entry.get("container"),
                    "members": members,
                    "label": _member_range(name, members),
                }
            )
        return groups

    def children(self, node: Any) -> list[Any]:
        return list(self.graph.successors(node))

    def _total(self, node: Any) -> tuple[int, int, bool | None]:
        """(breaks, recompiles, fullgraph) over ``node``'s subtree (iteratively: deep trees)."""
        if node in self.totals:
            return self.totals[node]
        order: list[Any] = []
        stack = [node]
        seen = set()
        while stack:
            current = stack.pop()
            if current in seen or current in self.totals:
                continue
            seen.add(current)
            order.append(current)
            stack.extend(self.children(current))
        for current in reversed(order):
            breaks = _int(self.graph, current, "breaks")
            recompiles = _int(self.graph, current, "recompiles")
            verdicts = [self.graph.nodes[current].get("fullgraph")]
            for child in self.children(current):
                b, r, f = self.totals.get(child, (0, 0, None))
                breaks, recompiles = breaks + b, recompiles + r
                verdicts.append(f)
            self.totals[current] = (breaks, recompiles, _own_or(verdicts))
        return self.totals[node]

    def group_totals(self, group: dict) -> tuple[int, int, bool | None]:
        totals = [self._total(m) for m in group["members"]]
        verdicts = [t[2] for t in totals]
        if any(v is False for v in verdicts):
            verdict: bool | None = False
        elif verdicts and all(v is True for v in verdicts):
            verdict = True
        else:
            verdict = None
        return sum(t[0] for t in totals), sum(t[1] for t in totals), verdict

    def collapsible(self, group: dict | None) -> TypeGuard[dict]:
        return group is not None and len(group["members"]) >= 2


def _own_or(verdicts: list) -> bool | None:
    """A subtree's fullgraph verdict: its own when known, else False if any part fails."""
    own = verdicts[0]
    if own is not None:
        return bool(own)
    return False if any(v is False for v in verdicts[1:]) else None


_CONTAINERS = frozenset({"ModuleList", "ModuleDict", "ParameterList", "ParameterDict"})


def _called(graph: nx.DiGraph, node: Any) -> bool:
    """Whether the sample batch ran ``node`` (containers are never called: they count as run)."""
    data = graph.nodes[node]
    return data.get("order") is not None or data.get("cls") in _CONTAINERS


def _attr(graph: nx.DiGraph, node: Any, key: str, default: Any = None) -> Any:
    if node not in graph:
        return default
    value = graph.nodes[node].get(key)
    return default if value is None else value


def _int(graph: nx.DiGraph, node: Any, key: str) -> int:
    try:
        return int(graph.nodes[node].get(key) or 0)
    except (TypeError, ValueError):
        return 0


def _member_range(name: str, members: list) -> str:
    """``transformer.h[0..11]`` for ``transformer.h.0`` … ``transformer.h.11``."""
    prefix = name + "." if name else ""
    suffixes = [str(m)[len(prefix) :] if str(m).startswith(prefix) else str(m) for m in members]
    if all(s.isdigit() for s in suffixes):
        numbers = [int(s) for s in suffixes]
        if len(numbers) > 1 and numbers == list(range(numbers[0], numbers[0] + len(numbers))):
            return f"{name}[{numbers[0]}..{numbers[-1]}]"
    shown = ",".join(suffixes[:6]) + (",…" if len(suffixes) > 6 else "")
    return f"{name}[{shown}]"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# ---------------------------------------------------------------------------------------------
# JSON


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_json_safe(v) for v in value), key=repr)
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        try:
            return _json_safe(value.item())
        except Exception:  # noqa: BLE001 - anything that will not convert becomes text
            pass
    return str(value)


def render_json(graph: nx.DiGraph) -> str:
    data = nx.node_link_data(graph, edges="edges")
    return json.dumps(_json_safe(data), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


# ---------------------------------------------------------------------------------------------
# DOT

_RED, _RED_FILL = "#c0392b", "#f8d7d3"
_GREEN, _GREEN_FILL = "#2e7d32", "#d8f0d8"
_AMBER, _AMBER_FILL = "#d35400", "#fde8cc"
_GREY = "#9e9e9e"


def _dot_id(value: Any) -> str:
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace("\r", " ")
    return f'"{text}"'


def _dot_label(lines: Iterable[str]) -> str:
    """A quoted label whose lines are separated by DOT's ``\\n``."""
    escaped = [
        str(line).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace("\r", " ") for line in lines
    ]
    return '"' + "\\n".join(escaped) + '"'


def _dot_attrs(attrs: dict[str, str]) -> str:
    return "[" + ", ".join(f"{k}={v}" for k, v in attrs.items()) + "]"


def _dot_style(breaks: int, fullgraph: bool | None, called: bool) -> dict[str, str]:
    attrs: dict[str, str] = {}
    style = "rounded,filled" if called else "rounded,filled,dashed"
    if breaks:
        attrs.update(fillcolor=f'"{_RED_FILL}"', color=f'"{_RED}"', penwidth="2")
    elif fullgraph is True:
        attrs.update(fillcolor=f'"{_GREEN_FILL}"', color=f'"{_GREEN}"')
    elif fullgraph is False:
        attrs.update(fillcolor=f'"{_AMBER_FILL}"', color=f'"{_AMBER}"')
    if not called:
        attrs.update(fontcolor=f'"{_GREY}"')
    attrs["style"] = f'"{style}"'
    return attrs


def _extra_lines(breaks: int, recompiles: int) -> list[str]:
    lines = []
    if breaks:
        lines.append(_plural(breaks, "graph break"))
    if recompiles:
        lines.append(_plural(recompiles, "recompile"))
    return lines


def render_dot(graph: nx.DiGraph, *, collapse: bool = True) -> str:
    view = _View(graph)
    title = f"{view.model}" + (f" on {view.device}" if view.device else "") + ": region graph"
    out = [
        "digraph regions {",
        f'  graph [label={_dot_label([title])}, labelloc=t, fontname="Helvetica", fontsize=14,'
        " rankdir=TB, nodesep=0.25, ranksep=0.35];",
        '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", color="#555555",'
        ' fontname="Helvetica", fontsize=10];',
        '  edge [color="#888888", fontname="Helvetica", fontsize=9, arrowsize=0.6];',
    ]
    nodes_outside: list[str] = []
    clusters: dict[int, list[str]] = {}
    edges: list[str] = []
    emitted_groups: set[int] = set()

    def node_line(node: Any) -> str:
        data = graph.nodes[node]
        name = "(root)" if node == "" else str(node)
        lines = [name, str(data.get("cls") or "?"), f"{amount(data.get('params'))} params"]
        breaks, recompiles = _int(graph, node, "breaks"), _int(graph, node, "recompiles")
        lines += _extra_lines(breaks, recompiles)
        attrs = {"label": _dot_label(lines)}
        attrs.update(_dot_style(breaks, data.get("fullgraph"), _called(graph, node)))
        return f"  {_dot_id(node)} {_dot_attrs(attrs)};"

    def group_node_line(group: dict) -> str:
        breaks, recompiles, verdict = view.group_totals(group)
        first = group["members"][0]
        lines = [
            f"{group['label']}",
            f"{group['class']} ×{len(group['members'])}",
            f"{amount(_attr(graph, first, 'params', 0))} params each",
        ]
        lines += _extra_lines(breaks, recompiles)
        called = any(_called(graph, m) for m in group["members"])
        attrs = {"label": _dot_label(lines), "shape": "box3d"}
        attrs.update(_dot_style(breaks, verdict, called))
        attrs["style"] = attrs["style"].replace("rounded,", "")
        return f"  {_dot_id(group['label'])} {_dot_attrs(attrs)};"

    # walk the tree: a collapsed group stands for its members and their subtrees
    stack = [(root, None) for root in reversed(view.roots)]
    visited: set[Any] = set()
    while stack:
        node, parent = stack.pop()
        if node in visited:
            continue
        visited.add(node)
        group = view.group_of.get(node)
        if collapse and view.collapsible(group):
            gid = id(group)
            if gid not in emitted_groups:
                emitted_groups.add(gid)
                clusters.setdefault(gid, []).append(group_node_line(group))
                if parent is not None:
                    edges.append(
                        f"  {_dot_id(parent)} -> {_dot_id(group['label'])}"
                        f" [label={_dot_label(['[' + group['label'].rsplit('[', 1)[1]])}];"
                    )
            continue
        line = node_line(node)
        if group is not None:
            clusters.setdefault(id(group), []).append(line)
        else:
            nodes_outside.append(line)
        if parent is not None:
            name = graph.edges[parent, node].get("name")
            name = str(node).rsplit(".", 1)[-1] if name is None else name
            edges.append(f"  {_dot_id(parent)} -> {_dot_id(node)} [label={_dot_label([name])}];")
        for child in reversed(view.children(node)):
            stack.append((child, node))

    out += nodes_outside
    for index, group in enumerate(view.groups):
        lines = clusters.get(id(group))
        if not lines:
            continue
        container = group.get("container") or "?"
        label = f"group {group['name']}: {group['class']} ×{len(group['members'])} ({container})"
        out.append(f"  subgraph {_dot_id(f'cluster_group_{index}')} {{")
        out.append(
            f'    label={_dot_label([label])}; style="dashed,rounded"; color="#5c6bc0";'
            ' fontcolor="#3949ab"; fontsize=10;'
        )
        out += ["  " + line for line in lines]
        out.append("  }")
    out += edges
    out += [
        '  subgraph "cluster_legend" {',
        '    label="legend"; style="rounded"; color="#bbbbbb"; fontsize=10;',
        f'    "legend: graph breaks" [label="graph breaks", fillcolor="{_RED_FILL}", color="{_RED}", penwidth=2];',
        f'    "legend: fullgraph ok" [label="fullgraph=True works", fillcolor="{_GREEN_FILL}", color="{_GREEN}"];',
        f'    "legend: fullgraph fails" [label="fullgraph=True fails", fillcolor="{_AMBER_FILL}", color="{_AMBER}"];',
        f'    "legend: not called" [label="never called", style="rounded,filled,dashed", fontcolor="{_GREY}"];',
        '    "legend: group" [label="N identical blocks", shape=box3d, style="filled"];',
        "  }",
        "}",
    ]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# HTML

_CSS = """
:root { --bad:#c0392b; --bad-bg:#fbe3e0; --ok:#2e7d32; --ok-bg:#dcf2dc; --warn:#b35900;
  --warn-bg:#fdebd3; --mute:#6b7280; --line:#e5e7eb; --accent:#3949ab; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; color: #1f2937; margin: 0; padding: 24px 32px; background: #fafafa; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 15px; margin: 24px 0 8px; color: #374151; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
.meta { color: var(--mute); margin: 0 0 12px; }
.meta b { color: #111827; }
.toolbar { display: flex; gap: 8px; align-items: center; margin: 8px 0 0; }
button, input { font: inherit; padding: 3px 10px; border: 1px solid #cbd5e1; border-radius: 6px;
  background: #fff; }
button { cursor: pointer; } button:hover { background: #f1f5f9; }
input[type=search] { width: 260px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; align-items: center; color: #374151; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 10px; border-bottom: 1px solid var(--line); }
th { font-weight: 600; color: #374151; }
ul.tree, ul.tree ul { list-style: none; margin: 0; padding-left: 20px; }
ul.tree { padding-left: 0; }
ul.tree ul { border-left: 1px dotted #cbd5e1; margin-left: 6px; }
li { margin: 1px 0; }
summary { cursor: pointer; padding: 2px 4px; border-radius: 4px; }
summary:hover, .leaf:hover { background: #f1f5f9; }
.leaf { padding: 2px 4px 2px 18px; border-radius: 4px; }
.name { font-weight: 600; }
.cls { color: var(--accent); }
.params { color: var(--mute); }
.path { color: #9ca3af; font-size: 12px; margin-left: 6px; }
.badge { display: inline-block; font-size: 11.5px; padding: 0 7px; border-radius: 10px; margin-left: 4px;
  border: 1px solid transparent; white-space: nowrap; }
.b-break { background: var(--bad-bg); color: var(--bad); border-color: #f3b8b0; font-weight: 600; }
.b-below { color: var(--bad); border-color: #f3b8b0; }
.b-ok { background: var(--ok-bg); color: var(--ok); }
.b-fail { background: var(--warn-bg); color: var(--warn); }
.b-recompile { background: var(--warn-bg); color: var(--warn); border-color: #f5cf9f; }
.b-idle { background: #f3f4f6; color: var(--mute); }
.b-group { background: #e8eaf6; color: var(--accent); }
.not-called > summary .name, .leaf.not-called .name { color: var(--mute); font-weight: 500; }
li.group > details > summary { background: #f5f6fc; }
.chips { margin: 4px 0 6px 22px; display: flex; flex-wrap: wrap; gap: 3px; }
.chip { font: 11px ui-monospace, Menlo, Consolas, monospace; min-width: 22px; text-align: center;
  padding: 1px 4px; border-radius: 4px; background: #eef0f6; color: #374151; }
.chip.bad { background: var(--bad); color: #fff; }
.chip.ok { background: var(--ok-bg); color: var(--ok); }
.chip.fail { background: var(--warn-bg); color: var(--warn); }
.chip.recompile { outline: 2px solid #f0a24a; }
.note { color: var(--mute); font-size: 12.5px; }
.hidden { display: none !important; }
"""

_JS = """
(function () {
  var all = function () { return document.querySelectorAll('ul.tree details'); };
  document.getElementById('expand').onclick = function () { all().forEach(function (d) { d.open = true; }); };
  document.getElementById('collapse').onclick = function () {
    all().forEach(function (d) { d.open = d.parentNode.parentNode.classList.contains('tree'); });
  };
  var box = document.getElementById('filter');
  box.oninput = function () {
    var q = box.value.trim().toLowerCase();
    var items = document.querySelectorAll('ul.tree li');
    items.forEach(function (li) { li.classList.remove('hidden'); });
    if (!q) { return; }
    items.forEach(function (li) {
      var hay = (li.getAttribute('data-search') || '').toLowerCase();
      var hit = hay.indexOf(q) >= 0;
      li.querySelectorAll('li').forEach(function (sub) {
        if ((sub.getAttribute('data-search') || '').toLowerCase().indexOf(q) >= 0) { hit = true; }
      });
      if (!hit) { li.classList.add('hidden'); }
      else { var d = li.querySelector(':scope > details'); if (d) { d.open = true; } }
    });
  };
})();
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _badges(breaks: int, below: int, recompiles: int, fullgraph: bool | None, called: bool) -> str:
    parts = []
    if breaks:
        parts.append(f'<span class="badge b-break">{_e(_plural(breaks, "graph break"))}</span>')
    if below:
        parts.append(f'<span class="badge b-below">{_e(below)} in submodules</span>')
    if recompiles:
        parts.append(f'<span class="badge b-recompile">{_e(_plural(recompiles, "recompile"))}</span>')
    if fullgraph is True:
        parts.append('<span class="badge b-ok">fullgraph ✓</span>')
    elif fullgraph is False:
        parts.append('<span class="badge b-fail">fullgraph ✗</span>')
    if not called:
        parts.append('<span class="badge b-idle">never called</span>')
    return "".join(parts)


def render_html(graph: nx.DiGraph, *, collapse: bool = True, report: dict | None = None) -> str:
    """The page; with ``report`` (``trace``'s JSON report) it is the whole report: breaks,
    recompiles, the recommendation, the plan and the ``--measure`` chart above the module tree."""
    view = _View(graph)
    n_nodes = graph.number_of_nodes()
    total_breaks = sum(_int(graph, n, "breaks") for n in graph.nodes)
    total_recompiles = sum(_int(graph, n, "recompiles") for n in graph.nodes)
    root_params = sum(_int(graph, r, "params") for r in view.roots)
    whole = _attr(graph, "", "fullgraph") if "" in graph else None
    title = f"Region graph — {view.model}" + (f" ({view.device})" if view.device else "")

    meta = [
        f"<b>{_e(amount(root_params))}</b> params",
        f"<b>{n_nodes}</b> modules",
        f"<b>{len(view.groups)}</b> {'group' if len(view.groups) == 1 else 'groups'}",
    ]
    if view.device:
        meta.insert(0, f"device <b>{_e(view.device)}</b>")
    if report is not None:
        sites, occurrences = html_report.break_counts(report)
        meta.append(
            f"<b>{sites}</b> graph-break {'site' if sites == 1 else 'sites'} "
            f"(<b>{occurrences}</b> {'occurrence' if occurrences == 1 else 'occurrences'} in module instances)"
        )
    else:
        meta.append(
            f"<b>{total_breaks}</b> graph-break {'occurrence' if total_breaks == 1 else 'occurrences'} in module instances"
        )
    meta.append(f"<b>{total_recompiles}</b> {'recompile' if total_recompiles == 1 else 'recompiles'}")
    if whole is True:
        meta.append('whole model <span class="badge b-ok">fullgraph ✓</span>')
    elif whole is False:
        meta.append('whole model <span class="badge b-fail">fullgraph ✗</span>')

    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}{html_report.CSS if report is not None else ''}</style>",
        "</head>",
        "<body>",
        f"<h1>{'Trace report' if report is not None else 'Region graph'}: <code>{_e(view.model)}</code></h1>",
        f'<p class="meta">{" · ".join(meta)}</p>',
        '<div class="toolbar"><button id="expand" type="button">Expand all</button>'
        '<button id="collapse" type="button">Collapse all</button>'
        '<input id="filter" type="search" placeholder="Filter by path or class…" '
        'aria-label="Filter modules"></div>',
        "<h2>Legend</h2>",
        '<div class="card legend">'
        '<span><span class="badge b-break">N graph breaks</span> break sites this module runs</span>'
        '<span><span class="badge b-below">N in submodules</span> breaks further down</span>'
        '<span><span class="badge b-recompile">N recompiles</span> guard failures</span>'
        '<span><span class="badge b-ok">fullgraph ✓</span> <code>fullgraph=True</code> works</span>'
        '<span><span class="badge b-fail">fullgraph ✗</span> it fails</span>'
        '<span><span class="badge b-idle">never called</span> not run by the sample batch</span>'
        '<span><span class="badge b-group">×N</span> a group of N identical blocks (one region)</span>'
        "</div>",
    ]

    if report is not None:
        out += html_report.sections(report)

    if view.groups:
        out.append("<h2>Groups of identical blocks</h2>")
        out.append(
            '<div class="card"><table><thead><tr><th>group</th><th>class</th><th>count</th>'
            "<th>container</th><th>params each</th><th>graph breaks</th><th>recompiles</th>"
            "<th>fullgraph</th></tr></thead><tbody>"
        )
        for group in view.groups:
            breaks, recompiles, verdict = view.group_totals(group)
            container = group.get("container") or "?"
            note = ""
            if container == "Sequential":
                note = ' <span class="note">(Accelerate\'s <code>compile_regions</code> only sees ModuleList)</span>'
            verdict_text = {True: "✓", False: "✗", None: "?"}[verdict]
            out.append(
                f'<tr><td class="mono">{_e(group["label"])}</td><td class="cls">{_e(group["class"])}</td>'
                f"<td>{len(group['members'])}</td><td>{_e(container)}{note}</td>"
                f"<td>{_e(amount(_attr(graph, group['members'][0], 'params', 0)))}</td>"
                f"<td>{breaks}</td><td>{recompiles}</td><td>{verdict_text}</td></tr>"
            )
        out.append("</tbody></table></div>")

    out.append("<h2>Module tree</h2>")
    out.append('<div class="card"><ul class="tree">')
    body: list[str] = []
    for root in view.roots:
        _html_node(view, root, None, 0, collapse, body, set())
    out += body
    out.append("</ul></div>")
    out.append(f"<script>{_JS}</script>")
    out.append("</body>")
    out.append("</html>")
    return "\n".join(out) + "\n"


def _html_summary(view: _View, node: Any, edge_name: str | None) -> tuple[str, str]:
    graph = view.graph
    data = graph.nodes[node]
    name = edge_name if edge_name is not None else ("(root)" if node == "" else str(node))
    breaks = _int(graph, node, "breaks")
    recompiles = _int(graph, node, "recompiles")
    sub_breaks = view.totals.get(node, (breaks, 0, None))[0] - breaks
    called = _called(graph, node)
    order = data.get("order")
    tip = f"call order {order}" if order is not None else "not called"
    text = (
        f'<span class="name">{_e(name)}</span> '
        f'<span class="cls">{_e(data.get("cls") or "?")}</span> '
        f'<span class="params">{_e(amount(data.get("params")))} params</span>'
        f"{_badges(breaks, sub_breaks, recompiles, data.get('fullgraph'), called)}"
        f'<span class="path mono" title="{_e(tip)}">{_e(node)}</span>'
    )
    search = f"{node} {data.get('cls') or ''}"
    return text, search


def _html_node(view: _View, node: Any, parent: Any, depth: int, collapse: bool, out: list[str], seen: set) -> None:
    """Append the ``<li>`` of ``node`` (and its subtree) to ``out``, iteratively."""
    # (node, parent, depth, phase): phase 0 opens the node, phase 1 closes it
    stack: list[tuple] = [(node, parent, depth, 0)]
    graph = view.graph
    done_groups: set[int] = set()
    while stack:
        current, parent, depth, phase = stack.pop()
        if phase == 1:
            out.append("</ul></details></li>")
            continue
        if phase == 2:  # close a group
            out.append("</ul></details></li>")
            continue
        if current in seen:
            continue
        group = view.group_of.get(current)
        if collapse and view.collapsible(group) and phase == 0:
            gid = id(group)
            if gid in done_groups:
                continue
            done_groups.add(gid)
            breaks, recompiles, verdict = view.group_totals(group)
            first = group["members"][0]
            called = any(_called(graph, m) for m in group["members"])
            count = len(group["members"])
            out.append(
                f'<li class="group" data-search="{_e(group["label"] + " " + group["class"])}">'
                f'<details><summary><span class="name mono">{_e(group["label"])}</span> '
                f'<span class="cls">{_e(group["class"])}</span> '
                f'<span class="badge b-group">×{count}</span> '
                f'<span class="params">{_e(amount(_attr(graph, first, "params", 0)))} params each</span>'
                f"{_badges(breaks, 0, recompiles, verdict, called)}</summary>"
            )
            chips = []
            for member in group["members"]:
                b, r, f = view.totals.get(member, (0, 0, None))
                cls = "chip bad" if b else ("chip ok" if f is True else ("chip fail" if f is False else "chip"))
                if r:
                    cls += " recompile"
                label = str(member).rsplit(".", 1)[-1]
                tip = f"{member}: {_plural(b, 'graph break')}, {_plural(r, 'recompile')}"
                chips.append(f'<span class="{cls}" title="{_e(tip)}">{_e(label)}</span>')
            out.append(f'<div class="chips">{"".join(chips)}</div><ul>')
            stack.append((None, None, depth, 2))
            for member in reversed(group["members"]):
                stack.append((member, parent, depth + 1, 3))  # members themselves, not re-collapsed
            continue
        seen.add(current)
        children = view.children(current)
        edge_name = None
        if parent is not None and graph.has_edge(parent, current):
            edge_name = graph.edges[parent, current].get("name")
        elif parent is not None:
            edge_name = str(current).rsplit(".", 1)[-1]
        summary, search = _html_summary(view, current, edge_name)
        called = _called(graph, current)
        classes = "" if called else ' class="not-called"'
        if not children:
            leaf_class = "leaf" + ("" if called else " not-called")
            out.append(f'<li data-search="{_e(search)}"><div class="{leaf_class}">{summary}</div></li>')
            continue
        sub_breaks = view.totals.get(current, (0, 0, None))[0]
        is_open = (depth < 2 or sub_breaks > 0) and phase != 3
        out.append(
            f'<li data-search="{_e(search)}"><details{classes}{" open" if is_open else ""}>'
            f"<summary>{summary}</summary><ul>"
        )
        stack.append((current, parent, depth, 1))
        for child in reversed(children):
            stack.append((child, current, depth + 1, 0))
