"""The failure every layer may raise for something the user asked that cannot be done.

The command line (``cli.error_handling``) prints it as one ``regcomp-lint: error: ...`` line and
exits 2; it lives here, below every layer, so ``trace`` and ``lint`` raise it without importing
the command line.
"""


class UsageFailure(Exception):
    """Something the user asked for that cannot be done (bad path, unknown rule, ...)."""


def install_hint(extra: str) -> str:
    """The command that installs an extra for this copy of regcomp-lint: from a source checkout
    (a clone, installed editable or run in place) the checkout itself, since the package name may
    not be on the user's index; otherwise the published package."""
    import shlex
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    pyproject = root / "pyproject.toml"
    try:
        from_source = 'name = "regcomp-lint"' in pyproject.read_text(encoding="utf-8")
    except OSError:
        from_source = False
    if from_source:
        return f"pip install -e {shlex.quote(f'{root}[{extra}]')}"
    return f"pip install 'regcomp-lint[{extra}]'"
