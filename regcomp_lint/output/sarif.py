"""SARIF 2.1.0, the format code-scanning services (GitHub, Azure DevOps) ingest.

Every rule is described in ``tool.driver.rules`` (so a service can show its docs); each finding is
a result with a region in 1-based line/column (``columnKind: unicodeCodePoints``, the columns we
count), a ``level`` after its severity (error, warning, note) and, when it has one, its fix as ``artifactChanges``. File URIs are relative to the
``%SRCROOT%`` base, the current folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

from regcomp_lint import __version__
from regcomp_lint.checks import ALL_RULES, Rule
from regcomp_lint.diagnostics import RULES_URL, Diagnostic, Fix, Location
from regcomp_lint.output.render_context import RenderContext

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/regcomp-lint/regcomp-lint"
SRCROOT = "%SRCROOT%"


def render(diagnostics: list[Diagnostic], ctx: RenderContext) -> str:
    return json.dumps(sarif_log(diagnostics, ctx), indent=2, ensure_ascii=False) + "\n"


def sarif_log(diagnostics: list[Diagnostic], ctx: RenderContext) -> dict:
    rules = list(ALL_RULES.values())
    index = {rule.code: i for i, rule in enumerate(rules)}
    run = {
        "tool": {
            "driver": {
                "name": "regcomp-lint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [rule_descriptor(rule) for rule in rules],
            }
        },
        "originalUriBaseIds": {SRCROOT: {"uri": Path(os.path.abspath(ctx.cwd)).as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(d, index, ctx) for d in diagnostics],
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def rule_descriptor(rule: type[Rule]) -> dict:
    properties: dict = {"fixApplicability": rule.fix_applicability.value if rule.fix_applicability else "none"}
    if rule.graph_break_ids:
        properties["graphBreakIds"] = list(rule.graph_break_ids)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary()},
        "fullDescription": {"text": rule.docs() or rule.message, "markdown": rule.docs() or rule.message},
        "messageStrings": {"default": {"text": rule.message}},
        "helpUri": RULES_URL.format(code=rule.code),
        "defaultConfiguration": {"level": rule.severity.sarif_level},
        "properties": properties,
    }


def artifact_location(filename: str, ctx: RenderContext) -> dict:
    """A relative URI under ``%SRCROOT%`` for files below the current folder, else a file URI."""
    absolute = os.path.abspath(filename)
    rel = os.path.relpath(absolute, ctx.cwd) if not filename.startswith("<") else filename
    if filename.startswith("<") or not rel.startswith(".."):
        return {"uri": quote(Path(rel).as_posix(), safe="/"), "uriBaseId": SRCROOT}
    return {"uri": Path(absolute).as_uri()}


def region(start: Location, end: Location) -> dict:
    return {"startLine": start.row, "startColumn": start.column, "endLine": end.row, "endColumn": end.column}


def _result(diag: Diagnostic, index: dict[str, int], ctx: RenderContext) -> dict:
    location = artifact_location(diag.filename, ctx)
    result: dict = {
        "ruleId": diag.code,
        "level": diag.severity.sarif_level,
        "message": {"text": diag.message},
        "locations": [
            {"physicalLocation": {"artifactLocation": location, "region": region(diag.location, diag.end_location)}}
        ],
    }
    if diag.code in index:
        result["ruleIndex"] = index[diag.code]
    if diag.fix is not None and diag.fix.edits:
        result["fixes"] = [_fix(diag.fix, location)]
    return result


def _fix(fix: Fix, location: dict) -> dict:
    return {
        "description": {"text": fix.message or "Apply the fix"},
        "artifactChanges": [
            {
                "artifactLocation": location,
                "replacements": [
                    {
                        "deletedRegion": region(edit.location, edit.end_location),
                        "insertedContent": {"text": edit.content},
                    }
                    for edit in fix.edits
                ],
            }
        ],
        "properties": {"applicability": fix.applicability.value},
    }
