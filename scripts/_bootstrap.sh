# Sourced by the scripts in this folder. Picks the Python to run with:
# the active virtual environment if there is one, else ./.venv, created (and kept in step with
# the requirements file) on first use. Needs Python 3.11+ as python3 (or $PYTHON).
#   REQUIREMENTS=requirements-dev.txt   what to install (default requirements.txt: what rendering
#                                       and the Pulumi program need; scripts/test sets the dev set)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
REQUIREMENTS="${REQUIREMENTS:-requirements.txt}"
base="${PYTHON:-python3}"

# python_ok PY: PY is Python 3.11+.
python_ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }

# ensure_venv DIR REQUIREMENTS_FILE...: DIR is a virtualenv with the files' packages installed,
# reinstalled only when one of the files changed since (a stamp per first file). pip's own
# progress (one line per package) goes to stderr: a first install takes a minute or two.
ensure_venv() {
  local dir="$1"; shift
  local stamp="$dir/.$(basename "$1").sha256"
  local want
  want="$(cat "$@" | sha256sum | cut -d' ' -f1)"
  [ -x "$dir/bin/python" ] || { echo "creating $dir ..." >&2; "$base" -m venv "$dir"; }
  if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    echo "installing $1 into $dir (pip's progress follows) ..." >&2
    "$dir/bin/python" -m pip install --disable-pip-version-check --progress-bar on -r "$1" 1>&2
    echo "$want" > "$stamp"
    echo "installed $1 into $dir" >&2
  fi
}

if [ -n "${VIRTUAL_ENV:-}" ]; then
  PY="$VIRTUAL_ENV/bin/python"
else
  if ! python_ok "$base"; then
    echo "error: Python 3.11+ is required (found: $("$base" --version 2>&1 || echo none)); set PYTHON=..." >&2
    exit 2
  fi
  if [ "$REQUIREMENTS" = requirements.txt ]; then
    ensure_venv .venv requirements.txt
  else
    ensure_venv .venv "$REQUIREMENTS" requirements.txt
  fi
  PY="$ROOT/.venv/bin/python"
fi
export PY
