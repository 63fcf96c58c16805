"""The pipeline on a Spark standalone cluster (a master and a 2-core worker on 127.0.0.1, started
from the installed PySpark): relative and absolute outputs, executors with kcodec and executors
without it (that receive it with --ship); the frames equal local mode's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_cluster import SparkCluster

pq = pytest.importorskip("pyarrow.parquet", reason="the pipeline tests need pip install -e '.[spark]'")

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "sample.pcap"

#: Started by an executor's Python before anything else: kcodec is importable only from a zip on the
#: path (what --ship adds), as on a node where it is not installed.
_BLOCKER = """\
import importlib.machinery
import sys


class _KcodecOnlyFromZips:
    def find_spec(self, name, path=None, target=None):
        if name != "kcodec":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, [p for p in sys.path if p.endswith(".zip")])
        if spec is None:
            raise ModuleNotFoundError("No module named 'kcodec'", name="kcodec")
        return spec


sys.meta_path.insert(0, _KcodecOnlyFromZips())
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[SparkCluster]:
    with SparkCluster(cores=2) as c:
        yield c


def _pipeline(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kcodec.cli", "pipeline", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def _frames(folder: Path) -> list[dict[str, Any]]:
    rows = pq.read_table(folder / "frames").to_pylist()
    return sorted(rows, key=lambda r: (r["connection"], r["stream_offset"], r["direction"]))


@pytest.fixture(scope="module")
def local_frames(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    where = tmp_path_factory.mktemp("local")
    run = _pipeline(where, str(SAMPLE), "-o", str(where / "out"), "--master", "local[2]", "--quiet")
    assert run.returncode == 0, run.stderr[-3000:]
    return _frames(where / "out")


def test_a_relative_output_on_a_cluster_holds_every_frame(
    cluster: SparkCluster, tmp_path: Path, local_frames: list[dict[str, Any]]
) -> None:
    """The executors run in the worker's folders: a relative --output named there lost the frames."""
    run = _pipeline(tmp_path, str(SAMPLE), "-o", "out", "--master", cluster.master)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"tables written to {tmp_path / 'out'}" in run.stdout
    assert _frames(tmp_path / "out") == local_frames
    assert not (tmp_path / "out" / "_spill").exists()


def test_an_absolute_output_on_a_cluster_equals_local_mode(
    cluster: SparkCluster, tmp_path: Path, local_frames: list[dict[str, Any]]
) -> None:
    run = _pipeline(tmp_path, str(SAMPLE), "-o", str(tmp_path / "abs"), "--master", cluster.master, "-q")
    assert run.returncode == 0, run.stderr[-3000:]
    assert _frames(tmp_path / "abs") == local_frames


def _python_without_kcodec(folder: Path) -> str:
    blocker = folder / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(_BLOCKER)
    wrapper = folder / "python-without-kcodec"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{blocker}:$PYTHONPATH" exec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def test_executors_without_kcodec_fail_in_one_line_then_ship_it(
    cluster: SparkCluster, tmp_path: Path, local_frames: list[dict[str, Any]]
) -> None:
    env = {"PYSPARK_PYTHON": _python_without_kcodec(tmp_path)}
    run = _pipeline(tmp_path, str(SAMPLE), "-o", "out", "--master", cluster.master, "-q", env=env)
    assert run.returncode == 1, run.stderr[-3000:]
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert "Spark: a Python worker failed: ModuleNotFoundError: No module named 'kcodec'" in lines[-1]
    assert "--ship" in lines[-1] and "Traceback" not in run.stderr
    print(run.stderr)
    shipped = _pipeline(tmp_path, str(SAMPLE), "-o", "out", "--master", cluster.master, "-q", "--ship", env=env)
    assert shipped.returncode == 0, shipped.stderr[-3000:]
    assert _frames(tmp_path / "out") == local_frames
