"""The failure every layer may raise for something the user asked that cannot be done.

The command line (``cli.error_handling``) prints it as one ``regcomp-lint: error: ...`` line and
exits 2; it lives here, below every layer, so ``trace`` and ``lint`` raise it without importing
the command line.
"""


class UsageFailure(Exception):
    """Something the user asked for that cannot be done (bad path, unknown rule, ...)."""
