"""Issue 14's acceptance on held-out cases (``fixtures/held_out/``): a Trainer script and its
HfArgumentParser file, ``accelerate config`` files, launch scripts with the script they launch,
and a nanoGPT-style ``train.py`` beside its ``model.py``.

Each folder is linted as one project, the way a user runs ``regcomp-lint .`` in it (so RC406
reads the launched script and RC501 follows ``from model import GPT``). The expected findings
are written in the files themselves, ``# expect: CODE[, CODE]`` on the line that must carry
them; the findings must be exactly those, at exactly those lines.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from regcomp_lint.api import lint_paths
from regcomp_lint.lint.config import Settings

HELD_OUT = Path(__file__).resolve().parent.parent / "fixtures" / "held_out"
CASES = sorted(p.name for p in HELD_OUT.iterdir() if p.is_dir())
MARKER = re.compile(r"#\s*expect:\s*(RC\d{3}(?:\s*,\s*RC\d{3})*)")


def expected_findings(folder: Path) -> Counter:
    found: Counter = Counter()
    for path in sorted(folder.iterdir()):
        for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            match = MARKER.search(line)
            if match:
                for code in match.group(1).split(","):
                    found[(path.name, row, code.strip())] += 1
    return found


def actual_findings(folder: Path) -> Counter:
    diagnostics = lint_paths([str(folder)], Settings(), jobs=1, use_cache=False)
    return Counter((Path(d.filename).name, d.location.row, d.code) for d in diagnostics)


def test_the_four_kinds_of_held_out_case_are_there():
    assert CASES == ["accelerate_config", "launch", "nanogpt", "trainer"]


@pytest.mark.parametrize("case", CASES)
def test_expected_findings_at_the_right_lines(case):
    folder = HELD_OUT / case
    expected = expected_findings(folder)
    assert expected, f"{case}: no `# expect:` markers"
    actual = actual_findings(folder)
    missing = sorted((expected - actual).elements())
    unexpected = sorted((actual - expected).elements())
    assert not missing and not unexpected, f"{case}: missing {missing}, unexpected {unexpected}"


def test_the_nanogpt_finding_names_the_block_list_in_model_py():
    diagnostics = lint_paths([str(HELD_OUT / "nanogpt")], Settings(), jobs=1, use_cache=False)
    (finding,) = [d for d in diagnostics if d.code == "RC501"]
    model_lines = (HELD_OUT / "nanogpt" / "model.py").read_text(encoding="utf-8").splitlines()
    block_list = next(i for i, line in enumerate(model_lines, start=1) if "nn.ModuleList([Block(" in line)
    assert f"`GPT` in model.py:{block_list}" in finding.message and "`Block` ×n" in finding.message
