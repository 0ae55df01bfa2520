"""What ``regcomp-fix`` writes for the equivalence fixtures passes our own lint and is stable.

The equivalence harness (tests/equivalence/, slow) proves these conversions train the same;
this fast check proves the rest of the contract on the same scripts: what the command writes is
clean under every rule (what it leaves on purpose, such as a DistributedSampler loader or an
evaluation loader, is not flagged), and converting it again changes nothing.
"""

from __future__ import annotations

import pytest

from regcomp_lint.api import lint_source
from tests.equivalence import harness
from tests.equivalence.known_failures import KNOWN_FAILURES

CONVERTED = [name for name in harness.CASES if name not in KNOWN_FAILURES]


@pytest.mark.parametrize("name", CONVERTED)
def test_converted_fixture_is_lint_clean_and_idempotent(name):
    """What ``regcomp-fix`` writes (the conversion, then the lint's safe fixes), default backend."""
    case = harness.load_case(name)
    result = harness.convert(case, backend=None)
    assert result.refused is None and result.changed, result.refused
    findings = lint_source(result.text, harness.SCRIPT)
    assert not findings, "\n".join(f"{d.location} {d.code} {d.message}" for d in findings)
    again = harness.convert(case, backend=None, text=result.text)
    assert not again.changed, again.text
