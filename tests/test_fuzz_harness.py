"""A short run of the coverage-guided harness (tools/fuzz_atheris.py) in a subprocess, seeded with the
golden bodies, the regression corpus and the sample capture: every input it tries must be refused
with a KcodecError or round-trip (kcodec.fuzz.selfcheck), else atheris exits non-zero with the input.
The long run is the same script with -max_total_time."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "tools" / "fuzz_atheris.py"


def test_atheris_short_run(tmp_path: Path) -> None:
    pytest.importorskip("atheris", reason="atheris (coverage-guided fuzzing) has no wheel for this Python")
    corpus = tmp_path / "corpus"
    env = {**os.environ, "KCODEC_ATHERIS_SCOPE": "sample"}
    seeded = subprocess.run(
        [sys.executable, str(HARNESS), "--write-seeds", str(corpus)],
        capture_output=True, text=True, timeout=300, check=True, env=env,
    )
    assert int(seeded.stdout.split()[0]) > 300
    run = subprocess.run(
        [sys.executable, str(HARNESS), "-runs=6000", "-seed=12", "-rss_limit_mb=2048", "-timeout=20",
         f"-artifact_prefix={tmp_path}/", str(corpus)],
        capture_output=True, text=True, timeout=600, env=env,
    )
    tail = run.stderr[-3000:]
    assert run.returncode == 0, tail
    done = re.search(r"Done (\d+) runs", run.stderr)
    assert done and int(done.group(1)) >= 6000, tail
    assert not list(tmp_path.glob("crash-*"))
