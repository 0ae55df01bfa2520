"""Does the static lint find the lines dynamo breaks on, and only those?

Runs every model of ``fixtures/models/`` under torch dynamo (``bench/_dynamo_probe.py``, in an
interpreter that has torch 2.13 + accelerate, given with ``--python``), then lints the same files
with ``regcomp_lint.api.lint_source`` (no torch) and compares:

- **the graph-break rules** (every RC2xx rule of ``regcomp_lint.checks.ALL_RULES`` that is a
  ``ForwardRule``: RC201–RC209 today) line by line: a finding is a true alarm when dynamo broke on
  a line inside its span; a dynamo break is found when a finding's span holds it. Precision and
  recall per model and overall; targets: precision 1.0, recall ≥ 0.9.
- **RC210** (``fullgraph=True`` will raise) per model, linting the file with a
  ``torch.compile(<what make_model() returns>, fullgraph=True)`` line appended: flagged, against
  "``torch.compile(model, fullgraph=True)`` raised"; and the break its message names must be a
  line dynamo broke on.
- **RC301** (per-block int attribute) per model: flagged, against "compiling each block with
  ``compile_regions`` recompiled because a guard on one module attribute failed for two or more
  values" (block k fails on the k values compiled before it; a bool attribute fails on one).
- **RC502** (blocks not regionalizable) per model, linting the file with a
  ``compile_regions(make_model())`` call appended: flagged, against "``compile_regions`` raised,
  or compiled the whole model although it has repeated blocks outside a one-class ModuleList".

    python bench/static_vs_dynamo.py --python /tmp/truth/bin/python [--update]
    python bench/static_vs_dynamo.py            # compare with the stored dynamo results

``--update`` stores the probe's result in ``fixtures/models/dynamo_breaks.json`` (the file the
unit test ``tests/test_static_vs_dynamo.py`` compares against without torch). Exit status 1 when
a target is missed.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "fixtures" / "models"
STORED = MODELS / "dynamo_breaks.json"
PROBE = Path(__file__).resolve().parent / "_dynamo_probe.py"
PRECISION_TARGET = 1.0
RECALL_TARGET = 0.9
#: RC301's measured positive: guards on one module attribute failed for this many different
#: values (block k fails on the k values compiled before it; a bool attribute fails on one).
PER_BLOCK_VALUES = 2
PLANTED = re.compile(r"# planted: (RC\d{3})")
REGIONAL_REQUEST = (
    "\n\nfrom accelerate.utils import compile_regions as _compile_regions\n_regional = _compile_regions(make_model())\n"
)

sys.path.insert(0, str(ROOT))


def rc2xx_rules() -> tuple[str, ...]:
    """Every RC2xx code of the rule registry: the rules this bench must check against dynamo."""
    from regcomp_lint.checks import ALL_RULES

    return tuple(sorted(code for code in ALL_RULES if code.startswith("RC2")))


def graph_break_rules() -> tuple[str, ...]:
    """The RC2xx rules that report the line a graph break happens on (checked line by line)."""
    from regcomp_lint.checks import ALL_RULES
    from regcomp_lint.checks.forward_rule import ForwardRule

    return tuple(code for code in rc2xx_rules() if issubclass(ALL_RULES[code], ForwardRule))


BREAK_RULES = graph_break_rules()
#: RC2xx rules judged model by model (not at a break line), with what dynamo measured for them.
MODEL_VERDICT_RULES = {"RC210": "torch.compile(model, fullgraph=True) raised"}
#: RC210's message names the break it stops at: ``breaks the graph at line 16: RC202``, or
#: ``at _shared_ops.py:12: RC202`` for a break in an imported file.
NAMED_BREAK = re.compile(r"breaks the graph at (?:line (\d+)|(\S+\.py):(\d+)): RC")


@dataclass(frozen=True)
class Finding:
    file: str
    row: int
    end_row: int
    code: str
    message: str

    def holds(self, file: str, line: int) -> bool:
        return file == self.file and self.row <= line <= self.end_row


@dataclass(frozen=True)
class Site:
    file: str
    line: int
    gb: str | None
    reason: str


@dataclass
class ModelScore:
    name: str
    sites: list[Site]
    findings: list[Finding]
    missed: list[Site] = field(default_factory=list)
    false_alarms: list[Finding] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.missed = [s for s in self.sites if not any(f.holds(s.file, s.line) for f in self.findings)]
        self.false_alarms = [f for f in self.findings if not any(f.holds(s.file, s.line) for s in self.sites)]

    @property
    def true_alarms(self) -> int:
        return len(self.findings) - len(self.false_alarms)


@dataclass
class Verdict:
    """One model's RC210, RC301 or RC502 verdict: measured by dynamo vs flagged by the lint."""

    name: str
    measured: bool
    flagged: bool
    evidence: str
    #: why a finding is wrong although flagged and measured match (RC210 naming a line that ran fine)
    wrong: str = ""

    @property
    def agrees(self) -> bool:
        return self.measured == self.flagged and not self.wrong


@dataclass
class Comparison:
    models: list[ModelScore]
    findings: list[Finding]
    sites: list[Site]
    rc301: list[Verdict]
    rc502: list[Verdict]
    rc210: list[Verdict] = field(default_factory=list)

    @property
    def missed(self) -> list[Site]:
        return [s for s in self.sites if not any(f.holds(s.file, s.line) for f in self.findings)]

    @property
    def false_alarms(self) -> list[Finding]:
        return [f for f in self.findings if not any(f.holds(s.file, s.line) for s in self.sites)]

    @property
    def precision(self) -> float:
        return ratio(len(self.findings) - len(self.false_alarms), len(self.findings))

    @property
    def recall(self) -> float:
        return ratio(len(self.sites) - len(self.missed), len(self.sites))

    @property
    def passed(self) -> bool:
        return (
            self.precision >= PRECISION_TARGET
            and self.recall >= RECALL_TARGET
            and all(v.agrees for v in self.rc301)
            and all(v.agrees for v in self.rc502)
            and all(v.agrees for v in self.rc210)
        )


def ratio(part: int, whole: int) -> float:
    return part / whole if whole else 1.0


def planted_rule(site: Site, models: Path = MODELS) -> str:
    """The rule a fixture line was written for (its ``# planted: RCnnn`` comment), or ``?``."""
    lines = (models / site.file).read_text(encoding="utf-8").splitlines()
    found = PLANTED.search(lines[site.line - 1]) if 0 < site.line <= len(lines) else None
    return found.group(1) if found else "?"


def per_rule(result: Comparison) -> list[tuple[str, int, int, int]]:
    """(rule, dynamo sites planted for it, found, false alarms of it)."""
    rows = []
    for code in BREAK_RULES:
        sites = [s for s in result.sites if planted_rule(s) == code]
        found = [s for s in sites if s not in result.missed]
        alarms = [f for f in result.false_alarms if f.code == code]
        rows.append((code, len(sites), len(found), len(alarms)))
    return rows


# -- the static side (no torch) -----------------------------------------------------------------


def lint_findings(path: Path, codes: tuple[str, ...], extra: str = "", models: Path = MODELS) -> list[Finding]:
    """The findings of one file. A finding about a break in another file (reported at the call
    that reaches it, ``at _shared_ops.py:8, in code this call runs: ...``) is counted at the
    line it names in that file: that is where dynamo breaks, and where it is true or false."""
    from regcomp_lint.api import lint_source
    from regcomp_lint.checks.forward_rule import elsewhere

    text = path.read_text(encoding="utf-8") + extra
    found = []
    for d in lint_source(text, str(path)):
        if d.code not in codes:
            continue
        other = elsewhere(d.message)
        if other is None:
            found.append(Finding(fixture_name(path, models), d.location.row, d.end_location.row, d.code, d.message))
        else:
            target, line, end = other
            found.append(Finding(fixture_name(path.parent / target, models), line, end, d.code, d.message))
    return found


def fixture_name(path: Path, models: Path = MODELS) -> str:
    """A file's name as the probe records it: relative to the fixture folder."""
    try:
        return path.resolve().relative_to(models.resolve()).as_posix()
    except ValueError:
        return path.name


def local_imports(path: Path, models: Path) -> list[Path]:
    """Sibling modules of the fixture folder that ``path`` imports (``from _shared_ops import f``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = (
            [node.module]
            if isinstance(node, ast.ImportFrom) and node.module and not node.level
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        for name in names:
            candidate = models / (name.replace(".", "/") + ".py")
            if candidate.is_file():
                found.append(candidate)
    return found


# -- the comparison ---------------------------------------------------------------------------


def compare(stored: dict, models: Path = MODELS) -> Comparison:
    findings_by_file: dict[str, list[Finding]] = {}

    def findings_of(path: Path) -> list[Finding]:
        if path.name not in findings_by_file:
            findings_by_file[path.name] = lint_findings(path, BREAK_RULES, models=models)
        return findings_by_file[path.name]

    scores, rc301, rc502, rc210 = [], [], [], []
    all_sites: dict[tuple[str, int], Site] = {}
    for name, entry in sorted(stored["models"].items()):
        path = models / entry["file"]
        sites = [
            Site(b["file"], b["line"], b.get("gb"), b.get("reason", "")) for b in entry["dynamo"].get("breaks", [])
        ]
        for site in sites:
            all_sites[(site.file, site.line)] = site
        findings = list(findings_of(path))
        for helper in local_imports(path, models):
            findings += findings_of(helper)
        scores.append(ModelScore(name, sites, findings))
        regional = entry.get("regional", {})
        rc301.append(rc301_verdict(name, path, regional))
        rc502.append(rc502_verdict(name, path, regional))
        rc210.append(rc210_verdict(name, path, entry, models))
    every_finding = sorted({f for fs in findings_by_file.values() for f in fs}, key=lambda f: (f.file, f.row, f.code))
    for path in sorted(models.glob("*.py")):  # helpers no model imports are judged too
        for finding in findings_of(path):
            if finding not in every_finding:
                every_finding.append(finding)
    return Comparison(
        scores, every_finding, sorted(all_sites.values(), key=lambda s: (s.file, s.line)), rc301, rc502, rc210
    )


def rc301_verdict(name: str, path: Path, regional: dict) -> Verdict:
    per_block = [g for g in regional.get("attribute_recompiles", []) if g.get("values", 0) >= PER_BLOCK_VALUES]
    measured = bool(per_block)
    evidence = ", ".join(f"{g['guard']} @{g['file']}:{g['line']} (failed for {g['values']} values)" for g in per_block)
    if regional.get("recompile_limit_hit"):
        evidence += " · recompile_limit hit"
    flagged = [f for f in lint_findings(path, ("RC301",))]
    return Verdict(name, measured, bool(flagged), evidence.strip(" ·") + _lines(flagged))


def rc502_verdict(name: str, path: Path, regional: dict) -> Verdict:
    error = regional.get("error")
    fallback = regional.get("whole_model") and regional.get("repeated_outside_modulelist")
    measured = bool(error) or bool(fallback)
    evidence = error or (
        f"whole-model compile; {', '.join(regional['repeated_outside_modulelist'])}" if fallback else ""
    )
    flagged = lint_findings(path, ("RC502",), REGIONAL_REQUEST)
    return Verdict(name, measured, bool(flagged), evidence + _lines(flagged))


def fullgraph_request(path: Path) -> str:
    """``torch.compile(<the expression make_model() returns>, fullgraph=True)`` to append to the
    file: RC210 needs the model's class, and does not look inside a factory function."""
    text = path.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == "make_model":
            returned = node.body[-1]
            if isinstance(returned, ast.Return) and isinstance(returned.value, ast.Call):
                model = ast.get_source_segment(text, returned.value)
                return f"\n\nimport torch\n_fullgraph = torch.compile({model}, fullgraph=True)\n"
    raise ValueError(f"{path.name}: make_model() must end with `return SomeModel(...)` for the RC210 check")


def rc210_verdict(name: str, path: Path, entry: dict, models: Path = MODELS) -> Verdict:
    """Flagged iff ``fullgraph=True`` raised; a finding must name a line dynamo broke on."""
    fullgraph = entry.get("fullgraph", {})
    measured = fullgraph.get("ok") is False
    evidence = f"{fullgraph.get('gb_type')} @{fullgraph.get('file')}:{fullgraph.get('line')}" if measured else ""
    flagged = lint_findings(path, ("RC210",), fullgraph_request(path), models)
    broke = {(b["file"], b["line"]) for b in entry.get("dynamo", {}).get("breaks", [])}
    named = [named_break(f, path.name) for f in flagged]
    wrong = ", ".join(f"{site} is not a line dynamo broke on" for site in named if site not in broke)
    lines = "".join(f" [lint: {site[0]}:{site[1]}]" if site else " [lint: no line named]" for site in named)
    return Verdict(name, measured, bool(flagged), evidence + lines + (f" [wrong: {wrong}]" if wrong else ""), wrong)


def named_break(finding: Finding, file: str) -> tuple[str, int] | None:
    """The (file, line) of the break an RC210 message names."""
    found = NAMED_BREAK.search(finding.message)
    if found is None:
        return None
    return (file, int(found.group(1))) if found.group(1) else (Path(found.group(2)).name, int(found.group(3)))


def _lines(findings: list[Finding]) -> str:
    return f" [lint: {', '.join(f'{f.code}@{f.row}' for f in findings)}]" if findings else ""


# -- the torch side ---------------------------------------------------------------------------


def run_probe(python: str, models: Path = MODELS) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "breaks.json"
        done = subprocess.run(
            [python, str(PROBE), "--models", str(models), "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        if done.returncode != 0:  # dynamo's logs go to stderr: shown only when the probe fails
            sys.stderr.write(done.stderr[-6000:])
            raise SystemExit(f"the dynamo probe failed in {python} (exit {done.returncode})")
        return json.loads(out.read_text(encoding="utf-8"))


# -- output -----------------------------------------------------------------------------------


def render(result: Comparison, stored: dict) -> str:
    lines = [
        f"torch {stored.get('torch')} · accelerate {stored.get('accelerate')} · python {stored.get('python')}",
        "",
        "| model | dynamo breaks | RC2xx findings | found | missed | false alarms | precision | recall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for score in result.models:
        lines.append(
            f"| {score.name} | {len(score.sites)} | {len(score.findings)} | {len(score.sites) - len(score.missed)} | "
            f"{len(score.missed)} | {len(score.false_alarms)} | {ratio(score.true_alarms, len(score.findings)):.2f} | "
            f"{ratio(len(score.sites) - len(score.missed), len(score.sites)):.2f} |"
        )
    lines.append(
        f"| **overall** (distinct lines) | {len(result.sites)} | {len(result.findings)} | "
        f"{len(result.sites) - len(result.missed)} | {len(result.missed)} | {len(result.false_alarms)} | "
        f"**{result.precision:.3f}** | **{result.recall:.3f}** |"
    )
    lines += ["", "| rule | dynamo breaks planted for it | found | false alarms |", "|---|---:|---:|---:|"]
    lines += [f"| {code} | {n} | {found} | {alarms} |" for code, n, found, alarms in per_rule(result)]
    lines += ["", "Misses (dynamo broke, no RC2xx finding):" if result.missed else "Misses: none"]
    lines += [f"- {s.file}:{s.line} ({planted_rule(s)}) {s.gb or ''} {s.reason}" for s in result.missed]
    lines += [
        "",
        "False alarms (RC2xx finding, dynamo did not break):" if result.false_alarms else "False alarms: none",
    ]
    lines += [f"- {f.file}:{f.row} {f.code} {f.message}" for f in result.false_alarms]
    for code, verdicts in (("RC210", result.rc210), ("RC301", result.rc301), ("RC502", result.rc502)):
        interesting = [v for v in verdicts if v.measured or v.flagged]
        agree = sum(v.agrees for v in verdicts)
        lines += [
            "",
            f"{code}: {agree}/{len(verdicts)} models agree",
            "",
            "| model | measured | flagged | evidence |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {v.name} | {'yes' if v.measured else 'no'} | {'yes' if v.flagged else 'no'} | {v.evidence} |"
            for v in interesting
        ]
    lines += [
        "",
        f"targets: precision ≥ {PRECISION_TARGET}, recall ≥ {RECALL_TARGET}, RC210/RC301/RC502 agree on every model: "
        + ("PASS" if result.passed else "FAIL"),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", help="interpreter with torch 2.13 and accelerate; omit to use the stored results")
    parser.add_argument("--update", action="store_true", help=f"store the probe's result in {STORED.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.update and not args.python:
        parser.error("--update needs --python (an interpreter with torch)")
    stored = run_probe(args.python) if args.python else json.loads(STORED.read_text(encoding="utf-8"))
    if args.update:
        STORED.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    result = compare(stored)
    print(render(result, stored))
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
