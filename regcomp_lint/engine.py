"""Lint one file: decode, parse once with ``ast``, one walk for every enabled rule, suppressions.

Why ``ast`` and not libcst for detection: on the transformers tree (2,900 files) ``ast.parse``
takes ~6 s where libcst takes ~64 s, and libcst metadata far more. libcst is used where it
shines: rewriting code (``regcomp-fix``), where formatting must survive.

Cheap prefilter: a rule declares ``triggers`` (substrings); a file none of whose enabled rules'
triggers occur is parsed only for RC001 and never walked.
"""

from __future__ import annotations

import ast
import warnings
from collections import defaultdict
from typing import Iterable

from regcomp_lint import suppressions as sup_mod
from regcomp_lint.checks import ALL_RULES, Rule
from regcomp_lint.context import FileContext
from regcomp_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location
from regcomp_lint.source import DecodeError, SourceFile, decode_source

SYNTAX_ERROR = "RC001"
UNUSED_SUPPRESSION = "RC002"
UNKNOWN_SUPPRESSION_CODE = "RC003"


def _diag(code: str, message: str, filename: str, start: Location, end: Location, fix: Fix | None = None) -> Diagnostic:
    return Diagnostic(code, ALL_RULES[code].name, message, filename, start, end, fix)


def lint_bytes(data: bytes, filename: str, enabled: frozenset[str]) -> list[Diagnostic]:
    try:
        text = decode_source(data)
    except DecodeError as exc:
        if SYNTAX_ERROR not in enabled:
            return []
        loc = Location(exc.row, exc.column)
        return [_diag(SYNTAX_ERROR, f"cannot read file: {exc}", filename, loc, loc)]
    return lint_text(text, filename, enabled)


def _parse(text: str, filename: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning for invalid escapes etc. is not ours to show
        return ast.parse(text, filename=filename)


def _syntax_error(exc: BaseException, source: SourceFile) -> Diagnostic:
    row = getattr(exc, "lineno", None) or 1
    col = getattr(exc, "offset", None) or 1
    row = max(1, min(row, max(len(source.lines), 1)))
    col = max(1, min(col, len(source.line(row)) + 1))
    msg = getattr(exc, "msg", None) or str(exc)
    if isinstance(exc, RecursionError) or "too many nested" in msg or "too complex" in msg:
        msg = f"file is too deeply nested to parse ({msg})"
    loc = Location(row, col)
    return _diag(SYNTAX_ERROR, f"SyntaxError: {msg}", source.filename, loc, loc)


def active_rules(text: str, enabled: Iterable[str]) -> list[type[Rule]]:
    """Enabled visitor rules whose triggers occur in ``text`` (the prefilter)."""
    rules = []
    for code in sorted(enabled):
        rule = ALL_RULES.get(code)
        if rule is None or rule.engine_rule:
            continue
        if not rule.triggers or any(t in text for t in rule.triggers):
            rules.append(rule)
    return rules


def walk(ctx: FileContext, rules: list[Rule]) -> None:
    """One iterative depth-first walk (no recursion limit on deep code) for all rules."""
    visit: dict[type, list] = defaultdict(list)
    leave: dict[type, list] = defaultdict(list)
    for rule in rules:
        for method in rule.handlers():
            kind, _, type_name = method.partition("_")
            node_type = getattr(ast, type_name, None)
            if node_type is None:
                raise RuntimeError(f"{type(rule).__name__}.{method}: no ast.{type_name}")
            (visit if kind == "visit" else leave)[node_type].append(getattr(rule, method))
    stack: list[tuple[ast.AST, bool]] = [(ctx.tree, False)]
    ancestors = ctx.ancestors
    while stack:
        node, leaving = stack.pop()
        if leaving:
            ancestors.pop()
            for handler in leave.get(type(node), ()):
                handler(node)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            ctx.imports.add(node)
        for handler in visit.get(type(node), ()):
            handler(node)
        stack.append((node, True))
        ancestors.append(node)
        children = list(ast.iter_child_nodes(node))
        children.reverse()
        stack.extend((child, False) for child in children)
    for rule in rules:
        rule.finish()


def lint_text(text: str, filename: str, enabled: frozenset[str]) -> list[Diagnostic]:
    source = SourceFile(filename, text)
    try:
        tree = _parse(text, filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return [_syntax_error(exc, source)] if SYNTAX_ERROR in enabled else []

    ctx = FileContext(source, tree)
    rules = [rule_cls(ctx) for rule_cls in active_rules(text, enabled)]
    found: list[tuple[Diagnostic, int]] = []
    if rules:
        walk(ctx, rules)
        for rule in rules:
            for rep in rule.reports:
                diag = Diagnostic(
                    rule.code, rule.name, rep.message, filename,
                    source.start(rep.node), source.end(rep.end_node or rep.node), rep.fix,
                )
                found.append((diag, rep.stmt_row))

    if sup_mod.might_have_suppressions(text):
        diagnostics = _apply_suppressions(found, source, enabled)
    else:
        diagnostics = [d for d, _ in found]
    diagnostics.sort(key=Diagnostic.sort_key)
    return diagnostics


def _apply_suppressions(found: list[tuple[Diagnostic, int]], source: SourceFile, enabled: frozenset[str]) -> list[Diagnostic]:
    index = sup_mod.SuppressionIndex(sup_mod.parse(source.text, source.lines))
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
            out.append(_diag(UNUSED_SUPPRESSION, "unused `# regcomp: ignore` (nothing to silence here)", source.filename, start, end,
                             _rewrite_directive(sup, source, [])))
        return out
    ours = [c for c in sup.codes if c.startswith("RC") or sup.kind == "ignore"]
    unknown = [c for c in ours if c not in ALL_RULES]
    unused = [c for c in ours if c in ALL_RULES and c in enabled and c not in sup.used]
    if unknown and UNKNOWN_SUPPRESSION_CODE in enabled:
        out.append(_diag(UNKNOWN_SUPPRESSION_CODE, f"unknown rule code in suppression: {', '.join(unknown)} (see `regcomp-lint rule --all`)",
                         source.filename, start, end))
    if unused and UNUSED_SUPPRESSION in enabled:
        keep = [c for c in sup.codes if c not in unused]
        out.append(_diag(UNUSED_SUPPRESSION, f"unused suppression of {', '.join(unused)} (the rule did not fire here)",
                         source.filename, start, end, _rewrite_directive(sup, source, keep)))
    return out


def _rewrite_directive(sup: sup_mod.Suppression, source: SourceFile, keep: list[str]) -> Fix:
    """Safe fix for RC002: drop the unused codes, or the whole directive when none is left."""
    line = source.line(sup.row)
    if keep:
        new = "# noqa: " + ", ".join(keep) if sup.kind == "noqa" else f"# regcomp: ignore[{', '.join(keep)}]"
        edit = Edit(new, Location(sup.row, sup.column + 1), Location(sup.row, sup.end_column + 1))
        return Fix(Applicability.SAFE, "Remove the unused codes", (edit,))
    start = sup.column
    rest = line[sup.end_column:]
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
