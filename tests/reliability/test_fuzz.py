"""Property tests on generated valid Python (hypothesmith): the fast profile of ``bench/fuzz.py``.

Lint never raises, lint fixes parse and are idempotent, libcst's round trip is exact, and the
conversion's result parses, is idempotent and leaves the generated code's lines as they were.
"""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
hypothesmith = pytest.importorskip("hypothesmith")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from tests.reliability import fuzz_properties as props  # noqa: E402

FAST = settings(
    max_examples=20, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
programs = hypothesmith.from_grammar()


@pytest.mark.parametrize("prop", props.ALL, ids=lambda p: p.__name__)
@FAST
@given(code=programs)
def test_grammar_programs(prop, code):
    prop(code)
