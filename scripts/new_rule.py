"""Scaffold a new lint rule: its file, a positive and a negative fixture, and its generated pages.

    python scripts/new_rule.py RC108 compile-without-backend "Reports a compile that ..."

Creates ``regcomp_lint/checks/rc108_compile_without_backend.py`` (a rule class with every doc
section and VALID/INVALID examples, which are its tests), ``fixtures/lint/rc108_*.py`` with
their golden ``.expected`` findings, and regenerates ``rules/`` and the README's rule table
(``python -m regcomp_lint.lint.rule_docs --write``).

The generated visitor is a placeholder that really works, so every test passes from the start:
it reports a call to ``todo_<name>()``. Replace it, the examples, the fixtures and the TODO
sections with the real check (CONTRIBUTING.md says how), then regenerate the pages and goldens.

Refuses (exit 2, nothing written) a code outside RC001-RC599, a name that is not kebab-case,
and a code or name that is already a rule.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ROOT / "regcomp_lint" / "checks"
FIXTURES = ROOT / "fixtures" / "lint"

CODE = re.compile(r"^RC[0-5](0[1-9]|[1-9]\d)$")
NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")

RULE_TEMPLATE = '''\
"""{code} {name}."""

import ast

from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Severity

#: TODO: the placeholder check reports a call to this name; replace it with the real check.
PLACEHOLDER_CALL = "{placeholder}"


class {class_name}(Rule):
    """## What it does
{what}

    ## Why is this bad
    TODO: what goes wrong at run time (a graph break, a recompile, a slow cold start, an error).

    ## Example
    ```python
    {placeholder}()
    ```

    ## Use instead
    TODO: the code to write instead.

    ## Fix safety
    No fix yet.

    ## References
    - TODO: the torch / Accelerate documentation this rule relies on.
    """

    code = "{code}"
    name = "{name}"
    # TODO: error (fails or goes wrong at run time), warning (costs compiled speed) or info (advice);
    # say why in "Why is this bad".
    severity = Severity.WARNING
    # TODO: the message says what is wrong at this place and what to do.
    {message_line}
    triggers = (PLACEHOLDER_CALL,)

    valid = [
        "other()\\n",
        "{placeholder}\\n",
    ]
    invalid = [
        Invalid("{placeholder}()\\n"),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == PLACEHOLDER_CALL:
            self.report(node)
'''

POSITIVE_FIXTURE = """\
# {code} {name}: TODO: a realistic script that the rule reports.
{placeholder}()
"""

NEGATIVE_FIXTURE = """\
# {code} {name}, negative: TODO: a realistic script that the rule must not report.
{placeholder} = None
"""

#: Lints fixture files with the scaffolded package and prints their golden lines, in the format
#: of tests/test_fixtures_golden.py (a fresh interpreter, so the new rule is registered).
GOLDEN_SNIPPET = """\
import sys
from pathlib import Path
from regcomp_lint.lint.config import Settings
from regcomp_lint.api import lint_source
for name in sys.argv[1:]:
    path = Path(name)
    found = sorted(lint_source(path.read_bytes(), path.name, Settings()),
                   key=lambda d: (d.location.row, d.location.column, d.code, d.message))
    text = "".join(f"{path.name}:{d.location.row}:{d.location.column}: {d.code} {d.message}\\n" for d in found)
    path.with_suffix(".expected").write_text(text, encoding="utf-8")
"""


class Refused(Exception):
    """The arguments cannot make a new rule (exit 2, nothing written)."""


def class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))


def check_arguments(code: str, name: str, summary: str) -> None:
    if not CODE.match(code):
        raise Refused(f"{code!r} is not a rule code: RC followed by 001-599 (RC0xx tool ... RC5xx regional)")
    if not NAME.match(name):
        raise Refused(f"{name!r} is not a kebab-case name (lowercase words joined by '-')")
    if not summary.strip() or "\n" in summary or '"""' in summary or "\\" in summary:
        raise Refused('the summary must be one non-empty line without backslashes or """')
    sys.path.insert(0, str(ROOT))
    from regcomp_lint.checks import ALL_RULES

    for existing in ALL_RULES.values():
        if existing.code == code or existing.name == name:
            raise Refused(f"{existing.code} {existing.name} already exists")
    taken = sorted(CHECKS.glob(f"{code.lower()}_*.py")) + sorted(CHECKS.glob(f"rc*_{name.replace('-', '_')}.py"))
    if taken:
        raise Refused(f"{taken[0].relative_to(ROOT)} already exists")


def render_rule(code: str, name: str, summary: str) -> str:
    snake = name.replace("-", "_")
    what = textwrap.fill(summary.strip(), width=96, initial_indent="    ", subsequent_indent="    ")
    return RULE_TEMPLATE.format(
        code=code,
        name=name,
        class_name=class_name(name),
        placeholder=f"todo_{snake}",
        what=what,
        message_line=assignment("message", summary.strip()),
    )


def assignment(target: str, text: str, indent: int = 4, width: int = 120) -> str:
    """``target = "text"`` as ruff format writes it: in parentheses when only that makes it fit."""
    literal = string_literal(text)
    line = f"{target} = {literal}"
    if indent + len(line) <= width or indent + 4 + len(literal) > width:
        return line
    pad = " " * indent
    return f"{target} = (\n{pad}    {literal}\n{pad})"


def string_literal(text: str) -> str:
    """A string literal in ruff format's preferred quotes (double, unless that needs more escapes)."""
    if '"' in text and "'" not in text:
        return f"'{text}'"
    return '"' + text.replace('"', '\\"') + '"'


def scaffold(code: str, name: str, summary: str) -> list[Path]:
    """Write the rule and its fixtures, then regenerate goldens and pages; the paths written."""
    check_arguments(code, name, summary)
    snake = name.replace("-", "_")
    placeholder = f"todo_{snake}"
    rule_path = CHECKS / f"{code.lower()}_{snake}.py"
    positive = FIXTURES / f"{code.lower()}_{snake}.py"
    negative = FIXTURES / f"{code.lower()}_negative_{snake}.py"
    rule_path.write_text(render_rule(code, name, summary), encoding="utf-8")
    positive.write_text(POSITIVE_FIXTURE.format(code=code, name=name, placeholder=placeholder), encoding="utf-8")
    negative.write_text(NEGATIVE_FIXTURE.format(code=code, name=name, placeholder=placeholder), encoding="utf-8")
    run_python("-c", GOLDEN_SNIPPET, str(positive), str(negative))
    run_python("-m", "regcomp_lint.lint.rule_docs", "--write")
    return [rule_path, positive, positive.with_suffix(".expected"), negative, negative.with_suffix(".expected")]


def run_python(*args: str) -> None:
    """Run this checkout's package in a fresh interpreter (so the new rule is registered)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    subprocess.run([sys.executable, *args], cwd=ROOT, env=env, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Scaffold a new lint rule (rule file, fixtures, pages).")
    parser.add_argument("code", help="the rule code, e.g. RC108 (RC0xx tool ... RC5xx regional compilation)")
    parser.add_argument("name", help="the kebab-case rule name, e.g. compile-without-backend")
    parser.add_argument("summary", help="one sentence for 'What it does', e.g. 'Reports ...'")
    args = parser.parse_args(argv)
    code = args.code.upper()
    try:
        written = scaffold(code, args.name, args.summary)
    except Refused as refused:
        print(f"new_rule.py: {refused}", file=sys.stderr)
        return 2
    for path in written:
        print(f"created {path.relative_to(ROOT)}")
    print(
        f"Next: replace the placeholder check, the examples, the fixtures and the TODO sections in "
        f"{written[0].relative_to(ROOT)}; then `python -m regcomp_lint.lint.rule_docs --write` and "
        f"`REGCOMP_UPDATE_GOLDEN=1 python -m pytest tests/test_fixtures_golden.py` (see CONTRIBUTING.md)."
    )
    if code.startswith("RC2"):
        print(
            "RC2xx rules are checked against dynamo: add a fixture model as CONTRIBUTING.md says "
            "(Adding a rule, step 6), or tests/test_static_vs_dynamo.py fails for this rule."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
