# Shared by scripts/test.sh and scripts/demo.sh (sourced, not run): create .venv when absent and
# install this project into it with the pinned versions of constraints.txt.
#
#   ensure_venv EXTRAS      EXTRAS: "" (runtime only) or "test"
#
# Idempotent: a stamp in .venv records what was installed (extras + hash of pyproject.toml and
# constraints.txt); when nothing changed the install is skipped. torch is never requested here.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${REGCOMP_VENV:-$REPO_ROOT/.venv}"
PY="$VENV/bin/python"

ensure_venv() {
    local extras="${1:-}"
    local spec="."
    [ -n "$extras" ] && spec=".[$extras]"
    if [ ! -x "$PY" ]; then
        echo "creating $VENV" >&2
        "${PYTHON:-python3}" -m venv "$VENV"
    fi
    local want
    want="$extras $(cat "$REPO_ROOT/pyproject.toml" "$REPO_ROOT/constraints.txt" | sha256sum | cut -d' ' -f1)"
    local stamp="$VENV/.regcomp-install-${extras:-runtime}"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$PY" -c "import regcomp_lint" 2>/dev/null; then
        return 0
    fi
    echo "installing regcomp-lint${extras:+[$extras]} into $VENV (pinned by constraints.txt)" >&2
    (cd "$REPO_ROOT" && "$PY" -m pip install --quiet --disable-pip-version-check \
        -c constraints.txt -e "$spec")
    echo "$want" > "$stamp"
}
