"""Today's measured failures of the equivalence harness, one entry per fixture.

Each entry is the measured reason. The tests of these fixtures are strict xfails: the suite stays
green while they fail, and a fix that makes one pass fails the suite until its entry is removed.
"""

KNOWN_FAILURES: dict[str, str] = {}
