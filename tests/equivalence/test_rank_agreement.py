"""harness.rank_agreement: a two-process conversion whose ranks end apart fails, unless the
original's ranks part too (the digests come from tests.launch.RANK_DIGEST_AFTER).

Shown on a real run: reinit_in_training_function seeded by RANK (a copy), converted by the code
before the re-initialisation sync reached training functions (e393ac7), failed with "the ranks end
with different parameters (rank 0 e7001c70065b, rank 1 540d15a2dc16)"; converted by main, passed."""

from pathlib import Path

from tests.equivalence.harness import Run, rank_agreement


def _run(label: str, digests: dict[str, str]) -> Run:
    return Run(label, 2, 0, "", Path("."), 0.0, rank_digests=digests)


def test_ranks_that_agree_pass():
    assert rank_agreement(_run("converted", {"0": "aa", "1": "aa"}), None) == []


def test_ranks_apart_fail_when_the_original_is_one_process_or_agrees():
    apart = _run("converted under accelerate launch, 2 processes", {"0": "aa11", "1": "bb22"})
    (problem,) = rank_agreement(apart, None)
    assert "the ranks end with different parameters (rank 0 aa11, rank 1 bb22)" in problem
    assert rank_agreement(apart, _run("original", {"0": "cc", "1": "cc"})) == [problem]


def test_ranks_apart_pass_when_the_original_parts_too_or_nothing_was_hashed():
    apart = _run("converted", {"0": "aa", "1": "bb"})
    assert rank_agreement(apart, _run("original", {"0": "cc", "1": "dd"})) == []
    assert rank_agreement(_run("converted", {}), None) == []
    assert rank_agreement(_run("converted", {"0": "aa"}), None) == []
