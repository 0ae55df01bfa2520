"""Rule pages (``rules/RCxxx.md``, ``rules/README.md``) generated from the rule classes alone.

The rule's file is the one source of truth: its docstring gives the sections, its ``valid`` and
``invalid`` examples (which are also its tests) give the examples. ``regcomp-lint rule CODE``
prints the same page. Regenerate after changing a rule::

    python -m regcomp_lint.lint.rule_docs --write     # rewrite rules/
    python -m regcomp_lint.lint.rule_docs --check     # exit 1 when rules/ is stale (CI)
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
from pathlib import Path

from regcomp_lint.checks import ALL_RULES, Rule, rule_by_name
from regcomp_lint.diagnostics import RULES_URL, Applicability, Severity
from regcomp_lint.files.kinds import kind_of

#: Where the generated pages live in a source checkout.
RULES_DIR = Path(__file__).resolve().parents[2] / "rules"
REGENERATE = "python -m regcomp_lint.lint.rule_docs --write"
GENERATED_NOTE = f"<!-- Generated from the rule's class by `{REGENERATE}`; edit the rule, not this page. -->"
PAGE_NAME = re.compile(r"^RC\d{3}\.md$")

_FIX_TEXT = {
    None: "none",
    Applicability.SAFE: "safe (applied by `--fix`)",
    Applicability.UNSAFE: "unsafe (applied by `--fix --unsafe-fixes`)",
    Applicability.DISPLAY: "display only (shown, never applied)",
}
_FIX_SHORT = {
    None: "none",
    Applicability.SAFE: "safe",
    Applicability.UNSAFE: "unsafe",
    Applicability.DISPLAY: "display",
}


#: What each default severity means, shown on every rule page next to the rule's own level.
SEVERITY_MEANING = {
    Severity.ERROR: "the script fails, or silently trains or saves the wrong thing, at run time",
    Severity.WARNING: "the script runs, but compiles worse than it could (a graph break, a recompile, a hidden fallback)",
    Severity.INFO: "advice: a faster or clearer setup; findings do not fail a run unless `--fail-on info`",
}


def severity_text(rule: type[Rule]) -> str:
    return f"{rule.severity.value} ({SEVERITY_MEANING[rule.severity]}; override in `[tool.regcomp-lint.severity]`)"


def fix_availability(rule: type[Rule]) -> str:
    return _FIX_TEXT[rule.fix_applicability]


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _code_block(code: str) -> str:
    fence = "```"
    while fence in code:
        fence += "`"
    return f"{fence}python\n{code.rstrip(chr(10))}\n{fence}"


def render_page(rule: type[Rule], generated_note: bool = True) -> str:
    """The markdown page for one rule; ``generated_note=False`` leaves out the HTML comment that
    tells editors of ``rules/`` where the page comes from (``regcomp-lint rule`` prints it so)."""
    lines = [f"# {rule.code} {rule.name}", ""] + ([GENERATED_NOTE, ""] if generated_note else [])
    lines += [
        "| | |",
        "|---|---|",
        f"| Code | `{rule.code}` |",
        f"| Name | `{rule.name}` |",
        f"| Severity | {severity_text(rule)} |",
        f"| Fix | {fix_availability(rule)} |",
    ]
    if rule.graph_break_ids:
        lines.append(f"| torch graph-break ids | {', '.join(f'`{gb}`' for gb in rule.graph_break_ids)} |")
    lines.append(f"| Message | {_cell(rule.message)} |")
    lines.append("")
    docs = rule.docs()
    if docs:
        lines += [docs, ""]
    lines += _examples(rule)
    return "\n".join(lines).rstrip("\n") + "\n"


def _examples(rule: type[Rule]) -> list[str]:
    if not rule.invalid and not rule.valid:
        return _settings_examples(rule)
    lines = ["## Examples checked by the tests", ""]
    if rule.invalid:
        lines += ["### Reported", ""]
        for example in rule.invalid:
            count = f" ({example.count} findings)" if example.count != 1 else ""
            if count:
                lines += [f"Reported{count}:", ""]
            lines += [_code_block(example.code), ""]
            if example.fixed is not None:
                lines += ["After the fix:", "", _code_block(example.fixed), ""]
    if rule.valid:
        lines += ["### Not reported", ""]
        for code in rule.valid:
            lines += [_code_block(code), ""]
    lines += _settings_examples(rule)
    return lines


#: Code-block language per settings file kind.
_FENCE = {
    "yaml": "yaml",
    "json": "json",
    "shell": "bash",
    "makefile": "makefile",
    "dockerfile": "dockerfile",
    "dotenv": "bash",
}


def _settings_examples(rule: type[Rule]) -> list[str]:
    if not rule.settings_invalid and not rule.settings_valid:
        return []
    lines = ["### In settings files (YAML, JSON, shell, Makefile, Dockerfile, `.env`)", ""]
    for title, examples in (("Reported", rule.settings_invalid), ("Not reported", rule.settings_valid)):
        for example in examples:
            fence = _FENCE[kind_of(example.filename).value]
            lines += [f"{title} in `{example.filename}`:", "", f"```{fence}\n{example.code.rstrip()}\n```", ""]
            for name, text in example.files:
                lines += [f"beside `{name}`:", "", _code_block(text), ""]
            if example.fixed is not None:
                lines += ["After the fix:", "", f"```{fence}\n{example.fixed.rstrip()}\n```", ""]
    return lines


def _table_rows(rules: dict[str, type[Rule]], link_prefix: str) -> list[str]:
    rows = ["| Code | Name | Severity | Summary | Fix |", "|---|---|---|---|---|"]
    for code, rule in rules.items():
        rows.append(
            f"| [{code}]({link_prefix}{code}.md) | `{rule.name}` | {rule.severity.value} | {_cell(rule.summary())} | {_FIX_SHORT[rule.fix_applicability]} |"
        )
    return rows


#: The project README carries the same table between these markers (kept in sync by --write).
README_PATH = RULES_DIR.parent / "README.md"
README_START = "<!-- rule-table:start (generated by `python -m regcomp_lint.lint.rule_docs --write`) -->"
README_END = "<!-- rule-table:end -->"


def sync_readme(text: str, rules: dict[str, type[Rule]] | None = None) -> str:
    """``text`` (the README) with the rule table between the markers regenerated."""
    rules = ALL_RULES if rules is None else rules
    if README_START not in text or README_END not in text:
        return text
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    return head + README_START + "\n" + "\n".join(_table_rows(rules, "rules/")) + "\n" + README_END + tail


def render_index(rules: dict[str, type[Rule]] | None = None) -> str:
    """``rules/README.md``: one row per rule."""
    rules = ALL_RULES if rules is None else rules
    lines = [
        "# Rules",
        "",
        GENERATED_NOTE,
        "",
        "Every rule has a code and a name; both work in `select`, `ignore`, `# noqa:` and",
        "`regcomp-lint rule`. Fix: safe fixes are applied by `--fix`, unsafe ones by",
        "`--fix --unsafe-fixes`, display fixes are only shown. Severity: error (fails or goes",
        "wrong at run time), warning (costs compiled speed), info (advice; does not fail a run",
        "unless `--fail-on info`); `[tool.regcomp-lint.severity]` overrides it per rule.",
        "",
        *_table_rows(rules, ""),
    ]
    return "\n".join(lines) + "\n"


def rule_json(rule: type[Rule]) -> dict:
    """Machine-readable description of a rule (``regcomp-lint rule --format json``)."""
    return {
        "code": rule.code,
        "name": rule.name,
        "summary": rule.summary(),
        "message": rule.message,
        "severity": rule.severity.value,
        "fix": rule.fix_applicability.value if rule.fix_applicability else None,
        "graph_break_ids": list(rule.graph_break_ids),
        "url": RULES_URL.format(code=rule.code),
        "explanation": rule.docs(),
        "examples": {
            "invalid": [{"code": ex.code, "fixed": ex.fixed, "count": ex.count} for ex in rule.invalid],
            "valid": list(rule.valid),
        },
    }


class UnknownRule(LookupError):
    """``regcomp-lint rule X`` where X is neither a code nor a name."""


def lookup(code_or_name: str) -> type[Rule]:
    """The rule for a code (any case) or a name; ``UnknownRule`` says what was meant when it can."""
    rule = rule_by_name(code_or_name)
    if rule is not None:
        return rule
    key = code_or_name.strip()
    candidates = {code: code for code in ALL_RULES} | {r.name: code for code, r in ALL_RULES.items()}
    close = difflib.get_close_matches(
        key.upper() if key.upper().startswith("RC") else key, list(candidates), n=3, cutoff=0.6
    )
    hint = (
        f"; did you mean {' or '.join(sorted({candidates[c] + ' (' + ALL_RULES[candidates[c]].name + ')' for c in close}))}?"
        if close
        else ""
    )
    raise UnknownRule(f"unknown rule {code_or_name!r}{hint} (list them all with `regcomp-lint rule --all`)")


def show(rules: list[type[Rule]], fmt: str, as_list: bool) -> str:
    """What ``regcomp-lint rule`` prints: markdown pages, or JSON (an array for ``--all``)."""
    if fmt == "json":
        data = [rule_json(rule) for rule in rules]
        return json.dumps(data if as_list else data[0], indent=2, ensure_ascii=False) + "\n"
    return "\n".join(render_page(rule, generated_note=False) for rule in rules)


def one_line_list(rules: list[type[Rule]]) -> str:
    """``regcomp-lint rule --list``: ``CODE  severity  fix  name  summary``, one rule a line."""
    name_w = max(len(rule.name) for rule in rules)
    lines = []
    for rule in rules:
        fix = _FIX_SHORT[rule.fix_applicability]
        summary = " ".join(rule.summary().split()).split(". ", 1)[0].rstrip(".") + "."
        lines.append(f"{rule.code}  {rule.severity.value:<7}  {fix:<7}  {rule.name:<{name_w}}  {summary}")
    return "\n".join(lines) + "\n"


def expected_files(rules: dict[str, type[Rule]] | None = None) -> dict[str, str]:
    """File name → content for everything the generator owns in ``rules/``."""
    rules = ALL_RULES if rules is None else rules
    files = {f"{code}.md": render_page(rule) for code, rule in rules.items()}
    files["README.md"] = render_index(rules)
    return files


def stale_files(folder: Path, rules: dict[str, type[Rule]] | None = None) -> list[str]:
    """Problems with ``folder`` as one line each: missing, out-of-date and orphaned pages."""
    expected = expected_files(rules)
    problems = []
    for name, content in expected.items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif path.read_text(encoding="utf-8") != content:
            problems.append(f"{name}: out of date")
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            if PAGE_NAME.match(path.name) and path.name not in expected:
                problems.append(f"{path.name}: page for a code that is not a rule")
    return problems


def write(folder: Path, rules: dict[str, type[Rule]] | None = None) -> list[str]:
    """Bring ``folder`` up to date; return the names written or removed."""
    folder.mkdir(parents=True, exist_ok=True)
    expected = expected_files(rules)
    changed = []
    for name, content in expected.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != content:
            tmp = path.with_name(f".{name}.tmp")
            tmp.write_text(content, encoding="utf-8", newline="\n")
            os.replace(tmp, path)
            changed.append(name)
    for path in sorted(folder.iterdir()):
        if PAGE_NAME.match(path.name) and path.name not in expected:
            path.unlink()
            changed.append(f"{path.name} (removed)")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m regcomp_lint.lint.rule_docs", description="Generate or check the rule pages in rules/."
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the pages that differ")
    mode.add_argument("--check", action="store_true", help="exit 1 when a page is missing, stale or orphaned")
    parser.add_argument("--dir", type=Path, default=RULES_DIR, help=f"folder of the pages (default: {RULES_DIR})")
    args = parser.parse_args(argv)
    readme = README_PATH.read_text(encoding="utf-8") if args.dir == RULES_DIR and README_PATH.is_file() else None
    if args.write:
        changed = write(args.dir)
        if readme is not None and sync_readme(readme) != readme:
            README_PATH.write_text(sync_readme(readme), encoding="utf-8", newline="\n")
            changed.append(str(README_PATH.name) + " (rule table)")
        print("\n".join(f"wrote {name}" for name in changed) or f"{args.dir}: up to date")
        return 0
    problems = stale_files(args.dir)
    if readme is not None and sync_readme(readme) != readme:
        problems.append("README.md: rule table out of date")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print(f"rule pages are stale; run `{REGENERATE}`", file=sys.stderr)
        return 1
    print(f"{args.dir}: up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
