#!/usr/bin/env bash
# Install the project with its test and trace extras (pinned by constraints.txt; torch 2.13.0 CPU) into .venv and run the tests.
#
#   bash scripts/test.sh [PYTEST ARGS...]
#
# Exit status: pytest's. Any non-zero status fails, including 5 ("no tests collected"), so a
# broken collection can never pass for a green run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
ensure_venv "test,trace"
cd "$REPO_ROOT"
exec "$PY" -m pytest "$@"
