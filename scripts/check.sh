#!/usr/bin/env bash
# The repository's static checks, as CI runs them: ruff (lint and format), mypy, and the rule pages.
# Uses the test virtualenv (created by scripts/test.sh's install step when absent).
#
#   bash scripts/check.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
ensure_venv "test,trace"
cd "$REPO_ROOT"
status=0
run() { echo "+ $*" >&2; "$@" || status=1; }
run "$VENV/bin/ruff" check .
run "$VENV/bin/ruff" format --check .
run "$VENV/bin/mypy" regcomp_lint
run "$PY" -m regcomp_lint.lint.rule_docs --check
exit $status
