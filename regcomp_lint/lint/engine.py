"""Lint one file: decode, parse once with ``ast``, one walk for every enabled rule, suppressions.

Why ``ast`` and not libcst for detection: on the transformers tree (2,900 files) ``ast.parse``
takes ~6 s where libcst takes ~64 s, and libcst metadata far more. libcst is used where it
shines: rewriting code (``regcomp-fix``), where formatting must survive.

Cheap prefilter: a rule declares ``triggers`` (substrings); a file none of whose enabled rules'
triggers occur is parsed only for RC001 and never walked.

Deferral: the runner puts the scope-limited rules (``Rule.needs_compiled_module``) off to a
second pass over the files a compile reaches (:class:`Deferral`), so that most files of a large
tree are never judged by rules whose findings there would be dropped.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from typing import Any, cast

from regcomp_lint.analysis import compiled_scope, dead_code
from regcomp_lint.analysis.compile_settings import mentions_settings
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.checks import ALL_RULES, Rule
from regcomp_lint.checks.base import Word
from regcomp_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location
from regcomp_lint.files.kinds import Kind, kind_by_name, kind_of
from regcomp_lint.files.parsing import parse
from regcomp_lint.files.parsing import walk as walk_nodes
from regcomp_lint.files.source import DecodeError, Positioned, SourceFile, decode_source
from regcomp_lint.lint import suppressions as sup_mod
from regcomp_lint.lint.config import Settings
from regcomp_lint.lint.settings_engine import lint_settings_text

SYNTAX_ERROR = "RC001"
UNUSED_SUPPRESSION = "RC002"
UNKNOWN_SUPPRESSION_CODE = "RC003"


def _diag(code: str, message: str, filename: str, start: Location, end: Location, fix: Fix | None = None) -> Diagnostic:
    rule = ALL_RULES[code]
    return Diagnostic(code, rule.name, message, filename, start, end, fix, severity=rule.severity)


@dataclass
class Deferral:
    """Rules to put off to a second pass, and (set by the lint) those it did put off.

    A rule is put off when it would run on the file (its prefilter passes) and no suppression
    directive of ours could concern it: a ``# regcomp:`` or ``# noqa`` comment naming an RC code
    makes the file's RC002/RC003 depend on every rule's findings, so such a file is linted whole,
    as is a file that compiles (its own compile reaches it: the second pass would come). The
    second pass lints the file with ``pending`` as the enabled codes: its findings (after
    suppressions and dead code) are exactly what the first pass left out.
    """

    codes: frozenset[str]
    pending: frozenset[str] = frozenset()


def lint_bytes(data: bytes, filename: str, enabled: frozenset[str], defer: Deferral | None = None) -> list[Diagnostic]:
    if kind_by_name(filename) not in (None, Kind.PYTHON) and not mentions_settings(data):
        if compiled_scope.recording_wanted():
            compiled_scope.record(filename, compiled_scope.unparsed_scope(data, _decoded))
        return []  # a YAML/JSON/shell... file without compile settings: not even decoded
    try:
        text = decode_source(data)
    except DecodeError as exc:
        if compiled_scope.recording_wanted():
            compiled_scope.record(filename, compiled_scope.file_scope(None, None, parsed=False))
        if SYNTAX_ERROR not in enabled:
            return []
        loc = Location(exc.row, exc.column)
        return [_diag(SYNTAX_ERROR, f"cannot read file: {exc}", filename, loc, loc)]
    return lint_text(text, filename, enabled, defer)


def _decoded(data: bytes) -> str | None:
    try:
        return decode_source(data)
    except DecodeError:
        return None


def _parse(text: str, filename: str) -> ast.Module:
    return parse(text, filename)  # (no SyntaxWarning: not ours to show; a tree regcomp-fix parsed already)


def _syntax_error(exc: BaseException, source: SourceFile) -> Diagnostic:
    row = getattr(exc, "lineno", None) or 1
    col = getattr(exc, "offset", None) or 1
    row = max(1, min(row, max(len(source.lines), 1)))
    col = max(1, min(col, len(source.line(row)) + 1))
    msg = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
    if isinstance(exc, (RecursionError, MemoryError)) or "too many nested" in msg or "too complex" in msg:
        msg = f"file is too deeply nested to parse ({msg})"
    loc = Location(row, col)
    return _diag(SYNTAX_ERROR, f"SyntaxError: {msg}", source.filename, loc, loc)


def active_rules(text: str, enabled: Iterable[str]) -> list[type[Rule]]:
    """Enabled visitor rules whose triggers occur in ``text`` (the prefilter). Rules share
    words (``forward``, the import trigger...): each is looked for once in the file. A word is a
    substring or a pattern (:data:`~regcomp_lint.checks.base.Word`); a tuple among a rule's
    ``required`` is satisfied by any one of its words.

    Most words are in no file (``dynamo_backend``, ``TorchDynamoPlugin``...), and an absent word
    costs a search of the whole text: a word that holds a shorter one (``torch_compile`` holds
    ``compile``) is looked for only when the shorter one occurs, and the words many rules need
    (``compile``, ``Accelerator``...) are looked for first, so that a rule one of whose groups
    they already rule out is dropped without looking for its other words (``mode=``, ``options``,
    ``prepare``... in a file that never says ``compile`` or ``Accelerator``). The answer is the
    same in any order: a rule is active when each of its groups has a word in the text."""
    enabled = frozenset(enabled)
    _, parents, probes = _prefilter_plan(enabled)
    seen: dict[Word, bool] = {}

    def has(word: Word) -> bool:
        found = seen.get(word)
        if found is None:
            shorter = parents.get(word)
            if shorter is not None and not all(has(part) for part in shorter):
                found = False
            else:
                found = word in text if type(word) is str else word.search(text) is not None  # type: ignore[union-attr]
            seen[word] = found
        return found

    # What the probes found decides most rules, the same way in most files: the rules left to
    # decide, and their groups' words left to look for, are worked out once per answer.
    decided, undecided = _after_probes(enabled, tuple([has(word) for word in probes]))
    if not undecided:
        return list(decided)
    active = []
    for rule, groups in undecided:
        if groups is None:  # active whatever the other words
            active.append(rule)
            continue
        for group in groups:
            if not any(has(word) for word in group):
                break
        else:
            active.append(rule)
    return active


@lru_cache(maxsize=1024)
def _after_probes(
    enabled: frozenset[str], found: tuple[bool, ...]
) -> tuple[tuple[type[Rule], ...], tuple[tuple[type[Rule], tuple[tuple[Word, ...], ...] | None], ...]]:
    """The prefilter's plan once the probes gave ``found``: the rules every group of which a
    present probe satisfies (all of them, when no other rule is left to decide), and the rules
    still open, in plan order, each with its groups less the words known to be absent and
    without the groups known to be satisfied (None: none left, the rule is active). A rule one of
    whose groups holds only absent words is dropped."""
    plan, parents, probes = _prefilter_plan(enabled)
    known: dict[Word, bool] = dict(zip(probes, found))

    def absent(word: Word) -> bool:
        if known.get(word) is False:
            return True
        return any(absent(part) for part in parents.get(word, ()))

    rules: list[tuple[type[Rule], tuple[tuple[Word, ...], ...] | None]] = []
    for rule, groups in plan:
        left: list[tuple[Word, ...]] = []
        for group in groups:
            if any(known.get(word) is True for word in group):
                continue  # satisfied
            words = tuple(word for word in group if not absent(word))
            if not words:
                break  # ruled out
            left.append(words)
        else:
            rules.append((rule, tuple(left) or None))
    if all(groups is None for _, groups in rules):
        return tuple(rule for rule, _ in rules), ()
    return (), tuple(rules)


@lru_cache(maxsize=64)
def _visitor_rules(enabled: frozenset[str]) -> tuple[type[Rule], ...]:
    return tuple(ALL_RULES[code] for code in sorted(enabled) if code in ALL_RULES and not ALL_RULES[code].engine_rule)


#: A plain word in the groups of at least this many rules (itself, or held by their words) is
#: looked for before any rule is decided (see :func:`active_rules`); only groups of a few words
#: count (in a long group, such as the RC2xx triggers after ``import ``, a word is rarely reached).
PROBE_RULES = 3
PROBE_GROUP = 5


@lru_cache(maxsize=64)
def _prefilter_plan(
    enabled: frozenset[str],
) -> tuple[tuple[tuple[type[Rule], tuple[tuple[Word, ...], ...]], ...], dict[Word, tuple[str, ...]], tuple[str, ...]]:
    """The enabled visitor rules, each with its groups of words (its triggers first, then its
    ``required``; each group is satisfied by any one of its words); for each word the longest
    other words (plain substrings) it holds: absent, they make it absent; and the probes, the
    plain words many rules need, most needed first."""
    rules = _visitor_rules(enabled)
    plan = []
    words: set[Word] = set()
    for rule in rules:
        groups = ((tuple(rule.triggers),) if rule.triggers else ()) + tuple(
            required if isinstance(required, tuple) else (required,) for required in rule.required
        )
        plan.append((rule, groups))
        for group in groups:
            words.update(group)
    plain = [word for word in words if isinstance(word, str)]
    parents: dict[Word, tuple[str, ...]] = {}
    held: dict[Word, set[str]] = {}
    for word in words:
        literal = _literal_part(word)
        held[word] = {part for part in plain if part in literal}
        inside = [part for part in held[word] if part != word]
        # the longest ones: a part held by another held part is checked through that one
        longest = tuple(sorted(part for part in inside if not any(part != other and part in other for other in inside)))
        if longest:
            parents[word] = longest
    needed_by: dict[str, set[str]] = {}
    for rule, groups in plan:
        for group in groups:
            if len(group) > PROBE_GROUP:
                continue
            for word in group:
                for part in held[word]:
                    needed_by.setdefault(part, set()).add(rule.code)
    probes = tuple(
        sorted(
            (word for word, codes in needed_by.items() if len(codes) >= PROBE_RULES),
            key=lambda w: (-len(needed_by[w]), w),
        )
    )
    return tuple(plan), parents, probes


#: Characters that end a pattern's leading literal text.
_REGEX_SPECIAL = frozenset("\\.^$*+?{}[]|()")


def _literal_part(word: Word) -> str:
    """Text every match of ``word`` holds: the word itself, or a pattern's leading literal
    characters (without the last one when a quantifier follows it)."""
    if isinstance(word, str):
        return word
    if word.flags & ~re.UNICODE:
        return ""  # case-insensitive, verbose...: nothing is sure
    pattern = word.pattern
    end = 0
    while end < len(pattern) and pattern[end] not in _REGEX_SPECIAL:
        end += 1
    if end < len(pattern) and pattern[end] in "*?{+":
        end -= 1
    return pattern[: max(end, 0)]


#: Fields that never hold a node, skipped without a look (names, flags, constants' values).
_LEAF_FIELDS = frozenset(
    {"ctx", "id", "attr", "arg", "asname", "module", "level", "kind", "type_comment", "conversion", "is_async"}
)


#: Values of node fields that are never nodes.
_SCALARS = frozenset({str, int, float, complex, bytes, bool, type(None), type(...)})


def _child_fields(node_type: type) -> tuple[str, ...]:
    """Fields that may hold child nodes, in *reverse* order (they are pushed on a stack)."""
    if node_type is ast.Constant or not issubclass(node_type, ast.AST):
        return ()
    return tuple(reversed([f for f in node_type._fields if f not in _LEAF_FIELDS]))


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {
    cls: _child_fields(cls) for cls in vars(ast).values() if isinstance(cls, type) and issubclass(cls, ast.AST)
}


def _dispatch(rules: list[Rule]) -> tuple[dict[type, list], dict[type, list]]:
    visit: dict[type, list] = defaultdict(list)
    leave: dict[type, list] = defaultdict(list)
    for rule in rules:
        # a class is hashable; mypy checks type[X] against Hashable with X's instance __hash__ (python/mypy#11470)
        for method in _handler_names(type(rule)):  # type: ignore[arg-type]
            kind, _, type_name = method.partition("_")
            node_type = getattr(ast, type_name, None)
            if node_type is None:
                raise RuntimeError(f"{type(rule).__name__}.{method}: no ast.{type_name}")
            handler = getattr(rule, method)
            if handler is not None:  # an instance may switch a handler of its class off
                (visit if kind == "visit" else leave)[node_type].append(handler)
    return dict(visit), dict(leave)


@cache
def _handler_names(rule_cls: type[Rule]) -> tuple[str, ...]:
    return tuple(rule_cls.handlers())


def walk(ctx: FileContext, rules: list[Rule]) -> None:
    """One iterative depth-first walk (no recursion limit on deep code) for all rules and the
    file's shared analyses that follow it (``ctx.semantic``).

    This loop runs once per node of every file a rule may care about, so it is written for
    speed: child fields are looked up per node type once, leaves no rule asks for (names,
    constants, ``Load``) are never pushed, and ancestors are kept by depth instead of pushing a
    "leave" entry per node.
    """
    visit, leave = _dispatch(rules)
    # The file's shared analyses that follow the walk (bindings, facts...): fed before the rules
    # visit a node and after they leave it, so a rule sees them at the node it is given.
    fed_visit, fed_leave = ctx.semantic.begin_walk()
    for fed_type, fed in fed_visit.items():
        visit[fed_type] = [*fed, *visit.get(fed_type, ())]
    for fed_type, fed in fed_leave.items():
        leave[fed_type] = [*leave.get(fed_type, ()), *fed]
    imports = ctx.imports
    for import_type in (ast.Import, ast.ImportFrom):  # imports are recorded before any rule sees them
        visit[import_type] = [imports.add, *visit.get(import_type, ())]
    ancestors = ctx.ancestors
    child_fields = _CHILD_FIELDS
    # Values that change nothing are never pushed: scalars, and nodes without children and
    # without handlers (names, constants, ``Load``), about half of all nodes.
    inert = _SCALARS | {t for t, f in child_fields.items() if not f and t not in visit and t not in leave}
    stack: list[tuple[ast.AST, int]] = [(ctx.tree, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        while len(ancestors) > depth:
            done = ancestors.pop()
            if leave:
                for handler in leave.get(type(done), ()):
                    handler(done)
        node_type = type(node)
        handlers = visit.get(node_type)
        if handlers:
            for handler in handlers:
                handler(node)
        ancestors.append(node)
        fields = child_fields.get(node_type)
        if fields is None:  # a type this Python's ast module does not list
            fields = child_fields[node_type] = _child_fields(node_type)
        depth += 1
        for name in fields:  # reversed: the first child is pushed last and popped first
            value: Any = getattr(node, name, None)  # a child node, a list of them, or a scalar
            if type(value) is list:
                for item in reversed(value):
                    if type(item) not in inert:
                        push((item, depth))
            elif type(value) not in inert:
                push((value, depth))
    while ancestors:
        done = ancestors.pop()
        for handler in leave.get(type(done), ()):
            handler(done)
    ctx.semantic.end_walk()
    for rule in rules:
        rule.finish()


def lint_text(text: str, filename: str, enabled: frozenset[str], defer: Deferral | None = None) -> list[Diagnostic]:
    kind = kind_of(filename, text)
    if kind is not Kind.PYTHON:
        if compiled_scope.recording_wanted():
            compiled_scope.record(filename, compiled_scope.file_scope(text, None, parsed=False))
        return lint_settings_text(text, filename, kind, enabled, _apply_suppressions)
    source = SourceFile(filename, text)
    try:
        tree = _parse(text, filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        if compiled_scope.recording_wanted():
            compiled_scope.record(filename, compiled_scope.file_scope(text, None, parsed=True))
        return [_syntax_error(exc, source)] if SYNTAX_ERROR in enabled else []
    compiles = False
    if compiled_scope.recording_wanted():  # the scope question's facts, from this one parse
        scope = compiled_scope.file_scope(text, tree, parsed=True)
        compiled_scope.record(filename, scope)
        compiles = scope.compiles

    active = active_rules(text, enabled)
    directives = _Directives(text)
    if defer is not None and defer.codes:
        pending = frozenset(rule.code for rule in active if rule.code in defer.codes)
        # A file that compiles is reached by its own compile: the second pass would lint it
        # again (parse included), so its scoped rules run now.
        if pending and not compiles and _may_defer(text, directives):
            defer.pending = pending
            active = [rule for rule in active if rule.code not in pending]
    ctx = FileContext(source, tree)
    rules = [rule_cls(ctx) for rule_cls in active]
    found: list[tuple[Diagnostic, int]] = []
    nodes: list[ast.AST] = []
    if rules:
        dead = ctx.semantic.dead_code  # fed by the walk: findings in dead code are dropped
        walk(ctx, rules)
        spans = dead.spans() if any(rule.reports for rule in rules) else []
        for rule in rules:
            for rep in rule.reports:
                if dead_code.is_dead(rep.node, spans):
                    continue  # a constant-false flag keeps this code from running
                diag = Diagnostic(
                    rule.code,
                    rule.name,
                    rep.message,
                    filename,
                    # rules report on expressions and statements, which carry positions (Rule.report
                    # already reads rep.node's row); Report still types them as plain ast.AST
                    source.start(cast(Positioned, rep.node)),
                    source.end(cast(Positioned, rep.end_node or rep.node)),
                    rep.fix,
                    severity=rule.severity,
                )
                found.append((diag, rep.stmt_row))
                nodes.append(rep.node)

    if _suppressions_matter(text, bool(found), enabled, directives):
        if found:
            rows = _statement_rows(tree, nodes)
            found = [(diag, row or stmt_row) for (diag, stmt_row), row in zip(found, rows)]
        diagnostics = _apply_suppressions(found, source, enabled)
    else:
        diagnostics = [d for d, _ in found]
    diagnostics.sort(key=Diagnostic.sort_key)
    return diagnostics


def _statement_rows(tree: ast.Module, nodes: list[ast.AST]) -> list[int | None]:
    """First line of the innermost statement holding each node (a decorated definition starts
    at its first decorator), for ``# regcomp: ignore`` on the line above a statement.

    Found by position after the walk, because while a rule visits a statement the statement is
    not yet among ``ctx.ancestors``: a finding on ``x.suppress_errors`` inside ``if x:`` would
    otherwise belong to the ``if``, and a comment above the ``if`` would silence its body.
    """
    spans = []
    for stmt in walk_nodes(tree):
        if isinstance(stmt, ast.stmt):
            decorators = getattr(stmt, "decorator_list", None)
            start = (min(d.lineno for d in decorators), 0) if decorators else (stmt.lineno, stmt.col_offset)
            end = (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
            spans.append((start, end))
    rows: list[int | None] = []
    for node in nodes:
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            rows.append(None)
            continue
        where = (lineno, getattr(node, "col_offset", 0))
        best = None
        for start, end in spans:
            if start <= where <= end and (best is None or start > best[0] or (start == best[0] and end < best[1])):
                best = (start, end)
        rows.append(best[0][0] if best else None)
    return rows


#: A noqa comment that names one of our codes (RC...): only those can be RC002/RC003.
_NOQA_WITH_OUR_CODE = re.compile(r"noqa[^\r\n]*?rc", re.IGNORECASE)


class _Directives:
    """What a text's words say of its suppression directives, each searched once per lint (the
    deferral and the suppression step both ask; the case-blind search is a slow one)."""

    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def maybe(self) -> bool:
        """:func:`suppressions.might_have_suppressions`."""
        return sup_mod.might_have_suppressions(self.text)

    @cached_property
    def ours(self) -> bool:
        """A directive may name one of our codes: ``regcomp:`` or a ``noqa`` naming an RC code."""
        text = self.text
        return self.maybe and ("regcomp:" in text or _NOQA_WITH_OUR_CODE.search(text) is not None)


def _may_defer(text: str, directives: _Directives | None = None) -> bool:
    """No directive of ours can name a rule (see :class:`Deferral`): foreign and bare ``# noqa``
    only silence findings, which the second pass does alone."""
    return not (directives or _Directives(text)).ours


def _suppressions_matter(
    text: str, found: bool, enabled: frozenset[str], directives: _Directives | None = None
) -> bool:
    """Tokenizing for comments is slow; do it only when a suppression can change the result:
    there are findings to silence, or a directive of ours can be unused/unknown (RC002/RC003)."""
    directives = directives or _Directives(text)
    if not directives.maybe:
        return False
    if found:
        return True
    if UNUSED_SUPPRESSION not in enabled and UNKNOWN_SUPPRESSION_CODE not in enabled:
        return False
    return directives.ours


def _apply_suppressions(
    found: list[tuple[Diagnostic, int]],
    source: SourceFile,
    enabled: frozenset[str],
    comments: list[tuple[int, int, str]] | None = None,
) -> list[Diagnostic]:
    """``comments``: a settings file's ``#`` comments (None: tokenize the Python text)."""
    index = sup_mod.SuppressionIndex(sup_mod.parse(source.text, source.lines, comments))
    kept: list[Diagnostic] = []
    for diag, stmt_row in found:
        sup = index.match(diag.code, diag.location.row, stmt_row)
        if sup is None:
            kept.append(diag)
        else:
            sup.used.add(diag.code)
            sup.used_any = True
    for sup in index.all:
        kept.extend(_suppression_findings(sup, source, enabled))
    return kept


def _suppression_findings(sup: sup_mod.Suppression, source: SourceFile, enabled: frozenset[str]) -> list[Diagnostic]:
    start = Location(sup.row, sup.column + 1)
    end = Location(sup.row, sup.end_column + 1)
    out: list[Diagnostic] = []
    if sup.codes is None:
        if sup.kind == "ignore" and not sup.used_any and UNUSED_SUPPRESSION in enabled:
            out.append(
                _diag(
                    UNUSED_SUPPRESSION,
                    "unused `# regcomp: ignore` (nothing to silence here)",
                    source.filename,
                    start,
                    end,
                    _rewrite_directive(sup, source, []),
                )
            )
        return out
    ours = [c for c in sup.codes if c.startswith("RC") or sup.kind == "ignore"]
    unknown = [c for c in ours if c not in ALL_RULES]
    unused = [c for c in ours if c in ALL_RULES and c in enabled and c not in sup.used]
    if unknown and UNKNOWN_SUPPRESSION_CODE in enabled:
        out.append(
            _diag(
                UNKNOWN_SUPPRESSION_CODE,
                f"unknown rule code in suppression: {', '.join(unknown)} (see `regcomp-lint rule --all`)",
                source.filename,
                start,
                end,
            )
        )
    if unused and UNUSED_SUPPRESSION in enabled:
        keep = [c for c in sup.codes if c not in unused]
        out.append(
            _diag(
                UNUSED_SUPPRESSION,
                f"unused suppression of {', '.join(unused)} (the rule did not fire here)",
                source.filename,
                start,
                end,
                _rewrite_directive(sup, source, keep),
            )
        )
    return out


def _rewrite_directive(sup: sup_mod.Suppression, source: SourceFile, keep: list[str]) -> Fix:
    """Safe fix for RC002: drop the unused codes, or the whole directive when none is left."""
    line = source.line(sup.row)
    if keep:
        new = "# noqa: " + ", ".join(keep) if sup.kind == "noqa" else f"# regcomp: ignore[{', '.join(keep)}]"
        edit = Edit(new, Location(sup.row, sup.column + 1), Location(sup.row, sup.end_column + 1))
        return Fix(Applicability.SAFE, "Remove the unused codes", (edit,))
    start = sup.column
    rest = line[sup.end_column :]
    if not rest.strip():
        while start > 0 and line[start - 1] in " \t":
            start -= 1
        if start == 0:
            # the comment was the whole line: delete the line itself
            row_end = Location(sup.row + 1, 1) if sup.row < len(source.lines) else Location(sup.row, len(line) + 1)
            return Fix(Applicability.SAFE, "Remove the unused suppression", (Edit("", Location(sup.row, 1), row_end),))
    # text follows the directive inside the comment: keep it a comment
    edit = Edit("" if not rest.strip() else "#", Location(sup.row, start + 1), Location(sup.row, sup.end_column + 1))
    return Fix(Applicability.SAFE, "Remove the unused suppression", (edit,))


def lint_source(text: str | bytes, filename: str = "<stdin>", config: Settings | None = None) -> list[Diagnostic]:
    """Lint one file's content; ``bytes`` are decoded like the interpreter would (BOM, coding line)."""
    settings = config or Settings()
    enabled = settings.enabled_for(filename)
    if isinstance(text, bytes):
        return settings.apply_severities(lint_bytes(text, filename, enabled))
    return settings.apply_severities(lint_text(text, filename, enabled))
