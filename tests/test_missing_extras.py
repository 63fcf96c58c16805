"""The commands that need an extra say so in one line when it is missing (exit status 1): the test
hides the extra's modules from a kcodec subprocess (a meta-path finder in a sitecustomize that refuses
them), as on an install without ``pip install 'kcodec[spark]'``, instead of uninstalling anything."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = str(ROOT / "samples" / "sample.pcap")

HIDE = '''
import sys

HIDDEN = {hidden!r}


class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _Hidden())
'''


def _without(hidden: set[str], tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HIDE.format(hidden=sorted(hidden)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    return subprocess.run(
        [sys.executable, "-m", "kcodec.cli", *args], capture_output=True, text=True, env=env, timeout=120,
        cwd=tmp_path,
    )


SPARK_EXTRA = ("pyspark", "py4j", "pyarrow", "pandas", "datasketches")


def _with_the_extra(modules: tuple[str, ...]) -> None:
    """These tests hide one module of an installed extra; without the extra (the suite's own venv has
    only the test extra) every command names the first module it misses, so there is nothing to hide."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the extra is not installed here (no {', '.join(missing)}): pip install -e '.[spark]'")


@pytest.mark.parametrize("hidden", SPARK_EXTRA)
def test_pipeline_without_the_spark_extra(hidden: str, tmp_path: Path) -> None:
    _with_the_extra(SPARK_EXTRA)
    done = _without({hidden}, tmp_path, "pipeline", SAMPLE, "-o", str(tmp_path / "out"))
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    want = f"pipeline: the pipeline needs PySpark: pip install 'kcodec[spark]' (No module named {hidden!r})"
    assert line.endswith(want), line
    assert not (tmp_path / "out").exists()  # (checked before Spark starts)


@pytest.mark.parametrize("hidden", ["matplotlib", "pyarrow"])
def test_report_without_the_spark_extra(hidden: str, tmp_path: Path) -> None:
    _with_the_extra(("matplotlib", "pyarrow"))
    done = _without({hidden}, tmp_path, "report", str(tmp_path))
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.endswith(f"report: the report needs matplotlib and pyarrow: pip install 'kcodec[spark]' "
                         f"(No module named {hidden!r})")
