"""Which files of a linted project hold code that is compiled somewhere in it.

A graph break in a module nobody compiles costs nothing: on the transformers source the RC2xx
rules fired 1,429 times, on a 14-line plain module 3 times. So by default the rules that judge a
model's own code (``Rule.needs_compiled_module``) keep their findings only in files that a
compile reaches:

- a file that compiles or asks for a compile itself (``torch.compile``, ``.compile()``,
  ``compile_regions``, ``TorchDynamoPlugin``, ``dynamo_backend``, ``torch_compile=``,
  ``fullgraph``...), and
- every project file such a file imports, directly or through other project files (the model
  file a training script imports, the layers file the model file imports).

Files, not classes: a compiling script that imports ``model.py`` makes all of ``model.py``'s
modules count as compiled. It errs towards reporting: only files that no compile can reach lose
their findings. An explicit ``--select``/``select`` of such a rule (a code, prefix or name, not
``ALL``) reports everywhere.
"""

from __future__ import annotations

import ast
import os
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from typing import AnyStr, NamedTuple

from regcomp_lint.analysis.reachability.modules import Lookups, module_in_folder
from regcomp_lint.files.parsing import parse, walk

#: A compile, or a request for one, in a file's text. ``re.compile(`` is not one. Every
#: alternative starts with a literal character (its ``\b`` is a look-behind after that
#: character): the regex engine then jumps between candidate characters instead of trying every
#: alternative at every position, 8x faster on the transformers tree, matching the same text as
#: ``\btorch\s*\.\s*compile\b|(?<!\bre)(?<!\bregex)\.compile\s*\(|\b(?:compile_regions|...)\b``.
COMPILE_SIGNAL = re.compile(
    r"t(?<!\wt)orch\s*\.\s*compile\b"
    r"|\.(?<!\bre\.)(?<!\bregex\.)compile\s*\("
    r"|c(?<!\wc)ompile_regions\b"
    r"|c(?<!\wc)ompile_repeated_blocks\b"
    r"|T(?<!\wT)orchDynamoPlugin\b"
    r"|n(?<!\wn)ested_compile_region\b"
    r"|_(?<!\w_)dynamo\s*\.\s*optimize\b"
    r"|d(?<!\wd)ynamo_backend\b"
    r"|d(?<!\wd)ynamo_plugin\b"
    r"|t(?<!\wt)orch_compile\b"
    r"|f(?<!\wf)ullgraph\b"
    r"|ACCELERATE_DYNAMO_"
)

#: A substring of every match of COMPILE_SIGNAL: files with none of them skip the regex, whose
#: alternation is tried at every character (about 2 ms for a large file; 6 CPU-s on transformers).
_SIGNAL_WORDS = ("compile", "TorchDynamoPlugin", "optimize", "dynamo_", "fullgraph", "ACCELERATE_DYNAMO_")
_SIGNAL_BYTES = tuple(word.encode() for word in _SIGNAL_WORDS)

#: COMPILE_SIGNAL's alternatives, one pattern each, after a substring each needs: a file
#: matches one of them exactly when it matches COMPILE_SIGNAL. Each pattern starts with a
#: literal word (its ``\b`` a look-behind after it), which the regex engine looks for as fast as
#: ``in``; an alternation is tried at every ``t``, ``c`` and ``.`` of a file (issue 16: 4x slower
#: on the transformers tree, where ``_can_compile_fullgraph`` puts ``compile`` in most files).
_SIGNALS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (word, re.compile(pattern))
    for word, pattern in (
        ("compile", r"torch(?<!\wtorch)\s*\.\s*compile\b"),
        ("compile", r"\.compile(?<!\bre\.compile)(?<!\bregex\.compile)\s*\("),
        ("compile", r"compile_regions(?<!\wcompile_regions)\b"),
        ("compile", r"compile_repeated_blocks(?<!\wcompile_repeated_blocks)\b"),
        ("compile", r"nested_compile_region(?<!\wnested_compile_region)\b"),
        ("compile", r"torch_compile(?<!\wtorch_compile)\b"),
        ("TorchDynamoPlugin", r"TorchDynamoPlugin(?<!\wTorchDynamoPlugin)\b"),
        ("optimize", r"_dynamo(?<!\w_dynamo)\s*\.\s*optimize\b"),
        ("dynamo_", r"dynamo_backend(?<!\wdynamo_backend)\b"),
        ("dynamo_", r"dynamo_plugin(?<!\wdynamo_plugin)\b"),
        ("fullgraph", r"fullgraph(?<!\wfullgraph)\b"),
        ("ACCELERATE_DYNAMO_", r"ACCELERATE_DYNAMO_"),
    )
)


#: Names whose use in code (called, passed, or as a keyword) compiles or asks for a compile.
COMPILE_NAMES = frozenset({"compile_regions", "compile_repeated_blocks", "TorchDynamoPlugin", "nested_compile_region"})
COMPILE_KEYWORDS = frozenset({"fullgraph", "dynamo_backend", "dynamo_plugin", "torch_compile"})


def compiles(text: str, parsed: dict[str, ast.Module | None] | None = None, key: str = "") -> bool:
    """The file's code (not its comments or docstrings) compiles something, or asks for a
    compile (``fullgraph=``, a dynamo plugin, ``ACCELERATE_DYNAMO_*`` set). ``parsed`` keeps
    the tree under ``key`` for a later question about the same file."""
    if not _mentions_compile(text):
        return False  # the cheap test: most files never mention a compile
    tree = _parse(text)
    if parsed is not None:
        parsed[key] = tree
    return tree is not None and _compiles_in(tree)


#: A shorter word held by several of the signal words: absent, none of them is looked for (three
#: searches of a file that has none of them become one).
_GATES = {"TorchDynamoPlugin": "ynamo", "optimize": "ynamo", "dynamo_": "ynamo"}
_GATES_BYTES = {word.encode(): gate.encode() for word, gate in _GATES.items()}


def _word_present(word: AnyStr, haystack: AnyStr, seen: dict[AnyStr, bool], gates: Mapping[AnyStr, AnyStr]) -> bool:
    """``word in haystack``, each word (and the shorter gate word it holds) searched once per
    file: a word whose gate is absent is absent too."""
    present = seen.get(word)
    if present is None:
        gate = gates.get(word)
        if gate is not None and gate not in seen:
            seen[gate] = gate in haystack
        present = seen[word] = (gate is None or seen[gate]) and word in haystack
    return present


def _mentions_compile(text: str) -> bool:
    """``COMPILE_SIGNAL.search(text) is not None``, faster (see :data:`_SIGNALS`)."""
    found: dict[str, bool] = {}
    for word, pattern in _SIGNALS:
        if _word_present(word, text, found, _GATES) and pattern.search(text) is not None:
            return True
    return False


def _compiles_in(tree: ast.AST) -> bool:
    """An explicit-stack walk (any order does: the answer is whether one node matches), over
    the fields that may hold nodes, several times faster than :func:`ast.walk`."""
    docstrings: set[int] | None = None  # built only if a string could count
    stack: list[ast.AST] = [tree]
    pop, push, extend = stack.pop, stack.append, stack.extend
    fields_of = _NODE_FIELDS
    while stack:
        node = pop()
        node_type = type(node)
        if node_type is ast.Attribute:
            attr = node.attr  # type: ignore[attr-defined]
            value = node.value  # type: ignore[attr-defined]
            if attr == "compile" and not (isinstance(value, ast.Name) and value.id in ("re", "regex")):
                return True
            if attr in COMPILE_NAMES or (attr == "optimize" and _ends_with(value, "_dynamo")):
                return True
        elif node_type is ast.Name:
            if node.id in COMPILE_NAMES or node.id in COMPILE_KEYWORDS:  # type: ignore[attr-defined]
                return True
            continue  # no child nodes but its context
        elif node_type is ast.Constant:
            value = node.value  # type: ignore[attr-defined]
            if isinstance(value, str) and value.startswith("ACCELERATE_DYNAMO_"):
                if docstrings is None:
                    docstrings = {id(n.value) for n in walk(tree) if isinstance(n, ast.Expr)}
                if id(node) not in docstrings:
                    return True
            continue
        elif node_type is ast.alias:
            if node.name.rsplit(".", 1)[-1] in COMPILE_NAMES:  # type: ignore[attr-defined]
                return True
            continue
        elif node_type is ast.keyword:
            if node.arg in COMPILE_KEYWORDS:  # type: ignore[attr-defined]
                return True
        fields = fields_of.get(node_type)
        if fields is None:
            fields = fields_of[node_type] = _node_fields(node_type)
        for name in fields:
            child = getattr(node, name, None)
            if type(child) is list:
                extend(child)
            elif child is not None and not isinstance(child, _SCALARS):
                push(child)
    return False


#: Fields that never hold a node the compile test looks into (names, flags, contexts).
_LEAF_FIELDS = frozenset(
    {"ctx", "id", "attr", "arg", "asname", "module", "level", "kind", "type_comment", "conversion", "is_async"}
)
_SCALARS = (str, int, float, complex, bytes, bool, type(...))


def _node_fields(node_type: type) -> tuple[str, ...]:
    return tuple(f for f in getattr(node_type, "_fields", ()) if f not in _LEAF_FIELDS)


_NODE_FIELDS: dict[type, tuple[str, ...]] = {
    cls: _node_fields(cls) for cls in vars(ast).values() if isinstance(cls, type) and issubclass(cls, ast.AST)
}


def _ends_with(node: ast.AST, attr: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attr or isinstance(node, ast.Name) and node.id == attr


def _parse(text: str) -> ast.Module | None:
    try:
        return parse(text)  # (a tree regcomp-fix parsed already)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def imported_names(tree: ast.AST, text: str | None = None) -> list[str]:
    """Module names the file imports, as :func:`module_file` takes them (``.layers``, ``pkg.mod``);
    ``from pkg import name`` gives both ``pkg`` and ``pkg.name`` (``name`` may be a submodule).

    Imports are statements, so only statement bodies are visited (no expression is entered):
    the same names, in the same order, as a walk of every node, at a fraction of its cost.
    ``text``: the source ``tree`` was parsed from; then only the blocks whose lines hold the
    word ``import`` are entered (see :func:`_import_rows`)."""
    names: list[str] = []
    rows = _import_rows(text) if text is not None else None
    for node in _statements(tree) if rows is None else _imports_around(tree, rows):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            if node.module:
                names.append(base)
            sep = "" if base.endswith(".") or not base else "."
            names.extend(base + sep + alias.name for alias in node.names if alias.name != "*")
    return names


#: Fields that hold statements, or the handlers and match cases that hold some.
_STATEMENT_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})
#: Those fields per node type, in the node's own field order (the order :func:`ast.walk` uses).
_BODIES: dict[type, tuple[str, ...]] = {}


def _body_fields(node_type: type[ast.AST]) -> tuple[str, ...]:
    """The fields of ``node_type`` that hold statements (or handlers, match cases), kept in :data:`_BODIES`."""
    fields = _BODIES[node_type] = tuple(f for f in node_type._fields if f in _STATEMENT_FIELDS)
    return fields


def _statements(tree: ast.AST) -> list[ast.AST]:
    """Every statement of ``tree`` (and the handlers and match cases that hold some), in the
    breadth-first order of :func:`ast.walk`."""
    found: list[ast.AST] = []
    queue = [tree]
    index = 0
    while index < len(queue):
        node = queue[index]
        index += 1
        node_type = type(node)
        fields = _BODIES.get(node_type)
        if fields is None:
            fields = _body_fields(node_type)
        for name in fields:
            children = getattr(node, name, None)
            if type(children) is list:
                queue.extend(children)
        if index > 1:
            found.append(node)
    return found


def _import_rows(text: str) -> list[int] | None:
    """The (1-based, ascending) rows of ``text`` that hold the word ``import``, or None when
    rows cannot be counted from ``\\n`` alone (a ``\\r`` ends a line for the parser too).

    Every import statement has its keyword written out (a keyword is never spelled otherwise),
    so on a row inside the rows of each block that holds it; the word elsewhere (a docstring,
    ``importlib``) only makes a block be entered for nothing."""
    if "\r" in text:
        return None
    rows: list[int] = []
    row, last = 1, 0
    at = text.find("import")
    while at >= 0:
        row += text.count("\n", last, at)
        last = at
        if not rows or rows[-1] != row:
            rows.append(row)
        at = text.find("import", at + 6)
    return rows


def _imports_around(tree: ast.AST, rows: list[int]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of :func:`_statements`, in the same order, entering only the
    blocks some of ``rows`` falls in: a block that holds an import holds its row, and leaving
    out a block without one, or a statement that opens no block, keeps the others' order (the
    queue is first in, first out, so an import is listed where it would be taken out)."""
    found: list[ast.Import | ast.ImportFrom] = []
    if not rows:
        return found
    first, last = rows[0], rows[-1]
    bodies = _BODIES
    queue = [tree]
    index = 0
    while index < len(queue):
        node = queue[index]
        index += 1
        node_fields = bodies.get(type(node))
        if node_fields is None:  # (the tree itself: the others were looked up when queued)
            node_fields = _body_fields(type(node))
        for name in node_fields:
            children = getattr(node, name, None)
            if type(children) is not list:
                continue
            for child in children:
                child_type = type(child)
                if child_type is ast.Import or child_type is ast.ImportFrom:
                    found.append(child)
                    continue
                fields = bodies.get(child_type)
                if fields is None:
                    fields = _body_fields(child_type)
                if not fields:
                    continue  # a simple statement
                start = getattr(child, "lineno", None)
                if start is not None:  # (match cases have no rows: always entered)
                    end = child.end_lineno or start
                    if end < first or start > last:
                        continue
                    at = bisect_left(rows, start)
                    if at == len(rows) or rows[at] > end:
                        continue
                queue.append(child)
    return found


def unparsed_scope(data: bytes, decode: Callable[[bytes], str | None]) -> FileScope:
    """:func:`file_scope` of a file the lint rejects unread (a settings file without compile
    settings): decoded only when its bytes hold one of the compile words, which are ASCII."""
    if not any(word in data for word in _SIGNAL_BYTES):
        return FileScope(False, ())
    return file_scope(decode(data), None, parsed=False)


class FileScope(NamedTuple):
    """What the scope question needs of one file, learned while it is linted (its one parse)."""

    compiles: bool
    imports: tuple[str, ...]


def file_scope(text: str | None, tree: ast.Module | None, parsed: bool) -> FileScope:
    """:func:`compiles` and :func:`imported_names` for a file already read (``text`` None: it
    could not be) and, when ``parsed``, already parsed (``tree`` None: a syntax error); an
    unparsed file is parsed only when its text mentions a compile."""
    if text is None:
        return FileScope(False, ())
    if not _mentions_compile(text):
        compiling = False
    else:
        if not parsed:
            tree, parsed = _parse(text), True
        compiling = tree is not None and _compiles_in(tree)
    if not parsed:
        return FileScope(compiling, ())  # never reached through an import: not a Python module
    return FileScope(compiling, tuple(imported_names(tree, text)) if tree is not None else ())


_recorders: list[dict[str, FileScope]] = []


def recording_wanted() -> bool:
    return bool(_recorders)


def record(path: str, scope: FileScope) -> None:
    """Called by the lint of ``path`` with what it learned; kept by the innermost :func:`recording`."""
    if _recorders:
        _recorders[-1][path] = scope


@contextmanager
def recording() -> Iterator[dict[str, FileScope]]:
    """Collect the :class:`FileScope` of every file linted inside (the runner keeps them, so the
    scope question after the lint reads and parses no file again)."""
    found: dict[str, FileScope] = {}
    _recorders.append(found)
    try:
        yield found
    finally:
        _recorders.pop()


class ScopeFacts:
    """What one run learned of each file (text, compiles, tree), so asking again about a larger
    project (pre-commit's fallback to the config root) reads and parses no file twice."""

    def __init__(self) -> None:
        self.texts: dict[str, str | None] = {}
        self.compiling: dict[str, bool] = {}
        self.trees: dict[str, ast.Module | None] = {}
        self.imports: dict[str, tuple[str, ...]] = {}
        #: module_file's memo (see there), kept for the run's questions
        self.lookups = Lookups()
        #: (importer's folder, imported name) -> the absolute path it names, or None: what an
        #: import resolves to depends on nothing else
        self.resolved: dict[tuple[str, str], str | None] = {}

    def learn(self, known: Mapping[str, FileScope]) -> None:
        """Take the facts the lint itself gathered (absolute path -> :class:`FileScope`)."""
        for absolute, scope in known.items():
            self.compiling[absolute] = scope.compiles
            self.imports[absolute] = scope.imports


def compiled_files(
    paths: Iterable[str], read: Callable[[str], str | None], facts: ScopeFacts | None = None
) -> set[str]:
    """Absolute paths, among ``paths``, of the files a compile reaches (see the module doc).

    ``read(path)`` gives a file's text, or None when it cannot be read.
    """
    facts = facts or ScopeFacts()
    project = {os.path.abspath(p): p for p in paths}
    texts = facts.texts

    def text_of(absolute: str) -> str | None:
        if absolute not in texts:
            texts[absolute] = read(project[absolute])
        return texts[absolute]

    def compiling(absolute: str) -> bool:
        if absolute not in facts.compiling:
            text = text_of(absolute)
            facts.compiling[absolute] = text is not None and compiles(text, facts.trees, absolute)
        return facts.compiling[absolute]

    def imports_of(absolute: str) -> tuple[str, ...]:
        if absolute not in facts.imports:
            if absolute not in facts.trees:
                text = text_of(absolute)
                facts.trees[absolute] = _parse(text) if text is not None else None
            tree = facts.trees[absolute]
            facts.imports[absolute] = tuple(imported_names(tree, text_of(absolute))) if tree is not None else ()
        return facts.imports[absolute]

    return _closure([a for a in project if compiling(a)], project, imports_of, facts)


def compiled_among(sources: Mapping[str, str]) -> set[str]:
    """:func:`compiled_files` over texts already in memory (stdin, tests)."""
    return compiled_files(sources, sources.get)


# -- a guess before any file is parsed --------------------------------------------------------
#
# The runner puts the scope-limited rules off to a second pass over the files a compile reaches,
# which parses those files again. Where most of a tree is reached (a checkout of a library whose
# absolute imports resolve), that second parse costs more than the rules. So before the lint
# the runner guesses, from the files' bytes alone, which files a compile reaches, and has those
# linted whole at once. The guess may err either way without changing a finding: a file guessed
# reached that is not has its scoped findings dropped like any other unreached file's, and a
# file reached that was not guessed gets the second pass as before.

#: ``import`` as a statement's keyword (followed by a name, a parenthesis or a continuation).
_IMPORT_WORD = re.compile(rb"import(?=[ \t(\\])")
#: What comes before ``import`` on its line in ``from <module> import``.
_FROM_PREFIX = re.compile(rb"[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+")
_DOTTED = re.compile(rb"[A-Za-z_]\w*(?:[ \t]*\.[ \t]*[A-Za-z_]\w*)*")
_ALIAS = re.compile(rb"\bas[ \t]+\w+")
_COMMENT = re.compile(rb"#[^\n]*")


def guessed_imports(data: bytes) -> list[str]:
    """:func:`imported_names` guessed from a file's bytes, without parsing: the import
    statements that start a line (``from m import (a, b)`` across lines, ``\\`` continuations).
    May hold names of imports in strings, and miss an import after a ``;``."""
    names: list[str] = []
    for found in _IMPORT_WORD.finditer(data):
        at = found.start()
        if at and (data[at - 1 : at].isalnum() or data[at - 1 : at] in b"_."):
            continue  # part of a longer name (``reimport``, ``importlib.import``)
        line_start = data.rfind(b"\n", 0, at) + 1
        prefix = data[line_start:at]
        if prefix.strip():
            from_ = _FROM_PREFIX.fullmatch(prefix)
            if from_ is None:
                continue
            base = from_.group(1).decode("utf-8", "replace")
        else:
            from_, base = None, ""
        listed = _listed_names(data, found.end())
        if from_ is None:
            names.extend(name.replace(b" ", b"").replace(b"\t", b"").decode("utf-8", "replace") for name in listed)
            continue
        if base.strip("."):
            names.append(base)
        sep = "" if base.endswith(".") or not base else "."
        names.extend(base + sep + name.decode("utf-8", "replace") for name in listed)
    return names


def _listed_names(data: bytes, start: int) -> list[bytes]:
    """The dotted names after ``import`` at ``start``: up to the closing parenthesis, or the end
    of the (continued) line before any comment; ``as`` aliases left out."""
    at = start
    while data[at : at + 1] in (b" ", b"\t"):
        at += 1
    if data[at : at + 1] == b"(":
        close = data.find(b")", at)
        listed = _COMMENT.sub(b"", data[at + 1 : close if close >= 0 else len(data)])
    else:
        end = at
        while True:
            newline = data.find(b"\n", end)
            if newline < 0:
                listed = data[at:]
                break
            if data[newline - 1 : newline] == b"\\" or data[newline - 2 : newline] == b"\\\r":
                end = newline + 1
                continue
            listed = data[at:newline]
            break
        listed = listed.split(b"#", 1)[0]
    return _DOTTED.findall(_ALIAS.sub(b"", listed))


@cache
def _signals_bytes() -> tuple[tuple[bytes, re.Pattern[bytes]], ...]:
    """:data:`_SIGNALS` on bytes (``\\w`` and ``\\s`` then mean ASCII only: a guess), compiled
    on first use (a warm run never guesses)."""
    return tuple((word.encode(), re.compile(pattern.pattern.encode())) for word, pattern in _SIGNALS)


def guessed_compiles(data: bytes) -> bool:
    """:func:`compiles` guessed from a file's bytes, without parsing or decoding: a compile
    signal (:data:`COMPILE_SIGNAL`) outside comments and strings as far as its line and the
    triple quotes before it tell."""
    present: dict[bytes, bool] = {}
    for word, pattern in _signals_bytes():
        if not _word_present(word, data, present, _GATES_BYTES):
            continue
        for found in pattern.finditer(data):
            at = found.start()
            prefix = data[data.rfind(b"\n", 0, at) + 1 : at]
            if b"#" in prefix or prefix.count(b'"') % 2 or prefix.count(b"'") % 2 or prefix.endswith(b"`"):
                continue  # a comment, or a string on the line
            if data.count(b'"""', 0, at) % 2 or data.count(b"'''", 0, at) % 2:
                continue  # a docstring
            return True
    return False


def guessed_files(
    paths: Iterable[str],
    read: Callable[[str], bytes | None],
    known: Mapping[str, FileScope],
    facts: ScopeFacts | None = None,
) -> set[str]:
    """Absolute paths, among ``paths``, of the files a compile is guessed to reach: the facts
    ``known`` (absolute path -> :class:`FileScope`, from the cache) where there are some, else
    :func:`guessed_compiles` and :func:`guessed_imports` of ``read(path)``'s bytes. ``facts``
    keeps the import look-ups for the exact question after the lint."""
    facts = facts or ScopeFacts()
    project = {os.path.abspath(p): p for p in paths}
    data: dict[str, bytes | None] = {}

    def bytes_of(absolute: str) -> bytes | None:
        if absolute not in data:
            data[absolute] = read(project[absolute])
        return data[absolute]

    def compiling(absolute: str) -> bool:
        scope = known.get(absolute)
        if scope is not None:
            return scope.compiles
        found = bytes_of(absolute)
        return found is not None and guessed_compiles(found)

    def imports_of(absolute: str) -> Iterable[str]:
        scope = known.get(absolute)
        if scope is not None:
            return scope.imports
        found = bytes_of(absolute)
        return guessed_imports(found) if found is not None else ()

    return _closure([a for a in project if compiling(a)], project, imports_of, facts)


def _closure(
    roots: list[str], project: Mapping[str, str], imports_of: Callable[[str], Iterable[str]], facts: ScopeFacts
) -> set[str]:
    """``roots`` and every file of ``project`` they import, directly or through others."""
    frontier = list(roots)
    reached = set(frontier)
    lookups = facts.lookups
    resolved = facts.resolved
    while frontier:
        current = frontier.pop()
        folder = os.path.dirname(current)
        for name in imports_of(current):
            key = (folder, name)
            if key in resolved:
                absolute = resolved[key]
            else:
                found = module_in_folder(folder, name, lookups)
                absolute = resolved[key] = os.path.abspath(found) if found is not None else None
            if absolute is None:
                continue
            if absolute in project and absolute not in reached:
                reached.add(absolute)
                frontier.append(absolute)
    return reached
