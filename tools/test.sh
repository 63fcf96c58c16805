#!/usr/bin/env bash
# The one test command, used by README.md and .ci/run alike:  bash tools/test.sh [pytest args...]
# Runs the suite on 2 cores (pytest-xdist). If the test extras or kcodec itself are missing from the
# current Python, installs the project editable with them first (pip install -e '.[test]').
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY="${PYTHON:-$(command -v python || command -v python3)}"

if ! "$PY" -c 'import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in ("pytest", "xdist", "hypothesis", "kcodec")))' 2>/dev/null; then
    echo "tools/test.sh: installing kcodec with its test extras: pip install -e '.[test]'" >&2
    "$PY" -m pip install --disable-pip-version-check -q -e '.[test]'
fi

# --dist loadgroup: the Spark tests (xdist_group "spark") share one worker and so one Spark session.
exec "$PY" -m pytest -q -n 2 --dist loadgroup "$@"
