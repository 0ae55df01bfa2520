#!/usr/bin/env bash
# The lowest-bounds job: install this project with every direct dependency at the lower bound
# pyproject.toml declares (constraints-lowest.txt; indirect dependencies resolve to their newest
# allowed versions) into .venv-lowest, and run the tests there. A bound that does not really work
# fails here instead of in a user's environment.
#
#   bash scripts/test_lowest.sh [PYTEST ARGS...]
#
# Its own virtualenv, never .venv: the main suite keeps the pinned versions of constraints.txt.
# REGCOMP_LOWEST=1 lets tests/test_dependency_bounds.py check the installed versions are the minima.
# Exit status: pytest's (5, "no tests collected", fails too).
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${REGCOMP_LOWEST_VENV:-$REPO_ROOT/.venv-lowest}"
PY="$VENV/bin/python"
cd "$REPO_ROOT"

if [ ! -x "$PY" ]; then
    echo "creating $VENV" >&2
    "${PYTHON:-python3}" -m venv "$VENV"
fi
# Reinstall only when pyproject.toml or constraints-lowest.txt changed (a stamp records their hash).
want="$(cat pyproject.toml constraints-lowest.txt | sha256sum | cut -d' ' -f1)"
stamp="$VENV/.regcomp-install-lowest"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! "$PY" -c "import regcomp_lint" 2>/dev/null; then
    echo "installing regcomp-lint[test,trace] into $VENV at the lowest declared versions (constraints-lowest.txt)" >&2
    "$PY" -m pip install --quiet --disable-pip-version-check -c constraints-lowest.txt -e ".[test,trace]"
    "$PY" -m pip check
    echo "$want" > "$stamp"
fi
REGCOMP_LOWEST=1 exec "$PY" -m pytest "$@"
