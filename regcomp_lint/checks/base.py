"""What a rule is: code, name, docs, examples and a visitor over Python's ``ast``.

One rule per file in ``regcomp_lint/checks/``. Everything users read about a rule (its page in
``rules/``, ``regcomp-lint rule CODE``) and every example test is generated from the class, so
the rule's file is the one source of truth.

Writing a rule::

    class SuppressErrors(Rule):
        '''## What it does ... (sections listed in DOC_SECTIONS)'''
        code = "RC107"
        name = "suppress-errors"
        message = "..."
        severity = Severity.WARNING  # why: in the docs' "Why is this bad"
        triggers = ("suppress_errors",)
        valid = ["..."]
        invalid = [Invalid("...", fixed="...")]

        def visit_Assign(self, node):
            ...
            self.report(node.targets[0], fix=...)

The engine walks each file's tree once and calls ``visit_<NodeType>`` / ``leave_<NodeType>`` on
every enabled rule, then ``finish()``. ``self.ctx`` gives the source, the import map and the
chain of ancestors of the node being visited.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from regcomp_lint.diagnostics import Applicability, Edit, Fix, Severity

if TYPE_CHECKING:
    from regcomp_lint.analysis.compile_settings import SettingsFile
    from regcomp_lint.analysis.file_context import FileContext
    from regcomp_lint.diagnostics import Location

#: A prefilter word (``Rule.triggers``, ``Rule.required``): a substring, or a compiled pattern
#: that must be found in the file (for a name that is a word of its own: ``compile``, not
#: ``_can_compile_fullgraph``). Start a pattern with a literal, so the search is as fast as ``in``.
Word = str | re.Pattern[str]

DOC_SECTIONS = ("What it does", "Why is this bad", "Example", "Use instead", "Fix safety", "References")


@dataclass(frozen=True)
class Invalid:
    """An example that must produce findings of the rule.

    ``fixed``: the text after applying the rule's fixes (unsafe ones included), or None when the
    rule offers no fix for it. ``count``: how many findings. ``message``: a substring the (first)
    message must contain.
    """

    code: str
    fixed: str | None = None
    count: int = 1
    message: str | None = None


@dataclass(frozen=True)
class SettingsExample:
    """An example in another format (``default_config.yaml``, ``launch.sh``...): the file name
    says the format. Reported examples give ``count``/``message``/``fixed`` as :class:`Invalid`."""

    filename: str
    code: str
    fixed: str | None = None
    count: int = 1
    message: str | None = None
    #: Other files beside it, (name, text): the launched script a cross-file rule reads.
    files: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SettingsReport:
    """A finding in a settings file: positions are already known (no ``ast`` node)."""

    start: Location
    end: Location
    message: str
    fix: Fix | None = None


@dataclass
class Report:
    node: ast.AST
    message: str
    fix: Fix | None
    stmt_row: int
    end_node: ast.AST | None = None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    #: How much a finding matters by default (config ``[tool.regcomp-lint.severity]`` overrides it).
    #: Every rule declares its own (no default here): error = fails or goes wrong at run time,
    #: warning = costs speed (graph break, recompile), info = advice.
    severity: ClassVar[Severity]
    #: Words (substrings or patterns, see :data:`Word`) of which at least one must occur in a file
    #: for the rule to run on it; the engine's prefilter skips files that match no enabled rule.
    #: Empty: never prefiltered out.
    triggers: ClassVar[tuple[Word, ...]] = ()
    #: Words that must all occur in a file for the rule to run on it (checked with the
    #: triggers: ``required=("forward",)`` keeps RC2xx off files without any ``forward``); a
    #: tuple of words is met by any one of them (``required=((a, b),)``: a or b, and a trigger).
    required: ClassVar[tuple[Word | tuple[Word, ...], ...]] = ()
    #: The best fix the rule can offer (None: no fix). Shown in the docs and rule table.
    fix_applicability: ClassVar[Applicability | None] = None
    #: torch graph-break registry ids the rule predicts (RC2xx).
    graph_break_ids: ClassVar[tuple[str, ...]] = ()
    valid: ClassVar[list[str]] = []
    invalid: ClassVar[list[Invalid]] = []
    #: Judges a model's own code (graph breaks, per-block recompiles): by default its findings
    #: are kept only in files a compile of the linted project reaches (``lint.scope``), unless
    #: the rule is selected explicitly.
    needs_compiled_module: ClassVar[bool] = False
    #: Advice for a faster cold start: ``prefer-steady-state = true`` in the config turns it off.
    cold_start_advice: ClassVar[bool] = False
    #: Tool rules (RC0xx) are produced by the engine itself, not by a visitor.
    engine_rule: ClassVar[bool] = False
    #: Rules that also judge compile settings outside Python override :meth:`check_settings`
    #: and give examples in those formats.
    settings_valid: ClassVar[list[SettingsExample]] = []
    settings_invalid: ClassVar[list[SettingsExample]] = []

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.reports: list[Report] = []

    # -- reporting -------------------------------------------------------------------------
    def report(
        self, node: ast.AST, message: str | None = None, *, fix: Fix | None = None, end_node: ast.AST | None = None
    ) -> None:
        self.reports.append(Report(node, message or self.message, fix, self.ctx.statement_row(node), end_node))

    def make_fix(
        self, message: str, edits: list[Edit] | tuple[Edit, ...], applicability: Applicability | None = None
    ) -> Fix:
        return Fix(applicability or self.fix_applicability or Applicability.SAFE, message, tuple(edits))

    def finish(self) -> None:
        """Called once after the walk; rules that need the whole file report here."""

    @classmethod
    def check_settings(cls, found: SettingsFile, path: str) -> list[SettingsReport]:
        """Findings in a YAML/JSON/shell/Makefile/Dockerfile/.env file's compile settings."""
        return []

    @classmethod
    def reads_settings(cls) -> bool:
        return cls.check_settings.__func__ is not Rule.check_settings.__func__  # type: ignore[attr-defined]

    @classmethod
    def settings_fix(cls, message: str, edits: list[Edit]) -> Fix:
        return Fix(cls.fix_applicability or Applicability.SAFE, message, tuple(edits))

    # -- documentation ---------------------------------------------------------------------
    @classmethod
    def docs(cls) -> str:
        return textwrap.dedent(inspect.getdoc(cls) or "").strip()

    @classmethod
    def summary(cls) -> str:
        """First paragraph of 'What it does', for tables."""
        doc = cls.docs()
        marker = "## What it does"
        if marker in doc:
            body = doc.split(marker, 1)[1].strip().split("\n\n", 1)[0]
            return " ".join(body.split())
        return cls.message

    @classmethod
    def handlers(cls) -> dict[str, str]:
        """Map of ``visit_X``/``leave_X`` method names this rule defines."""
        return {name: name for name in dir(cls) if name.startswith(("visit_", "leave_"))}
