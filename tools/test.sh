#!/usr/bin/env bash
# The one test command, used by README.md and .ci/run alike:  bash tools/test.sh [pytest args...]
#
# Runs the suite on 2 cores (pytest-xdist) with a Python that has kcodec and the test extras:
#   - $PYTHON if set (it must have them: nothing is installed into it);
#   - else the current `python` (an activated venv, as .ci/run's) if it has them;
#   - else its own venv, .venv-test/, made once with `pip install -e '.[test]'` (and again when
#     pyproject.toml changes). Whatever is installed elsewhere (a compiled kcodec in your venv, say)
#     is left as it is.
# The duration of the last full run is kept in .venv-test/last-full-run and shown at the start.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VENV=.venv-test
STAMP="$VENV/installed-from"
LAST="$VENV/last-full-run"
NEEDS='import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in ("pytest", "xdist", "hypothesis", "kcodec")))'

say() { echo "tools/test.sh: $*" >&2; }

has_everything() { "$1" -c "$NEEDS" 2>/dev/null; }

if [ -n "${PYTHON:-}" ]; then
    PY="$PYTHON"
    if ! has_everything "$PY"; then
        say "$PY lacks kcodec or its test extras (pytest, pytest-xdist, hypothesis): install them there with"
        say "  $PY -m pip install -e '.[test]'   or unset PYTHON to test in tools/test.sh's own venv ($VENV/)"
        exit 2
    fi
    how="with $PY (\$PYTHON)"
elif CURRENT="$(command -v python || command -v python3)" && has_everything "$CURRENT"; then
    PY="$CURRENT"
    how="with $PY (it has kcodec and the test extras)"
else
    BASE="$(command -v python3 || command -v python || true)"
    if [ -z "$BASE" ] || ! "$BASE" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        say "needs Python >= 3.11 to make its venv ($VENV/); set PYTHON to a Python with kcodec and its test extras"
        exit 2
    fi
    want="$(cat pyproject.toml hatch_build.py | "$BASE" -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
    if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ] || ! has_everything "$VENV/bin/python"; then
        say "making its own venv $VENV/ with pip install -e '.[test]' (once; what you installed elsewhere is left as it is)"
        [ -x "$VENV/bin/python" ] || "$BASE" -m venv "$VENV"
        rm -f "$STAMP"
        "$VENV/bin/python" -m pip install --disable-pip-version-check -q -e '.[test]'
        echo "$want" > "$STAMP"
    fi
    PY="$VENV/bin/python"
    how="in its own venv $VENV/ (pip install -e '.[test]'; what you installed elsewhere is left as it is)"
fi

if [ $# -eq 0 ]; then
    if [ -f "$LAST" ]; then
        took="the last full run here took $(cat "$LAST")"
    else
        took="a full run takes several minutes on 2 cores (it starts Kafka brokers, Kafka's Java clients and Spark); its time is shown at the end"
    fi
    say "runs the whole suite on 2 cores $how; $took"
else
    say "runs pytest $* on 2 cores $how"
fi

start=$(date +%s)
rc=0
# --dist loadgroup: the Spark tests (xdist_group "spark") share one worker and so one Spark session.
"$PY" -m pytest -q -n 2 --dist loadgroup "$@" || rc=$?
elapsed=$(( $(date +%s) - start ))
took="$(( elapsed / 60 )) min $(( elapsed % 60 )) s"
say "pytest exited with status $rc after $took"
if [ $# -eq 0 ] && [ "$rc" -eq 0 ] && [ -d "$VENV" ]; then
    echo "$took" > "$LAST"
fi
exit "$rc"
