# Sourced by the scripts in this folder. Picks the Python to run with:
# the active virtual environment if there is one, else ./.venv, created (and kept in step with
# requirements.txt) on first use. Needs Python 3.11+ as python3 (or $PYTHON).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ -n "${VIRTUAL_ENV:-}" ]; then
  PY="$VIRTUAL_ENV/bin/python"
else
  base="${PYTHON:-python3}"
  if ! "$base" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "error: Python 3.11+ is required (found: $("$base" --version 2>&1 || echo none)); set PYTHON=..." >&2
    exit 2
  fi
  [ -x .venv/bin/python ] || "$base" -m venv .venv
  PY="$ROOT/.venv/bin/python"
  # Reinstall only when requirements.txt changed since the last install.
  want="$(sha256sum requirements.txt | cut -d' ' -f1)"
  if [ "$(cat .venv/.requirements.sha256 2>/dev/null || true)" != "$want" ]; then
    echo "installing requirements.txt into .venv ..." >&2
    "$PY" -m pip install -q --disable-pip-version-check -r requirements.txt
    echo "$want" > .venv/.requirements.sha256
  fi
fi
export PY
