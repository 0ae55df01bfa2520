"""The one error type of ``trace``: something about the user's model, batch or script that stops
the analysis. The CLI prints it as one line (``regcomp-lint: error: ...``) and exits 2."""

from __future__ import annotations

from regcomp_lint.errors import UsageFailure


class TraceError(UsageFailure):
    """A model, batch, script or device problem the user can act on; the message says what to do."""
