"""codemod/deep.py: the calling thread first, the helper thread with a large stack only when needed."""

import sys
import threading

from regcomp_lint.codemod.deep import SHALLOW_LIMIT, call_shallow_first


def _depth(n: int) -> int:
    return 0 if n == 0 else 1 + _depth(n - 1)


def test_a_shallow_call_runs_in_the_calling_thread_once():
    runs: list[str] = []

    def func(x: int) -> int:
        runs.append(threading.current_thread().name)
        return x + 1

    limit = sys.getrecursionlimit()
    assert call_shallow_first(func, 1) == 2
    assert runs == [threading.current_thread().name]
    assert sys.getrecursionlimit() == limit


def test_a_call_too_deep_for_the_calling_thread_starts_over_in_the_helper_thread():
    runs: list[str] = []

    def func() -> int:
        runs.append(threading.current_thread().name)
        return _depth(5 * SHALLOW_LIMIT)

    limit = sys.getrecursionlimit()
    assert call_shallow_first(func) == 5 * SHALLOW_LIMIT
    assert runs == [threading.current_thread().name, "regcomp-deep"]
    assert sys.getrecursionlimit() == limit


def test_a_higher_limit_of_the_caller_is_not_used_in_the_calling_thread():
    seen: list[int] = []
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10 * SHALLOW_LIMIT)
    try:
        call_shallow_first(lambda: seen.append(sys.getrecursionlimit()))
        assert sys.getrecursionlimit() == 10 * SHALLOW_LIMIT
    finally:
        sys.setrecursionlimit(limit)
    assert seen == [SHALLOW_LIMIT]


def test_other_errors_are_not_run_again():
    runs: list[int] = []

    def func() -> None:
        runs.append(1)
        raise ValueError("no")

    try:
        call_shallow_first(func)
    except ValueError:
        pass
    assert runs == [1]


def test_deeply_nested_code_converts_in_process():
    from regcomp_lint.codemod.convert import convert_source

    text = (
        "import torch\n\nmodel = torch.nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in [torch.randn(2, 4)]:\n    loss = model(x).sum()\n    loss.backward()\n    optimizer.step()\n"
        "    optimizer.zero_grad()\n"
        "table = " + "[" * 180 + "]" * 180 + "\nchain = x" + ".a" * 800 + "\n"
    )
    result = convert_source(text, "deep.py")
    assert result.refused is None and "accelerator.backward(loss)" in result.text
