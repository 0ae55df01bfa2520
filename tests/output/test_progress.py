"""The stderr progress counter."""

from __future__ import annotations

import io

from regcomp_lint.output.progress import MIN_FILES, ProgressLine


def test_short_runs_show_nothing():
    stream = io.StringIO()
    progress = ProgressLine(stream)
    for done in range(1, 10):
        progress(done, 9)
    progress.finish()
    assert stream.getvalue() == ""


def test_long_runs_show_a_counter_and_clear_it():
    stream = io.StringIO()
    progress = ProgressLine(stream)
    total = MIN_FILES * 2
    for done in range(1, total + 1):
        progress(done, total)
    assert f"\rregcomp-lint: {total}/{total} files" in stream.getvalue()
    progress.finish()
    assert stream.getvalue().endswith("\r\x1b[2K")


def test_unknown_callback_shapes_are_tolerated():
    stream = io.StringIO()
    progress = ProgressLine(stream)
    for _ in range(MIN_FILES + 1):
        progress("some/path.py")
    assert "regcomp-lint: " in stream.getvalue()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_step_line_names_the_step_on_a_terminal_and_erases_it():
    from regcomp_lint.output.progress import StepLine

    stream = _Terminal()
    line = StepLine(stream)
    with line.step("compiling the plan (regional)"):
        assert stream.getvalue().endswith("regcomp-lint: compiling the plan (regional)...")
    assert stream.getvalue().endswith("\r\x1b[2K")


def test_step_line_is_silent_off_a_terminal_and_erases_after_an_error():
    from regcomp_lint.output.progress import StepLine

    quiet = io.StringIO()
    with StepLine(quiet).step("tracing"):
        pass
    assert quiet.getvalue() == ""
    stream = _Terminal()
    try:
        with StepLine(stream).step("tracing"):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert stream.getvalue().endswith("\r\x1b[2K")
