"""A run forked from the zygote (tests/zygote_server.py) is the run a fresh interpreter makes.

The harness forks its runs' processes from a zygote to save the import of torch and accelerate in
each; that is only sound when nothing of the zygote shows through. Two fixtures are run both ways
and must print the same steps, losses, LRs and metrics and end with the same parameters on every
rank, to the bit: a converted script under ``accelerate launch`` on two processes (the launcher,
torchrun's workers, gloo) and an original that starts its own workers with ``mp.spawn``.
"""

from __future__ import annotations

import pytest

from tests.equivalence import harness
from tests.launch import Zygote, torch_missing

pytestmark = pytest.mark.slow

RUNS = [
    ("torchrun_env_ddp", "accelerate", True),
    ("spawn_worker", "spawn", False),
]


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    reason = torch_missing()
    if reason:
        pytest.skip(reason)
    server = Zygote(tmp_path_factory.mktemp("zygote"))
    yield server
    server.close()


@pytest.mark.parametrize(("name", "launcher", "converted"), RUNS)
def test_a_forked_run_is_a_fresh_run(name, launcher, converted, zygote, tmp_path):
    case = harness.load_case(name)
    script = (case.folder / harness.SCRIPT).read_bytes()
    if converted:
        script = harness.convert(case).text.encode("utf-8")
    fresh = harness.run(case, harness.stage(case, tmp_path / "fresh", script), "fresh", launcher, converted)
    forked = harness.run(
        case, harness.stage(case, tmp_path / "forked", script), "forked", launcher, converted, zygote=zygote
    )
    assert fresh.failed is None, fresh.failed
    assert forked.failed is None, forked.failed
    assert forked.steps == fresh.steps
    assert forked.metrics == fresh.metrics
    assert forked.rank_digests == fresh.rank_digests
    assert harness.saved_names(forked) == harness.saved_names(fresh)
    assert len(forked.steps) > 0 and (launcher == "spawn" or len(forked.rank_digests) == 2)
